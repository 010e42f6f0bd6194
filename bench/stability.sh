#!/usr/bin/env bash
# Timing method and winner stability on a GPU host (issues 5 and 6), one call: builds the `device`
# preset with the ci kernel set (every type at ncols 1) plus the fixture tool, then
#   1. times q4_0, q8_0, q4_K and q2_K at N=4096 K=14336 (default + every config) twice: one event
#      pair per launch (the sweep's method) and one per 8 back-to-back launches (as a graph runs
#      decode kernels), to see how much of a launch's time is the event pair itself;
#   2. sweeps the Llama-3-8B Q4_K_M-shaped fixture at ncols 1 over the full grid RUNS times
#      (seeds 1..RUNS, interleaved confirmation of winners on) and compares every pair of sessions;
#   3. runs a quick sweep with `--device all` (every GPU of the host, one worker each).
# Sessions and logs land in $OUT (else build-device/evidence); a short table prints last.
# Environment: RUNS (default 3), JOBS.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-device/evidence}"
mkdir -p "$out"
runs="${RUNS:-3}"
command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
export CUDACXX="$(command -v nvcc)"

start=$(date +%s)
cmake --preset device -DTEMPER_KERNEL_SET=ci -DTEMPER_TESTS=ON >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset device --target temper temper-fixture -j "${JOBS:-$(nproc)}" >"$out/build.log" 2>&1 \
  || { grep -E "error|FAILED" -A5 "$out/build.log" | head -40; exit 1; }
echo "== build (ci kernel set): $(( $(date +%s) - start )) s"
temper=build-device/app/temper

# 1. Timing method.
for l in 1 8; do
  "$temper" bench-gemv --types q4_0,q8_0,q4_K,q2_K --n 4096 --k 14336 --back-to-back "$l" \
    --save "$out/bench-b2b$l.json" >"$out/bench-b2b$l.txt" 2>"$out/bench-b2b$l.err" || echo "== bench-gemv --back-to-back $l: exit $?"
done

# 2. Winner stability.
model="$out/llama3-8b-q4_k_m.gguf"
build-device/tests/fixtures/temper-fixture llama3-8b-q4_k_m "$model"
for run in $(seq 1 "$runs"); do
  t0=$(date +%s%N)
  "$temper" sweep "$model" --ncols 1 --seed "$run" -o "$out/session-$run.json" >"$out/sweep-$run.txt" 2>"$out/sweep-$run.err" \
    && rc=0 || rc=$?
  echo "== sweep $run: exit $rc, wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
rm -f "$model"
: >"$out/compare.txt"
for a in $(seq 1 "$runs"); do
  for b in $(seq $((a + 1)) "$runs"); do
    echo "== session $a vs $b" >>"$out/compare.txt"
    "$temper" session "$out/session-$a.json" --compare "$out/session-$b.json" >>"$out/compare.txt" 2>&1 || true
  done
done

# 3. Every GPU of the host.
"$temper" sweep --shape q4_0:4096:14336 --quick --device all -o "$out/session-all.json" >"$out/sweep-all.txt" 2>&1 \
  && echo "== --device all: exit 0" || echo "== --device all: exit $?"

echo; cat "$out/sweep-1.txt"
echo; grep -E "^== |agree|spread" "$out/compare.txt" || true
for l in 1 8; do echo; echo "-- one event pair per $l launch(es)"; tail -n 6 "$out/bench-b2b$l.txt"; done
