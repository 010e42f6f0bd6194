#pragma once
// Plain C++ stand-ins for the few device types and intrinsics vec_dot uses, so the per-type dot
// products can be compiled for the CPU and checked against core/quant's reference in unit tests
// without a GPU (TEMPER_KERNELS_HOST). Half arithmetic rounds like the hardware: a product of
// two halves is exact in float, then rounded once to half.
#include <bit>
#include <math.h>
#include <cstdint>

#include "temper/quant/fp.h"

#define __device__
#define __host__
#define __forceinline__ inline

struct int2 {
  int x, y;
};
inline int2 make_int2(int x, int y) { return {x, y}; }
struct uint2 {
  uint32_t x, y;
};
struct float2 {
  float x, y;
};
struct __half {
  uint16_t bits;
};
struct __half2 {
  __half x, y;
};
inline __half __ushort_as_half(uint16_t b) { return {b}; }
inline float __half2float(__half h) { return temper::quant::fp16_to_fp32(h.bits); }
inline __half __float2half_rn(float f) { return {temper::quant::fp32_to_fp16(f)}; }
inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline float __low2float(__half2 h) { return __half2float(h.x); }
inline float2 __half22float2(__half2 h) { return {__half2float(h.x), __half2float(h.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) {
  return {__float2half_rn(__half2float(a.x) * __half2float(b.x)), __float2half_rn(__half2float(a.y) * __half2float(b.y))};
}
inline float __uint_as_float(uint32_t u) { return std::bit_cast<float>(u); }
// Wave operations are never called on the host; declared so the templates parse.
template <typename T>
T __shfl_xor(T v, int, int = 32) {
  return v;
}
