#!/usr/bin/env bash
# Engine-bridge evidence on an NVIDIA host (issues 15 and 16), in one call. Carry an extracted,
# trimmed upstream tree in .upstream/ (see docs/engine.md: `tar xzf ../shared/upstream/ggml-d99724f.tar.gz
# -C .upstream`) and .deps/ (scripts/device-deps). Stages, chosen by STAGES (default "all"):
#   temper  builds `temper` (device preset: CUDA on, KERNEL_SET kernels, no Qt, no tests)
#   engine  `temper engine build` of the upstream tree for sm_90 (ENGINE_SET, default full), timed from
#           a clean cache, then again (must be cached)
#   smoke   bench/probe_smoke.py against the built probe (stock vs tuned results and times)
#   sweep   engine sweep and Temper-kernel sweep of the Llama-3-8B Q4_K_M shape set (NCOLS, default
#           "1 2 4 8"), then the comparison table (bench/engine_table.py) printed last
# Logs, sessions and tables go to $OUT (else build-engine/evidence).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-engine/evidence}"
mkdir -p "$out"
log="$out/engine.log"
say() { echo "$*" | tee -a "$log" >&2; }
stages="${STAGES:-all}"
want() { [[ "$stages" == all || " $stages " == *" $1 "* ]]; }
upstream="${UPSTREAM:-$here/.upstream/ggml-d99724f}"
engine_set="${ENGINE_SET:-full}"
kernel_set="${KERNEL_SET:-ci}"
ncols="${NCOLS:-1 2 4 8}"
jobs="${JOBS:-$(nproc)}"
cache="$here/build-engine/cache-$engine_set"
export PATH="/usr/local/cuda/bin:$PATH" CUDACXX="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
say "== $(date -u +%FT%TZ) host $(uname -n), $(nproc) cores; $(nvcc --version | tail -1); stages: $stages"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$log" >&2 || true

temper="$here/build-device/app/temper"
if want temper; then
  t0=$(date +%s)
  cmake --preset device -DTEMPER_KERNEL_SET="$kernel_set" >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
  cmake --build --preset device --target temper -j "$jobs" >>"$log" 2>&1 || { grep -E "error|FAILED" -A5 "$log" | head -40 >&2; exit 1; }
  say "== temper build (kernel set $kernel_set): $(( $(date +%s) - t0 )) s"
fi

probe=""
if want engine; then
  rm -rf "$cache"
  t0=$(date +%s)
  "$temper" engine build "$upstream" --arch sm_90 --kernel-set "$engine_set" --cache "$cache" --jobs "$jobs" --json \
    >"$out/engine-build-$engine_set.json" 2>>"$log" || { tail -20 "$log" >&2; grep -m3 -E "error" "$cache"/*/build.log >&2 || true; exit 1; }
  say "== engine build (set $engine_set, clean cache): $(( $(date +%s) - t0 )) s"
  t0=$(date +%s)
  "$temper" engine build "$upstream" --arch sm_90 --kernel-set "$engine_set" --cache "$cache" --json >"$out/engine-build-$engine_set-2.json"
  say "== engine build again: $(( $(date +%s) - t0 )) s, cached: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cached"])' "$out/engine-build-$engine_set-2.json")"
fi
if [[ -f "$out/engine-build-$engine_set.json" ]]; then
  probe="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["probe"])' "$out/engine-build-$engine_set.json")"
fi

if want smoke; then
  python3 bench/probe_smoke.py "$probe" 2>&1 | tee -a "$log" "$out/smoke.txt" >&2
fi

if want sweep; then
  fixture="$here/build-device/llama3-8b.gguf"
  "$temper" make-fixture llama3-8b "$fixture" >>"$log" 2>&1 || true
  for nc in $ncols; do :; done
  nclist="${ncols// /,}"
  t0=$(date +%s)
  "$temper" sweep "$fixture" --probe "$probe" --ncols "$nclist" -o "$out/engine-session.json" >>"$log" 2>&1
  say "== engine sweep (ncols $nclist): $(( $(date +%s) - t0 )) s"
  t0=$(date +%s)
  "$temper" sweep "$fixture" --ncols "$nclist" --engine ggml-d99724f -o "$out/temper-session.json" >>"$log" 2>&1
  say "== temper-kernel sweep (ncols $nclist): $(( $(date +%s) - t0 )) s"
  python3 bench/engine_table.py "$out/engine-session.json" "$out/temper-session.json" | tee "$out/table.md"
fi
