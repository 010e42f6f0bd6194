#!/usr/bin/env bash
# The GUI's demo session and the sweep's evidence (issue 6), on a GPU host after bench/device.sh
# built build-device/: configures the same tree with the tests on (GoogleTest from .deps/ when the
# host has none), runs the gpu-labelled ctests, then sweeps the Llama-3-8B Q4_K_M-shaped fixture
# (real names and dimensions, sparse data: the sweep draws its own random blocks) at ncols 1 over
# the full grid RUNS times (seeds 1..RUNS), timing each run, compares every pair of sessions
# (winner agreement, spread of the medians) and ends with a quick `--device all` sweep (one worker
# per GPU of the host). Sessions land in $OUT (or build-device/evidence); session-1 is the GUI's
# demo session. Environment: RUNS (default 3), KERNEL_SET (default full), JOBS.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-device/evidence}"
mkdir -p "$out"
runs="${RUNS:-3}"
command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"

cmake --preset device -DTEMPER_TESTS=ON -DTEMPER_KERNEL_SET="${KERNEL_SET:-full}" >"$out/demo-configure.log" 2>&1 \
  || { tail -30 "$out/demo-configure.log"; exit 1; }
cmake --build --preset device -j "${JOBS:-$(nproc)}" >"$out/demo-build.log" 2>&1 \
  || { grep -E "error|FAILED" -A5 "$out/demo-build.log" | head -40; exit 1; }
ctest --test-dir build-device -L gpu --output-on-failure >"$out/gpu-ctest.log" 2>&1 && gpu_rc=0 || gpu_rc=$?
tail -15 "$out/gpu-ctest.log"

temper=build-device/app/temper
model="$out/llama3-8b-q4_k_m.gguf"
build-device/tests/fixtures/temper-fixture llama3-8b-q4_k_m "$model"
"$temper" inspect "$model" | tail -12
for run in $(seq 1 "$runs"); do
  start=$(date +%s%N)
  "$temper" sweep "$model" --ncols 1 --seed "$run" -o "$out/session-$run.json" >"$out/sweep-$run.txt" 2>"$out/sweep-$run.err" \
    && rc=0 || rc=$?
  echo "== sweep $run: exit $rc, wall $(( ($(date +%s%N) - start) / 1000000 )) ms"
done
rm -f "$model"
: >"$out/compare.txt"
for a in $(seq 1 "$runs"); do
  for b in $(seq $((a + 1)) "$runs"); do
    echo "== session $a vs $b" >>"$out/compare.txt"
    "$temper" session "$out/session-$a.json" --compare "$out/session-$b.json" >>"$out/compare.txt" 2>&1 || true
  done
done
"$temper" sweep --shape q4_0:4096:14336 --quick --device all -o "$out/session-all.json" >"$out/sweep-all.txt" 2>&1 \
  && all_rc=0 || all_rc=$?
echo "== gpu ctest exit $gpu_rc; --device all exit $all_rc"
cat "$out/sweep-1.txt"
cat "$out/compare.txt"
