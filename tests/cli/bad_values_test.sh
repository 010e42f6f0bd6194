#!/bin/sh
# Every command rejects a bad option value the same way: exit 2, nothing on stdout, one line on
# stderr naming the command, the option and what was expected. No device is needed: values are
# checked while the command line is parsed, before anything is opened.
# usage: bad_values_test.sh TEMPER OUTDIR
set -u
temper=$1 out=$2
mkdir -p "$out"
fails=0
bad() {  # bad EXPECTED_STDERR ARGS...
  want=$1; shift
  "$temper" "$@" >"$out/stdout" 2>"$out/stderr"; got=$?
  lines=$(wc -l <"$out/stderr")
  if [ "$got" -ne 2 ] || [ -s "$out/stdout" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$out/stderr"; then
    echo "FAIL: temper $*: exit $got (want 2), $lines stderr line(s) (want 1), want '$want' in:"
    cat "$out/stdout" "$out/stderr"
    fails=$((fails + 1))
  fi
}
bad "temper sweep: --back-to-back: expected an integer 1..64, got '65'" sweep --shape q4_0:64:256 --back-to-back 65
bad "temper sweep: --nwarps: expected an integer 1..64, got 'x'" sweep --shape q4_0:64:256 --nwarps 1,x
bad "temper sweep: --seed: expected an integer 1..18446744073709551615, got '0'" sweep --shape q4_0:64:256 --seed 0
bad "temper sweep: --time-cap: expected seconds in (0, 3600], got '-1'" sweep --shape q4_0:64:256 --time-cap=-1
bad "temper sweep: --backend: expected one of gpu, fake, got 'cpu'" sweep --shape q4_0:64:256 --backend cpu
bad "temper sweep: --engine: expected one of" sweep --shape q4_0:64:256 --engine ggml-0
bad "temper sweep: --device: expected an integer 0.." sweep --shape q4_0:64:256 --device two
bad "temper sweep: --types: unknown type 'q9_9'" sweep --shape q4_0:64:256 --types q9_9
bad "temper sweep: --ncols: ncols '9'" sweep --shape q4_0:64:256 --ncols 9
bad "temper sweep: --shape rows N: expected an integer 1..16777216, got 'x'" sweep --shape q4_0:x:256 --backend fake
bad "temper sweep: --shape 'q4_K:64:256/mul_mat_group': a same-input group is not one GEMV to sweep" sweep --shape q4_K:64:256/mul_mat_group --backend fake
bad "temper bench-gemv: --n: expected an integer 1..16777216, got '0'" bench-gemv --n 0
bad "temper bench-gemv: --ncols: expected an integer 1..8, got '9'" bench-gemv --ncols 9
bad "temper bench-gemv: --pipelined needs --ncols 1: the engine pipelines one-column launches only" bench-gemv --pipelined --ncols 2
bad "temper bench-gemv: --pipelined models ggml-d99724f's hooked launch; --engine ggml-7180759 has none" bench-gemv --pipelined --engine ggml-7180759
bad "temper bench-gemv: --group needs --ncols 1..4: the hook groups batch widths up to 4" bench-gemv --group q4_K:64,q4_K:32 --ncols 5
bad "temper bench-gemv: --group times Temper's group kernel; it cannot go with --probe / --engine-src, --pipelined, --default-only or --types" bench-gemv --group q4_K:64,q4_K:32 --pipelined
bad "temper bench-gemv: --group 'q4_K:64,q4_K'" bench-gemv --group q4_K:64,q4_K
bad "temper bench-gemv: group q4_K 64x4096: 1 members, expected 2..4" bench-gemv --group q4_K:64 --k 4096
bad "temper bench-gemv: --pipelined times Temper's kernel; it cannot go with --probe / --engine-src" bench-gemv --pipelined --probe /nonexistent
bad "temper verify: unknown kernel variant 'pipelined' in 'd99724f,pipelined' (expected all or a list of 7180759, d99724f, d99724f-pipelined)" verify --variants d99724f,pipelined
bad "temper verify: group 'q4_K': 1 members of 1 types; a group launch takes 2..4 members of at most 2 types" verify --groups q4_K+q6_K,q4_K
bad "temper verify: unknown type 'q9_9'" verify --groups q4_K+q9_9
bad "temper verify: --k: expected an integer 32..1048576, got '16'" verify --k 16
bad "temper verify: --seed: expected an integer 1.." verify --seed -3
bad "temper bandwidth: --bytes: expected a size such as 4096, 256M or 1G, got '1T'" bandwidth --bytes 1T
bad "temper bandwidth: --device: expected an integer 0.." bandwidth --device -1
bad "temper occupancy: --threads: expected an integer 1..4096, got '5000'" occupancy --arch mi50 --regs 16 --threads 5000
bad "temper occupancy: --type: not a ggml type name" occupancy --arch mi50 --type q9
bad "temper roofline: --device: expected an integer 0.." roofline s.json --device x
bad "temper profile export: --format: expected one of temper, kernel-anvil, header, ggml-table, csv, got 'yaml'" profile export p.json --format yaml -o x
bad "temper profile export: --min-speedup: expected a fraction" profile export p.json --format temper -o x --min-speedup lots
bad "temper profile approve: --n: expected an integer 1.." profile approve p.json --type q4_K --n 0 --k 4096
bad "temper profile verify: --backend: expected one of gpu, fake" profile verify p.json --backend cpu
bad "temper engine bench: --tests: bench test 'pp16': a profile changes only mmvq launches" engine bench m.gguf --llama-bench lb --tests pp16
bad "temper engine bench: --rounds: expected an integer 1..1000, got '0'" engine bench m.gguf --llama-bench lb --rounds 0
bad "temper engine bench: --llama-bench is required" engine bench m.gguf
bad "temper engine bench: --json excludes --md" engine bench m.gguf --llama-bench lb --json --md
bad "temper tune: --approve: expected one of significant, all, got 'none'" tune m.gguf --probe p --approve none
bad "temper tune: --min-speedup: expected a fraction 0..10 (0.03 = 3%), got 'lots'" tune m.gguf --probe p --min-speedup lots
bad "temper tune: --min-path-gain: expected a fraction 0..1 (0.01 = 1%), got '2'" tune m.gguf --probe p --min-path-gain 2
bad "temper tune: --min-group-gain: expected a fraction 0..1 (0.01 = 1%), got '-0.1'" tune m.gguf --probe p --min-group-gain -0.1
bad "temper tune: --tests: bench test 'decode': expected tgN" tune m.gguf --probe p --tests decode
bad "temper dequant: --output is required" dequant m.gguf t
bad "temper inspect: MODEL is required" inspect
bad "temper devices: The following argument was not expected: --frobnicate" devices --frobnicate
bad "temper gpus: QUERY: At Most 1 required but received 2" gpus a b
bad "temper: unknown command 'frobnicate'" frobnicate
[ "$fails" -eq 0 ] && echo "all bad-value checks passed"
exit "$fails"
