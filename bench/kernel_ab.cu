// Issue 17: Temper's and upstream's kernels in one process and one harness, over the 13 tier-1
// types × the ncols-1 grid at 4096×14336 and 14336×4096 (and q4_K, q6_K at 128256×4096): the
// fidelity table without the engine's process around upstream's kernel. Each config: both
// kernels' outputs on the same inputs must be bit-identical, then ROUNDS interleaved rounds of
// SAMPLES launches each, queued behind a spin kernel, one event between launches, weights rotating
// four copies past L2; the median over rounds of each round's median. Prints CSV
// (shape,type,nwarps,rows,temper_us,upstream_us,same_output). Device only; bench/kernel_ab.sh
// builds it with bench/kernel_ab_up.cu (upstream's kernels, compiled with ggml's flags).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/kernel_timing.cuh"
#include "kernels/mmvq.h"

namespace tk = temper::kernels;

// Upstream's launcher of (type, w, r), from bench/kernel_ab_up.cu; nullptr for one not there.
using Launcher = int (*)(const void* vx, const void* vy, float* dst, int nrows, int k);
Launcher upstream_launcher(int type, int w, int r);

// Temper's kernel variant to compare: d99724f's (PDL) unless built with -DTEMPER_VARIANT_PDL=0.
#ifndef TEMPER_VARIANT_PDL
#define TEMPER_VARIANT_PDL 1
#endif
constexpr temper::mmvq::KernelVariant kVariant =
    TEMPER_VARIANT_PDL ? temper::mmvq::KernelVariant::GgmlD99724f : temper::mmvq::KernelVariant::Ggml7180759;

// Per type, the kernel's instantiation table at ncols 1 (kernels/mmvq.h: every config of the grid).
struct TypeInfo { const char* name; int id; int block_bytes, qk; tk::MmvqTypeTable (*table)(); };
const TypeInfo kTypes[] = {
    {"q4_0", 2, 18, 32, tk::make_type_table<2, 1>},      {"q4_1", 3, 20, 32, tk::make_type_table<3, 1>},
    {"q5_0", 6, 22, 32, tk::make_type_table<6, 1>},      {"q5_1", 7, 24, 32, tk::make_type_table<7, 1>},
    {"q8_0", 8, 34, 32, tk::make_type_table<8, 1>},      {"q2_K", 10, 84, 256, tk::make_type_table<10, 1>},
    {"q3_K", 11, 110, 256, tk::make_type_table<11, 1>},  {"q4_K", 12, 144, 256, tk::make_type_table<12, 1>},
    {"q5_K", 13, 176, 256, tk::make_type_table<13, 1>},  {"q6_K", 14, 210, 256, tk::make_type_table<14, 1>},
    {"iq4_nl", 20, 18, 32, tk::make_type_table<20, 1>},  {"iq4_xs", 23, 136, 256, tk::make_type_table<23, 1>},
    {"mxfp4", 39, 17, 32, tk::make_type_table<39, 1>}};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3, samples = argc > 2 ? std::atoi(argv[2]) : 50;
  struct Shape { int n, k; bool k_quants_only; };
  const Shape shapes[] = {{4096, 14336, false}, {14336, 4096, false}, {128256, 4096, true}};
  std::printf("shape,type,nwarps,rows,temper_us,upstream_us,same_output\n");
  for (const Shape& s : shapes) {
    size_t max_bytes = 0;
    for (const TypeInfo& t : kTypes) max_bytes = std::max(max_bytes, size_t(s.k / t.qk) * t.block_bytes * size_t(s.n + 8));
    std::vector<char*> weights(4);  // 4 copies: past the H100's 50 MB L2 at least twice for every type here
    for (auto& w : weights) {
      CHECK(cudaMalloc(&w, max_bytes));
      CHECK(cudaMemset(w, 0x11, max_bytes));  // small finite scales, nibbles 1
    }
    const size_t act_bytes = size_t(s.k / 32) * 36;
    char* act = nullptr;
    float *dst_t = nullptr, *dst_u = nullptr;
    CHECK(cudaMalloc(&act, act_bytes));
    CHECK(cudaMemset(act, 0x01, act_bytes));
    CHECK(cudaMalloc(&dst_t, size_t(s.n) * sizeof(float)));
    CHECK(cudaMalloc(&dst_u, size_t(s.n) * sizeof(float)));
    std::vector<float> a(s.n), b(s.n);
    for (const TypeInfo& t : kTypes) {
      if (s.k_quants_only && t.id != 12 && t.id != 14) continue;
      const tk::MmvqTypeTable table = t.table();
      for (int wi = 0; wi < tk::kGridNwarpsCount; ++wi)
        for (int ri = 0; ri < tk::kGridRowsCount; ++ri) {
          const int w = temper::mmvq::kGridNwarps[wi], r = temper::mmvq::kGridRowsPerBlock[ri];
          const auto temper_launch = table.entries[wi][ri].launch[int(kVariant)];
          const Launcher upstream_launch = upstream_launcher(t.id, w, r);
          if (!upstream_launch) {
            std::fprintf(stderr, "kernel_ab: upstream has no %s (%d,%d) here\n", t.name, w, r);
            return 1;
          }
          tk::MmvqLaunch l = gemv_launch(t.id, w, r, int(kVariant), act, dst_t, s.n, s.k);
          auto temper = [&](const void* wt) {
            l.weights = wt;
            return temper_launch(l);
          };
          auto upstream = [&](const void* wt) { return upstream_launch(wt, act, dst_u, s.n, s.k); };
          CHECK(cudaError_t(temper(weights[0])));
          CHECK(cudaError_t(upstream(weights[0])));
          CHECK(cudaMemcpy(a.data(), dst_t, a.size() * sizeof(float), cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(b.data(), dst_u, b.size() * sizeof(float), cudaMemcpyDeviceToHost));
          const bool same = std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
          std::vector<double> tt, uu;
          for (int round = 0; round < rounds; ++round) {
            tt.push_back(median_us(temper, weights, samples, 10, 4000000));  // spin ~2 ms
            uu.push_back(median_us(upstream, weights, samples, 10, 4000000));
          }
          std::sort(tt.begin(), tt.end());
          std::sort(uu.begin(), uu.end());
          std::printf("%dx%d,%s,%d,%d,%.3f,%.3f,%d\n", s.n, s.k, t.name, w, r, tt[tt.size() / 2], uu[uu.size() / 2],
                      same ? 1 : 0);
          std::fflush(stdout);
        }
    }
    for (auto& w : weights) CHECK(cudaFree(w));
    CHECK(cudaFree(act));
    CHECK(cudaFree(dst_t));
    CHECK(cudaFree(dst_u));
  }
  return 0;
}
