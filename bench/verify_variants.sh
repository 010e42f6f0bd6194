#!/usr/bin/env bash
# After a kernel change, one device call: is every variant of Temper's kernel still exact?
# Builds `temper` (device preset, KERNEL_SET default ci), then `temper verify --variants all`: every
# instantiation of the build in each variant — 7180759's, d99724f's and, at one column, d99724f's
# pipelined launch — against the CPU reference (67 rows, K 4096 and the type's smallest K).
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
steps=() codes=()
step() {  # step NAME ARGS...: run temper ARGS, keep its output, record its exit code
  local name="$1"; shift
  "$temper" "$@" >"$log/$name.txt" 2>&1
  local rc=$?
  steps+=("$name: temper $*") codes+=("$rc")
  [[ $rc -eq 0 ]] || tail -20 "$log/$name.txt" >&2
}
step verify verify --variants all
[[ -n "${OUT:-}" ]] && cp "$log"/*.txt "$OUT/" 2>/dev/null
echo
failed=0
for i in "${!steps[@]}"; do
  printf 'exit %s  %s\n' "${codes[$i]}" "${steps[$i]}"
  [[ ${codes[$i]} -eq 0 ]] || failed=1
done
exit $failed
