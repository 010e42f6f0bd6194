#!/bin/sh
# The hooked mmvq.cu compiles: `temper engine patch --kernel-set ci` on a copy of ggml d99724f
# ($TEMPER_UPSTREAM/ggml-d99724f, read when the test runs), then nvcc for sm_90 on the patched
# mmvq.cu, one generated instantiation unit, the registry and the run time (compile only, as ggml's
# own CMake would, with its CUDA flags), and the run time's profile reader on its own; hook v4's
# mmvq/mmq wrappers are checked in the objects (both in d99724f; only MUL_MAT_ID's cap in 7180759,
# whose patched mmvq.cu is compiled too). Hook v5: the patched ggml-cuda.cu and a same-input group unit
# compile too, the group calls link up, and undo restores both files byte for byte. Hook v6: d99724f's
# one-column unit compiles its pipelined instantiations, 7180759 gets none. Exit 77 (skipped) without nvcc or the tree.
# Usage: TEMPER_UPSTREAM=DIR hook_nvcc_test.sh TEMPER NVCC OUT_DIR SOURCE_DIR
set -eu
temper=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") nvcc=$2 out=$3 source=$4
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then echo "SKIPPED: no nvcc"; exit 77; fi
. "$(dirname "$0")/patched_upstream.sh"
rm -rf "$out"
patched_upstream "$temper" "$out" ggml-7180759
old_tree=$tree
patched_upstream "$temper" "$out" ggml-d99724f
cd "$tree"
flags="-c -std=c++17 -O3 -arch=sm_90 -use_fast_math -extended-lambda -DNDEBUG -DGGML_CUDA_PEER_MAX_BATCH_SIZE=128
       -DGGML_CUDA_NO_FA -Iinclude -Isrc -Isrc/ggml-cuda"
pids=""
for f in mmvq.cu temper-mmvq-q4_k-1.cu temper-mmvq-registry.cu temper-mmvq-runtime.cu temper-mmvq-group-q4_k.cu ggml-cuda.cu; do
  "$nvcc" $flags "src/ggml-cuda/$f" -o "$out/$f.o" > "$out/$f.log" 2>&1 &
  pids="$pids $!"
done
# The runtime's profile reader on its own, as plain C++ under nvcc (no ggml, no CUDA header needed).
echo '#include "temper-mmvq-profile.h"' > "$out/profile-reader.cu"
"$nvcc" -c -std=c++17 -arch=sm_90 -Isrc/ggml-cuda "$out/profile-reader.cu" -o "$out/profile-reader.o" > "$out/profile-reader.log" 2>&1 &
pids="$pids $!"
(cd "$old_tree" && "$nvcc" $flags src/ggml-cuda/mmvq.cu -o "$out/mmvq-7180759.o" > "$out/mmvq-7180759.log" 2>&1) &
pids="$pids $!"
mkdir -p "$out/probe"
cp "$source/resources/engine/temper-probe.cu" "$source/hook/src/temper-mmvq-api.h" "$source/core/engine/probe_protocol.h" "$out/probe/"
"$nvcc" -c -std=c++17 -arch=sm_90 -Iinclude -I"$out/probe" "$out/probe/temper-probe.cu" -o "$out/probe.o" > "$out/probe.log" 2>&1 &
pids="$pids $!"
rc=0
for p in $pids; do wait "$p" || rc=1; done
for f in mmvq.cu temper-mmvq-q4_k-1.cu temper-mmvq-registry.cu temper-mmvq-runtime.cu temper-mmvq-group-q4_k.cu ggml-cuda.cu; do
  if [ ! -s "$out/$f.o" ]; then echo "FAILED: nvcc $f"; grep -m 5 -i error "$out/$f.log" || tail -n 20 "$out/$f.log"; fi
done
[ -s "$out/probe.o" ] || { echo "FAILED: nvcc temper-probe.cu"; grep -m 5 -i error "$out/probe.log"; }
[ -s "$out/profile-reader.o" ] || { echo "FAILED: nvcc temper-mmvq-profile.h"; grep -m 5 -i error "$out/profile-reader.log"; }
[ -s "$out/mmvq-7180759.o" ] || { echo "FAILED: nvcc 7180759's mmvq.cu"; grep -m 5 -i error "$out/mmvq-7180759.log"; }
[ "$rc" -eq 0 ] || exit 1
# Hook v4: ggml's decisions are Temper's wrappers, which call the run time; 7180759 wraps the cap only.
grep -q '^#define TEMPER_MMVQ_PATH_HOOKS 3$' src/ggml-cuda/temper-mmvq.cuh
grep -q '^#define TEMPER_MMVQ_PATH_HOOKS 2$' "$old_tree/src/ggml-cuda/temper-mmvq.cuh"
nm -C "$out/mmvq.cu.o" | grep -q " T ggml_cuda_should_use_mmvq("
nm -C "$out/mmvq.cu.o" | grep -q " U temper_mmvq_use_mmvq("
nm -C "$out/mmvq.cu.o" | grep -q " U temper_mmvq_mmid_max_batch("
nm -C "$out/mmvq-7180759.o" | grep -q " U temper_mmvq_mmid_max_batch("
if nm -C "$out/mmvq-7180759.o" | grep -q "temper_mmvq_use_mmvq"; then echo "FAILED: 7180759's mmvq.cu calls temper_mmvq_use_mmvq"; exit 1; fi
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_use_mmvq("
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_set_path_override"
# Hook v5: ggml-cuda.cu calls the group hooks, which the run time defines; the group unit registers its grid.
grep -q '^#define TEMPER_MMVQ_GROUP_HOOKS 3$' src/ggml-cuda/temper-mmvq.cuh
grep -q '^#define TEMPER_MMVQ_GROUP_HOOKS 3$' "$old_tree/src/ggml-cuda/temper-mmvq.cuh"
nm -C "$out/ggml-cuda.cu.o" | grep -q " U temper_mmvq_try_group("
nm -C "$out/ggml-cuda.cu.o" | grep -q " U temper_mmvq_group_order("
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_try_group("
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_group_order("
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_register_group("
nm -C "$out/temper-mmvq-group-q4_k.cu.o" | grep -q " T temper_mmvq_register_group_q4_k()"
nm -C "$out/temper-mmvq-registry.cu.o" | grep -q " U temper_mmvq_register_group_q4_k()"
# Hook v10: the same-type group unit registers its fused expert gate/up kernels that write the q8_1 copy.
nm -C "$out/temper-mmvq-group-q4_k.cu.o" | grep -q " U temper_mmvq_register_experts_glu_q8_1("
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_register_experts_glu_q8_1("
# Hook v6: d99724f's kernel waits for its predecessor, so its one-column unit registers pipelined
# instantiations (the bulk L2 prefetch assembled for sm_90 above); 7180759's has no such wait.
grep -q '^#define TEMPER_MMVQ_PIPELINE_HOOKS 1$' src/ggml-cuda/temper-mmvq.cuh
grep -q '^#define TEMPER_MMVQ_PIPELINE_HOOKS 0$' "$old_tree/src/ggml-cuda/temper-mmvq.cuh"
nm -C "$out/temper-mmvq-q4_k-1.cu.o" | grep -q " U temper_mmvq_register_pipelined("
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q " T temper_mmvq_set_pipeline_override"
"$temper" engine patch "$old_tree" --undo
cmp -s "$old_tree/src/ggml-cuda/mmvq.cu" "$TEMPER_UPSTREAM/ggml-7180759/src/ggml-cuda/mmvq.cu"
cmp -s "$old_tree/src/ggml-cuda/ggml-cuda.cu" "$TEMPER_UPSTREAM/ggml-7180759/src/ggml-cuda/ggml-cuda.cu"
# The units define the hook's symbols once: the tuned launchers, the registry, the run time.
nm -C "$out/temper-mmvq-registry.cu.o" | grep -q "temper_mmvq_register_all()"
nm -C "$out/temper-mmvq-q4_k-1.cu.o" | grep -q "temper_mmvq_register_q4_k_1()"
nm -C "$out/temper-mmvq-runtime.cu.o" | grep -q "temper_mmvq_try_launch"
"$temper" engine patch "$tree" --undo
cmp -s "$tree/src/ggml-cuda/mmvq.cu" "$TEMPER_UPSTREAM/ggml-d99724f/src/ggml-cuda/mmvq.cu"
cmp -s "$tree/src/ggml-cuda/ggml-cuda.cu" "$TEMPER_UPSTREAM/ggml-d99724f/src/ggml-cuda/ggml-cuda.cu"
echo "patched mmvq.cu and ggml-cuda.cu (d99724f, 7180759) and d99724f's units compile for sm_90; undone"
