#pragma once
// Temper's same-input group kernel (hook v5; written into this tree by `temper engine patch`,
// docs/engine.md in Temper). 2..4 MUL_MATs that read the same activations (a layer's q, k and v) run
// as one launch: the grid's blocks are split between the members, each block computes
// rows_per_block rows of its member with mmvq's own per-type dot product (vec_dot_*_q8_1 on the
// q8_1 activations ggml's quantizer wrote once) and reduces like mul_mat_vec_q. Members have at most
// two weight types (A, the first member's, and B). Included by the generated units
// temper-mmvq-group-<a>[-<b>].cu after mmvq.cu (TEMPER_MMVQ_KERNELS_ONLY), which gives it
// get_vec_dot_q_cuda and get_vdr_mmvq.
#include "temper-mmvq.cuh"

// The group grid: nwarps x rows_per_block, batch widths 1..4.
constexpr int temper_group_grid_nwarps[] = {2, 4, 8};
constexpr int temper_group_grid_rows[] = {1, 2, 4};

struct temper_mmvq_group_members {
    const void * vx[4];
    float * dst[4];
    int nrows[4];
    int block_end[4];  // cumulative block counts: member m owns blocks [block_end[m-1], block_end[m])
    uint32_t stride_row_x[4];
    uint32_t stride_col_dst[4];
    int is_b[4];       // the member's weights are of type B
};

// Where the group kernel runs q4_K through temper_group_q4_K_step. With HIP only from two columns on: at
// one column gfx1030's kernels grew by 16 VGPRs at 4 rows a block for no fewer instructions (static, not
// measured; docs/perf-notes.md). TEMPER_GROUP_GENERIC_DOT: nowhere (the reference of hook_exact_test).
#if defined(TEMPER_GROUP_GENERIC_DOT)
template <int ncols> constexpr bool temper_group_q4_K_dots = false;
#elif defined(GGML_USE_HIP)
template <int ncols> constexpr bool temper_group_q4_K_dots = ncols > 1;
#else
template <int ncols> constexpr bool temper_group_q4_K_dots = true;
#endif

// One step of rows x ncols q4_K dot products: ggml's vec_dot_q4_K_q8_1 for every (column, row), with
// the work of one side done once: a row's quants, scales and mins for all columns, a column's q8_1
// values and their sums for all rows. Products of integers below 2^24 convert exactly, so
// (float) dot * (float) scale is the stock (float) (dot * scale), and every sum is the stock one, in
// the stock order: the results are mmvq's bit for bit.
template <int ncols, int rows>
static __device__ __forceinline__ void temper_group_q4_K_step(const void * vx, const block_q8_1 * y, const int (&row_block)[rows],
                                                              const int kbx, const int kby, const int iqs, const uint32_t stride_col_y,
                                                              float (&tmp)[ncols][rows]) {
    const int bq8_offset = QR4_K * ((iqs / 2) / (QI8_1 / 2));
    const int j = bq8_offset / 2;
    int v[rows][2 * QR4_K];
    float sc[rows][QR4_K], mn[rows][QR4_K];
    float2 dm[rows];
#pragma unroll
    for (int r = 0; r < rows; ++r) {
        const block_q4_K * b = (const block_q4_K *) vx + row_block[r] + kbx;
        const int * q4 = (const int *) (b->qs + 16 * bq8_offset + 4 * ((iqs / 2) % 4));
        const int v0 = q4[0], v1 = q4[4];
        const uint16_t * scales = (const uint16_t *) b->scales;
        uint16_t aux[2];
        if (j < 2) {
            aux[0] = scales[j + 0] & 0x3f3f;
            aux[1] = scales[j + 2] & 0x3f3f;
        } else {
            aux[0] = ((scales[j + 2] >> 0) & 0x0f0f) | ((scales[j - 2] & 0xc0c0) >> 2);
            aux[1] = ((scales[j + 2] >> 4) & 0x0f0f) | ((scales[j - 0] & 0xc0c0) >> 2);
        }
        const uint8_t * s8 = (const uint8_t *) aux;
#pragma unroll
        for (int i = 0; i < QR4_K; ++i) {
            v[r][2 * i + 0] = (v0 >> (4 * i)) & 0x0F0F0F0F;
            v[r][2 * i + 1] = (v1 >> (4 * i)) & 0x0F0F0F0F;
            sc[r][i] = s8[i];
            mn[r][i] = s8[2 + i];
        }
        dm[r] = __half22float2(b->dm);
    }
#pragma unroll
    for (int c = 0; c < ncols; ++c) {
        const block_q8_1 * b8 = y + c * stride_col_y + kby + bq8_offset;
        int u[2 * QR4_K];
        float d8[QR4_K], sum_u[QR4_K];
#pragma unroll
        for (int i = 0; i < QR4_K; ++i) {
            d8[i] = __low2float(b8[i].ds);
            const int * q8 = (const int *) b8[i].qs + ((iqs / 2) % 4);
            u[2 * i + 0] = q8[0];
            u[2 * i + 1] = q8[4];
            sum_u[i] = ggml_cuda_dp4a(0x01010101, u[2 * i + 1], ggml_cuda_dp4a(0x01010101, u[2 * i + 0], 0));
        }
#pragma unroll
        for (int r = 0; r < rows; ++r) {
            float sumf_d = 0.0f, sumf_m = 0.0f;
#pragma unroll
            for (int i = 0; i < QR4_K; ++i) {
                const int dot = ggml_cuda_dp4a(v[r][2 * i + 1], u[2 * i + 1], ggml_cuda_dp4a(v[r][2 * i + 0], u[2 * i + 0], 0));
                sumf_d += d8[i] * ((float) dot * sc[r][i]);
                sumf_m += d8[i] * (sum_u[i] * mn[r][i]);
            }
            tmp[c][r] += dm[r].x * sumf_d - dm[r].y * sumf_m;
        }
    }
}

// rows_per_block rows of one member: partial sums per thread, then across warps through shared memory
// (`shared`: nwarps-1 x ncols x rows x warp_size floats), then within the first warp.
template <ggml_type type, int ncols, int nwarps, int rows>
static __device__ __forceinline__ void temper_group_rows(const void * vx, const block_q8_1 * y, float * dst, const int row0,
                                                         const int nrows, const uint32_t stride_row_x, const uint32_t stride_col_dst,
                                                         const uint32_t ncols_x, const uint32_t stride_col_y, float * shared) {
    constexpr int qk = ggml_cuda_type_traits<type>::qk;
    constexpr int qi = ggml_cuda_type_traits<type>::qi;
    constexpr int vdr = get_vdr_mmvq(type);
    constexpr int warp_size = ggml_cuda_get_physical_warp_size();
    constexpr vec_dot_q_cuda_t vec_dot = get_vec_dot_q_cuda(type);
    constexpr int blocks_per_iter = vdr * nwarps * warp_size / qi;

    const int tid = warp_size * threadIdx.y + threadIdx.x;
    const int blocks_per_row_x = ncols_x / qk;
    // Rows past the member's end read its last row (never out of bounds) and are not written.
    int row_block[rows];
#pragma unroll
    for (int i = 0; i < rows; ++i) row_block[i] = min(row0 + i, nrows - 1) * (int) stride_row_x;

    float tmp[ncols][rows] = {{0.0f}};
    for (int kbx = tid / (qi / vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {
        const int kby = kbx * (qk / QK8_1);
        const int kqs = vdr * (tid % (qi / vdr));
        if constexpr (type == GGML_TYPE_Q4_K && temper_group_q4_K_dots<ncols>) {
            temper_group_q4_K_step<ncols, rows>(vx, y, row_block, kbx, kby, kqs, stride_col_y, tmp);
        } else {
#pragma unroll
            for (int j = 0; j < ncols; ++j) {
#pragma unroll
                for (int i = 0; i < rows; ++i) tmp[j][i] += vec_dot(vx, &y[j * stride_col_y + kby], row_block[i] + kbx, kqs);
            }
        }
    }

    auto slot = [&](int warp, int j, int i) -> float & { return shared[((warp * ncols + j) * rows + i) * warp_size + threadIdx.x]; };
    if (threadIdx.y > 0) {
#pragma unroll
        for (int j = 0; j < ncols; ++j) {
#pragma unroll
            for (int i = 0; i < rows; ++i) slot(threadIdx.y - 1, j, i) = tmp[j][i];
        }
    }
    __syncthreads();
    if (threadIdx.y > 0) return;
#pragma unroll
    for (int j = 0; j < ncols; ++j) {
#pragma unroll
        for (int i = 0; i < rows; ++i) {
#pragma unroll
            for (int w = 0; w < nwarps - 1; ++w) tmp[j][i] += slot(w, j, i);
            tmp[j][i] = warp_reduce_sum<warp_size>(tmp[j][i]);
            if (threadIdx.x == i && row0 + i < nrows) dst[j * stride_col_dst + row0 + i] = tmp[j][i];
        }
    }
}

template <ggml_type type_a, ggml_type type_b, int ncols, int nwarps, int rows>
__launch_bounds__(nwarps * ggml_cuda_get_physical_warp_size(), 1)
static __global__ void temper_mmvq_group(const temper_mmvq_group_members m, const void * vy, const uint32_t ncols_x,
                                         const uint32_t stride_col_y) {
    constexpr int warp_size = ggml_cuda_get_physical_warp_size();
    __shared__ float shared[(nwarps > 1 ? nwarps - 1 : 1) * ncols * rows * warp_size];
    int member = 0;
    while (member < 3 && (int) blockIdx.x >= m.block_end[member]) ++member;
    const int row0 = ((int) blockIdx.x - (member > 0 ? m.block_end[member - 1] : 0)) * rows;
#if defined(GGML_CUDA_USE_PDL)
    ggml_cuda_pdl_sync();  // the activations come from the quantizer launched just before
#endif
    const block_q8_1 * y = (const block_q8_1 *) vy;
    if constexpr (type_a == type_b) {
        temper_group_rows<type_a, ncols, nwarps, rows>(m.vx[member], y, m.dst[member], row0, m.nrows[member], m.stride_row_x[member],
                                                      m.stride_col_dst[member], ncols_x, stride_col_y, shared);
    } else if (m.is_b[member]) {
        temper_group_rows<type_b, ncols, nwarps, rows>(m.vx[member], y, m.dst[member], row0, m.nrows[member], m.stride_row_x[member],
                                                      m.stride_col_dst[member], ncols_x, stride_col_y, shared);
    } else {
        temper_group_rows<type_a, ncols, nwarps, rows>(m.vx[member], y, m.dst[member], row0, m.nrows[member], m.stride_row_x[member],
                                                      m.stride_col_dst[member], ncols_x, stride_col_y, shared);
    }
}

template <ggml_type type_a, ggml_type type_b, int ncols, int nwarps, int rows>
static void temper_mmvq_group_launch(const temper_mmvq_group_args & g) {
    temper_mmvq_group_members m = {};
    int blocks = 0;
    for (int i = 0; i < 4; ++i) {
        if (i < g.count) {
            m.vx[i] = g.vx[i];
            m.dst[i] = g.dst[i];
            m.nrows[i] = g.nrows[i];
            m.stride_row_x[i] = g.stride_row_x[i];
            m.stride_col_dst[i] = g.stride_col_dst[i];
            m.is_b[i] = g.is_b[i];
            blocks += (g.nrows[i] + rows - 1) / rows;
        }
        m.block_end[i] = blocks;
    }
    const dim3 block_nums(blocks, 1, 1);
    const dim3 block_dims(g.warp_size, nwarps, 1);
#if defined(GGML_CUDA_USE_PDL)
    ggml_cuda_kernel_launch(temper_mmvq_group<type_a, type_b, ncols, nwarps, rows>,
                            ggml_cuda_kernel_launch_params(block_nums, block_dims, 0, g.stream), m, g.vy, g.ncols_x, g.stride_col_y);
#else
    temper_mmvq_group<type_a, type_b, ncols, nwarps, rows><<<block_nums, block_dims, 0, g.stream>>>(m, g.vy, g.ncols_x, g.stride_col_y);
    CUDA_CHECK(cudaGetLastError());
#endif
}

// Hook v10: a fused expert gate/up (MUL_MAT_ID, one column, SwiGLU or GeGLU) whose GLU output mmvq's
// expert down GEMV reads, as one launch that also writes the down's q8_1 activations. Each block is
// mul_mat_vec_q's fused launch at (nwarps, rows): the same rows, the same sums, the same epilogue, so
// the GLU output is that launch's bit for bit. Then the block that completes a q8_1 block's 32 rows of
// an expert slot (a counter per block, which it sets back to 0) quantizes them as quantize_q8_1 does.
// The copy's padding past the rows is not written: the down GEMV reads only K / QK8_1 blocks a column.
template <ggml_type type, int nwarps, int rows>
__launch_bounds__(nwarps * ggml_cuda_get_physical_warp_size(), 1)
static __global__ void temper_mmvq_experts_glu_q8_1(const void * up, const void * gate, const void * vy, const int32_t * ids, float * dst,
                                                    block_q8_1 * q8, int * arrived, const uint32_t ncols_x, const int nrows,
                                                    const uint32_t stride_row_x, const uint32_t stride_channel_x, const uint3 nchannels_y,
                                                    const uint32_t stride_channel_y, const uint32_t stride_channel_dst, const int k_padded,
                                                    const int geglu) {
    static_assert(QK8_1 % rows == 0, "a block's rows lie in one q8_1 block");
    constexpr int qk = ggml_cuda_type_traits<type>::qk;
    constexpr int qi = ggml_cuda_type_traits<type>::qi;
    constexpr int vdr = get_vdr_mmvq(type);
    constexpr int warp_size = ggml_cuda_get_physical_warp_size();
    constexpr vec_dot_q_cuda_t vec_dot = get_vec_dot_q_cuda(type);
    constexpr int blocks_per_iter = vdr * nwarps * warp_size / qi;
    __shared__ float partial[nwarps > 1 ? nwarps - 1 : 1][rows][warp_size];
    __shared__ float partial_gate[nwarps > 1 ? nwarps - 1 : 1][rows][warp_size];

    const int channel = blockIdx.y, row0 = blockIdx.x * rows, lane = threadIdx.x;
    const int tid = warp_size * threadIdx.y + lane;
    const int blocks_per_row_x = ncols_x / qk;
#if defined(GGML_CUDA_USE_PDL)
    ggml_cuda_pdl_sync();  // the activations and the ids come from kernels launched just before
#endif
    const int channel_x = ids[channel];
    const block_q8_1 * y = (const block_q8_1 *) vy + fastmodulo((uint32_t) channel, nchannels_y) * stride_channel_y;
    const int kbx_offset = channel_x * (int) stride_channel_x + row0 * (int) stride_row_x;
    float tmp[rows] = {0.0f}, tmp_gate[rows] = {0.0f};
    for (int kbx = tid / (qi / vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {
        const int kby = kbx * (qk / QK8_1);
        const int kqs = vdr * (tid % (qi / vdr));
#pragma unroll
        for (int i = 0; i < rows; ++i) {
            tmp[i] += vec_dot(up, &y[kby], kbx_offset + i * (int) stride_row_x + kbx, kqs);
            tmp_gate[i] += vec_dot(gate, &y[kby], kbx_offset + i * (int) stride_row_x + kbx, kqs);
        }
    }
    if (threadIdx.y > 0) {
#pragma unroll
        for (int i = 0; i < rows; ++i) {
            partial[threadIdx.y - 1][i][lane] = tmp[i];
            partial_gate[threadIdx.y - 1][i][lane] = tmp_gate[i];
        }
    }
    __syncthreads();
    if (threadIdx.y > 0) return;
    float * out = dst + (int64_t) channel * stride_channel_dst;
#pragma unroll
    for (int i = 0; i < rows; ++i) {
#pragma unroll
        for (int l = 0; l < nwarps - 1; ++l) {
            tmp[i] += partial[l][i][lane];
            tmp_gate[i] += partial_gate[l][i][lane];
        }
        tmp[i] = warp_reduce_sum<warp_size>(tmp[i]);
        tmp_gate[i] = warp_reduce_sum<warp_size>(tmp_gate[i]);
        if (lane == i && (rows == 1 || row0 + i < nrows)) {
            float result = tmp[i] + 0.0f;
            const float gate_value = tmp_gate[i] + 0.0f;
            result *= geglu ? ggml_cuda_op_gelu_single(gate_value) : ggml_cuda_op_silu_single(gate_value);
            out[row0 + i] = result;
        }
    }
    // The q8_1 block of these rows: the last of its blocks to arrive quantizes it.
    const int qb = row0 / QK8_1, first = qb * QK8_1;
    const int in_block = min(QK8_1, nrows - first);
    const int expected = (in_block + rows - 1) / rows;
    int * counter = arrived + (int64_t) channel * (k_padded / QK8_1) + qb;
    __threadfence();
#if !defined(GGML_USE_HIP)
    __syncwarp();  // every lane's output and fence before the count
#endif
    int last = 0;
    if (lane == 0) last = atomicAdd(counter, 1) == expected - 1;
    if (!__shfl_sync(0xffffffff, last, 0, warp_size)) return;
    __threadfence();
    if (lane >= QK8_1) return;  // a 64-wide wave: its upper half holds no row
    const float v = lane < in_block ? *((volatile const float *) out + first + lane) : 0.0f;  // other blocks' rows: not through L1
    temper_store_q8_1(q8 + (int64_t) channel * (k_padded / QK8_1), first + lane, v);
    if (lane == 0) *counter = 0;
}

template <ggml_type type, int nwarps, int rows>
static void temper_mmvq_experts_glu_q8_1_launch(const temper_mmvq_args & a, void * q8, int * arrived, int k_padded, int geglu) {
    const dim3 block_nums((a.nrows_x + rows - 1) / rows, a.nchannels_dst, 1);
    const dim3 block_dims(a.warp_size, nwarps, 1);
    const auto kernel = temper_mmvq_experts_glu_q8_1<type, nwarps, rows>;
#if defined(GGML_CUDA_USE_PDL)
    ggml_cuda_kernel_launch(kernel, ggml_cuda_kernel_launch_params(block_nums, block_dims, 0, a.stream), a.vx, a.fusion->gate, a.vy, a.ids,
                            a.dst, (block_q8_1 *) q8, arrived, a.ncols_x, a.nrows_x, a.stride_row_x, a.stride_channel_x, a.nchannels_y,
                            a.stride_channel_y, a.stride_channel_dst, k_padded, geglu);
#else
    kernel<<<block_nums, block_dims, 0, a.stream>>>(a.vx, a.fusion->gate, a.vy, a.ids, a.dst, (block_q8_1 *) q8, arrived, a.ncols_x,
                                                    a.nrows_x, a.stride_row_x, a.stride_channel_x, a.nchannels_y, a.stride_channel_y,
                                                    a.stride_channel_dst, k_padded, geglu);
    CUDA_CHECK(cudaGetLastError());
#endif
}

// Registers the group grid of (A, B) at one batch width.
template <ggml_type type_a, ggml_type type_b, int ncols, int wi = 0, int ri = 0>
static void temper_mmvq_group_register_width() {
    if constexpr (wi < 3) {
        if constexpr (ri < 3) {
            constexpr int w = temper_group_grid_nwarps[wi], r = temper_group_grid_rows[ri];
            temper_mmvq_register_group(type_a, type_b, ncols, w, r, &temper_mmvq_group_launch<type_a, type_b, ncols, w, r>);
            if constexpr (type_a == type_b && ncols == 1)
                temper_mmvq_register_experts_glu_q8_1(type_a, w, r, &temper_mmvq_experts_glu_q8_1_launch<type_a, w, r>);
            temper_mmvq_group_register_width<type_a, type_b, ncols, wi, ri + 1>();
        } else {
            temper_mmvq_group_register_width<type_a, type_b, ncols, wi + 1, 0>();
        }
    }
}
