#!/bin/sh
# The hook's HIP path: `temper engine patch --kernel-set ci` on a copy of ggml d99724f from
# $TEMPER_UPSTREAM, then hipcc (compile only, ggml's HIP definitions) on the patched mmvq.cu, one
# generated instantiation unit, the registry and the run time for gfx1030 (device and host code) and
# gfx1100 (device code), and on temper-probe.cu for both. What Debian 12's HIP 5.2 lacks and ggml
# needs (hipBLAS, ROCm 6's hip_bf16.h and half-precision warp functions) comes from the stand-ins in
# tests/engine/hip-standins; gfx1100 uses the ROCm device-library folder Temper makes for its own
# kernels. With clang < 17, upstream's RDNA3 WMMA code (mma.cuh, __bf16 vectors) does not compile
# (it needs ROCm >= 6.1, as ggml's CMake requires): gfx1100 then gets clang15-bf16.h, which spells
# __bf16 as the 16-bit integer clang 15's WMMA builtins take, so the hook's own code is still
# compiled for RDNA3. The tuned instantiations must use the same dot instructions as Temper's kernels,
# as often. Hook v5's same-input group unit and the run time's group hooks compile for both targets
# (gfx1030 with host code), the run time's hook v8 norm kernel for both, and one unit with hook v13's
# gate-once loop (TEMPER_MMVQ_GATE_ONCE) for both. Results: docs/perf-notes.md. Exit 77 (skipped) without hipcc or the tree.
# Usage: TEMPER_UPSTREAM=DIR hook_hipcc_test.sh TEMPER HIPCC SOURCE_DIR LLVM_BIN_DIR OUT_DIR
set -eu
temper=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") hipcc=$2 source=$3 llvm=$4 out=$5
if [ -z "$hipcc" ] || [ ! -x "$hipcc" ]; then echo "SKIPPED: no hipcc"; exit 77; fi
. "$(dirname "$0")/patched_upstream.sh"
patched_upstream "$temper" "$out"
# Temper's own q4_K code objects for both targets (to compare below), and with them gfx1100's device
# libraries where the installed ROCm lacks them: the folder Temper makes.
for arch in gfx1030 gfx1100; do
  TEMPER_KERNEL_CACHE="$out/kcache" TEMPER_CODEOBJ_DIR="$out/none" "$temper" occupancy --arch $arch --type q4_K > /dev/null
done
libs=$(find "$out/kcache" -maxdepth 1 -type d -name 'rocm-device-libs-*')
version=$("$hipcc" --version 2>/dev/null)
clang_major=$(echo "$version" | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
hip_major=$(echo "$version" | sed -n 's/^HIP version: \([0-9]*\).*/\1/p' | head -n 1)
standins="$source/tests/engine/hip-standins"
libs_flag="${libs:+--rocm-device-lib-path=$libs}"
rdna3_extra="$libs_flag"
[ "${clang_major:-0}" -lt 17 ] && rdna3_extra="$rdna3_extra -include clang15-bf16.h"
# temper-probe.cu reads hipDeviceProp_t's sharedMemPerMultiprocessor and regsPerMultiprocessor, HIP 6
# names (the engine build requires ROCm >= 6.1); HIP 5's are mapped for this compile only.
probe_extra=""
[ "${hip_major:-0}" -lt 6 ] && probe_extra="-DsharedMemPerMultiprocessor=maxSharedMemoryPerMultiProcessor -DregsPerMultiprocessor=regsPerBlock"
cd "$tree"
flags="-x hip -std=c++17 -O3 -DNDEBUG -DGGML_USE_HIP -DGGML_HIP_GRAPHS -DGGML_HIP_NO_VMM -I$standins
       -include rocm6-additions.h -Iinclude -Isrc -Isrc/ggml-cuda -c"
mkdir -p "$out/probe"
cp "$source/resources/engine/temper-probe.cu" "$source/hook/src/temper-mmvq-api.h" "$source/core/engine/probe_protocol.h" "$out/probe/"
objs="" running=0 cores=$(nproc 2>/dev/null || echo 2)
compile() {  # OBJECT ARGS...: in the background, one per core; the command and its output in OBJECT.log
  obj=$1; shift
  objs="$objs $obj"
  echo "$hipcc $flags $*" > "$obj.log"
  "$hipcc" $flags "$@" -o "$obj" >> "$obj.log" 2>&1 &
  running=$((running + 1))
  if [ "$running" -ge "$cores" ]; then wait; running=0; fi
}
for f in mmvq.cu temper-mmvq-q4_k-1.cu temper-mmvq-registry.cu temper-mmvq-runtime.cu temper-mmvq-group-q4_k.cu; do
  compile "$out/$f.gfx1030.o" --offload-arch=gfx1030 "src/ggml-cuda/$f"
done
# The run time carries hook v8's norm kernel (temper_rms_norm_q8_1): its device code for RDNA3 too.
for f in mmvq.cu temper-mmvq-q4_k-1.cu temper-mmvq-group-q4_k.cu temper-mmvq-runtime.cu; do
  compile "$out/$f.gfx1100.co" --offload-arch=gfx1100 --cuda-device-only $rdna3_extra "src/ggml-cuda/$f"
done
# Hook v13's gate-once loop is off with HIP by default: it compiles where a build asks for it.
compile "$out/temper-mmvq-q4_k-1.cu.gate-once.gfx1030.co" --offload-arch=gfx1030 --cuda-device-only -DTEMPER_MMVQ_GATE_ONCE \
  "src/ggml-cuda/temper-mmvq-q4_k-1.cu"
compile "$out/temper-mmvq-q4_k-1.cu.gate-once.gfx1100.co" --offload-arch=gfx1100 --cuda-device-only $rdna3_extra -DTEMPER_MMVQ_GATE_ONCE \
  "src/ggml-cuda/temper-mmvq-q4_k-1.cu"
compile "$out/probe.o" --offload-arch=gfx1030 --offload-arch=gfx1100 $libs_flag -DTEMPER_PROBE_HIP $probe_extra \
  -I"$out/probe" "$out/probe/temper-probe.cu"
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
# The units define the hook's symbols: the tuned launchers, the registry, the run time.
nm -C "$out/temper-mmvq-registry.cu.gfx1030.o" | grep -q "temper_mmvq_register_all()"
nm -C "$out/temper-mmvq-q4_k-1.cu.gfx1030.o" | grep -q "temper_mmvq_register_q4_k_1()"
nm -C "$out/temper-mmvq-runtime.cu.gfx1030.o" | grep -q "temper_mmvq_try_launch"
nm -C "$out/temper-mmvq-runtime.cu.gfx1030.o" | grep -q " T temper_mmvq_try_group("
nm -C "$out/temper-mmvq-group-q4_k.cu.gfx1030.o" | grep -q " T temper_mmvq_register_group_q4_k()"
# Hook v10: the fused expert gate/up kernels that write the q8_1 copy register from the group unit.
nm -C "$out/temper-mmvq-group-q4_k.cu.gfx1030.o" | grep -q " U temper_mmvq_register_experts_glu_q8_1("
nm -C "$out/temper-mmvq-runtime.cu.gfx1030.o" | grep -q " T temper_mmvq_register_experts_glu_q8_1("
# The tuned q4_K instantiations (mul_mat_vec_q<..., temper_nwarps, temper_rows>) against Temper's
# kernels, config by config: the same dot instruction per target (RDNA3's v_dot4_i32_iu8 on gfx1100,
# v_dot4c_i32_i8 on gfx1030) and as many of them (the same loop structure). gfx1030's device code
# comes from the host object's .hip_fatbin.
"$llvm/llvm-objcopy" --dump-section .hip_fatbin="$out/unit.gfx1030.fatbin" "$out/temper-mmvq-q4_k-1.cu.gfx1030.o"
disassemble() {  # BUNDLE ARCH OUTPUT
  "$llvm/clang-offload-bundler" --unbundle --type=o --input="$1" --targets="hipv4-amdgcn-amd-amdhsa--$2" --output="$3.elf"
  "$llvm/llvm-objdump" -d --demangle --mcpu="$2" "$3.elf" > "$3"
}
for arch in gfx1030 gfx1100; do
  disassemble "$(find "$out/kcache" -path "*hip-$arch-*" -name mmvq_12_nc1.co)" $arch "$out/temper.$arch.s"
done
disassemble "$out/unit.gfx1030.fatbin" gfx1030 "$out/upstream.gfx1030.s"
disassemble "$out/temper-mmvq-q4_k-1.cu.gfx1100.co" gfx1100 "$out/upstream.gfx1100.s"
python3 - "$out" <<'EOF'
import collections, re, sys
def dots(path, kernel):  # {(nwarps, rows): Counter of dot instructions}
    out, cur = collections.defaultdict(collections.Counter), None
    for line in open(path):
        if re.match(r"^[0-9a-f]+ <", line):
            m = re.search(kernel, line)
            cur = (int(m.group(1)), int(m.group(2))) if m else None
        elif cur and (d := re.search(r"\s(v_dot\w+)", line)):
            out[cur][d.group(1)] += 1
    return out
temper_k = r"temper::kernels::mmvq<12u, 1, (\d+), (\d+), \(temper::mmvq::KernelVariant\)0>"
upstream_k = r"mul_mat_vec_q<\(ggml_type\)12, 1, false, false, false, (\d+), (\d+)(?:, 0)?>"  # hook v6: temper_pipe 0 (HIP: never pipelined)
for arch, dot in (("gfx1030", "v_dot4c_i32_i8_e32"), ("gfx1100", "v_dot4_i32_iu8")):
    t, u = dots(f"{sys.argv[1]}/temper.{arch}.s", temper_k), dots(f"{sys.argv[1]}/upstream.{arch}.s", upstream_k)
    # The grid's 27 ncols-1 configs at wave 32 in Temper's RDNA code; the hooked HIP build has the 24
    # that launch at wave 64 too (one HIP build serves GCN/CDNA): no nwarps 32.
    assert len(u) == 24 and set(t) - set(u) == {(32, 1), (32, 2), (32, 4)} and set(u) <= set(t), \
        f"{arch}: configs {sorted(t)} vs {sorted(u)}"
    for c in sorted(u):
        assert set(u[c]) == {dot} and t[c] == u[c], f"{arch} {c}: Temper {dict(t[c])}, upstream {dict(u[c])}"
    print(f"{arch}: q4_K ncols 1, all 24 configs of the hooked HIP build: Temper's kernels and the hooked upstream ones use", dot,
          "equally often; nwarps 4, rows 1/2/4/8/16:", [u[(4, r)][dot] for r in (1, 2, 4, 8, 16)])
EOF
"$temper" engine patch "$tree" --undo
cmp -s "$tree/src/ggml-cuda/mmvq.cu" "$upstream/src/ggml-cuda/mmvq.cu"
echo "patched mmvq.cu, its units and temper-probe.cu compile with $(echo "$version" | grep -m 1 'clang version') for gfx1030 and gfx1100${rdna3_extra:+ (gfx1100: $rdna3_extra)}${probe_extra:+ (probe: $probe_extra)}; undone"
