// Issue 17: does where the q8_1 activations live change the kernel's time by the per-launch
// constant seen between Temper's and upstream's kernel-only timings? Times Temper's mmvq_pdl
// (d99724f's kernel, PDL launch as Temper launches it) with the same weights and the activations in
// differently placed buffers, and with and without an unused argument the size of upstream's fusion
// arguments. Device only (nvcc, sm_90); built and run by bench/act_placement.sh.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench/kernel_timing.cuh"
#include "kernels/mmvq.h"

namespace tk = temper::kernels;

// Upstream's kernel carries ggml_cuda_mm_fusion_args_device (6 pointers and an enum, 56 bytes) by
// value; Temper's has none. The same block work with such an unused argument, to time the difference.
struct FusionArgs {
  const void* p[6];
  int glu_op;
};
template <unsigned Type, int W, int R>
__launch_bounds__(W * 32, 1) __global__ void mmvq_fat(const void* vx, const void* vy, const int32_t* ids,
                                                      const FusionArgs fusion, float* dst, TEMPER_MMVQ_SCALAR_PARAMS) {
  (void)fusion;
  tk::mmvq_block<Type, 1, W, R, true, false>(vx, vy, ids, dst, TEMPER_MMVQ_SCALAR_ARGS);
}

template <unsigned Type, int W, int R>
int launch_fat(const tk::MmvqLaunch& l) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((l.nrows + R - 1) / R, 1, 1);
  cfg.blockDim = dim3(32, W, 1);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  const FusionArgs none = {};
  constexpr temper::mmvq::TypeTraits traits = temper::mmvq::type_traits(Type);
  return int(cudaLaunchKernelEx(&cfg, mmvq_fat<Type, W, R>, l.weights, l.act_q8_1, static_cast<const int32_t*>(nullptr),
                                none, l.dst, uint32_t(l.k), make_uint3(0, 0, 1), uint32_t(l.k / traits.qk),
                                uint32_t(l.k / 32), uint32_t(l.nrows), make_uint3(0, 0, 1), 0u, 0u, 0u,
                                make_uint3(0, 0, 1), 0u, 0u, 0u));
}

// Median time of Temper's work of Type at (W, R), plain or with the unused fusion argument, after 20
// warm-up launches behind a spin kernel of ~10 ms at boost clock.
template <unsigned Type, int W, int R, bool Fat = false>
double config_us(const std::vector<char*>& weights, const void* act, float* dst, int n, int k, int samples) {
  tk::MmvqLaunch l;
  l.type = Type;
  l.nwarps = W;
  l.rows_per_block = R;
  l.act_q8_1 = act;
  l.dst = dst;
  l.nrows = n;
  l.k = k;
  auto launch = [&l](const void* w) {
    l.weights = w;
    return Fat ? launch_fat<Type, W, R>(l) : tk::launch_instance_pdl<Type, 1, W, R>(l);
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
  std::printf("q4_1 n=%d k=%d, Temper's mmvq_pdl; per placement the median over %d interleaved rounds of the median of\n"
              "%d launches queued behind a spin kernel, one event between launches, weights rotating 4 copies\n",
              n, k, kRounds, samples);
  std::printf("%-22s %16s %16s %16s\n", "activations", "(4,1) us (range)", "(2,2) us (range)", "(8,4) us (range)");
  for (size_t p = 0; p < places.size(); ++p)
    std::printf("%-22s %9.2f (%4.2f) %9.2f (%4.2f) %9.2f (%4.2f)\n", places[p].name, med(r41[p]), spread(r41[p]),
                med(r22[p]), spread(r22[p]), med(r84[p]), spread(r84[p]));
  // The same kernel work with and without upstream's unused fusion argument, activations in their
  // own buffer, interleaved.
  std::vector<double> thin, fat, thin22, fat22;
  for (int round = 0; round < kRounds; ++round) {
    thin.push_back(config_us<kQ4_1, 4, 1>(weights, own, dst, n, k, samples));
    fat.push_back(config_us<kQ4_1, 4, 1, true>(weights, own, dst, n, k, samples));
    thin22.push_back(config_us<kQ4_1, 2, 2>(weights, own, dst, n, k, samples));
    fat22.push_back(config_us<kQ4_1, 2, 2, true>(weights, own, dst, n, k, samples));
  }
  std::printf("\nkernel parameters      (4,1) us (range) (2,2) us (range)\n");
  std::printf("%-22s %9.2f (%4.2f) %9.2f (%4.2f)\n", "Temper's", med(thin), spread(thin), med(thin22), spread(thin22));
  std::printf("%-22s %9.2f (%4.2f) %9.2f (%4.2f)\n", "+ 56-byte fusion arg", med(fat), spread(fat), med(fat22), spread(fat22));
  return 0;
}
