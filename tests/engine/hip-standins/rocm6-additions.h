#pragma once
// Test stand-in (passed with -include): half-precision functions ROCm 6's HIP headers have and
// HIP 5.2's lack, as far as ggml-cuda's common.cuh uses them (__hmax, __half2 warp shuffles).
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

__device__ inline __half __hmax(__half a, __half b) { return __half2float(a) < __half2float(b) ? b : a; }

__device__ inline __half2 __shfl_xor(__half2 var, int lane_mask, int width = warpSize) {
  return __builtin_bit_cast(__half2, __shfl_xor(__builtin_bit_cast(int, var), lane_mask, width));
}

__device__ inline __half2 __shfl_up(__half2 var, unsigned int delta, int width = warpSize) {
  return __builtin_bit_cast(__half2, __shfl_up(__builtin_bit_cast(int, var), delta, width));
}
