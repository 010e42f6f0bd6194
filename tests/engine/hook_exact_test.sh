#!/bin/sh
# The hook's q4_K group dot products against ggml's own (label gpu): patches a copy of
# $TEMPER_UPSTREAM/ggml-d99724f, compiles hook_exact/group_unit.cu twice with nvcc for the device's
# arch (the hook's kernels; with TEMPER_GROUP_GENERIC_DOT, ggml's vec_dot for every type) and runs
# hook_exact/main.cu, which compares every group kernel's outputs bit for bit. Exit 77 (skipped)
# without nvcc, the tree or a CUDA device.
# Usage: TEMPER_UPSTREAM=DIR hook_exact_test.sh TEMPER NVCC OUT_DIR SOURCE_DIR
set -eu
temper=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") nvcc=$2 out=$3 source=$4
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then echo "SKIPPED: no nvcc"; exit 77; fi
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '.' || true)
if [ -z "$arch" ]; then echo "SKIPPED: no CUDA device"; exit 77; fi
. "$(dirname "$0")/patched_upstream.sh"
patched_upstream "$temper" "$out" > "$out.patch.log"
flags="-std=c++17 -O3 -arch=sm_$arch -use_fast_math -extended-lambda -DNDEBUG -DGGML_CUDA_NO_FA
       -I$tree/include -I$tree/src -I$tree/src/ggml-cuda"
"$nvcc" -c $flags -DTEMPER_EXACT_RUN=temper_exact_run "$source/tests/engine/hook_exact/group_unit.cu" -o "$out/hook.o" &
hook=$!
"$nvcc" -c $flags -DTEMPER_GROUP_GENERIC_DOT -DTEMPER_MMVQ_GATE_IN_LOOP -DTEMPER_EXACT_RUN=temper_exact_run_generic \
  "$source/tests/engine/hook_exact/group_unit.cu" -o "$out/generic.o"
wait $hook
"$nvcc" $flags "$source/tests/engine/hook_exact/main.cu" "$out/hook.o" "$out/generic.o" -o "$out/hook_exact"
exec "$out/hook_exact"
