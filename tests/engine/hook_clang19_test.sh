#!/bin/sh
# The hook's HIP path for MI300X (gfx942) and Strix Halo (gfx1151), the targets Debian's hipcc lacks
# (issue 50): `temper engine patch --kernel-set ci` on a copy of ggml d99724f from $TEMPER_UPSTREAM, then
# clang++-19 (device code, ggml's HIP definitions, HIP 5.2's headers, the stand-ins of
# tests/engine/hip-standins for what ROCm 6 adds) on the patched mmvq.cu, the generated q4_K
# instantiation unit, the same-input group unit and temper-probe.cu, with the ROCm device-library folder
# Temper's kernel cache makes for each target. The tuned q4_K instantiations must use the same dot
# instruction as Temper's kernels (sdot4's encoding on gfx942, sudot4's v_dot4_i32_iu8 on gfx1151), as
# often, config by config; VGPRs of both (code-object metadata, static) are printed. Results: docs/perf-notes.md.
# Exit 77 (skipped) without clang-19 or the tree.
# Usage: TEMPER_UPSTREAM=DIR hook_clang19_test.sh TEMPER SOURCE_DIR LLVM_BIN_DIR OUT_DIR
set -eu
temper=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") source=$2 llvm=$3 out=$4
clang=$(command -v clang++-19 || true)
[ -n "$clang" ] || [ ! -x /usr/lib/llvm-19/bin/clang++ ] || clang=/usr/lib/llvm-19/bin/clang++
if [ -z "$clang" ]; then echo "SKIPPED: no clang++-19 (Debian: packages clang-19 and lld-19)"; exit 77; fi
. "$(dirname "$0")/patched_upstream.sh"
patched_upstream "$temper" "$out"
unset TEMPER_HIPCC TEMPER_HIP_CLANG
# Temper's own q4_K code objects for both targets (compared below), and with them the device-library
# folder holding both targets' ISA-version libraries.
for arch in gfx942 gfx1151; do
  TEMPER_KERNEL_CACHE="$out/kcache" TEMPER_CODEOBJ_DIR="$out/none" "$temper" occupancy --arch $arch --type q4_K --json > "$out/temper.$arch.json"
done
libs=$(find "$out/kcache" -maxdepth 1 -type d -name 'rocm-device-libs-*' | head -n 1)
[ -n "$libs" ] && [ -f "$libs/oclc_isa_version_942.bc" ] && [ -f "$libs/oclc_isa_version_1151.bc" ]
standins="$source/tests/engine/hip-standins"
cd "$tree"
flags="-x hip -std=c++17 -O3 -DNDEBUG -DGGML_USE_HIP -DGGML_HIP_GRAPHS -DGGML_HIP_NO_VMM -I$standins
       -include rocm6-additions.h -Iinclude -Isrc -Isrc/ggml-cuda --cuda-device-only --no-gpu-bundle-output
       --rocm-device-lib-path=$libs -c"
mkdir -p "$out/probe"
cp "$source/resources/engine/temper-probe.cu" "$source/hook/src/temper-mmvq-api.h" "$source/core/engine/probe_protocol.h" "$out/probe/"
objs="" running=0 cores=$(nproc 2>/dev/null || echo 2)
compile() {  # OBJECT ARGS...: in the background, one per core; the command and its output in OBJECT.log
  obj=$1; shift
  objs="$objs $obj"
  echo "$clang $flags $*" > "$obj.log"
  "$clang" $flags "$@" -o "$obj" >> "$obj.log" 2>&1 &
  running=$((running + 1))
  if [ "$running" -ge "$cores" ]; then wait; running=0; fi
}
for arch in gfx942 gfx1151; do
  for f in mmvq.cu temper-mmvq-q4_k-1.cu temper-mmvq-group-q4_k.cu; do
    compile "$out/$f.$arch.co" --offload-arch=$arch "src/ggml-cuda/$f"
  done
  # HIP 5's hipDeviceProp_t names (the engine build itself requires ROCm >= 6.1), as hook_hipcc_test.sh.
  compile "$out/probe.$arch.co" --offload-arch=$arch -DTEMPER_PROBE_HIP -DsharedMemPerMultiprocessor=maxSharedMemoryPerMultiProcessor \
    -DregsPerMultiprocessor=regsPerBlock -I"$out/probe" "$out/probe/temper-probe.cu"
done
wait
failed=0
for obj in $objs; do
  if [ ! -s "$obj" ]; then
    failed=1
    echo "FAILED: $(head -n 1 "$obj.log")"
    grep -m 5 "error" "$obj.log" || tail -n 20 "$obj.log"
  fi
done
[ "$failed" -eq 0 ]
# Dot instructions per kernel (llvm-15's objdump decodes gfx942 as gfx940, gfx1151 as gfx1100) and
# VGPRs per kernel (code-object metadata), Temper's kernels against the hooked upstream ones.
for arch in gfx942 gfx1151; do
  mcpu=gfx940; [ $arch = gfx942 ] || mcpu=gfx1100
  temper_co=$(find "$out/kcache" -path "*hip-$arch-*" -name mmvq_12_nc1.co)
  for side in temper upstream; do
    co=$temper_co; [ $side = temper ] || co="$out/temper-mmvq-q4_k-1.cu.$arch.co"
    "$llvm/llvm-objdump" -d --demangle --triple=amdgcn-amd-amdhsa --mcpu=$mcpu "$co" > "$out/$side.$arch.s"
    "$llvm/llvm-readelf" --notes "$co" > "$out/$side.$arch.notes"
  done
done
python3 - "$out" <<'EOF'
import collections, re, subprocess, sys
out = sys.argv[1]
temper_k = r"temper::kernels::mmvq<12u, 1, (\d+), (\d+), \(temper::mmvq::KernelVariant\)0>"
upstream_k = r"mul_mat_vec_q<\(ggml_type\)12, 1, false, false, false, (\d+), (\d+)(?:, 0)?>"
temper_m = r"mmvqILj12ELi1ELi(\d+)ELi(\d+)ELN\w*KernelVariantE0E"
upstream_m = r"mul_mat_vec_qIL9ggml_type12ELi1E(?:Lb0E)+Li(\d+)ELi(\d+)E(?:Li0E)?E"
def dots(path, kernel):  # {(nwarps, rows): Counter of dot instructions}
    res, cur = collections.defaultdict(collections.Counter), None
    for line in open(path):
        if re.match(r"^[0-9a-f]+ <", line):
            m = re.search(kernel, line)
            cur = (int(m.group(1)), int(m.group(2))) if m else None
        elif cur and (d := re.search(r"\s(v_dot\w+)", line)):
            res[cur][d.group(1)] += 1
    return res
def vgprs(path, kernel):  # {(nwarps, rows): .vgpr_count}, pairing each .name with the next .vgpr_count
    res, cur = {}, None
    for line in open(path):
        if m := re.match(r"\s+\.name:\s+(\S+)", line):
            k = re.search(kernel, m.group(1))
            cur = (int(k.group(1)), int(k.group(2))) if k else None
        elif cur and (m := re.match(r"\s+\.vgpr_count:\s+(\d+)", line)):
            res[cur], cur = int(m.group(1)), None
    return res
for arch, dot in (("gfx942", r"v_dot4c?_i32_i8"), ("gfx1151", r"v_dot4_i32_iu8")):
    t, u = dots(f"{out}/temper.{arch}.s", temper_k), dots(f"{out}/upstream.{arch}.s", upstream_k)
    assert len(u) == 24 and set(u) <= set(t), f"{arch}: configs {sorted(t)} vs {sorted(u)}"
    for c in sorted(u):
        assert set(u[c]) == set(t[c]) and len(u[c]) == 1 and re.match(dot, next(iter(u[c]))) and t[c] == u[c], \
            f"{arch} {c}: Temper {dict(t[c])}, upstream {dict(u[c])}"
    tv, uv = vgprs(f"{out}/temper.{arch}.notes", temper_m), vgprs(f"{out}/upstream.{arch}.notes", upstream_m)
    assert set(uv) == set(u) and set(uv) <= set(tv), f"{arch}: VGPR configs {sorted(tv)} vs {sorted(uv)}"
    rows = [(c, uv[c], tv[c]) for c in sorted(uv)]
    print(f"{arch}: q4_K ncols 1, the 24 configs of the hooked HIP build: the same dot instruction ({next(iter(u[(4, 1)]))}) "
          "equally often; VGPRs (upstream -> Temper, static):", ", ".join(f"{c[0]}x{c[1]} {a}->{b}" for c, a, b in rows))
    # Register fidelity itself is bench/regcompare.py's (kernel_register_fidelity_<arch>: every tier-1 type, none allowed).
EOF
cd "$out"
"$temper" engine patch "$tree" --undo
cmp -s "$tree/src/ggml-cuda/mmvq.cu" "$upstream/src/ggml-cuda/mmvq.cu"
echo "patched mmvq.cu, its q4_K and group units and temper-probe.cu compile with $("$clang" --version | head -n 1) for gfx942 and gfx1151; undone"
