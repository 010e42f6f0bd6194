// Upstream's mul_mat_vec_q, hooked (`temper engine patch`), for bench/kernel_ab.cu: compiled with
// ggml's own flags (--use_fast_math) from the kernel part of the hooked mmvq.cu that
// bench/regcompare.py --temper writes (<work>/ggml-d99724f-hooked_mmvq_kernel.cuh, on the include
// path as upstream_mmvq_kernel.cuh), launched as the engine launches it (PDL, no fusion).
#include "upstream_mmvq_kernel.cuh"

// The kernel part of mmvq.cu also holds ggml_cuda_should_use_mmvq, which calls into ggml's core
// library; this program links no ggml, and never calls it.
bool ggml_is_quantized(enum ggml_type) { return true; }

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
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  const uint32_t blocks_per_row = uint32_t(k / ggml_cuda_type_traits<Type>::qk);
  return int(cudaLaunchKernelEx(&cfg, mul_mat_vec_q<Type, 1, false, false, false, W, R>, vx, vy,
                                static_cast<const int32_t*>(nullptr), fusion, dst, uint32_t(k), one, blocks_per_row,
                                uint32_t(k / 32), uint32_t(nrows), one, 0u, 0u, 0u, one, 0u, 0u, 0u, 0u));
}

// The configs bench/kernel_ab.cu times: q4_1 (ggml type 3) and q2_K (10).
int upstream_launch(int type, int w, int r, const void* vx, const void* vy, float* dst, int nrows, int k) {
  if (type == 3 && w == 4 && r == 1) return launch<GGML_TYPE_Q4_1, 4, 1>(vx, vy, dst, nrows, k);
  if (type == 3 && w == 2 && r == 2) return launch<GGML_TYPE_Q4_1, 2, 2>(vx, vy, dst, nrows, k);
  if (type == 3 && w == 8 && r == 4) return launch<GGML_TYPE_Q4_1, 8, 4>(vx, vy, dst, nrows, k);
  if (type == 3 && w == 1 && r == 2) return launch<GGML_TYPE_Q4_1, 1, 2>(vx, vy, dst, nrows, k);
  if (type == 10 && w == 8 && r == 1) return launch<GGML_TYPE_Q2_K, 8, 1>(vx, vy, dst, nrows, k);
  if (type == 10 && w == 4 && r == 1) return launch<GGML_TYPE_Q2_K, 4, 1>(vx, vy, dst, nrows, k);
  return -1;
}
