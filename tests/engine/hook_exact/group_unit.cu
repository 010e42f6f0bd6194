// Compiled twice by hook_exact_test.sh: as Temper's group kernel and, with TEMPER_GROUP_GENERIC_DOT,
// with ggml's own vec_dot for every type. TEMPER_EXACT_RUN names the entry point of each.
#define TEMPER_MMVQ_KERNELS_ONLY
#define TEMPER_EXACT_PASTE2(a, b) a##b
#define TEMPER_EXACT_PASTE(a, b) TEMPER_EXACT_PASTE2(a, b)
#define get_mmvq_mmid_max_batch TEMPER_EXACT_PASTE(TEMPER_EXACT_RUN, _unused_mmid_max_batch)
#define ggml_cuda_should_use_mmvq TEMPER_EXACT_PASTE(TEMPER_EXACT_RUN, _unused_should_use_mmvq)
#include "mmvq.cu"
#include "temper-mmvq-group.cuh"

namespace {
template <ggml_type b, int ncols, int wi = 0, int ri = 0>
bool launch(const temper_mmvq_group_args & g, int nwarps, int rows) {
    if constexpr (wi < 3) {
        if constexpr (ri < 3) {
            constexpr int w = temper_group_grid_nwarps[wi], r = temper_group_grid_rows[ri];
            if (w == nwarps && r == rows) {
                temper_mmvq_group_launch<GGML_TYPE_Q4_K, b, ncols, w, r>(g);
                return true;
            }
            return launch<b, ncols, wi, ri + 1>(g, nwarps, rows);
        } else {
            return launch<b, ncols, wi + 1, 0>(g, nwarps, rows);
        }
    }
    return false;
}
template <ggml_type b>
bool launch_width(const temper_mmvq_group_args & g, int ncols, int nwarps, int rows) {
    switch (ncols) {
        case 1: return launch<b, 1>(g, nwarps, rows);
        case 2: return launch<b, 2>(g, nwarps, rows);
        case 3: return launch<b, 3>(g, nwarps, rows);
        case 4: return launch<b, 4>(g, nwarps, rows);
        default: return false;
    }
}
}  // namespace

// A group whose first type is q4_K; the second is q4_K or q6_K (is_b members).
bool TEMPER_EXACT_RUN(const temper_mmvq_group_args & g, bool b_is_q6_K, int ncols, int nwarps, int rows) {
    return b_is_q6_K ? launch_width<GGML_TYPE_Q6_K>(g, ncols, nwarps, rows) : launch_width<GGML_TYPE_Q4_K>(g, ncols, nwarps, rows);
}

// mul_mat_vec_q's tuned fused launches (one column; a bias, a gate or both): as the hook compiles them
// and, with TEMPER_MMVQ_GATE_IN_LOOP, with the stock loop; with bias_only, hook v14's twin compiled
// without the gate (temper_pipe bit 4).
namespace {
template <ggml_type type, int wi = 0, int ri = 0>
bool launch_fused(const temper_mmvq_args & a, int nwarps, int rows, bool bias_only) {
    constexpr int ws[] = {1, 2, 4, 8}, rs[] = {1, 2, 4, 8};
    if constexpr (wi < 4) {
        if constexpr (ri < 4) {
            constexpr int w = ws[wi], r = rs[ri];
            if (w == nwarps && r == rows) {
                const dim3 block_nums((a.nrows_x + r - 1) / r, a.nchannels_dst, a.nsamples_dst), block_dims(a.warp_size, w, 1);
                if (bias_only) {
                    mul_mat_vec_q<type, 1, true, false, false, w, r, 4><<<block_nums, block_dims, 0, a.stream>>>(
                        a.vx, a.vy, a.ids, *a.fusion, a.dst, a.ncols_x, a.nchannels_y, a.stride_row_x, a.stride_col_y, a.stride_col_dst,
                        a.channel_ratio, a.stride_channel_x, a.stride_channel_y, a.stride_channel_dst, a.sample_ratio, a.stride_sample_x,
                        a.stride_sample_y, a.stride_sample_dst, a.ids_stride);
                    return true;
                }
                mul_mat_vec_q_switch_fusion<type, 1, false, false, w, r>(
                    a.vx, a.vy, a.ids, *a.fusion, a.dst, a.ncols_x, a.nchannels_y, a.stride_row_x, a.stride_col_y, a.stride_col_dst,
                    a.channel_ratio, a.stride_channel_x, a.stride_channel_y, a.stride_channel_dst, a.sample_ratio, a.stride_sample_x,
                    a.stride_sample_y, a.stride_sample_dst, block_nums, block_dims, 0, a.ids_stride, a.stream);
                return true;
            }
            return launch_fused<type, wi, ri + 1>(a, nwarps, rows, bias_only);
        } else {
            return launch_fused<type, wi + 1, 0>(a, nwarps, rows, bias_only);
        }
    }
    return false;
}
}  // namespace

bool TEMPER_EXACT_PASTE(TEMPER_EXACT_RUN, _fused)(const temper_mmvq_args & a, bool q6_K, int nwarps, int rows, bool bias_only) {
    return q6_K ? launch_fused<GGML_TYPE_Q6_K>(a, nwarps, rows, bias_only) : launch_fused<GGML_TYPE_Q4_K>(a, nwarps, rows, bias_only);
}
