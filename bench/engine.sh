#!/usr/bin/env bash
# Engine-bridge evidence on an NVIDIA host (issues 15 and 16). Carry an extracted upstream tree in
# .upstream/ (UPSTREAM, default .upstream/ggml-d99724f, or $TEMPER_UPSTREAM/ggml-d99724f when that is
# set; docs/engine.md) and .deps/ (scripts/device-deps). Stages, chosen by STAGES
# (default "all"; on a warm machine later calls reuse what earlier ones built):
#   temper   builds `temper` and `temper-fixture` (device preset, KERNEL_SET kernels, default full)
#   engine   `temper engine build` of the upstream tree for sm_90 (ENGINE_SET, default full) from a
#            clean cache, timed, then again (must come from the cache)
#   smoke    bench/probe_smoke.py against the built probe
#   sweep    engine sweep (ncols 1 timed alone, then NCOLS) and Temper-kernel sweep of the
#            Llama-3-8B Q4_K_M fixture; bench/engine_table.py compares them
#   replay   profile from the engine sweep (approve significant), `temper engine replay` stock vs
#            profile; a profile for another arch, a truncated one and one with an uncompiled config
#            must each be ignored with their line and leave every launch stock
#   moe      the same sweep → profile → replay for the Qwen3-30B-A3B fixture (MUL_MAT_ID)
# Everything goes to build-engine/evidence, packed into $OUT/evidence.tgz when $OUT is set (a device
# call returns 8 files at most); the tables are printed last.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="$here/build-engine/evidence"
mkdir -p "$out"
log="$out/engine.log"
say() { echo "$*" | tee -a "$log" >&2; }
stages="${STAGES:-all}"
want() { [[ "$stages" == all || " $stages " == *" $1 "* ]]; }
upstream="${UPSTREAM:-${TEMPER_UPSTREAM:-$here/.upstream}/ggml-d99724f}"
engine_set="${ENGINE_SET:-full}"
kernel_set="${KERNEL_SET:-full}"
ncols="${NCOLS:-1,2,4,8}"
temper_ncols="${TEMPER_NCOLS:-$ncols}"  # Temper-kernel sweep; kernels the build lacks compile at run time
jobs="${JOBS:-$(nproc)}"
cache="$here/build-engine/cache-$engine_set"
export PATH="/usr/local/cuda/bin:$PATH" CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
temper="$here/build-device/app/temper"
fixture_bin="$here/build-device/tests/fixtures/temper-fixture"
# A failed probe's stderr log is kept in the engine cache (core/engine/probe_process.cpp).
probe_logs="${XDG_CACHE_HOME:-$HOME/.cache}/temper/engine/logs"
pack() { if [[ -n "${OUT:-}" ]]; then cp "$probe_logs"/probe-*.log "$out/" 2>/dev/null || true; tar czf "$OUT/evidence.tgz" -C "$out" .; fi; }
trap pack EXIT
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
say "== $(date -u +%FT%TZ) host $(uname -n), $(nproc) cores; $(nvcc --version | tail -1); commit $(git rev-parse --short HEAD 2>/dev/null || cat cmake/git-commit.txt); stages: $stages"

if want temper; then
  t0=$(date +%s)
  cmake --preset device -DTEMPER_TESTS=ON -DTEMPER_KERNEL_SET="$kernel_set" >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
  cmake --build --preset device --target temper temper-fixture -j "$jobs" >>"$log" 2>&1 ||
    { grep -E "error|FAILED" -A5 "$log" | head -40 >&2; exit 1; }
  say "== temper build (kernel set $kernel_set): $(( $(date +%s) - t0 )) s"
fi

if want engine; then
  rm -rf "$cache"
  t0=$(date +%s)
  "$temper" engine build "$upstream" --arch sm_90 --kernel-set "$engine_set" --cache "$cache" --jobs "$jobs" --json \
    >"$out/engine-build-$engine_set.json" 2>>"$log" || { tail -20 "$log" >&2; grep -m3 error "$cache"/*/build.log >&2 || true; exit 1; }
  say "== engine build (set $engine_set, clean cache): $(( $(date +%s) - t0 )) s"
  # Where the time went: ninja's own per-step log (start ms, end ms, output).
  cp "$cache"/*/build/.ninja_log "$out/engine-build-ninja.log" 2>/dev/null || true
  t0=$(date +%s)
  "$temper" engine build "$upstream" --arch sm_90 --kernel-set "$engine_set" --cache "$cache" --json >"$out/engine-build-$engine_set-2.json"
  say "== engine build again: $(( $(date +%s) - t0 )) s, cached: $(json "$out/engine-build-$engine_set-2.json" 'd["cached"]')"
fi
probe="$(ls "$cache"/*/build/temper-probe 2>/dev/null | head -1)"

if want smoke; then
  python3 bench/probe_smoke.py "$probe" 2>&1 | tee -a "$log" "$out/smoke.txt" >&2
fi

# sweep_pair NAME FIXTURE: engine sweep (ncols 1 alone, timed; then the rest) and Temper-kernel sweep.
sweep_pair() {
  local name=$1 model="$here/build-device/$1.gguf"
  "$fixture_bin" "$2" "$model"
  local t0=$(date +%s%N)
  "$temper" sweep "$model" --probe "$probe" --ncols 1 -o "$out/$name-engine-n1.json" >"$out/$name-engine-n1.txt" 2>>"$log"
  say "== $name: engine sweep ncols 1: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  if [[ "$ncols" != 1 ]]; then
    t0=$(date +%s%N)
    "$temper" sweep "$model" --probe "$probe" --ncols "$ncols" -o "$out/$name-engine.json" >"$out/$name-engine.txt" 2>>"$log"
    say "== $name: engine sweep ncols $ncols: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  else
    cp "$out/$name-engine-n1.json" "$out/$name-engine.json"
  fi
  t0=$(date +%s%N)
  local rc=0
  "$temper" sweep "$model" --ncols "$temper_ncols" --engine ggml-d99724f -o "$out/$name-temper.json" >"$out/$name-temper.txt" 2>>"$log" || rc=$?
  say "== $name: Temper-kernel sweep ncols $temper_ncols: exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

# replay_model NAME: profile of the engine sweep at ncols 1, replay against stock.
replay_model() {
  local name=$1 model="$here/build-device/$1.gguf"
  "$temper" profile export "$out/$name-engine-n1.json" --format temper -o "$out/$name.profile.json" >>"$log" 2>&1
  "$temper" engine replay "$model" --probe "$probe" --profile "$out/$name.profile.json" --tokens "${TOKENS:-30}" \
    --rounds "${ROUNDS:-4}" --json >"$out/$name-replay.json" 2>>"$log"
  "$temper" engine replay "$model" --probe "$probe" --profile "$out/$name.profile.json" --tokens 5 --rounds 1 2>>"$log" | tee -a "$log" >&2 || true
}

if want sweep; then
  sweep_pair llama3 llama3-8b-q4_k_m
fi
if want replay; then
  replay_model llama3
  # Profiles the engine must ignore, each with its line, launching nothing tuned.
  python3 - "$out/llama3.profile.json" "$out" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); out = sys.argv[2]
other = json.loads(json.dumps(p)); [e.update(arch="gfx90a") for e in other["entries"]]
json.dump(other, open(f"{out}/bad-arch.json", "w"))
text = json.dumps(p); open(f"{out}/bad-truncated.json", "w").write(text[: len(text) // 2])
unc = json.loads(json.dumps(p)); [e.update(approval="approved", config={"nwarps": 3, "rows_per_block": 1}) for e in unc["entries"]]
json.dump(unc, open(f"{out}/bad-uncompiled.json", "w"))
EOF
  for bad in bad-arch bad-truncated bad-uncompiled; do
    rm -rf "$out/$bad-probe-logs"
    TEMPER_PROBE_LOG_DIR="$out/$bad-probe-logs" "$temper" engine replay "$here/build-device/llama3.gguf" --probe "$probe" --profile "$out/$bad.json" --tokens 3 --rounds 1 \
      --json >"$out/$bad-replay.json" 2>"$out/$bad.err" || true
    say "== $bad: tuned launches per token $(json "$out/$bad-replay.json" 'd["profiled"]["tuned_launches"]' 2>/dev/null || echo '?'); engine said: $(grep -h '^temper: profile' "$out/$bad-probe-logs"/*.log 2>/dev/null | tail -1)"
    grep -h '^temper: profile' "$out/$bad-probe-logs"/*.log >"$out/$bad.engine-line.txt" 2>/dev/null || true
  done
fi
if want moe; then
  ncols_saved=$ncols; ncols=1
  sweep_pair qwen3moe qwen3-30b-a3b-q4_k_m
  ncols=$ncols_saved
  replay_model qwen3moe
fi

# Tables last.
for name in llama3 qwen3moe; do
  if [[ -f "$out/$name-engine.json" && -f "$out/$name-temper.json" ]]; then
    echo "### $name: engine vs Temper kernel"
    python3 bench/engine_table.py "$out/$name-engine.json" "$out/$name-temper.json" | tee "$out/$name-table.md"
  fi
  if [[ -f "$out/$name-replay.json" ]]; then
    echo "### $name: decode replay"
    json "$out/$name-replay.json" '"stock %.1f us [%.1f, %.1f], profile %.1f us [%.1f, %.1f], speedup %.3f [%.3f, %.3f], predicted %.3f; mmvq launches/token %d, tuned %d; entries hit %d" % (d["stock"]["median_us"], d["stock"]["ci_low_us"], d["stock"]["ci_high_us"], d["profiled"]["median_us"], d["profiled"]["ci_low_us"], d["profiled"]["ci_high_us"], d["speedup"], d["speedup_low"], d["speedup_high"], d["predicted_speedup"], d["profiled"]["mmvq_launches"], d["profiled"]["tuned_launches"], d["profile_entries_hit"])'
  fi
done

