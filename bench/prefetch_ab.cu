// Issue 29, axis "L2 prefetch of the block's weight rows before the dependent-launch wait": does a
// GEMV block that asks for its whole share of the weights at once (one bulk L2 prefetch, sm_90's
// cp.async.bulk.prefetch.L2) run closer to copy bandwidth than one whose threads find the bytes as
// they walk K? The weights never depend on the previous kernel, so the request can go out before
// griddepcontrol.wait, while the quantizer that feeds the GEMV still runs.
//
// One kernel, mmvq's work decomposition at one column (kernels/mmvq.h, vec_dot from kernels/), five
// arms: 0 no prefetch, 1 one bulk prefetch per block by thread 0, 2 prefetch.global.L2 per 128-byte
// line by every thread; 3 no prefetch, but each block lets the next kernel launch as it starts
// (griddepcontrol.launch_dependents: ggml's quantizer does so, its mmvq does not), 4 = 3 with 1's
// prefetch (the next GEMV's blocks, launched early, ask for their weights during this one's tail). Two timings per (shape, type, nwarps, rows, arm):
//   alone: launches one by one with an event between them, weights rotating past L2 (the sweep's way);
//   chain: as decode runs it, `pairs` × (q8_1 quantizer that lets its dependent launch at once,
//          GEMV launched as its programmatic dependent), weights rotating, µs per pair.
// Outputs of arms 1-4 must equal arm 0's bit for bit. Prints CSV: mode,shape,type,nwarps,rows,arm,us,same_output.
// Device only (sm_90). Built where kernels/iq_tables.h was generated (any Temper build dir's kernels/):
//   nvcc -arch=sm_90 -O3 -std=c++17 -DTEMPER_GPU_CUDA -I. -Ikernels -Icore/common/include
//        -Icore/quant/include -I<build>/kernels bench/prefetch_ab.cu -o prefetch_ab
//   ./prefetch_ab [rounds 3] [samples 50] [pairs 200] > prefetch_ab.csv
// Its chain has nothing between two GEMVs, unlike a decode token: it underpredicted the engine's gain
// from the early launch (docs/perf-notes.md, 2026-11-28 second session).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/kernel_timing.cuh"
#include "kernels/vecdot.h"

namespace tk = temper::kernels;
using temper::quant::BlockQ8_1;

template <unsigned Type, int Nwarps, int Rows, int Arm>
__launch_bounds__(Nwarps * 32, 1) __global__
    void gemv(const void* vx, const BlockQ8_1* y, float* dst, int nrows, int k, int row_bytes) {
  constexpr temper::mmvq::TypeTraits t = temper::mmvq::type_traits(Type);
  constexpr int blocks_per_iter = t.vdr * Nwarps * 32 / t.qi;
  const int tid = 32 * threadIdx.y + threadIdx.x;
  const int row0 = Rows * blockIdx.x;
  const int blocks_per_row = k / t.qk;
  const char* mine = static_cast<const char*>(vx) + size_t(row0) * row_bytes;  // Rows contiguous rows
  if constexpr (Arm >= 3) asm volatile("griddepcontrol.launch_dependents;");
  if constexpr (Arm == 1 || Arm == 4) {
    if (tid == 0)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(mine), "r"(uint32_t(Rows * row_bytes) & ~15u) : "memory");
  } else if constexpr (Arm == 2) {
    for (int off = tid * 128; off < Rows * row_bytes; off += Nwarps * 32 * 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(mine + off));
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
  float tmp[Rows] = {0.0f};
  for (int kbx = tid / (t.qi / t.vdr); kbx < blocks_per_row; kbx += blocks_per_iter) {
    const int kby = kbx * (t.qk / 32);
    const int kqs = t.vdr * (tid % (t.qi / t.vdr));
#pragma unroll
    for (int i = 0; i < Rows; ++i) tmp[i] += tk::vec_dot<Type>(vx, &y[kby], (row0 + i) * blocks_per_row + kbx, kqs);
  }
  __shared__ float parked[Nwarps > 1 ? Nwarps - 1 : 1][Rows][32];
  if (threadIdx.y > 0) {
#pragma unroll
    for (int i = 0; i < Rows; ++i) parked[threadIdx.y - 1][i][threadIdx.x] = tmp[i];
  }
  __syncthreads();
  if (threadIdx.y > 0) return;
#pragma unroll
  for (int i = 0; i < Rows; ++i) {
#pragma unroll
    for (int w = 0; w < Nwarps - 1; ++w) tmp[i] += parked[w][i][threadIdx.x];
    tmp[i] = tk::warp_reduce_sum<32>(tmp[i]);
    if (threadIdx.x == i && row0 + i < nrows) dst[row0 + i] = tmp[i];
  }
}

// ggml's q8_1 quantizer shape: 32 threads per block of 32 values; lets its dependent launch at once.
__global__ void quantize(const float* x, BlockQ8_1* y, int k) {
  asm volatile("griddepcontrol.launch_dependents;");
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (i >= k) return;
  const float xi = x[i];
  float amax = fabsf(xi), sum = xi;
  for (int o = 16; o > 0; o >>= 1) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    sum += __shfl_xor_sync(0xffffffffu, sum, o);
  }
  const float d = amax / 127.0f;
  BlockQ8_1& b = y[i / 32];
  b.qs[i % 32] = int8_t(amax == 0.0f ? 0 : roundf(xi / d));
  if (i % 32 == 0) {
    const __half hd = __float2half(d), hs = __float2half(sum);
    std::memcpy(&b.d, &hd, 2);
    std::memcpy(&b.s, &hs, 2);
  }
}

template <typename Kernel, typename... Args>
void launch_pdl(Kernel kernel, dim3 grid, dim3 block, Args... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

struct Shape { int n, k; };
struct Type { const char* name; int block_bytes; };

template <unsigned T, int W, int R, int A>
void run_config(const char* tname, int block_bytes, const Shape& s, const std::vector<char*>& weights, const float* x,
                BlockQ8_1* act, float* dst, std::vector<float>& reference, int rounds, int samples, int pairs) {
  constexpr temper::mmvq::TypeTraits t = temper::mmvq::type_traits(T);
  const int row_bytes = s.k / t.qk * block_bytes;
  const dim3 grid((s.n + R - 1) / R), block(32, W);
  auto gemv_on = [&](const char* w) { launch_pdl(gemv<T, W, R, A>, grid, block, (const void*)w, (const BlockQ8_1*)act, dst, s.n, s.k, row_bytes); return 0; };
  // Output check against arm 0 of the same config.
  quantize<<<s.k / 32, 32>>>(x, act, s.k);
  gemv_on(weights[0]);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> out(size_t(s.n));
  CHECK(cudaMemcpy(out.data(), dst, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  if (A == 0) reference = out;
  const bool same = std::memcmp(out.data(), reference.data(), out.size() * sizeof(float)) == 0;
  if (!same) std::fprintf(stderr, "prefetch_ab: %s %dx%d (%d,%d) arm %d: output differs from arm 0\n", tname, s.n, s.k, W, R, A);
  std::vector<double> alone, chain;
  for (int r = 0; r < rounds; ++r) {
    alone.push_back(median_us([&](const char* w) { return gemv_on(w); }, weights, samples, 5, 2000000));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    spin<<<1, 1>>>(2000000);
    CHECK(cudaEventRecord(a));
    for (int i = 0; i < pairs; ++i) {
      launch_pdl(quantize, dim3(s.k / 32), dim3(32), (const float*)x, act, s.k);
      gemv_on(weights[size_t(i) % weights.size()]);
    }
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    chain.push_back(1000.0 * ms / pairs);
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
  }
  std::sort(alone.begin(), alone.end());
  std::sort(chain.begin(), chain.end());
  std::printf("alone,%dx%d,%s,%d,%d,%d,%.3f,%d\n", s.n, s.k, tname, W, R, A, alone[alone.size() / 2], same);
  std::printf("chain,%dx%d,%s,%d,%d,%d,%.3f,%d\n", s.n, s.k, tname, W, R, A, chain[chain.size() / 2], same);
}

template <unsigned T, int W, int R>
void run_arms(const char* tname, int bb, const Shape& s, const std::vector<char*>& w, const float* x, BlockQ8_1* act,
              float* dst, int rounds, int samples, int pairs) {
  std::vector<float> reference;
  run_config<T, W, R, 0>(tname, bb, s, w, x, act, dst, reference, rounds, samples, pairs);
  run_config<T, W, R, 1>(tname, bb, s, w, x, act, dst, reference, rounds, samples, pairs);
  run_config<T, W, R, 2>(tname, bb, s, w, x, act, dst, reference, rounds, samples, pairs);
  run_config<T, W, R, 3>(tname, bb, s, w, x, act, dst, reference, rounds, samples, pairs);
  run_config<T, W, R, 4>(tname, bb, s, w, x, act, dst, reference, rounds, samples, pairs);
}

template <unsigned T>
void run_type(const char* tname, int bb, const Shape& s, const std::vector<char*>& w, const float* x, BlockQ8_1* act,
              float* dst, int rounds, int samples, int pairs) {
  run_arms<T, 1, 1>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 1, 2>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 2, 1>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 2, 2>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 2, 4>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 4, 1>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 4, 2>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 4, 4>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 8, 1>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
  run_arms<T, 8, 2>(tname, bb, s, w, x, act, dst, rounds, samples, pairs);
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3, samples = argc > 2 ? std::atoi(argv[2]) : 50;
  const int pairs = argc > 3 ? std::atoi(argv[3]) : 200;
  // Llama-3-8B's launches: q/o, k/v, gate or up alone, down; the head last.
  const Shape shapes[] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}, {128256, 4096}};
  std::printf("mode,shape,type,nwarps,rows,arm,us,same_output\n");
  for (const Shape& s : shapes) {
    const size_t max_bytes = size_t(s.k / 256) * 210 * size_t(s.n + 16);
    std::vector<char*> weights(std::max<size_t>(2, 200000000 / max_bytes + 1));  // together past the 50 MB L2 at least 4 times
    for (auto& w : weights) {
      CHECK(cudaMalloc(&w, max_bytes));
      CHECK(cudaMemset(w, 0x11, max_bytes));  // small finite scales
    }
    std::vector<float> xs(size_t(s.k));
    for (int i = 0; i < s.k; ++i) xs[size_t(i)] = float((i * 37) % 101 - 50) / 25.0f;
    float *x = nullptr, *dst = nullptr;
    BlockQ8_1* act = nullptr;
    CHECK(cudaMalloc(&x, xs.size() * sizeof(float)));
    CHECK(cudaMemcpy(x, xs.data(), xs.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&act, size_t(s.k / 32) * sizeof(BlockQ8_1)));
    CHECK(cudaMalloc(&dst, size_t(s.n) * sizeof(float)));
    run_type<12>("q4_K", 144, s, weights, x, act, dst, rounds, samples, pairs);
    run_type<14>("q6_K", 210, s, weights, x, act, dst, rounds, samples, pairs);
    for (auto& w : weights) CHECK(cudaFree(w));
    CHECK(cudaFree(x));
    CHECK(cudaFree(act));
    CHECK(cudaFree(dst));
  }
  return 0;
}
