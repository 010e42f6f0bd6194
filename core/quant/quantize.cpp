// Quantizers for round trips and test data: per block (and sub-block) a max-abs or min-max scale,
// packed the way the format packs it, then each value to the nearest level of the stored (rounded)
// scale. Deliberately simple: ggml's quantizers search scales and weigh importance; these only need
// "about half a level step" of error so the round-trip tests can bound it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "detail.h"
#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/quant/reference.h"

namespace temper::quant {
namespace {

using detail::kValuesIq4nl;
using detail::kValuesMxfp4;

// Value of largest magnitude (with its sign).
float signed_max(const float* x, int n) {
  float best = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(best)) best = x[i];
  return best;
}

float abs_max(const float* x, int n) { return std::fabs(signed_max(x, n)); }

int nearest(float v, int lo, int hi) { return std::clamp(int(std::lround(v)), lo, hi); }

// Index of the table entry nearest to v.
int nearest_in(const int8_t* table, int size, float v) {
  int best = 0;
  for (int i = 1; i < size; ++i)
    if (std::fabs(float(table[i]) - v) < std::fabs(float(table[best]) - v)) best = i;
  return best;
}

float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Symmetric 32-value blocks: q = round(x / d) + bias in [0, levels-1] stored as nibbles (+ high bit).
template <class Block>
void quant_symmetric(const float* x, Block* y, int64_t nb, int bias) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    const float max = signed_max(x, 32);
    // the extreme value maps to level 0 (-bias), as ggml does: that level has no positive twin
    const half_bits dh = fp32_to_fp16(max / float(-bias));
    const float id = inverse(fp16_to_fp32(dh));
    Block& b = y[i];
    b.d = dh;
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = nearest(x[j] * id, -bias, bias - 1) + bias;
      const int q1 = nearest(x[j + 16] * id, -bias, bias - 1) + bias;
      b.qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= uint32_t(q0 >> 4) << j | uint32_t(q1 >> 4) << (j + 16);
    }
    if constexpr (requires { b.qh; }) std::memcpy(b.qh, &qh, 4);
  }
}

// Min-max 32-value blocks: x = d·q + m, q in [0, levels-1].
template <class Block>
void quant_min_max(const float* x, Block* y, int64_t nb, int levels) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    const float mn = *std::min_element(x, x + 32), mx = *std::max_element(x, x + 32);
    Block& b = y[i];
    b.d = fp32_to_fp16((mx - mn) / float(levels - 1));
    b.m = fp32_to_fp16(mn);
    const float id = inverse(fp16_to_fp32(b.d)), m = fp16_to_fp32(b.m);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = nearest((x[j] - m) * id, 0, levels - 1);
      const int q1 = nearest((x[j + 16] - m) * id, 0, levels - 1);
      b.qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= uint32_t(q0 >> 4) << j | uint32_t(q1 >> 4) << (j + 16);
    }
    if constexpr (requires { b.qh; }) std::memcpy(b.qh, &qh, 4);
  }
}

void quant_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    y[i].d = fp32_to_fp16(abs_max(x, 32) / 127.0f);
    const float id = inverse(fp16_to_fp32(y[i].d));
    for (int j = 0; j < 32; ++j) y[i].qs[j] = static_cast<int8_t>(nearest(x[j] * id, -127, 127));
  }
}

// K-quant sub-block scales and mins: `scale[j]` >= 0, `min[j]` >= 0 (the amount subtracted), quantized
// to `bits`-bit integers against super-block scales d and dmin.
struct SuperScales {
  half_bits d = 0, dmin = 0;
  int ls[16] = {}, lm[16] = {};
};

SuperScales quantize_scales(const float* scale, const float* min, int n, int bits) {
  const int top = (1 << bits) - 1;
  SuperScales s;
  const float max_scale = *std::max_element(scale, scale + n);
  const float max_min = min ? *std::max_element(min, min + n) : 0.0f;
  s.d = fp32_to_fp16(max_scale / float(top));
  s.dmin = fp32_to_fp16(max_min / float(top));
  const float id = inverse(fp16_to_fp32(s.d)), idm = inverse(fp16_to_fp32(s.dmin));
  for (int j = 0; j < n; ++j) {
    s.ls[j] = nearest(scale[j] * id, 0, top);
    if (min) s.lm[j] = nearest(min[j] * idm, 0, top);
  }
  return s;
}

// Sub-block scale and min for levels 0..levels-1 covering [min(x, 0), max(x)].
void range_of(const float* x, int n, int levels, float& scale, float& min) {
  const float lo = std::min(0.0f, *std::min_element(x, x + n)), hi = *std::max_element(x, x + n);
  scale = (hi - lo) / float(levels - 1);
  min = -lo;
}

void pack_scale_min_k4(const int* ls, const int* lm, uint8_t* q) {  // inverse of detail::scale_min_k4
  for (int j = 0; j < 4; ++j) {
    q[j] = uint8_t(ls[j] | ((ls[j + 4] >> 4) << 6));
    q[j + 4] = uint8_t(lm[j] | ((lm[j + 4] >> 4) << 6));
    q[j + 8] = uint8_t((ls[j + 4] & 0xF) | ((lm[j + 4] & 0xF) << 4));
  }
}

// q4_K and q5_K: 8 sub-blocks of 32, value n at qs byte 32·(n/64) + n%32, nibble (n/32)%2, qh bit n/32.
template <class Block>
void quant_qk(const float* x, Block* y, int64_t nb, int levels) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float scale[8], min[8];
    for (int j = 0; j < 8; ++j) range_of(x + 32 * j, 32, levels, scale[j], min[j]);
    const SuperScales s = quantize_scales(scale, min, 8, 6);
    Block& b = y[i];
    std::memset(&b, 0, sizeof b);
    b.d = s.d;
    b.dmin = s.dmin;
    pack_scale_min_k4(s.ls, s.lm, b.scales);
    const float d = fp16_to_fp32(s.d), dmin = fp16_to_fp32(s.dmin);
    for (int n = 0; n < QK_K; ++n) {
      const int j = n / 32;
      const float dl = d * float(s.ls[j]), ml = dmin * float(s.lm[j]);
      const int q = nearest((x[n] + ml) * inverse(dl), 0, levels - 1);
      b.qs[32 * (n / 64) + n % 32] |= uint8_t((q & 0xF) << (4 * (j % 2)));
      if constexpr (requires { b.qh; }) b.qh[n % 32] |= uint8_t((q >> 4) << j);
    }
  }
}

// q2_K and q3_K share the 2-bit layout: value n at qs byte 32·(n/128) + n%32, bits 2·((n/32)%4).
void put_2bit(uint8_t* qs, int n, int q) { qs[32 * (n / 128) + n % 32] |= uint8_t((q & 3) << (2 * ((n / 32) % 4))); }

void quant_q2_k(const float* x, BlockQ2_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float scale[16], min[16];
    for (int j = 0; j < 16; ++j) range_of(x + 16 * j, 16, 4, scale[j], min[j]);
    const SuperScales s = quantize_scales(scale, min, 16, 4);
    BlockQ2_K& b = y[i];
    std::memset(&b, 0, sizeof b);
    b.d = s.d;
    b.dmin = s.dmin;
    const float d = fp16_to_fp32(s.d), dmin = fp16_to_fp32(s.dmin);
    for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(s.ls[j] | (s.lm[j] << 4));
    for (int n = 0; n < QK_K; ++n) {
      const int j = n / 16;
      put_2bit(b.qs, n, nearest((x[n] + dmin * float(s.lm[j])) * inverse(d * float(s.ls[j])), 0, 3));
    }
  }
}

// Signed sub-block scales s[j] = (value of largest magnitude) / level_min, so that value lands on the
// format's most negative level (which has no positive twin); d = max |s| / top, ls = round(s / d).
float signed_scales(const float* x, int n, int sub, float level_min, int top, float* scale) {
  float max_abs = 0;
  for (int j = 0; j < n / sub; ++j) {
    scale[j] = signed_max(x + sub * j, sub) / level_min;
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  return max_abs / float(top);
}

void quant_q3_k(const float* x, BlockQ3_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float scale[16];
    BlockQ3_K& b = y[i];
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(signed_scales(x, QK_K, 16, -4.0f, 31, scale));  // levels -4..3, scales -32..31
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
      const int ls = nearest(scale[j] * inverse(d), -32, 31);
      const int v = ls + 32;  // inverse of detail::scale_q3_k
      b.scales[j % 8] |= uint8_t((v & 0xF) << (4 * (j / 8)));
      b.scales[8 + j % 4] |= uint8_t((v >> 4) << (2 * (j / 4)));
      for (int n = 16 * j; n < 16 * j + 16; ++n) {
        const int q = nearest(x[n] * inverse(d * float(ls)), -4, 3) + 4;
        put_2bit(b.qs, n, q);
        if (q >= 4) b.hmask[n % 32] |= uint8_t(1 << (n / 32));  // high bit set: no -4
      }
    }
  }
}

void quant_q6_k(const float* x, BlockQ6_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float scale[16];
    BlockQ6_K& b = y[i];
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(signed_scales(x, QK_K, 16, -32.0f, 127, scale));  // levels -32..31, int8 scales
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(nearest(scale[j] * inverse(d), -128, 127));
    for (int n = 0; n < QK_K; ++n) {
      const int q = nearest(x[n] * inverse(d * float(b.scales[n / 16])), -32, 31) + 32;
      // value n: half h = n/128, r = n%128: ql byte 64h + r%64 (nibble r/64), qh byte 32h + r%32 bits 2·(r/32)
      const int h = n / 128, r = n % 128;
      b.ql[64 * h + r % 64] |= uint8_t((q & 0xF) << (4 * (r / 64)));
      b.qh[32 * h + r % 32] |= uint8_t((q >> 4) << (2 * (r / 32)));
    }
  }
}

// 16-entry tables: the scale puts the value of largest magnitude on the table's extreme entry.
void quant_table_block(const float* x, float d, const int8_t* table, uint8_t* qs) {
  const float id = inverse(d);
  for (int j = 0; j < 16; ++j)
    qs[j] = uint8_t(nearest_in(table, 16, x[j] * id) | (nearest_in(table, 16, x[j + 16] * id) << 4));
}

void quant_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    y[i].d = fp32_to_fp16(signed_max(x, 32) / float(kValuesIq4nl[0]));
    quant_table_block(x, fp16_to_fp32(y[i].d), kValuesIq4nl, y[i].qs);
  }
}

void quant_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float scale[8];
    for (int j = 0; j < 8; ++j) scale[j] = signed_max(x + 32 * j, 32) / float(kValuesIq4nl[0]);
    float max_abs = 0;
    for (float s : scale) max_abs = std::max(max_abs, std::fabs(s));
    BlockIQ4_XS& b = y[i];
    std::memset(&b, 0, sizeof b);
    b.d = fp32_to_fp16(max_abs / 31.0f);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 8; ++j) {
      const int ls = nearest(scale[j] * inverse(d), -32, 31);
      const int v = ls + 32;  // inverse of detail::scale_iq4_xs
      b.scales_l[j / 2] |= uint8_t((v & 0xF) << (4 * (j % 2)));
      b.scales_h = uint16_t(b.scales_h | ((v >> 4) << (2 * j)));
      quant_table_block(x + 32 * j, d * float(ls), kValuesIq4nl, b.qs + 16 * j);
    }
  }
}

void quant_mxfp4(const float* x, BlockMXFP4* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32) {
    // smallest shared exponent whose doubled-E2M1 range (±12 · 2^(e-128)) covers the block
    const float amax = abs_max(x, 32);
    int e = 1;
    while (e < 254 && 12.0f * e8m0_to_fp32_half(uint8_t(e)) < amax) ++e;
    y[i].e = uint8_t(e);
    quant_table_block(x, e8m0_to_fp32_half(y[i].e), kValuesMxfp4, y[i].qs);
  }
}

// q1_0: the sign of each value, scaled by the block's mean |x| (as ggml's reference quantizer).
void quant_q1_0(const float* x, BlockQ1_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK1_0) {
    float sum_abs = 0;
    for (int j = 0; j < QK1_0; ++j) sum_abs += std::fabs(x[j]);
    y[i].d = fp32_to_fp16(sum_abs / float(QK1_0));
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < QK1_0; ++j)
      if (x[j] >= 0.0f) y[i].qs[j / 8] = uint8_t(y[i].qs[j / 8] | (1 << (j % 8)));
  }
}

// q2_0: round(x / amax) + 1 clamped to 0..3, d = the block's max |x| (as ggml's reference quantizer).
void quant_q2_0(const float* x, BlockQ2_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK2_0) {
    const float d = abs_max(x, QK2_0);
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < QK2_0; ++j) {
      const int q = std::clamp(int(std::round(x[j] * id)) + 1, 0, 3);
      y[i].qs[j / 4] = uint8_t(y[i].qs[j / 4] | (q << (2 * (j % 4))));
    }
  }
}

}  // namespace

bool has_quantizer(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4: case GgmlType::Q1_0:
    case GgmlType::Q2_0:
      return true;
    default:
      return false;
  }
}

void quantize_row(GgmlType type, const float* x, void* blocks, int64_t k) {
  if (!has_quantizer(type))
    fail(ErrorKind::BadInput, "quantize_row: no quantizer for type " + std::string(type_name(type)));
  const int64_t nb = detail::row_blocks(type, k, "quantize_row");
  for (int64_t i = 0; i < k; ++i)
    if (!std::isfinite(x[i])) fail(ErrorKind::BadInput, "quantize_row: value " + std::to_string(i) + " is not finite");
  switch (type) {
    case GgmlType::Q4_0: return quant_symmetric(x, static_cast<BlockQ4_0*>(blocks), nb, 8);
    case GgmlType::Q5_0: return quant_symmetric(x, static_cast<BlockQ5_0*>(blocks), nb, 16);
    case GgmlType::Q4_1: return quant_min_max(x, static_cast<BlockQ4_1*>(blocks), nb, 16);
    case GgmlType::Q5_1: return quant_min_max(x, static_cast<BlockQ5_1*>(blocks), nb, 32);
    case GgmlType::Q8_0: return quant_q8_0(x, static_cast<BlockQ8_0*>(blocks), nb);
    case GgmlType::Q2_K: return quant_q2_k(x, static_cast<BlockQ2_K*>(blocks), nb);
    case GgmlType::Q3_K: return quant_q3_k(x, static_cast<BlockQ3_K*>(blocks), nb);
    case GgmlType::Q4_K: return quant_qk(x, static_cast<BlockQ4_K*>(blocks), nb, 16);
    case GgmlType::Q5_K: return quant_qk(x, static_cast<BlockQ5_K*>(blocks), nb, 32);
    case GgmlType::Q6_K: return quant_q6_k(x, static_cast<BlockQ6_K*>(blocks), nb);
    case GgmlType::IQ4_NL: return quant_iq4_nl(x, static_cast<BlockIQ4_NL*>(blocks), nb);
    case GgmlType::IQ4_XS: return quant_iq4_xs(x, static_cast<BlockIQ4_XS*>(blocks), nb);
    case GgmlType::MXFP4: return quant_mxfp4(x, static_cast<BlockMXFP4*>(blocks), nb);
    case GgmlType::Q1_0: return quant_q1_0(x, static_cast<BlockQ1_0*>(blocks), nb);
    case GgmlType::Q2_0: return quant_q2_0(x, static_cast<BlockQ2_0*>(blocks), nb);
    default: fail(ErrorKind::Internal, "quantize_row: unhandled type " + std::string(type_name(type)));
  }
}

}  // namespace temper::quant
