#!/usr/bin/env bash
# Fidelity of Temper's own mmvq against upstream's (issue 17), on an NVIDIA host with nvcc, cmake,
# ninja and python3. Two parts:
#   CPU  registers per thread from ptxas for both kernels (bench/regcompare.py; needs the ggml
#        archives in ../shared/upstream or UPSTREAM_DIR), for the configs upstream compiles;
#   GPU  Temper's kernel-only time (events around the GEMV launches alone, the q8_1 quantize is not
#        in them) for the 13 tier-1 types x every config of the ncols-1 grid at 4096x14336 and
#        14336x4096, and q6_K/q4_K at 128256x4096 (`temper bench-gemv --engine ENGINE`), then the
#        table against upstream's kernel-only times with the rank correlation per type.
# Upstream's times come from the engine bridge's probe (a ggml tree with the tuning hook, timing
# mul_mat_vec_q alone). >>> HOOK: put them in $UPSTREAM_CSV (default $OUT/upstream.csv) with the
# header  type,n,k,ncols,nwarps,rows_per_block,us  (type as ggml names it: q4_K, iq4_nl, ...; us =
# the median kernel-only time in microseconds, same timing method as printed in the table header).
# Without that file the table shows Temper's side only. <<<
# Environment: OUT (logs, JSON, tables; default build-device/fidelity), ENGINE (ggml-d99724f),
# COUNT (timed samples, default 200), BACK_TO_BACK (launches per event pair, default 1: one event
# pair around each launch), SKIP_BUILD=1 (reuse build-device), CPU_ONLY=1 (registers only), JOBS.
# Exit: 0, 5 when a config misses ±3 % or a rank correlation 0.9 (with upstream's times), else the
# failing step's code. The short table is printed last.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-device/fidelity}"
mkdir -p "$out"
log="$out/fidelity.log"
: >"$log"
say() { echo "$*" | tee -a "$log" >&2; }

engine="${ENGINE:-ggml-d99724f}"
count="${COUNT:-200}"
back_to_back="${BACK_TO_BACK:-1}"
jobs="${JOBS:-$(nproc)}"
upstream_csv="${UPSTREAM_CSV:-$out/upstream.csv}"
tier1="q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_nl,iq4_xs,mxfp4"

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [[ -x "$d/nvcc" ]]; then export PATH="$d:$PATH"; break; fi
  done
fi
for tool in nvcc cmake ninja python3; do
  command -v "$tool" >/dev/null 2>&1 || { say "fidelity.sh: $tool not found"; exit 3; }
done
export CUDACXX="$(command -v nvcc)"

# 1. Build (the device preset: CUDA on, every instantiation, both engine variants).
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  start=$(date +%s)
  cmake --preset device >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
  target=temper
  [[ "${CPU_ONLY:-0}" == 1 ]] && target=temper_iq_tables
  if ! cmake --build --preset device --target "$target" -j "$jobs" >>"$log" 2>&1; then
    grep -E "error|FAILED" -A5 "$log" | head -60 >&2
    exit 1
  fi
  say "== build: $(( $(date +%s) - start )) s"
fi

# 2. CPU part: registers, Temper vs upstream (both engine versions).
regs_rc=0
python3 bench/regcompare.py --source-dir "$here" ${UPSTREAM_DIR:+--upstream-dir "$UPSTREAM_DIR"} \
  --iq-tables-dir build-device/kernels --work-dir "$out/regcompare" >"$out/regs.txt" 2>>"$log" || regs_rc=$?
cat "$out/regs.txt" >>"$log"
say "== registers: regcompare exit $regs_rc (77 = skipped: no archive)"
if [[ "${CPU_ONLY:-0}" == 1 ]]; then cat "$out/regs.txt"; exit "$regs_rc"; fi

# 3. GPU part: Temper's kernel-only times over the whole ncols-1 grid.
temper="$here/build-device/app/temper"
"$temper" devices 2>&1 | tee -a "$log" >&2
bench_rc=0
run_shape() {  # name types n k
  "$temper" bench-gemv --types "$2" --n "$3" --k "$4" --ncols 1 --engine "$engine" --count "$count" \
    --back-to-back "$back_to_back" --save "$out/temper-$1.json" >"$out/temper-$1.txt" 2>>"$log" || bench_rc=$?
  cat "$out/temper-$1.txt" >>"$log"
}
run_shape 4096x14336 "$tier1" 4096 14336
run_shape 14336x4096 "$tier1" 14336 4096
run_shape 128256x4096 q6_K,q4_K 128256 4096
say "== bench-gemv exit $bench_rc"

# 4. The table (upstream's side from the hook's CSV when present).
table_rc=0
upstream_args=()
if [[ -f "$upstream_csv" ]]; then upstream_args=(--upstream "$upstream_csv"); else say "== no $upstream_csv: Temper's side only"; fi
python3 bench/fidelity_table.py "$out"/temper-*.json "${upstream_args[@]}" --regs "$out/regs.txt" --engine "$engine" \
  >"$out/table.txt" 2>>"$log" || table_rc=$?
cat "$out/table.txt" >>"$log"
echo
cat "$out/regs.txt"
echo
cat "$out/table.txt"
for rc in "$bench_rc" "$table_rc"; do [[ "$rc" -ne 0 ]] && exit "$rc"; done
[[ "$regs_rc" -ne 0 && "$regs_rc" -ne 77 ]] && exit "$regs_rc"
exit 0
