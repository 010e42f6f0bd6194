#!/usr/bin/env bash
# Issue 48, hook v13: bench/fused_ab.cu, built here or on the device. `build` (no GPU needed): patches a
# copy of $TEMPER_UPSTREAM/ggml-d99724f with TEMPER (default build-test/app/temper), compiles the two
# objects hook_exact_test.sh compiles and links fused_ab into WORK (default build-fused); `run`: runs it
# (ROUNDS, SAMPLES) and copies the CSV to $OUT when set. ARCH: sm_90.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
work="${WORK:-build-fused}"
case "${1:-}" in
  build)
    temper="${TEMPER:-build-test/app/temper}"
    . tests/engine/patched_upstream.sh
    mkdir -p "$work"
    patched_upstream "$(cd "$(dirname "$temper")" && pwd)/$(basename "$temper")" "$PWD/$work/tree" > "$work/patch.log"
    flags="-std=c++17 -O3 -arch=${ARCH:-sm_90} -use_fast_math -extended-lambda -DNDEBUG -DGGML_CUDA_NO_FA
           -I$tree/include -I$tree/src -I$tree/src/ggml-cuda -I."
    nvcc -c $flags -DTEMPER_EXACT_RUN=temper_exact_run tests/engine/hook_exact/group_unit.cu -o "$work/hook.o" &
    nvcc -c $flags -DTEMPER_GROUP_GENERIC_DOT -DTEMPER_MMVQ_GATE_IN_LOOP -DTEMPER_EXACT_RUN=temper_exact_run_generic \
      tests/engine/hook_exact/group_unit.cu -o "$work/generic.o"
    wait %1
    nvcc $flags bench/fused_ab.cu "$work/hook.o" "$work/generic.o" -o "$work/fused_ab"
    rm -rf "$work/tree"
    echo "built $work/fused_ab" ;;
  run)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
    "$work/fused_ab" "${ROUNDS:-5}" "${SAMPLES:-100}" | tee "$work/fused_ab.csv"
    [[ -n "${OUT:-}" ]] && cp "$work/fused_ab.csv" "$OUT/" || true ;;
  *) echo "usage: bench/fused_ab.sh build|run" >&2; exit 2 ;;
esac
