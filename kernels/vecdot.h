#pragma once
// One thread's share of a weight block · q8_1 activation dot product, per quant type: the data
// flow of ggml-cuda's vec_dot_<type>_q8_1 (vecdotq.cuh) re-expressed. `kbx` is the weight block,
// `iqs` the thread's first 32-bit int of quants inside it (a multiple of vdr), `y` the q8_1 block
// aligned with the weight block's first value. Integer dp4a sums are combined with the float scales
// in upstream's order, so results match core/quant's integer reference (dot_q8_1) tightly.
#include "device_common.h"

namespace temper::kernels {

using quant::BlockQ8_1;

// Types as template arguments: ggml ids.
enum : unsigned {
  kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13,
  kQ6_K = 14, kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21,
  kIQ2_S = 22, kIQ4_XS = 23, kIQ1_M = 29, kMXFP4 = 39, kNVFP4 = 40, kQ1_0 = 41,
};

// q8_1's (d, s) is read as one 32-bit half2 (blocks are 36 bytes, 4-byte aligned), d as its low half.
__device__ __forceinline__ float q8_1_d(const BlockQ8_1& b) { return load_low_float(&b.d); }
__device__ __forceinline__ __half2 q8_1_ds(const BlockQ8_1& b) { return load_half2(&b.d); }

// Value tables in device memory (as upstream keeps them), from the CPU reference's initialisers;
// 4-byte aligned because the lookup reads them as 32-bit words.
alignas(4) static const __device__ int8_t kValuesIq4nl[16] = {TEMPER_KVALUES_IQ4NL};
alignas(4) static const __device__ int8_t kValuesMxfp4[16] = {TEMPER_KVALUES_MXFP4};

template <unsigned Type>
__device__ __forceinline__ float vec_dot(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y, const int& kbx,
                                         const int& iqs);

// ---- 32-value legacy types -------------------------------------------------------------------------
// q4_0: nibbles 0..15 with an implicit -8, folded in through the activation sum s. Like every
// vec_dot here, all quants are loaded before any is used, in upstream's order: the compiler's
// unrolling and register allocation follow the order of the source.
template <>
__device__ __forceinline__ float vec_dot<kQ4_0>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int vdr = 2, qi = 4;
  const quant::BlockQ4_0* b = static_cast<const quant::BlockQ4_0*>(vbq) + kbx;
  int v[vdr], u[2 * vdr];
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    v[i] = get_int_b2(b->qs, iqs + i);
    u[2 * i + 0] = get_int_b4(y->qs, iqs + i);
    u[2 * i + 1] = get_int_b4(y->qs, iqs + i + qi);
  }
  int sumi = 0;
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    const int lo = (v[i] >> 0) & 0x0F0F0F0F, hi = (v[i] >> 4) & 0x0F0F0F0F;  // both halves first, as upstream
    sumi = dp4a(lo, u[2 * i + 0], sumi);
    sumi = dp4a(hi, u[2 * i + 1], sumi);
  }
  const float2 ds8 = __half22float2(q8_1_ds(*y));
  return half_to_float(b->d) * (sumi * ds8.x - (8 * vdr / qi) * ds8.y);
}

// q4_1: nibbles with a per-block minimum m; (d·d8, m·s8) as one half2 product (FAST_FP16 path).
template <>
__device__ __forceinline__ float vec_dot<kQ4_1>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int vdr = 2, qi = 4;
  // On NVIDIA the quants are read through a block whose first member is 32 bits wide, as upstream's
  // half2 union: nvcc then folds the offset of qs into the block's address as it does for upstream
  // (with the two 16-bit halves first it folded it into the index: 8 registers more at rows 2).
  // On AMD clang-19 gives upstream's counts when they are read through the block itself (through Words
  // 1 VGPR more at most configs, 10 more at rows 16).
  struct Words { uint32_t dm; uint8_t qs[16]; };
  static_assert(sizeof(Words) == sizeof(quant::BlockQ4_1), "q4_1 block layout");
#if defined(TEMPER_CUDA_DEVICE)
  using QuantBlock = Words;
#else
  using QuantBlock = quant::BlockQ4_1;
#endif
  const QuantBlock* w = static_cast<const QuantBlock*>(vbq) + kbx;
  const quant::BlockQ4_1* b = static_cast<const quant::BlockQ4_1*>(vbq) + kbx;
  int v[vdr], u[2 * vdr];
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    v[i] = get_int_b4(w->qs, iqs + i);
    u[2 * i + 0] = get_int_b4(y->qs, iqs + i);
    u[2 * i + 1] = get_int_b4(y->qs, iqs + i + qi);
  }
  int sumi = 0;
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    const int lo = (v[i] >> 0) & 0x0F0F0F0F, hi = (v[i] >> 4) & 0x0F0F0F0F;  // both halves first, as upstream
    sumi = dp4a(lo, u[2 * i + 0], sumi);
    sumi = dp4a(hi, u[2 * i + 1], sumi);
  }
  const float2 dm = __half22float2(__hmul2(load_half2(&b->d), q8_1_ds(*y)));
  // Each of the qi/vdr threads on this block adds its share of the m·s8 term.
  return sumi * dm.x + div_as_upstream(dm.y, 8 / (vdr * 2));
}

// The fifth bits of q5_0 / q5_1 moved into bit 4 of each byte (low and high nibble halves).
__device__ __forceinline__ int q5_low(int vl, int vh) {
  int v = (vl >> 0) & 0x0F0F0F0F;
  v |= (vh << 4) & 0x00000010;
  v |= (vh << 11) & 0x00001000;
  v |= (vh << 18) & 0x00100000;
  v |= (vh << 25) & 0x10000000;
  return v;
}
__device__ __forceinline__ int q5_high(int vl, int vh) {
  int v = (vl >> 4) & 0x0F0F0F0F;
  v |= (vh >> 12) & 0x00000010;
  v |= (vh >> 5) & 0x00001000;
  v |= (vh << 2) & 0x00100000;
  v |= (vh << 9) & 0x10000000;
  return v;
}

template <>
__device__ __forceinline__ float vec_dot<kQ5_0>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int vdr = 2, qi = 4;
  const quant::BlockQ5_0* b = static_cast<const quant::BlockQ5_0*>(vbq) + kbx;
  int vl[vdr], vh[vdr], u[2 * vdr];
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    vl[i] = get_int_b2(b->qs, iqs + i);
    vh[i] = get_int_b2(b->qh, 0) >> (4 * (iqs + i));
    u[2 * i + 0] = get_int_b4(y->qs, iqs + i);
    u[2 * i + 1] = get_int_b4(y->qs, iqs + i + qi);
  }
  int sumi = 0;
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    sumi = dp4a(q5_low(vl[i], vh[i]), u[2 * i + 0], sumi);
    sumi = dp4a(q5_high(vl[i], vh[i]), u[2 * i + 1], sumi);
  }
  const float2 ds8 = __half22float2(q8_1_ds(*y));
  return half_to_float(b->d) * (sumi * ds8.x - (16 * vdr / qi) * ds8.y);
}

template <>
__device__ __forceinline__ float vec_dot<kQ5_1>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int vdr = 2, qi = 4;
  const quant::BlockQ5_1* b = static_cast<const quant::BlockQ5_1*>(vbq) + kbx;
  int vl[vdr], vh[vdr], u[2 * vdr];
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    vl[i] = get_int_b4(b->qs, iqs + i);
    vh[i] = get_int_b4(b->qh, 0) >> (4 * (iqs + i));
    u[2 * i + 0] = get_int_b4(y->qs, iqs + i);
    u[2 * i + 1] = get_int_b4(y->qs, iqs + i + qi);
  }
  int sumi = 0;
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    sumi = dp4a(q5_low(vl[i], vh[i]), u[2 * i + 0], sumi);
    sumi = dp4a(q5_high(vl[i], vh[i]), u[2 * i + 1], sumi);
  }
  const float2 dm = __half22float2(__hmul2(load_half2(&b->d), q8_1_ds(*y)));
  return sumi * dm.x + div_as_upstream(dm.y, qi / vdr);
}

template <>
__device__ __forceinline__ float vec_dot<kQ8_0>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int vdr = 2;
  const quant::BlockQ8_0* b = static_cast<const quant::BlockQ8_0*>(vbq) + kbx;
  int v[vdr], u[vdr];
#pragma unroll
  for (int i = 0; i < vdr; ++i) {
    v[i] = get_int_b2(b->qs, iqs + i);
    u[i] = get_int_b4(y->qs, iqs + i);
  }
  int sumi = 0;
#pragma unroll
  for (int i = 0; i < vdr; ++i) sumi = dp4a(v[i], u[i], sumi);
  return half_to_float(b->d) * q8_1_d(*y) * float(sumi);
}

// Non-linear 4-bit types: nibbles index a 16-entry table of int8 values.
template <>
__device__ __forceinline__ float vec_dot<kIQ4_NL>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                  const int& kbx, const int& iqs) {
  constexpr int vdr = 2;
  const quant::BlockIQ4_NL* b = static_cast<const quant::BlockIQ4_NL*>(vbq) + kbx;
  const int* q8 = reinterpret_cast<const int*>(y->qs) + iqs;
  int sumi = 0;
#pragma unroll
  for (int l = 0; l < vdr; ++l) {
    const int2 v = lookup_table16(get_int_b2(b->qs, iqs + l), kValuesIq4nl);
    sumi = dp4a(v.x, q8[l + 0], sumi);
    sumi = dp4a(v.y, q8[l + 4], sumi);
  }
  return half_to_float(b->d) * q8_1_d(*y) * sumi;
}

template <>
__device__ __forceinline__ float vec_dot<kMXFP4>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                 const int& kbx, const int& iqs) {
  constexpr int vdr = 2;
  const quant::BlockMXFP4* b = static_cast<const quant::BlockMXFP4*>(vbq) + kbx;
  const int* q8 = reinterpret_cast<const int*>(y->qs) + iqs;  // one base pointer, as upstream
  int sumi = 0;
#pragma unroll
  for (int l = 0; l < vdr; ++l) {
    const int aux_q4 = get_int_b1(b->qs, iqs + l);
    const int2 v = lookup_table16(aux_q4, kValuesMxfp4);
    sumi = dp4a(v.x, q8[l + 0], sumi);
    sumi = dp4a(v.y, q8[l + 4], sumi);
  }
  // The table holds doubled E2M1 values, so the shared exponent is halved.
  const float d = e8m0_to_float(b->e) * 0.5f * q8_1_d(*y);
  return d * sumi;
}

// ---- K-quants (256-value super-blocks) ----------------------------------------------------------
// q2_K's and q3_K's sums over their qr q8_1 blocks are separate functions taking the loaded quants by
// reference, as upstream's *_impl_mmvq: the call boundary is where upstream's code orders the loads
// before the arithmetic, and clang's AMD back end schedules (and allocates registers) by that order.

// q2_K: one int = 16 values of one 32-value slice, spread over 4 q8_1 blocks; per sub-block a 4-bit
// scale (low nibble) and a 4-bit min (high nibble); dm = (d, dmin) of the super-block.
__device__ __forceinline__ float q2_K_sum(const int& v, const int* __restrict__ u, const uint8_t* __restrict__ scales,
                                          const uint16_t* dm, const float* __restrict__ d8) {
  constexpr int qr = 4;
  float sumf_d = 0.0f, sumf_m = 0.0f;
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    const int sc = scales[2 * i];
    const int vi = (v >> (2 * i)) & 0x03030303;
    sumf_d += d8[i] * (dp4a(vi, u[i], 0) * (sc & 0xF));
    int m = sc >> 4;  // the min, broadcast to 4 bytes, times the sum of the q8 values
    m |= m << 8;
    m |= m << 16;
    sumf_m += d8[i] * dp4a(m, u[i], 0);
  }
  const float2 dmf = __half22float2(load_half2(dm));
  return dmf.x * sumf_d - dmf.y * sumf_m;
}

// q3_K: 2 low bits + an inverted high-bit mask (a clear bit subtracts 4), 6-bit signed scales.
__device__ __forceinline__ float q3_K_sum(const int& vl, const int& vh, const int* __restrict__ u,
                                          const uint8_t* __restrict__ scales, const int& scale_offset, const float& d,
                                          const float* __restrict__ d8) {
  constexpr int qr = 4, qk_k = quant::QK_K;
  float sumf = 0.0f;
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    const int isc = scale_offset + 2 * i;
    const int sc_low = (scales[isc % (qk_k / 32)] >> (4 * (isc / (qk_k / 32)))) & 0xF;
    const int sc_high = ((scales[(qk_k / 32) + isc % (qk_k / 64)] >> (2 * (isc / (qk_k / 64)))) & 3) << 4;
    const int sc = (sc_low | sc_high) - 32;
    const int vil = (vl >> (2 * i)) & 0x03030303;
    const int vih = ((vh >> i) << 2) & 0x04040404;
    sumf += d8[i] * (dp4a(vsubss4(vil, vih), u[i], 0) * sc);
  }
  return d * sumf;
}

template <>
__device__ __forceinline__ float vec_dot<kQ2_K>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int qr = 4, qi8 = 8;
  const quant::BlockQ2_K* b = static_cast<const quant::BlockQ2_K*>(vbq) + kbx;
  const int bq8_offset = qr * (iqs / qi8);
  const int scale_offset = iqs - iqs % qi8 + (iqs % qi8) / (qi8 / 2);
  const uint8_t* scales = b->scales + scale_offset;
  const int v = get_int_b4(b->qs, iqs);
  int u[qr];
  float d8[qr];
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    u[i] = get_int_b4(y[bq8_offset + i].qs, iqs % qi8);
    d8[i] = q8_1_d(y[bq8_offset + i]);
  }
  return q2_K_sum(v, u, scales, &b->d, d8);
}

template <>
__device__ __forceinline__ float vec_dot<kQ3_K>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int qr = 4, qi = 16, qi8 = 8;
  const quant::BlockQ3_K* b = static_cast<const quant::BlockQ3_K*>(vbq) + kbx;
  const int bq8_offset = qr * (iqs / (qi / 2));
  const int scale_offset = iqs - iqs % qi8 + (iqs % qi8) / (qi8 / 2);
  const float d = half_to_float(b->d);
  const int vl = get_int_b2(b->qs, iqs);
  const int vh = ~get_int_b2(b->hmask, iqs % (qi / 2)) >> bq8_offset;
  int u[qr];
  float d8[qr];
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    u[i] = get_int_b4(y[bq8_offset + i].qs, iqs % qi8);
    d8[i] = q8_1_d(y[bq8_offset + i]);
  }
  return q3_K_sum(vl, vh, u, b->scales, scale_offset, d, d8);
}

// The packed 6-bit scales and mins of q4_K / q5_K for the two sub-blocks starting at 2·j.
__device__ __forceinline__ void k_scales_mins(const uint8_t* packed, int j, uint16_t aux[2]) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(packed);
  if (j < 2) {
    aux[0] = s[j + 0] & 0x3f3f;
    aux[1] = s[j + 2] & 0x3f3f;
  } else {
    aux[0] = ((s[j + 2] >> 0) & 0x0f0f) | ((s[j - 2] & 0xc0c0) >> 2);
    aux[1] = ((s[j + 2] >> 4) & 0x0f0f) | ((s[j - 0] & 0xc0c0) >> 2);
  }
}

template <>
__device__ __forceinline__ float vec_dot<kQ4_K>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int qr = 2;
  const quant::BlockQ4_K* b = static_cast<const quant::BlockQ4_K*>(vbq) + kbx;
  const int bq8_offset = qr * ((iqs / 2) / 4);  // iqs in 0,2..30 -> 0,2,4,6
  const int* q4 = reinterpret_cast<const int*>(b->qs + 16 * bq8_offset + 4 * ((iqs / 2) % 4));
  const int v[2] = {q4[0], q4[4]};
  uint16_t aux[2];
  k_scales_mins(b->scales, bq8_offset / 2, aux);
  const uint8_t* sc = reinterpret_cast<const uint8_t*>(aux);
  const uint8_t* m = sc + 2;
  int u[2 * qr];
  float d8[qr];
  for (int i = 0; i < qr; ++i) {
    const BlockQ8_1* q8 = y + bq8_offset + i;
    d8[i] = q8_1_d(*q8);
    const int* q8s = reinterpret_cast<const int*>(q8->qs) + ((iqs / 2) % 4);
    u[2 * i + 0] = q8s[0];
    u[2 * i + 1] = q8s[4];
  }
  float sumf_d = 0.0f, sumf_m = 0.0f;
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    const int v0i = (v[0] >> (4 * i)) & 0x0F0F0F0F, v1i = (v[1] >> (4 * i)) & 0x0F0F0F0F;
    const int dot1 = dp4a(v1i, u[2 * i + 1], dp4a(v0i, u[2 * i + 0], 0));
    const int dot2 = dp4a(0x01010101, u[2 * i + 1], dp4a(0x01010101, u[2 * i + 0], 0));  // sum of the q8 values
    sumf_d += d8[i] * (dot1 * sc[i]);
    sumf_m += d8[i] * (dot2 * m[i]);
  }
  const float2 dm = __half22float2(load_half2(&b->d));
  return dm.x * sumf_d - dm.y * sumf_m;
}

// q4_K for Rows rows x Ncols columns at one (kbx, iqs): vec_dot<kQ4_K> of every (row, column) pair
// added to acc, with a row's quants, scales and mins unpacked once for all columns and a column's q8_1
// values and sums once for all rows (the hook's group kernel, v11). y is the first column's q8_1 at
// this kbx. Products of integers below 2^24 convert exactly, so (float) dot * scale is
// (float) (dot * scale) and every sum is vec_dot's, in its order: the same bits.
template <int Ncols, int Rows>
__device__ __forceinline__ void vec_dot_q4_K_tile(const void* __restrict__ vx, const BlockQ8_1* __restrict__ y, const int (&row_block)[Rows],
                                                  const int kbx, const int iqs, const int stride_col_y, float (&acc)[Ncols][Rows]) {
  constexpr int qr = 2;
  const int bq8_offset = qr * ((iqs / 2) / 4);
  int v[Rows][2 * qr];
  float sc[Rows][qr], mn[Rows][qr];
  float2 dm[Rows];
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const quant::BlockQ4_K* b = static_cast<const quant::BlockQ4_K*>(vx) + row_block[r] + kbx;
    const int* q4 = reinterpret_cast<const int*>(b->qs + 16 * bq8_offset + 4 * ((iqs / 2) % 4));
    const int v0 = q4[0], v1 = q4[4];
    uint16_t aux[2];
    k_scales_mins(b->scales, bq8_offset / 2, aux);
    const uint8_t* s8 = reinterpret_cast<const uint8_t*>(aux);
#pragma unroll
    for (int i = 0; i < qr; ++i) {
      v[r][2 * i + 0] = (v0 >> (4 * i)) & 0x0F0F0F0F;
      v[r][2 * i + 1] = (v1 >> (4 * i)) & 0x0F0F0F0F;
      sc[r][i] = s8[i];
      mn[r][i] = s8[2 + i];
    }
    dm[r] = __half22float2(load_half2(&b->d));
  }
#pragma unroll
  for (int c = 0; c < Ncols; ++c) {
    int u[2 * qr];
    float d8[qr], sum_u[qr];
#pragma unroll
    for (int i = 0; i < qr; ++i) {
      const BlockQ8_1* q8 = y + c * stride_col_y + bq8_offset + i;
      d8[i] = q8_1_d(*q8);
      const int* q8s = reinterpret_cast<const int*>(q8->qs) + ((iqs / 2) % 4);
      u[2 * i + 0] = q8s[0];
      u[2 * i + 1] = q8s[4];
      sum_u[i] = float(dp4a(0x01010101, u[2 * i + 1], dp4a(0x01010101, u[2 * i + 0], 0)));
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      float sumf_d = 0.0f, sumf_m = 0.0f;
#pragma unroll
      for (int i = 0; i < qr; ++i) {
        const int dot = dp4a(v[r][2 * i + 1], u[2 * i + 1], dp4a(v[r][2 * i + 0], u[2 * i + 0], 0));
        sumf_d += d8[i] * (float(dot) * sc[r][i]);
        sumf_m += d8[i] * (sum_u[i] * mn[r][i]);
      }
      acc[c][r] += dm[r].x * sumf_d - dm[r].y * sumf_m;
    }
  }
}

template <>
__device__ __forceinline__ float vec_dot<kQ5_K>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int qr = 2;
  const quant::BlockQ5_K* b = static_cast<const quant::BlockQ5_K*>(vbq) + kbx;
  const int bq8_offset = qr * ((iqs / 2) / 4);
  const int* ql = reinterpret_cast<const int*>(b->qs + 16 * bq8_offset + 4 * ((iqs / 2) % 4));
  const int* qh = reinterpret_cast<const int*>(b->qh + 4 * ((iqs / 2) % 4));
  const int vl[2] = {ql[0], ql[4]};
  const int vh[2] = {qh[0] >> bq8_offset, qh[4] >> bq8_offset};
  uint16_t aux[2];
  k_scales_mins(b->scales, bq8_offset / 2, aux);
  const uint8_t* sc = reinterpret_cast<const uint8_t*>(aux);
  const uint8_t* m = sc + 2;
  int u[2 * qr];
  float d8[qr];
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    const BlockQ8_1* q8 = y + bq8_offset + i;  // pointer form, as q4_K (see there)
    d8[i] = q8_1_d(*q8);
    const int* q8s = reinterpret_cast<const int*>(q8->qs) + ((iqs / 2) % 4);
    u[2 * i + 0] = q8s[0];
    u[2 * i + 1] = q8s[4];
  }
  float sumf_d = 0.0f, sumf_m = 0.0f;
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    const int v0i = ((vl[0] >> (4 * i)) & 0x0F0F0F0F) | (((vh[0] >> i) << 4) & 0x10101010);
    const int v1i = ((vl[1] >> (4 * i)) & 0x0F0F0F0F) | (((vh[1] >> i) << 4) & 0x10101010);
    const int dot1 = dp4a(v0i, u[2 * i + 0], dp4a(v1i, u[2 * i + 1], 0));
    const int dot2 = dp4a(0x01010101, u[2 * i + 0], dp4a(0x01010101, u[2 * i + 1], 0));
    sumf_d += d8[i] * (dot1 * sc[i]);
    sumf_m += d8[i] * (dot2 * m[i]);
  }
  const float2 dm = __half22float2(load_half2(&b->d));
  return dm.x * sumf_d - dm.y * sumf_m;
}

// q6_K: 4 low bits + 2 high bits, minus 32, 8-bit signed scales per 16 values.
template <>
__device__ __forceinline__ float vec_dot<kQ6_K>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  constexpr int qr = 2, qi = 32;
  const quant::BlockQ6_K* b = static_cast<const quant::BlockQ6_K*>(vbq) + kbx;
  const int bq8_offset = 2 * qr * (iqs / (qi / 2)) + (iqs % (qi / 2)) / (qi / 4);
  const int scale_offset = (qi / 4) * (iqs / (qi / 2)) + (iqs % (qi / 2)) / (qi / 8);
  const int vh_shift = 2 * ((iqs % (qi / 2)) / (qi / 4));
  const int vl = get_int_b2(b->ql, iqs);
  const int vh = get_int_b2(b->qh, (qi / 4) * (iqs / (qi / 2)) + iqs % (qi / 4)) >> vh_shift;
  const int8_t* scales = b->scales + scale_offset;
  int u[qr];
  float d8[qr];
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    u[i] = get_int_b4(y[bq8_offset + 2 * i].qs, iqs % 8);
    d8[i] = q8_1_d(y[bq8_offset + 2 * i]);
  }
  const float d = half_to_float(b->d);
  float sumf = 0.0f;
#pragma unroll
  for (int i = 0; i < qr; ++i) {
    const int sc = scales[4 * i];
    const int vil = (vl >> (4 * i)) & 0x0F0F0F0F;
    const int vih = ((vh >> (4 * i)) << 4) & 0x30303030;
    const int vi = vsubss4(vil | vih, 0x20202020);
    sumf += d8[i] * (dp4a(vi, u[i], 0) * sc);
  }
  return d * sumf;
}

// iq4_xs: iq4_nl values in 256-value super-blocks with 6-bit scales per 32 values (minus 32).
template <>
__device__ __forceinline__ float vec_dot<kIQ4_XS>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                  const int& kbx, const int& iqs) {
  const quant::BlockIQ4_XS* b = static_cast<const quant::BlockIQ4_XS*>(vbq) + kbx;
  int sumi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int aux_q4 = get_int_b4(b->qs, iqs + j);
    const int2 v = lookup_table16(aux_q4, kValuesIq4nl);
    const int u0 = get_int_b4(y[iqs / 4].qs, j + 0);
    const int u1 = get_int_b4(y[iqs / 4].qs, j + 4);
    sumi = dp4a(v.x, u0, sumi);
    sumi = dp4a(v.y, u1, sumi);
  }
  const int ls = ((b->scales_l[iqs / 8] >> (iqs & 0x04)) & 0x0F) | (((b->scales_h >> (iqs / 2)) & 0x03) << 4);
  sumi *= ls - 32;
  const float d = half_to_float(b->d) * q8_1_d(y[iqs / 4]);
  return d * sumi;
}

}  // namespace temper::kernels

#include "vecdot_tier2.h"
