#pragma once
// Host-callable entry points into the compiled kernels. Plain C++ (no HIP or CUDA headers), so
// core's backend includes it whichever toolchain built the kernels. Errors come back as the
// runtime's own error code (hipError_t / cudaError_t as int); the backend turns them into text.
#include <cstdint>

// A build may hold both kernel libraries (HIP and CUDA); the CUDA one lives in an inline namespace
// so its symbols (these functions and its kernel stubs) never collide with the HIP one's. Sources
// compiled for CUDA define TEMPER_GPU_CUDA; AMD symbols stay temper::kernels::mmvq<...>.
#if defined(TEMPER_GPU_CUDA)
#define TEMPER_KERNELS_ABI_BEGIN inline namespace cuda {
#define TEMPER_KERNELS_ABI_END }
#else
#define TEMPER_KERNELS_ABI_BEGIN
#define TEMPER_KERNELS_ABI_END
#endif

namespace temper::kernels {
TEMPER_KERNELS_ABI_BEGIN

constexpr int kNotInstantiated = -1;

struct MmvqLaunch {
  uint32_t type = 0;         // ggml type id of the weights
  int ncols = 1;             // batch columns, 1..8
  int nwarps = 1;            // warps per block
  int rows_per_block = 1;    // rows each block owns
  int warp_size = 32;        // the device's wave size (the kernel is compiled for it)
  int variant = 0;           // mmvq::KernelVariant: which engine version's kernel to launch
  const void* weights = nullptr;  // nrows rows of row_bytes(type, k), contiguous
  const void* act_q8_1 = nullptr; // ncols columns of k/32 q8_1 blocks, contiguous
  float* dst = nullptr;           // ncols columns of nrows floats, column-major (stride nrows)
  int nrows = 0;
  int k = 0;                 // row length in values (multiple of the type's block size)
  void* stream = nullptr;    // hipStream_t / cudaStream_t; nullptr = default stream
};

// One same-input group launch (kernels/mmvq_group.h): `count` (2..4) GEMVs of the same K reading the
// same activations, each of type_a or type_b (is_b), at one config of mmvq::kGroupNwarps ×
// kGroupRowsPerBlock and batch width 1..mmvq::kGroupMaxNcols. Only run-time compiled kernel libraries
// have group kernels (the kernel cache's group units); built-in kernel sets do not.
struct MmvqGroupLaunch {
  uint32_t type_a = 0, type_b = 0;
  int ncols = 1, nwarps = 2, rows_per_block = 1, warp_size = 32;
  int variant = 0;  // mmvq::KernelVariant: d99724f and later launch with PDL on Hopper, as the hook does
  int count = 0;
  const void* weights[4] = {};  // member m: nrows[m] rows of row_bytes(its type, k)
  float* dst[4] = {};           // member m: ncols columns of nrows[m] floats, column-major
  int nrows[4] = {};
  bool is_b[4] = {};
  const void* act_q8_1 = nullptr;  // ncols columns of k/32 q8_1 blocks
  int k = 0;
  void* stream = nullptr;
};

// 0 on a successful launch (asynchronous: errors of the kernel itself surface at the next sync),
// a runtime error code, or kNotInstantiated when this build has no such instantiation.
int launch_mmvq(const MmvqLaunch& launch);

// Activation quantization to q8_1, one launch for all columns: x is ncols columns of k floats,
// y receives ncols × k/32 blocks. k must be a multiple of 32 (llama.cpp pads to 512; we require 32).
int launch_quantize_q8_1(const float* x, void* y_q8_1, int k, int ncols, void* stream);

// The norm that writes its GEMVs' q8_1 activations (the hook's rms_norm_q8_1 structure): `rows` (1..8)
// rows of k floats x → dst = ggml's RMS_NORM·MUL with the weight row w, and y_q8_1 = its q8_1 copy
// (rows × k/32 blocks). k must be a multiple of 32.
int launch_rms_norm_q8_1(const float* x, const float* w, float* dst, void* y_q8_1, int k, int rows, float eps, void* stream);

// Whether this build compiled the instantiation (type, ncols, nwarps, rows_per_block) for warp_size.
bool mmvq_instantiated(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size);

// The kernel's function pointer, for hipFuncGetAttributes / cudaFuncGetAttributes and the runtime's
// occupancy calculator; nullptr when not instantiated.
const void* mmvq_function(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size, int variant = 0);

// The mangled symbol name of the instantiation (engine variant 0, the one AMD code objects hold) as it appears in code objects, so static
// analysis of AMD code objects can find its metadata. Empty when not instantiated.
const char* mmvq_symbol(uint32_t type, int ncols, int nwarps, int rows_per_block, int warp_size);

// Test-only: a kernel that writes far out of bounds, to exercise fault handling.
int launch_faulting_kernel(void* stream);

TEMPER_KERNELS_ABI_END
}  // namespace temper::kernels
