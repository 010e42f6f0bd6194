// Upstream's mul_mat_vec_q, hooked (`temper engine patch`), for bench/kernel_ab.cu: compiled with
// ggml's own flags (--use_fast_math) from the kernel part of the hooked mmvq.cu that
// bench/regcompare.py --temper writes (<work>/ggml-d99724f-hooked_mmvq_kernel.cuh, on the include
// path as upstream_mmvq_kernel.cuh), launched as the engine launches it (PDL, no fusion), for the
// 13 tier-1 types × the ncols-1 grid. For ggml 7180759 (bench/kernel_ab.sh ENGINE=ggml-7180759):
// UPSTREAM_TEMPLATE_FLAGS "false" (its template has no halve_iters) and UPSTREAM_PDL 0.
#include "upstream_mmvq_kernel.cuh"

#ifndef UPSTREAM_TEMPLATE_FLAGS
#define UPSTREAM_TEMPLATE_FLAGS false, false  // d99724f: small_k, halve_iters
#endif
#ifndef UPSTREAM_PDL
#define UPSTREAM_PDL 1
#endif

// The kernel part of mmvq.cu also holds ggml_cuda_should_use_mmvq, which calls into ggml's core
// library; this program links no ggml, and never calls it.
bool ggml_is_quantized(enum ggml_type) { return true; }

using Launcher = int (*)(const void* vx, const void* vy, float* dst, int nrows, int k);

template <ggml_type Type, int W, int R>
static int launch(const void* vx, const void* vy, float* dst, int nrows, int k) {
  const uint3 one = init_fastdiv_values(1);
  ggml_cuda_mm_fusion_args_device fusion{};
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((nrows + R - 1) / R, 1, 1);
  cfg.blockDim = dim3(32, W, 1);
  cfg.attrs = UPSTREAM_PDL ? &attr : nullptr;
  cfg.numAttrs = UPSTREAM_PDL ? 1 : 0;
  const uint32_t blocks_per_row = uint32_t(k / ggml_cuda_type_traits<Type>::qk);
  return int(cudaLaunchKernelEx(&cfg, mul_mat_vec_q<Type, 1, false, UPSTREAM_TEMPLATE_FLAGS, W, R>, vx, vy,
                                static_cast<const int32_t*>(nullptr), fusion, dst, uint32_t(k), one, blocks_per_row,
                                uint32_t(k / 32), uint32_t(nrows), one, 0u, 0u, 0u, one, 0u, 0u, 0u, 0u));
}

template <ggml_type Type, int W>
static void fill_row(Launcher* row) {
  row[0] = &launch<Type, W, 1>;
  row[1] = &launch<Type, W, 2>;
  row[2] = &launch<Type, W, 4>;
  row[3] = &launch<Type, W, 8>;
}
template <ggml_type Type>
static void fill(Launcher t[5][4]) {
  fill_row<Type, 1>(t[0]);
  fill_row<Type, 2>(t[1]);
  fill_row<Type, 4>(t[2]);
  fill_row<Type, 8>(t[3]);
  fill_row<Type, 16>(t[4]);
}

static int index_of(int v, const int* list, int n) {
  for (int i = 0; i < n; ++i)
    if (list[i] == v) return i;
  return -1;
}

// type: ggml type id; w in 1,2,4,8,16; r in 1,2,4,8. nullptr for a type or config not here.
Launcher upstream_launcher(int type, int w, int r) {
  static const int ws[] = {1, 2, 4, 8, 16}, rs[] = {1, 2, 4, 8};
  Launcher t[5][4] = {};
  switch (type) {
    case 2: fill<GGML_TYPE_Q4_0>(t); break;
    case 3: fill<GGML_TYPE_Q4_1>(t); break;
    case 6: fill<GGML_TYPE_Q5_0>(t); break;
    case 7: fill<GGML_TYPE_Q5_1>(t); break;
    case 8: fill<GGML_TYPE_Q8_0>(t); break;
    case 10: fill<GGML_TYPE_Q2_K>(t); break;
    case 11: fill<GGML_TYPE_Q3_K>(t); break;
    case 12: fill<GGML_TYPE_Q4_K>(t); break;
    case 13: fill<GGML_TYPE_Q5_K>(t); break;
    case 14: fill<GGML_TYPE_Q6_K>(t); break;
    case 20: fill<GGML_TYPE_IQ4_NL>(t); break;
    case 23: fill<GGML_TYPE_IQ4_XS>(t); break;
    case 39: fill<GGML_TYPE_MXFP4>(t); break;
    default: return nullptr;
  }
  const int wi = index_of(w, ws, 5), ri = index_of(r, rs, 4);
  return wi < 0 || ri < 0 ? nullptr : t[wi][ri];
}
