#!/usr/bin/env bash
# Issue 17: does the order of the two timing phases explain the per-launch constant between Temper's
# and upstream's kernel-only times? Times Temper, upstream, Temper, upstream (4 types, 4096×14336,
# the ncols-1 grid) and prints the median differences per type. One device call; carry .deps and
# .upstream (fidelity.sh's build and engine phases).
set -u
cd "$(dirname "$0")/.."
PHASES="build engine" bash bench/fidelity.sh >/dev/null 2>&1 || { echo "build failed"; exit 1; }
probe="$(ls build-device/engine-cache/*/build/temper-probe | head -1)"
T=build-device/app/temper
c=(--types q4_0,q4_1,q6_K,iq4_xs --n 4096 --k 14336 --ncols 1 --engine ggml-d99724f --count 200 --back-to-back 1 --warmup 20)
w=build-device/order; mkdir -p $w
$T bench-gemv "${c[@]}" --csv $w/t1.csv >/dev/null 2>&1
$T bench-gemv --probe "$probe" --kernel-only "${c[@]}" --csv $w/u1.csv >/dev/null 2>&1
$T bench-gemv "${c[@]}" --csv $w/t2.csv >/dev/null 2>&1
$T bench-gemv --probe "$probe" --kernel-only "${c[@]}" --csv $w/u2.csv >/dev/null 2>&1
python3 - $w <<'PY'
import csv, statistics as st, sys
w = sys.argv[1]
def load(f):
    return {(r['type'], r['nwarps'], r['rows_per_block']): float(r['us']) for r in csv.DictReader(open(f"{w}/{f}.csv"))}
t1, u1, t2, u2 = (load(x) for x in ("t1", "u1", "t2", "u2"))
print("median over configs, per type, µs: T1-U1 T2-U1 T2-U2 T1-T2 U1-U2")
for ty in sorted({k[0] for k in t1}):
    ks = [k for k in t1 if k[0] == ty and k in u1 and k in t2 and k in u2]
    m = lambda a, b: st.median(a[k] - b[k] for k in ks)
    print(f"{ty:7} {m(t1,u1):+6.2f} {m(t2,u1):+6.2f} {m(t2,u2):+6.2f} {m(t1,t2):+6.2f} {m(u1,u2):+6.2f}  ({len(ks)} configs)")
PY
