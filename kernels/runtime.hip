// The host-callable side of kernels/launch.h: the q8_1 activation quantizer, the test-only
// faulting kernel, and the dispatcher that finds an mmvq instantiation in this build's kernel set
// (kernel_set.h, generated from TEMPER_KERNEL_SET).
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/mmvq.h"

namespace temper::kernels {
TEMPER_KERNELS_ABI_BEGIN

#define TEMPER_MMVQ_TABLE(type, ncols) const MmvqTypeTable& mmvq_table_##type##_##ncols();
#include "kernel_set.h"
#undef TEMPER_MMVQ_TABLE

namespace {

constexpr int kQuantizeBlockSize = 256;  // CUDA_QUANTIZE_BLOCK_SIZE

// ggml's quantize_q8_1 of value i (v) by the 32 lanes holding its block: d = amax/127 and s = the sum
// of the original floats, stored as one half2.
__device__ __forceinline__ void store_q8_1(quant::BlockQ8_1* y, int64_t i, float v) {
  const int64_t ib = i / quant::QK8_1, iqs = i % quant::QK8_1;
  const float amax = warp_reduce_max<quant::QK8_1>(fabsf(v));
  const float sum = warp_reduce_sum<quant::QK8_1>(v);
  const float d = amax / 127.0f;
  y[ib].qs[iqs] = amax == 0.0f ? 0 : static_cast<int8_t>(roundf(v / d));
  if (iqs == 0) *reinterpret_cast<__half2*>(&y[ib].d) = __floats2half2_rn(d, sum);
}

// ggml's quantize_q8_1: one thread per value, 32 lanes per q8_1 block.
__launch_bounds__(kQuantizeBlockSize, 1) __global__
    void quantize_q8_1(const float* __restrict__ x, void* __restrict__ vy, int k) {
  const int i0 = blockDim.x * blockIdx.x + threadIdx.x;
  if (i0 >= k) return;
  const int64_t i_cont = int64_t(blockIdx.y) * k + i0;
  store_q8_1(static_cast<quant::BlockQ8_1*>(vy), i_cont, x[i_cont]);
}

// The norm that writes its GEMVs' q8_1 activations (the hook's temper_rms_norm_q8_1, issue 48): per row
// of k floats, ggml's RMS_NORM·MUL — a block sum of squares (32-lane sums, then the first 32 lanes
// over those), scale = rsqrt(mean + eps), out = scale · x · w — written to dst and, with the
// quantizer's 32-lane reductions, as q8_1 (k/32 blocks a row; k a multiple of 32, so every 32 lanes
// of a pass hold one q8_1 block).
template <int Block>
__launch_bounds__(Block, 1) __global__ void rms_norm_q8_1(const float* __restrict__ x, const float* __restrict__ w,
                                                          float* __restrict__ dst, void* __restrict__ vy, int k, float eps) {
  constexpr int kLanes = quant::QK8_1;
  const int row = blockIdx.x, tid = threadIdx.x;
  x += int64_t(row) * k;
  dst += int64_t(row) * k;
  quant::BlockQ8_1* y = static_cast<quant::BlockQ8_1*>(vy) + int64_t(row) * (k / quant::QK8_1);
  float sum = 0.0f;
  for (int col = tid; col < k; col += Block) sum += x[col] * x[col];
  sum = warp_reduce_sum<kLanes>(sum);
  if constexpr (Block > kLanes) {
    __shared__ float partial[Block / kLanes];
    if (tid % kLanes == 0) partial[tid / kLanes] = sum;
    __syncthreads();
    sum = tid % kLanes < Block / kLanes ? partial[tid % kLanes] : 0.0f;
    sum = warp_reduce_sum<kLanes>(sum);
  }
  const float scale = rsqrtf(sum / k + eps);
  for (int col = tid; col < k; col += Block) {
    const float v = scale * x[col] * w[col];
    dst[col] = v;
    store_q8_1(y, col, v);
  }
}

__global__ void write_out_of_bounds(int* p) {
  p[threadIdx.x] = 1;
}

// Warp sizes this library's device code can run at.
bool warp_size_built(int warp_size) {
#if defined(TEMPER_GPU_CUDA)
  return warp_size == 32;
#else
  return warp_size == 32 || warp_size == 64;
#endif
}

int grid_index(const int* values, int count, int v) {
  for (int i = 0; i < count; ++i)
    if (values[i] == v) return i;
  return -1;
}

const std::vector<const MmvqTypeTable*>& tables() {
  static const std::vector<const MmvqTypeTable*> all = [] {
    std::vector<const MmvqTypeTable*> t;
#define TEMPER_MMVQ_TABLE(type, ncols) t.push_back(&mmvq_table_##type##_##ncols());
#include "kernel_set.h"
#undef TEMPER_MMVQ_TABLE
    return t;
  }();
  return all;
}

const MmvqEntry* find_entry(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size) {
  if (!warp_size_built(warp_size) || !mmvq::launchable(ncols, nwarps, rows_per_block, warp_size)) return nullptr;
  const int w = grid_index(mmvq::kGridNwarps, kGridNwarpsCount, nwarps);
  const int r = grid_index(mmvq::kGridRowsPerBlock, kGridRowsCount, rows_per_block);
  if (w < 0 || r < 0) return nullptr;
  for (const MmvqTypeTable* t : tables())
    if (t->type == type && t->ncols == ncols) return &t->entries[w][r];
  return nullptr;
}

}  // namespace

int launch_mmvq(const MmvqLaunch& l) {
  const MmvqEntry* e = find_entry(l.type, l.ncols, l.nwarps, l.rows_per_block, l.warp_size);
  if (!e || (l.variant >= 0 && l.variant < mmvq::kKernelVariants && !e->launch[l.variant])) return kNotInstantiated;
  const mmvq::TypeTraits t = mmvq::type_traits(l.type);
  if (l.nrows <= 0 || l.k <= 0 || l.k % t.qk != 0 || !l.weights || !l.act_q8_1 || !l.dst || l.variant < 0 ||
      l.variant >= mmvq::kKernelVariants)
    return static_cast<int>(hipErrorInvalidValue);
  return e->launch[l.variant](l);
}

int launch_quantize_q8_1(const float* x, void* y_q8_1, int k, int ncols, void* stream) {
  if (!x || !y_q8_1 || k <= 0 || k % quant::QK8_1 != 0 || ncols < 1 || ncols > mmvq::kMaxNcols)
    return static_cast<int>(hipErrorInvalidValue);
  const dim3 grid((k + kQuantizeBlockSize - 1) / kQuantizeBlockSize, ncols, 1);
  const dim3 block(kQuantizeBlockSize, 1, 1);
  hipLaunchKernelGGL(quantize_q8_1, grid, block, 0, static_cast<hipStream_t>(stream), x, y_q8_1, k);
  return static_cast<int>(hipGetLastError());
}

int launch_rms_norm_q8_1(const float* x, const float* w, float* dst, void* y_q8_1, int k, int rows, float eps, void* stream) {
  if (!x || !w || !dst || !y_q8_1 || k <= 0 || k % quant::QK8_1 != 0 || rows < 1 || rows > mmvq::kMaxNcols || !(eps >= 0.0f))
    return static_cast<int>(hipErrorInvalidValue);
  const dim3 grid(rows, 1, 1);
  // ggml's block size for the norm: 256 threads below 1024 columns, else 1024.
  if (k < 1024)
    hipLaunchKernelGGL(rms_norm_q8_1<256>, grid, dim3(256, 1, 1), 0, static_cast<hipStream_t>(stream), x, w, dst, y_q8_1, k, eps);
  else
    hipLaunchKernelGGL(rms_norm_q8_1<1024>, grid, dim3(1024, 1, 1), 0, static_cast<hipStream_t>(stream), x, w, dst, y_q8_1, k, eps);
  return static_cast<int>(hipGetLastError());
}

bool mmvq_instantiated(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size) {
  return find_entry(type, ncols, nwarps, rows_per_block, warp_size) != nullptr;
}

const void* mmvq_function(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size, int variant) {
  const MmvqEntry* e = find_entry(type, ncols, nwarps, rows_per_block, warp_size);
  return e && variant >= 0 && variant < mmvq::kKernelVariants ? e->function[variant] : nullptr;
}

const char* mmvq_symbol(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size) {
  const MmvqEntry* e = find_entry(type, ncols, nwarps, rows_per_block, warp_size);
  if (!e) return "";
  // Itanium mangling of temper::kernels[::cuda]::mmvq<type, ncols, nwarps, rows, (mmvq::KernelVariant)0>(
  // const void*, const void*, const int*, MmvqFusionArgs, float*, uint32_t, uint3, 3 × uint32_t, uint3,
  // 3 × uint32_t, uint3, 4 × uint32_t) (HIP spells uint3 HIP_vector_type<unsigned, 3>); built once and kept.
  static const std::vector<std::pair<const MmvqEntry*, std::string>> names = [] {
    std::vector<std::pair<const MmvqEntry*, std::string>> v;
    for (const MmvqTypeTable* t : tables())
      for (int w = 0; w < kGridNwarpsCount; ++w)
        for (int r = 0; r < kGridRowsCount; ++r) {
          char buf[192];
#if defined(TEMPER_GPU_CUDA)
          std::snprintf(buf, sizeof buf,
                        "_ZN6temper7kernels4cuda4mmvqILj%uELi%dELi%dELi%dELNS_4mmvq13KernelVariantE0EEEvPKvS6_PKiNS1_"
                        "14MmvqFusionArgsEPfj5uint3jjjSB_jjjSB_jjjj",
                        t->type, t->ncols, mmvq::kGridNwarps[w], mmvq::kGridRowsPerBlock[r]);
#else
          std::snprintf(buf, sizeof buf,
                        "_ZN6temper7kernels4mmvqILj%uELi%dELi%dELi%dELNS_4mmvq13KernelVariantE0EEEvPKvS5_PKiNS0_"
                        "14MmvqFusionArgsEPfj15HIP_vector_typeIjLj3EEjjjSB_jjjSB_jjjj",
                        t->type, t->ncols, mmvq::kGridNwarps[w], mmvq::kGridRowsPerBlock[r]);
#endif
          v.emplace_back(&t->entries[w][r], buf);
        }
    return v;
  }();
  for (const auto& [entry, name] : names)
    if (entry == e) return name.c_str();
  return "";
}

int launch_faulting_kernel(void* stream) {
  // Far past any allocation: the runtime reports an illegal address / memory access fault.
  int* p = reinterpret_cast<int*>(uintptr_t(1) << 46);
  hipLaunchKernelGGL(write_out_of_bounds, dim3(1), dim3(64), 0, static_cast<hipStream_t>(stream), p);
  return static_cast<int>(hipGetLastError());
}

TEMPER_KERNELS_ABI_END
}  // namespace temper::kernels
