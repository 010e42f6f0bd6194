// hook_exact_test's program: runs every q4_K group kernel of the group grid (q4_K with q4_K, q4_K with
// q6_K; batch widths 1..4; partial row blocks; a k of 11 q4_K blocks) twice, as the hook compiles it and
// with ggml's own vec_dot for every type, and mul_mat_vec_q's tuned fused launches (q4_K, q6_K; a bias,
// a SwiGLU gate, both) as the hook compiles them, and with a bias alone its twin compiled without the
// gate, against the same launches with the stock k loop, on the same random weights and q8_1
// activations, and compares the outputs bit for bit. Exit 0: all equal; 1: a difference
// (the first printed); 77: no GPU.
#include "common.cuh"
#include "temper-mmvq.cuh"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "units.h"

namespace {
void check(cudaError_t e, const char * what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}

// Random blocks with the fields a dot product reads kept finite: d, dmin and the q8_1 scale in a sane range.
std::vector<uint8_t> random_rows(std::mt19937 & rng, ggml_type type, int rows, int k) {
    const size_t block = type == GGML_TYPE_Q4_K ? sizeof(block_q4_K) : sizeof(block_q6_K);
    const int blocks = rows * (k / QK_K);
    std::vector<uint8_t> bytes(block * blocks);
    for (auto & b : bytes) b = uint8_t(rng());
    std::uniform_real_distribution<float> scale(0.001f, 0.05f);
    for (int i = 0; i < blocks; ++i) {
        if (type == GGML_TYPE_Q4_K) {
            block_q4_K * q = (block_q4_K *) bytes.data() + i;
            q->dm = make_half2(__float2half(scale(rng)), __float2half(scale(rng)));
        } else {
            block_q6_K * q = (block_q6_K *) bytes.data() + i;
            q->d = __float2half(scale(rng));
        }
    }
    return bytes;
}

// mul_mat_vec_q's tuned fused launches at one column, hook v13's k loop (and with a bias alone, hook v14's
// twin without the gate) against the stock one: q4_K and q6_K weights of 70 rows (partial row blocks),
// nwarps and rows 1..8, with a bias, a SwiGLU gate, or a gate with both biases. Returns the runs; counts
// the differences in failures.
int compare_fused(std::mt19937 & rng, const void * d_y, int k, int & failures) {
    const int nrows = 70;
    std::uniform_real_distribution<float> db(-1.0f, 1.0f);
    std::vector<float> bias(nrows), gate_bias(nrows);
    for (float & b : bias) b = db(rng);
    for (float & b : gate_bias) b = db(rng);
    float *d_bias = nullptr, *d_gate_bias = nullptr;
    check(cudaMalloc(&d_bias, sizeof(float) * nrows), "cudaMalloc");
    check(cudaMalloc(&d_gate_bias, sizeof(float) * nrows), "cudaMalloc");
    check(cudaMemcpy(d_bias, bias.data(), sizeof(float) * nrows, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(d_gate_bias, gate_bias.data(), sizeof(float) * nrows, cudaMemcpyHostToDevice), "cudaMemcpy");
    const char * cases[] = {"bias", "gate", "gate and biases", "bias (the twin without the gate)"};
    int runs = 0;
    for (int q6_K = 0; q6_K < 2; ++q6_K) {
        const ggml_type t = q6_K ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
        void *d_x = nullptr, *d_gate = nullptr;
        const std::vector<uint8_t> x = random_rows(rng, t, nrows, k), gate = random_rows(rng, t, nrows, k);
        check(cudaMalloc(&d_x, x.size()), "cudaMalloc");
        check(cudaMalloc(&d_gate, gate.size()), "cudaMalloc");
        check(cudaMemcpy(d_x, x.data(), x.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
        check(cudaMemcpy(d_gate, gate.data(), gate.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
        for (int c = 0; c < 4; ++c) {
            ggml_cuda_mm_fusion_args_device fusion{};
            fusion.glu_op = GGML_GLU_OP_SWIGLU;
            if (c != 1) fusion.x_bias = d_bias;
            if (c == 1 || c == 2) fusion.gate = d_gate;
            if (c == 2) fusion.gate_bias = d_gate_bias;
            for (int w : {1, 2, 4, 8}) {
                for (int r : {1, 2, 4, 8}) {
                    std::vector<float> out[2];
                    for (int stock = 0; stock < 2; ++stock) {
                        float * d_dst = nullptr;
                        check(cudaMalloc(&d_dst, sizeof(float) * nrows), "cudaMalloc");
                        check(cudaMemset(d_dst, 0xff, sizeof(float) * nrows), "cudaMemset");
                        const uint3 one = init_fastdiv_values(1);
                        const temper_mmvq_args a = {d_x, d_y, nullptr, &fusion, d_dst, uint32_t(k), one, uint32_t(k / QK_K), uint32_t(k / QK8_1),
                                                    uint32_t(nrows), one, 0, 0, 0, one, 0, 0, 0, nrows, 1, 1, 32, 0, nullptr};
                        const bool ran = stock ? temper_exact_run_generic_fused(a, q6_K, w, r, false) : temper_exact_run_fused(a, q6_K, w, r, c == 3);
                        if (!ran) {
                            std::fprintf(stderr, "no fused launch at nwarps %d, rows %d\n", w, r);
                            std::exit(1);
                        }
                        check(cudaDeviceSynchronize(), "mul_mat_vec_q");
                        out[stock].resize(nrows);
                        check(cudaMemcpy(out[stock].data(), d_dst, sizeof(float) * nrows, cudaMemcpyDeviceToHost), "cudaMemcpy");
                        cudaFree(d_dst);
                    }
                    ++runs;
                    const char * type = q6_K ? "q6_K" : "q4_K";
                    for (int i = 0; i < nrows; ++i) {
                        if (std::memcmp(&out[0][i], &out[1][i], sizeof(float)) != 0) {
                            std::printf("DIFFERENT: fused %s with %s, nwarps %d, rows %d: output %d is %.9g, the stock loop gives %.9g\n", type,
                                        cases[c], w, r, i, out[0][i], out[1][i]);
                            ++failures;
                            break;
                        }
                        if (!std::isfinite(out[0][i])) {
                            std::printf("SUSPECT: fused %s with %s, nwarps %d, rows %d: output %d is %g\n", type, cases[c], w, r, i, out[0][i]);
                            ++failures;
                            break;
                        }
                    }
                }
            }
        }
        cudaFree(d_x);
        cudaFree(d_gate);
    }
    cudaFree(d_bias);
    cudaFree(d_gate_bias);
    return runs;
}
}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    std::mt19937 rng(48);
    const int k = 11 * QK_K, nrows[3] = {70, 33, 29}, max_cols = 4;
    const int blocks_y = k / QK8_1;
    std::vector<block_q8_1> y(size_t(blocks_y) * max_cols);
    std::uniform_real_distribution<float> dy(0.001f, 0.1f), sy(-20.0f, 20.0f);
    for (auto & b : y) {
        for (auto & q : b.qs) q = int8_t(int(rng() % 255) - 127);
        b.ds = make_half2(__float2half(dy(rng)), __float2half(sy(rng)));
    }
    void * d_y = nullptr;
    check(cudaMalloc(&d_y, y.size() * sizeof(block_q8_1)), "cudaMalloc");
    check(cudaMemcpy(d_y, y.data(), y.size() * sizeof(block_q8_1), cudaMemcpyHostToDevice), "cudaMemcpy");
    int failures = 0, runs = 0;
    for (int b_is_q6_K = 0; b_is_q6_K < 2; ++b_is_q6_K) {
        temper_mmvq_group_args g{};
        g.count = 3;
        g.vy = d_y;
        g.ncols_x = uint32_t(k);
        g.stride_col_y = uint32_t(blocks_y);
        g.warp_size = 32;
        g.stream = nullptr;
        std::vector<void *> owned;
        for (int m = 0; m < 3; ++m) {
            const ggml_type t = (m == 2 && b_is_q6_K) ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
            const std::vector<uint8_t> w = random_rows(rng, t, nrows[m], k);
            void * d_w = nullptr;
            check(cudaMalloc(&d_w, w.size()), "cudaMalloc");
            check(cudaMemcpy(d_w, w.data(), w.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
            owned.push_back(d_w);
            g.vx[m] = d_w;
            g.nrows[m] = nrows[m];
            g.stride_row_x[m] = uint32_t(k / QK_K);
            g.stride_col_dst[m] = uint32_t(nrows[m]);
            g.is_b[m] = t != GGML_TYPE_Q4_K;
        }
        const int grid_w[] = {2, 4, 8}, grid_r[] = {1, 2, 4};
        for (int ncols = 1; ncols <= max_cols; ++ncols) {
            for (int w : grid_w) {
                for (int r : grid_r) {
                    std::vector<float> out[2];
                    for (int generic = 0; generic < 2; ++generic) {
                        std::vector<float *> dst(3);
                        for (int m = 0; m < 3; ++m) {
                            check(cudaMalloc(&dst[m], sizeof(float) * nrows[m] * ncols), "cudaMalloc");
                            check(cudaMemset(dst[m], 0xff, sizeof(float) * nrows[m] * ncols), "cudaMemset");
                            g.dst[m] = dst[m];
                        }
                        const bool ran = generic ? temper_exact_run_generic(g, b_is_q6_K, ncols, w, r) : temper_exact_run(g, b_is_q6_K, ncols, w, r);
                        if (!ran) {
                            std::fprintf(stderr, "no group kernel at ncols %d, nwarps %d, rows %d\n", ncols, w, r);
                            return 1;
                        }
                        check(cudaDeviceSynchronize(), "group kernel");
                        for (int m = 0; m < 3; ++m) {
                            const size_t at = out[generic].size();
                            out[generic].resize(at + size_t(nrows[m]) * ncols);
                            check(cudaMemcpy(out[generic].data() + at, dst[m], sizeof(float) * nrows[m] * ncols, cudaMemcpyDeviceToHost), "cudaMemcpy");
                            cudaFree(dst[m]);
                        }
                    }
                    ++runs;
                    if (std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)) != 0) {
                        for (size_t i = 0; i < out[0].size(); ++i) {
                            if (std::memcmp(&out[0][i], &out[1][i], sizeof(float)) != 0) {
                                std::printf("DIFFERENT: q4_K + %s, ncols %d, nwarps %d, rows %d: output %zu is %.9g, ggml's vec_dot gives %.9g\n",
                                            b_is_q6_K ? "q6_K" : "q4_K", ncols, w, r, i, out[0][i], out[1][i]);
                                break;
                            }
                        }
                        ++failures;
                    } else if (!std::isfinite(out[0][0]) || out[0][0] == 0.0f) {
                        std::printf("SUSPECT: q4_K + %s, ncols %d, nwarps %d, rows %d: first output %g\n", b_is_q6_K ? "q6_K" : "q4_K", ncols, w, r, out[0][0]);
                        ++failures;
                    }
                }
            }
        }
        for (void * p : owned) cudaFree(p);
    }
    std::printf("%d of %d group kernels equal to ggml's vec_dot bit for bit\n", runs - failures, runs);
    const int group_failures = failures;
    failures = 0;
    const int fused_runs = compare_fused(rng, d_y, k, failures);
    std::printf("%d of %d fused mul_mat_vec_q launches (and bias-only twins) equal to the stock k loop bit for bit\n", fused_runs - failures,
                fused_runs);
    return group_failures || failures ? 1 : 0;
}
