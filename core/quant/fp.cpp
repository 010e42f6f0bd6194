#include "temper/quant/fp.h"

#include <bit>
#include <cmath>
#include <limits>

namespace temper::quant {

float fp16_to_fp32(half_bits h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // zero or subnormal: mantissa × 2^-24, exact in float
    const float magnitude = float(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

half_bits fp32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t a = bits & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;  // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to infinity
  if (a >= 0x38800000u) {                       // >= 2^-14: normal half
    uint32_t r = a - (uint32_t(127 - 15) << 23);
    r += 0xFFFu + ((r >> 13) & 1u);  // round to nearest, ties to even
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  const uint32_t exponent = a >> 23;
  if (exponent < 102) return sign;  // below 2^-25: rounds to zero
  // subnormal half: count of 2^-24 units = mantissa × 2^(exponent-126)
  const uint32_t mantissa = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;  // may carry into the smallest normal
  return static_cast<uint16_t>(sign | q);
}

float e8m0_to_fp32(uint8_t e) {
  if (e == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::bit_cast<float>(e == 0 ? 0x00400000u : uint32_t(e) << 23);
}

float e8m0_to_fp32_half(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23);
}

float ue4m3_to_fp32(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exponent = (x >> 3) & 0xF;
  const int mantissa = x & 0x7;
  if (exponent == 0) return std::ldexp(float(mantissa), -9);
  return std::ldexp(1.0f + float(mantissa) / 8.0f, exponent - 7);
}

float ue4m3_to_fp32_half(uint8_t x) { return ue4m3_to_fp32(x) * 0.5f; }

uint8_t fp32_to_ue4m3(float x) {
  if (!(x > 0.0f)) return 0;
  if (x >= 448.0f) return 0x7E;
  // Codes 0..0x7E are increasing in value: find the last one not above x, then pick the nearer.
  int lo = 0, hi = 0x7E;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (ue4m3_to_fp32(uint8_t(mid)) <= x) lo = mid; else hi = mid - 1;
  }
  const float below = ue4m3_to_fp32(uint8_t(lo));
  const float above = ue4m3_to_fp32(uint8_t(lo + 1));
  if (x - below < above - x) return uint8_t(lo);
  if (x - below > above - x) return uint8_t(lo + 1);
  return uint8_t((lo & 1) ? lo + 1 : lo);  // tie: even mantissa
}

}  // namespace temper::quant
