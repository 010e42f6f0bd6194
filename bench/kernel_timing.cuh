#pragma once
// The timing harness of the issue-17 device programs (bench/act_placement.cu, bench/kernel_ab.cu):
// a CUDA error check, a plain GEMV launch of Temper's kernel and the median time of a kernel
// launch, measured as the fidelity runs do.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/launch.h"

#define CHECK(x)                                                                                   \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// One column of nrows × k at (nwarps, rows) for Temper's kernel; the weights are set per launch.
inline temper::kernels::MmvqLaunch gemv_launch(unsigned type, int nwarps, int rows, int variant, const void* act,
                                               float* dst, int nrows, int k) {
  temper::kernels::MmvqLaunch l;
  l.type = type;
  l.nwarps = nwarps;
  l.rows_per_block = rows;
  l.variant = variant;
  l.act_q8_1 = act;
  l.dst = dst;
  l.nrows = nrows;
  l.k = k;
  return l;
}

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// Median time in µs of `samples` launches of launch(weights copy) queued behind a spin kernel of
// `spin_cycles` (so the host's launch cost stays out: the batch is queued before it ends), one
// event between launches, the weights copies rotating, after `warmup` launches.
template <typename Launch>
double median_us(const Launch& launch, const std::vector<char*>& weights, int samples, int warmup,
                 long long spin_cycles) {
  for (int i = 0; i < warmup; ++i) CHECK(cudaError_t(launch(weights[size_t(i) % weights.size()])));
  std::vector<cudaEvent_t> ev(size_t(samples) + 1);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  spin<<<1, 1>>>(spin_cycles);
  CHECK(cudaEventRecord(ev[0]));
  for (int i = 0; i < samples; ++i) {
    CHECK(cudaError_t(launch(weights[size_t(i) % weights.size()])));
    CHECK(cudaEventRecord(ev[size_t(i) + 1]));
  }
  CHECK(cudaEventSynchronize(ev.back()));
  std::vector<float> t;
  for (int i = 0; i < samples; ++i) {
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, ev[size_t(i)], ev[size_t(i) + 1]));
    t.push_back(ms * 1000.0f);
  }
  for (auto& e : ev) CHECK(cudaEventDestroy(e));
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}
