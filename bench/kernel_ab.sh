#!/usr/bin/env bash
# Issue 17, one device call: Temper's and upstream's kernels in one process and one harness over the
# fidelity table's configs (bench/kernel_ab.cu), then per shape and type the configs within ±3 %,
# the worst one, the rank correlation and whether the outputs were bit-identical; printed last.
# UPSTREAM_KERNEL_DIR holds upstream_mmvq_kernel.cuh (the kernel part of the hooked mmvq.cu, as
# bench/regcompare.py --temper writes it) and the hooked ggml tree under up/ (include/, src/);
# default .sass. IQ_TABLES_DIR: the generated iq_tables.h (default build-device/kernels, else
# .sass/iq). ROUNDS (default 5) and SAMPLES (default 100) per kernel and config. OUT: CSV copied there.
# ENGINE=ggml-7180759 compares Temper's mmvq with 7180759's kernel (no PDL; UPSTREAM_KERNEL_DIR must
# then hold 7180759's hooked kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
up="${UPSTREAM_KERNEL_DIR:-.sass}"
iq="${IQ_TABLES_DIR:-build-device/kernels}"
[[ -f "$iq/iq_tables.h" ]] || iq=.sass/iq
[[ -f "$up/upstream_mmvq_kernel.cuh" ]] || {
  echo "kernel_ab.sh: no $up/upstream_mmvq_kernel.cuh: run bench/regcompare.py --temper (or the kernel_register_fidelity" \
       "ctest), copy its <work>/ggml-<commit>-hooked_mmvq_kernel.cuh to $up/upstream_mmvq_kernel.cuh and its" \
       "hooked tree's include/ and src/ under $up/up/" >&2
  exit 2
}
out="${WORK:-build-device}"
up_flags=() t_flags=()
if [[ "${ENGINE:-ggml-d99724f}" == ggml-7180759 ]]; then
  up_flags=(-DUPSTREAM_TEMPLATE_FLAGS=false -DUPSTREAM_PDL=0)
  t_flags=(-DTEMPER_VARIANT_PDL=0)
fi
mkdir -p "$out"
nvcc -arch=sm_90 -O3 -std=c++17 -use_fast_math -extended-lambda -DGGML_USE_CUDA -I"$up" -I"$up/up/include" \
  -I"$up/up/src" -I"$up/up/src/ggml-cuda" "${up_flags[@]}" -c bench/kernel_ab_up.cu -o "$out/kernel_ab_up.o" &
nvcc -arch=sm_90 -O3 -std=c++17 -DTEMPER_GPU_CUDA -I. -Ikernels -Icore/common/include -Icore/quant/include -I"$iq" \
  "${t_flags[@]}" -c bench/kernel_ab.cu -o "$out/kernel_ab.o"
wait
nvcc -arch=sm_90 "$out/kernel_ab.o" "$out/kernel_ab_up.o" -o "$out/kernel_ab"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$out/kernel_ab" "${ROUNDS:-5}" "${SAMPLES:-100}" > "$out/kernel_ab.csv"
[[ -n "${OUT:-}" ]] && cp "$out/kernel_ab.csv" "$OUT/" || true
python3 - "$out/kernel_ab.csv" <<'PY'
import csv, sys
sys.path.insert(0, "bench")
from fidelity_table import spearman  # the fidelity table's rank correlation (ties share their mean rank)
rows = list(csv.DictReader(open(sys.argv[1])))
groups = {}
for r in rows:
    groups.setdefault((r["shape"], r["type"]), []).append(r)
total = within = same = 0
rho_min = 1.0
print(f"{'shape':12} {'type':7} {'within ±3 %':>11} {'worst (config, diff %)':>24} {'rho':>6} {'same output':>11}")
for (shape, ty), rs in groups.items():
    d = [(100.0 * (float(r["temper_us"]) - float(r["upstream_us"])) / float(r["upstream_us"]), r) for r in rs]
    ok = sum(abs(x) <= 3.0 for x, _ in d)
    worst = max(d, key=lambda p: abs(p[0]))
    rho = spearman([float(r["temper_us"]) for r in rs], [float(r["upstream_us"]) for r in rs])
    rho = 1.0 if rho is None else rho  # all times equal on one side: nothing to misrank
    sm = sum(r["same_output"] == "1" for r in rs)
    total += len(rs); within += ok; same += sm; rho_min = min(rho_min, rho)
    print(f"{shape:12} {ty:7} {ok:>8}/{len(rs):<2} {'(' + worst[1]['nwarps'] + ',' + worst[1]['rows'] + ')':>14} {worst[0]:+6.1f}   {rho:6.3f} {sm:>8}/{len(rs)}")
print(f"\nsummary: {within}/{total} configs within ±3 %; rank correlation min {rho_min:.3f}; bit-identical outputs {same}/{total}")
PY
