#!/usr/bin/env python3
"""Issue 28's agreement check: `temper tune`'s llama-bench table against a by-hand llama-bench of the
same two arms, run outside Temper (bench/tune_device.sh).

usage: tune_compare.py TUNE_JSON HAND_DIR [--tolerance 0.01]
       tune_compare.py --hand-only HAND_DIR

--hand-only: the by-hand table alone (per test each arm's median tokens/s, profile / stock and its
95 % CI, a percentile bootstrap of the ratio of medians), e.g. the patched build without a profile
against an unpatched one.

TUNE_JSON is `temper tune --json`'s output (its "bench" record); HAND_DIR holds llama-bench's own
`-o json` outputs named r<ROUND>-<TEST>-<stock|profile>.json. Per test, each side's median tokens/s
per arm (over every sample of the arm, as Temper computes it) and the speedup profile / stock, and
how far the by-hand numbers are from tune's. Prints a markdown table; exit 0 when every test's
speedup and both arms' tokens/s agree within the tolerance (default 1 %), 1 when one does not, 2 on
bad input."""
import argparse
import glob
import json
import os
import re
import statistics
import sys

from e2e_table import ci  # the bootstrap CI of the ratio of medians, as e2e.sh's table


def fail(msg):
    print(f"tune_compare: {msg}", file=sys.stderr)
    sys.exit(2)


def hand_samples(hand_dir):
    """{test: {"stock": [...], "profile": [...]}} from the by-hand runs."""
    out = {}
    pattern = re.compile(r"^r(\d+)-([a-z]+\d+)-(stock|profile)\.json$")
    for path in sorted(glob.glob(os.path.join(hand_dir, "r*-*-*.json"))):
        m = pattern.match(os.path.basename(path))
        if not m:
            continue
        try:
            rows = json.load(open(path))
        except (OSError, ValueError) as e:
            fail(f"{path}: not llama-bench's JSON ({e})")
        if not isinstance(rows, list) or len(rows) != 1 or "samples_ts" not in rows[0]:
            fail(f"{path}: expected one llama-bench result with samples_ts")
        out.setdefault(m.group(2), {"stock": [], "profile": []})[m.group(3)] += rows[0]["samples_ts"]
    if not out:
        fail(f"{hand_dir}: no r<ROUND>-<TEST>-<arm>.json files")
    return out


def hand_only(hand_dir):
    samples = hand_samples(hand_dir)
    print("| test | stock t/s | other arm t/s | other / stock [95 % CI] | samples |")
    print("|---|---:|---:|---|---:|")
    for name, arms in sorted(samples.items()):
        if not arms["stock"] or not arms["profile"]:
            fail(f"{hand_dir}: {name} lacks an arm")
        s, p = statistics.median(arms["stock"]), statistics.median(arms["profile"])
        lo, hi = ci(arms["stock"], arms["profile"])
        print(f"| {name} | {s:.2f} | {p:.2f} | {p / s:.4f} [{lo:.4f}, {hi:.4f}] | {len(arms['stock'])} + {len(arms['profile'])} |")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--hand-only":
        return hand_only(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tune_json")
    ap.add_argument("hand_dir")
    ap.add_argument("--tolerance", type=float, default=0.01)
    a = ap.parse_args()
    try:
        tune = json.load(open(a.tune_json))
    except (OSError, ValueError) as e:
        fail(f"{a.tune_json}: {e}")
    bench = tune.get("bench")
    if not bench:
        fail(f"{a.tune_json}: no bench record (was tune run with --llama-bench?)")
    hand = hand_samples(a.hand_dir)

    def rel(x, y):
        return x / y - 1.0

    print("| test | arm | tune t/s | by hand t/s | diff |")
    print("|---|---|---:|---:|---:|")
    worst, lines, agree = 0.0, [], True
    for t in bench["tests"]:
        name = t["name"]
        if name not in hand or not hand[name]["stock"] or not hand[name]["profile"]:
            fail(f"{a.hand_dir}: no by-hand runs of {name}")
        hs, hp = statistics.median(hand[name]["stock"]), statistics.median(hand[name]["profile"])
        for arm, tv, hv in (("stock", t["stock_ts"], hs), ("profile", t["profiled_ts"], hp)):
            d = rel(hv, tv)
            worst = max(worst, abs(d))
            agree &= abs(d) <= a.tolerance
            print(f"| {name} | {arm} | {tv:.2f} | {hv:.2f} | {100 * d:+.2f} % |")
        hsp = hp / hs
        d = rel(hsp, t["speedup"])
        agree &= abs(d) <= a.tolerance
        lines.append(f"| {name} | {t['speedup']:.4f} [{t['speedup_low']:.4f}, {t['speedup_high']:.4f}] | {hsp:.4f} | "
                     f"{100 * d:+.2f} % | {'yes' if abs(d) <= a.tolerance else 'NO'} |")
    print()
    print(f"| test | tune speedup [95 % CI] | by-hand speedup | diff | within {100 * a.tolerance:g} % |")
    print("|---|---:|---:|---:|---|")
    print("\n".join(lines))
    print()
    print(f"{'AGREE' if agree else 'DISAGREE'}: every speedup and arm within {100 * a.tolerance:g} %"
          f" (largest arm difference {100 * worst:.2f} %)")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
