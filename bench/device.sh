#!/usr/bin/env bash
# Device evidence for issue 5, on an NVIDIA host with nvcc, cmake and ninja (no Qt, gtest, package
# manager or network needed; the nlohmann/json and CLI11 headers travel in .deps/include when the
# system lacks them: scripts/device-deps). From a clean tree:
#   1. configures the `device` preset (CUDA on, every kernel instantiation) and builds `temper`
#      with all cores, timing the build;
#   2. lists the device and measures its device-to-device copy bandwidth;
#   3. runs `temper verify` over every (type x ncols x config) instantiation;
#   4. times every tier-1 type at N=4096 K=14336 ncols=1, the default config and every config of
#      the grid (weights rotated past 2x L2, median of >= 100 event-timed samples of BACK_TO_BACK
#      launches), and prints the
#      table LAST: type, default us (config), best us (config), GB/s, % of measured copy bandwidth.
# Logs and JSON go to $OUT when it is set (else to build-device/evidence/).
# Environment: KERNEL_SET=full|ci (default full), COUNT (timed samples, default 200), BACK_TO_BACK
# (launches per sample inside one event pair, default 8 as the sweep; 1 = an event pair per launch), JOBS.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-device/evidence}"
mkdir -p "$out"
log="$out/device.log"
: >"$log"
say() { echo "$*" | tee -a "$log" >&2; }

kernel_set="${KERNEL_SET:-full}"
count="${COUNT:-200}"
back_to_back="${BACK_TO_BACK:-8}"
jobs="${JOBS:-$(nproc)}"
if [[ "$count" -lt 100 ]]; then say "COUNT must be at least 100 (got $count)"; exit 2; fi

# nvcc where the CUDA toolkit usually lives, when it is not on PATH already.
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [[ -x "$d/nvcc" ]]; then export PATH="$d:$PATH"; break; fi
  done
fi
command -v nvcc >/dev/null 2>&1 || { say "device.sh: nvcc not found (install the CUDA toolkit or put it on PATH)"; exit 3; }
command -v cmake >/dev/null 2>&1 || { say "device.sh: cmake not found"; exit 3; }
command -v ninja >/dev/null 2>&1 || { say "device.sh: ninja not found"; exit 3; }
export CUDACXX="$(command -v nvcc)"
for h in nlohmann/json.hpp CLI/CLI.hpp; do
  if [[ ! -f .deps/include/$h && ! -f /usr/include/$h ]]; then
    say "device.sh: $h is neither installed nor in .deps/include (run scripts/device-deps first)"
    exit 3
  fi
done

say "== host: $(uname -n), $(nproc) cores; $(nvcc --version | tail -1); cmake $(cmake --version | head -1 | awk '{print $3}')"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | tee -a "$log" >&2 || true

# 1. Configure and build.
start=$(date +%s)
cmake --preset device -DTEMPER_KERNEL_SET="$kernel_set" >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
if ! cmake --build --preset device --target temper -j "$jobs" >>"$log" 2>&1; then
  grep -E "error|FAILED" -A5 "$log" | head -60 >&2
  exit 1
fi
build_s=$(( $(date +%s) - start ))
say "== build (kernel set $kernel_set, $jobs jobs): ${build_s} s"
temper="$here/build-device/app/temper"

# 2. Device and copy bandwidth.
"$temper" devices 2>&1 | tee -a "$log" >&2
"$temper" devices --json >"$out/devices.json" 2>>"$log" || true
"$temper" bandwidth 2>&1 | tee -a "$log" >&2

# 3. Verification of every instantiation (a failure is reported, and the timing still runs: a
#    config that fails verification is never timed as the best).
verify_rc=0
"$temper" verify --save "$out/verify.json" >"$out/verify.txt" 2>>"$log" || verify_rc=$?
cat "$out/verify.txt" | tee -a "$log" >&2
say "== verify exit code: $verify_rc"

# 4. Timing.
bench_rc=0
"$temper" bench-gemv --n 4096 --k 14336 --ncols 1 --count "$count" --back-to-back "$back_to_back" --save "$out/bench-gemv.json" \
  >"$out/bench-gemv.txt" 2>"$out/bench-gemv.err" || bench_rc=$?
tee -a "$log" <"$out/bench-gemv.err" >&2
cat "$out/bench-gemv.txt" >>"$log"

say "== $(date -u +%Y-%m-%dT%H:%MZ): build ${build_s} s, verify rc $verify_rc, bench rc $bench_rc; logs in $out"
# The table, last.
echo
cat "$out/bench-gemv.txt"
if [[ $verify_rc -ne 0 ]]; then exit "$verify_rc"; fi
exit "$bench_rc"
