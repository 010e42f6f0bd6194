// q8_1 activation quantization and the two reference dot products. Each vec_dot call below mirrors
// one call of ggml-cuda's vec_dot_<type>_q8_1 in mmvq (same integer sums, same float expression
// order); a kernel thread makes these calls for every weight block, vdr ints at a time.
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "detail.h"
#include "iq_tier2.h"
#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/quant/reference.h"

namespace temper::quant {
namespace {

using detail::kValuesIq4nl;
using detail::kValuesMxfp4;
using detail::load_u16;
using detail::load_u32;
using detail::Q8;

constexpr double kUnit = 0x1p-24;  // float unit roundoff

float half_product(float a, float b) { return fp16_to_fp32(fp32_to_fp16(a * b)); }  // a·b exact in float

// One call's contribution.
struct Call {
  DotQ8_1& acc;
  void add(float value, double magnitude, double half_error = 0) {
    acc.value += value;
    acc.magnitude += magnitude;
    acc.half_rounding += half_error;
    ++acc.calls;
    if (acc.keep_calls) acc.call_values.push_back(value);
  }
};

// Σ over 8 bytes b0..b0+7 of f(byte) paired with q8 positions b0.. (low nibble) and b0+16.. (high).
template <class Low, class High>
int nibble_dot(const int8_t* q8, int b0, Low low, High high) {
  int sum = 0;
  for (int b = b0; b < b0 + 8; ++b) sum += low(b) * q8[b] + high(b) * q8[b + 16];
  return sum;
}

void dot_q4_0(const BlockQ4_0* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d4 = fp16_to_fp32(x[i].d);
    const Q8 u(y[i]);
    for (int c = 0; c < 2; ++c) {  // vdr 2 of qi 4: 16 values per call
      const uint8_t* qs = x[i].qs;
      const int sumi = nibble_dot(u.q, 8 * c, [&](int b) { return qs[b] & 0xF; }, [&](int b) { return qs[b] >> 4; });
      // the "- 4·s" term subtracts 8 from each of this call's 16 quants (half of the block's 8·s)
      call.add(d4 * (float(sumi) * u.d - 4.0f * u.s), std::fabs(d4) * (std::fabs(float(sumi) * u.d) + std::fabs(4.0f * u.s)));
    }
  }
}

template <class Block, class Quant>
void dot_q_1(const Block* x, const BlockQ8_1* y, int64_t nb, bool half_products, Quant quant, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d), m = fp16_to_fp32(x[i].m);
    const Q8 u(y[i]);
    const float dd = half_products ? half_product(d, u.d) : d * u.d;
    const float ms = half_products ? half_product(m, u.s) : m * u.s;
    const double dd_error = std::fabs(double(dd) - double(d) * double(u.d));
    const double ms_error = std::fabs(double(ms) - double(m) * double(u.s));
    for (int c = 0; c < 2; ++c) {
      int sumi = 0;
      for (int b = 8 * c; b < 8 * c + 8; ++b) sumi += quant(x[i], b) * u.q[b] + quant(x[i], b + 16) * u.q[b + 16];
      // each of the two calls adds half of m·s
      call.add(float(sumi) * dd + ms / 2.0f, std::fabs(float(sumi) * dd) + std::fabs(ms / 2.0f),
               std::abs(sumi) * dd_error + ms_error / 2);
    }
  }
}


void dot_q5_0(const BlockQ5_0* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d5 = fp16_to_fp32(x[i].d);
    const uint32_t qh = load_u32(x[i].qh);
    const Q8 u(y[i]);
    for (int c = 0; c < 2; ++c) {
      int sumi = 0;
      for (int b = 8 * c; b < 8 * c + 8; ++b) {
        const int lo = (x[i].qs[b] & 0xF) | int(((qh >> b) & 1u) << 4);
        const int hi = (x[i].qs[b] >> 4) | int(((qh >> (b + 16)) & 1u) << 4);
        sumi += lo * u.q[b] + hi * u.q[b + 16];
      }
      call.add(d5 * (float(sumi) * u.d - 8.0f * u.s), std::fabs(d5) * (std::fabs(float(sumi) * u.d) + std::fabs(8.0f * u.s)));
    }
  }
}

void dot_q8_0(const BlockQ8_0* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d0 = fp16_to_fp32(x[i].d);
    const Q8 u(y[i]);
    for (int c = 0; c < 4; ++c) {  // vdr 2 of qi 8: 8 values per call
      int sumi = 0;
      for (int b = 8 * c; b < 8 * c + 8; ++b) sumi += x[i].qs[b] * u.q[b];
      const float value = d0 * u.d * float(sumi);
      call.add(value, std::fabs(value));
    }
  }
}

// Types whose 32 values per q8 block come from a 16-entry table of nibbles (iq4_nl, mxfp4).
template <class Block, class Scale>
void dot_table4(const Block* x, const BlockQ8_1* y, int64_t nb, const int8_t* table, Scale scale, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const Q8 u(y[i]);
    const float d = scale(x[i]) * u.d;
    for (int c = 0; c < 2; ++c) {
      int sumi = 0;
      for (int b = 8 * c; b < 8 * c + 8; ++b) sumi += table[x[i].qs[b] & 0xF] * u.q[b] + table[x[i].qs[b] >> 4] * u.q[b + 16];
      const float value = d * float(sumi);
      call.add(value, std::fabs(value));
    }
  }
}

void dot_iq4_xs(const BlockIQ4_XS* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {  // vdr 4 of qi 32: one sub-block of 32 values per call
      const Q8 u(y[8 * i + ib]);
      const uint8_t* qs = x[i].qs + 16 * ib;
      int sumi = 0;
      for (int b = 0; b < 16; ++b) sumi += kValuesIq4nl[qs[b] & 0xF] * u.q[b] + kValuesIq4nl[qs[b] >> 4] * u.q[b + 16];
      sumi *= detail::scale_iq4_xs(ib, x[i]);
      const float value = d * u.d * float(sumi);
      call.add(value, std::fabs(value));
    }
  }
}

void dot_q2_k(const BlockQ2_K* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d), dmin = fp16_to_fp32(x[i].dmin);
    for (int iqs = 0; iqs < 16; ++iqs) {  // vdr 1 of qi 16: 4 bytes = 16 values in 4 q8 blocks
      const int half = iqs / 8, t = iqs % 8;
      const uint8_t* q = x[i].qs + 32 * half + 4 * t;
      float sum_d = 0, sum_m = 0;
      double mag_d = 0, mag_m = 0;
      for (int s = 0; s < 4; ++s) {
        const int sc = x[i].scales[8 * half + t / 4 + 2 * s];
        const Q8 u(y[8 * i + 4 * half + s]);
        int dot = 0, sum_u = 0;
        for (int j = 0; j < 4; ++j) {
          dot += ((q[j] >> (2 * s)) & 3) * u.q[4 * t + j];
          sum_u += u.q[4 * t + j];
        }
        sum_d += u.d * float(dot * (sc & 0xF));
        sum_m += u.d * float((sc >> 4) * sum_u);
        mag_d += std::fabs(u.d * float(dot * (sc & 0xF)));
        mag_m += std::fabs(u.d * float((sc >> 4) * sum_u));
      }
      call.add(d * sum_d - dmin * sum_m, std::fabs(d) * mag_d + std::fabs(dmin) * mag_m);
    }
  }
}

void dot_q3_k(const BlockQ3_K* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int iqs = 0; iqs < 16; ++iqs) {
      const int half = iqs / 8, t = iqs % 8;
      const uint8_t* q = x[i].qs + 32 * half + 4 * t;
      const uint8_t* hm = x[i].hmask + 4 * t;
      float sum = 0;
      double mag = 0;
      for (int s = 0; s < 4; ++s) {
        const int sc = detail::scale_q3_k(8 * half + t / 4 + 2 * s, x[i].scales);
        const Q8 u(y[8 * i + 4 * half + s]);
        int dot = 0;
        for (int j = 0; j < 4; ++j) {
          const int value = ((q[j] >> (2 * s)) & 3) - (((hm[j] >> (4 * half + s)) & 1) ? 0 : 4);
          dot += value * u.q[4 * t + j];
        }
        sum += u.d * float(dot * sc);
        mag += std::fabs(u.d * float(dot * sc));
      }
      call.add(d * sum, std::fabs(d) * mag);
    }
  }
}

// q4_K and q5_K: call c covers pair p = c/4 of sub-blocks (64 values), ints t = c%4 and t + 4.
template <class Block, class Quant>
void dot_qk_pairs(const Block* x, const BlockQ8_1* y, int64_t nb, Quant quant, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d), dmin = fp16_to_fp32(x[i].dmin);
    for (int c = 0; c < 16; ++c) {  // vdr 2 of qi 32
      const int p = c / 4, t = c % 4;
      float sum_d = 0, sum_m = 0;
      double mag_d = 0, mag_m = 0;
      for (int s = 0; s < 2; ++s) {
        int sc, m;
        detail::scale_min_k4(2 * p + s, x[i].scales, sc, m);
        const Q8 u(y[8 * i + 2 * p + s]);
        int dot1 = 0, dot2 = 0;
        for (int j = 0; j < 4; ++j) {
          for (int l : {4 * t + j, 16 + 4 * t + j}) {  // position inside the 32 values of sub-block 2p+s
            dot1 += quant(x[i], p, s, l) * u.q[l];
            dot2 += u.q[l];
          }
        }
        sum_d += u.d * float(dot1 * sc);
        sum_m += u.d * float(dot2 * m);
        mag_d += std::fabs(u.d * float(dot1 * sc));
        mag_m += std::fabs(u.d * float(dot2 * m));
      }
      call.add(d * sum_d - dmin * sum_m, std::fabs(d) * mag_d + std::fabs(dmin) * mag_m);
    }
  }
}

void dot_q6_k(const BlockQ6_K* x, const BlockQ8_1* y, int64_t nb, Call call) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int iqs = 0; iqs < 32; ++iqs) {  // vdr 1 of qi 32: 4 bytes of ql = 8 values in 2 q8 blocks
      const int half = iqs / 16, r = iqs % 16, upper = r / 8, t = iqs % 8;
      const uint8_t* ql = x[i].ql + 4 * iqs;
      const uint8_t* qh = x[i].qh + 32 * half + 4 * t;
      float sum = 0;
      double mag = 0;
      for (int s = 0; s < 2; ++s) {
        const int sc = x[i].scales[8 * half + r / 4 + 4 * s];
        const Q8 u(y[8 * i + 4 * half + upper + 2 * s]);
        int dot = 0;
        for (int j = 0; j < 4; ++j) {
          const int value = (((ql[j] >> (4 * s)) & 0xF) | (((qh[j] >> (2 * upper + 4 * s)) & 3) << 4)) - 32;
          dot += value * u.q[4 * t + j];
        }
        sum += u.d * float(dot * sc);
        mag += std::fabs(u.d * float(dot * sc));
      }
      call.add(d * sum, std::fabs(d) * mag);
    }
  }
}

}  // namespace

double weight_offset(GgmlType type, const void* row, int64_t index32) {
  if (!quant_supported(type)) detail::row_blocks(type, 0, "weight_offset");  // throws, naming the type
  // the legacy types have 32-value blocks: index32 is their block index
  switch (type) {
    case GgmlType::Q4_0: return -8.0 * fp16_to_fp32(static_cast<const BlockQ4_0*>(row)[index32].d);
    case GgmlType::Q5_0: return -16.0 * fp16_to_fp32(static_cast<const BlockQ5_0*>(row)[index32].d);
    case GgmlType::Q4_1: return fp16_to_fp32(static_cast<const BlockQ4_1*>(row)[index32].m);
    case GgmlType::Q5_1: return fp16_to_fp32(static_cast<const BlockQ5_1*>(row)[index32].m);
    default: return detail::offset_tier2(type, row, index32);
  }
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t k, Q8_1Style style) {
  if (k < 0 || k % QK8_1 != 0)
    fail(ErrorKind::BadInput, "quantize_q8_1: row length " + std::to_string(k) + " is not a multiple of 32");
  for (int64_t ib = 0; ib < k / QK8_1; ++ib) {
    const float* xb = x + ib * QK8_1;
    float amax = 0;
    bool finite = true;
    for (int j = 0; j < QK8_1; ++j) {
      amax = std::fmax(amax, std::fabs(xb[j]));
      finite = finite && std::isfinite(xb[j]);
    }
    if (!finite)
      fail(ErrorKind::BadInput, "quantize_q8_1: non-finite activation in values " + std::to_string(ib * QK8_1) + ".." +
                                    std::to_string(ib * QK8_1 + 31));
    const float d = amax / 127.0f;
    BlockQ8_1& out = y[ib];
    out.d = fp32_to_fp16(d);
    if (style == Q8_1Style::Gpu) {
      for (int j = 0; j < QK8_1; ++j) out.qs[j] = amax == 0.0f ? int8_t(0) : static_cast<int8_t>(std::round(xb[j] / d));
      // warp_reduce_sum over 32 lanes: lane l adds lane l^offset, offset 16, 8, 4, 2, 1
      std::array<float, QK8_1> lanes;
      std::memcpy(lanes.data(), xb, sizeof lanes);
      for (int offset = 16; offset > 0; offset >>= 1) {
        std::array<float, QK8_1> next;
        for (int l = 0; l < QK8_1; ++l) next[l] = lanes[l] + lanes[l ^ offset];
        lanes = next;
      }
      out.s = fp32_to_fp16(lanes[0]);
    } else {
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      int sum = 0;
      for (int j = 0; j < QK8_1; ++j) {
        out.qs[j] = static_cast<int8_t>(std::round(xb[j] * id));
        sum += out.qs[j];
      }
      out.s = fp32_to_fp16(float(sum) * d);
    }
  }
}

double dot_f64(GgmlType type, const void* row, const float* x, int64_t k) {
  detail::row_blocks(type, k, "dot_f64");
  std::vector<float> w(static_cast<size_t>(k));
  dequantize_row(type, row, w.data(), k);
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += double(w[size_t(i)]) * double(x[i]);
  return sum;
}

double abs_dot_f64(GgmlType type, const void* row, const float* x, int64_t k) {
  detail::row_blocks(type, k, "abs_dot_f64");
  std::vector<float> w(static_cast<size_t>(k));
  dequantize_row(type, row, w.data(), k);
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += std::fabs(double(w[size_t(i)]) * double(x[i]));
  return sum;
}

DotQ8_1 dot_q8_1_detail(GgmlType type, const void* row, const BlockQ8_1* y, int64_t k, DotOptions options) {
  const int64_t nb = detail::row_blocks(type, k, "dot_q8_1");
  DotQ8_1 acc;
  acc.keep_calls = options.keep_calls;
  Call call{acc};
  switch (type) {
    case GgmlType::Q4_0: dot_q4_0(static_cast<const BlockQ4_0*>(row), y, nb, call); break;
    case GgmlType::Q4_1:
      dot_q_1(static_cast<const BlockQ4_1*>(row), y, nb, options.half_products,
              [](const BlockQ4_1& b, int v) { return v < 16 ? b.qs[v] & 0xF : b.qs[v - 16] >> 4; }, call);
      break;
    case GgmlType::Q5_0: dot_q5_0(static_cast<const BlockQ5_0*>(row), y, nb, call); break;
    case GgmlType::Q5_1:
      dot_q_1(static_cast<const BlockQ5_1*>(row), y, nb, options.half_products,
              [](const BlockQ5_1& b, int v) {
                const int nibble = v < 16 ? b.qs[v] & 0xF : b.qs[v - 16] >> 4;
                return nibble | int(((load_u32(b.qh) >> v) & 1u) << 4);
              },
              call);
      break;
    case GgmlType::Q8_0: dot_q8_0(static_cast<const BlockQ8_0*>(row), y, nb, call); break;
    case GgmlType::Q2_K: dot_q2_k(static_cast<const BlockQ2_K*>(row), y, nb, call); break;
    case GgmlType::Q3_K: dot_q3_k(static_cast<const BlockQ3_K*>(row), y, nb, call); break;
    case GgmlType::Q4_K:
      dot_qk_pairs(static_cast<const BlockQ4_K*>(row), y, nb,
                   [](const BlockQ4_K& b, int p, int s, int l) { return (b.qs[32 * p + l] >> (4 * s)) & 0xF; }, call);
      break;
    case GgmlType::Q5_K:
      dot_qk_pairs(static_cast<const BlockQ5_K*>(row), y, nb,
                   [](const BlockQ5_K& b, int p, int s, int l) {
                     return ((b.qs[32 * p + l] >> (4 * s)) & 0xF) | (((b.qh[l] >> (2 * p + s)) & 1) << 4);
                   },
                   call);
      break;
    case GgmlType::Q6_K: dot_q6_k(static_cast<const BlockQ6_K*>(row), y, nb, call); break;
    case GgmlType::IQ4_NL:
      dot_table4(static_cast<const BlockIQ4_NL*>(row), y, nb, kValuesIq4nl,
                 [](const BlockIQ4_NL& b) { return fp16_to_fp32(b.d); }, call);
      break;
    case GgmlType::IQ4_XS: dot_iq4_xs(static_cast<const BlockIQ4_XS*>(row), y, nb, call); break;
    case GgmlType::MXFP4:
      // the kernel decodes E8M0 as 2^(e-127) and halves it (the table holds doubled E2M1 values)
      dot_table4(static_cast<const BlockMXFP4*>(row), y, nb, kValuesMxfp4,
                 [](const BlockMXFP4& b) { return e8m0_to_fp32(b.e) * 0.5f; }, call);
      break;
    default: detail::dot_q8_1_tier2(type, row, y, nb, acc); break;
  }
  return acc;
}

float dot_q8_1(GgmlType type, const void* row, const BlockQ8_1* y, int64_t k, DotOptions options) {
  return float(dot_q8_1_detail(type, row, y, k, options).value);
}

double tolerance_q8_1(const DotQ8_1& reference) {
  // Summing n float terms in any order errs by at most (n-1)·u·Σ|term|; each call's own float steps
  // (here and in the kernel, possibly fused) add a few u·|terms| more. 2^-100 keeps an all-zero row exact-but-nonzero.
  return double(reference.calls + 32) * kUnit * reference.magnitude + 0x1p-100;
}

double tolerance_f64(GgmlType type, const void* row, const float* x, int64_t k, DotOptions options) {
  const int64_t nb = detail::row_blocks(type, k, "tolerance_f64");
  std::vector<BlockQ8_1> y(static_cast<size_t>(k / QK8_1));
  quantize_q8_1(x, y.data(), k, Q8_1Style::Gpu);
  const DotQ8_1 b = dot_q8_1_detail(type, row, y.data(), k, options);

  std::vector<float> w(static_cast<size_t>(k));
  dequantize_row(type, row, w.data(), k);
  double activation = 0, sums = 0, weights = 0;
  for (int64_t j = 0; j < k / QK8_1; ++j) {
    const Q8 u(y[size_t(j)]);
    const double offset = weight_offset(type, row, j);
    double exact_sum = 0;
    for (int l = 0; l < QK8_1; ++l) {
      const int64_t i = j * QK8_1 + l;
      const double xi = x[i];
      exact_sum += xi;
      // the kernel multiplies (w - offset) with the rounded activation d·q and applies offset via s
      activation += std::fabs(double(w[size_t(i)]) - offset) * std::fabs(xi - double(u.d) * u.q[l]);
      weights += std::fabs(double(w[size_t(i)]) * xi);
    }
    sums += std::fabs(offset) * std::fabs(double(u.s) - exact_sum);
  }
  (void)nb;
  // float roundings of the kernel, plus one rounding per dequantized weight in the float64 side
  const double rounding = double(b.calls + 32) * kUnit * b.magnitude + 2 * kUnit * weights;
  return 1.125 * (activation + sums + b.half_rounding + b.truncation + rounding) + 0x1p-100;
}

}  // namespace temper::quant
