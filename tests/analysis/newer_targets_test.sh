#!/bin/sh
# MI300X, Strix Halo and RDNA4 on Debian 12's toolchain (issue 50), as a user runs it: `temper occupancy
# --arch gfx942|gfx1151|gfx1201` from an empty kernel cache compiles q4_K's code objects with clang-19
# (Debian's hipcc, clang 15, knows none of these targets) against the installed HIP 5.2 headers and
# device libraries plus a generated ISA-version library, and prints registers (AGPRs included), LDS,
# waves and the limiter per config, static; gfx942 is wave64 with CDNA3's 8 waves per SIMD, gfx1151 and
# gfx1201 wave32 with 16. The dot instruction per target: sdot4's on gfx942, RDNA's sudot4 (v_dot4_i32_iu8)
# on gfx1151, where sdot4 does not exist. About 15 s of clang-19 in all. Exit 77 without clang-19.
# Usage: newer_targets_test.sh TEMPER LLVM_BIN_DIR OUT_DIR
set -eu
temper=$1 llvm=$2 out=$3
clang=$(command -v clang++-19 || true)
[ -n "$clang" ] || [ ! -x /usr/lib/llvm-19/bin/clang++ ] || clang=/usr/lib/llvm-19/bin/clang++
if [ -z "$clang" ]; then echo "SKIPPED: no clang++-19 (Debian: packages clang-19 and lld-19)"; exit 77; fi
rm -rf "$out" && mkdir -p "$out"
export TEMPER_KERNEL_CACHE="$out/cache" TEMPER_CODEOBJ_DIR="$out/none"
unset TEMPER_HIPCC TEMPER_HIP_CLANG
for arch in gfx942 gfx1151 gfx1201; do
  "$temper" occupancy --arch "$arch" --type q4_K --json > "$out/$arch.json" 2> "$out/$arch.log" ||
    { echo "FAILED: temper occupancy --arch $arch"; cat "$out/$arch.log"; exit 1; }
done
python3 - "$out" <<'EOF'
import json, sys
expect = {"gfx942": ("CU", 64, 8, 24), "gfx1151": ("WGP", 32, 16, 27), "gfx1201": ("WGP", 32, 16, 27)}
for arch, (unit, wave, max_waves, count) in expect.items():
    doc = json.load(open(f"{sys.argv[1]}/{arch}.json"))
    assert doc["gpu"]["arch"] == arch and doc["gpu"]["unit"]["name"] == unit, doc["gpu"]
    assert "(static" in doc["source"] and "compiled on demand" in doc["source"], doc["source"]
    configs = doc["configs"]
    # The grid's ncols-1 configs that launch at this wave size (wave64: no nwarps 32, 2048 threads).
    assert len(configs) == count, f"{arch}: {len(configs)} configs, expected {count}"
    for c in configs:
        assert c["type"] == "q4_K" and c["ncols"] == 1 and c["wave_size"] == wave, c
        assert 0 < c["vgprs"] <= (512 if arch == "gfx942" else 256) and c["sgprs"] > 0 and c["agprs"] >= 0, c
        assert c["max_waves_per_simd"] == max_waves and 0 < c["occupancy"] <= 1, c
        assert c["limiter"] in ("waves", "blocks", "registers", "sgprs", "lds"), c
    print(arch, "ok:", len(configs), f"wave{wave} configs, VGPRs", sorted({c["vgprs"] for c in configs}),
          "limiters", sorted({c["limiter"] for c in configs}))
EOF
# The table a user reads: from the cache now (no compile), labelled static, with the AGPR column.
"$temper" occupancy --arch gfx942 --type q4_K > "$out/gfx942.txt" 2> "$out/gfx942.err"
[ ! -s "$out/gfx942.err" ] || { cat "$out/gfx942.err"; echo "FAILED: the second call compiled again"; exit 1; }
grep -q "^source: code objects compiled on demand in .* (static" "$out/gfx942.txt"
grep -qE "^type +ncols +nwarps +rpb +threads +VGPR +AGPR +SGPR +LDS" "$out/gfx942.txt"
grep -qE "^q4_K +1 +4 +1 +256 " "$out/gfx942.txt"
# Bare code objects (clang-19 writes no bundle); Debian's llvm-15 objdump decodes gfx942 as gfx940 and
# gfx1151 as gfx1100 (the same encodings of these instructions).
dots() {  # ARCH MCPU: "<sdot4 encodings> <sudot4 encodings>" in that arch's q4_K code object
  co=$(find "$out/cache" -path "*hip-$1-*" -name mmvq_12_nc1.co)
  "$llvm/llvm-objdump" -d --triple=amdgcn-amd-amdhsa --mcpu="$2" "$co" > "$out/$1.s"
  echo "$(grep -cE 'v_dot4c?_i32_i8' "$out/$1.s" || true) $(grep -c 'v_dot4_i32_iu8' "$out/$1.s" || true)"
}
set -- $(dots gfx942 gfx940)
echo "gfx942 q4_K code object: $1 v_dot4(c)_i32_i8, $2 v_dot4_i32_iu8"
[ "$1" -gt 0 ] && [ "$2" -eq 0 ]
set -- $(dots gfx1151 gfx1100)
echo "gfx1151 q4_K code object: $1 v_dot4(c)_i32_i8, $2 v_dot4_i32_iu8"
[ "$1" -eq 0 ] && [ "$2" -gt 0 ]
# The ISA-version libraries Debian's ROCm 5.2 lacks were made in the cache, by clang-19 itself.
for n in 942 1151 1201; do
  find "$out/cache" -maxdepth 2 -name "oclc_isa_version_$n.bc" | grep -q . || { echo "FAILED: no oclc_isa_version_$n.bc made"; exit 1; }
done
echo "MI300X, Strix Halo and RDNA4 code objects with $("$clang" --version | head -n 1): ok"
