#pragma once
// The quantized GEMV kernel: llama.cpp's mul_mat_vec_q work decomposition (mmvq.cu) with the
// launch parameters as template parameters instead of a per-architecture table.
//
//   block = warp_size × Nwarps threads, owning RowsPerBlock consecutive rows; grid x = rows / that.
//   All threads of a block walk along K together: a thread starts at weight block tid / (qi/vdr)
//   and strides by vdr·Nwarps·warp_size/qi blocks, keeping partial sums tmp[Ncols][RowsPerBlock].
//   Warps 1.. park their sums in shared memory; warp 0 adds them, reduces across its lanes with
//   shuffles, and lane i writes row i.
#include <utility>

#include "kernels/launch.h"
#include "vecdot.h"

namespace temper::kernels {
TEMPER_KERNELS_ABI_BEGIN

// The engine's index arithmetic for channels and samples (fastdiv: n / d as a multiply-high and
// a shift, d encoded as uint3 (multiplier, shift, d)). Temper launches one channel and one sample with
// no expert ids, but keeps this arithmetic because it is part of the compiled kernel it models.
__device__ __forceinline__ uint32_t fast_div(uint32_t n, const uint3 d) { return (__umulhi(n, d.x) + n) >> d.y; }
__device__ __forceinline__ uint32_t fast_mod(uint32_t n, const uint3 d) { return n - fast_div(n, d) * d.z; }

// The engine kernel's scalar arguments after the pointers, in its order: k, the per-channel and
// per-sample strides and divisors. Spelled once, used by every kernel and launch below.
#define TEMPER_MMVQ_SCALAR_PARAMS                                                                          \
  const uint32_t ncols_x, const uint3 nchannels_y, const uint32_t stride_row_x, const uint32_t stride_col_y,   \
      const uint32_t stride_col_dst, const uint3 channel_ratio, const uint32_t stride_channel_x,               \
      const uint32_t stride_channel_y, const uint32_t stride_channel_dst, const uint3 sample_ratio,            \
      const uint32_t stride_sample_x, const uint32_t stride_sample_y, const uint32_t stride_sample_dst
#define TEMPER_MMVQ_SCALAR_ARGS                                                                               \
  ncols_x, nchannels_y, stride_row_x, stride_col_y, stride_col_dst, channel_ratio, stride_channel_x,           \
      stride_channel_y, stride_channel_dst, sample_ratio, stride_sample_x, stride_sample_y, stride_sample_dst

#if defined(TEMPER_CUDA_DEVICE)
#define TEMPER_TRAP() __trap()
#else
#define TEMPER_TRAP() __builtin_trap()
#endif

// Bytes of one weight block of a type (quant/blocks.h), the pipelined variant's prefetch unit; 0 for
// types mmvq has no kernel for.
TEMPER_HD constexpr uint32_t weight_block_bytes(unsigned type) {
  switch (type) {
    case 2: return sizeof(quant::BlockQ4_0);
    case 3: return sizeof(quant::BlockQ4_1);
    case 6: return sizeof(quant::BlockQ5_0);
    case 7: return sizeof(quant::BlockQ5_1);
    case 8: return sizeof(quant::BlockQ8_0);
    case 10: return sizeof(quant::BlockQ2_K);
    case 11: return sizeof(quant::BlockQ3_K);
    case 12: return sizeof(quant::BlockQ4_K);
    case 13: return sizeof(quant::BlockQ5_K);
    case 14: return sizeof(quant::BlockQ6_K);
    case 16: return sizeof(quant::BlockIQ2_XXS);
    case 17: return sizeof(quant::BlockIQ2_XS);
    case 18: return sizeof(quant::BlockIQ3_XXS);
    case 19: return sizeof(quant::BlockIQ1_S);
    case 20: return sizeof(quant::BlockIQ4_NL);
    case 21: return sizeof(quant::BlockIQ3_S);
    case 22: return sizeof(quant::BlockIQ2_S);
    case 23: return sizeof(quant::BlockIQ4_XS);
    case 29: return sizeof(quant::BlockIQ1_M);
    case 39: return sizeof(quant::BlockMXFP4);
    case 40: return sizeof(quant::BlockNVFP4);
    case 41: return sizeof(quant::BlockQ1_0);
    case 42: return sizeof(quant::BlockQ2_0);
    default: return 0;
  }
}

// Upstream's fusion arguments (ggml_cuda_mm_fusion_args_device: bias, gate, their scales and the GLU
// op), 48 bytes. Temper's kernel never fuses and never reads them, but takes them where upstream's
// kernel does: the kernel-argument layout is part of the compiled kernel. clang's AMDGPU back end
// marks a kernel whose argument loads lie more than 64 bytes apart as memory-bound (its "waveLimiter"
// heuristic), which changes the scheduling and the register count (docs/perf-notes.md, "The
// kernel-argument layout").
struct MmvqFusionArgs {
  const void* x_bias = nullptr;
  const void* gate = nullptr;
  const void* gate_bias = nullptr;
  const void* x_scale = nullptr;
  const void* gate_scale = nullptr;
  int glu_op = 0;
};
static_assert(sizeof(MmvqFusionArgs) == 48, "upstream's fusion arguments are 48 bytes");

// The kernel's pointer arguments, restrict-qualified or not.
template <bool Restrict>
struct MmvqPointers {
  using Vx = const void*;
  using Ids = const int32_t*;
  using Dst = float*;
};
template <>
struct MmvqPointers<true> {
  using Vx = const void* __restrict__;
  using Ids = const int32_t* __restrict__;
  using Dst = float* __restrict__;
};

// Upstream's mul_mat_vec_q without fusion, one instantiation per engine version it models
// (mmvq::KernelVariant): the K loop, the shared-memory exchange between warps and the final warp
// reduction. Blocks of one launch: x = row groups, y = channels, z = samples (Temper launches 1 × 1).
// vx: weight rows of ncols_x/qk blocks; vy: Ncols columns of ncols_x/32 q8_1 blocks; ids: expert
// ids (Temper passes none); fusion: unused (above); dst: Ncols columns of stride_col_dst floats;
// ids_stride: unused (Temper passes 0).
//
// The variants differ where upstream's two versions do (docs/kernels.md):
// - 7180759: restrict-qualified pointers, no dependent launch, and lane i writes tmp[j][threadIdx.x]
//   after the row loop. On AMD this kernel also serves d99724f (one kernel per config keeps the code
//   objects' size), with d99724f's output write.
// - d99724f on NVIDIA: on Hopper and newer its launches use programmatic dependent launch, which
//   requires plain pointers, and a block waits for the previous grid after its index set-up; before
//   Hopper, restrict-qualified pointers and no wait. Lane i writes tmp[j][i] inside the row loop.
// - d99724f pipelined (one column; the hook's *_pipelined launches, docs/engine.md): d99724f's, and on
//   Hopper each block first lets the next kernel launch (griddepcontrol.launch_dependents), then
//   thread 0 asks L2 for the block's weight rows in one bulk prefetch, both before the wait — the
//   weights never depend on the previous kernel. Same arithmetic: outputs equal d99724f's bit for bit.
// The block's work is written here, in the kernel, not in a shared __device__ function: nvcc
// compiles an inlined function's body to different code (up to 8 registers more or fewer per
// thread at the same config, bench/regcompare.py), and upstream writes it in the kernel.
template <unsigned Type, int Ncols, int Nwarps, int RowsPerBlock,
          mmvq::KernelVariant Variant = mmvq::KernelVariant::Ggml7180759>
__launch_bounds__(Nwarps* kWarpSize, 1) __global__
    void mmvq(const void* vx_arg, const void* vy_arg, const int32_t* ids_arg, const MmvqFusionArgs fusion,
              float* dst_arg, TEMPER_MMVQ_SCALAR_PARAMS, const uint32_t ids_stride) {
  (void)fusion;      // upstream's has_fusion = false instantiation never reads them
  (void)ids_stride;  // read by upstream's MoE kernel only
  if constexpr (!mmvq::launchable(Ncols, Nwarps, RowsPerBlock, kWarpSize)) {
    // Same symbol set in every device pass of a fat binary; the host never launches this one.
    TEMPER_TRAP();
  } else {
    constexpr bool d99724f = Variant != mmvq::KernelVariant::Ggml7180759;
    constexpr bool pipelined = Variant == mmvq::KernelVariant::GgmlD99724fPipelined;
    static_assert(!pipelined || Ncols == 1, "the engine pipelines one-column launches only");
#if defined(TEMPER_CUDA_DEVICE) && __CUDA_ARCH__ >= 900
    constexpr bool dependent_launch = d99724f;
#else
    constexpr bool dependent_launch = false;
#endif
#if defined(TEMPER_CUDA_DEVICE)
    constexpr bool lane_indexed_write = !d99724f;
#else
    constexpr bool lane_indexed_write = false;
#endif
    using Pointers = MmvqPointers<!dependent_launch>;
    const typename Pointers::Vx vx = vx_arg;
    const typename Pointers::Vx vy = vy_arg;
    const typename Pointers::Ids ids = ids_arg;
    typename Pointers::Dst dst = dst_arg;

    constexpr int warp_size = kWarpSize;
    constexpr mmvq::TypeTraits traits = mmvq::type_traits(Type);
    constexpr int qk = traits.qk, qi = traits.qi, vdr = traits.vdr;
    constexpr int blocks_per_iter = vdr * Nwarps * warp_size / qi;
    static_assert(blocks_per_iter >= 1, "a block must consume at least one weight block per iteration");

    const int tid = warp_size * threadIdx.y + threadIdx.x;
    const int row0 = RowsPerBlock * blockIdx.x;
    const int blocks_per_row_x = ncols_x / qk;
    const uint32_t channel_dst = blockIdx.y;

#if defined(TEMPER_CUDA_DEVICE) && __CUDA_ARCH__ >= 900
    if constexpr (dependent_launch && pipelined) {
      asm volatile("griddepcontrol.launch_dependents;");
      // The block's rows when they are contiguous whole 16-byte units (the bulk prefetch's); the last
      // block asks for rows past the end, as it reads them (the spare rows of the weight buffer).
      constexpr uint32_t block_bytes = weight_block_bytes(Type);
      const uint32_t row_bytes = uint32_t(blocks_per_row_x) * block_bytes;
      if (tid == 0 && ids == nullptr && stride_row_x == uint32_t(blocks_per_row_x) && row_bytes % 16 == 0) {
        const size_t first = (size_t(fast_div(blockIdx.z, sample_ratio)) * stride_sample_x +
                              size_t(fast_div(channel_dst, channel_ratio)) * stride_channel_x + size_t(row0) * stride_row_x) *
                             block_bytes;
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(static_cast<const char*>(vx) + first),
                     "r"(uint32_t(RowsPerBlock) * row_bytes)
                     : "memory");
      }
    }
    // Wait for the previous grid's memory here, where upstream calls cudaGridDependencySynchronize.
    if constexpr (dependent_launch) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const uint32_t channel_x = Ncols == 1 && ids ? ids[channel_dst] : fast_div(channel_dst, channel_ratio);
    const uint32_t channel_y = Ncols == 1 && ids ? fast_mod(channel_dst, nchannels_y) : channel_dst;
    const uint32_t sample_dst = blockIdx.z;
    const uint32_t sample_x = fast_div(sample_dst, sample_ratio);
    const uint32_t sample_y = sample_dst;

    float tmp[Ncols][RowsPerBlock] = {{0.0f}};

    // The last block reads all its rows, past the matrix's end as upstream does: weight buffers carry
    // mmvq::kWeightPaddingRows spare rows; results of rows past the end are never written.
    const BlockQ8_1* y = static_cast<const BlockQ8_1*>(vy) + sample_y * stride_sample_y + channel_y * stride_channel_y;
    const int kbx_offset = sample_x * stride_sample_x + channel_x * stride_channel_x + row0 * stride_row_x;

    for (int kbx = tid / (qi / vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {
      const int kby = kbx * (qk / quant::QK8_1);  // the q8_1 block aligned with weight block kbx
      const int kqs = vdr * (tid % (qi / vdr));   // this thread's first int of quants in the block
#pragma unroll
      for (int j = 0; j < Ncols; ++j) {
#pragma unroll
        for (int i = 0; i < RowsPerBlock; ++i)
          tmp[j][i] += vec_dot<Type>(vx, &y[j * stride_col_y + kby], kbx_offset + i * stride_row_x + kbx, kqs);
      }
    }

    __shared__ float tmp_shared[Nwarps - 1 > 0 ? Nwarps - 1 : 1][Ncols][RowsPerBlock][warp_size];
    // A single warp has nothing to hand over: no stores, as upstream's kernel compiles to (clang kept
    // Temper's, and the registers they hold, where nothing reads them).
    if (Nwarps > 1 && threadIdx.y > 0) {
#pragma unroll
      for (int j = 0; j < Ncols; ++j) {
#pragma unroll
        for (int i = 0; i < RowsPerBlock; ++i) tmp_shared[threadIdx.y - 1][j][i][threadIdx.x] = tmp[j][i];
      }
    }
    __syncthreads();
    if (threadIdx.y > 0) return;

    dst += sample_dst * stride_sample_dst + channel_dst * stride_channel_dst + row0;
#pragma unroll
    for (int j = 0; j < Ncols; ++j) {
#pragma unroll
      for (int i = 0; i < RowsPerBlock; ++i) {
#pragma unroll
        for (int l = 0; l < Nwarps - 1; ++l) tmp[j][i] += tmp_shared[l][j][i][threadIdx.x];
        tmp[j][i] = warp_reduce_sum<warp_size>(tmp[j][i]);
        if constexpr (!lane_indexed_write) {
          if (threadIdx.x == i && (RowsPerBlock == 1 || uint32_t(row0 + i) < stride_col_dst))
            dst[j * stride_col_dst + i] = tmp[j][i];
        }
      }
      if constexpr (lane_indexed_write) {
        if (threadIdx.x < RowsPerBlock && (RowsPerBlock == 1 || uint32_t(row0 + threadIdx.x) < stride_col_dst))
          dst[j * stride_col_dst + threadIdx.x] = tmp[j][threadIdx.x];
      }
    }
  }
}

// The scalar arguments of a plain GEMV: one channel, one sample, no expert ids (n / 1 is
// (umulhi(n, 0) + n) >> 0).
#define TEMPER_MMVQ_GEMV_ARGS(l)                                                                                  \
  uint32_t(l.k), make_uint3(0, 0, 1), uint32_t(l.k / mmvq::type_traits(Type).qk), uint32_t(l.k / quant::QK8_1), \
      uint32_t(l.nrows), make_uint3(0, 0, 1), 0u, 0u, 0u, make_uint3(0, 0, 1), 0u, 0u, 0u

// Host side of one instantiation: grid and block as upstream's calc_launch_params.
template <unsigned Type, int Ncols, int Nwarps, int RowsPerBlock>
int launch_instance(const MmvqLaunch& l) {
  const dim3 grid((l.nrows + RowsPerBlock - 1) / RowsPerBlock, 1, 1);
  const dim3 block(l.warp_size, Nwarps, 1);
  hipLaunchKernelGGL((mmvq<Type, Ncols, Nwarps, RowsPerBlock>), grid, block, 0, static_cast<hipStream_t>(l.stream),
                     l.weights, l.act_q8_1, static_cast<const int32_t*>(nullptr), MmvqFusionArgs{}, l.dst,
                     TEMPER_MMVQ_GEMV_ARGS(l), 0u);
  return static_cast<int>(hipGetLastError());
}

#if defined(TEMPER_GPU_CUDA)
// Whether `kernel` may launch with programmatic dependent launch: its loaded PTX is 9.0 or newer
// (upstream's ggml_cuda_kernel_can_use_pdl). Callers keep the answer per kernel.
inline bool pdl_capable(const void* kernel) {
  cudaFuncAttributes attr = {};
  return cudaFuncGetAttributes(&attr, kernel) == cudaSuccess && attr.ptxVersion >= 90;
}

// One launch through cudaLaunchKernelEx, with the programmatic-stream-serialization attribute when
// `pdl`, else a plain one.
template <class... Params, class... Args>
int launch_ex(void (*kernel)(Params...), dim3 grid, dim3 block, void* stream, bool pdl, Args... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = static_cast<cudaStream_t>(stream);
  cfg.attrs = pdl ? &attr : nullptr;
  cfg.numAttrs = pdl ? 1 : 0;
  return static_cast<int>(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// d99724f's launch: with PDL where the kernel can use it, else a plain launch.
template <unsigned Type, int Ncols, int Nwarps, int RowsPerBlock,
          mmvq::KernelVariant Variant = mmvq::KernelVariant::GgmlD99724f>
int launch_instance_pdl(const MmvqLaunch& l) {
  auto* kernel = &mmvq<Type, Ncols, Nwarps, RowsPerBlock, Variant>;
  static const bool can_use_pdl = pdl_capable(reinterpret_cast<const void*>(kernel));
  return launch_ex(kernel, dim3((l.nrows + RowsPerBlock - 1) / RowsPerBlock, 1, 1), dim3(l.warp_size, Nwarps, 1), l.stream,
                   can_use_pdl, l.weights, l.act_q8_1, static_cast<const int32_t*>(nullptr), MmvqFusionArgs{}, l.dst,
                   TEMPER_MMVQ_GEMV_ARGS(l), 0u);
}
#endif

// Every config of the grid for one (type, ncols), as the table the dispatcher searches: one kernel
// per engine variant (mmvq::KernelVariant); the pipelined one at one column only (nullptr above).
// Only NVIDIA builds have separate d99724f kernels; on AMD every variant compiles to the same code
// (no dependent launch), so the entries name mmvq.
struct MmvqEntry {
  const void* function[mmvq::kKernelVariants] = {};
  int (*launch[mmvq::kKernelVariants])(const MmvqLaunch&) = {};
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
  MmvqEntry e;
  e.function[0] = reinterpret_cast<const void*>(&mmvq<Type, Ncols, nwarps, rows>);
  e.launch[0] = &launch_instance<Type, Ncols, nwarps, rows>;
#if defined(TEMPER_GPU_CUDA)
  e.function[1] = reinterpret_cast<const void*>(&mmvq<Type, Ncols, nwarps, rows, mmvq::KernelVariant::GgmlD99724f>);
  e.launch[1] = &launch_instance_pdl<Type, Ncols, nwarps, rows>;
  if constexpr (Ncols == 1) {
    constexpr auto pipelined = mmvq::KernelVariant::GgmlD99724fPipelined;
    e.function[2] = reinterpret_cast<const void*>(&mmvq<Type, Ncols, nwarps, rows, pipelined>);
    e.launch[2] = &launch_instance_pdl<Type, Ncols, nwarps, rows, pipelined>;
  }
#else
  e.function[1] = e.function[0];
  e.launch[1] = e.launch[0];
  if constexpr (Ncols == 1) {
    e.function[2] = e.function[0];
    e.launch[2] = e.launch[0];
  }
#endif
  static_assert(mmvq::kKernelVariants == 3, "make_entry spells out the variants");
  return e;
}

template <unsigned Type, int Ncols, int W, int... R>
void fill_row(MmvqTypeTable& t, std::integer_sequence<int, R...>) {
  ((t.entries[W][R] = make_entry<Type, Ncols, W, R>()), ...);
}

template <unsigned Type, int Ncols, int... W>
void fill_rows(MmvqTypeTable& t, std::integer_sequence<int, W...>) {
  (fill_row<Type, Ncols, W>(t, std::make_integer_sequence<int, kGridRowsCount>()), ...);
}

template <unsigned Type, int Ncols>
MmvqTypeTable make_type_table() {
  MmvqTypeTable t;
  t.type = Type;
  t.ncols = Ncols;
  fill_rows<Type, Ncols>(t, std::make_integer_sequence<int, kGridNwarpsCount>());
  return t;
}

TEMPER_KERNELS_ABI_END
}  // namespace temper::kernels
