#pragma once
// Device-side basics in the HIP dialect: the target's wave size, 4×int8 dot products, byte-wise
// SIMD helpers, half conversions and wave reductions. On NVIDIA everything comes through
// hip_on_cuda.h; on AMD through HIP's own runtime header.
#if defined(TEMPER_KERNELS_HOST)
#include "host_emulation.h"  // plain C++ stand-ins, so unit tests can run vec_dot on the CPU
#elif defined(__CUDACC__) && !defined(__HIP__)
#define TEMPER_CUDA_DEVICE 1
#include "hip_on_cuda.h"
#else
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#endif

#include <stdint.h>

#include "temper/mmvq_traits.h"
#include "temper/quant/blocks.h"

namespace temper::kernels {

// The wave size this device pass compiles for. One fat binary holds wave64 (GCN/CDNA) and
// wave32 (RDNA, NVIDIA) code; the host pass never runs kernel bodies, so its value is a placeholder.
#if defined(TEMPER_CUDA_DEVICE)
constexpr int kWarpSize = 32;
#elif defined(TEMPER_KERNELS_HOST)
constexpr int kWarpSize = 32;
#elif defined(__HIP_DEVICE_COMPILE__)
#if !defined(__AMDGCN_WAVEFRONT_SIZE)
#error "hipcc did not define __AMDGCN_WAVEFRONT_SIZE for this target"
#endif
constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
constexpr int kWarpSize = 64;
#endif

// Which dot-product instruction the AMD target has, per target as ggml's HIP build picks it:
// sdot4 on gfx906 and CDNA1-4 (gfx908/90a/942/950) and RDNA2, sudot4 on RDNA3/3.5/4 (gfx11xx, gfx12xx),
// a sequence of byte multiplies (v_mul_i32_i24 with SDWA byte selects) on gfx900 and RDNA1
// (gfx1010/1012), and a plain byte loop elsewhere (e.g. gfx940/941, gfx803, gfx1011).
#if defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx942__) ||                   \
    defined(__gfx950__) || defined(__gfx1030__) || defined(__gfx1031__) || defined(__gfx1032__) ||                \
    defined(__gfx1033__) || defined(__gfx1034__) || defined(__gfx1035__) || defined(__gfx1036__) ||               \
    defined(__gfx1037__)
#define TEMPER_AMD_SDOT4 1
#elif defined(__GFX11__) || defined(__GFX12__) || defined(__gfx1100__) || defined(__gfx1101__) ||                  \
    defined(__gfx1102__) || defined(__gfx1103__) || defined(__gfx1150__) || defined(__gfx1151__) ||               \
    defined(__gfx1152__) || defined(__gfx1153__) || defined(__gfx1200__) || defined(__gfx1201__)
#define TEMPER_AMD_SUDOT4 1
#elif defined(__gfx900__) || defined(__gfx1010__) || defined(__gfx1012__)
#define TEMPER_AMD_MUL_I24 1
#endif

// c + Σ a.byte[i]·b.byte[i] over signed bytes.
__device__ __forceinline__ int dp4a(int a, int b, int c) {
#if defined(TEMPER_CUDA_DEVICE)
  return __dp4a(a, b, c);
#elif defined(TEMPER_AMD_SDOT4)
  return __builtin_amdgcn_sdot4(a, b, c, false);
#elif defined(TEMPER_AMD_SUDOT4)
  return __builtin_amdgcn_sudot4(true, a, true, b, c, false);
#elif defined(TEMPER_AMD_MUL_I24)
  // No dot instruction: four sign-extended byte products (SDWA selects byte n of both operands),
  // summed pairwise into c with v_add3_u32.
  int p0, p1;
  asm("v_mul_i32_i24 %1, sext(%3), sext(%4) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_0\n\t"
      "v_mul_i32_i24 %2, sext(%3), sext(%4) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:BYTE_1\n\t"
      "v_add3_u32 %0, %1, %2, %0\n\t"
      "v_mul_i32_i24 %1, sext(%3), sext(%4) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_2 src1_sel:BYTE_2\n\t"
      "v_mul_i32_i24 %2, sext(%3), sext(%4) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_3 src1_sel:BYTE_3\n\t"
      "v_add3_u32 %0, %1, %2, %0"
      : "+v"(c), "=&v"(p0), "=&v"(p1)
      : "v"(a), "v"(b));
  return c;
#else
  const int8_t* x = reinterpret_cast<const int8_t*>(&a);
  const int8_t* y = reinterpret_cast<const int8_t*>(&b);
  return c + x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3];
#endif
}

// Per-byte a - b, saturating to int8 (CUDA's __vsubss4). On AMD one saturating subtract of a 4 × int8
// vector where the compiler has it, as ggml's HIP build spells __vsubss4 (the byte loop compiles to
// different code and registers).
__device__ __forceinline__ int vsubss4(int a, int b) {
#if defined(TEMPER_CUDA_DEVICE)
  return __vsubss4(a, b);
#elif !defined(TEMPER_KERNELS_HOST) && __has_builtin(__builtin_elementwise_sub_sat)
  typedef int8_t Bytes4 __attribute__((ext_vector_type(4)));
  const Bytes4 d = __builtin_elementwise_sub_sat(__builtin_bit_cast(Bytes4, a), __builtin_bit_cast(Bytes4, b));
  return __builtin_bit_cast(int, d);
#else
  int r;
  const int8_t* x = reinterpret_cast<const int8_t*>(&a);
  const int8_t* y = reinterpret_cast<const int8_t*>(&b);
  int8_t* z = reinterpret_cast<int8_t*>(&r);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int d = int(x[i]) - int(y[i]);
    z[i] = static_cast<int8_t>(d > 127 ? 127 : (d < -128 ? -128 : d));
  }
  return r;
#endif
}

// Per-byte a - b, wrapping (CUDA's __vsub4).
__device__ __forceinline__ int vsub4(int a, int b) {
#if defined(TEMPER_CUDA_DEVICE)
  return __vsub4(a, b);
#else
  const uint32_t x = static_cast<uint32_t>(a), y = static_cast<uint32_t>(b);
  // Subtract in each byte lane without borrows crossing lanes.
  const uint32_t r = ((x | 0x80808080u) - (y & 0x7f7f7f7fu)) ^ ((x ^ ~y) & 0x80808080u);
  return static_cast<int>(r);
#endif
}

// 0xFF in each byte where a.byte != b.byte, else 0 (CUDA's __vcmpne4).
__device__ __forceinline__ int vcmpne4(int a, int b) {
#if defined(TEMPER_CUDA_DEVICE)
  return static_cast<int>(__vcmpne4(a, b));
#else
  uint32_t r = 0;
  const uint32_t x = static_cast<uint32_t>(a), y = static_cast<uint32_t>(b);
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (((x >> (8 * i)) & 0xff) != ((y >> (8 * i)) & 0xff)) r |= 0xffu << (8 * i);
  return static_cast<int>(r);
#endif
}

__device__ __forceinline__ uint32_t popc(uint32_t v) {
#if defined(TEMPER_CUDA_DEVICE)
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}

// Bytes of a little-endian int at 32-bit index i32 of a buffer with 2- or 4-byte alignment.
__device__ __forceinline__ int get_int_b2(const void* x, int i32) {
  const uint16_t* x16 = static_cast<const uint16_t*>(x);
  return int(x16[2 * i32]) | (int(x16[2 * i32 + 1]) << 16);
}
__device__ __forceinline__ int get_int_b4(const void* x, int i32) { return static_cast<const int*>(x)[i32]; }
__device__ __forceinline__ int get_int_b1(const void* x, int i32) {
  const uint8_t* x8 = static_cast<const uint8_t*>(x);
  return int(x8[4 * i32]) | (int(x8[4 * i32 + 1]) << 8) | (int(x8[4 * i32 + 2]) << 16) | (int(x8[4 * i32 + 3]) << 24);
}

__device__ __forceinline__ __half as_half(uint16_t bits) {
  return __ushort_as_half(bits);
}
__device__ __forceinline__ float half_to_float(uint16_t bits) { return __half2float(as_half(bits)); }
// A block's (d, s) / (d, m) pair as the half2 upstream keeps in a union: one 32-bit load. `pair`
// points at the first half of two at a 4-byte aligned offset of a 4-byte aligned block.
__device__ __forceinline__ __half2 load_half2(const uint16_t* pair) {
#if defined(TEMPER_KERNELS_HOST)
  return __halves2half2(as_half(pair[0]), as_half(pair[1]));
#else
  return *reinterpret_cast<const __half2*>(pair);
#endif
}
// The first half of such a pair, read as upstream does (__low2float of the 32-bit load).
__device__ __forceinline__ float load_low_float(const uint16_t* pair) { return __low2float(load_half2(pair)); }

// A float division where upstream divides: ggml's CUDA build compiles with --use_fast_math, which
// makes it div.approx; Temper builds without fast math, so it asks for that division explicitly.
__device__ __forceinline__ float div_as_upstream(float x, float y) {
#if defined(TEMPER_CUDA_DEVICE)
  return __fdividef(x, y);
#else
  return x / y;
#endif
}

// Select 4 bytes out of a 16-byte table with the 8 nibble indices of q4: .x gets the low
// nibbles (even values), .y the high nibbles (odd values).
__device__ __forceinline__ int2 lookup_table16(int q4, const int8_t* table) {
#if defined(TEMPER_CUDA_DEVICE)
  const uint32_t* t32 = reinterpret_cast<const uint32_t*>(table);
  uint32_t tmp[2];
  const uint32_t high_sel = 0x32103210u | ((static_cast<uint32_t>(q4) & 0x88888888u) >> 1);
#pragma unroll
  for (uint32_t i = 0; i < 2; ++i) {
    const uint32_t shift = 16 * i;
    // q4 >> shift is an arithmetic shift as upstream's; __byte_perm reads only its low 16 bits.
    const uint32_t lo = __byte_perm(t32[0], t32[1], q4 >> shift);
    const uint32_t hi = __byte_perm(t32[2], t32[3], q4 >> shift);
    tmp[i] = __byte_perm(lo, hi, high_sel >> shift);
  }
  return make_int2(static_cast<int>(__byte_perm(tmp[0], tmp[1], 0x6420)),
                   static_cast<int>(__byte_perm(tmp[0], tmp[1], 0x7531)));
#elif defined(TEMPER_KERNELS_HOST)
  int2 r;
  int8_t* x = reinterpret_cast<int8_t*>(&r.x);
  int8_t* y = reinterpret_cast<int8_t*>(&r.y);
  for (int i = 0; i < 4; ++i) {
    x[i] = table[(q4 >> (8 * i)) & 0xF];
    y[i] = table[(q4 >> (8 * i + 4)) & 0xF];
  }
  return r;
#else
  const uint32_t* v = reinterpret_cast<const uint32_t*>(table);
  // The odd nibbles by an arithmetic shift, as upstream's (the masks below drop the sign bits).
  const uint32_t q_even = static_cast<uint32_t>(q4), q_odd = static_cast<uint32_t>(q4 >> 4);
  const uint32_t even_lo = __builtin_amdgcn_perm(v[1], v[0], q_even & 0x07070707u);
  const uint32_t odd_lo = __builtin_amdgcn_perm(v[1], v[0], q_odd & 0x07070707u);
  const uint32_t even_hi = __builtin_amdgcn_perm(v[3], v[2], q_even & 0x07070707u);
  const uint32_t odd_hi = __builtin_amdgcn_perm(v[3], v[2], q_odd & 0x07070707u);
  const uint32_t sel_even = 0x03020100u | ((q_even & 0x08080808u) >> 1);
  const uint32_t sel_odd = 0x03020100u | ((q_odd & 0x08080808u) >> 1);
  return make_int2(static_cast<int>(__builtin_amdgcn_perm(even_hi, even_lo, sel_even)),
                   static_cast<int>(__builtin_amdgcn_perm(odd_hi, odd_lo, sel_odd)));
#endif
}

template <int Width>
__device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset >>= 1) x += __shfl_xor(x, offset, Width);
  return x;
}

template <int Width>
__device__ __forceinline__ float warp_reduce_max(float x) {
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor(x, offset, Width));
  return x;
}

// E8M0 exponent to float (0 maps to 2^-127 as a denormal, as ggml does). CUDA 12.8+ converts with
// the e8m0 -> bf16 intrinsic as upstream does; elsewhere the exponent is placed by bit arithmetic.
__device__ __forceinline__ float e8m0_to_float(uint8_t x) {
#if defined(TEMPER_CUDA_DEVICE) && CUDART_VERSION >= 12080
  return static_cast<float>(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(x)));
#else
  const uint32_t bits = x == 0 ? 0x00400000u : (static_cast<uint32_t>(x) << 23);
  return __uint_as_float(bits);
#endif
}

// Unsigned E4M3 (NVFP4 sub-block scale) to float, halved: ggml pairs it with the doubled E2M1
// values of TEMPER_KVALUES_MXFP4. Bit 7 is ignored; 0 and the NaN code 0x7F decode to 0.
__device__ __forceinline__ float ue4m3_to_float_half(uint8_t x) {
  x &= 0x7f;
  if (x == 0 || x == 0x7f) return 0.0f;
  const int exp = x >> 3, man = x & 0x7;
  const float m = exp == 0 ? man / 8.0f : 1.0f + man / 8.0f;
  return ldexpf(m, (exp == 0 ? 1 : exp) - 8);
}

}  // namespace temper::kernels
