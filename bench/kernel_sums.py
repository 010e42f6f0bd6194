#!/usr/bin/env python3
"""Where a decode token's kernel time goes, from Nsight Compute over llama-bench (issue 29).

Input: `ncu --csv --metrics gpu__time_duration.sum --clock-control none --cache-control none
llama-bench -m MODEL -p 0 -n N -r 1`, which times every kernel of N + 1 tokens (llama-bench's
warm-up token and N) one at a time. Per token, in µs, by kind:
  gemv       mmvq (ggml's mul_mat_vec_q, Temper's group kernel)
  quantize   the q8_1 activation quantizer that feeds them
  attention  FlashAttention (flash_attn_*), or without it the f16 GEMVs over the KV cache (mul_mat_vec_f),
             softmax; rope, KV writes
  other      every other kernel
and the launches per token. ncu runs each kernel alone: no programmatic dependent launch, no
overlap, each kernel's ramp and tail in full. So the sum exceeds the token's period in llama-bench;
the difference is what the engine hides by overlapping launches (a lower bound: the host's time
between tokens is in the period too).

  kernel_sums.py --tokens N+1 NAME=NCU.csv [NAME=NCU.csv ...] [--period-us NAME=US ...] [--compare A:B ...]

--detail NAME=NCU.csv (instead of the sums): ncu --csv --metrics of DETAIL_METRICS over some kernels
(`-k regex:...`): per kernel, its launches and each metric's mean over them (why a GEMV runs below the
bandwidth: DRAM and SM throughput, achieved occupancy, registers, and where its warps stall per
issued instruction).

--compare A:B adds a table per pair: every kernel (its name to the first parenthesis, template
arguments kept: mmvq's type, ncols, fusion and Temper's nwarps/rows/pipelining) with its launches and
µs per token in A and in B and B − A, largest first: which kernels got shorter and which longer.
"""
import argparse
import re
import collections
import csv
import sys

KINDS = ("gemv", "quantize", "attention", "other")


def kind(name):
    if name.startswith(("void mul_mat_vec_q", "mul_mat_vec_q", "void temper_mmvq_group", "temper_mmvq_group")):
        return "gemv"
    if "quantize_q8_1" in name:
        return "quantize"
    if any(k in name for k in ("flash_attn", "mul_mat_vec_f", "soft_max", "rope_", "set_rows", "cpy_scalar")):
        return "attention"
    return "other"


def to_us(value, unit):
    v = float(value.replace(",", ""))
    return {"nsecond": v / 1e3, "ns": v / 1e3, "usecond": v, "us": v, "msecond": v * 1e3, "ms": v * 1e3}.get(unit, v / 1e3)


def kernel_key(name):
    return re.sub(r"^void ", "", name.split("(")[0])[:90]


def rows(path):
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not CSV rows
    return [r for r in csv.DictReader(lines) if r.get("Metric Name") == "gpu__time_duration.sum"]


def per_kernel(path):
    us, launches = collections.Counter(), collections.Counter()
    for r in rows(path):
        k = kernel_key(r["Kernel Name"])
        us[k] += to_us(r["Metric Value"], r.get("Metric Unit", ""))
        launches[k] += 1
    return us, launches


def sums(path):
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not CSV rows
    if not lines:
        sys.exit(f"kernel_sums: {path}: no CSV rows (expected ncu --csv --metrics gpu__time_duration.sum output)")
    us, launches = collections.Counter(), collections.Counter()
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        k = kind(r["Kernel Name"])
        us[k] += to_us(r["Metric Value"], r.get("Metric Unit", ""))
        launches[k] += 1
    if not launches:
        sys.exit(f"kernel_sums: {path}: no gpu__time_duration.sum rows")
    return us, launches


# What --detail reads, in its table's order: (ncu metric, column heading).
DETAIL_METRICS = (
    ("gpu__time_duration.sum", "µs"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy %"),
    ("launch__registers_per_thread", "regs"),
    ("launch__grid_size", "blocks"),
    ("launch__block_size", "threads"),
    ("smsp__inst_executed.sum", "instructions"),
    ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "stall: memory"),
    ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "stall: wait"),
    ("smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", "stall: pipe"),
    ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall: barrier"),
    ("smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio", "stall: no instruction"),
)


def detail(spec):
    name, _, path = spec.partition("=")
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    values = collections.defaultdict(list)
    launches = collections.Counter()
    wanted = dict(DETAIL_METRICS)
    for r in csv.DictReader(lines):
        metric, k = r.get("Metric Name"), kernel_key(r.get("Kernel Name", ""))
        if metric not in wanted:
            continue
        v = r["Metric Value"]
        values[(k, metric)].append(to_us(v, r.get("Metric Unit", "")) if metric == "gpu__time_duration.sum" else float(v.replace(",", "")))
        if metric == "gpu__time_duration.sum":
            launches[k] += 1
    if not launches:
        sys.exit(f"kernel_sums: {path}: no gpu__time_duration.sum rows (expected ncu --csv --metrics with DETAIL_METRICS)")
    print(f"\n{name}: per kernel, the mean over its launches (stalls: warps stalled per issued instruction)\n")
    print("| kernel | launches | " + " | ".join(h for _, h in DETAIL_METRICS) + " |")
    print("|---|---:|" + "---:|" * len(DETAIL_METRICS))
    for k in sorted(launches, key=lambda k: -sum(values[(k, "gpu__time_duration.sum")])):
        cells = []
        for metric, _ in DETAIL_METRICS:
            v = values.get((k, metric))
            cells.append(f"{sum(v) / len(v):.4g}" if v else "")
        print(f"| `{k}` | {launches[k]} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--detail":
        if len(sys.argv) < 3:
            sys.exit("kernel_sums: --detail NAME=NCU.csv [NAME=NCU.csv ...]")
        for spec in sys.argv[2:]:
            detail(spec)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", help="NAME=NCU.csv")
    ap.add_argument("--tokens", type=int, required=True, help="tokens the run decoded (llama-bench -n N: N + 1, its warm-up)")
    ap.add_argument("--period-us", action="append", default=[], help="NAME=US: the token's period in llama-bench (1e6 / t/s)")
    ap.add_argument("--compare", action="append", default=[], help="A:B: per kernel, run B against run A")
    a = ap.parse_args()
    periods = dict((p.partition("=")[0], float(p.partition("=")[2])) for p in a.period_us)
    print("| run | launches | " + " | ".join(f"{k} µs" for k in KINDS) + " | sum µs | llama-bench period µs |")
    print("|---|---:|" + "---:|" * len(KINDS) + "---:|---:|")
    for spec in a.traces:
        name, _, path = spec.partition("=")
        if not path:
            sys.exit(f"kernel_sums: {spec}: expected NAME=NCU.csv")
        us, launches = sums(path)
        per = {k: us[k] / a.tokens for k in KINDS}
        period = f"{periods[name]:.1f}" if name in periods else ""
        print(f"| {name} | {sum(launches.values()) / a.tokens:.0f} | " + " | ".join(f"{per[k]:.1f}" for k in KINDS) +
              f" | {sum(per.values()):.1f} | {period} |")
    paths = dict(spec.partition("=")[::2] for spec in a.traces)
    for pair in a.compare:
        x, _, y = pair.partition(":")
        if x not in paths or y not in paths:
            sys.exit(f"kernel_sums: --compare {pair}: expected two run names of the traces")
        (xu, xn), (yu, yn) = per_kernel(paths[x]), per_kernel(paths[y])
        print(f"\n{y} against {x}, per token (launches, µs):\n")
        print(f"| kernel | {x} launches | {x} µs | {y} launches | {y} µs | {y} − {x} µs |")
        print("|---|---:|---:|---:|---:|---:|")
        for k in sorted(set(xu) | set(yu), key=lambda k: -abs(yu[k] - xu[k])):
            if abs(yu[k] - xu[k]) / a.tokens < 0.05 and xn[k] == yn[k]:
                continue
            print(f"| `{k}` | {xn[k] / a.tokens:.1f} | {xu[k] / a.tokens:.1f} | {yn[k] / a.tokens:.1f} | {yu[k] / a.tokens:.1f} | "
                  f"{(yu[k] - xu[k]) / a.tokens:+.1f} |")


if __name__ == "__main__":
    main()
