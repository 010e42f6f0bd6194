#!/usr/bin/env bash
# Issue 28 on an NVIDIA host: `temper tune` of the Llama-3-8B Q4_K_M fixture on a llama.cpp tree, end
# to end from a clean cache with the time each step took, then a by-hand llama-bench of the same two
# arms, interleaved, outside Temper; bench/tune_compare.py says whether they agree within 1 %.
# Carry the tree in .upstream/llama.cpp (UPSTREAM=... for another) and .deps/ (scripts/device-deps).
#
#   bench/tune_device.sh start     run detached (setsid): returns at once; a device call is 10 min at
#                                  most, the whole run is longer. Work and evidence stay in build-tune/.
#                                  (`start dry-run`: the dry run detached, to try the polling here)
#   bench/tune_device.sh status    the stage, its time so far, the log's last lines; exit 0 done,
#                                  3 still running, 1 failed or never started
#   bench/tune_device.sh collect   $OUT/tune-evidence.tgz (everything) and $OUT/summary.md
#   bench/tune_device.sh run       the work in the foreground (what start runs)
#   bench/tune_device.sh dry-run   the same script on Temper's fake probe and the stand-in llama-bench,
#                                  no GPU and no build (TEMPER, FAKE_PROBE, FAKE_LLAMA_BENCH, FIXTURE_BIN:
#                                  default build-dev's); its numbers mean nothing
#
# Stages, in order (STAGES picks some; a warm machine keeps what earlier calls built):
#   temper   `temper` and `temper-fixture` (CUDA on, Temper's own kernels none: tune times the engine's)
#   fixture  the Llama-3-8B Q4_K_M fixture, --runnable (real layout and quant mix, random valid weights)
#   llama    a copy of the tree, `temper engine patch`ed, llama-bench built from it (and, with
#            STOCK_BUILD=1, an unpatched copy's llama-bench for the stock arm)
#   tune     `temper tune --patch --llama-bench` from clean XDG cache and config folders, timed
#   hand     llama-bench by hand: ROUNDS × TESTS × (stock: TEMPER_PROFILE= or the stock build; profile:
#            TEMPER_PROFILE=the installed profile), -r REPS -o json, interleaved, the order reversed every other round
#   axis     the installed profile against itself without the grid beyond nwarps 16 / rows 8
#            (profile_old_grid.py), each replayed in the engine against stock
#   moe      the Qwen3-30B-A3B fixture (--runnable) tuned on the same engine (its probe build is
#            reused): MOE_NCOLS (1,2,4,8), MOE_TESTS (tg128,pp8), the same rounds
#   summary  tune_summary.py: every tune's steps, llama-bench, replay against prediction, mmvq/mmq
#            crossover, per-launch breakdown, and what the grid beyond nwarps 16 / rows 8 bought
#   paths    (not in the default) llama-bench pp8 of both fixtures, stock vs PATHS_PROFILE (default
#            bench/profiles/h100-q4_K-mmq-at-8.json: only the q4_K mmq choice at 8 columns), rounds
#            interleaved: what a path choice alone does, on the model it was measured on and another
#   hand     (not in the default) llama-bench by hand, as below; then `report`
#   report   (not in the default) tune_compare.py: tune's table against the by-hand one, within 1 %
#   cost     (not in the default) both fixtures on the unpatched build (STOCK_BUILD=1) against the patched
#            one without a profile and with COST_PROFILE, COST_TESTS (default TESTS), interleaved, the
#            order reversed every other round (as the hand stage's); without STOCK_BUILD=1 the patched
#            build without a profile is the stock arm (two arms); PF_MOE=0: the dense fixture only
#   retune   (not in the default) the same tune again: every step but the bench is skipped
#   pfexp    (not in the default) the issue-29 experiment: mmvq prefetching its rows to L2 (bench/exp_prefetch_patch.py)
#            in a second build of the patched tree (PF_BITS: 1 early launch, 2 prefetch, 3 both, the default), four arms of
#            llama-bench COST_TESTS, both fixtures (PF_MOE=0: the dense one)
#   pipeline (not in the default) the hook's own pipelined launches with COST_PROFILE (its *_pipelined entries; with
#            PIPELINE_OVERRIDE=1 every tuned launch, TEMPER_MMVQ_PIPELINE=1, and then the profile as installed is a
#            fourth arm) against the profile unpipelined (TEMPER_MMVQ_PIPELINE=0) and stock, llama-bench COST_TESTS,
#            both fixtures (PF_MOE=0: the dense one). EXP_PIPELINE_ALL=1 (llama stage): bench/exp_pipeline_all_patch.py
#            on the patched tree before its build, so that the override also pipelines groups and unfused pairs.
#            EXP_PIPELINE_ALTS=1: bench/exp_pipeline_alts.py's variants of COST_PROFILE (gate/up fused and pipelined;
#            the pipelined entries at Temper's pipelined-best configs) as more arms, each against the profile as installed
#   verify   (not in the default) whether pipelined launches change what the engine computes: bench/greedy_decode.cpp
#            (128 greedy one-column steps, a hash of each step's logits) of both fixtures, arms that must agree bit
#            for bit: stock twice, COST_PROFILE unpipelined and pipelined (as the pipeline stage), and the pfexp build's (when built)
#            without and with the profile against the base build's
#   ownkernel (not in the default) Temper's own kernel as the hook runs *_pipelined entries (issue 29 item 3): `temper verify
#            --variants all` (q4_K, q6_K, ncols 1-2), the gpu test comparing its outputs with d99724f's bit for bit, and
#            `temper bench-gemv` of the dense token's shapes, d99724f against --pipelined, every config, back to back
#   owngroup (not in the default) Temper's own same-input group kernel (the hook's mul_mat_group launch, issue 29
#            item 3): `temper verify --groups` (q4_K+q4_K+q6_K as Llama-3's q, k, v and q8_0+q8_0, ncols 1-4, 7180759
#            and d99724f), the gpu test comparing each member's outputs with mmvq's bit for bit, and `temper bench-gemv
#            --group` of both fixtures' q, k, v (ncols 1, 2, 4) against the members' own launches (owngroup.md)
#   norm     (not in the default) issue 48: the norm writes its GEMVs' q8_1 activations (TEMPER_MMVQ_NORM_Q8=1), stock
#            and COST_PROFILE each without and with it, llama-bench COST_TESTS, both fixtures, and greedy decoding of
#            each pair, which must agree bit for bit
#   kernels  (not in the default) Nsight Compute over llama-bench tg4 of both fixtures, without and with
#            COST_PROFILE: each kernel timed alone, summed per token by kind (kernel_sums.py), beside tg32's period;
#            with KERNEL_DETAIL (an ncu -k filter) also those kernels' throughputs, occupancy and stalls
#   fused    (not in the default) issue 48, hooks v13/v14: bench/fused_ab.cu, the tuned fused launches alone at the
#            dense down and o shapes (stock loop, gate once, bias-only twin, unfused), every config of the fused grid;
#            FUSED_GGML (default .upstream/ggml-d99724f), FUSED_ROUNDS (5), FUSED_SAMPLES (100): fused_ab.csv, fused_ab.md
# Env: NCOLS (1,2,4,8), TESTS (tg128,pp2,pp4,pp8), ROUNDS (5), REPS (5), JOBS (nproc), ARCH (sm_90),
# KERNEL_SET (the hook's instantiations in both builds; default q4_K,q6_K, the fixture's types: full
# builds every type and takes longer), STOCK_BUILD (0), HAND_PROFILE (the hand stage's profile arm:
# default the installed profile; none: the patched build without one, against STOCK_BUILD=1's), LLAMA_CMAKE_ARGS (more llama.cpp configure
# flags, after the defaults: FlashAttention on, as users build it), KERNEL_FIXTURES (the kernels stage's
# fixtures in order: dense moe), EXP_FIXTURES (the experiment stages' fixtures: dense moe; PF_MOE=0 is
# dense alone), WORK (build-tune).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
mode="${1:-status}"
dry=0
[[ "$mode" == dry-run || "${2:-}" == dry-run ]] && dry=1
work="${WORK:-$here/build-tune$([[ $dry == 1 ]] && echo -dry)}"
ev="$work/evidence"
log="$ev/run.log"
stages="${STAGES:-temper fixture llama tune axis moe summary}"
ncols="${NCOLS:-1,2,4,8}" tests="${TESTS:-tg128,pp2,pp4,pp8}" rounds="${ROUNDS:-5}" reps="${REPS:-5}"
moe_ncols="${MOE_NCOLS:-1,2,4,8}" moe_tests="${MOE_TESTS:-tg128,pp8}"
jobs="${JOBS:-$(nproc)}" arch="${ARCH:-sm_90}" kernel_set="${KERNEL_SET:-q4_K,q6_K}"
upstream="${UPSTREAM:-$here/.upstream/llama.cpp}"

now() { date +%s%N; }
ms() { echo $(( ($(now) - $1) / 1000000 )); }
say() { echo "$*" | tee -a "$log" >&2; }
want() { [[ " $stages " == *" $1 "* ]]; }
stage() { echo "$1 $(date +%s)" >"$work/stage"; say "== $(date -u +%T) stage $1"; }
timed() { printf '%s\t%s\n' "$1" "$2" >>"$ev/timings.tsv"; say "== $1: $(( $2 / 1000 )).$(( ($2 % 1000) / 100 )) s"; }

case "$mode" in
  start)
    mkdir -p "$work"
    if [[ -f "$work/pid" ]] && kill -0 "$(cat "$work/pid")" 2>/dev/null; then
      echo "tune_device: already running (pid $(cat "$work/pid")); poll with: bash bench/tune_device.sh status"; exit 3
    fi
    rm -f "$work/done" "$work/failed"
    setsid nohup bash "$0" "$([[ $dry == 1 ]] && echo dry-run || echo run)" >"$work/start.log" 2>&1 </dev/null &
    echo $! >"$work/pid"
    echo "tune_device: started (pid $!); poll with: bash bench/tune_device.sh status$([[ $dry == 1 ]] && echo ' dry-run'); then: ... collect"
    exit 0 ;;
  status)
    [[ -f "$work/stage" ]] || { echo "tune_device: not started (bash bench/tune_device.sh start)"; exit 1; }
    read -r name since <"$work/stage"
    if [[ -f "$work/done" ]]; then state=done; elif [[ -f "$work/pid" ]] && kill -0 "$(cat "$work/pid")" 2>/dev/null; then state=running; else state=failed; fi
    echo "tune_device: $state; stage $name for $(( $(date +%s) - since )) s"
    [[ -f "$ev/timings.tsv" ]] && { column -t "$ev/timings.tsv" 2>/dev/null || cat "$ev/timings.tsv"; }
    tail -n 15 "$log" 2>/dev/null
    [[ $state == done ]] && { cat "$ev/summary.md" 2>/dev/null; exit 0; }
    [[ $state == running ]] && exit 3
    exit 1 ;;
  collect)
    [[ -n "${OUT:-}" ]] || { echo "tune_device: collect writes to \$OUT"; exit 2; }
    cp "$ev/summary.md" "$OUT/" 2>/dev/null
    tar czf "$OUT/tune-evidence.tgz" -C "$ev" . && echo "tune_device: $OUT/tune-evidence.tgz ($(du -h "$OUT/tune-evidence.tgz" | cut -f1))"
    exit 0 ;;
  run|dry-run) ;;
  *) echo "usage: bench/tune_device.sh start|status|collect|run|dry-run"; exit 2 ;;
esac

# ---- run / dry-run ----
rm -rf "$ev"
mkdir -p "$ev/hand"
echo "setup $(date +%s)" >"$work/stage"
trap 'rc=$?; [[ $rc == 0 ]] && touch "$work/done" || { touch "$work/failed"; say "== failed (exit $rc) in stage $(cut -d" " -f1 "$work/stage")"; }' EXIT

if [[ $dry == 1 ]]; then
  temper="${TEMPER:-$here/build-dev/app/temper}"
  fixture_bin="${FIXTURE_BIN:-$here/build-dev/tests/fixtures/temper-fixture}"
  probe="${FAKE_PROBE:-$here/build-dev/tests/engine/temper_fake_probe}"
  llama_bench="${FAKE_LLAMA_BENCH:-$here/build-dev/tests/engine/temper_fake_llama_bench}"
  stock_bench="$llama_bench"
  export FAKE_LLAMA_BENCH_LOG="$ev/stand-in-invocations.log"  # numbers its invocations: each run its own noise
  fixture=small-llama moe_fixture=mini-moe runnable=()  # the fake probe and the stand-in read no weights
  for f in "$temper" "$fixture_bin" "$probe" "$llama_bench"; do
    [[ -x "$f" ]] || { say "tune_device: $f: not built (build temper, temper-fixture, temper_fake_probe, temper_fake_llama_bench)"; exit 1; }
  done
  stages="${stages/temper /}"; stages="${stages/llama /}"
else
  # The first step that needs the NVIDIA host says so, instead of failing deep inside a build.
  export PATH="/usr/local/cuda/bin:$PATH"
  command -v nvcc >/dev/null || { say "tune_device: no nvcc (looked in PATH and /usr/local/cuda/bin): run this on the NVIDIA host, or dry-run here"; exit 1; }
  nvidia-smi -L >>"$log" 2>&1 || { say "tune_device: no NVIDIA GPU (nvidia-smi -L failed): run this on the NVIDIA host, or dry-run here"; exit 1; }
  export CUDACXX="${CUDACXX:-$(command -v nvcc)}"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$log" 2>&1
  say "== $(nvcc --version | tail -1)"
  temper="$work/temper/app/temper" fixture_bin="$work/temper/tests/fixtures/temper-fixture"
  llama_bench="$work/llama.cpp/build/bin/llama-bench" stock_bench="$llama_bench"
  [[ "${STOCK_BUILD:-0}" == 1 ]] && stock_bench="$work/llama.cpp-stock/build/bin/llama-bench"
  fixture=llama3-8b-q4_k_m moe_fixture=qwen3-30b-a3b-q4_k_m runnable=(--runnable)
fi
model="$work/$fixture.gguf"
# The files as they are here: a device copy's git metadata can lag them, so the commit line alone may
# be stale. `git rev-parse COMMIT^{tree}` on the development machine gives the same id for a clean tree.
tree_id() { local idx; idx=$(mktemp -u) && GIT_INDEX_FILE=$idx git add -A . 2>/dev/null && GIT_INDEX_FILE=$idx git write-tree 2>/dev/null; rm -f "$idx"; }
say "== $(date -u +%FT%TZ) host $(uname -n), $(nproc) cores; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') (files: tree $(tree_id || echo '?')); mode $mode; stages: $stages"

if want temper; then
  stage temper
  t0=$(now)
  { cmake -S . -B "$work/temper" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEMPER_GUI=OFF -DTEMPER_HIP=OFF -DTEMPER_CUDA=ON \
      -DTEMPER_CUDA_ARCHS="${arch#sm_}" -DTEMPER_KERNEL_SET=none -DTEMPER_TESTS=ON -DTEMPER_BENCH=OFF &&
    cmake --build "$work/temper" -j "$jobs" --target temper temper-fixture $( (want ownkernel || want owngroup) && echo gpu_device_test); } \
    >>"$ev/temper-build.log" 2>&1 ||
    { grep -E "error|Error|FAILED" -A5 "$ev/temper-build.log" | head -30 | tee -a "$log" >&2; exit 1; }
  timed temper-build "$(ms "$t0")"
fi

# write_fixture NAME PATH: temper-fixture's NAME layout (runnable on the device host) written to PATH.
write_fixture() {
  "$fixture_bin" "${runnable[@]}" "$1" "$2" 2>&1 | tee -a "$log" >&2
  [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
}

if want fixture; then
  stage fixture
  t0=$(now)
  write_fixture "$fixture" "$model"
  timed fixture "$(ms "$t0")"
fi

# llama_build DIR NAME [BUILD_DIR [CMAKE_ARG...]]: llama-bench of the tree at DIR (in DIR/build), timed as NAME.
llama_build() {
  local t0=$(now) src="$1" name="$2" bdir="${3:-$1/build}"
  shift $(( $# < 3 ? $# : 3 ))
  # shellcheck disable=SC2086
  { cmake -S "$src" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${arch#sm_}" \
      -DGGML_CUDA_FA=ON -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF ${LLAMA_CMAKE_ARGS:-} "$@" &&
    cmake --build "$bdir" -j "$jobs" --target llama-bench; } >>"$ev/$name.log" 2>&1 ||
    { grep -E "error|Error|FAILED" -A5 "$ev/$name.log" | head -30 | tee -a "$log" >&2; exit 1; }
  timed "$name" "$(ms "$t0")"
}

if want llama; then
  stage llama
  [[ -f "$upstream/ggml/src/ggml-cuda/mmvq.cu" ]] || { say "tune_device: $upstream: no llama.cpp tree (carry one in .upstream/llama.cpp)"; exit 1; }
  rm -rf "$work/llama.cpp" "$work/llama.cpp-stock"
  cp -r "$upstream" "$work/llama.cpp" && rm -rf "$work/llama.cpp/build"
  "$temper" engine check "$work/llama.cpp" 2>&1 | tee -a "$log" >&2
  "$temper" engine patch "$work/llama.cpp" --kernel-set "$kernel_set" 2>&1 | tee -a "$log" >&2
  [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
  if [[ "${EXP_PIPELINE_ALL:-0}" == 1 ]]; then  # the experiment in the one build (the override reaches groups and pairs)
    python3 bench/exp_pipeline_all_patch.py "$work/llama.cpp/ggml/src/ggml-cuda" 2>&1 | tee -a "$log" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
  fi
  llama_build "$work/llama.cpp" llama-build-patched
  if [[ "${STOCK_BUILD:-0}" == 1 ]]; then
    cp -r "$upstream" "$work/llama.cpp-stock" && rm -rf "$work/llama.cpp-stock/build"
    llama_build "$work/llama.cpp-stock" llama-build-stock
  fi
fi

# Tune from clean cache and config folders: the engine build, the sweep, everything from scratch.
export XDG_CACHE_HOME="$work/xdg/cache" XDG_CONFIG_HOME="$work/xdg/config"
profile="$XDG_CONFIG_HOME/temper/engine-profile.json"
tune_args=("$model" --ncols "$ncols" --llama-bench "$llama_bench" --tests "$tests" --rounds "$rounds" --repetitions "$reps" --json)
[[ "$stock_bench" != "$llama_bench" ]] && tune_args+=(--stock-bench "$stock_bench")
if [[ $dry == 1 ]]; then
  tune_args+=(--probe "$probe")
else
  tune_args+=(--engine-src "$work/llama.cpp" --patch --arch "$arch" --kernel-set "$kernel_set" --jobs "$jobs")
fi

if want tune; then
  stage tune
  rm -rf "$work/xdg"
  t0=$(now)
  "$temper" tune "${tune_args[@]}" >"$ev/tune.json" 2>"$ev/tune.log" || { tail -20 "$ev/tune.log" | tee -a "$log" >&2; exit 1; }
  timed tune "$(ms "$t0")"
  python3 - "$ev/tune.json" <<'EOF' | tee -a "$log" >&2
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["steps"]:
    print(f"   {s['step']:8} {s['outcome']:10} {s['seconds']:8.1f} s  {s['summary']}")
EOF
  cp "$profile" "$ev/engine-profile.json"
  cp "$XDG_CACHE_HOME"/temper/tune/*/sweep.session.json "$ev/" 2>/dev/null
  cp "$XDG_CACHE_HOME"/temper/tune/*/tune.journal "$ev/" 2>/dev/null
fi

if want retune; then
  stage retune
  t0=$(now)
  "$temper" tune "${tune_args[@]}" >"$ev/tune-again.json" 2>"$ev/tune-again.log" || { tail -20 "$ev/tune-again.log" | tee -a "$log" >&2; exit 1; }
  timed retune "$(ms "$t0")"
fi

if want axis; then
  stage axis
  [[ -f "$ev/sweep.session.json" ]] || { say "tune_device: no sweep session (run the tune stage first)"; exit 1; }
  python3 bench/profile_old_grid.py "$profile" "$ev/sweep.session.json" "$ev/profile-old-grid.json" 2>&1 | tail -15 | tee -a "$log" >&2
  if [[ $dry == 1 ]]; then engine_args=(--probe "$probe"); else engine_args=(--engine-src "$work/llama.cpp" --arch "$arch" --kernel-set "$kernel_set"); fi
  t0=$(now)
  for p in full="$profile" old-grid="$ev/profile-old-grid.json"; do
    "$temper" engine replay "$model" "${engine_args[@]}" --profile "${p#*=}" --rounds "$rounds" --json >"$ev/replay-${p%%=*}.json" 2>>"$log" ||
      { say "tune_device: the replay of ${p#*=} failed"; exit 1; }
  done
  timed axis "$(ms "$t0")"
fi

if want moe; then
  stage moe
  moe_model="$work/$moe_fixture.gguf"
  t0=$(now)
  write_fixture "$moe_fixture" "$moe_model"
  timed moe-fixture "$(ms "$t0")"
  moe_args=("$moe_model" "${tune_args[@]:1}")
  for i in "${!moe_args[@]}"; do
    [[ "${moe_args[$i]}" == --ncols ]] && moe_args[$((i + 1))]="$moe_ncols"
    [[ "${moe_args[$i]}" == --tests ]] && moe_args[$((i + 1))]="$moe_tests"
  done
  t0=$(now)
  "$temper" tune "${moe_args[@]}" >"$ev/tune-moe.json" 2>"$ev/tune-moe.log" || { tail -20 "$ev/tune-moe.log" | tee -a "$log" >&2; exit 1; }
  timed tune-moe "$(ms "$t0")"
  cp "$profile" "$ev/engine-profile-after-moe.json"
  cp "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["session"])' "$ev/tune-moe.json")" "$ev/sweep-moe.session.json"
fi

if want summary; then
  stage summary
  args=()
  [[ -f "$ev/tune.json" ]] && args+=("dense=$ev/tune.json")
  [[ -f "$ev/tune-moe.json" ]] && args+=("moe=$ev/tune-moe.json")
  for f in "$ev"/*.session.json; do [[ -f "$f" ]] && args+=(--session "$f"); done
  for f in "$ev"/replay-*.json; do [[ -f "$f" ]] && args+=(--replay "$(basename "$f" .json)=$f"); done
  python3 bench/tune_summary.py "${args[@]}" >"$ev/summary.md" || exit 1
  cat "$ev/summary.md" >&2
fi

if want paths; then
  stage paths
  paths_profile="$(realpath "${PATHS_PROFILE:-bench/profiles/h100-q4_K-mmq-at-8.json}")"
  moe_model="$work/$moe_fixture.gguf"
  [[ -f "$moe_model" ]] || write_fixture "$moe_fixture" "$moe_model"
  mkdir -p "$ev/paths"
  t0=$(now)
  for r in $(seq 1 "$rounds"); do
    for m in "$model" "$moe_model"; do
      base="$ev/paths/r$r-$(basename "$m" .gguf)"
      TEMPER_PROFILE= "$llama_bench" -m "$m" -p 128 -n 0 -ub 8 -r "$reps" -o json >"$base-stock.json" 2>"$base-stock.err" ||
        { tail -5 "$base-stock.err" | tee -a "$log" >&2; exit 1; }
      TEMPER_PROFILE="$paths_profile" "$llama_bench" -m "$m" -p 128 -n 0 -ub 8 -r "$reps" -o json >"$base-profile.json" 2>"$base-profile.err" ||
        { tail -5 "$base-profile.err" | tee -a "$log" >&2; exit 1; }
    done
  done
  timed paths "$(ms "$t0")"
  say "== the engine: $(grep -h '^temper: profile' "$ev"/paths/*-profile.err | head -1)"
  python3 - "$ev/paths" <<'EOF2' | tee -a "$log" >&2
import glob, json, os, statistics, sys
runs = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "r*-*.json"))):
    name = os.path.basename(f)[:-5]
    rnd, rest = name.split("-", 1)
    model, arm = rest.rsplit("-", 1)
    runs.setdefault(model, {}).setdefault(arm, []).extend(json.load(open(f))[0]["samples_ts"])
print("| model | pp8 stock t/s | pp8 with the path choice t/s | speedup |\n|---|---:|---:|---:|")
for model, arms in runs.items():
    s, p = statistics.median(arms["stock"]), statistics.median(arms["profile"])
    print(f"| {model} | {s:.2f} | {p:.2f} | **{p / s:.3f}** |")
EOF2
fi

# test_args TEST: llama-bench's arguments into `args` (tgN: -p 0 -n N; ppW: -p 128 -n 0 -ub W, as
# docs/llama-cpp.md says).
test_args() {
  case "$1" in
    tg*) args=(-p 0 -n "${1#tg}") ;;
    pp*) args=(-p 128 -n 0 -ub "${1#pp}") ;;
    *) say "tune_device: unknown test $1"; exit 1 ;;
  esac
}
# bench_one LLAMA_BENCH PROFILE MODEL OUT_JSON ERR: one llama-bench run of `args`, TEMPER_PROFILE=PROFILE.
bench_one() {
  TEMPER_PROFILE="$2" "$1" -m "$3" "${args[@]}" -r "$reps" -o json >"$4" 2>"$5" || { tail -5 "$5" | tee -a "$log" >&2; exit 1; }
}

# The cost, pfexp and pipeline stages' models: the dense fixture and, unless PF_MOE=0, the MoE one
# (written here when missing), in `models`.
experiment_models() {
  models=()
  local f fixtures="${EXP_FIXTURES:-dense moe}"
  [[ "${PF_MOE:-1}" == 1 ]] || fixtures="dense"
  for f in $fixtures; do
    case $f in
      dense) models+=("$model") ;;
      moe) models+=("$work/$moe_fixture.gguf"); [[ -f "${models[-1]}" ]] || write_fixture "$moe_fixture" "${models[-1]}" ;;
      *) say "tune_device: EXP_FIXTURES: $f (expected dense or moe)"; exit 1 ;;
    esac
  done
}

# interleaved_arms DIR MODEL TESTS RUN_ARM ARM...: ROUNDS × TESTS (comma-separated) × the arms, the
# order reversed every other round (2026-11-28: a fixed order read as a 1-3 % cost of the second arm at
# the MoE model's prompt tests; swapped, it was noise). RUN_ARM ARM MODEL OUT runs one llama-bench
# (bench_one, `args` set) into OUT.json and OUT.err, OUT being DIR/rROUND-TEST-ARM.
interleaved_arms() {
  local d=$1 m=$2 arm_tests=$3 run=$4 r t a
  shift 4
  local arms=("$@") order
  for r in $(seq 1 "$rounds"); do
    for t in ${arm_tests//,/ }; do
      test_args "$t"
      order=("${arms[@]}")
      (( r % 2 )) || mapfile -t order < <(printf '%s\n' "${arms[@]}" | tac)
      for a in "${order[@]}"; do "$run" "$a" "$m" "$d/r$r-$t-$a"; done
    done
  done
}

# compare_arms DIR TESTS SUB BASE OTHER TITLE MD: every round's and test's BASE and OTHER runs of
# interleaved_arms as tune_compare.py's stock and other arm, in DIR/SUB; says TITLE, the table into MD.
compare_arms() {
  local d=$1 arm_tests=$2 sub=$3 base=$4 other=$5 title=$6 md=$7 r t
  mkdir -p "$d/$sub"
  for r in $(seq 1 "$rounds"); do
    for t in ${arm_tests//,/ }; do
      cp "$d/r$r-$t-$base.json" "$d/$sub/r$r-$t-stock.json"
      cp "$d/r$r-$t-$other.json" "$d/$sub/r$r-$t-profile.json"
    done
  done
  say "== $title"
  python3 bench/tune_compare.py --hand-only "$d/$sub" | tee "$md" >&2
}

# By hand: llama-bench itself, the same arms and arguments, interleaved run by run.
if want hand; then
  stage hand
  hand_profile="${HAND_PROFILE:-$profile}"  # none: the patched build without a profile (what the hook costs)
  [[ "$hand_profile" == none ]] && hand_profile=
  [[ -z "$hand_profile" || -f "$hand_profile" ]] || { say "tune_device: no profile $hand_profile (run the tune stage first, or HAND_PROFILE=FILE|none)"; exit 1; }
  t0=$(now)
  for r in $(seq 1 "$rounds"); do
    for t in ${tests//,/ }; do
      test_args "$t"
      base="$ev/hand/r$r-$t"
      stock_arm() { bench_one "$stock_bench" "" "$model" "$base-stock.json" "$base-stock.err"; }
      profile_arm() { bench_one "$llama_bench" "$hand_profile" "$model" "$base-profile.json" "$base-profile.err"; }
      if (( r % 2 )); then stock_arm; profile_arm; else profile_arm; stock_arm; fi  # no arm always goes first
    done
  done
  timed hand "$(ms "$t0")"
  say "== the engine, by hand: $(grep -h '^temper: profile' "$ev"/hand/*-profile.err | head -1)"
  python3 bench/tune_compare.py --hand-only "$ev/hand" | tee "$ev/hand.md" >&2
fi

# What the hook costs and gives against an unpatched build (STOCK_BUILD=1): per fixture (the dense
# one; the MoE one too, generated here if missing) ROUNDS × COST_TESTS × the arms stock (unpatched),
# none (patched, TEMPER_PROFILE= empty) and profile (patched, COST_PROFILE: default the checked-in H100
# profile), interleaved; a table each for none and profile against stock.
if want cost; then
  stage cost
  cost_profile="${COST_PROFILE:-$here/bench/profiles/h100-llama3-qwen3-groups.json}"
  cost_tests="${COST_TESTS:-$tests}"
  cost_arm() {
    case $1 in
      stock) bench_one "$stock_bench" "" "$2" "$3.json" "$3.err" ;;
      none) bench_one "$llama_bench" "" "$2" "$3.json" "$3.err" ;;
      profile) bench_one "$llama_bench" "$cost_profile" "$2" "$3.json" "$3.err" ;;
    esac
  }
  experiment_models
  t0=$(now)
  for m in "${models[@]}"; do
    name=$(basename "$m" .gguf)
    d="$ev/cost/$name"
    mkdir -p "$d"
    if [[ "$stock_bench" != "$llama_bench" ]]; then
      interleaved_arms "$d" "$m" "$cost_tests" cost_arm stock none profile
      for arm in none profile; do
        compare_arms "$d" "$cost_tests" "$arm" stock "$arm" "$name: unpatched (stock) against patched, $arm" "$ev/cost/$name-$arm.md"
      done
    else
      # Without STOCK_BUILD=1 the patched build without a profile is the stock arm (measured ×1.000).
      interleaved_arms "$d" "$m" "$cost_tests" cost_arm none profile
      compare_arms "$d" "$cost_tests" profile none profile "$name: patched without a profile (stock) against patched, profile" \
        "$ev/cost/$name-profile.md"
    fi
  done
  timed cost "$(ms "$t0")"
fi

# Issue 29 experiment: mmvq's blocks prefetch their weight rows to L2 before the dependent-launch wait
# and let the next kernel launch as they start (bench/exp_prefetch_patch.py, compiled only with
# -DTEMPER_EXP_PREFETCH=3, in a second build of the patched tree: build-pf). llama-bench COST_TESTS of
# both fixtures, four arms interleaved (the order reversed every other round): base and pf builds,
# each without a profile and with COST_PROFILE. Compared: pf/none against base/none, pf/profile against
# base/profile, and pf/profile against base/none.
if want pfexp; then
  stage pfexp
  pf_profile="${COST_PROFILE:-$here/bench/profiles/h100-llama3-qwen3-groups.json}"
  pf_tests="${COST_TESTS:-$tests}"
  pf_bench="$work/llama.cpp/build-pf/bin/llama-bench"
  if [[ $dry == 1 ]]; then pf_bench="$llama_bench"; else
    python3 bench/exp_prefetch_patch.py "$work/llama.cpp/ggml/src/ggml-cuda/mmvq.cu" 2>&1 | tee -a "$log" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
    llama_build "$work/llama.cpp" llama-build-pf "$work/llama.cpp/build-pf" -DCMAKE_CUDA_FLAGS=-DTEMPER_EXP_PREFETCH="${PF_BITS:-3}"
  fi
  pf_arm() {
    local b="$llama_bench" p=""
    [[ $1 == pf-* ]] && b="$pf_bench"
    [[ $1 == *-profile ]] && p="$pf_profile"
    bench_one "$b" "$p" "$2" "$3.json" "$3.err"
  }
  experiment_models
  t0=$(now)
  for m in "${models[@]}"; do
    name=$(basename "$m" .gguf)
    d="$ev/pfexp/$name"
    mkdir -p "$d"
    interleaved_arms "$d" "$m" "$pf_tests" pf_arm base-none base-profile pf-none pf-profile
    compare_arms "$d" "$pf_tests" none base-none pf-none "$name: prefetch build against the base build (none: both none)" "$ev/pfexp/$name-none.md"
    compare_arms "$d" "$pf_tests" profile base-profile pf-profile "$name: prefetch build against the base build (profile: both profile)" \
      "$ev/pfexp/$name-profile.md"
    compare_arms "$d" "$pf_tests" total base-none pf-profile \
      "$name: prefetch build against the base build (total: base without a profile against pf with it)" "$ev/pfexp/$name-total.md"
  done
  timed pfexp "$(ms "$t0")"
fi

# Issue 29, hook v7: the same tree's own pipelined launches, no second build: the profile's *_pipelined
# entries (TEMPER_MMVQ_PIPELINE unset), or with PIPELINE_OVERRIDE=1 every tuned one-column launch
# (TEMPER_MMVQ_PIPELINE=1). llama-bench COST_TESTS of both fixtures (PF_MOE=0: the dense one), three arms
# interleaved, the order reversed every other round: stock (no profile), COST_PROFILE unpipelined
# (TEMPER_MMVQ_PIPELINE=0), COST_PROFILE pipelined. Compared: profile and pipelined against stock,
# pipelined against the profile.
if want pipeline; then
  stage pipeline
  pl_profile="${COST_PROFILE:-$here/bench/profiles/h100-llama3-qwen3-groups.json}"
  pl_tests="${COST_TESTS:-$tests}"
  # EXP_PIPELINE_ALTS=1: bench/exp_pipeline_alts.py's variants of COST_PROFILE as more arms (alt1..),
  # each as installed, each compared with the profile as installed (the pipelined arm).
  pl_alts=()
  [[ "${EXP_PIPELINE_ALTS:-}" == 1 ]] && read -r -a pl_alts <<<"$(python3 "$here/bench/exp_pipeline_alts.py" "$pl_profile" "$ev/pipeline/alts")"
  pl_arm() {
    local p="" pipe=0
    [[ $1 != stock ]] && p="$pl_profile"
    [[ $1 == pipelined ]] && pipe="${PIPELINE_OVERRIDE:-}"
    [[ $1 == installed ]] && pipe=""
    [[ $1 == alt* ]] && { p="${pl_alts[$(( ${1#alt} - 1 ))]}"; pipe=""; }
    TEMPER_MMVQ_PIPELINE=$pipe bench_one "$llama_bench" "$p" "$2" "$3.json" "$3.err"
  }
  pl_arms=(stock profile pipelined)
  [[ -n "${PIPELINE_OVERRIDE:-}" ]] && pl_arms+=(installed)
  for i in "${!pl_alts[@]}"; do pl_arms+=("alt$((i + 1))"); done
  experiment_models
  t0=$(now)
  for m in "${models[@]}"; do
    name=$(basename "$m" .gguf)
    d="$ev/pipeline/$name"
    mkdir -p "$d"
    interleaved_arms "$d" "$m" "$pl_tests" pl_arm "${pl_arms[@]}"
    compare_arms "$d" "$pl_tests" profile stock profile "$name: profile against stock" "$ev/pipeline/$name-profile.md"
    compare_arms "$d" "$pl_tests" pipelined stock pipelined "$name: pipelined against stock" "$ev/pipeline/$name-pipelined.md"
    compare_arms "$d" "$pl_tests" gain profile pipelined "$name: the profile pipelined against the profile" "$ev/pipeline/$name-gain.md"
    [[ -n "${PIPELINE_OVERRIDE:-}" ]] && compare_arms "$d" "$pl_tests" override installed pipelined \
      "$name: every tuned launch pipelined (the override) against the profile as installed" "$ev/pipeline/$name-override.md"
    for i in "${!pl_alts[@]}"; do
      compare_arms "$d" "$pl_tests" "alt$((i + 1))" pipelined "alt$((i + 1))" \
        "$name: $(basename "${pl_alts[$i]}" .json) against the profile as installed" "$ev/pipeline/$name-alt$((i + 1)).md"
    done
  done
  timed pipeline "$(ms "$t0")"
fi

# Issue 29: do pipelined launches change what the engine computes? bench/greedy_decode.cpp, built against
# the patched tree's libllama, decodes 128 greedy one-column steps of a fixed prompt and prints each step's
# token and logits hash. Pairs that run the same configs must agree bit for bit: stock against stock
# (the control), the profile against the profile pipelined, and the pfexp build (when built) against the
# base build, without and with the profile. A differing pair is reported with its first differing step.
if want verify; then
  stage verify
  if [[ $dry == 1 ]]; then
    say "== verify: skipped in a dry run (greedy_decode needs the engine's libllama)"
  else
    vf_profile="${COST_PROFILE:-$here/bench/profiles/h100-llama3-qwen3-groups.json}"
    mkdir -p "$ev/verify"
    declare -A vf_bin=()
    for b in build build-pf; do
      [[ -f "$work/llama.cpp/$b/bin/llama-bench" ]] || continue
      vf_bin[$b]="$work/verify-$b"
      c++ -O2 -std=c++17 bench/greedy_decode.cpp -I "$work/llama.cpp/include" -I "$work/llama.cpp/ggml/include" \
        -L "$work/llama.cpp/$b/bin" -lllama -ldl -Wl,-rpath,"$work/llama.cpp/$b/bin" -o "${vf_bin[$b]}" 2>>"$log" ||
        { say "tune_device: greedy_decode does not build against $b"; exit 1; }
    done
    # vf_arm NAME BUILD PROFILE PIPELINE MODEL: one greedy run into DIR/NAME.txt
    vf_arm() {
      TEMPER_PROFILE="$3" TEMPER_MMVQ_PIPELINE="$4" "${vf_bin[$2]}" "$5" 128 >"$d/$1.txt" 2>"$d/$1.err" ||
        { tail -5 "$d/$1.err" | tee -a "$log" >&2; exit 1; }
    }
    vf_same() {
      if cmp -s "$d/$1.txt" "$d/$2.txt"; then say "   $name: $1 = $2 ($(tail -2 "$d/$1.txt" | tr '\n' ' '))"
      else say "   $name: $1 != $2 DIFFERENT from step $(diff <(cut -d' ' -f1,3 "$d/$1.txt") <(cut -d' ' -f1,3 "$d/$2.txt") | sed -n 's/^< \([0-9]*\) .*/\1/p' | head -1)"
        echo "$name $1 $2" >>"$ev/verify/differ"; fi
    }
    experiment_models
    t0=$(now)
    for m in "${models[@]}"; do
      name=$(basename "$m" .gguf) d="$ev/verify/$(basename "$m" .gguf)"
      mkdir -p "$d"
      vf_arm stock build "" 0 "$m"; vf_arm stock-again build "" 0 "$m"
      vf_arm profile build "$vf_profile" 0 "$m"; vf_arm pipelined build "$vf_profile" "${PIPELINE_OVERRIDE:-}" "$m"
      say "== verify $name: $(grep -h '^temper: profile' "$d/profile.err" | head -1)"
      # Non-finite or unchanging logits compare nothing (a fixture whose activations overflow).
      read -r _ fin _ total _ hashes _ < <(tail -1 "$d/stock.txt")
      [[ "$fin" == "$total" && "$hashes" -gt 1 ]] || { say "   $name: VACUOUS: $(tail -1 "$d/stock.txt")"; echo "$name vacuous" >>"$ev/verify/differ"; }
      vf_same stock stock-again; vf_same profile pipelined
      if [[ -n "${vf_bin[build-pf]:-}" ]]; then
        vf_arm pf-none build-pf "" 0 "$m"; vf_arm pf-profile build-pf "$vf_profile" 0 "$m"
        vf_same stock pf-none; vf_same profile pf-profile
      fi
    done
    timed verify "$(ms "$t0")"
    [[ -f "$ev/verify/differ" ]] && say "== verify: arms that must agree DIFFER: $(tr '\n' ';' <"$ev/verify/differ")"
  fi
fi

# Issue 48: the norm writes its GEMVs' q8_1 activations (hook v8, TEMPER_MMVQ_NORM_Q8=1): llama-bench
# COST_TESTS of four arms, stock and COST_PROFILE each without and with it, interleaved, both fixtures
# (PF_MOE=0: the dense one), and a fifth, COST_PROFILE with the norm's and the unfused pair's GLU's q8_1
# activations (hook v9, TEMPER_MMVQ_GLU_Q8=1 too: profile-q8); then greedy decoding (bench/greedy_decode.cpp),
# each arm with them against the same arm without, which must agree bit for bit, with the hook's counts
# of norms, GLUs and copies read.
if want norm; then
  stage norm
  nm_profile="${COST_PROFILE:-$here/bench/profiles/h200-fa-llama3-qwen3-token.json}"
  nm_tests="${COST_TESTS:-$tests}"
  nm_arm() {
    local p="" q=0
    [[ $1 == profile* ]] && p="$nm_profile"
    local g=0
    [[ $1 == *-norm || $1 == *-q8 ]] && q=1
    [[ $1 == *-q8 ]] && g=1
    TEMPER_MMVQ_NORM_Q8=$q TEMPER_MMVQ_GLU_Q8=$g bench_one "$llama_bench" "$p" "$2" "$3.json" "$3.err"
  }
  experiment_models
  t0=$(now)
  nm_greedy="$work/verify-build"
  if [[ $dry == 0 ]]; then
    c++ -O2 -std=c++17 bench/greedy_decode.cpp -I "$work/llama.cpp/include" -I "$work/llama.cpp/ggml/include" \
      -L "$work/llama.cpp/build/bin" -lllama -ldl -Wl,-rpath,"$work/llama.cpp/build/bin" -o "$nm_greedy" 2>>"$log" ||
      { say "tune_device: greedy_decode does not build"; exit 1; }
  fi
  for m in "${models[@]}"; do
    name=$(basename "$m" .gguf)
    d="$ev/norm/$name"
    mkdir -p "$d"
    if [[ $dry == 0 ]]; then
      for a in stock stock-norm profile profile-norm profile-q8; do
        p=""; [[ $a == profile* ]] && p="$nm_profile"
        q=0; [[ $a == *-norm || $a == *-q8 ]] && q=1
        g=0; [[ $a == *-q8 ]] && g=1
        TEMPER_PROFILE="$p" TEMPER_MMVQ_NORM_Q8=$q TEMPER_MMVQ_GLU_Q8=$g "$nm_greedy" "$m" 128 >"$d/greedy-$a.txt" 2>"$d/greedy-$a.err" ||
          { tail -5 "$d/greedy-$a.err" | tee -a "$log" >&2; exit 1; }
        say "   $name greedy $a: $(tail -1 "$d/greedy-$a.txt"); $(grep -h '^temper: .*norms' "$d/greedy-$a.err" | tail -1)"
      done
      for pair in stock:stock-norm profile:profile-norm profile:profile-q8; do
        base=${pair%%:*} with=${pair#*:}
        if cmp -s "$d/greedy-$base.txt" "$d/greedy-$with.txt"; then say "   $name: $with = $base, bit for bit"
        else say "   $name: $with != $base DIFFERENT"; echo "$name $base $with" >>"$ev/norm/differ"; fi
      done
    fi
    interleaved_arms "$d" "$m" "$nm_tests" nm_arm stock stock-norm profile profile-norm profile-q8
    compare_arms "$d" "$nm_tests" profile stock profile "$name: profile against stock" "$ev/norm/$name-profile.md"
    compare_arms "$d" "$nm_tests" profile-norm stock profile-norm "$name: profile with the norm's q8_1 against stock" "$ev/norm/$name-profile-norm.md"
    compare_arms "$d" "$nm_tests" gain profile profile-norm "$name: the norm's q8_1 against the profile without it" "$ev/norm/$name-gain.md"
    compare_arms "$d" "$nm_tests" stock-gain stock stock-norm "$name: the norm's q8_1 alone against stock" "$ev/norm/$name-stock-gain.md"
    compare_arms "$d" "$nm_tests" profile-q8 stock profile-q8 "$name: profile with the norm's and the GLU's q8_1 against stock" "$ev/norm/$name-profile-q8.md"
    compare_arms "$d" "$nm_tests" glu-gain profile-norm profile-q8 "$name: the GLU's q8_1 on top of the norm's" "$ev/norm/$name-glu-gain.md"
  done
  timed norm "$(ms "$t0")"
fi

# Temper's own kernel in step with the engine's pipelined launches (issue 29 item 3): checked against the CPU
# reference and against d99724f's outputs, then timed back to back per shape of the dense token, both variants.
if want ownkernel; then
  stage ownkernel
  t0=$(now)
  if [[ $dry == 1 ]]; then
    say "== ownkernel: skipped in a dry run (Temper's own kernel needs the GPU)"
  else
    "$temper" verify --types q4_K,q6_K --ncols 1,2 --variants all --save "$ev/ownkernel-verify.json" 2>&1 | tail -8 | tee -a "$log" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
    "$work/temper/tests/backend/gpu_device_test" --gtest_filter='*Pipelined*' 2>&1 | tail -12 | tee -a "$log" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
    # (type, n, k) of the Llama-3-8B token: q and o, k and v, gate and up, down, the head.
    for shape in q4_K:4096:4096 q6_K:1024:4096 q4_K:1024:4096 q4_K:14336:4096 q4_K:4096:14336 q6_K:4096:14336 q6_K:128256:4096; do
      IFS=: read -r type n k <<<"$shape"
      for arm in d99724f pipelined; do
        "$temper" bench-gemv --types "$type" --n "$n" --k "$k" --engine ggml-d99724f $([[ $arm == pipelined ]] && echo --pipelined) \
          --save "$ev/ownkernel-$type-$n-$k-$arm.json" --force >/dev/null 2>>"$ev/ownkernel.err" || { tail -3 "$ev/ownkernel.err" | tee -a "$log" >&2; exit 1; }
      done
    done
    python3 - "$ev" <<'EOF' | tee "$ev/ownkernel.md" >&2
import glob, json, os, sys
print("| type | n × k | d99724f best µs (config) | pipelined best µs (config) | ratio | pipelined at d99724f's best config µs |")
print("|---|---|---:|---:|---:|---:|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ownkernel-*-d99724f.json"))):
    a = json.load(open(f)); b = json.load(open(f.replace("-d99724f.json", "-pipelined.json")))
    ra, rb = a["results"][0], b["results"][0]
    cfg = lambda t: f'{t["config"]["nwarps"]}x{t["config"]["rows_per_block"]}'
    same = {cfg(t): t["us"]["median"] for t in rb["configs"] if t["ok"]}
    ba, bb = ra["best"], rb["best"]
    print(f'| {ra["type"]} | {a["n"]} × {a["k"]} | {ba["us"]["median"]:.2f} ({cfg(ba)}) | {bb["us"]["median"]:.2f} ({cfg(bb)}) | '
          f'{ba["us"]["median"] / bb["us"]["median"]:.3f} | {same.get(cfg(ba), float("nan")):.2f} |')
EOF
  fi
  timed ownkernel "$(ms "$t0")"
fi

# Temper's own same-input group kernel (issue 29 item 3): against the CPU reference, against mmvq bit for bit, timed.
if want owngroup; then
  stage owngroup
  t0=$(now)
  if [[ $dry == 1 ]]; then
    say "== owngroup: skipped in a dry run (Temper's own kernel needs the GPU)"
  else
    "$temper" verify --types q4_K --ncols 1-4 --variants 7180759,d99724f --groups q4_K+q4_K+q6_K,q8_0+q8_0 \
      --save "$ev/owngroup-verify.json" --force 2>&1 | tail -8 | tee -a "$log" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
    "$work/temper/tests/backend/gpu_device_test" --gtest_filter='*Group*' 2>&1 | tail -12 | tee -a "$log" "$ev/owngroup-test.txt" >&2
    [[ ${PIPESTATUS[0]} == 0 ]] || exit 1
    # q, k, v of Llama-3-8B (K 4096) and of Qwen3-30B-A3B (K 2048), v in q6_K or q4_K as Q4_K_M mixes them.
    for group in q4_K:4096,q4_K:1024,q6_K:1024@4096 q4_K:4096,q4_K:1024,q4_K:1024@4096 q4_K:4096,q4_K:512,q6_K:512@2048; do
      for nc in 1 2 4; do
        "$temper" bench-gemv --group "${group%@*}" --k "${group#*@}" --ncols "$nc" --engine ggml-d99724f \
          --save "$ev/owngroup-$(tr ':,' '-_' <<<"${group%@*}")-k${group#*@}-nc$nc.json" --force >/dev/null 2>>"$ev/owngroup.err" ||
          { tail -3 "$ev/owngroup.err" | tee -a "$log" >&2; exit 1; }
      done
    done
    python3 - "$ev" <<'EOF' | tee "$ev/owngroup.md" >&2
import glob, json, os, sys
print("| members (K) | ncols | group best µs (config) | % copy | members alone, each at its best µs | alone / group |")
print("|---|---:|---:|---:|---:|---:|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "owngroup-*-nc*.json"))):
    j = json.load(open(f)); b = j["best"]
    cfg = f'{b["config"]["nwarps"]}x{b["config"]["rows_per_block"]}'
    print(f'| {j["members"]} ({j["k"]}) | {j["ncols"]} | {b["us"]["median"]:.2f} ({cfg}) | {100 * b["fraction_of_copy"]:.1f} % | '
          f'{j["alone_us"]:.2f} | {j["speedup"]:.3f} |')
EOF
  fi
  timed owngroup "$(ms "$t0")"
fi

# Where a decode token's kernel time goes (issue 29): Nsight Compute times every kernel of llama-bench
# tg4 (and its warm-up token) alone, for both fixtures, the patched build without a profile (stock
# kernels) and with COST_PROFILE; bench/kernel_sums.py sums them per token by kind (GEMV, quantize,
# attention, other) beside the token's period from a plain llama-bench tg32 of the same arm.
if want kernels; then
  stage kernels
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  [[ -n "$ncu" || $dry == 1 ]] || { say "tune_device: the kernels stage needs Nsight Compute (ncu): none in PATH or /usr/local/cuda/bin"; exit 1; }
  kernels_profile="${COST_PROFILE:-$here/bench/profiles/h100-llama3-qwen3-groups.json}"
  # Nsight Compute does not pass an empty TEMPER_PROFILE on, so the none arm also gets a config folder
  # without a profile (the hook's default path).
  ncu_config_home() { [[ $1 == none ]] && echo "$work/no-profile-config" || echo "${XDG_CONFIG_HOME:-$HOME/.config}"; }
  moe_model="$work/$moe_fixture.gguf"
  [[ -f "$moe_model" ]] || write_fixture "$moe_fixture" "$moe_model"
  mkdir -p "$ev/kernels"
  t0=$(now)
  traces=() periods=()
  kernel_models=()  # KERNEL_FIXTURES: which fixtures, in order (default "dense moe")
  for f in ${KERNEL_FIXTURES:-dense moe}; do
    case $f in dense) kernel_models+=("$model") ;; moe) kernel_models+=("$moe_model") ;; *) say "tune_device: KERNEL_FIXTURES: $f (expected dense or moe)"; exit 1 ;; esac
  done
  for m in "${kernel_models[@]}"; do
    for arm in none profile; do
      name="$(basename "$m" .gguf)-$arm" base="$ev/kernels/$(basename "$m" .gguf)-$arm"
      p=""; [[ $arm == profile ]] && p="$kernels_profile"
      args=(-p 0 -n 32)
      bench_one "$llama_bench" "$p" "$m" "$base-tg32.json" "$base-tg32.err"
      if [[ $dry == 1 ]]; then
        printf '"Kernel Name","Metric Name","Metric Unit","Metric Value"\n"quantize_q8_1(float)","gpu__time_duration.sum","nsecond","2,800"\n"void mul_mat_vec_q<12, 1>(void)","gpu__time_duration.sum","nsecond","24,000"\n' >"$base.csv"
      else
        TEMPER_PROFILE="$p" XDG_CONFIG_HOME="$(ncu_config_home "$arm")" "$ncu" --csv --metrics gpu__time_duration.sum --clock-control none --cache-control none \
          "$llama_bench" -m "$m" -p 0 -n 4 -r 1 >"$base.csv" 2>"$base.err" || { tail -5 "$base.err" | tee -a "$log" >&2; exit 1; }
      fi
      traces+=("$name=$base.csv")
      periods+=(--period-us "$name=$(python3 -c 'import json,sys; print(1e6 / json.load(open(sys.argv[1]))[0]["avg_ts"])' "$base-tg32.json")")
    done
  done
  compares=()
  for m in "${kernel_models[@]}"; do compares+=(--compare "$(basename "$m" .gguf)-none:$(basename "$m" .gguf)-profile"); done
  python3 bench/kernel_sums.py --tokens 5 "${traces[@]}" "${periods[@]}" "${compares[@]}" | tee "$ev/kernels.md" >&2 || exit 1
  # KERNEL_DETAIL (an ncu -k filter, e.g. regex:mul_mat_vec_q|temper_mmvq_group): why those kernels run as they
  # do, both arms, one token (llama-bench -n 1 and its warm-up). A failure here is reported, not fatal.
  if [[ -n "${KERNEL_DETAIL:-}" ]]; then
    metrics=$(python3 -c 'import sys; sys.path.insert(0, "bench"); import kernel_sums; print(",".join(m for m, _ in kernel_sums.DETAIL_METRICS))')
    details=()
    for m in "${kernel_models[@]}"; do
      for arm in none profile; do
        name="$(basename "$m" .gguf)-$arm" base="$ev/kernels/$(basename "$m" .gguf)-$arm-detail"
        p=""; [[ $arm == profile ]] && p="$kernels_profile"
        if [[ $dry == 1 ]]; then
          printf '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","void mul_mat_vec_q<12, 1>(void)","gpu__time_duration.sum","nsecond","24,000"\n"0","void mul_mat_vec_q<12, 1>(void)","dram__throughput.avg.pct_of_peak_sustained_elapsed","%%","41.5"\n' >"$base.csv"
        elif ! TEMPER_PROFILE="$p" XDG_CONFIG_HOME="$(ncu_config_home "$arm")" "$ncu" --csv --metrics "$metrics" -k "$KERNEL_DETAIL" --clock-control none --cache-control none \
            "$llama_bench" -m "$m" -p 0 -n 1 -r 1 >"$base.csv" 2>"$base.err"; then
          say "tune_device: kernel detail of $name failed: $(tail -2 "$base.err" | tr '\n' ' ')"; continue
        fi
        details+=("$name=$base.csv")
      done
    done
    [[ ${#details[@]} -gt 0 ]] && { python3 bench/kernel_sums.py --detail "${details[@]}" | tee -a "$ev/kernels.md" >&2 || say "tune_device: kernel_sums --detail failed"; }
  fi
  timed kernels "$(ms "$t0")"
fi

# Issue 48, hooks v13 and v14: the tuned fused launches alone (bench/fused_ab.cu: stock loop, gate once,
# bias-only twin, unfused) over the fused grid at Llama-3-8B's down and o shapes, built from a copy of
# FUSED_GGML (default .upstream/ggml-d99724f) patched by this run's temper, with hook_exact's two objects.
if want fused; then
  stage fused
  t0=$(now)
  if [[ $dry == 1 ]]; then
    say "== fused: skipped in a dry run (the kernels need the GPU)"
  else
    fdir="$work/fused" ggml="${FUSED_GGML:-$here/.upstream/ggml-d99724f}"
    rm -rf "$fdir" && mkdir -p "$fdir/ggml" && cp -R "$ggml/include" "$ggml/src" "$fdir/ggml/" && chmod -R u+w "$fdir/ggml" || exit 1
    "$temper" engine patch "$fdir/ggml" --kernel-set ci >"$ev/fused-build.log" 2>&1 || { tail -3 "$ev/fused-build.log" | tee -a "$log" >&2; exit 1; }
    fflags=(-std=c++17 -O3 -arch="$arch" -use_fast_math -extended-lambda -DNDEBUG -DGGML_CUDA_NO_FA
            -I"$fdir/ggml/include" -I"$fdir/ggml/src" -I"$fdir/ggml/src/ggml-cuda" -I"$here")
    unit="$here/tests/engine/hook_exact/group_unit.cu"
    { nvcc -c "${fflags[@]}" -DTEMPER_EXACT_RUN=temper_exact_run "$unit" -o "$fdir/hook.o" &&
      nvcc -c "${fflags[@]}" -DTEMPER_GROUP_GENERIC_DOT -DTEMPER_MMVQ_GATE_IN_LOOP -DTEMPER_EXACT_RUN=temper_exact_run_generic \
        "$unit" -o "$fdir/generic.o" &&
      nvcc "${fflags[@]}" "$here/bench/fused_ab.cu" "$fdir/hook.o" "$fdir/generic.o" -o "$fdir/fused_ab"; } >>"$ev/fused-build.log" 2>&1 ||
      { grep -m 5 error "$ev/fused-build.log" | tee -a "$log" >&2; exit 1; }
    "$fdir/fused_ab" "${FUSED_ROUNDS:-5}" "${FUSED_SAMPLES:-100}" >"$ev/fused_ab.csv" || exit 1
    python3 - "$ev/fused_ab.csv" <<'EOF' | tee "$ev/fused_ab.md" >&2
import csv, sys
arms = ["stock_loop_us", "gate_once_us", "bias_only_us", "unfused_us"]
rows = list(csv.DictReader(open(sys.argv[1])))
print("| shape | type | " + " | ".join(a[:-3] + " best µs (config)" for a in arms) + " |")
print("|---|---|" + "---:|" * len(arms))
for key in dict.fromkeys((r["shape"], r["type"]) for r in rows):
    rs = [r for r in rows if (r["shape"], r["type"]) == key]
    best = [min(rs, key=lambda r: float(r[a])) for a in arms]
    print(f"| {key[0]} | {key[1]} | " + " | ".join(f'{float(b[a]):.2f} ({b["nwarps"]}:{b["rows"]})' for a, b in zip(arms, best)) + " |")
EOF
  fi
  timed fused "$(ms "$t0")"
fi

if want report; then
  stage report
  {
    echo "# temper tune on $(uname -n) ($mode), $(date -u +%FT%TZ)"
    echo
    echo "| stage | seconds |"; echo "|---|---:|"
    awk -F'\t' '{ printf "| %s | %.1f |\n", $1, $2 / 1000 }' "$ev/timings.tsv"
    echo
    echo "## tune's steps"
    echo
    python3 - "$ev/tune.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("| step | outcome | seconds | summary |\n|---|---|---:|---|")
for s in d["steps"]:
    print(f"| {s['step']} | {s['outcome']} | {s['seconds']:.1f} | {s['summary']} |")
EOF
    echo
    echo "## tune's llama-bench against llama-bench by hand"
    echo
  } >"$ev/summary.md"
  python3 bench/tune_compare.py "$ev/tune.json" "$ev/hand" >>"$ev/summary.md"
  agree=$?
  cat "$ev/summary.md" >&2
  [[ $agree == 2 ]] && exit 1
  say "== done: $(tail -1 "$ev/summary.md")"
fi
exit 0
