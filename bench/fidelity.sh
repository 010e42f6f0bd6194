#!/usr/bin/env bash
# Fidelity of Temper's own mmvq against upstream's (issue 17), in one device call on an NVIDIA host
# with nvcc, cmake, ninja and python3 (no Qt). Carry .deps/ (scripts/device-deps) and .upstream/
# holding the extracted trees ggml-d99724f/ and (regs) ggml-7180759/ (copied from $TEMPER_UPSTREAM;
# TEMPER_UPSTREAM, when set, is used instead of .upstream/). Phases, each timed on stderr
# ("== phase: N s"):
#   build     Temper (device preset, Temper kernel set KERNEL_SET, default ci: every type at ncols 1)
#   engine    `temper engine build` of upstream d99724f (UPSTREAM, default .upstream/ggml-d99724f)
#             for sm_90, kernel set ncols1 (the 13 tier-1 types × the ncols-1 grid) into
#             build-device/engine-cache (cached by source hash)
#   time      bench/probe_smoke.py on the probe (kernel-only output checked), then per shape, upstream's kernel-only times (`temper bench-gemv --probe P --kernel-only`:
#             mul_mat_vec_q alone through the hook's registry, upstream's launch path and PDL; its
#             stock config timed as its grid instantiation) then Temper's (`bench-gemv --engine`),
#             the 13 tier-1 types × the 27 configs of the ncols-1 grid at 4096x14336 and 14336x4096,
#             q6_K and q4_K at 128256x4096; both sides: weights rotating past 2x L2, COUNT events
#             pairs around BACK_TO_BACK launches each, after 20 warm-up launches
#   regs      registers per thread from ptxas for both kernels over the ncols-1 grid (bench/regcompare.py
#             --temper: copies of upstream patched with the hook; skipped, exit 77, without both
#             trees)
#   table     bench/fidelity_table.py: per config both times, the difference, registers; per type
#             configs within ±3 %, worst config, rank correlation; printed last
# PHASES picks some (default "build engine time regs table"); CPU_ONLY=1 means "build regs table"
# with only the CPU part built (no GPU; the table uses whatever JSON/CSV the work folder holds).
# Environment: WORK (work folder, default build-device/fidelity), OUT (when set: the work folder
# packed into $OUT/evidence.tgz and the table copied to $OUT/table.txt), COUNT (default 200),
# BACK_TO_BACK (default 1), BUDGET_S (default 540: a shape whose timing would start later than 60 s
# before this many seconds since the start is skipped, so one 600 s call ends with a table), SHAPES (default "4096x14336 14336x4096 128256x4096"), TYPES (default the
# 13 tier-1 types; the 128256x4096 shape times only q6_K,q4_K of them), JOBS, KERNEL_SET.
# Exit: 0; 5 when a config misses ±3 % or a rank correlation 0.9; else the failing phase's code.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
upstreams="${TEMPER_UPSTREAM:-$here/.upstream}"  # extracted upstream trees (ggml-<commit>/)
work="${WORK:-$here/build-device/fidelity}"
mkdir -p "$work"
log="$work/fidelity.log"
: >"$log"
say() { echo "$*" | tee -a "$log" >&2; }
phases="${PHASES:-build engine time regs table}"
[[ "${CPU_ONLY:-0}" == 1 ]] && phases="${PHASES:-build regs table}"
want() { [[ " $phases " == *" $1 "* ]]; }

engine="ggml-d99724f"
count="${COUNT:-200}"
back_to_back="${BACK_TO_BACK:-1}"
jobs="${JOBS:-$(nproc)}"
shapes="${SHAPES:-4096x14336 14336x4096 128256x4096}"
tier1="q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_nl,iq4_xs,mxfp4"
types="${TYPES:-$tier1}"
temper="$here/build-device/app/temper"
cache="$here/build-device/engine-cache"
pack() {
  if [[ -n "${OUT:-}" ]]; then
    cp /tmp/temper-probe-*.log "$work/" 2>/dev/null || true
    tar czf "$OUT/evidence.tgz" -C "$work" . 2>/dev/null || true
    [[ -f "$work/table.txt" ]] && cp "$work/table.txt" "$OUT/table.txt"
  fi
  return 0
}
trap pack EXIT
trap 'exit 143' TERM INT  # a run cut off at the call's limit still packs what it has

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [[ -x "$d/nvcc" ]]; then export PATH="$d:$PATH"; break; fi
  done
fi
need=(python3)
{ want build || want engine; } && need+=(nvcc cmake ninja)
for tool in "${need[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || { say "fidelity.sh: $tool not found"; exit 3; }
done
command -v nvcc >/dev/null 2>&1 && export CUDACXX="$(command -v nvcc)"
say "== $(date -u +%FT%TZ) host $(uname -n), $(nproc) cores; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); phases: $phases"
t_start=$(date +%s)
budget="${BUDGET_S:-540}"
phase_start=0
begin() { phase_start=$(date +%s); }
done_phase() { say "== $1: $(( $(date +%s) - phase_start )) s${2:+, $2}"; }

# build: Temper, the device preset (CUDA on, no GUI, no tests).
if want build; then
  begin
  target=temper
  [[ "${CPU_ONLY:-0}" == 1 ]] && target="temper_iq_tables temper"  # the CLI patches upstream for regs
  cmake --preset device -DTEMPER_KERNEL_SET="${KERNEL_SET:-ci}" >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
  if ! cmake --build --preset device --target $target -j "$jobs" >>"$log" 2>&1; then
    grep -E "error|FAILED" -A5 "$log" | head -60 >&2
    exit 1
  fi
  done_phase build "target $target, Temper kernel set ${KERNEL_SET:-ci}"
fi

# engine: the hooked upstream and its probe.
probe=""
if want engine; then
  begin
  upstream="${UPSTREAM:-$upstreams/ggml-d99724f}"
  [[ -d "$upstream" ]] || { say "fidelity.sh: no upstream tree at $upstream (carry .upstream/)"; exit 2; }
  "$temper" engine build "$upstream" --arch sm_90 --kernel-set ncols1 --cache "$cache" --jobs "$jobs" --json \
    >"$work/engine-build.json" 2>>"$log" || { tail -20 "$log" >&2; grep -m3 error "$cache"/*/build.log >&2 || true; exit 1; }
  done_phase engine "kernel set ncols1"
fi
probe="$(ls "$cache"/*/build/temper-probe 2>/dev/null | head -1 || true)"

# time: per shape, upstream's kernel-only times then Temper's.
bench_rc=0
if want time; then
  [[ -x "$probe" ]] || { say "fidelity.sh: no temper-probe under $cache (run the engine phase)"; exit 1; }
  "$temper" devices 2>&1 | tee -a "$log" >&2
  # The probe's kernel-only op itself: its launches' output is the stock result, nwarps 0 refused.
  if python3 -c "import numpy" 2>/dev/null; then
    begin
    rc=0
    python3 bench/probe_smoke.py "$probe" >"$work/smoke.txt" 2>&1 || rc=$?
    cat "$work/smoke.txt" >>"$log"
    grep -E "^kernel-only|^Assertion|Error" "$work/smoke.txt" >&2 || true
    done_phase "probe smoke" "exit $rc"
    [[ $rc -ne 0 ]] && bench_rc=5
  else
    say "== probe smoke: skipped (no numpy)"
  fi
  common=(--ncols 1 --engine "$engine" --count "$count" --back-to-back "$back_to_back" --warmup 20)
  for shape in $shapes; do
    n=${shape%x*} k=${shape#*x}
    shape_types="$types"
    if [[ "$shape" == 128256x4096 ]]; then
      shape_types=$(python3 -c 'import sys; print(",".join(t for t in sys.argv[1].split(",") if t in ("q6_K", "q4_K")))' "$types")
    fi
    [[ -n "$shape_types" ]] || continue
    if (( $(date +%s) - t_start > budget - 60 )); then
      say "== time $shape: skipped, $(( $(date +%s) - t_start )) s used of BUDGET_S=$budget (rerun with PHASES=\"time table\" SHAPES=$shape on the warm machine)"
      continue
    fi
    begin
    rc=0
    "$temper" bench-gemv --probe "$probe" --kernel-only --types "$shape_types" --n "$n" --k "$k" "${common[@]}" \
      --csv "$work/upstream-$shape.csv" --save "$work/upstream-$shape.json" >"$work/upstream-$shape.txt" 2>>"$log" || rc=$?
    cat "$work/upstream-$shape.txt" >>"$log"
    done_phase "time upstream $shape" "exit $rc"
    [[ $rc -ne 0 ]] && bench_rc=$rc
    begin
    rc=0
    "$temper" bench-gemv --types "$shape_types" --n "$n" --k "$k" "${common[@]}" \
      --csv "$work/temper-$shape.csv" --save "$work/temper-$shape.json" >"$work/temper-$shape.txt" 2>>"$log" || rc=$?
    cat "$work/temper-$shape.txt" >>"$log"
    done_phase "time Temper $shape" "exit $rc"
    [[ $rc -ne 0 ]] && bench_rc=$rc
  done
fi

# regs: the CPU part (needs build-device/kernels' generated IQ tables).
regs_rc=0
if want regs; then
  begin
  python3 bench/regcompare.py --source-dir "$here" --upstream-dir "$upstreams" \
    --temper "$temper" --iq-tables-dir build-device/kernels --work-dir "$work/regcompare" >"$work/regs.txt" 2>>"$log" || regs_rc=$?
  cat "$work/regs.txt" >>"$log"
  done_phase regs "regcompare exit $regs_rc (77 = skipped: no upstream tree)"
fi

# table: upstream's rows from every upstream-*.csv of the work folder.
table_rc=0
if want table; then
  shopt -s nullglob
  temper_json=("$work"/temper-*.json)
  upstream_csvs=("$work"/upstream-*.csv)
  if [[ ${#temper_json[@]} -eq 0 ]]; then
    say "== table: no Temper timings in $work (the time phase writes them)"
  else
    args=()
    if [[ ${#upstream_csvs[@]} -gt 0 ]]; then
      { head -1 "${upstream_csvs[0]}"; for f in "${upstream_csvs[@]}"; do tail -n +2 "$f"; done; } >"$work/upstream.csv"
      args+=(--upstream "$work/upstream.csv")
    fi
    [[ -s "$work/regs.txt" ]] && args+=(--regs "$work/regs.txt")
    python3 bench/fidelity_table.py "${temper_json[@]}" "${args[@]}" --engine "$engine" >"$work/table.txt" 2>>"$log" || table_rc=$?
    cat "$work/table.txt" >>"$log"
  fi
fi

[[ -f "$work/regs.txt" ]] && { echo; cat "$work/regs.txt"; }
[[ -f "$work/table.txt" ]] && { echo; cat "$work/table.txt"; }
for rc in "$bench_rc" "$table_rc"; do [[ "$rc" -ne 0 ]] && exit "$rc"; done
[[ "$regs_rc" -ne 0 && "$regs_rc" -ne 77 ]] && exit "$regs_rc"
exit 0
