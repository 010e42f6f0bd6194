// Tier-2 types: the grid-based IQ formats (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m),
// nvfp4 and q1_0 (newer ggml's 1-bit type, which its mmvq also runs). Dequantization follows ggml's dequantize_row_* (ggml-quants.c) operation for operation; each
// dot "call" mirrors one vec_dot_<type>_q8_1 of ggml-cuda (vecdotq.cuh), including its integer
// divisions, which truncate toward zero exactly like C++'s.
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "detail.h"
#include "iq_tier2.h"
#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/quant/iq_grids.h"

namespace temper::quant {
namespace {

using detail::load_u16;
using detail::load_u32;
using detail::Q8;

#include "iq_grids_a.inc"
#include "iq_grids_b.inc"
#include "iq_grids_c.inc"
#include "iq_grids_d.inc"

// 8 two-bit lattice fields -> 8 grid bytes.
template <size_t N>
std::array<uint64_t, N> expand(const uint16_t (&index)[N], const uint8_t (&level)[3]) {
  std::array<uint64_t, N> grid{};
  for (size_t k = 0; k < N; ++k)
    for (int j = 0; j < 8; ++j) grid[k] |= uint64_t(level[(index[k] >> (2 * j)) & 3]) << (8 * j);
  return grid;
}

struct Tables {
  std::array<uint64_t, 256> iq2xxs;
  std::array<uint64_t, 512> iq2xs;
  std::array<uint64_t, 1024> iq2s;
  std::array<uint64_t, 2048> iq1s;
  std::array<uint8_t, 128> ksigns;
};

const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    constexpr uint8_t kIq2Levels[3] = {0x08, 0x19, 0x2b};
    constexpr uint8_t kIq1Levels[3] = {0xff, 0x00, 0x01};  // -1, 0, +1 as int8 bytes
    r.iq2xxs = expand(kIndexIq2xxs, kIq2Levels);
    r.iq2xs = expand(kIndexIq2xs, kIq2Levels);
    r.iq2s = expand(kIndexIq2s, kIq2Levels);
    r.iq1s = expand(kIndexIq1s, kIq1Levels);
    for (unsigned i = 0; i < 128; ++i) r.ksigns[i] = uint8_t(i | ((std::popcount(i) & 1u) << 7));
    return r;
  }();
  return t;
}

uint8_t grid_byte(uint64_t entry, int j) { return uint8_t(entry >> (8 * j)); }
uint8_t grid_byte32(uint32_t entry, int j) { return uint8_t(entry >> (8 * j)); }
int8_t iq1_value(uint64_t entry, int j) { return static_cast<int8_t>(grid_byte(entry, j)); }
float sign_of(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.0f : 1.0f; }
int isign(uint8_t signs, int j) { return (signs >> j) & 1 ? -1 : 1; }



void add_call(DotQ8_1& acc, float value, double magnitude, double truncation = 0) {
  acc.value += value;
  acc.magnitude += magnitude;
  acc.truncation += truncation;
  ++acc.calls;
  if (acc.keep_calls) acc.call_values.push_back(value);
}

// ---- iq2_xxs: per 32 values 4 grid indices (bytes), then 4×7 sign bits and a 4-bit scale ----

void dequant_iq2_xxs(const BlockIQ2_XXS* x, float* y, int64_t nb) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const auto* qs = reinterpret_cast<const uint8_t*>(x[i].qs);
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* idx = qs + 8 * ib;
      const uint32_t aux = load_u32(qs + 8 * ib + 4);
      const float db = d * (0.5f + float(aux >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint64_t grid = t.iq2xxs[idx[l]];
        const uint8_t signs = t.ksigns[(aux >> (7 * l)) & 127];
        for (int j = 0; j < 8; ++j) y[j] = db * float(grid_byte(grid, j)) * sign_of(signs, j);
      }
    }
  }
}

void dot_iq2_xxs(const BlockIQ2_XXS* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const auto* qs = reinterpret_cast<const uint8_t*>(x[i].qs);
    for (int ib = 0; ib < 8; ++ib) {  // vdr 2 of qi 16: one call per 32 values
      const Q8 u(y[8 * i + ib]);
      const uint8_t* idx = qs + 8 * ib;
      const uint32_t aux = load_u32(qs + 8 * ib + 4);
      int sumi = 0;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = t.iq2xxs[idx[l]];
        const uint8_t signs = t.ksigns[(aux >> (7 * l)) & 127];
        for (int j = 0; j < 8; ++j) sumi += isign(signs, j) * grid_byte(grid, j) * u.q[8 * l + j];
      }
      const int ls = int(aux >> 27) | 1;  // 2·scale + 1
      sumi = sumi * ls / 8;
      const float dd = d * u.d;
      const float value = dd * float(sumi);
      add_call(acc, value, std::fabs(value), std::fabs(dd));
    }
  }
}

// ---- iq2_xs: 16-bit entries (9-bit index, 7 sign bits), 4-bit scales per 16 values ----

void dequant_iq2_xs(const BlockIQ2_XS* x, float* y, int64_t nb) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const float db[2] = {d * (0.5f + float(x[i].scales[ib] & 0xF)) * 0.25f,
                           d * (0.5f + float(x[i].scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint16_t q = x[i].qs[4 * ib + l];
        const uint64_t grid = t.iq2xs[q & 511];
        const uint8_t signs = t.ksigns[q >> 9];
        for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * float(grid_byte(grid, j)) * sign_of(signs, j);
      }
    }
  }
}

// Shared by iq2_xs and iq2_s: two halves of 16 values with 4-bit scales ls0, ls1.
float iq2_scaled_call(int sumi0, int sumi1, int scales, float dd, DotQ8_1& acc) {
  const int ls0 = scales & 0xF, ls1 = scales >> 4;
  const int sumi = (sumi0 * ls0 + sumi1 * ls1 + (sumi0 + sumi1) / 2) / 4;
  const float value = dd * float(sumi);
  add_call(acc, value, std::fabs(value), 1.25 * std::fabs(dd));
  return value;
}

void dot_iq2_xs(const BlockIQ2_XS* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const Q8 u(y[8 * i + ib]);
      int sumi[2] = {0, 0};
      for (int l = 0; l < 4; ++l) {
        const uint16_t q = x[i].qs[4 * ib + l];
        const uint64_t grid = t.iq2xs[q & 511];
        const uint8_t signs = t.ksigns[q >> 9];
        for (int j = 0; j < 8; ++j) sumi[l / 2] += isign(signs, j) * grid_byte(grid, j) * u.q[8 * l + j];
      }
      iq2_scaled_call(sumi[0], sumi[1], x[i].scales[ib], d * u.d, acc);
    }
  }
}

// ---- iq2_s: 10-bit indices (8 bits in qs, 2 in qh), explicit sign bytes ----

uint64_t iq2s_entry(const BlockIQ2_S& b, int ib, int l) {
  return tables().iq2s[b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300)];
}
uint8_t iq2s_signs(const BlockIQ2_S& b, int ib, int l) { return b.qs[QK_K / 8 + 4 * ib + l]; }

void dequant_iq2_s(const BlockIQ2_S* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const float db[2] = {d * (0.5f + float(x[i].scales[ib] & 0xF)) * 0.25f,
                           d * (0.5f + float(x[i].scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint64_t grid = iq2s_entry(x[i], ib, l);
        const uint8_t signs = iq2s_signs(x[i], ib, l);
        for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * float(grid_byte(grid, j)) * sign_of(signs, j);
      }
    }
  }
}

void dot_iq2_s(const BlockIQ2_S* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const Q8 u(y[8 * i + ib]);
      int sumi[2] = {0, 0};
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = iq2s_entry(x[i], ib, l);
        const uint8_t signs = iq2s_signs(x[i], ib, l);
        for (int j = 0; j < 8; ++j) sumi[l / 2] += isign(signs, j) * grid_byte(grid, j) * u.q[8 * l + j];
      }
      iq2_scaled_call(sumi[0], sumi[1], x[i].scales[ib], d * u.d, acc);
    }
  }
}

// ---- iq3_xxs: per 32 values 8 byte indices into a 4-value grid, then 4×7 sign bits + 4-bit scale ----

void dequant_iq3_xxs(const BlockIQ3_XXS* x, float* y, int64_t nb) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = x[i].qs + 8 * ib;
      const uint32_t aux = load_u32(x[i].qs + QK_K / 4 + 4 * ib);
      const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint8_t signs = t.ksigns[(aux >> (7 * l)) & 127];
        const uint32_t g1 = kGridIq3xxs[qs[2 * l]], g2 = kGridIq3xxs[qs[2 * l + 1]];
        for (int j = 0; j < 4; ++j) {
          y[j] = db * float(grid_byte32(g1, j)) * sign_of(signs, j);
          y[j + 4] = db * float(grid_byte32(g2, j)) * sign_of(signs, j + 4);
        }
      }
    }
  }
}

void dot_iq3_xxs(const BlockIQ3_XXS* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const Q8 u(y[8 * i + ib]);
      const uint8_t* qs = x[i].qs + 8 * ib;
      const uint32_t aux = load_u32(x[i].qs + QK_K / 4 + 4 * ib);
      int sumi = 0;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = t.ksigns[(aux >> (7 * l)) & 127];
        const uint32_t g1 = kGridIq3xxs[qs[2 * l]], g2 = kGridIq3xxs[qs[2 * l + 1]];
        for (int j = 0; j < 4; ++j) {
          sumi += isign(signs, j) * grid_byte32(g1, j) * u.q[8 * l + j];
          sumi += isign(signs, j + 4) * grid_byte32(g2, j) * u.q[8 * l + j + 4];
        }
      }
      const int ls = int(aux >> 28);
      sumi = (ls * sumi + sumi / 2) / 2;
      const float dd = d * u.d;
      const float value = dd * float(sumi);
      add_call(acc, value, std::fabs(value), 1.25 * std::fabs(dd));
    }
  }
}

// ---- iq3_s: 9-bit indices (qh holds the ninth), explicit sign bytes, 4-bit scales per 32 ----

uint32_t iq3s_entry(const BlockIQ3_S& b, int ib, int k) {  // k: 0..7, the k-th 4-value group of sub-block ib
  const int shift = 8 - k;  // (qh << (8 - 2l)) for k = 2l, (qh << (7 - 2l)) for k = 2l + 1
  return kGridIq3s[b.qs[8 * ib + k] | ((b.qh[ib] << shift) & 0x100)];
}

void dequant_iq3_s(const BlockIQ3_S* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const float db = d * float(1 + 2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint8_t signs = x[i].signs[4 * ib + l];
        const uint32_t g1 = iq3s_entry(x[i], ib, 2 * l), g2 = iq3s_entry(x[i], ib, 2 * l + 1);
        for (int j = 0; j < 4; ++j) {
          y[j] = db * float(grid_byte32(g1, j)) * sign_of(signs, j);
          y[j + 4] = db * float(grid_byte32(g2, j)) * sign_of(signs, j + 4);
        }
      }
    }
  }
}

void dot_iq3_s(const BlockIQ3_S* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const Q8 u(y[8 * i + ib]);
      int sumi = 0;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = x[i].signs[4 * ib + l];
        const uint32_t g1 = iq3s_entry(x[i], ib, 2 * l), g2 = iq3s_entry(x[i], ib, 2 * l + 1);
        for (int j = 0; j < 4; ++j) {
          sumi += isign(signs, j) * grid_byte32(g1, j) * u.q[8 * l + j];
          sumi += isign(signs, j + 4) * grid_byte32(g2, j) * u.q[8 * l + j + 4];
        }
      }
      sumi *= 1 + 2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF);
      const float value = d * u.d * float(sumi);
      add_call(acc, value, std::fabs(value));
    }
  }
}

// ---- iq1_s: 11-bit indices into a {-1,0,1} grid, a 3-bit scale and a ±1/8 shift per 32 values ----

constexpr float kIq1Delta = 0.125f;

void dequant_iq1_s(const BlockIQ1_S* x, float* y, int64_t nb) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t qh = x[i].qh[ib];
      const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, y += 8) {
        const uint64_t grid = t.iq1s[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) y[j] = dl * (float(iq1_value(grid, j)) + delta);
      }
    }
  }
}

void dot_iq1_s(const BlockIQ1_S* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  const Tables& t = tables();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {  // vdr 1 of qi 8: one call per 32 values
      const Q8 u(y[8 * i + ib]);
      const uint16_t qh = x[i].qh[ib];
      int sumi = 0;  // the GPU grid holds value + 1 (0..2) so dp4a stays unsigned
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = t.iq1s[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) sumi += (iq1_value(grid, j) + 1) * u.q[8 * l + j];
      }
      const float d1q = d * float(((qh >> 11) & 0x0E) + 1);
      const float delta = -1.0f + kIq1Delta - float(qh & 0x8000) * (2.0f * kIq1Delta / float(0x8000));
      const float value = d1q * (u.d * float(sumi) + u.s * delta);
      add_call(acc, value, std::fabs(d1q) * (std::fabs(u.d * float(sumi)) + std::fabs(u.s * delta)));
    }
  }
}

// ---- iq1_m: like iq1_s per 8 values (own shift bit), 3-bit scales per 16, the half scale spread over
// the top nibbles of the four 16-bit scale words ----

float iq1m_scale(const BlockIQ1_M& b) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  return fp16_to_fp32(uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000)));
}

uint16_t iq1m_word(const BlockIQ1_M& b, int w) { return load_u16(b.scales + 2 * w); }

// Index and shift bit of group g (0..3) of sub-block ib.
uint64_t iq1m_entry(const BlockIQ1_M& b, int ib, int g, bool& negative_shift) {
  const int qhl = b.qh[2 * ib + g / 2] >> (4 * (g % 2));
  negative_shift = qhl & 0x08;
  return tables().iq1s[b.qs[4 * ib + g] | ((qhl & 7) << 8)];
}

void dequant_iq1_m(const BlockIQ1_M* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = iq1m_scale(x[i]);
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t sc = iq1m_word(x[i], ib / 2);
      const float dl[2] = {d * float(2 * ((sc >> (6 * (ib % 2) + 0)) & 0x7) + 1),
                           d * float(2 * ((sc >> (6 * (ib % 2) + 3)) & 0x7) + 1)};
      for (int g = 0; g < 4; ++g, y += 8) {
        bool negative;
        const uint64_t grid = iq1m_entry(x[i], ib, g, negative);
        const float delta = negative ? -kIq1Delta : kIq1Delta;
        for (int j = 0; j < 8; ++j) y[j] = dl[g / 2] * (float(iq1_value(grid, j)) + delta);
      }
    }
  }
}

void dot_iq1_m(const BlockIQ1_M* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  for (int64_t i = 0; i < nb; ++i) {
    const float scale = iq1m_scale(x[i]);
    for (int ib = 0; ib < 8; ++ib) {
      const Q8 u(y[8 * i + ib]);
      int sumi[2] = {0, 0};
      float sumf[2] = {0.0f, 0.0f};
      double sumf_mag[2] = {0, 0};
      for (int g = 0; g < 4; ++g) {
        bool negative;
        const uint64_t grid = iq1m_entry(x[i], ib, g, negative);
        int sumy = 0;
        for (int j = 0; j < 8; ++j) {
          sumi[g / 2] += (iq1_value(grid, j) + 1) * u.q[8 * g + j];
          sumy += u.q[8 * g + j];
        }
        const float delta = -1.0f + kIq1Delta - float(negative ? 0x08 : 0) * (2.0f * kIq1Delta / float(0x08));
        sumf[g / 2] += delta * float(sumy);
        sumf_mag[g / 2] += std::fabs(delta * float(sumy));
      }
      const float d = scale * u.d;
      const int tmp = iq1m_word(x[i], ib / 2) >> (6 * (ib % 2));
      const int sc0 = 2 * ((tmp >> 0) & 0x07) + 1, sc1 = 2 * ((tmp >> 3) & 0x07) + 1;
      const float value = d * ((float(sumi[0]) + sumf[0]) * float(sc0) + (float(sumi[1]) + sumf[1]) * float(sc1));
      const double magnitude = std::fabs(d) * ((std::abs(sumi[0]) + sumf_mag[0]) * sc0 + (std::abs(sumi[1]) + sumf_mag[1]) * sc1);
      add_call(acc, value, magnitude);
    }
  }
}

// ---- nvfp4: 64 values in 4 sub-blocks of 16, each with a UE4M3 scale; E2M1 nibbles ----

constexpr int8_t kValuesFp4[16] = {TEMPER_KVALUES_MXFP4};

void dequant_nvfp4(const BlockNVFP4* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < 4; ++s, y += 16) {
      const float d = ue4m3_to_fp32_half(x[i].d[s]);
      for (int j = 0; j < 8; ++j) {
        y[j] = float(kValuesFp4[x[i].qs[8 * s + j] & 0xF]) * d;
        y[j + 8] = float(kValuesFp4[x[i].qs[8 * s + j] >> 4]) * d;
      }
    }
  }
}

void dot_nvfp4(const BlockNVFP4* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int c = 0; c < 2; ++c) {  // vdr 4 of qi 8: two sub-blocks (32 values, one q8 block) per call
      const Q8 u(y[2 * i + c]);
      float sum = 0.0f;
      double magnitude = 0;
      for (int s = 2 * c; s < 2 * c + 2; ++s) {
        const int8_t* q8 = u.q + 16 * (s % 2);
        int sumi = 0;
        for (int j = 0; j < 8; ++j)
          sumi += kValuesFp4[x[i].qs[8 * s + j] & 0xF] * q8[j] + kValuesFp4[x[i].qs[8 * s + j] >> 4] * q8[j + 8];
        const float d = ue4m3_to_fp32_half(x[i].d[s]) * u.d;
        sum += d * float(sumi);
        magnitude += std::fabs(d * float(sumi));
      }
      add_call(acc, sum, magnitude);
    }
  }
}

// ---- q1_0: 128 values of ±d, one bit each ----

void dequant_q1_0(const BlockQ1_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK1_0) {
    const float d = fp16_to_fp32(x[i].d), neg_d = -d;
    for (int j = 0; j < QK1_0; ++j) y[j] = (x[i].qs[j / 8] >> (j % 8)) & 1 ? d : neg_d;
  }
}

void dot_q1_0(const BlockQ1_0* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d1 = fp16_to_fp32(x[i].d);
    for (int c = 0; c < 4; ++c) {  // vdr 1 of qi 4: one call per 32 values
      const Q8 u(y[4 * i + c]);
      int sumi = 0;
      for (int j = 0; j < 32; ++j) sumi += ((x[i].qs[4 * c + j / 8] >> (j % 8)) & 1 ? 1 : -1) * u.q[j];
      const float value = d1 * u.d * float(sumi);
      add_call(acc, value, std::fabs(value));
    }
  }
}

// ---- q2_0: 64 values of (q - 1)·d, q two bits (crumb j%4 of byte j/4) ----

void dequant_q2_0(const BlockQ2_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK2_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < QK2_0; ++j) y[j] = float(((x[i].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
  }
}

void dot_q2_0(const BlockQ2_0* x, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d2 = fp16_to_fp32(x[i].d);
    for (int c = 0; c < 2; ++c) {  // vdr 1 of qi 2: one call per 32 values
      const Q8 u(y[2 * i + c]);
      int sumi = 0;
      for (int j = 0; j < 32; ++j) sumi += (((x[i].qs[8 * c + j / 4] >> (2 * (j % 4))) & 3) - 1) * u.q[j];
      const float value = d2 * u.d * float(sumi);
      add_call(acc, value, std::fabs(value));
    }
  }
}

}  // namespace

std::span<const uint64_t, 256> iq2xxs_grid() { return tables().iq2xxs; }
std::span<const uint64_t, 512> iq2xs_grid() { return tables().iq2xs; }
std::span<const uint64_t, 1024> iq2s_grid() { return tables().iq2s; }
std::span<const uint32_t, 256> iq3xxs_grid() { return std::span<const uint32_t, 256>(kGridIq3xxs); }
std::span<const uint32_t, 512> iq3s_grid() { return std::span<const uint32_t, 512>(kGridIq3s); }
std::span<const uint64_t, 2048> iq1s_grid() { return tables().iq1s; }
std::span<const uint8_t, 128> ksigns_iq2xs() { return tables().ksigns; }

namespace detail {

bool has_tier2_reference(GgmlType type) {
  switch (type) {
    case GgmlType::IQ2_XXS: case GgmlType::IQ2_XS: case GgmlType::IQ2_S: case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S: case GgmlType::IQ1_S: case GgmlType::IQ1_M: case GgmlType::NVFP4: case GgmlType::Q1_0:
    case GgmlType::Q2_0:
      return true;
    default:
      return false;
  }
}

void dequantize_tier2(GgmlType type, const void* blocks, float* out, int64_t nb) {
  switch (type) {
    case GgmlType::IQ2_XXS: return dequant_iq2_xxs(static_cast<const BlockIQ2_XXS*>(blocks), out, nb);
    case GgmlType::IQ2_XS: return dequant_iq2_xs(static_cast<const BlockIQ2_XS*>(blocks), out, nb);
    case GgmlType::IQ2_S: return dequant_iq2_s(static_cast<const BlockIQ2_S*>(blocks), out, nb);
    case GgmlType::IQ3_XXS: return dequant_iq3_xxs(static_cast<const BlockIQ3_XXS*>(blocks), out, nb);
    case GgmlType::IQ3_S: return dequant_iq3_s(static_cast<const BlockIQ3_S*>(blocks), out, nb);
    case GgmlType::IQ1_S: return dequant_iq1_s(static_cast<const BlockIQ1_S*>(blocks), out, nb);
    case GgmlType::IQ1_M: return dequant_iq1_m(static_cast<const BlockIQ1_M*>(blocks), out, nb);
    case GgmlType::NVFP4: return dequant_nvfp4(static_cast<const BlockNVFP4*>(blocks), out, nb);
    case GgmlType::Q1_0: return dequant_q1_0(static_cast<const BlockQ1_0*>(blocks), out, nb);
    case GgmlType::Q2_0: return dequant_q2_0(static_cast<const BlockQ2_0*>(blocks), out, nb);
    default: fail(ErrorKind::Internal, "dequantize: unhandled type " + std::string(type_name(type)));
  }
}

void dot_q8_1_tier2(GgmlType type, const void* row, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc) {
  switch (type) {
    case GgmlType::IQ2_XXS: return dot_iq2_xxs(static_cast<const BlockIQ2_XXS*>(row), y, nb, acc);
    case GgmlType::IQ2_XS: return dot_iq2_xs(static_cast<const BlockIQ2_XS*>(row), y, nb, acc);
    case GgmlType::IQ2_S: return dot_iq2_s(static_cast<const BlockIQ2_S*>(row), y, nb, acc);
    case GgmlType::IQ3_XXS: return dot_iq3_xxs(static_cast<const BlockIQ3_XXS*>(row), y, nb, acc);
    case GgmlType::IQ3_S: return dot_iq3_s(static_cast<const BlockIQ3_S*>(row), y, nb, acc);
    case GgmlType::IQ1_S: return dot_iq1_s(static_cast<const BlockIQ1_S*>(row), y, nb, acc);
    case GgmlType::IQ1_M: return dot_iq1_m(static_cast<const BlockIQ1_M*>(row), y, nb, acc);
    case GgmlType::NVFP4: return dot_nvfp4(static_cast<const BlockNVFP4*>(row), y, nb, acc);
    case GgmlType::Q1_0: return dot_q1_0(static_cast<const BlockQ1_0*>(row), y, nb, acc);
    case GgmlType::Q2_0: return dot_q2_0(static_cast<const BlockQ2_0*>(row), y, nb, acc);
    default: fail(ErrorKind::Internal, "dot_q8_1: unhandled type " + std::string(type_name(type)));
  }
}

double offset_tier2(GgmlType type, const void* row, int64_t index32) {
  if (type != GgmlType::IQ1_S) return 0;  // only iq1_s applies its shift through s
  const BlockIQ1_S& b = static_cast<const BlockIQ1_S*>(row)[index32 / 8];
  const uint16_t qh = b.qh[index32 % 8];
  const float dl = fp16_to_fp32(b.d) * float(2 * ((qh >> 12) & 7) + 1);
  const double delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
  return double(dl) * (delta - 1.0);  // w = dl·(g + delta) = dl·(g + 1) + dl·(delta - 1)
}

}  // namespace detail
}  // namespace temper::quant
