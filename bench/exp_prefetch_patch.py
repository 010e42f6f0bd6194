#!/usr/bin/env python3
"""Issue 29 experiment, on a copy of a hooked llama.cpp tree only (bench/tune_device.sh's pfexp stage):
adds to mmvq.cu's mul_mat_vec_q, compiled only where TEMPER_EXP_PREFETCH is defined (bit 0: each
block asks L2 for its q4_K/q6_K weight rows, and a fused launch's gate rows, with one bulk prefetch
before its dependent-launch wait; bit 1: the block lets the next kernel launch as it starts), the two
arms bench/prefetch_ab.cu measured in Temper's harness. Plain launches only (an expert launch's rows
depend on the ids the previous kernel wrote). Not a product change: a build without the macro is the
hooked kernel unchanged."""
import sys

path = sys.argv[1]
text = open(path, encoding="utf-8").read()
anchor = "    ggml_cuda_pdl_sync();\n    channel_x  = ncols_dst == 1 && ids ?"
if "TEMPER_EXP_PREFETCH" in text:  # a second pfexp stage in the same lease
    print(f"exp_prefetch_patch: {path}: already patched")
    sys.exit(0)
if text.count(anchor) != 1:
    sys.exit(f"exp_prefetch_patch: {path}: the wait before mul_mat_vec_q's channel_x is not there exactly once")
insert = r"""#if defined(TEMPER_EXP_PREFETCH) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr ((TEMPER_EXP_PREFETCH & 2) != 0) {
        asm volatile("griddepcontrol.launch_dependents;");
    }
    if constexpr ((TEMPER_EXP_PREFETCH & 1) != 0 && (type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q6_K)) {
        constexpr uint32_t block_bytes = type == GGML_TYPE_Q4_K ? 144 : 210;
        const uint32_t row_bytes = (uint32_t) blocks_per_row_x * block_bytes;
        if (ids == nullptr && tid == 0 && row_bytes % 16 == 0) {
            const size_t first = ((size_t) fastdiv(blockIdx.z, sample_ratio) * stride_sample_x +
                                  (size_t) fastdiv(channel_dst, channel_ratio) * stride_channel_x + (size_t) row0 * stride_row_x) * block_bytes;
            const uint32_t bytes = rows_per_cuda_block * row_bytes;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"((const char *) vx + first), "r"(bytes) : "memory");
            if constexpr (has_fusion) {
                if (fusion.gate != nullptr) {
                    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"((const char *) fusion.gate + first), "r"(bytes) : "memory");
                }
            }
        }
    }
#endif
"""
text = text.replace(anchor, insert + anchor)
open(path, "w", encoding="utf-8").write(text)
print(f"exp_prefetch_patch: {path}: mul_mat_vec_q prefetches under TEMPER_EXP_PREFETCH")
