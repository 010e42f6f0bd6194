#pragma once
// What a program that links group_unit.cu's objects (the hook's kernels outside ggml's library) must
// define, and those objects' entry points: included once per program, by hook_exact's main.cu and by
// bench/fused_ab.cu.
#include <cstdio>
#include <cstdlib>

// The group kernels as the hook compiles them (temper_exact_run) and with ggml's vec_dot and the stock k
// loop (temper_exact_run_generic); the tuned fused launches the same two ways, or hook v14's bias-only twin.
bool temper_exact_run(const temper_mmvq_group_args & g, bool b_is_q6_K, int ncols, int nwarps, int rows);
bool temper_exact_run_generic(const temper_mmvq_group_args & g, bool b_is_q6_K, int ncols, int nwarps, int rows);
bool temper_exact_run_fused(const temper_mmvq_args & a, bool q6_K, int nwarps, int rows, bool bias_only);
bool temper_exact_run_generic_fused(const temper_mmvq_args & a, bool q6_K, int nwarps, int rows, bool bias_only);

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
void temper_mmvq_note_launch(int, int) {}
