#!/usr/bin/env python3
"""Validates sessions written by `temper sweep --backend fake` (complete, stopped by a lost device
with a failing config, with interleaved confirmations of its winners, and with --no-confirm)
against resources/session.schema.json. Fails (never skips) without the jsonschema module: scripts/setup
installs it (Debian python3-jsonschema). With a third argument (a fake temper-probe, tests/engine/) it
validates an engine sweep instead."""
import json, os, subprocess, sys, tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("the jsonschema module is missing: run scripts/setup (Debian package python3-jsonschema)")

temper, schema_path = sys.argv[1], sys.argv[2]
probe = sys.argv[3] if len(sys.argv) > 3 else None
schema = json.load(open(schema_path))
validator = jsonschema.Draft202012Validator(schema)
small = ["--shape", "q4_K:64:512:3,q4_0:32:256", "--ncols", "1,8", "--nwarps", "1,2,16", "--rows-per-block", "1,8"]
# A shape large enough that the fake device's configs differ beyond noise: winners to confirm.
large = ["--shape", "q4_K:2048:4096,q4_0:2048:4096,q6_K:1024:4096", "--ncols", "1", "--nwarps", "1,2,4,8", "--rows-per-block", "1,2"]
with tempfile.TemporaryDirectory() as d:
    runs = [({}, small, 0), ({"TEMPER_FAKE_LOSE_AFTER": "150", "TEMPER_FAKE_WRONG": "2x1"}, small, 4),
            ({}, large, 0), ({}, large + ["--no-confirm"], 0)]
    backend = ["--backend", "fake"]
    if probe:
        runs = [({}, ["--shape", "q4_K:256:512,q4_0:192:256", "--ncols", "1,2", "--nwarps", "1,2,4", "--rows-per-block", "1,2",
                      "--time-cap", "0.02"], 0), ({"FAKE_PROBE_STOCK": "1x2"}, small, 0)]
        backend = ["--probe", probe]
    for i, (env, args, want) in enumerate(runs):
        out = os.path.join(d, f"s{i}.json")
        rc = subprocess.run([temper, "sweep", *backend, *args, "-o", out],
                            env={**os.environ, **env}, capture_output=True).returncode
        if rc != want:
            sys.exit(f"run {i}: exit {rc}, expected {want}")
        session = json.load(open(out))
        errors = sorted(validator.iter_errors(session), key=lambda e: list(e.path))
        for e in errors[:10]:
            print(f"run {i}: {'/'.join(map(str, e.path))}: {e.message}")
        if errors:
            sys.exit(1)
        if probe:
            if session["kernel_source"]["kind"] != "engine" or session["devices"][0]["info"]["api"] != "engine-cuda":
                sys.exit(f"run {i}: not an engine session")
            if i == 1 and not session["devices"][0]["plan"].get("notes"):
                sys.exit(f"run {i}: a stock config unlike the table left no note")
            continue
        if i == 2:
            winners = [w for w in session["winners"] if w["verdict"] == "winner" or w["note"]]
            if not session["options"]["confirm"] or not session["confirmations"] or not winners:
                sys.exit(f"run {i}: expected winners and their confirmations")
            if len(session["confirmations"]) != len(winners):
                sys.exit(f"run {i}: {len(session['confirmations'])} confirmations for {len(winners)} winners")
        if i == 3 and (session["options"]["confirm"] or session["confirmations"]):
            sys.exit(f"run {i}: --no-confirm still confirmed")
print("sessions valid")
