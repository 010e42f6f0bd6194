#!/bin/sh
# `temper profile ...` end to end on the fixture profile: outputs, --json, exit codes.
# usage: cli_test.sh TEMPER FIXTURES OUTDIR
set -u
temper=$1 fixtures=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
fails=0
check() {  # check EXPECTED_CODE DESCRIPTION COMMAND...
  want=$1 what=$2; shift 2
  "$@" >"$out/stdout" 2>"$out/stderr"; got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; cat "$out/stdout" "$out/stderr"; fails=$((fails + 1))
  fi
}
has() {  # has FILE TEXT DESCRIPTION
  grep -qF -- "$2" "$1" || { echo "FAIL: $3: '$2' not in $1"; cat "$1"; fails=$((fails + 1)); }
}
p=$fixtures/profile.json

check 0 "show" "$temper" profile show "$p"
has "$out/stdout" "q4_K" "show lists entries"
check 0 "show --json" "$temper" profile show "$p" --json
has "$out/stdout" '"format": "temper-profile"' "show --json prints the profile"
check 0 "validate" "$temper" profile validate "$p"
has "$out/stdout" "valid" "validate says valid"
paths=$fixtures/../corpus/valid-paths.json  # a profile with mmvq/mmq path choices
check 0 "validate paths" "$temper" profile validate "$paths"
has "$out/stdout" "valid, 1 entries, 4 path choices" "validate counts path choices"
check 0 "show paths" "$temper" profile show "$paths"
has "$out/stdout" "4 path choices (mmvq or mmq)" "show lists path choices"
# A real tune (issue 49): launch kinds, experts, the whole-token gains said as the step's, the
# llama-bench records with their CI, and NVIDIA's SMs.
h200=$fixtures/../../../bench/profiles/h200-llama3-qwen3-pipelined.json
check 0 "show a tune" "$temper" profile show "$h200"
has "$out/stdout" "mul_mat_pipelined" "show names the launch kind"
has "$out/stdout" "q4_K 768x2048 experts 8/128" "show names MoE expert entries"
has "$out/stdout" "whole token (llama-bench tg128, the step's gain, not this shape's)" "show says a pipelined gain is the step's"
has "$out/stdout" "llama-bench 2026-11-28T12:45:31Z on NVIDIA H200 (sm_90), llama3-8b-q4_k_m.gguf" "show prints the bench records"
has "$out/stdout" "| tg128 |    267.69 |      314.12 |   1.173 | [1.161, 1.182] |" "show prints the bench table with its CI"
has "$out/stdout" "sm_90, NVIDIA H200 (132 SMs)" "show speaks NVIDIA's words"
if grep -q "CUs" "$out/stdout"; then echo "FAIL: show says CUs for an NVIDIA device"; fails=$((fails + 1)); fi
# Same-input groups (mul_mat_group, hook v5): valid, their own rules named by field, refused
# members naming entry and field, kept by the Temper export and left out, with the reason, by the others.
groups=$fixtures/../corpus/valid-groups.json
check 0 "validate groups" "$temper" profile validate "$groups"
has "$out/stdout" "valid, 4 entries" "validate reads group entries"
check 2 "validate a group whose n is not its members' sum" "$temper" profile validate "$fixtures/../corpus/malformed-group-n-not-the-sum.json"
has "$out/stderr" "group q4_K:4096,q4_K:1024,q4_K:1024 k 4096 ncols 1 on NVIDIA H100 80GB HBM3 (132 SMs): n: 6000 is not the sum" \
  "the problem names the group and its field"
check 2 "validate members that are not TYPE:N" "$temper" profile validate "$fixtures/../corpus/refused-group-members-syntax.json"
has "$out/stderr" '$.entries[1].members: expected TYPE:N' "the refusal names the entry and the field"
check 0 "export groups as temper" "$temper" profile export "$groups" --format temper -o "$out/groups.json"
has "$out/groups.json" '"members": "q4_K:4096,q4_K:1024,q6_K:1024"' "the Temper export keeps members"
check 0 "export groups as kernel-anvil" "$temper" profile export "$groups" --format kernel-anvil -o "$out/groups.anvil" --allow-empty
has "$out/stdout" "kernel-anvil has no group launch" "kernel-anvil says why a group is left out"
check 0 "export groups as a header" "$temper" profile export "$groups" --format header -o "$out/groups.h" --allow-empty
has "$out/stdout" "the header's lookup has no group launch" "the header says why a group is left out"

check 0 "export kernel-anvil" "$temper" profile export "$p" --format kernel-anvil -o "$out/anvil.json"
has "$out/anvil.json" '"3,2"' "q4_K 14336x4096 lands in cell N bucket 3, K bucket 2"
has "$out/stdout" "dropped: sm_90 q6_K 4096x14336 ncols 2" "pending entry reported as dropped"
check 0 "export kernel-anvil --json" "$temper" profile export "$p" --format kernel-anvil -o "$out/anvil2.json" --json
has "$out/stdout" '"dropped": 1' "json report counts"
check 0 "show kernel-anvil import" "$temper" profile show "$out/anvil.json" --arch sm_90
has "$out/stdout" "(bucket)" "import is bucketed"
check 0 "export header" "$temper" profile export "$p" --format header -o "$out/tuning.h"
has "$out/tuning.h" "constexpr LaunchConfig lookup" "header has the lookup"
check 0 "export ggml-table" "$temper" profile export "$p" --format ggml-table -o "$out/table.h"
has "$out/table.h" "static constexpr TEMPER_MMVQ_HD int calc_nwarps_sm_90(ggml_type type, int ncols_dst" "ggml table in upstream's form"
has "$out/table.h" "| q4_K | 1 | large | 4x1 |" "ggml table's evidence row"
has "$out/stdout" "ggml-table export: 1 emitted, 0 merged, 1 dropped" "ggml table report"
check 2 "ggml-table for an arch the profile lacks" "$temper" profile export "$p" --format ggml-table --arch gfx1100 -o "$out/x"
check 0 "export all approved" "$temper" profile export "$p" --approve all --format temper -o "$out/all.json"
check 1 "diff of different profiles exits 1, as diff(1)" "$temper" profile diff "$p" "$out/all.json"
has "$out/stdout" "diff: 0 added, 0 removed, 1 changed, 1 same" "approval change shows in diff"
check 0 "diff of equal profiles exits 0" "$temper" profile diff "$p" "$p"
check 2 "diff with trouble exits 2" "$temper" profile diff "$p" "$out/nope.json"
check 2 "diff of a non-profile exits 2" "$temper" profile diff "$p" "$out/new.json.missing"
check 0 "merge" "$temper" profile merge "$p" "$out/all.json" -o "$out/merged.json"
check 0 "reject one" "$temper" profile reject "$out/merged.json" --type q4_K --n 14336 --k 4096 --note "drift"
check 0 "validate merged" "$temper" profile validate "$out/merged.json" --json
has "$out/stdout" '"valid": true' "merged profile valid"

check 2 "unknown format" "$temper" profile export "$p" --format yaml -o "$out/x"
check 2 "csv needs a session" "$temper" profile export "$p" --format csv -o "$out/x"
check 2 "unknown option" "$temper" profile show "$p" --frobnicate
check 2 "newer version" sh -c "sed 's/\"schema_version\": 1/\"schema_version\": 99/' '$p' > '$out/new.json' && '$temper' profile show '$out/new.json'"
has "$out/stderr" "newer Temper" "newer version message"
check 2 "missing file" "$temper" profile show "$out/nope.json"
check 3 "verify without that device" "$temper" profile verify "$p" --device 99
has "$out/stderr" "device" "verify names the device problem"
[ ! -e "$out/x" ] || { echo "FAIL: a failed export left a file"; fails=$((fails + 1)); }

# From a session (a quick sweep on the simulated device) to every format, then verify on it.
s=$out/s.json
check 0 "fake sweep" "$temper" sweep --shape q4_K:4096:4096,q6_K:1024:4096 --quick --backend fake --time-cap 0.02 --seed 3 -o "$s"
for f in temper kernel-anvil header ggml-table csv; do
  # --allow-empty: whether kernel-anvil can express the simulated winners is not this loop's point.
  check 0 "export $f from a session" "$temper" profile export "$s" --approve all --format $f --allow-empty -o "$out/e.$f"
done
# Nothing approved: the file would carry nothing, so it is refused and not written, unless asked for.
for f in kernel-anvil header ggml-table; do
  check 2 "a $f export that carries nothing" "$temper" profile export "$s" --approve none --format $f -o "$out/none.$f"
  has "$out/stderr" "not written: it carries no config" "says why nothing was written"
  [ ! -e "$out/none.$f" ] || { echo "FAIL: a refused $f export left a file"; fails=$((fails + 1)); }
done
check 0 "--allow-empty writes it" "$temper" profile export "$s" --approve none --format kernel-anvil --allow-empty -o "$out/none.kernel-anvil"
has "$out/none.kernel-anvil" '"configs": {}' "an empty kernel-anvil file on request"
has "$out/e.csv" "session,device,device_name,arch,type,n,k,ncols,nwarps,rows_per_block" "csv header"
check 0 "export --json from a session" "$temper" profile export "$s" --format temper -o "$out/e2.json" --json
has "$out/stdout" '"default_tokens_per_s"' "estimate in the summary"
check 0 "verify on the fake device" "$temper" profile verify "$out/e.temper" --backend fake --json
has "$out/stdout" '"still_winning"' "verify --json"

[ "$fails" -eq 0 ] && echo "all profile CLI checks passed"
exit "$fails"
