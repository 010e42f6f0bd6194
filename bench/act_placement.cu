// Issue 17: does where the q8_1 activations live change the kernel's time by the per-launch
// constant seen between Temper's and upstream's kernel-only timings? Times Temper's mmvq_pdl
// (d99724f's kernel, PDL launch as Temper launches it) with the same weights and the activations in
// differently placed buffers. Device only (nvcc, sm_90); built and run by bench/act_placement.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/mmvq.h"

namespace tk = temper::kernels;

#define CHECK(x)                                                                                        \
  do {                                                                                                 \
    cudaError_t e_ = (x);                                                                              \
    if (e_ != cudaSuccess) {                                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      std::exit(1);                                                                                    \
    }                                                                                                  \
  } while (0)

template <unsigned Type, int W, int R>
double median_us(const std::vector<char*>& weights, const void* act, float* dst, int n, int k, int samples) {
  tk::MmvqLaunch l;
  l.type = Type;
  l.nwarps = W;
  l.rows_per_block = R;
  l.act_q8_1 = act;
  l.dst = dst;
  l.nrows = n;
  l.k = k;
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < samples + 20; ++i) {
    l.weights = weights[size_t(i) % weights.size()];
    CHECK(cudaEventRecord(a));
    CHECK(cudaError_t(tk::launch_instance_pdl<Type, 1, W, R>(l)));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 20) t.push_back(ms * 1000.0f);  // 20 warm-up launches
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

int main() {
  constexpr unsigned kQ4_1 = 3;
  const int n = 4096, k = 14336, samples = 200;
  const size_t row_bytes = size_t(k / 32) * 20, weight_bytes = row_bytes * (n + 8);
  const size_t act_bytes = size_t(k / 32) * 36;
  std::vector<char*> weights(4);  // 4 × 36 MB rotate past the H100's 50 MB L2 twice over
  for (auto& w : weights) {
    CHECK(cudaMalloc(&w, weight_bytes));
    CHECK(cudaMemset(w, 0x11, weight_bytes));  // small finite halves, nibbles 1
  }
  float* dst = nullptr;
  CHECK(cudaMalloc(&dst, n * sizeof(float)));
  // Placements: a buffer of its own; inside one 64 MiB buffer at offsets 0 .. 32 MiB; right behind
  // the last weight copy (the same allocation).
  char* own = nullptr;
  CHECK(cudaMalloc(&own, act_bytes));
  char* big = nullptr;
  const size_t big_bytes = size_t(64) << 20;
  CHECK(cudaMalloc(&big, big_bytes));
  char* behind = nullptr;
  CHECK(cudaMalloc(&behind, weight_bytes + act_bytes + 4096));
  struct Place { const char* name; char* at; };
  std::vector<Place> places = {{"own buffer", own},
                               {"big +0", big},
                               {"big +4 KiB", big + 4096},
                               {"big +64 KiB", big + (64 << 10)},
                               {"big +1 MiB", big + (1 << 20)},
                               {"big +17 MiB", big + (17 << 20)},
                               {"big +32 MiB + 256 B", big + (32 << 20) + 256},
                               {"behind weights", behind + weight_bytes}};
  std::vector<char> host(act_bytes, 0x01);  // q8_1 blocks: d = s = tiny halves, quants 1
  for (auto& p : places) CHECK(cudaMemcpy(p.at, host.data(), act_bytes, cudaMemcpyHostToDevice));
  std::printf("q4_1 n=%d k=%d, Temper's mmvq_pdl, median of %d launches, weights rotating 4 copies\n", n, k, samples);
  std::printf("%-22s %10s %10s %10s\n", "activations", "(4,1) us", "(2,2) us", "(8,4) us");
  for (int round = 0; round < 2; ++round)
    for (auto& p : places)
      std::printf("%-22s %10.2f %10.2f %10.2f\n", p.name, median_us<kQ4_1, 4, 1>(weights, p.at, dst, n, k, samples),
                  median_us<kQ4_1, 2, 2>(weights, p.at, dst, n, k, samples),
                  median_us<kQ4_1, 8, 4>(weights, p.at, dst, n, k, samples));
  return 0;
}
