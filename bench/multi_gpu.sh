#!/usr/bin/env bash
# Issue 20 on a host with two or more NVIDIA GPUs (nvcc, cmake, ninja, python3; .deps carried), one
# device call. `temper sweep --device all` of the Llama-3-8B Q4_K_M fixture with Temper's kernel
# compiled at run time (kernel set none):
#   1. build temper + temper-fixture; a first sweep on device 0 fills the kernel cache (cold);
#   2. wall time, ncols 1: one GPU (--device 0) against all GPUs at once (--device all), both warm,
#      with nvidia-smi sampling every GPU's utilisation through the --device all sweep;
#   3. kill -9 of a --device all sweep at ncols 1,2,4,8 mid-run, then --resume of its journal: per
#      device every (shape, ncols, config) present once, and every result journaled before the kill
#      kept as measured (same median), none measured again;
#   4. per device a profile from the --device all session, `profile diff` and `profile merge` of them;
# and prints a short table last. Logs, sessions and profiles go to $OUT (else build-mgpu/evidence).
# TEMPER=path skips the build; FAKE=1 (with TEMPER) runs on the fake backend's two devices, for a
# dry run of the script itself without GPUs (its numbers mean nothing). Exit 0 when every check held.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="${OUT:-$here/build-mgpu/evidence}"
mkdir -p "$out"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
sec() { printf '%d.%d s' $(($1 / 1000)) $((($1 % 1000) / 100)); }
fake=()
if [[ -n "${FAKE:-}" ]]; then
  export TEMPER_FAKE_DEVICES=2 TEMPER_FAKE_SLEEP_US="${TEMPER_FAKE_SLEEP_US:-300}"
  fake=(--backend fake)
fi

temper="${TEMPER:-}"
fixture="${FIXTURE:-}"
if [[ -z "$temper" ]]; then
  command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
  export CUDACXX="$(command -v nvcc)"
  t0=$(date +%s%N)
  if ! { cmake -S . -B build-mgpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEMPER_GUI=OFF -DTEMPER_HIP=OFF -DTEMPER_CUDA=ON \
           -DTEMPER_CUDA_ARCHS="${CUDA_ARCHS:-native}" -DTEMPER_KERNEL_SET=none -DTEMPER_TESTS=ON -DTEMPER_BENCH=OFF &&
         cmake --build build-mgpu -j "$(nproc)" --target temper temper-fixture; } >"$out/build.log" 2>&1; then
    grep -E "error|FAILED" -A5 "$out/build.log" | head -40
    exit 1
  fi
  echo "build: $(sec "$(ms "$t0")")" >&2
  temper=build-mgpu/app/temper fixture=build-mgpu/tests/fixtures/temper-fixture
fi
[[ -n "$fixture" ]] || fixture="$(dirname "$temper")/../tests/fixtures/temper-fixture"
[[ -n "${FAKE:-}" ]] || { "$temper" devices >"$out/devices.txt" 2>&1; cat "$out/devices.txt" >&2; }
model="$out/llama3-8b-q4_k_m.gguf"
"$fixture" llama3-8b-q4_k_m "$model" || exit 1
export TEMPER_KERNEL_CACHE="$out/kernel-cache"

sweep() {  # sweep NAME ARGS...: prints "wall_ms exit_code"
  local name="$1" t0 rc; shift
  t0=$(date +%s%N)
  "$temper" sweep "${fake[@]}" "$model" "$@" -o "$out/$name.json" >"$out/$name.txt" 2>"$out/$name.err" && rc=0 || rc=$?
  echo "$(ms "$t0") $rc"
}
read -r cold_ms cold_rc < <(sweep cold --device 0 --ncols 1 --seed 1)
read -r one_ms one_rc < <(sweep one --device 0 --ncols 1 --seed 1)
smi=""
if command -v nvidia-smi >/dev/null 2>&1 && [[ -z "${FAKE:-}" ]]; then
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw --format=csv,noheader,nounits -lms 100 \
    >"$out/smi-all.csv" 2>/dev/null &
  smi=$!
  sleep 0.5
fi
read -r all_ms all_rc < <(sweep all --device all --ncols 1 --seed 1)
[[ -n "$smi" ]] && kill "$smi" 2>/dev/null

# Kill -9 mid-run, then resume. The kill lands once about a third of the single-GPU result count is
# journaled (each device journals its own results).
"$temper" sweep "${fake[@]}" "$model" --device all --ncols 1,2,4,8 --seed 2 -o "$out/kill.json" \
  --journal "$out/kill.journal" >"$out/kill-first.txt" 2>"$out/kill-first.err" &
pid=$!
for _ in $(seq 1 1200); do
  sleep 0.1
  lines=0; [[ -f "$out/kill.journal" ]] && lines=$(wc -l <"$out/kill.journal")
  (( lines >= 190 )) && break
  kill -0 "$pid" 2>/dev/null || break
done
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
cp "$out/kill.journal" "$out/kill.journal.at-kill"
killed_lines=$(wc -l <"$out/kill.journal.at-kill")
t0=$(date +%s%N)
"$temper" sweep --resume "$out/kill.journal" -o "$out/kill.json" >"$out/kill-resume.txt" 2>"$out/kill-resume.err" \
  && resume_rc=0 || resume_rc=$?
resume_ms=$(ms "$t0")

# Profiles per device from the --device all session; diff and merge.
prof_rc=0
for d in 0 1; do
  "$temper" profile export "$out/all.json" --device "$d" --format temper -o "$out/profile-dev$d.json" \
    >"$out/profile-dev$d.txt" 2>&1 || prof_rc=$?
done
"$temper" profile diff "$out/profile-dev0.json" "$out/profile-dev1.json" >"$out/profile-diff.txt" 2>&1
diff_rc=$?  # 0: no differences, 1: differences (as diff(1)); recorded, not a failure
"$temper" profile merge "$out/profile-dev0.json" "$out/profile-dev1.json" -o "$out/profile-merged.json" \
  >"$out/profile-merge.txt" 2>&1 || prof_rc=$?

python3 - "$out" "$one_ms" "$all_ms" "$killed_lines" "$resume_rc" "$resume_ms" "$cold_ms" \
  "$cold_rc/$one_rc/$all_rc" "$prof_rc" "$diff_rc" <<'PY'
import collections, csv, json, os, sys
out, one_ms, all_ms, killed_lines, resume_rc, resume_ms, cold_ms, rcs, prof_rc, diff_rc = sys.argv[1:]
ok = True
def key(r):
    return (r["type"], r["n"], r["k"], r["ncols"], r["config"]["nwarps"], r["config"]["rows_per_block"])
def load(name):
    return json.load(open(os.path.join(out, name)))
rows = []
def row(step, result, verdict=""):
    rows.append((step, result, verdict))

# Wall time, results and winners per device.
one, both = load("one.json"), load("all.json")
per_dev = collections.Counter(r["device"] for r in both["results"])
n_one = len(one["results"])
tagged = all(per_dev[d] == n_one for d in per_dev) and len(per_dev) >= 2
ok &= tagged
names = {d["info"]["index"]: d["info"]["name"] for d in both["devices"]}
row("devices", ", ".join(f"{i}: {names[i]}" for i in sorted(names)))
row("sweep ncols 1, cold kernel cache, device 0", f"{int(cold_ms)/1000:.1f} s", f"exit codes cold/one/all {rcs}")
row("sweep ncols 1, warm, --device 0", f"{int(one_ms)/1000:.1f} s", f"{n_one} results")
row("sweep ncols 1, warm, --device all", f"{int(all_ms)/1000:.1f} s",
    f"{dict(per_dev)} results per device: {'each device the whole sweep' if tagged else 'NOT complete per device'}; "
    f"{len(per_dev) * int(one_ms) / max(1, int(all_ms)):.2f}x the results per second")
wins = collections.defaultdict(dict)
for w in both.get("winners", []):
    wins[w.get("device", 0)][(w["type"], w["n"], w["k"], w["ncols"])] = (w["config"]["nwarps"], w["config"]["rows_per_block"])
if len(wins) >= 2:
    d0, d1 = sorted(wins)[:2]
    same = sum(wins[d0][k] == wins[d1].get(k) for k in wins[d0])
    row("winners per device", f"{same} of {len(wins[d0])} (shape, ncols) agree between devices {d0} and {d1}")
busy = {d: sorted(r["telemetry"]["busy_percent"] for r in both["results"] if r["device"] == d and r.get("telemetry"))
        for d in per_dev}
row("session telemetry, busy % median per device",
    ", ".join(f"{d}: {v[len(v) // 2]:.0f}" for d, v in sorted(busy.items()) if v))
smi_path = os.path.join(out, "smi-all.csv")
if os.path.exists(smi_path):
    samples = collections.defaultdict(dict)
    for r in csv.reader(open(smi_path)):
        if len(r) >= 4:
            samples[r[0].strip()][int(r[1])] = float(r[2])
    ticks = [v for v in samples.values() if len(v) >= 2]
    active = [v for v in ticks if max(v.values()) > 0]
    both_busy = sum(min(v.values()) >= 50 for v in active)
    row("nvidia-smi during --device all (100 ms)",
        f"{len(active)} samples with a GPU busy; both ≥ 50 % in {both_busy}",
        "both GPUs at once" if active and both_busy >= len(active) // 2 else "NOT both at once")
    ok &= bool(active) and both_busy >= len(active) // 2

# Kill -9 and resume.
journaled = {}
for line in open(os.path.join(out, "kill.journal.at-kill")):
    try:
        r = json.loads(line)
    except ValueError:
        continue  # a line cut by the kill
    if "config" in r and "device" in r and "time_us" in r:
        journaled[(r["device"],) + key(r)] = r["time_us"]["median"]
if resume_rc == "0":
    final = load("kill.json")
    counts = collections.Counter((r["device"],) + key(r) for r in final["results"])
    medians = {(r["device"],) + key(r): r["time_us"]["median"] for r in final["results"]}
    dup = sum(c > 1 for c in counts.values())
    per = collections.Counter(k[0] for k in counts)
    grid = len({k[1:] for k in counts})
    lost = sum(k not in counts for k in journaled)
    kept = sum(medians.get(k) == t for k, t in journaled.items())
    complete = all(per[d] == grid for d in per) and len(per) >= 2
    good = not dup and not lost and kept == len(journaled) and complete
    row("kill -9 mid-run (ncols 1,2,4,8, --device all)",
        f"{len(journaled)} results journaled before the kill ({dict(collections.Counter(k[0] for k in journaled))} per device)")
    row("--resume", f"{int(resume_ms)/1000:.1f} s, exit 0; per device {dict(per)} of {grid}",
        f"duplicates {dup}, lost {lost}, kept as measured {kept}/{len(journaled)}: {'held' if good else 'FAILED'}")
    ok &= good
else:
    row("--resume", f"exit {resume_rc}", "FAILED")
    ok = False
diff_lines = open(os.path.join(out, "profile-diff.txt")).read().strip().splitlines()
merge_lines = open(os.path.join(out, "profile-merge.txt")).read().strip().splitlines()
row("profile per device, diff", diff_lines[-1] if diff_lines else "(no output)", f"exit {diff_rc}")
row("profile merge", merge_lines[-1] if merge_lines else "(no output)", f"exit {prof_rc}")
ok &= prof_rc == "0"
print()
for s, r, v in rows:
    print(f"| {s} | {r} | {v} |")
print("\nmulti_gpu: every check held" if ok else "\nmulti_gpu: a check FAILED")
sys.exit(0 if ok else 1)
PY
