// Issue 17: does where the q8_1 activations live change the kernel's time by the per-launch
// constant seen between Temper's and upstream's kernel-only timings? Times Temper's d99724f kernel
// (PDL launch as Temper launches it) with the same weights and the activations in differently
// placed buffers. (Until 13c48e3 it also timed the block's work with an unused argument the size of
// upstream's fusion arguments; that needed the shared block function the kernel no longer has.)
// Device only (nvcc, sm_90); built and run by bench/act_placement.sh.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench/kernel_timing.cuh"
#include "kernels/mmvq.h"

namespace tk = temper::kernels;

// Median time of Temper's kernel of Type at (W, R) after 20 warm-up launches behind a spin kernel of
// ~10 ms at boost clock.
template <unsigned Type, int W, int R>
double config_us(const std::vector<char*>& weights, const void* act, float* dst, int n, int k, int samples) {
  tk::MmvqLaunch l = gemv_launch(Type, W, R, int(temper::mmvq::KernelVariant::GgmlD99724f), act, dst, n, k);
  auto launch = [&l](const void* w) {
    l.weights = w;
    return tk::launch_instance_pdl<Type, 1, W, R>(l);
  };
  return median_us(launch, weights, samples, 20, 20000000);
}

int main() {
  constexpr unsigned kQ4_1 = 3;
  const int n = 4096, k = 14336, samples = 100;
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
  // Rounds interleave the placements so clock drift touches all alike; per placement and config,
  // the median over rounds of each round's median.
  constexpr int kRounds = 7;
  std::vector<std::vector<double>> r41(places.size()), r22(places.size()), r84(places.size());
  for (int round = 0; round < kRounds; ++round)
    for (size_t p = 0; p < places.size(); ++p) {
      r41[p].push_back(config_us<kQ4_1, 4, 1>(weights, places[p].at, dst, n, k, samples));
      r22[p].push_back(config_us<kQ4_1, 2, 2>(weights, places[p].at, dst, n, k, samples));
      r84[p].push_back(config_us<kQ4_1, 8, 4>(weights, places[p].at, dst, n, k, samples));
    }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto spread = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.back() - v.front();
  };
  std::printf("q4_1 n=%d k=%d, Temper's d99724f kernel; per placement the median over %d interleaved rounds of the median of\n"
              "%d launches queued behind a spin kernel, one event between launches, weights rotating 4 copies\n",
              n, k, kRounds, samples);
  std::printf("%-22s %16s %16s %16s\n", "activations", "(4,1) us (range)", "(2,2) us (range)", "(8,4) us (range)");
  for (size_t p = 0; p < places.size(); ++p)
    std::printf("%-22s %9.2f (%4.2f) %9.2f (%4.2f) %9.2f (%4.2f)\n", places[p].name, med(r41[p]), spread(r41[p]),
                med(r22[p]), spread(r22[p]), med(r84[p]), spread(r84[p]));
  return 0;
}
