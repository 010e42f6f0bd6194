#pragma once
// Test stand-in for ROCm 6's <hip/hip_bf16.h> (HIP 5.2 has none): the two bfloat16 types ggml-cuda's
// HIP vendor header names, with the float conversions and the pair constructor its headers use.
#include <hip/hip_runtime.h>

struct __hip_bfloat16 {
  unsigned short data;
  __hip_bfloat16() = default;
  __host__ __device__ __hip_bfloat16(float f) {  // round to nearest even
    const unsigned int u = __builtin_bit_cast(unsigned int, f);
    data = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  __host__ __device__ operator float() const { return __builtin_bit_cast(float, static_cast<unsigned int>(data) << 16); }
};

struct __hip_bfloat162 {
  __hip_bfloat16 x, y;
  __hip_bfloat162() = default;
  __host__ __device__ __hip_bfloat162(__hip_bfloat16 a, __hip_bfloat16 b) : x(a), y(b) {}
};
