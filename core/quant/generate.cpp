// Random valid blocks and activations. Speed matters (a sweep fills gigabytes of device buffers):
// the bytes come from splitmix64 eight at a time, then each block's scale fields are overwritten with
// finite values in realistic ranges. Every quant bit pattern of every supported type is valid.
#include <bit>
#include <cstring>
#include <string>

#include "detail.h"
#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/quant/reference.h"

namespace temper::quant {
namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// A half in [2^lo, 2^hi) (lo >= -14: normal halves only), negative with probability 1/2 when `any_sign`.
half_bits random_half(uint64_t bits, int lo, int hi, bool any_sign) {
  const auto span = uint64_t(hi - lo);
  const auto exponent = uint64_t(lo + 15) + (bits >> 16) % span;
  const auto sign = any_sign ? (bits >> 11) & 1u : 0u;
  return static_cast<half_bits>((sign << 15) | (exponent << 10) | (bits & 0x3FFu));
}

void put_half(uint8_t* block, int offset, half_bits h) { std::memcpy(block + offset, &h, 2); }

struct Scales {  // where a type's half scales live and their ranges (exponents of 2)
  int d_offset = -1, lo = 0, hi = 0;
  bool any_sign = false;
  int m_offset = -1, m_lo = 0, m_hi = 0;
  bool m_negative = false;
};

Scales scales_of(GgmlType type) {
  using T = GgmlType;
  switch (type) {
    case T::Q4_0: case T::Q5_0: return {0, -9, -5, true};
    case T::Q8_0: case T::IQ4_NL: return {0, -12, -8, true};  // levels up to ±127
    case T::Q4_1: case T::Q5_1: return {0, -9, -5, false, 2, -7, -3, true};
    case T::Q2_K: return {offsetof(BlockQ2_K, d), -12, -8, false, offsetof(BlockQ2_K, dmin), -12, -8, false};
    case T::Q3_K: return {offsetof(BlockQ3_K, d), -13, -9, false};
    case T::Q4_K: case T::Q5_K: return {0, -14, -10, false, 2, -14, -10, false};
    case T::Q6_K: return {offsetof(BlockQ6_K, d), -14, -10, false};
    case T::IQ4_XS: return {0, -14, -12, false};
    case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: return {0, -13, -9, false};
    case T::IQ3_XXS: case T::IQ3_S: return {0, -12, -8, false};
    case T::IQ1_S: return {0, -10, -6, false};
    case T::Q1_0: return {0, -7, -4, false};  // d = mean |w|
    case T::Q2_0: return {0, -5, -2, false};  // d = max |w|
    default: return {};
  }
}

}  // namespace

void fill_random_blocks(GgmlType type, void* blocks, int64_t nblocks, uint64_t seed) {
  const TypeInfo& info = type_info(type);
  if (!quant_supported(type)) detail::row_blocks(type, 0, "fill_random");  // throws, naming the type
  if (nblocks < 0) fail(ErrorKind::BadInput, "fill_random: negative block count " + std::to_string(nblocks));
  auto* bytes = static_cast<uint8_t*>(blocks);
  const uint64_t total = uint64_t(nblocks) * info.type_size;
  // Counter-based: word i of the bytes and the scales of block b depend only on (seed, i) and
  // (seed, b), so a buffer's first rows are the same whatever the buffer's length.
  SplitMix64 words{seed};
  uint64_t i = 0;
  for (; i + 8 <= total; i += 8) {
    const uint64_t r = words.next();
    std::memcpy(bytes + i, &r, 8);
  }
  if (i < total) {
    const uint64_t r = words.next();
    std::memcpy(bytes + i, &r, total - i);
  }

  const Scales s = scales_of(type);
  SplitMix64 scale_stream{seed ^ 0xD1B54A32D192ED03ull};
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t* block = bytes + uint64_t(b) * info.type_size;
    const uint64_t r = scale_stream.next();
    if (s.d_offset >= 0) put_half(block, s.d_offset, random_half(r, s.lo, s.hi, s.any_sign));
    if (s.m_offset >= 0) {
      half_bits m = random_half(r >> 32, s.m_lo, s.m_hi, false);
      if (s.m_negative) m |= 0x8000;
      put_half(block, s.m_offset, m);
    }
    switch (type) {
      case GgmlType::MXFP4: block[0] = uint8_t(117 + r % 7); break;  // 2^-10 .. 2^-4
      case GgmlType::NVFP4:
        for (int j = 0; j < QK_NVFP4 / QK_NVFP4_SUB; ++j)  // exponent field 1..4: 2^-6 .. 2^-3·1.875
          block[j] = uint8_t(((1 + (r >> (8 * j)) % 4) << 3) | ((r >> (8 * j + 4)) & 7));
        break;
      case GgmlType::IQ1_M: {  // the half scale is spread over the top nibbles of the four u16 scales
        const half_bits d = random_half(r, -10, -6, false);
        uint16_t sc[4];
        std::memcpy(sc, block + offsetof(BlockIQ1_M, scales), 8);
        for (int j = 0; j < 4; ++j) sc[j] = uint16_t((sc[j] & 0x0FFF) | (((d >> (4 * j)) & 0xF) << 12));
        std::memcpy(block + offsetof(BlockIQ1_M, scales), sc, 8);
        break;
      }
      default: break;
    }
  }
}

void fill_random(GgmlType type, void* out, int64_t rows, int64_t k, uint64_t seed) {
  const int64_t nb = detail::row_blocks(type, k, "fill_random");
  if (rows < 0) fail(ErrorKind::BadInput, "fill_random: negative row count " + std::to_string(rows));
  fill_random_blocks(type, out, rows * nb, seed);
}

void fill_random_activations(float* x, int64_t n, uint64_t seed) {
  SplitMix64 rng{seed ^ 0x5DEECE66Dull};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = rng.next();
    // Irwin-Hall of four 12-bit uniforms: mean 2, variance 1/3 -> scaled to unit variance
    const float sum = float((r & 0xFFF) + ((r >> 12) & 0xFFF) + ((r >> 24) & 0xFFF) + ((r >> 36) & 0xFFF)) / 4096.0f;
    float v = (sum - 2.0f) * 1.7320508f;
    if (((r >> 48) & 0xFF) == 0) v *= 8.0f;  // 1 in 256: an outlier channel
    x[i] = v;
  }
}

}  // namespace temper::quant
