#pragma once
// The quantized GEMV kernel: llama.cpp's mul_mat_vec_q work decomposition (mmvq.cu) with the
// launch parameters as template parameters instead of a per-architecture table.
//
//   block = warp_size × Nwarps threads, owning RowsPerBlock consecutive rows; grid x = rows / that.
//   All threads of a block walk along K together: a thread starts at weight block tid / (qi/vdr)
//   and strides by vdr·Nwarps·warp_size/qi blocks, keeping partial sums tmp[Ncols][RowsPerBlock].
//   Warps 1.. park their sums in shared memory; warp 0 adds them, reduces across its lanes with
//   shuffles, and lane i writes row i.
#include "kernels/launch.h"
#include "vecdot.h"

namespace temper::kernels {
TEMPER_KERNELS_ABI_BEGIN

#if defined(TEMPER_CUDA_DEVICE)
#define TEMPER_TRAP() __trap()
#else
#define TEMPER_TRAP() __builtin_trap()
#endif

// vx: nrows_x rows of ncols_x/qk weight blocks; vy: Ncols columns of ncols_x/32 q8_1 blocks;
// dst: Ncols columns of nrows_x floats.
template <unsigned Type, int Ncols, int Nwarps, int RowsPerBlock>
__launch_bounds__(Nwarps* kWarpSize, 1) __global__
    void mmvq(const void* __restrict__ vx, const void* __restrict__ vy, float* __restrict__ dst, int ncols_x,
              int nrows_x) {
  constexpr int warp_size = kWarpSize;
  if constexpr (!mmvq::launchable(Ncols, Nwarps, RowsPerBlock, warp_size)) {
    // Same symbol set in every device pass of a fat binary; the host never launches this one.
    TEMPER_TRAP();
  } else {
    constexpr mmvq::TypeTraits traits = mmvq::type_traits(Type);
    constexpr int qk = traits.qk, qi = traits.qi, vdr = traits.vdr;
    constexpr int blocks_per_iter = vdr * Nwarps * warp_size / qi;
    static_assert(blocks_per_iter >= 1, "a block must consume at least one weight block per iteration");

    const int tid = warp_size * threadIdx.y + threadIdx.x;
    const int row0 = RowsPerBlock * blockIdx.x;
    const int blocks_per_row_x = ncols_x / qk;
    const int stride_row_x = blocks_per_row_x;
    const int stride_col_y = ncols_x / quant::QK8_1;
    const BlockQ8_1* y = static_cast<const BlockQ8_1*>(vy);

    // The last block's rows past the end re-read the last row instead of reading past the buffer
    // (upstream reads the padding there); their results are never written.
    int row_offset[RowsPerBlock];
#pragma unroll
    for (int i = 0; i < RowsPerBlock; ++i)
      row_offset[i] = (RowsPerBlock == 1 ? row0 : min(row0 + i, nrows_x - 1)) * stride_row_x;

    float tmp[Ncols][RowsPerBlock] = {{0.0f}};

    for (int kbx = tid / (qi / vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {
      const int kby = kbx * (qk / quant::QK8_1);  // the q8_1 block aligned with weight block kbx
      const int kqs = vdr * (tid % (qi / vdr));   // this thread's first int of quants in the block
#pragma unroll
      for (int j = 0; j < Ncols; ++j) {
#pragma unroll
        for (int i = 0; i < RowsPerBlock; ++i)
          tmp[j][i] += vec_dot<Type>(vx, &y[j * stride_col_y + kby], row_offset[i] + kbx, kqs);
      }
    }

    __shared__ float tmp_shared[Nwarps - 1 > 0 ? Nwarps - 1 : 1][Ncols][RowsPerBlock][warp_size];
    if (threadIdx.y > 0) {
#pragma unroll
      for (int j = 0; j < Ncols; ++j) {
#pragma unroll
        for (int i = 0; i < RowsPerBlock; ++i) tmp_shared[threadIdx.y - 1][j][i][threadIdx.x] = tmp[j][i];
      }
    }
    __syncthreads();
    if (threadIdx.y > 0) return;

#pragma unroll
    for (int j = 0; j < Ncols; ++j) {
#pragma unroll
      for (int i = 0; i < RowsPerBlock; ++i) {
#pragma unroll
        for (int l = 0; l < Nwarps - 1; ++l) tmp[j][i] += tmp_shared[l][j][i][threadIdx.x];
        tmp[j][i] = warp_reduce_sum<warp_size>(tmp[j][i]);
        if (threadIdx.x == i && (RowsPerBlock == 1 || row0 + i < nrows_x)) dst[j * nrows_x + row0 + i] = tmp[j][i];
      }
    }
  }
}

// Host side of one instantiation: grid and block as upstream's calc_launch_params.
template <unsigned Type, int Ncols, int Nwarps, int RowsPerBlock>
int launch_instance(const MmvqLaunch& l) {
  const dim3 grid((l.nrows + RowsPerBlock - 1) / RowsPerBlock, 1, 1);
  const dim3 block(l.warp_size, Nwarps, 1);
  hipLaunchKernelGGL((mmvq<Type, Ncols, Nwarps, RowsPerBlock>), grid, block, 0, static_cast<hipStream_t>(l.stream),
                     l.weights, l.act_q8_1, l.dst, l.k, l.nrows);
  return static_cast<int>(hipGetLastError());
}

// Every config of the grid for one (type, ncols), as the table the dispatcher searches.
struct MmvqEntry {
  const void* function = nullptr;
  int (*launch)(const MmvqLaunch&) = nullptr;
};
constexpr int kGridNwarpsCount = sizeof(mmvq::kGridNwarps) / sizeof(int);
constexpr int kGridRowsCount = sizeof(mmvq::kGridRowsPerBlock) / sizeof(int);
struct MmvqTypeTable {
  unsigned type = 0;
  int ncols = 0;
  MmvqEntry entries[kGridNwarpsCount][kGridRowsCount];
};

template <unsigned Type, int Ncols, int W, int R>
MmvqEntry make_entry() {
  constexpr int nwarps = mmvq::kGridNwarps[W], rows = mmvq::kGridRowsPerBlock[R];
  return {reinterpret_cast<const void*>(&mmvq<Type, Ncols, nwarps, rows>), &launch_instance<Type, Ncols, nwarps, rows>};
}

template <unsigned Type, int Ncols, int W>
void fill_row(MmvqTypeTable& t) {
  t.entries[W][0] = make_entry<Type, Ncols, W, 0>();
  t.entries[W][1] = make_entry<Type, Ncols, W, 1>();
  t.entries[W][2] = make_entry<Type, Ncols, W, 2>();
  t.entries[W][3] = make_entry<Type, Ncols, W, 3>();
}

template <unsigned Type, int Ncols>
MmvqTypeTable make_type_table() {
  static_assert(kGridNwarpsCount == 5 && kGridRowsCount == 4, "make_type_table spells out the grid");
  MmvqTypeTable t;
  t.type = Type;
  t.ncols = Ncols;
  fill_row<Type, Ncols, 0>(t);
  fill_row<Type, Ncols, 1>(t);
  fill_row<Type, Ncols, 2>(t);
  fill_row<Type, Ncols, 3>(t);
  fill_row<Type, Ncols, 4>(t);
  return t;
}

TEMPER_KERNELS_ABI_END
}  // namespace temper::kernels
