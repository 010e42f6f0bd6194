#!/usr/bin/env python3
"""bench/fidelity_table.py and bench/fidelity.sh's table phase on canned inputs (no GPU): known
differences, rank correlations, the per-type short table, exit codes and bad input."""
import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "fidelity_table.py")
SCRIPT = os.path.join(HERE, "fidelity.sh")
GRID = [(w, r) for w in (1, 2, 4, 8) for r in (1, 2)]


def temper_json(path, n, k, times):
    """A `bench-gemv --save` file: times = {type: {(nwarps, rows): us}}."""
    results = []
    for t, cfgs in times.items():
        results.append({"type": t, "configs": [{"config": {"nwarps": w, "rows_per_block": r}, "ok": True,
                                                "us": {"median": us}} for (w, r), us in cfgs.items()]})
    with open(path, "w") as f:
        json.dump({"n": n, "k": k, "ncols": 1, "engine": "ggml-d99724f", "count": 200,
                   "launches_per_sample": 1, "results": results}, f)


def upstream_csv(path, n, k, times):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["type", "n", "k", "ncols", "nwarps", "rows_per_block", "us"])
        for t, cfgs in times.items():
            for (nw, r), us in cfgs.items():
                w.writerow([t, n, k, 1, nw, r, f"{us:.4f}"])


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


class FidelityTable(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = self.dir.name
        # q4_0: upstream 10..17 µs in grid order, Temper 1 % slower everywhere: all within, rho 1.
        self.q4 = {c: 10.0 + i for i, c in enumerate(GRID)}
        # q6_K: Temper equal but (8,2) 10 % slower and the order of two configs swapped.
        self.q6 = {c: 20.0 + i for i, c in enumerate(GRID)}

    def tearDown(self):
        self.dir.cleanup()

    def write(self, q6_temper):
        temper_json(f"{self.d}/temper-4096x14336.json", 4096, 14336,
                    {"q4_0": {c: us * 1.01 for c, us in self.q4.items()}, "q6_K": q6_temper})
        upstream_csv(f"{self.d}/upstream-4096x14336.csv", 4096, 14336, {"q4_0": self.q4, "q6_K": self.q6})

    def test_all_within_exits_0_with_the_short_table_last(self):
        self.write(dict(self.q6))
        r = run([sys.executable, TABLE, f"{self.d}/temper-4096x14336.json", "--upstream", f"{self.d}/upstream-4096x14336.csv"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.strip().splitlines()
        self.assertTrue(lines[-1].startswith("summary: 16/16 configs within ±3 %; rank correlation min 1.000"), lines[-1])
        short = [l.split() for l in lines if l.startswith("4096x14336 ")]
        self.assertEqual(short[0][:3] + short[0][4:], ["4096x14336", "q4_0", "8/8", "+1.0", "1.000"])  # all +1 %: any worst
        self.assertEqual(short[1][:3], ["4096x14336", "q6_K", "8/8"])
        self.assertRegex(r.stdout, r"\n  \(1,1\) +10\.10 +10\.00 +\+1\.0 ")

    def test_a_slow_config_and_a_swap_exit_5_naming_them(self):
        q6 = dict(self.q6)
        q6[(8, 2)] *= 1.10
        q6[(1, 1)], q6[(2, 2)] = q6[(2, 2)], q6[(1, 1)]  # 20 <-> 23: Temper's order differs
        self.write(q6)
        r = run([sys.executable, TABLE, f"{self.d}/temper-4096x14336.json", "--upstream", f"{self.d}/upstream-4096x14336.csv"])
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
        short = {l.split()[1]: l.split() for l in r.stdout.splitlines() if l.startswith("4096x14336 ")}
        # (1,1) at +15 % and (2,2) at -13 % are out as well as (8,2) at +10 %: 5 of 8 within.
        self.assertEqual(short["q6_K"][2:5], ["5/8", "(1,1)", "+15.0"])
        self.assertIn("(8,2)", [l.split()[0] for l in r.stdout.splitlines() if l.endswith("OUT")])
        rho = float(short["q6_K"][5])
        self.assertAlmostEqual(rho, 1 - 6 * (9 + 9) / (8 * 63), places=3)  # Spearman of one 3-place swap
        self.assertIn("summary: 13/16 configs within", r.stdout)

    def test_bad_header_is_one_line_exit_2(self):
        self.write(dict(self.q6))
        with open(f"{self.d}/bad.csv", "w") as f:
            f.write("type,n,k,nwarps,rows,us\nq4_0,1,2,3,4,5\n")
        r = run([sys.executable, TABLE, f"{self.d}/temper-4096x14336.json", "--upstream", f"{self.d}/bad.csv"])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("header must be type,n,k,ncols,nwarps,rows_per_block,us", r.stderr)

    def test_fidelity_sh_table_phase_merges_the_upstream_csvs(self):
        self.write(dict(self.q6))
        # A second shape in its own CSV: the script concatenates them under one header.
        temper_json(f"{self.d}/temper-14336x4096.json", 14336, 4096, {"q4_0": self.q4})
        upstream_csv(f"{self.d}/upstream-14336x4096.csv", 14336, 4096, {"q4_0": self.q4})
        env = dict(os.environ, WORK=self.d, PHASES="table")
        env.pop("OUT", None)
        r = run(["bash", SCRIPT], env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(f"{self.d}/upstream.csv") as f:
            merged = f.read().splitlines()
        self.assertEqual(merged[0], "type,n,k,ncols,nwarps,rows_per_block,us")
        self.assertEqual(len(merged), 1 + 16 + 8)
        self.assertEqual(sum(l.startswith("type,") for l in merged), 1)
        self.assertTrue(r.stdout.strip().splitlines()[-1].startswith("summary: 24/24 configs within"), r.stdout)


if __name__ == "__main__":
    unittest.main()
