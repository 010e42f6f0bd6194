#!/usr/bin/env python3
"""Issue 29 experiment, on a copy of a hooked llama.cpp tree only (bench/tune_device.sh, EXP_PIPELINE_ALL=1):
hook v7 pipelines plain tuned launches; its *_pipelined entries cannot reach the two launches the
dense profile runs most — a layer's same-input group (q, k, v) and gate/up approved as its unfused
pair. This lets the measuring switch reach them: with TEMPER_MMVQ_PIPELINE=1 (override 1), the
unfused pair's two GEMVs run their pipelined twins, and each block of Temper's group kernel lets the
next kernel launch and prefetches its member's q4_K/q6_K rows into L2 before it waits, as the
pipelined mmvq does. Without the override the patched tree runs as before. Not a product change: if
it pays, pipelined group and pair launches become profile kinds (hook v8).
Usage: exp_pipeline_all_patch.py GGML_CUDA_DIR (the patched tree's ggml/src/ggml-cuda)"""
import os
import sys

root = sys.argv[1]
edits = {
    "temper-mmvq.cuh": [(
        "    int count; const void * vy; uint32_t ncols_x; uint32_t stride_col_y; int warp_size; cudaStream_t stream;\n};",
        "    int count; const void * vy; uint32_t ncols_x; uint32_t stride_col_y; int warp_size; cudaStream_t stream;\n"
        "    int pipe;  // exp_pipeline_all_patch: 1 pipelines the group launch\n};")],
    "temper-mmvq-group.cuh": [
        ("static __global__ void temper_mmvq_group(const temper_mmvq_group_members m, const void * vy, const uint32_t ncols_x,\n"
         "                                         const uint32_t stride_col_y) {",
         "static __global__ void temper_mmvq_group(const temper_mmvq_group_members m, const void * vy, const uint32_t ncols_x,\n"
         "                                         const uint32_t stride_col_y, const int pipe) {"),
        ("#if defined(GGML_CUDA_USE_PDL)\n    ggml_cuda_pdl_sync();  // the activations come from the quantizer launched just before",
         r"""#if defined(GGML_CUDA_USE_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= GGML_CUDA_CC_HOPPER
    if (pipe) {  // exp_pipeline_all_patch
        ggml_cuda_pdl_lc();
        const ggml_type t = type_a != type_b && m.is_b[member] ? type_b : type_a;
        const uint32_t block_bytes = t == GGML_TYPE_Q4_K ? 144 : t == GGML_TYPE_Q6_K ? 210 : 0;
        const uint32_t blocks_per_row = ncols_x / 256, row_bytes = blocks_per_row * block_bytes;
        const int rows_here = min(rows, m.nrows[member] - row0);
        if (threadIdx.x == 0 && threadIdx.y == 0 && block_bytes != 0 && m.stride_row_x[member] == blocks_per_row &&
            row_bytes % 16 == 0 && rows_here > 0) {
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"((const char *) m.vx[member] + (size_t) row0 * row_bytes),
                         "r"((uint32_t) rows_here * row_bytes) : "memory");
        }
    }
#endif
#if defined(GGML_CUDA_USE_PDL)
    ggml_cuda_pdl_sync();  // the activations come from the quantizer launched just before"""),
        ("m, g.vy, g.ncols_x, g.stride_col_y);", "m, g.vy, g.ncols_x, g.stride_col_y, g.pipe);"),
    ],
    "temper-mmvq-runtime.cu": [
        ("    g.stream = stream;\n    launch(g);",
         "    g.stream = stream;\n    g.pipe = g_pipeline_override.load() == 1;  // exp_pipeline_all_patch\n"
         "    if (g.pipe) ++g_pipelined_launches;\n    launch(g);"),
        ("            const Instance * in = find_instance(type, ncols_dst, choice.nwarps, choice.rows);\n"
         "            if (in && launch_unfused(*in, a)) {",
         "            const Instance * in = find_instance(type, ncols_dst, choice.nwarps, choice.rows);\n"
         "            if (const Instance * p = pipelined_instance(type, ncols_dst, choice.nwarps, choice.rows); in && p) {\n"
         "                in = p;  // exp_pipeline_all_patch: the pair's two GEMVs pipelined\n"
         "                g_pipelined_launches += 2;\n"
         "            }\n"
         "            if (in && launch_unfused(*in, a)) {"),
    ],
}
for name, pairs in edits.items():
    path = os.path.join(root, name)
    text = open(path, encoding="utf-8").read()
    if "exp_pipeline_all_patch" in text:
        print(f"exp_pipeline_all_patch: {path}: already patched")
        continue
    for old, new in pairs:
        count = text.count(old)
        # The group launch passes its arguments twice (PDL launch and plain launch); the rest once.
        if count == 0 or (count != 1 and not old.startswith("m, g.vy")):
            sys.exit(f"exp_pipeline_all_patch: {path}: expected text found {count} times: {old.splitlines()[0]!r}")
        text = text.replace(old, new)
    open(path, "w", encoding="utf-8").write(text)
    print(f"exp_pipeline_all_patch: {path}: patched")
