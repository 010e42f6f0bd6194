#!/usr/bin/env bash
# End-to-end evidence on an NVIDIA host (issues 27-29): a llama.cpp checkout patched with Temper's hook,
# llama-bench built from it, the engine's own kernel swept as the engine launches it (fused gate/up,
# MUL_MAT_ID), a profile exported and replayed, and llama-bench's two arms (the patched build without
# a profile = stock, and with it) interleaved round by round.
#
# Carry .upstream/llama.cpp (an extracted llama.cpp tree) and .deps/ (scripts/device-deps). One device
# call runs at most 10 minutes, so the pipeline runs detached and later calls wait on it:
#   bash bench/e2e.sh start        # starts every stage in the background (setsid), returns at once
#   bash bench/e2e.sh wait [S]     # waits up to S seconds (default 540) for it, prints the log's tail,
#                                  # packs what exists into $OUT/e2e.tgz
# Stages (STAGES, default all): build fixtures engines sweep export replay bench
# FAKE=1 runs sweep, export and replay against the fake probe of a local build-dev/ (no GPU, no
# llama.cpp): a dry run of the pipeline's own logic.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
work="${E2E_DIR:-$here/build-e2e}"
ev="$work/evidence"
log="$ev/e2e.log"
mkdir -p "$ev"
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$log" >&2; }
stages="${STAGES:-all}"
want() { [[ "$stages" == all || " $stages " == *" $1 "* ]]; }
jobs="${JOBS:-$(nproc)}"
types="${KERNEL_TYPES:-q4_K,q6_K}"        # the hook's instantiations: the fixtures' types at ncols 1-8
ncols="${NCOLS:-1,2,4,8}"
rounds="${ROUNDS:-3}"
export PATH="/usr/local/cuda/bin:$PATH" CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
export XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config"  # a clean engine cache, no default profile
if [[ -n "${FAKE:-}" ]]; then
  temper="$here/build-dev/app/temper"
  fixture_bin="$here/build-dev/tests/fixtures/temper-fixture"
  probe="$here/build-dev/tests/engine/temper_fake_probe"
else
  temper="$here/build-device/app/temper"
  fixture_bin="$here/build-device/tests/fixtures/temper-fixture"
  probe=""
fi
llama="$work/llama.cpp"
bench_bin="$llama/build/bin/llama-bench"
models=(llama3 qwen3moe)
declare -A fixture=([llama3]=llama3-8b-q4_k_m [qwen3moe]=qwen3-30b-a3b-q4_k_m)
declare -A model_ncols=([llama3]="$ncols" [qwen3moe]="1")
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
# Runs a stage's command, logging it; a failure ends the pipeline with the command's last lines.
run() {
  local name=$1; shift
  local t0=$(date +%s)
  if ! "$@" >"$ev/$name.out" 2>"$ev/$name.err"; then
    say "FAILED $name ($(( $(date +%s) - t0 )) s): $*"; tail -20 "$ev/$name.err" | tee -a "$log" >&2; exit 1
  fi
  say "ok $name ($(( $(date +%s) - t0 )) s)"
}

case "${1:-pipeline}" in
  start)
    rm -f "$work/done" "$work/failed"
    setsid bash -c "bash '$0' pipeline && touch '$work/done' || touch '$work/failed'" >/dev/null 2>&1 < /dev/null &
    echo "e2e: started (log $log)"; exit 0 ;;
  wait)
    limit=${2:-540}; t0=$(date +%s)
    while [[ ! -e "$work/done" && ! -e "$work/failed" && $(( $(date +%s) - t0 )) -lt $limit ]]; do sleep 5; done
    tail -40 "$log"
    [[ -e "$work/done" ]] && echo "e2e: DONE" || { [[ -e "$work/failed" ]] && echo "e2e: FAILED" || echo "e2e: still running"; }
    if [[ -n "${OUT:-}" ]]; then
      tar czf "$OUT/e2e.tgz" -C "$ev" --exclude='*.journal' . 2>/dev/null
      ls "$ev"/*.md >/dev/null 2>&1 && cat "$ev"/*.md > "$OUT/tables.md"
    fi
    exit 0 ;;
  pipeline) ;;
  *) echo "usage: bench/e2e.sh start | wait [SECONDS] | pipeline" >&2; exit 2 ;;
esac

say "== $(uname -n), $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); commit $(git rev-parse --short HEAD 2>/dev/null || cat cmake/git-commit.txt); stages: $stages"

if want build && [[ -z "${FAKE:-}" ]]; then
  # Temper's CLI and the fixture tool; no kernels of Temper's own (the engine's are timed here).
  run configure cmake --preset device -DTEMPER_TESTS=ON -DTEMPER_CUDA=OFF -DTEMPER_KERNEL_SET=none
  run build cmake --build --preset device --target temper temper-fixture -j "$jobs"
fi

if want fixtures; then
  # Runnable fixtures: real layouts and quant mixes, random valid weights, no vocabulary.
  runnable=(--runnable); [[ -n "${FAKE:-}" ]] && runnable=()  # the fake probe reads no weights
  for m in "${models[@]}"; do
    [[ -s "$work/$m.gguf" ]] || run "fixture-$m" "$fixture_bin" "${runnable[@]}" "${fixture[$m]}" "$work/$m.gguf"
  done
fi

if want engines && [[ -z "${FAKE:-}" ]]; then
  # The user's side: a patched llama.cpp and its llama-bench. Temper's side: the probe, built by
  # `temper engine build` from the same (unpatched) tree. Both at once.
  rm -rf "$llama" && cp -r .upstream/llama.cpp "$llama"
  run patch "$temper" engine patch "$llama" --kernel-set "$types"
  run llama-configure cmake -S "$llama" -B "$llama/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DGGML_CUDA_FA=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
  t0=$(date +%s)
  cmake --build "$llama/build" --target llama-bench -j "$jobs" >"$ev/llama-build.out" 2>&1 &
  llama_pid=$!
  run probe-build "$temper" engine build .upstream/llama.cpp --arch sm_90 --kernel-set "$types" --jobs "$jobs" --json
  wait $llama_pid || { say "FAILED llama-bench build"; grep -m5 -B2 -A8 "error" "$ev/llama-build.out" | tee -a "$log" >&2; exit 1; }
  say "ok llama-bench build (both builds: $(( $(date +%s) - t0 )) s)"
fi
[[ -z "$probe" ]] && probe="$(json "$ev/probe-build.out" 'd["probe"]' 2>/dev/null)"

if want sweep; then
  for m in "${models[@]}"; do
    run "sweep-$m" "$temper" sweep "$work/$m.gguf" --probe "$probe" --ncols "${model_ncols[$m]}" -o "$ev/$m-engine.json"
    tail -25 "$ev/sweep-$m.out" >> "$log"
  done
fi

if want export; then
  for m in "${models[@]}"; do
    run "export-$m" "$temper" profile export "$ev/$m-engine.json" --format temper -o "$ev/$m.profile.json"
    cat "$ev/export-$m.out" >> "$log"
  done
fi

if want replay; then
  for m in "${models[@]}"; do
    run "replay-$m" "$temper" engine replay "$work/$m.gguf" --probe "$probe" --profile "$ev/$m.profile.json" \
      --tokens "${TOKENS:-30}" --rounds "${REPLAY_ROUNDS:-4}" --json
    cp "$ev/replay-$m.out" "$ev/$m-replay.json"
    say "$m replay: $(json "$ev/$m-replay.json" '"stock %.1f us, profile %.1f us, speedup %.3f [%.3f, %.3f], predicted %.3f, tuned launches %d of %d" % (d["stock"]["median_us"], d["profiled"]["median_us"], d["speedup"], d["speedup_low"], d["speedup_high"], d["predicted_speedup"], d["profiled"]["tuned_launches"], d["profiled"]["mmvq_launches"])')"
  done
fi

if want bench && [[ -z "${FAKE:-}" ]]; then
  # By hand, as a user would: stock (TEMPER_PROFILE= empty) and profile arms alternate, round by round.
  for m in "${models[@]}"; do
    for r in $(seq 1 "$rounds"); do
      for arm in stock profile; do
        p=""; [[ $arm == profile ]] && p="$ev/$m.profile.json"
        TEMPER_PROFILE="$p" "$bench_bin" -m "$work/$m.gguf" -p 0 -n 128 -r 3 -o json >"$ev/bench-$m-tg-$arm-$r.json" 2>"$ev/bench-$m-tg-$arm-$r.err" ||
          { say "FAILED llama-bench $m $arm round $r"; tail -5 "$ev/bench-$m-tg-$arm-$r.err" | tee -a "$log"; exit 1; }
        TEMPER_PROFILE="$p" "$bench_bin" -m "$work/$m.gguf" -p 2,4,8 -n 0 -r 5 -o json >"$ev/bench-$m-pp-$arm-$r.json" 2>"$ev/bench-$m-pp-$arm-$r.err" ||
          { say "FAILED llama-bench pp $m $arm round $r"; tail -5 "$ev/bench-$m-pp-$arm-$r.err" | tee -a "$log"; exit 1; }
      done
      say "llama-bench $m round $r done; engine: $(grep -h '^temper: profile' "$ev/bench-$m-tg-profile-$r.err" | tail -1)"
    done
    python3 bench/e2e_table.py "$ev" "$m" | tee "$ev/$m-bench.md" | tee -a "$log"
  done
fi
say "== done"
