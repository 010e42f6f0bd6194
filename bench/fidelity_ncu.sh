#!/usr/bin/env bash
# Issue 17: is the per-launch gap between Temper's and upstream's kernel-only times in the kernel
# or around it? Nsight Compute's gpu__time_duration of each kernel launch, Temper's d99724f kernel and
# upstream d99724f's mul_mat_vec_q, per config (ncu neither flushes caches nor locks clocks: both
# harnesses rotate weights past L2 themselves). One device call: fidelity.sh's build and engine phases, then ncu on
# `bench-gemv` (Temper) and `bench-gemv --probe --kernel-only` (upstream). Carry .deps and .upstream.
# Environment: TYPES (default q4_1,q5_K), N, K (default 4096, 14336), OUT, WORK, SIDE_S (ncu's
# limit per side, default 150 s: every profiled launch costs tens of ms, and the harnesses' spin
# kernels, sized by the enqueue time, grow with it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
work="${WORK:-$here/build-device/fidelity}"
types="${TYPES:-q4_1,q5_K}"
side_s="${SIDE_S:-150}"
n="${N:-4096}" k="${K:-14336}"
PHASES="build engine" WORK="$work" bash bench/fidelity.sh
ncu="$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)"
[[ -x "$ncu" ]] || { echo "fidelity_ncu.sh: ncu not found" >&2; exit 3; }
probe="$(ls build-device/engine-cache/*/build/temper-probe | head -1)"
temper=build-device/app/temper
common=(--types "$types" --n "$n" --k "$k" --ncols 1 --engine ggml-d99724f --count 3 --warmup 1 --back-to-back 1)
prof=("$ncu" --target-processes all --kernel-name-base mangled -k 'regex:(mul_mat_vec_q|4mmvq)I'
      --metrics gpu__time_duration.sum --print-units base --csv --cache-control none --clock-control none)
t0=$(date +%s)
# A side cut off at SIDE_S still leaves the launches profiled so far in its CSV.
timeout -s INT "$side_s" "${prof[@]}" --log-file "$work/ncu-upstream.csv" "$temper" bench-gemv --probe "$probe" --kernel-only "${common[@]}" \
  >"$work/ncu-upstream.txt" 2>&1 || echo "== ncu upstream: exit $? (124: cut off at ${side_s} s)" >&2
echo "== ncu upstream: $(( $(date +%s) - t0 )) s" >&2
timeout -s INT "$side_s" "${prof[@]}" --log-file "$work/ncu-temper.csv" "$temper" bench-gemv "${common[@]}" \
  >"$work/ncu-temper.txt" 2>&1 || echo "== ncu Temper: exit $? (124: cut off at ${side_s} s)" >&2
echo "== ncu: $(( $(date +%s) - t0 )) s" >&2
python3 - "$work/ncu-temper.csv" "$work/ncu-upstream.csv" "$n" <<'PY' | tee "$work/ncu-table.txt"
import csv, re, statistics, sys
names = {2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 10: "q2_K", 11: "q3_K", 12: "q4_K", 13: "q5_K",
         14: "q6_K", 20: "iq4_nl", 23: "iq4_xs", 39: "mxfp4"}
nrows = int(sys.argv[3])
def load(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    out = {}
    for r in csv.DictReader(lines[start:]):
        if r["Metric Name"] != "gpu__time_duration.sum":
            continue
        name = r["Kernel Name"]
        # Demangled: mmvq<3, 1, 4, 1, (temper::mmvq::KernelVariant)1> / mul_mat_vec_q<3, 1, 0, 0, 0, 4, 1> (nwarps 0: the stock
        # dispatch the probe runs once per config to capture the launch; not a grid config).
        m = re.search(r"(?:mmvq|mul_mat_vec_q)<(\d+)u?, 1,", name)
        if not m or re.search(r"mul_mat_vec_q<\d+, 1, \d, \d, \d, 0, 0>", name):
            continue
        t = int(m.group(1))
        w = int(r["Block Size"].strip("()").split(",")[1])
        gx = int(r["Grid Size"].strip("()").split(",")[0])
        rows = next(rr for rr in (1, 2, 4, 8) if (nrows + rr - 1) // rr == gx)
        out.setdefault((t, w, rows), []).append(float(r["Metric Value"].replace(",", "")) / 1000.0)
    return out
tm, up = load(sys.argv[1]), load(sys.argv[2])
print(f"ncu gpu__time_duration (median us per launch), n={nrows}")
print(f"{'type':7} {'config':7} {'temper':>8} {'upstream':>9} {'diff %':>7} {'launches T/U':>12}")
diffs = {}
for key in sorted(set(tm) & set(up)):
    t, u = statistics.median(tm[key]), statistics.median(up[key])
    d = 100.0 * (t - u) / u
    diffs.setdefault(key[0], []).append(d)
    print(f"{names.get(key[0], key[0]):7} ({key[1]},{key[2]}){'':<{5-len(str(key[1]))-len(str(key[2]))}} {t:8.2f} {u:9.2f} {d:+7.1f} {len(tm[key]):>6}/{len(up[key])}")
for t, ds in sorted(diffs.items()):
    print(f"{names.get(t, t):7} median diff {statistics.median(ds):+.1f} %, within ±3 %: {sum(abs(d) <= 3 for d in ds)}/{len(ds)}")
PY
[[ -n "${OUT:-}" ]] && cp "$work/ncu-table.txt" "$work/ncu-temper.csv" "$work/ncu-upstream.csv" "$OUT/" || true
