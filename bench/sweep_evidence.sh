#!/usr/bin/env bash
# Sweep evidence for issue 6 on the GPU host, after bench/device.sh has built build-device/:
# the Llama-3-8B Q4_K_M shape set (the tests' fixture model, whose data is not shipped: its seven
# shapes with their calls per token, as `temper inspect` reports them for the fixture) at ncols 1
# over the full grid, timed wall-clock; then the same sweep again, and the comparison of the two
# (winner agreement, spread of the medians). Sessions, summaries and the comparison go to $OUT
# (else build-device/evidence/). The first session is the candidate resources/demo-session.json.
set -euo pipefail
# On failure, show why.
trap 'echo "sweep_evidence.sh: failed; see $out/sweep.run*.log" >&2; tail -5 "$out"/sweep.run*.log >&2 || true' ERR
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$here/build-device/evidence}"
mkdir -p "$out"
temper="${TEMPER:-$here/build-device/app/temper}"
[[ -x "$temper" ]] || { echo "sweep_evidence.sh: $temper not built (run bench/device.sh first)" >&2; exit 3; }

# Llama-3-8B Q4_K_M: TYPE:N:K:CALLS (tests/fixtures, `temper inspect` of the fixture).
shapes="q4_K:14336:4096:64,q6_K:4096:14336:16,q4_K:4096:4096:64,q4_K:4096:14336:16,q6_K:128256:4096:1,q4_K:1024:4096:48,q6_K:1024:4096:16"

for run in 1 2; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086 # SWEEP_ARGS: extra options, e.g. --backend fake to try the script
  "$temper" sweep --shape "$shapes" --ncols 1 ${SWEEP_ARGS:-} -o "$out/llama3-8b-q4km.run$run.session.json" \
    >"$out/sweep.run$run.txt" 2>"$out/sweep.run$run.log"
  end=$(date +%s.%N)
  echo "== run $run: $(echo "$end - $start" | bc) s wall (sweep incl. verification and setup)" | tee -a "$out/evidence.txt"
  cat "$out/sweep.run$run.txt"
done
"$temper" session "$out/llama3-8b-q4km.run1.session.json" --compare "$out/llama3-8b-q4km.run2.session.json" \
  | tee -a "$out/evidence.txt"
"$temper" session "$out/llama3-8b-q4km.run1.session.json" --compare "$out/llama3-8b-q4km.run2.session.json" --json \
  >"$out/compare.json"
