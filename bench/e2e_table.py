#!/usr/bin/env python3
"""The llama-bench table of bench/e2e.sh: per test, the median tokens/s of each arm over every sample of
every round (stock = the patched build without a profile, profile = with it), the speedup and its 95 %
CI (percentile bootstrap of the ratio of medians, resampling each arm's samples), in the shape of
llama.cpp's compare-llama-bench.py. Usage: e2e_table.py EVIDENCE_DIR MODEL"""
import glob
import json
import os
import random
import statistics
import sys


def samples(ev, model):
    """{(test, arm): [tokens/s, ...]} from bench-MODEL-{tg,pp}-ARM-ROUND.json."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ev, f"bench-{model}-*-*-*.json"))):
        arm = path.rsplit("-", 2)[-2]
        for row in json.load(open(path)):
            test = f"pp{row['n_prompt']}" if row["n_gen"] == 0 else f"tg{row['n_gen']}"
            out.setdefault((test, arm), []).extend(row.get("samples_ts") or [row["avg_ts"]])
    return out


def ci(stock, prof, n=2000, seed=1):
    rng = random.Random(seed)
    ratios = sorted(statistics.median(rng.choices(prof, k=len(prof))) / statistics.median(rng.choices(stock, k=len(stock)))
                    for _ in range(n))
    return ratios[int(0.025 * n)], ratios[int(0.975 * n) - 1]


def main():
    ev, model = sys.argv[1], sys.argv[2]
    s = samples(ev, model)
    tests = sorted({t for t, _ in s}, key=lambda t: (t[:2] != "tg", int(t[2:])))
    print(f"| model | test | stock t/s | profile t/s | speedup | 95 % CI | samples |")
    print("|---|---|---|---|---|---|---|")
    for t in tests:
        st, pr = s.get((t, "stock"), []), s.get((t, "profile"), [])
        if not st or not pr:
            continue
        lo, hi = ci(st, pr)
        ms, mp = statistics.median(st), statistics.median(pr)
        print(f"| {model} | {t} | {ms:.2f} | {mp:.2f} | {mp / ms:.3f} | [{lo:.3f}, {hi:.3f}] | {len(st)} + {len(pr)} |")


if __name__ == "__main__":
    main()
