#!/usr/bin/env bash
# Issue 17 experiment, one device call: Temper's and upstream's q4_1 kernels in one process and one
# harness (bench/kernel_ab.cu). UPSTREAM_KERNEL_DIR holds upstream_mmvq_kernel.cuh (the kernel part
# of the hooked mmvq.cu, as bench/regcompare.py --temper writes it) and the hooked ggml tree under
# up/ (include/, src/); default .sass. IQ_TABLES_DIR as bench/act_placement.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
up="${UPSTREAM_KERNEL_DIR:-.sass}"
iq="${IQ_TABLES_DIR:-build-device/kernels}"
[[ -f "$iq/iq_tables.h" ]] || iq=.sass/iq
[[ -f "$up/upstream_mmvq_kernel.cuh" ]] || { echo "kernel_ab.sh: no $up/upstream_mmvq_kernel.cuh" >&2; exit 2; }
out="${WORK:-build-device}"
mkdir -p "$out"
nvcc -arch=sm_90 -O3 -std=c++17 -use_fast_math -extended-lambda -DGGML_USE_CUDA -I"$up" -I"$up/up/include" \
  -I"$up/up/src" -I"$up/up/src/ggml-cuda" -c bench/kernel_ab_up.cu -o "$out/kernel_ab_up.o"
nvcc -arch=sm_90 -O3 -std=c++17 -DTEMPER_GPU_CUDA -I. -Ikernels -Icore/common/include -Icore/quant/include -I"$iq" \
  -c bench/kernel_ab.cu -o "$out/kernel_ab.o"
nvcc -arch=sm_90 "$out/kernel_ab.o" "$out/kernel_ab_up.o" -o "$out/kernel_ab"
"$out/kernel_ab"
