#!/usr/bin/env python3
"""The fidelity table: Temper's kernel-only times per (type, shape, config) against upstream's.

Inputs: `temper bench-gemv --save` JSON files (one per shape; every config of the ncols-1 grid),
optionally upstream's kernel-only times as CSV with the header
    type,n,k,ncols,nwarps,rows_per_block,us
(the engine bridge's probe writes it; see bench/fidelity.sh), optionally `bench/regcompare.py`
output for the register columns. Prints per shape and type: each config's median µs on both
sides, the difference in %, whether it is within --tolerance (3 %), and the Spearman rank
correlation of the configs both sides timed (goal ≥ 0.9); then the short table, one line per
shape and type (configs within tolerance, the worst config, rank correlation), the summary last.
Exit 0, or 5 when a compared config or a rank correlation misses its goal, 2 on bad input.
"""
import argparse
import csv
import json
import re
import sys


def bad(why):
    print(f"fidelity_table: {why}", file=sys.stderr)
    sys.exit(2)


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1  # ties share their mean rank
        i = j + 1
    return r


def spearman(a, b):
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else None


def read_temper(paths):
    """{(type, n, k, ncols): {(nwarps, rows): us}} and the timing method of the files."""
    out, method = {}, set()
    for path in paths:
        try:
            with open(path) as f:
                j = json.load(f)
            n, k, ncols = int(j["n"]), int(j["k"]), int(j["ncols"])
            method.add(f"engine {j.get('engine')}, median of {j.get('count')} samples, "
                       f"{j.get('launches_per_sample')} launch(es) per event pair")
            for r in j["results"]:
                cfgs = out.setdefault((r["type"], n, k, ncols), {})
                for c in r.get("configs", []):
                    if c.get("ok"):
                        cfgs[(int(c["config"]["nwarps"]), int(c["config"]["rows_per_block"]))] = float(c["us"]["median"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            bad(f"{path}: not a bench-gemv --save file ({e})")
    return out, method


def read_upstream(path):
    out = {}
    try:
        f = open(path, newline="")
    except OSError as e:
        bad(f"{path}: {e.strerror}")
    with f:
        rows = csv.DictReader(f)
        want = ["type", "n", "k", "ncols", "nwarps", "rows_per_block", "us"]
        if rows.fieldnames is None or [c.strip() for c in rows.fieldnames] != want:
            bad(f"{path}: header must be {','.join(want)}, got {rows.fieldnames}")
        for line, r in enumerate(rows, 2):
            try:
                key = (r["type"].strip(), int(r["n"]), int(r["k"]), int(r["ncols"]))
                out.setdefault(key, {})[(int(r["nwarps"]), int(r["rows_per_block"]))] = float(r["us"])
            except (ValueError, AttributeError) as e:
                bad(f"{path}:{line}: {e}")
    return out


def read_regs(path):
    """{(engine, type, (nwarps, rows)): (upstream, temper)} from regcompare.py's output."""
    out, engine = {}, None
    try:
        f = open(path)
    except OSError as e:
        bad(f"{path}: {e.strerror}")
    with f:
        for line in f:
            m = re.match(r"(ggml-\w+)(?: \(hooked\))? vs Temper", line)
            if m:
                engine = m.group(1)
                continue
            m = re.match(r"(\S+)\s+\((\d+),(\d+)\)\s+(\d+) \(\d+/\d+\)\s+(\d+) \(\d+/\d+\)", line)
            if m and engine:
                out[(engine, m.group(1), (int(m.group(2)), int(m.group(3))))] = (int(m.group(4)), int(m.group(5)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("temper_json", nargs="+")
    ap.add_argument("--upstream", help="upstream kernel-only times (CSV)")
    ap.add_argument("--regs", help="bench/regcompare.py output")
    ap.add_argument("--engine", default="ggml-d99724f")
    ap.add_argument("--tolerance", type=float, default=3.0, help="allowed |difference| in %% (default 3)")
    ap.add_argument("--min-rho", type=float, default=0.9)
    a = ap.parse_args()

    temper, method = read_temper(a.temper_json)
    upstream = read_upstream(a.upstream) if a.upstream else {}
    regs = read_regs(a.regs) if a.regs else {}
    print(f"Temper: {'; '.join(sorted(method))}")
    print(f"upstream: {a.upstream or 'no timings given (hook: UPSTREAM_CSV)'}\n")
    compared = within = 0
    rhos, misses = [], []
    short = []  # (shape, type, within, compared, worst config, worst diff, rho)
    for key in sorted(temper, key=lambda k: (k[1], k[2], k[0])):
        t, u = temper[key], upstream.get(key, {})
        name, n, k, ncols = key
        print(f"{name} n={n} k={k} ncols={ncols}")
        print(f"  {'config':8} {'temper us':>10} {'upstream us':>12} {'diff %':>8} {'regs T/U':>9}")
        both = []
        type_within = type_compared = 0
        worst = None
        for cfg in sorted(t):
            us_u = u.get(cfg)
            reg = regs.get((a.engine, name, cfg))
            reg_text = f"{reg[1]}/{reg[0]}" if reg else ""
            if us_u is None:
                print(f"  ({cfg[0]},{cfg[1]})".ljust(10) + f" {t[cfg]:>10.2f} {'-':>12} {'':>8} {reg_text:>9}")
                continue
            diff = 100.0 * (t[cfg] - us_u) / us_u
            ok = abs(diff) <= a.tolerance
            compared += 1
            within += ok
            type_compared += 1
            type_within += ok
            if worst is None or abs(diff) > abs(worst[1]):
                worst = (cfg, diff)
            both.append((t[cfg], us_u))
            print(f"  ({cfg[0]},{cfg[1]})".ljust(10) + f" {t[cfg]:>10.2f} {us_u:>12.2f} {diff:>+8.1f} {reg_text:>9}"
                  + ("" if ok else "  OUT"))
        rho = spearman([x for x, _ in both], [y for _, y in both])
        if rho is not None:
            rhos.append(rho)
            if rho < a.min_rho:
                misses.append(f"{name} {n}x{k} rho {rho:.2f}")
            print(f"  rank correlation (Spearman, {len(both)} configs): {rho:.3f}" + ("" if rho >= a.min_rho else "  LOW"))
        if type_compared:
            short.append((f"{n}x{k}", name, type_within, type_compared, worst[0], worst[1], rho))
        print()
    if not upstream:
        print("summary: Temper timings only; give upstream's CSV to compare")
        return 0
    print(f"{'shape':12} {'type':7} {'within ±' + format(a.tolerance, 'g') + ' %':>11} {'worst (config, diff %)':>24} {'rho':>6}")
    for shape, name, w, c, cfg, diff, rho in short:
        rho_text = f"{rho:.3f}" if rho is not None else "-"
        print(f"{shape:12} {name:7} {f'{w}/{c}':>11} {f'({cfg[0]},{cfg[1]}) {diff:+.1f}':>24} {rho_text:>6}")
    print()
    print(f"summary: {within}/{compared} configs within ±{a.tolerance:g} %; rank correlation "
          f"min {min(rhos):.3f} over {len(rhos)} (type, shape)s" if rhos else
          f"summary: {within}/{compared} configs within ±{a.tolerance:g} %")
    if misses:
        print("below the rank goal: " + ", ".join(misses))
    return 5 if within < compared or misses else 0


if __name__ == "__main__":
    sys.exit(main())
