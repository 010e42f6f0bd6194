#pragma once
// Temper's tuning hook for mmvq (written into this tree by `temper engine patch`; docs/engine.md in
// Temper). mmvq.cu includes this after its own headers. The kernel mul_mat_vec_q takes two more
// template parameters, temper_nwarps and temper_rows (0 = upstream's table, so every stock
// instantiation is unchanged); generated translation units temper-mmvq-<type>-<ncols>.cu
// instantiate the tuning grid; at run time a choice per exact (type, N, K, ncols) — from a Temper
// profile (TEMPER_PROFILE, else the default path) or from temper-probe — launches one of them.
// Shapes without a choice run stock.
#include "common.cuh"

// The hook version; `temper engine patch` writes the number (kHookVersion in Temper).
#define TEMPER_MMVQ_HOOK_VERSION TEMPER_HOOK_VERSION_WRITTEN_BY_PATCH
// Which of ggml's mmvq/mmq decisions this tree's mmvq.cu has wrapped (hook v4; `temper engine patch`
// writes it): bit 0 ggml_cuda_should_use_mmvq (MUL_MAT), bit 1 get_mmvq_mmid_max_batch (MUL_MAT_ID).
#define TEMPER_MMVQ_PATH_HOOKS TEMPER_PATH_HOOKS_WRITTEN_BY_PATCH
// Which of ggml-cuda.cu's places this tree has patched for same-input groups (hook v5; `temper engine
// patch` writes it): bit 0 the graph evaluation launches groups, bit 1 graph_optimize orders their runs.
#define TEMPER_MMVQ_GROUP_HOOKS TEMPER_GROUP_HOOKS_WRITTEN_BY_PATCH
// Whether mul_mat_vec_q takes a third parameter, temper_pipe (hook v6; `temper engine patch` writes
// it): 1 where the kernel waits for the previous one (ggml_cuda_pdl_sync), else 0.
#define TEMPER_MMVQ_PIPELINE_HOOKS TEMPER_PIPELINE_HOOKS_WRITTEN_BY_PATCH

// Which places this tree has patched so that a norm writes its GEMVs' q8_1 activations (hook v8;
// `temper engine patch` writes it): bit 0 the graph evaluation runs the norm, bit 1 mmvq reads its copy.
#define TEMPER_MMVQ_NORM_HOOKS TEMPER_NORM_HOOKS_WRITTEN_BY_PATCH

// A pipelined launch (hook v6). temper_pipe bit 1: each block lets the next kernel launch as it starts
// (as ggml's quantizer does), so that kernel's launch overlaps this one's tail instead of following
// it; bit 2: thread 0 asks L2 for the block's weight rows (and a fused launch's gate rows) in one
// bulk prefetch before the block waits for the previous kernel — the weights never depend on it.
// Expert launches are not prefetched: their rows depend on the ids the previous kernel wrote.
// The generated units give each type's block bytes (0: no prefetch).
template <ggml_type type> struct temper_block_bytes { static constexpr int value = 0; };
#if TEMPER_MMVQ_PIPELINE_HOOKS
template <ggml_type type, int pipe, bool has_fusion>
static __device__ __forceinline__ void temper_mmvq_pipeline(
        const void * vx, const void * gate, const int32_t * ids, const int tid, const int row0, const int blocks_per_row_x,
        const int rows, const uint32_t stride_row_x, const uint32_t channel_dst, const uint3 channel_ratio,
        const uint32_t stride_channel_x, const uint3 sample_ratio, const uint32_t stride_sample_x) {
#if defined(GGML_CUDA_USE_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= GGML_CUDA_CC_HOPPER
    if constexpr ((pipe & 1) != 0) {
        ggml_cuda_pdl_lc();
    }
    constexpr int block_bytes = temper_block_bytes<type>::value;
    if constexpr ((pipe & 2) != 0 && block_bytes > 0) {
        const uint32_t row_bytes = (uint32_t) blocks_per_row_x * block_bytes;
        // Contiguous rows in 16-byte multiples (the bulk prefetch's unit); the last block asks for rows
        // past the matrix's end as mmvq itself reads them.
        if (ids == nullptr && tid == 0 && stride_row_x == (uint32_t) blocks_per_row_x && row_bytes % 16 == 0) {
            const size_t first = ((size_t) fastdiv(blockIdx.z, sample_ratio) * stride_sample_x +
                                  (size_t) fastdiv(channel_dst, channel_ratio) * stride_channel_x + (size_t) row0 * stride_row_x) *
                                 block_bytes;
            const uint32_t bytes = (uint32_t) rows * row_bytes;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"((const char *) vx + first), "r"(bytes) : "memory");
            if constexpr (has_fusion) {
                if (gate != nullptr) {
                    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"((const char *) gate + first), "r"(bytes) : "memory");
                }
            }
        }
    }
#else
    GGML_UNUSED_VARS(vx, gate, ids, tid, row0, blocks_per_row_x, rows, stride_row_x, channel_dst, channel_ratio, stride_channel_x,
                     sample_ratio, stride_sample_x);
#endif
}
#endif

// Hook v13: a tuned fused launch (mul_mat_vec_q with has_fusion: a gate, a bias or both, as ggml fuses a
// down or o projection with its residual add) runs its k loop without testing use_gate in each row's
// step, so the step's loads of all rows can issue together. With HIP only where TEMPER_MMVQ_GATE_ONCE
// asks: on gfx1030 the two loops cost 24-33 VGPRs and 2-4 waves per SIMD (static, not measured;
// docs/perf-notes.md). TEMPER_MMVQ_GATE_IN_LOOP: the stock loop everywhere (hook_exact_test's reference).
#if defined(TEMPER_MMVQ_GATE_IN_LOOP) || (defined(GGML_USE_HIP) && !defined(TEMPER_MMVQ_GATE_ONCE))
constexpr bool temper_mmvq_gate_once = false;
#else
constexpr bool temper_mmvq_gate_once = true;
#endif

// Everything mmvq's launcher knows at the point where it picks a kernel, so a tuned launch is made
// exactly as the stock one would be (same strides, same fusion arguments, same launch path).
struct temper_mmvq_args {
    const void * vx; const void * vy; const int32_t * ids; const ggml_cuda_mm_fusion_args_device * fusion; float * dst;
    uint32_t ncols_x; uint3 nchannels_y; uint32_t stride_row_x; uint32_t stride_col_y; uint32_t stride_col_dst;
    uint3 channel_ratio; uint32_t stride_channel_x; uint32_t stride_channel_y; uint32_t stride_channel_dst;
    uint3 sample_ratio; uint32_t stride_sample_x; uint32_t stride_sample_y; uint32_t stride_sample_dst;
    int nrows_x; int nchannels_dst; int nsamples_dst; int warp_size; uint32_t ids_stride; cudaStream_t stream;
};

typedef void (*temper_mmvq_launch_fn)(const temper_mmvq_args & a);
// registers, static shared bytes, local bytes, max threads per block, blocks per SM at that block size
typedef void (*temper_mmvq_attr_fn)(int out[5]);

// Called by the generated registry for every compiled (type, ncols, nwarps, rows) instantiation; hook v6
// registers each one-column pipelined twin through the second form, with its pipeline bits (> 0).
void temper_mmvq_register(int type, int ncols, int nwarps, int rows, temper_mmvq_launch_fn launch, temper_mmvq_attr_fn attr);
void temper_mmvq_register_pipelined(int type, int ncols, int nwarps, int rows, int pipe, temper_mmvq_launch_fn launch,
                                    temper_mmvq_attr_fn attr);
// Hook v14: the generated units register each one-column config's bias-only twin (mul_mat_vec_q compiled
// without its gate, temper_pipe bit 4), plain (pipe 0) and pipelined (pipe > 0); NVIDIA only.
void temper_mmvq_register_bias_only(int type, int nwarps, int rows, int pipe, temper_mmvq_launch_fn launch);
// mmvq's launcher asks first; true: a tuned instantiation was launched and the stock one must not be.
bool temper_mmvq_try_launch(int type, int ncols_dst, const temper_mmvq_args & a);
// mmvq's launch helper reports every launch it makes (stock or tuned), so the probe can read back
// which config the engine really launched.
void temper_mmvq_note_launch(int nwarps, int nblocks_x);

// The wrapped decisions ask these: for MUL_MAT at ne11 columns whether mmvq runs (`stock`: ggml's
// answer), for MUL_MAT_ID the mmvq batch cap (never above ggml's `stock_cap`: the MoE kernel's launch
// bounds are compiled from ggml's own cap).
bool temper_mmvq_use_mmvq(int type, long long ne11, bool stock);
int temper_mmvq_mmid_max_batch(int type, int stock_cap);

// Same-input groups (hook v5, temper-mmvq-group.cuh): 2..4 MUL_MATs reading the same q8_1
// activations vy in one launch. Member i: weights vx[i] (nrows[i] rows, stride_row_x[i] blocks apart),
// output dst[i] (columns stride_col_dst[i] floats apart), is_b[i]: its type is the group's second one.
struct temper_mmvq_group_args {
    const void * vx[4]; float * dst[4]; int nrows[4]; uint32_t stride_row_x[4]; uint32_t stride_col_dst[4]; int is_b[4];
    int count; const void * vy; uint32_t ncols_x; uint32_t stride_col_y; int warp_size; cudaStream_t stream;
};
typedef void (*temper_mmvq_group_fn)(const temper_mmvq_group_args & g);
// Called by the generated registry for every compiled (type A, type B, ncols, nwarps, rows) group kernel.
void temper_mmvq_register_group(int type_a, int type_b, int ncols, int nwarps, int rows, temper_mmvq_group_fn launch);

// quantize_q8_1's arithmetic for one value v of a warp's 32 lanes holding one q8_1 block (32 consecutive
// columns of y, col being this lane's): what the hook's producers of q8_1 activations write.
static __device__ __forceinline__ void temper_store_q8_1(block_q8_1 * y, int col, float v) {
    const float amax = warp_reduce_max<QK8_1>(fabsf(v));
    const float sum = warp_reduce_sum<QK8_1>(v);
    const float d = amax / 127.0f;
    y[col / QK8_1].qs[col % QK8_1] = amax == 0.0f ? 0 : roundf(v / d);
    if (col % QK8_1 == 0) y[col / QK8_1].ds = make_half2(d, sum);
}

// Hook v10: a fused expert gate/up at one column as one launch that also writes the q8_1 copy of its
// GLU output (q8: nchannels_dst x k_padded / QK8_1 blocks; arrived: as many counters, all 0, which the
// launch leaves 0), registered per type, nwarps and rows by the generated group units
// (temper-mmvq-group.cuh).
typedef void (*temper_mmvq_experts_fn)(const temper_mmvq_args & a, void * q8, int * arrived, int k_padded, int geglu);
void temper_mmvq_register_experts_glu_q8_1(int type, int nwarps, int rows, temper_mmvq_experts_fn launch);

// The q8_1 copy of src1 (k_padded floats a column) a norm wrote for this node's mmvq (hook v8), or null:
// mmvq quantizes as it would.
const void * temper_mmvq_norm_q8_1(const ggml_tensor * src1, long long k_padded);

// The probe's interface (temper-probe links this tree statically and includes the same header).
#include "temper-mmvq-api.h"
