#pragma once
// Tier-2 vec_dot specialisations: the grid-based IQ types and nvfp4, as ggml-cuda's vecdotq.cuh.
// Their lookup tables (iq_tables.h) are generated at build time from core/quant's grids by
// kernels/gen_iq_tables.cpp, so kernel and CPU reference share one source.
#include "iq_tables.h"

namespace temper::kernels {

constexpr float kIq1sDelta = 0.125f, kIq1mDelta = 0.125f;

// 7 stored sign bits plus the implied 8th (even parity), broadcast to all 4 bytes so masks
// 0x08040201 / 0x80402010 pick the signs of values 0-3 / 4-7.
__device__ __forceinline__ uint32_t unpack_ksigns(uint8_t v) {
  const uint32_t p = popc(v) & 1;
  const uint32_t s = v ^ (p << 7);
  return s * 0x01010101u;
}

// Grid bytes with their signs applied: bytes where `sign_mask` is 0xFF are negated.
__device__ __forceinline__ int apply_signs(uint32_t grid, int sign_mask) {
  return vsub4(static_cast<int>(grid) ^ sign_mask, sign_mask);
}

__device__ __forceinline__ uint2 grid64(const uint64_t* table, int index) {
  return reinterpret_cast<const uint2*>(table)[index];
}

template <>
__device__ __forceinline__ float vec_dot<kIQ2_XXS>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                   const int& kbx, const int& iqs) {
  const quant::BlockIQ2_XXS* b = static_cast<const quant::BlockIQ2_XXS*>(vbq) + kbx;
  const int q2 = get_int_b2(b->qs, iqs);
  const uint8_t* aux8 = reinterpret_cast<const uint8_t*>(&q2);
  const uint32_t aux32 = static_cast<uint32_t>(get_int_b2(b->qs, iqs + 1));
  const BlockQ8_1& q8 = y[iqs / 2];
  int sumi = 0;
#pragma unroll
  for (int k0 = 0; k0 < 8; k0 += 2) {
    const uint2 grid = grid64(kIq2xxsGrid, aux8[k0 / 2]);
    const uint32_t signs = unpack_ksigns(static_cast<uint8_t>(aux32 >> (7 * k0 / 2)));
    sumi = dp4a(apply_signs(grid.x, vcmpne4(signs & 0x08040201, 0)), get_int_b4(q8.qs, k0 + 0), sumi);
    sumi = dp4a(apply_signs(grid.y, vcmpne4(signs & 0x80402010, 0)), get_int_b4(q8.qs, k0 + 1), sumi);
  }
  const int ls = static_cast<int>(aux32 >> 27 | 1);  // 2·scale + 1
  sumi = sumi * ls / 8;
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

template <>
__device__ __forceinline__ float vec_dot<kIQ2_XS>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                  const int& kbx, const int& iqs) {
  const quant::BlockIQ2_XS* b = static_cast<const quant::BlockIQ2_XS*>(vbq) + kbx;
  // The four 16-bit entries (9-bit grid index, 7 sign bits) from two ints, without a uint16_t view
  // of an int2 (an aliasing violation host compilers may miscompile).
  const uint32_t packed[2] = {static_cast<uint32_t>(get_int_b2(b->qs, iqs + 0)),
                              static_cast<uint32_t>(get_int_b2(b->qs, iqs + 1))};
  uint16_t q2[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) q2[i] = static_cast<uint16_t>(packed[i / 2] >> (16 * (i % 2)));
  const int ls0 = b->scales[iqs / 2] & 0x0F, ls1 = b->scales[iqs / 2] >> 4;
  const BlockQ8_1& q8 = y[iqs / 2];
  int sumi0 = 0, sumi1 = 0;
#pragma unroll
  for (int l0 = 0; l0 < 8; l0 += 2) {
    const uint2 grid = grid64(kIq2xsGrid, q2[l0 / 2] & 0x1FF);
    const uint32_t signs = unpack_ksigns(static_cast<uint8_t>(q2[l0 / 2] >> 9));
    const int grid_l = apply_signs(grid.x, vcmpne4(signs & 0x08040201, 0));
    const int grid_h = apply_signs(grid.y, vcmpne4(signs & 0x80402010, 0));
    int& s = l0 < 4 ? sumi0 : sumi1;
    s = dp4a(grid_l, get_int_b4(q8.qs, l0 + 0), s);
    s = dp4a(grid_h, get_int_b4(q8.qs, l0 + 1), s);
  }
  const int sumi = (sumi0 * ls0 + sumi1 * ls1 + (sumi0 + sumi1) / 2) / 4;
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

// iq2_s / iq3_s store one explicit sign bit per value: 4 bits → a 0xFF mask per byte.
__device__ __forceinline__ int sign_mask_lo(uint8_t s) { return vcmpne4(((s & 0x03) << 7) | ((s & 0x0C) << 21), 0); }
__device__ __forceinline__ int sign_mask_hi(uint8_t s) { return vcmpne4(((s & 0x30) << 3) | ((s & 0xC0) << 17), 0); }

template <>
__device__ __forceinline__ float vec_dot<kIQ2_S>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                 const int& kbx, const int& iqs) {
  const quant::BlockIQ2_S* b = static_cast<const quant::BlockIQ2_S*>(vbq) + kbx;
  const int qs_packed = get_int_b2(b->qs, iqs / 2);
  const uint8_t* qs = reinterpret_cast<const uint8_t*>(&qs_packed);
  const int qh = b->qh[iqs / 2];
  const int signs_packed = get_int_b2(b->qs, quant::QK_K / 32 + iqs / 2);
  const uint8_t* signs = reinterpret_cast<const uint8_t*>(&signs_packed);
  const int ls0 = b->scales[iqs / 2] & 0x0F, ls1 = b->scales[iqs / 2] >> 4;
  const BlockQ8_1& q8 = y[iqs / 2];
  int sumi0 = 0, sumi1 = 0;
#pragma unroll
  for (int l0 = 0; l0 < 8; l0 += 2) {
    const uint2 grid = grid64(kIq2sGrid, qs[l0 / 2] | ((qh << (8 - l0)) & 0x300));
    const int grid_l = apply_signs(grid.x, sign_mask_lo(signs[l0 / 2]));
    const int grid_h = apply_signs(grid.y, sign_mask_hi(signs[l0 / 2]));
    int& s = l0 < 4 ? sumi0 : sumi1;
    s = dp4a(grid_l, get_int_b4(q8.qs, l0 + 0), s);
    s = dp4a(grid_h, get_int_b4(q8.qs, l0 + 1), s);
  }
  const int sumi = (sumi0 * ls0 + sumi1 * ls1 + (sumi0 + sumi1) / 2) / 4;
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

template <>
__device__ __forceinline__ float vec_dot<kIQ3_XXS>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                   const int& kbx, const int& iqs) {
  const quant::BlockIQ3_XXS* b = static_cast<const quant::BlockIQ3_XXS*>(vbq) + kbx;
  const int2 q3_packed = make_int2(get_int_b2(b->qs, iqs), get_int_b2(b->qs, iqs + 1));
  const uint8_t* q3 = reinterpret_cast<const uint8_t*>(&q3_packed);
  const uint32_t aux32 = static_cast<uint32_t>(get_int_b2(b->qs, quant::QK_K / 16 + iqs / 2));
  const BlockQ8_1& q8 = y[iqs / 2];
  int sumi = 0;
#pragma unroll
  for (int l0 = 0; l0 < 8; l0 += 2) {
    const uint32_t signs = unpack_ksigns(static_cast<uint8_t>(aux32 >> (7 * l0 / 2)));
    const int grid_l = apply_signs(kIq3xxsGrid[q3[l0 + 0]], vcmpne4(signs & 0x08040201, 0));
    const int grid_h = apply_signs(kIq3xxsGrid[q3[l0 + 1]], vcmpne4(signs & 0x80402010, 0));
    sumi = dp4a(grid_l, get_int_b4(q8.qs, l0 + 0), sumi);
    sumi = dp4a(grid_h, get_int_b4(q8.qs, l0 + 1), sumi);
  }
  const int ls = static_cast<int>(aux32 >> 28);
  sumi = (ls * sumi + sumi / 2) / 2;
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

template <>
__device__ __forceinline__ float vec_dot<kIQ3_S>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                 const int& kbx, const int& iqs) {
  const quant::BlockIQ3_S* b = static_cast<const quant::BlockIQ3_S*>(vbq) + kbx;
  const int2 qs_packed = make_int2(get_int_b2(b->qs, iqs + 0), get_int_b2(b->qs, iqs + 1));
  const uint8_t* qs = reinterpret_cast<const uint8_t*>(&qs_packed);
  const int qh = b->qh[iqs / 2];
  const int signs_packed = get_int_b2(b->signs, iqs / 2);
  const uint8_t* signs = reinterpret_cast<const uint8_t*>(&signs_packed);
  const BlockQ8_1& q8 = y[iqs / 2];
  int sumi = 0;
#pragma unroll
  for (int l0 = 0; l0 < 8; l0 += 2) {
    const uint32_t g0 = kIq3sGrid[qs[l0 + 0] | ((qh << (8 - l0)) & 0x100)];
    const uint32_t g1 = kIq3sGrid[qs[l0 + 1] | ((qh << (7 - l0)) & 0x100)];
    sumi = dp4a(apply_signs(g0, sign_mask_lo(signs[l0 / 2])), get_int_b4(q8.qs, l0 + 0), sumi);
    sumi = dp4a(apply_signs(g1, sign_mask_hi(signs[l0 / 2])), get_int_b4(q8.qs, l0 + 1), sumi);
  }
  sumi *= 1 + 2 * ((b->scales[iqs / 4] >> ((iqs << 1) & 0x04)) & 0x0F);
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

// iq1_s / iq1_m: grid values + 1 (0..2) as nibbles; the -1 and the ±delta come back through the
// q8_1 sum s (iq1_s) or an explicit Σu (iq1_m).
template <>
__device__ __forceinline__ float vec_dot<kIQ1_S>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                 const int& kbx, const int& iqs) {
  const quant::BlockIQ1_S* b = static_cast<const quant::BlockIQ1_S*>(vbq) + kbx;
  const int qs_packed = get_int_b2(b->qs, iqs);
  const uint8_t* qs = reinterpret_cast<const uint8_t*>(&qs_packed);
  const int qh = b->qh[iqs];
  const BlockQ8_1& q8 = y[iqs];
  int sumi = 0;
#pragma unroll
  for (int l0 = 0; l0 < 8; l0 += 2) {
    const int grid = static_cast<int>(kIq1sGridGpu[qs[l0 / 2] | (((qh >> 3 * (l0 / 2)) & 0x07) << 8)]);
    sumi = dp4a((grid >> 0) & 0x0F0F0F0F, get_int_b4(q8.qs, l0 + 0), sumi);
    sumi = dp4a((grid >> 4) & 0x0F0F0F0F, get_int_b4(q8.qs, l0 + 1), sumi);
  }
  const float d1q = half_to_float(b->d) * (((qh >> 11) & 0x0E) + 1);
  const float delta = -1.0f + kIq1sDelta - (qh & 0x8000) * (2.0f * kIq1sDelta / 0x8000);
  const float2 ds = __half22float2(q8_1_ds(q8));
  return d1q * (ds.x * sumi + ds.y * delta);
}

template <>
__device__ __forceinline__ float vec_dot<kIQ1_M>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                 const int& kbx, const int& iqs) {
  const quant::BlockIQ1_M* b = static_cast<const quant::BlockIQ1_M*>(vbq) + kbx;
  const int qs_packed = get_int_b4(b->qs, iqs);
  const uint8_t* qs = reinterpret_cast<const uint8_t*>(&qs_packed);
  const BlockQ8_1& q8 = y[iqs];
  int sumi[2] = {0, 0};
  float sumf[2] = {0.0f, 0.0f};
#pragma unroll
  for (int l0 = 0; l0 < 8; l0 += 2) {
    const int qhl = b->qh[2 * iqs + l0 / 4] >> (4 * ((l0 / 2) % 2));
    const int grid = static_cast<int>(kIq1sGridGpu[qs[l0 / 2] | ((qhl & 0x07) << 8)]);
    const int u0 = get_int_b4(q8.qs, l0 + 0), u1 = get_int_b4(q8.qs, l0 + 1);
    sumi[l0 / 4] = dp4a((grid >> 0) & 0x0F0F0F0F, u0, sumi[l0 / 4]);
    sumi[l0 / 4] = dp4a((grid >> 4) & 0x0F0F0F0F, u1, sumi[l0 / 4]);
    const float delta = -1.0f + kIq1mDelta - (qhl & 0x08) * (2.0f * kIq1mDelta / 0x08);
    const int sumy = dp4a(u1, 0x01010101, dp4a(u0, 0x01010101, 0));
    sumf[l0 / 4] += delta * sumy;
  }
  const uint16_t* sc = reinterpret_cast<const uint16_t*>(b->scales);
  // The block's half scale is spread over the top nibbles of the four 16-bit scale words.
  const uint16_t scale_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                    (sc[3] & 0xF000));
  const float d = half_to_float(scale_bits) * q8_1_d(q8);
  const int tmp = sc[iqs / 2] >> (6 * (iqs % 2));
  const int sc0 = 2 * ((tmp >> 0) & 0x07) + 1, sc1 = 2 * ((tmp >> 3) & 0x07) + 1;
  return d * ((sumi[0] + sumf[0]) * sc0 + (sumi[1] + sumf[1]) * sc1);
}

// nvfp4: E2M1 nibbles (doubled table) with a UE4M3 scale per 16 values; 64-value blocks span two
// q8_1 blocks.
template <>
__device__ __forceinline__ float vec_dot<kNVFP4>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                 const int& kbx, const int& iqs) {
  constexpr int vdr = 4;
  const quant::BlockNVFP4* b = static_cast<const quant::BlockNVFP4*>(vbq) + kbx;
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < vdr / 2; ++i) {
    const int iqs0 = iqs + 2 * i, iqs1 = iqs0 + 1, is = iqs0 >> 1;
    const int2 v0 = lookup_table16(get_int_b4(b->qs, iqs0), kValuesMxfp4);
    const int2 v1 = lookup_table16(get_int_b4(b->qs, iqs1), kValuesMxfp4);
    const BlockQ8_1& q8 = y[is >> 1];
    const int i8 = (is & 1) << 2;
    int sumi = dp4a(v0.x, get_int_b4(q8.qs, i8 + 0), 0);
    sumi = dp4a(v0.y, get_int_b4(q8.qs, i8 + 2), sumi);
    sumi = dp4a(v1.x, get_int_b4(q8.qs, i8 + 1), sumi);
    sumi = dp4a(v1.y, get_int_b4(q8.qs, i8 + 3), sumi);
    sum += ue4m3_to_float_half(b->d[is]) * q8_1_d(q8) * float(sumi);
  }
  return sum;
}

// q1_0: 128 values of ±d, one bit each; a call covers one 32-value chunk (one q8_1 block). Bits are
// spread to ±1 bytes (upstream does the same with byte permutes); the integer sum is identical.
__device__ __forceinline__ int q1_signs4(int bits4) {
  const int spread = (bits4 | (bits4 << 7) | (bits4 << 14) | (bits4 << 21)) & 0x01010101;  // bit i -> byte i
  return vsub4(spread << 1, 0x01010101);  // 0 -> -1, 1 -> +1 per byte
}

template <>
__device__ __forceinline__ float vec_dot<kQ1_0>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  const quant::BlockQ1_0* b = static_cast<const quant::BlockQ1_0*>(vbq) + kbx;
  const uint16_t* qs = reinterpret_cast<const uint16_t*>(b->qs) + iqs * 2;
  const BlockQ8_1& q8 = y[iqs];
  int sumi = 0;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int q = qs[j];
#pragma unroll
    for (int n = 0; n < 4; ++n) sumi = dp4a(q1_signs4((q >> (4 * n)) & 0xF), get_int_b4(q8.qs, j * 4 + n), sumi);
  }
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

// q2_0 (ggml id 42, newer than the shared type enum): 64 values of (q - 1)·d, two bits each; a call
// covers one 32-value chunk (one q8_1 block). Crumbs are spread to bytes q - 1 (upstream does the
// same with byte permutes); the integer sum is identical.
constexpr unsigned kQ2_0 = 42;

__device__ __forceinline__ int q2_values4(int byte) {
  const int spread = (byte | (byte << 6) | (byte << 12) | (byte << 18)) & 0x03030303;  // crumb i -> byte i
  return vsub4(spread, 0x01010101);  // 0..3 -> -1..2 per byte
}

template <>
__device__ __forceinline__ float vec_dot<kQ2_0>(const void* __restrict__ vbq, const BlockQ8_1* __restrict__ y,
                                                const int& kbx, const int& iqs) {
  const quant::BlockQ2_0* b = static_cast<const quant::BlockQ2_0*>(vbq) + kbx;
  const uint16_t* qs = reinterpret_cast<const uint16_t*>(b->qs) + iqs * 4;
  const BlockQ8_1& q8 = y[iqs];
  int sumi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int q = qs[j];
    sumi = dp4a(q2_values4(q & 0xFF), get_int_b4(q8.qs, 2 * j), sumi);
    sumi = dp4a(q2_values4(q >> 8), get_int_b4(q8.qs, 2 * j + 1), sumi);
  }
  return half_to_float(b->d) * q8_1_d(q8) * sumi;
}

}  // namespace temper::kernels
