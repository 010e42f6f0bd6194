#!/usr/bin/env bash
# After a kernel change, one device call: are both engine variants of Temper's kernel still exact?
# Builds `temper` (device preset, KERNEL_SET default ci), then
#   - `temper verify`: every instantiation of the default variant (7180759's), every ncols;
#   - per engine version, `temper bench-gemv --engine E`: every grid config of that version's
#     variant verified against the exact integer reference at N = 4100 (not a multiple of 8 rows),
#     ncols 1 for the 13 tier-1 types and ncols 4 for q4_0, q6_K, iq4_xs at N = 4099 (kernels
#     compiled at run time unless the set has them); the few timed samples are not evidence.
# Prints one line per step with its exit code last (0 passed, 5 a config failed verification).
# Carry .deps when the host lacks nlohmann/json and CLI11. OUT: logs copied there.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
export CUDACXX="$(command -v nvcc)"
log="${WORK:-build-device}/verify_variants"
mkdir -p "$log"
start=$(date +%s)
if ! { cmake --preset device -DTEMPER_KERNEL_SET="${KERNEL_SET:-ci}" && cmake --build --preset device --target temper -j "$(nproc)"; } \
  >"$log/build.txt" 2>&1; then
  grep -E "error|FAILED" -A5 "$log/build.txt" | head -40 >&2
  exit 1
fi
echo "build: $(( $(date +%s) - start )) s" >&2
temper=build-device/app/temper
tier1=q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_nl,iq4_xs,mxfp4
quick=(--count 3 --warmup 1 --back-to-back 1)
steps=() codes=()
step() {  # step NAME ARGS...: run temper ARGS, keep its output, record its exit code
  local name="$1"; shift
  "$temper" "$@" >"$log/$name.txt" 2>&1
  local rc=$?
  steps+=("$name: temper $*") codes+=("$rc")
  [[ $rc -eq 0 ]] || tail -20 "$log/$name.txt" >&2
}
step verify verify
for e in ggml-7180759 ggml-d99724f; do
  step "$e-ncols1" bench-gemv --engine "$e" --types "$tier1" --n 4100 --k 4096 "${quick[@]}"
  step "$e-ncols4" bench-gemv --engine "$e" --types q4_0,q6_K,iq4_xs --n 4099 --k 4096 --ncols 4 "${quick[@]}"
done
[[ -n "${OUT:-}" ]] && cp "$log"/*.txt "$OUT/" 2>/dev/null
echo
failed=0
for i in "${!steps[@]}"; do
  printf 'exit %s  %s\n' "${codes[$i]}" "${steps[$i]}"
  [[ ${codes[$i]} -eq 0 ]] || failed=1
done
exit $failed
