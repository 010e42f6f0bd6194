#!/usr/bin/env python3
"""Validates sessions written by `temper sweep --backend fake` (complete, and stopped by a lost
device with a failing config) against resources/session.schema.json. Exit 77 (skipped) without
the jsonschema module."""
import json, os, subprocess, sys, tempfile

try:
    import jsonschema
except ImportError:
    print("jsonschema not installed: skipped")
    sys.exit(77)

temper, schema_path = sys.argv[1], sys.argv[2]
schema = json.load(open(schema_path))
validator = jsonschema.Draft202012Validator(schema)
with tempfile.TemporaryDirectory() as d:
    runs = [({}, 0), ({"TEMPER_FAKE_LOSE_AFTER": "150", "TEMPER_FAKE_WRONG": "2x1"}, 4)]
    for i, (env, want) in enumerate(runs):
        out = os.path.join(d, f"s{i}.json")
        rc = subprocess.run([temper, "sweep", "--backend", "fake", "--shape", "q4_K:64:512:3,q4_0:32:256",
                             "--ncols", "1,8", "--nwarps", "1,2,16", "--rows-per-block", "1,8", "-o", out],
                            env={**os.environ, **env}, capture_output=True).returncode
        if rc != want:
            sys.exit(f"run {i}: exit {rc}, expected {want}")
        session = json.load(open(out))
        errors = sorted(validator.iter_errors(session), key=lambda e: list(e.path))
        for e in errors[:10]:
            print(f"run {i}: {'/'.join(map(str, e.path))}: {e.message}")
        if errors:
            sys.exit(1)
print("sessions valid")
