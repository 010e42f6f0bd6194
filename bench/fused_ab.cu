// Issue 48, hooks v13 and v14: mul_mat_vec_q's tuned fused launches (a residual add fused as a bias, as
// ggml runs a dense layer's down and o projections) with the stock k loop, with v13's gate-once loop, as
// v14's twin compiled without the gate, and the same launch unfused, over the hook's fused grid (nwarps,
// rows 1..8), at Llama-3-8B's down (q4_K and q6_K, 4096 x 14336) and o (q4_K, 4096 x 4096). Links the two
// objects tests/engine/hook_exact_test.sh compiles from a patched tree (group_unit.cu as the hook builds
// it, and with TEMPER_MMVQ_GATE_IN_LOOP). Each config: ROUNDS rounds of SAMPLES launches per arm, the arms
// interleaved, the order reversed every other round, queued behind a spin kernel, one event between
// launches, weights rotating four copies past L2; the median over rounds of each round's median. Prints
// CSV (shape,type,nwarps,rows,stock_loop_us,gate_once_us,bias_only_us,unfused_us,gbps_bias_only). Device
// only; bench/tune_device.sh's fused stage builds and runs it.
#include "common.cuh"
#include "temper-mmvq.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/kernel_timing.cuh"

#include "tests/engine/hook_exact/units.h"

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5, samples = argc > 2 ? std::atoi(argv[2]) : 100;
  struct Shape { const char* name; bool q6_K; int nrows, k; };
  const Shape shapes[] = {{"down", false, 4096, 14336}, {"down", true, 4096, 14336}, {"o", false, 4096, 4096}};
  std::mt19937 rng(13);
  std::printf("shape,type,nwarps,rows,stock_loop_us,gate_once_us,bias_only_us,unfused_us,gbps_bias_only\n");
  for (const Shape& s : shapes) {
    const size_t block = s.q6_K ? sizeof(block_q6_K) : sizeof(block_q4_K);
    const size_t bytes = block * size_t(s.nrows) * size_t(s.k / QK_K);
    // Random bytes with finite scales: the timing does not depend on the values.
    std::vector<uint8_t> w(bytes);
    for (auto& b : w) b = uint8_t(rng());
    for (size_t i = 0; i < bytes / block; ++i) {
      if (s.q6_K) ((block_q6_K*)w.data())[i].d = __float2half(0.01f);
      else ((block_q4_K*)w.data())[i].dm = make_half2(__float2half(0.01f), __float2half(0.01f));
    }
    std::vector<char*> weights(4);
    for (auto& p : weights) {
      CHECK(cudaMalloc(&p, bytes));
      CHECK(cudaMemcpy(p, w.data(), bytes, cudaMemcpyHostToDevice));
    }
    std::vector<block_q8_1> y(size_t(s.k / QK8_1));
    for (auto& b : y) {
      for (auto& q : b.qs) q = int8_t(int(rng() % 255) - 127);
      b.ds = make_half2(__float2half(0.01f), __float2half(1.0f));
    }
    void* d_y = nullptr;
    float *d_bias = nullptr, *d_dst = nullptr;
    CHECK(cudaMalloc(&d_y, y.size() * sizeof(block_q8_1)));
    CHECK(cudaMemcpy(d_y, y.data(), y.size() * sizeof(block_q8_1), cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&d_bias, sizeof(float) * s.nrows));
    CHECK(cudaMemset(d_bias, 0, sizeof(float) * s.nrows));
    CHECK(cudaMalloc(&d_dst, sizeof(float) * s.nrows));
    ggml_cuda_mm_fusion_args_device bias{}, none{};
    bias.x_bias = d_bias;
    const uint3 one = init_fastdiv_values(1);
    for (int nw : {1, 2, 4, 8}) {
      for (int r : {1, 2, 4, 8}) {
        // arm 0: stock loop with the bias, 1: gate once with the bias, 2: the bias-only twin, 3: unfused
        auto arm = [&](int which) {
          return [&, which](char* wx) {
            const temper_mmvq_args a = {wx, d_y, nullptr, which == 3 ? &none : &bias, d_dst, uint32_t(s.k), one,
                                        uint32_t(s.k / QK_K), uint32_t(s.k / QK8_1), uint32_t(s.nrows), one, 0, 0, 0, one,
                                        0, 0, 0, s.nrows, 1, 1, 32, 0, nullptr};
            const bool ran = which == 0 ? temper_exact_run_generic_fused(a, s.q6_K, nw, r, false)
                                        : temper_exact_run_fused(a, s.q6_K, nw, r, which == 2);
            return ran ? cudaGetLastError() : cudaErrorInvalidValue;
          };
        };
        std::vector<double> med[4];
        for (int round = 0; round < rounds; ++round) {
          for (int i = 0; i < 4; ++i) {
            const int which = round % 2 ? 3 - i : i;  // the order reversed every other round
            med[which].push_back(median_us(arm(which), weights, samples, 10, 2000000));
          }
        }
        double m[4];
        for (int i = 0; i < 4; ++i) {
          std::sort(med[i].begin(), med[i].end());
          m[i] = med[i][med[i].size() / 2];
        }
        std::printf("%s,%s,%d,%d,%.2f,%.2f,%.2f,%.2f,%.0f\n", s.name, s.q6_K ? "q6_K" : "q4_K", nw, r, m[0], m[1], m[2], m[3],
                    double(bytes) / (m[2] * 1e3));
        std::fflush(stdout);
      }
    }
    for (auto p : weights) cudaFree(p);
    cudaFree(d_y);
    cudaFree(d_bias);
    cudaFree(d_dst);
  }
  return 0;
}
