#pragma once
// Same-input groups: the hook's group kernel (hook/src/temper-mmvq-group.cuh, run for a
// profile's mul_mat_group entries) in Temper's kernel library. 2..4 GEMVs that read the same q8_1
// activations run as one launch: the grid's blocks are dealt to the members in order
// (mmvq::group_block), each block computes rows_per_block rows of its member with the member's
// vec_dot (q4_K: vec_dot_q4_K_tile, the same sums) and reduces as mmvq does, so a member's outputs
// equal mmvq's at the same (nwarps, rows_per_block) bit for bit. Rows past a member's end read its
// last row and are not written.
// Members have at most two weight types, A and B (is_b). Compiled only into the kernel cache's group
// units, one per (A, B, ncols) with every config of the group grid.
#include "kernels/mmvq.h"
#include "temper/mmvq_group.h"

namespace temper::kernels {
TEMPER_KERNELS_ABI_BEGIN

struct MmvqGroupMembers {
  const void* vx[mmvq::kGroupMaxMembers];
  float* dst[mmvq::kGroupMaxMembers];
  int nrows[mmvq::kGroupMaxMembers];
  int is_b[mmvq::kGroupMaxMembers];
  mmvq::GroupBlocks blocks;
};

// The fewest batch columns at which q4_K members run vec_dot_q4_K_tile, as the hook's group kernel: on
// AMD from two (at one column the tile only adds VGPRs there; static, docs/perf-notes.md).
#if defined(TEMPER_GPU_CUDA)
constexpr int kQ4KTileMinCols = 1;
#else
constexpr int kQ4KTileMinCols = 2;
#endif

// rows_per_block rows of one member from row0: mmvq's K loop, warp exchange and reduction. `shared`
// holds (Nwarps-1) × Ncols × Rows × warp_size floats. A device function, as the hook writes it.
template <unsigned Type, int Ncols, int Nwarps, int Rows>
__device__ __forceinline__ void mmvq_group_rows(const void* vx, const BlockQ8_1* y, float* dst, const int row0, const int nrows,
                                                const uint32_t ncols_x, float* shared) {
  constexpr int warp_size = kWarpSize;
  constexpr mmvq::TypeTraits traits = mmvq::type_traits(Type);
  constexpr int qk = traits.qk, qi = traits.qi, vdr = traits.vdr;
  constexpr int blocks_per_iter = vdr * Nwarps * warp_size / qi;
  static_assert(blocks_per_iter >= 1, "a block must consume at least one weight block per iteration");

  const int tid = warp_size * threadIdx.y + threadIdx.x;
  const int blocks_per_row_x = ncols_x / qk;
  const int stride_col_y = ncols_x / quant::QK8_1;
  int row_block[Rows];
#pragma unroll
  for (int i = 0; i < Rows; ++i) row_block[i] = min(row0 + i, nrows - 1) * blocks_per_row_x;

  float tmp[Ncols][Rows] = {{0.0f}};
  for (int kbx = tid / (qi / vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {
    const int kby = kbx * (qk / quant::QK8_1);
    const int kqs = vdr * (tid % (qi / vdr));
    if constexpr (Type == kQ4_K && Ncols >= kQ4KTileMinCols) {
      vec_dot_q4_K_tile<Ncols, Rows>(vx, &y[kby], row_block, kbx, kqs, stride_col_y, tmp);
    } else {
#pragma unroll
      for (int j = 0; j < Ncols; ++j) {
#pragma unroll
        for (int i = 0; i < Rows; ++i) tmp[j][i] += vec_dot<Type>(vx, &y[j * stride_col_y + kby], row_block[i] + kbx, kqs);
      }
    }
  }

  auto slot = [&](int warp, int j, int i) -> float& { return shared[((warp * Ncols + j) * Rows + i) * warp_size + threadIdx.x]; };
  if (threadIdx.y > 0) {
#pragma unroll
    for (int j = 0; j < Ncols; ++j) {
#pragma unroll
      for (int i = 0; i < Rows; ++i) slot(threadIdx.y - 1, j, i) = tmp[j][i];
    }
  }
  __syncthreads();
  if (threadIdx.y > 0) return;
#pragma unroll
  for (int j = 0; j < Ncols; ++j) {
#pragma unroll
    for (int i = 0; i < Rows; ++i) {
#pragma unroll
      for (int w = 0; w < Nwarps - 1; ++w) tmp[j][i] += slot(w, j, i);
      tmp[j][i] = warp_reduce_sum<warp_size>(tmp[j][i]);
      if (threadIdx.x == i && row0 + i < nrows) dst[j * nrows + row0 + i] = tmp[j][i];
    }
  }
}

template <unsigned TypeA, unsigned TypeB, int Ncols, int Nwarps, int Rows>
__launch_bounds__(Nwarps* kWarpSize, 1) __global__
    void mmvq_group(const MmvqGroupMembers m, const void* vy, const uint32_t ncols_x) {
  __shared__ float shared[(Nwarps > 1 ? Nwarps - 1 : 1) * Ncols * Rows * kWarpSize];
  const mmvq::GroupBlock b = mmvq::group_block(m.blocks, Rows, int(blockIdx.x));
  // The member's fields by compare-and-select, not m.x[b.member]: a dynamic index into the kernel's
  // parameters makes nvcc copy them all to a local stack frame in every block.
  const void* vx = m.vx[0];
  float* dst = m.dst[0];
  int nrows = m.nrows[0], is_b = m.is_b[0];
#pragma unroll
  for (int i = 1; i < mmvq::kGroupMaxMembers; ++i)
    if (b.member == i) vx = m.vx[i], dst = m.dst[i], nrows = m.nrows[i], is_b = m.is_b[i];
#if defined(TEMPER_CUDA_DEVICE) && __CUDA_ARCH__ >= 900
  // The activations come from the quantizer launched just before (a no-op without PDL).
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(vy);
  if (TypeA == TypeB || !is_b)
    mmvq_group_rows<TypeA, Ncols, Nwarps, Rows>(vx, y, dst, b.row0, nrows, ncols_x, shared);
  else if constexpr (TypeA != TypeB)
    mmvq_group_rows<TypeB, Ncols, Nwarps, Rows>(vx, y, dst, b.row0, nrows, ncols_x, shared);
}

static_assert(sizeof(MmvqGroupLaunch::weights) / sizeof(void*) == mmvq::kGroupMaxMembers, "launch.h spells out the member count");

template <unsigned TypeA, unsigned TypeB, int Ncols, int Nwarps, int Rows>
int launch_group_instance(const MmvqGroupLaunch& l) {
  if (l.count < 2 || l.count > mmvq::kGroupMaxMembers || l.k <= 0 || l.k % mmvq::type_traits(TypeA).qk != 0 ||
      l.k % mmvq::type_traits(TypeB).qk != 0 || !l.act_q8_1)
    return static_cast<int>(hipErrorInvalidValue);
  MmvqGroupMembers m = {};
  for (int i = 0; i < l.count; ++i) {
    m.vx[i] = l.weights[i];
    m.dst[i] = l.dst[i];
    m.nrows[i] = l.nrows[i];
    m.is_b[i] = l.is_b[i];
  }
  m.blocks = mmvq::group_blocks(l.nrows, l.count, Rows);
  auto* kernel = &mmvq_group<TypeA, TypeB, Ncols, Nwarps, Rows>;
  const dim3 grid(m.blocks.blocks, 1, 1), block(l.warp_size, Nwarps, 1);
#if defined(TEMPER_GPU_CUDA)
  // d99724f's trees launch groups with programmatic dependent launch, as their mmvq.
  static const bool can_use_pdl = pdl_capable(reinterpret_cast<const void*>(kernel));
  if (l.variant != int(mmvq::KernelVariant::Ggml7180759) && can_use_pdl)
    return launch_ex(kernel, grid, block, l.stream, true, m, l.act_q8_1, uint32_t(l.k));
#endif
  hipLaunchKernelGGL(kernel, grid, block, 0, static_cast<hipStream_t>(l.stream), m, l.act_q8_1, uint32_t(l.k));
  return static_cast<int>(hipGetLastError());
}

// One group unit's dispatcher over the group grid; kNotInstantiated off the grid.
template <unsigned TypeA, unsigned TypeB, int Ncols>
struct MmvqGroupUnit {
  static constexpr int kW = sizeof(mmvq::kGroupNwarps) / sizeof(int), kR = sizeof(mmvq::kGroupRowsPerBlock) / sizeof(int);
  template <int W = 0, int R = 0>
  static int launch(const MmvqGroupLaunch& l) {
    if constexpr (W == kW) {
      return kNotInstantiated;
    } else if constexpr (R == kR) {
      return launch<W + 1, 0>(l);
    } else {
      if (l.nwarps == mmvq::kGroupNwarps[W] && l.rows_per_block == mmvq::kGroupRowsPerBlock[R])
        return launch_group_instance<TypeA, TypeB, Ncols, mmvq::kGroupNwarps[W], mmvq::kGroupRowsPerBlock[R]>(l);
      return launch<W, R + 1>(l);
    }
  }
};

TEMPER_KERNELS_ABI_END
}  // namespace temper::kernels
