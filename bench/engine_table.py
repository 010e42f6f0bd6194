#!/usr/bin/env python3
"""Engine sweep vs Temper-kernel sweep of the same shapes (issue 15's table), from two session files.
Per shape and ncols: each kernel's default µs (config) and best µs (config), whether the winners
agree, and the GEMV-share estimate at ncols 1 both ways — plus Temper's winners launched inside the
engine (their engine times), the number that says how much of the engine's gain Temper finds.
Usage: engine_table.py ENGINE_SESSION.json TEMPER_SESSION.json"""
import json
import sys


def load(path):
    s = json.load(open(path))
    verdicts = s.get("verdicts", s.get("winners", []))
    results = {}
    for r in s["results"]:
        if r.get("status") != "ok":
            continue
        key = (r["type"], r["n"], r["k"], r["ncols"], r["config"]["nwarps"], r["config"]["rows_per_block"])
        results[key] = r["time_us"]["median"]
    calls = {(sh["type"], sh["n"], sh["k"]): sh["calls_per_token"] for sh in s["shapes"]}
    v = {(w["type"], w["n"], w["k"], w["ncols"]): w for w in verdicts}
    return s, v, results, calls


def cfg(c):
    return f"({c['nwarps']},{c['rows_per_block']})"


def winner_config(w):
    return w["config"] if w.get("verdict") == "winner" else w["default_config"]


def main():
    es, ev, er, calls = load(sys.argv[1])
    ts, tv, tr, _ = load(sys.argv[2])
    print("| shape | ncols | engine default µs | engine best µs | Temper default µs | Temper best µs | winners agree |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    agree = total = 0
    for key in sorted(ev, key=lambda k: (k[3], k[0], k[1], k[2])):
        e = ev[key]
        t = tv.get(key)
        if t is None:
            continue
        total += 1
        same = cfg(winner_config(e)) == cfg(winner_config(t))
        agree += same
        print(f"| {key[0]} {key[1]}×{key[2]} | {key[3]} | {e['default_us']:.2f} {cfg(e['default_config'])} | "
              f"{e.get('best_us', e['default_us']):.2f} {cfg(e['config'])} {e['verdict']} | {t['default_us']:.2f} {cfg(t['default_config'])} | "
              f"{t.get('best_us', t['default_us']):.2f} {cfg(t['config'])} {t['verdict']} | {'yes' if same else 'no'} |")
    print(f"\nwinners agree in {agree} of {total} (shape, ncols) groups")

    # GEMV share of decode at ncols 1: sum of calls × time.
    def share(v, results, pick):
        tot = 0.0
        for key, w in v.items():
            if key[3] != 1:
                continue
            c = pick(key, w, results)
            if c is None:
                return None
            tot += calls[key[:3]] * c
        return tot

    eng_default = share(ev, er, lambda k, w, r: w["default_us"])
    eng_best = share(ev, er, lambda k, w, r: w["best_us"] if w["verdict"] == "winner" else w["default_us"])
    tmp_default = share(tv, tr, lambda k, w, r: w["default_us"])
    tmp_best = share(tv, tr, lambda k, w, r: w["best_us"] if w["verdict"] == "winner" else w["default_us"])

    def in_engine(k, w, r):
        c = winner_config(tv[k]) if k in tv else w["default_config"]
        return er.get(k + (c["nwarps"], c["rows_per_block"]), w["default_us"])

    tmp_in_engine = share(ev, er, in_engine)
    print("\nGEMV share of decode per token at ncols 1 (estimate: Σ calls × median µs):")
    for name, base, tuned in [("engine sweep, engine winners", eng_default, eng_best),
                              ("Temper sweep, Temper winners (Temper's kernel)", tmp_default, tmp_best),
                              ("Temper's winners launched in the engine", eng_default, tmp_in_engine)]:
        if base and tuned:
            print(f"- {name}: {base:.0f} → {tuned:.0f} µs per token, {1e6 / base:.1f} → {1e6 / tuned:.1f} tokens/s, "
                  f"{(base / tuned - 1) * 100:+.1f} %")


if __name__ == "__main__":
    main()
