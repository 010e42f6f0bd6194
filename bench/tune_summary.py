#!/usr/bin/env python3
"""The device run's evidence as markdown (bench/tune_device.sh's summary): per `temper tune --json`
output its steps, its llama-bench tests, the replay against its prediction, the mmvq/mmq crossover, the same-input groups
it measured and where a token's GEMV time goes; per sweep session what each grid axis value beyond
the old grid (nwarps ≤ 16, rows_per_block ≤ 8) bought: per (shape, ncols) the best verified median
of the whole grid against the best of the old grid.

usage: tune_summary.py [--session SESSION_JSON]... [--replay LABEL=REPLAY_JSON]... LABEL=TUNE_JSON...

Exit 2 on unreadable input; otherwise 0 (it reports, it does not judge)."""
import argparse
import json
import sys

OLD_NWARPS, OLD_ROWS = 16, 8


def fail(msg):
    print(f"tune_summary: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")


def pct(x):
    return f"{(x - 1) * 100:+.1f} %"


def tune_section(label, d):
    out = [f"## {label}", "", "| step | outcome | seconds | summary |", "|---|---|---:|---|"]
    for s in d.get("steps", []):
        out.append(f"| {s['step']} | {s['outcome']} | {s['seconds']:.1f} | {s['summary']} |")
    bench = d.get("bench")
    if bench:
        out += ["", f"llama-bench ({bench.get('rounds')} rounds × {bench.get('repetitions')} repetitions, interleaved), "
                f"engine line: `{bench.get('engine_line', '')}`", "",
                "| test | stock t/s | profile t/s | speedup | 95 % CI |", "|---|---:|---:|---:|---|"]
        for t in bench.get("tests", []):
            out.append(f"| {t['name']} | {t['stock_ts']:.2f} | {t['profiled_ts']:.2f} | **{t['speedup']:.4f}** | "
                       f"[{t['speedup_low']:.4f}, {t['speedup_high']:.4f}] |")
    r = d.get("replay")
    if r:
        st, pr = r["stock"], r["profiled"]
        out += ["", f"replay: stock {st['median_us']:.1f} µs, profile {pr['median_us']:.1f} µs per token → "
                f"**{r['speedup']:.4f}** [{r['speedup_low']:.4f}, {r['speedup_high']:.4f}], predicted {r['predicted_speedup']:.4f}; "
                f"{pr.get('tuned_launches')} of {pr.get('mmvq_launches')} launches tuned; copy bandwidth {r['copy_bandwidth_gbs']:.0f} GB/s"]
        bd = r.get("breakdown") or []
        if bd:
            ideal = sum(b["ideal_us"] for b in bd)
            stock = sum(b["stock_us"] for b in bd)
            prof = sum(b["profiled_us"] for b in bd)
            out += ["", f"GEMV time per token, launches on their own: stock {stock:.0f} µs ({ideal / stock * 100:.0f} % of copy "
                    f"bandwidth), profile {prof:.0f} µs ({ideal / prof * 100:.0f} %); the bytes at copy bandwidth {ideal:.0f} µs", "",
                    "| launch | per token | stock µs | profile µs | bytes at copy BW µs | % of copy BW (profile) | µs over per launch (stock) |",
                    "|---|---:|---:|---:|---:|---:|---:|"]
            for b in bd:
                name = f"{b['kind']} {b['type']} {b['n']}×{b['k']}" + (f" ({b['experts_used']} of {b['experts']})" if b.get("experts") else "")
                out.append(f"| {name} | {b['launches_per_token']} | {b['stock_us']:.1f} | {b['profiled_us']:.1f} | {b['ideal_us']:.1f} | "
                           f"{b['ideal_us'] / b['profiled_us'] * 100:.0f} % | {b['overhead_us_per_launch']:.2f} |")
    cross = d.get("crossover")
    if cross:
        out += ["", "mmvq or mmq (token replayed at the batch width; stock = ggml's own pick):", "",
                "| type | launch | ncols | stock path | other path | stock µs | other µs | other / stock speedup | CI | chosen | approved |",
                "|---|---|---:|---|---|---:|---:|---:|---|---|---|"]
        for c in cross:
            out.append(f"| {c.get('type')} | {c.get('launch')} | {c.get('ncols')} | {c.get('stock_path')} | {c.get('other_path', '')} | "
                       f"{c.get('stock_us', 0):.1f} | {c.get('path_us', 0):.1f} | {c.get('speedup', 1):.4f} | "
                       f"[{c.get('speedup_low', 1):.4f}, {c.get('speedup_high', 1):.4f}] | {c.get('path')} | {c.get('approved')} |")
    groups = d.get("groups")
    if groups:
        out += ["", "Same-input groups (hook v5; the token replayed at the width, groups off against each of the 9 configs):", "",
                "| ncols | runs per token | best config | group launches per token | off µs | group µs | speedup | CI | approved | why |",
                "|---:|---:|---|---:|---:|---:|---:|---|---|---|"]
        for g in groups:
            out.append(f"| {g.get('ncols')} | {g.get('runs_per_token')} | {g.get('config') or '–'} | {g.get('group_launches')} | "
                       f"{g.get('off_us', 0):.1f} | {g.get('group_us', 0):.1f} | {g.get('speedup', 1):.4f} | "
                       f"[{g.get('speedup_low', 1):.4f}, {g.get('speedup_high', 1):.4f}] | {g.get('approved')} | {g.get('why', '')} |")
    for n in d.get("notes", []):
        out.append(f"- note: {n}")
    return out


def axis_section(path, s):
    best = {}  # (shape, ncols) -> [best overall, best old grid, config]
    for r in s.get("results", []):
        if r.get("status") != "ok":
            continue
        key = (r["type"], r["n"], r["k"], r.get("launch", "mul_mat"), r.get("experts", 0), r["ncols"])
        c = r["config"]
        med = r["time_us"]["median"]
        b = best.setdefault(key, [float("inf"), float("inf"), None])
        if med < b[0]:
            b[0], b[2] = med, (c["nwarps"], c["rows_per_block"])
        if c["nwarps"] <= OLD_NWARPS and c["rows_per_block"] <= OLD_ROWS and med < b[1]:
            b[1] = med
    out = ["", f"## Grid axes beyond nwarps {OLD_NWARPS} / rows_per_block {OLD_ROWS} ({path})", "",
           "| shape | ncols | best old grid µs | best whole grid µs | config | gain |", "|---|---:|---:|---:|---|---:|"]
    wins = 0
    for key, (whole, old, cfg) in sorted(best.items()):
        if old == float("inf"):
            continue
        gain = old / whole
        if cfg and (cfg[0] > OLD_NWARPS or cfg[1] > OLD_ROWS):
            wins += 1
        out.append(f"| {key[0]} {key[1]}×{key[2]} {key[3]}{' e' + str(key[4]) if key[4] else ''} | {key[5]} | {old:.2f} | {whole:.2f} | "
                   f"{cfg[0]}×{cfg[1]} | {pct(gain)} |")
    out.append(f"\n{wins} of {len(best)} (shape, ncols) pick a config outside the old grid.")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--session", action="append", default=[])
    ap.add_argument("--replay", action="append", default=[], help="LABEL=`temper engine replay --json` output")
    ap.add_argument("tunes", nargs="*")
    a = ap.parse_args()
    lines = []
    for item in a.tunes:
        label, _, path = item.partition("=")
        if not path:
            fail(f"{item}: expected LABEL=TUNE_JSON")
        lines += tune_section(label, load(path)) + [""]
    if a.replay:
        lines += ["## Replays (engine, stock against a profile)", "", "| profile | stock µs | profile µs | speedup | 95 % CI | tuned launches |",
                  "|---|---:|---:|---:|---|---:|"]
        for item in a.replay:
            label, _, path = item.partition("=")
            r = load(path)
            lines.append(f"| {label} | {r['stock']['median_us']:.1f} | {r['profiled']['median_us']:.1f} | **{r['speedup']:.4f}** | "
                         f"[{r['speedup_low']:.4f}, {r['speedup_high']:.4f}] | {r['profiled'].get('tuned_launches')} of {r['profiled'].get('mmvq_launches')} |")
        lines.append("")
    for path in a.session:
        lines += axis_section(path, load(path))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
