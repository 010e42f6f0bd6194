#!/usr/bin/env bash
# Issue 17 experiment, one device call: build bench/act_placement.cu (Temper's kernel headers only,
# no Temper build) and print q4_1's kernel time per placement of the activations. Needs nvcc and
# the generated IQ tables: IQ_TABLES_DIR (default build-device/kernels, else .sass/iq).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
iq="${IQ_TABLES_DIR:-build-device/kernels}"
[[ -f "$iq/iq_tables.h" ]] || iq=.sass/iq
[[ -f "$iq/iq_tables.h" ]] || { echo "act_placement.sh: no iq_tables.h (build temper_iq_tables, or set IQ_TABLES_DIR)" >&2; exit 2; }
out="${WORK:-build-device}/act_placement"
mkdir -p "$(dirname "$out")"
nvcc -arch=sm_90 -O3 -std=c++17 -DTEMPER_GPU_CUDA -I. -Ikernels -Icore/common/include -Icore/quant/include -I"$iq" \
  bench/act_placement.cu -o "$out"
"$out"
