// hook_exact_test's program: runs every q4_K group kernel of the group grid (q4_K with q4_K, q4_K with
// q6_K; batch widths 1..4; partial row blocks; a k of 11 q4_K blocks) twice, as the hook compiles it and
// with ggml's own vec_dot for every type, on the same random weights and q8_1 activations, and
// compares the outputs bit for bit. Exit 0: all equal; 1: a difference (the first printed); 77: no GPU.
#include "common.cuh"
#include "temper-mmvq.cuh"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

bool temper_exact_run(const temper_mmvq_group_args & g, bool b_is_q6_K, int ncols, int nwarps, int rows);
bool temper_exact_run_generic(const temper_mmvq_group_args & g, bool b_is_q6_K, int ncols, int nwarps, int rows);

// What the kernels' error paths call (ggml-cuda.cu defines them in the engine).
void ggml_cuda_error(const char * stmt, const char * func, const char * file, int line, const char * msg) {
    std::fprintf(stderr, "CUDA error: %s (%s in %s at %s:%d)\n", msg, stmt, func, file, line);
    std::exit(2);
}
int ggml_cuda_get_device() {
    int d = 0;
    cudaGetDevice(&d);
    return d;
}

// Never called: what mmvq.cu's host decisions, compiled in with its kernels, refer to.
bool ggml_is_quantized(enum ggml_type) { std::abort(); }
int temper_mmvq_mmid_max_batch(int, int) { std::abort(); }
bool temper_mmvq_use_mmvq(int, long long, bool) { std::abort(); }

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
    return failures ? 1 : 0;
}
