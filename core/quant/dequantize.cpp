// Dequantization, bit-identical to ggml's dequantize_row_*: the same float operations in the same
// order (products of a half scale and small integers are exact; only the "- min" steps round).
#include <cstring>
#include <string>
#include <vector>

#include "detail.h"
#include "iq_tier2.h"
#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/quant/reference.h"

namespace temper::quant {
namespace detail {

int64_t row_blocks(GgmlType type, int64_t k, const char* what) {
  const TypeInfo& info = type_info(type);
  if (!quant_supported(type))
    fail(ErrorKind::BadInput, std::string(what) + ": no CPU reference for type " + std::string(info.name));
  if (k < 0 || k % info.block_size != 0)
    fail(ErrorKind::BadInput, std::string(what) + ": row length " + std::to_string(k) + " is not a multiple of " +
                                  std::to_string(info.block_size) + " (" + std::string(info.name) + " block size)");
  return k / info.block_size;
}

}  // namespace detail

namespace {

using detail::kValuesIq4nl;
using detail::kValuesMxfp4;
using detail::load_u32;

void dequant_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = float((x[i].qs[j] & 0xF) - 8) * d;
      y[j + 16] = float((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d), m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = float(x[i].qs[j] & 0xF) * d + m;
      y[j + 16] = float(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequant_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int h0 = int((qh >> j) & 1u) << 4, h1 = int((qh >> (j + 16)) & 1u) << 4;
      y[j] = float(((x[i].qs[j] & 0xF) | h0) - 16) * d;
      y[j + 16] = float(((x[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequant_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d), m = fp16_to_fp32(x[i].m);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int h0 = int((qh >> j) & 1u) << 4, h1 = int((qh >> (j + 16)) & 1u) << 4;
      y[j] = float((x[i].qs[j] & 0xF) | h0) * d + m;
      y[j + 16] = float((x[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void dequant_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < 32; ++j) y[j] = float(x[i].qs[j]) * d;
  }
}

void dequant_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d), dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // 16 values from q[0..15], then 16 from q[16..31]
          const uint8_t sc = x[i].scales[is++];
          const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * float((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequant_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* q = x[i].qs;
    int is = 0;
    int bit = 0;  // hmask bit of the current group of 32 values
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, ++bit) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d * float(detail::scale_q3_k(is++, x[i].scales));
          for (int l = 0; l < 16; ++l) {
            const int idx = l + 16 * part;
            const int low = (q[idx] >> shift) & 3;
            const int high = (x[i].hmask[idx] >> bit) & 1;
            *y++ = dl * float(low - (high ? 0 : 4));
          }
        }
      }
    }
  }
}

// Sub-block j's scale and min of a q4_K / q5_K block, multiplied out by the block's d and dmin.
struct KScales {
  float d, m;
};
KScales k_scales(int j, const uint8_t* scales, float d, float dmin) {
  int sc, m;
  detail::scale_min_k4(j, scales, sc, m);
  return {d * float(sc), dmin * float(m)};
}

void dequant_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d), dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int pair = 0; pair < 4; ++pair, q += 32) {
      const KScales lo = k_scales(2 * pair, x[i].scales, d, dmin), hi = k_scales(2 * pair + 1, x[i].scales, d, dmin);
      for (int l = 0; l < 32; ++l) *y++ = lo.d * float(q[l] & 0xF) - lo.m;
      for (int l = 0; l < 32; ++l) *y++ = hi.d * float(q[l] >> 4) - hi.m;
    }
  }
}

void dequant_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d), dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    for (int pair = 0; pair < 4; ++pair, ql += 32) {
      const int bit_lo = 2 * pair, bit_hi = 2 * pair + 1;
      const KScales lo = k_scales(bit_lo, x[i].scales, d, dmin), hi = k_scales(bit_hi, x[i].scales, d, dmin);
      for (int l = 0; l < 32; ++l) *y++ = lo.d * float((ql[l] & 0xF) + (((qh[l] >> bit_lo) & 1) << 4)) - lo.m;
      for (int l = 0; l < 32; ++l) *y++ = hi.d * float((ql[l] >> 4) + (((qh[l] >> bit_hi) & 1) << 4)) - hi.m;
    }
  }
}

void dequant_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * float(sc[is]) * float(q1);
        y[l + 32] = d * float(sc[is + 2]) * float(q2);
        y[l + 64] = d * float(sc[is + 4]) * float(q3);
        y[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
    }
  }
}

void dequant_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * float(kValuesIq4nl[x[i].qs[j] & 0xF]);
      y[j + 16] = d * float(kValuesIq4nl[x[i].qs[j] >> 4]);
    }
  }
}

void dequant_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* qs = x[i].qs;
    for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
      const float dl = d * float(detail::scale_iq4_xs(ib, x[i]));
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * float(kValuesIq4nl[qs[j] & 0xF]);
        y[j + 16] = dl * float(kValuesIq4nl[qs[j] >> 4]);
      }
    }
  }
}

void dequant_mxfp4(const BlockMXFP4* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = e8m0_to_fp32_half(x[i].e);
    for (int j = 0; j < 16; ++j) {
      y[j] = float(kValuesMxfp4[x[i].qs[j] & 0xF]) * d;
      y[j + 16] = float(kValuesMxfp4[x[i].qs[j] >> 4]) * d;
    }
  }
}

}  // namespace

bool quant_supported(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1: case GgmlType::Q8_0:
    case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
    case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: case GgmlType::MXFP4:
      return true;
    default:
      return detail::has_tier2_reference(type);
  }
}

std::span<const GgmlType> supported_types() {
  static const std::vector<GgmlType> types = [] {
    using T = GgmlType;
    std::vector<GgmlType> all{T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q8_0, T::Q2_K, T::Q3_K, T::Q4_K, T::Q5_K,
                              T::Q6_K, T::IQ4_NL, T::IQ4_XS, T::MXFP4, T::IQ2_XXS, T::IQ2_XS, T::IQ2_S,
                              T::IQ3_XXS, T::IQ3_S, T::IQ1_S, T::IQ1_M, T::NVFP4, T::Q1_0, T::Q2_0};
    std::erase_if(all, [](GgmlType t) { return !quant_supported(t); });
    return all;
  }();
  return types;
}

void dequantize_row(GgmlType type, const void* blocks, float* out, int64_t k) {
  const int64_t nb = detail::row_blocks(type, k, "dequantize_row");
  switch (type) {
    case GgmlType::Q4_0: return dequant_q4_0(static_cast<const BlockQ4_0*>(blocks), out, nb);
    case GgmlType::Q4_1: return dequant_q4_1(static_cast<const BlockQ4_1*>(blocks), out, nb);
    case GgmlType::Q5_0: return dequant_q5_0(static_cast<const BlockQ5_0*>(blocks), out, nb);
    case GgmlType::Q5_1: return dequant_q5_1(static_cast<const BlockQ5_1*>(blocks), out, nb);
    case GgmlType::Q8_0: return dequant_q8_0(static_cast<const BlockQ8_0*>(blocks), out, nb);
    case GgmlType::Q2_K: return dequant_q2_k(static_cast<const BlockQ2_K*>(blocks), out, nb);
    case GgmlType::Q3_K: return dequant_q3_k(static_cast<const BlockQ3_K*>(blocks), out, nb);
    case GgmlType::Q4_K: return dequant_q4_k(static_cast<const BlockQ4_K*>(blocks), out, nb);
    case GgmlType::Q5_K: return dequant_q5_k(static_cast<const BlockQ5_K*>(blocks), out, nb);
    case GgmlType::Q6_K: return dequant_q6_k(static_cast<const BlockQ6_K*>(blocks), out, nb);
    case GgmlType::IQ4_NL: return dequant_iq4_nl(static_cast<const BlockIQ4_NL*>(blocks), out, nb);
    case GgmlType::IQ4_XS: return dequant_iq4_xs(static_cast<const BlockIQ4_XS*>(blocks), out, nb);
    case GgmlType::MXFP4: return dequant_mxfp4(static_cast<const BlockMXFP4*>(blocks), out, nb);
    default: return detail::dequantize_tier2(type, blocks, out, nb);
  }
}

}  // namespace temper::quant
