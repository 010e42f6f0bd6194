#!/bin/sh
# RDNA3 on the installed toolchain, as a user runs it: `temper occupancy --arch gfx110x --type q4_K
# --json` for gfx1100-gfx1103 with an empty kernel cache (Debian 12's ROCm 5.2 device libraries lack
# their ISA-version bitcode: Temper makes it in the cache), each giving wave32 configs with
# registers; gfx1100's code objects hold RDNA3's dot instruction (v_dot4_i32_iu8) and no gfx9/gfx10.3
# one; without clang-19 a target hipcc does not know is refused in one line naming the Debian packages.
# About 5 s of hipcc per arch. Usage: rdna3_occupancy_test.sh TEMPER LLVM_BIN_DIR OUT_DIR
set -eu
temper=$1 llvm=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
export TEMPER_KERNEL_CACHE="$out/cache" TEMPER_CODEOBJ_DIR="$out/none"
for arch in gfx1100 gfx1101 gfx1102 gfx1103; do
  "$temper" occupancy --arch "$arch" --type q4_K --json > "$out/$arch.json" 2> "$out/$arch.log" ||
    { echo "FAILED: temper occupancy --arch $arch"; cat "$out/$arch.log"; exit 1; }
done
python3 - "$out" <<'EOF'
import json, sys
for arch in ("gfx1100", "gfx1101", "gfx1102", "gfx1103"):
    doc = json.load(open(f"{sys.argv[1]}/{arch}.json"))
    configs = doc["configs"]
    assert doc["gpu"]["arch"] == arch and doc["gpu"]["unit"]["name"] == "WGP", doc["gpu"]
    # The grid's 30 configs less three beyond 48 KiB of shared memory at ncols 1 (docs/kernels.md).
    assert len(configs) == 27, f"{arch}: {len(configs)} configs, expected the 27 of the grid at ncols 1, wave 32"
    for c in configs:
        assert c["type"] == "q4_K" and c["ncols"] == 1, c
        assert c["wave_size"] == 32, f"{arch}: {c['kernel']} is wave{c['wave_size']}"
        assert 0 < c["vgprs"] <= 256 and c["sgprs"] > 0, c
        assert c["max_waves_per_simd"] == 16 and 0 < c["occupancy"] <= 1, c
    print(arch, "ok:", len(configs), "wave32 configs, VGPRs", sorted({c["vgprs"] for c in configs}))
EOF
# Where Temper made the library the installed ROCm lacks (where it has it, nothing is made).
libs=$(find "$out/cache" -maxdepth 2 -name oclc_isa_version_1100.bc)
[ -n "$libs" ] && echo "made $libs" || echo "the installed ROCm has gfx1100's ISA-version library"
# gfx1100's code object for q4_K: RDNA3's signed/unsigned dot (sudot4), not sdot4's encodings.
co=$(find "$out/cache" -path '*hip-gfx1100-*' -name 'mmvq_12_nc1.co')
"$llvm/clang-offload-bundler" --unbundle --type=o --input="$co" --targets=hipv4-amdgcn-amd-amdhsa--gfx1100 --output="$out/gfx1100.elf"
"$llvm/llvm-objdump" -d --mcpu=gfx1100 "$out/gfx1100.elf" > "$out/gfx1100.s"
iu8=$(grep -c 'v_dot4_i32_iu8' "$out/gfx1100.s" || true)
i8=$(grep -cE 'v_dot4c?_i32_i8' "$out/gfx1100.s" || true)
echo "gfx1100 q4_K code object: $iu8 v_dot4_i32_iu8, $i8 v_dot4(c)_i32_i8"
[ "$iu8" -gt 0 ] && [ "$i8" -eq 0 ]
# Without clang-19 (TEMPER_HIP_CLANG pointing nowhere): a target Debian's hipcc does not know is refused
# in one line naming the Debian packages that compile it, exit 2, before anything is compiled; gfx1100
# (hipcc's) is unaffected.
rc=0
TEMPER_HIP_CLANG="$out/no-clang" "$temper" occupancy --arch gfx1151 --type q4_K > "$out/gfx1151.out" 2>&1 || rc=$?
cat "$out/gfx1151.out"
[ "$rc" -eq 2 ] && [ "$(wc -l < "$out/gfx1151.out")" -eq 1 ]
grep -q "^temper occupancy: gfx1151 (RDNA3.5): the installed hipcc does not know this target; Debian 12's packages clang-19 and lld-19 compile" "$out/gfx1151.out"
TEMPER_HIP_CLANG="$out/no-clang" "$temper" occupancy --arch gfx1100 --type q4_K --json > "$out/gfx1100-hipcc.json"
python3 - "$out/gfx1100-hipcc.json" <<'EOF'
import json, sys
configs = json.load(open(sys.argv[1]))["configs"]
assert len(configs) == 27 and all(c["wave_size"] == 32 and c["vgprs"] > 0 for c in configs), configs
print("gfx1100 without clang-19: 27 wave32 configs, VGPRs", sorted({c["vgprs"] for c in configs}))
EOF
echo "RDNA3 occupancy on this toolchain: ok"
