#!/usr/bin/env bash
# Device evidence for issue 19's q2_0 kernel (ggml d99724f's 2-bit type), on an NVIDIA host with
# nvcc, cmake and ninja: builds `temper` (device preset, KERNEL_SET=ci by default: every type at
# ncols 1, so q2_0 is in), verifies every q2_0 instantiation against the CPU reference (and q1_0,
# q4_0 beside it), then times them at N=4096 K=14336 ncols 1 and prints the table LAST.
# Logs go to $OUT when set (else build-device/evidence-q2_0/). Exit: verify's code, else bench's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-device/evidence-q2_0}"
mkdir -p "$out"
log="$out/q2_0.log"
: >"$log"
say() { echo "$*" | tee -a "$log" >&2; }
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [[ -x "$d/nvcc" ]] && { export PATH="$d:$PATH"; break; }; done
fi
command -v nvcc >/dev/null 2>&1 || { say "q2_0.sh: nvcc not found"; exit 3; }
export CUDACXX="$(command -v nvcc)"
types="${TYPES:-q2_0,q1_0,q4_0}"

start=$(date +%s)
cmake --preset device -DTEMPER_KERNEL_SET="${KERNEL_SET:-ci}" >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
if ! cmake --build --preset device --target temper -j "${JOBS:-$(nproc)}" >>"$log" 2>&1; then
  grep -E "error|FAILED" -A5 "$log" | head -60 >&2
  exit 1
fi
say "== build: $(( $(date +%s) - start )) s"
temper="$here/build-device/app/temper"
"$temper" devices 2>&1 | tee -a "$log" >&2

verify_rc=0
"$temper" verify --types "$types" --save "$out/verify.json" >"$out/verify.txt" 2>>"$log" || verify_rc=$?
tee -a "$log" <"$out/verify.txt" >&2
say "== verify ($types) exit code: $verify_rc"

bench_rc=0
"$temper" bench-gemv --types "$types" --n 4096 --k 14336 --ncols 1 --count 200 --save "$out/bench-gemv.json" \
  >"$out/bench-gemv.txt" 2>"$out/bench-gemv.err" || bench_rc=$?
tee -a "$log" <"$out/bench-gemv.err" >&2
echo
cat "$out/bench-gemv.txt"
if [[ $verify_rc -ne 0 ]]; then exit "$verify_rc"; fi
exit "$bench_rc"
