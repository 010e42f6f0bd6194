#!/usr/bin/env bash
# Device evidence for the engine device (issue 15), on an NVIDIA host: the Temper side of the engine
# bridge against a real temper-probe. Needs PROBE=/path/to/temper-probe (built against a hooked ggml
# by `temper engine build` / --engine-src; the lead's part) and a `temper` built with the device
# preset (TEMPER=path, default build-device/app/temper, built here when missing).
#   1. an engine sweep (`temper sweep --probe`) of q4_K 4096x14336 and q6_K 4096x14336 at ncols 1
#      over the quick grid, then the same shapes through Temper's own kernel;
#   2. `temper session ENGINE --compare TEMPER`: do the two kernels pick the same winners?
#   3. the error path on real hardware: a probe killed mid-sweep (SIGKILL to the child) must end the
#      sweep with exit 4 and the probe's log in the message, then --resume finishes it.
# The summaries are printed LAST. Logs and sessions go to $OUT (else build-device/engine-evidence/).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-device/engine-evidence}"
mkdir -p "$out"
log="$out/engine-probe.log"
: >"$log"
say() { echo "$*" | tee -a "$log" >&2; }

probe="${PROBE:?set PROBE to a temper-probe built against a hooked ggml}"
temper="${TEMPER:-$here/build-device/app/temper}"
if [[ ! -x "$temper" ]]; then
  say "== building temper (device preset)"
  cmake --preset device >>"$log" 2>&1 && cmake --build --preset device --target temper -j "$(nproc)" >>"$log" 2>&1 ||
    { tail -30 "$log" >&2; exit 1; }
fi
shapes="q4_K:4096:14336,q6_K:4096:14336"
common=(--shape "$shapes" --quick --seed 7 --engine ggml-d99724f)

say "== engine sweep through $probe"
SECONDS=0
"$temper" sweep --probe "$probe" "${common[@]}" -o "$out/engine.json" >"$out/engine.txt" 2>>"$log"
say "engine sweep: ${SECONDS} s"
say "== Temper-kernel sweep of the same shapes"
"$temper" sweep "${common[@]}" -o "$out/temper.json" >"$out/temper.txt" 2>>"$log"
"$temper" session "$out/engine.json" --compare "$out/temper.json" >"$out/compare.txt" 2>>"$log"

say "== a probe killed mid-sweep, then resumed"
"$temper" sweep --probe "$probe" "${common[@]}" -o "$out/killed.json" >"$out/killed.txt" 2>"$out/killed.err" &
sweep_pid=$!
for _ in $(seq 200); do
  child=$(pgrep -P "$sweep_pid" || true)
  [[ -n "$child" && -s "$out/killed.json.journal" ]] && [[ $(wc -l <"$out/killed.json.journal") -ge 3 ]] && break
  sleep 0.1
done
[[ -n "${child:-}" ]] && kill -9 "$child"
set +e
wait "$sweep_pid"
rc=$?
set -e
say "killed probe: temper exit $rc (expected 4); $(grep -o 'temper-probe.*' "$out/killed.err" | head -1 | cut -c1-300)"
"$temper" sweep --resume "$out/killed.json.journal" >"$out/resumed.txt" 2>>"$log" && say "resume: ok" || say "resume: exit $?"

echo "==== engine kernel"; cat "$out/engine.txt"
echo "==== Temper kernel"; cat "$out/temper.txt"
echo "==== compare (engine vs Temper kernel)"; cat "$out/compare.txt"
