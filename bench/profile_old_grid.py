#!/usr/bin/env python3
"""A profile as it would be without the grid beyond nwarps 16 / rows_per_block 8 (issue 29's axes):
every entry whose config lies outside the old grid takes the session's best verified old-grid config
for its key instead — kept when it still beats the default (CI-separated, at least MIN_SPEEDUP
faster), dropped otherwise. Replaying both profiles in the engine (bench/tune_device.sh, stage axis)
measures what the new axis values buy end to end.

usage: profile_old_grid.py PROFILE SESSION OUT [--min-speedup 0.03]

Prints one line per changed entry and a count; exit 2 on unreadable input."""
import argparse
import json
import sys

OLD_NWARPS, OLD_ROWS = 16, 8


def fail(msg):
    print(f"profile_old_grid: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")


def key(d):
    return (d["type"].lower(), d["n"], d["k"], d.get("launch", "mul_mat"), d.get("experts", 0), d.get("experts_used", 0), d["ncols"])


def old_grid(c):
    return c["nwarps"] <= OLD_NWARPS and c["rows_per_block"] <= OLD_ROWS


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("session")
    ap.add_argument("out")
    ap.add_argument("--min-speedup", type=float, default=0.03)
    a = ap.parse_args()
    profile, session = load(a.profile), load(a.session)
    best = {}
    for r in session.get("results", []):
        if r.get("status") != "ok" or not old_grid(r["config"]):
            continue
        k = key(r)
        if k not in best or r["time_us"]["median"] < best[k]["time_us"]["median"]:
            best[k] = r
    kept, changed, dropped = [], 0, 0
    for e in profile.get("entries", []):
        if old_grid(e["config"]):
            kept.append(e)
            continue
        p = e.get("provenance") or {}
        r = best.get(key(e))
        t = r["time_us"] if r else None
        if not t or not p or not (t["ci_high"] < p["default_ci_low"] and p["default_us"] / t["median"] >= 1 + a.min_speedup):
            dropped += 1
            print(f"dropped {key(e)}: {e['config']['nwarps']}x{e['config']['rows_per_block']} has no old-grid winner")
            continue
        print(f"{key(e)}: {e['config']['nwarps']}x{e['config']['rows_per_block']} ({p['tuned_us']:.2f} us) -> "
              f"{r['config']['nwarps']}x{r['config']['rows_per_block']} ({t['median']:.2f} us)")
        e = dict(e, config=dict(r["config"]))
        e["provenance"] = dict(p, tuned_us=t["median"], tuned_ci_low=t["ci_low"], tuned_ci_high=t["ci_high"],
                               speedup=p["default_us"] / t["median"], speedup_low=p["default_ci_low"] / t["ci_high"],
                               speedup_high=p["default_ci_high"] / t["ci_low"])
        kept.append(e)
        changed += 1
    profile["entries"] = kept
    profile.pop("bench", None)
    with open(a.out + ".tmp", "w") as f:
        json.dump(profile, f, indent=1)
    import os
    os.replace(a.out + ".tmp", a.out)
    print(f"{changed} entries moved to the old grid, {dropped} dropped, {len(kept)} kept in all")


if __name__ == "__main__":
    main()
