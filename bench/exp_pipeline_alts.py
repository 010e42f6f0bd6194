#!/usr/bin/env python3
"""Issue 29 experiment: alternatives to a tuned profile's pipelined entries, as extra arms of
tune_device.sh's pipeline stage (ALT_PROFILES). Writes into OUTDIR, from PROFILE (Llama-3-8B's keys):

  glu-pipe-2x4.json   + a mul_mat_glu_pipelined entry for gate/up (q4_K 14336x4096) at 2x4, the
                      unfused pair's config: the fused launch pipelined comes before the pair in the
                      hook, so with pipelining on gate/up runs fused and pipelined, off as the pair
  glu-pipe-4x4.json   the same at 4x4 (Temper's pipelined kernel's best for the plain 14336x4096)
  own-best.json       every mul_mat_pipelined entry at the config Temper's pipelined kernel timed
                      best back to back (docs/perf-notes.md, "the pipelined variant"), not the plain winner

usage: exp_pipeline_alts.py PROFILE OUTDIR   (prints the written paths, space-separated)"""
import copy
import json
import os
import sys

# (type, n, k) -> (nwarps, rows_per_block): the pipelined best of Temper's kernel, H200, 32e72f6.
OWN_PIPELINED_BEST = {("q4_K", 4096, 4096): (4, 8), ("q4_K", 1024, 4096): (4, 2), ("q6_K", 1024, 4096): (8, 2),
                      ("q4_K", 4096, 14336): (8, 4), ("q6_K", 4096, 14336): (8, 2), ("q6_K", 128256, 4096): (2, 8)}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    base = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    pair = [e for e in base["entries"] if e.get("launch") == "mul_mat_glu_unfused" and e["n"] == 14336 and e["k"] == 4096]
    if len(pair) != 1:
        sys.exit(f"{sys.argv[1]}: expected one mul_mat_glu_unfused entry for 14336x4096, found {len(pair)}")
    written = []
    for nw, rows in ((2, 4), (4, 4)):
        p = copy.deepcopy(base)
        e = copy.deepcopy(pair[0])
        e["launch"] = "mul_mat_glu_pipelined"
        e["config"] = {"nwarps": nw, "rows_per_block": rows}
        e["note"] = "issue 29 experiment (bench/exp_pipeline_alts.py): the fused gate/up pipelined, by hand"
        p["entries"].append(e)
        written.append(os.path.join(out, f"glu-pipe-{nw}x{rows}.json"))
        json.dump(p, open(written[-1], "w"), indent=1)
    p = copy.deepcopy(base)
    changed = 0
    for e in p["entries"]:
        key = (e["type"], e["n"], e["k"])
        if e.get("launch") == "mul_mat_pipelined" and key in OWN_PIPELINED_BEST:
            nw, rows = OWN_PIPELINED_BEST[key]
            e["config"] = {"nwarps": nw, "rows_per_block": rows}
            e["note"] = "issue 29 experiment (bench/exp_pipeline_alts.py): Temper's pipelined-best config, by hand"
            changed += 1
    if changed != len(OWN_PIPELINED_BEST):
        sys.exit(f"{sys.argv[1]}: {changed} of {len(OWN_PIPELINED_BEST)} mul_mat_pipelined entries found")
    written.append(os.path.join(out, "own-best.json"))
    json.dump(p, open(written[-1], "w"), indent=1)
    print(" ".join(written))


main()
