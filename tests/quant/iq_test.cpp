// Tier-2 formats: the IQ grids (entries checked against ggml-common.h's hex tables, whole tables
// pinned by checksum) and hand-made blocks of every tier-2 type with hand-computed values.
#include <algorithm>
#include <bit>
#include <set>
#include <span>

#include <gtest/gtest.h>

#include "quant_test_util.h"
#include "temper/quant/iq_grids.h"

using namespace temper::quant;
using namespace quant_test;
using temper::GgmlType;

namespace {

template <class T, size_t N>
uint64_t fnv1a(std::span<const T, N> table) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (T v : table)
    for (size_t b = 0; b < sizeof(T); ++b) {
      h ^= uint8_t(uint64_t(v) >> (8 * b));
      h *= 0x100000001b3ull;
    }
  return h;
}

}  // namespace

TEST(IqGrids, EntriesMatchGgml) {
  // First and last entries as printed in ggml-common.h.
  const auto xxs = iq2xxs_grid();
  EXPECT_EQ(xxs[0], 0x0808080808080808ull);
  EXPECT_EQ(xxs[1], 0x080808080808082bull);
  EXPECT_EQ(xxs[2], 0x0808080808081919ull);
  EXPECT_EQ(xxs[3], 0x0808080808082b08ull);
  EXPECT_EQ(xxs[248], 0x2b2b08080808082bull);
  EXPECT_EQ(xxs[251], 0x2b2b081908082b19ull);
  EXPECT_EQ(xxs[254], 0x2b2b2b0819190808ull);
  EXPECT_EQ(xxs[255], 0x2b2b2b1908081908ull);
  const auto xs = iq2xs_grid();
  EXPECT_EQ(xs[7], 0x080808080819192bull);
  EXPECT_EQ(xs[8], 0x0808080808192b19ull);
  EXPECT_EQ(xs[15], 0x080808081908192bull);
  const auto s = iq2s_grid();
  EXPECT_EQ(s[1008], 0x2b2b19082b2b1908ull);
  EXPECT_EQ(s[1011], 0x2b2b192b19190819ull);
  EXPECT_EQ(s[1015], 0x2b2b2b1919191908ull);
  EXPECT_EQ(s[1016], 0x2b2b2b192b08192bull);
  EXPECT_EQ(s[1019], 0x2b2b2b2b082b0808ull);
  EXPECT_EQ(s[1022], 0x2b2b2b2b2b082b08ull);
  EXPECT_EQ(s[1023], 0x2b2b2b2b2b2b2b2bull);
  const auto i1 = iq1s_grid();
  EXPECT_EQ(i1[0], 0xffffffffffffffffull);
  EXPECT_EQ(i1[1], 0xffffffffffffff01ull);
  EXPECT_EQ(i1[11], 0xffffffff00ff0000ull);
  EXPECT_EQ(i1[24], 0xffffffff01010101ull);
  EXPECT_EQ(i1[25], 0xffffff00ffff00ffull);
  EXPECT_EQ(i1[2047], 0x0101010101010101ull);  // 43690: every field 2 -> +1
  EXPECT_EQ(iq3xxs_grid()[5], 0x04040c3eu);
  EXPECT_EQ(iq3xxs_grid()[255], 0x3e341c04u);
  EXPECT_EQ(iq3s_grid()[3], 0x0101010bu);
  EXPECT_EQ(iq3s_grid()[511], 0x0f0f0101u);
  const auto ks = ksigns_iq2xs();
  EXPECT_EQ(ks[0], 0);
  EXPECT_EQ(ks[1], 129);
  EXPECT_EQ(ks[3], 3);
  EXPECT_EQ(ks[16], 144);
  EXPECT_EQ(ks[127], 255);
}

TEST(IqGrids, StructureOfTheLattices) {
  // Every byte is one of the format's levels and no entry repeats.
  auto check64 = [](auto grid, std::initializer_list<uint8_t> levels) {
    std::set<uint64_t> seen;
    for (uint64_t e : grid) {
      for (int j = 0; j < 8; ++j) ASSERT_NE(std::find(levels.begin(), levels.end(), uint8_t(e >> (8 * j))), levels.end());
      ASSERT_TRUE(seen.insert(e).second);
    }
  };
  check64(iq2xxs_grid(), {0x08, 0x19, 0x2b});
  check64(iq2xs_grid(), {0x08, 0x19, 0x2b});
  check64(iq2s_grid(), {0x08, 0x19, 0x2b});
  check64(iq1s_grid(), {0xff, 0x00, 0x01});
  for (uint32_t e : iq3xxs_grid())
    for (int j = 0; j < 4; ++j) EXPECT_NE(std::string("\x04\x0c\x14\x1c\x24\x2c\x34\x3e").find(char(e >> (8 * j))), std::string::npos);
  for (uint32_t e : iq3s_grid())
    for (int j = 0; j < 4; ++j) EXPECT_EQ((e >> (8 * j)) & 1, 1u);
  for (unsigned i = 0; i < 128; ++i) EXPECT_EQ(std::popcount(unsigned(ksigns_iq2xs()[i])) % 2, 0) << i;
}

TEST(IqGrids, ChecksumsPinned) {
  // FNV-1a over the little-endian bytes of each whole table. A change here means the tables changed:
  // they must stay byte-identical to ggml-common.h.
  EXPECT_EQ(fnv1a(iq2xxs_grid()), 0xbb4ee025b5ac6e8eull);
  EXPECT_EQ(fnv1a(iq2xs_grid()), 0xc9b1ee61e79909bdull);
  EXPECT_EQ(fnv1a(iq2s_grid()), 0x123edd38a3b62b90ull);
  EXPECT_EQ(fnv1a(iq3xxs_grid()), 0xdfa5dc83d6a155d5ull);
  EXPECT_EQ(fnv1a(iq3s_grid()), 0xfa37020c25b44829ull);
  EXPECT_EQ(fnv1a(iq1s_grid()), 0x6703ed863501ae2eull);
  EXPECT_EQ(fnv1a(ksigns_iq2xs()), 0xf19ba8f8c3292ba5ull);
}

TEST(DequantTier2, IQ2_XXSGridSignsAndScale) {
  auto b = zero_block<BlockIQ2_XXS>();
  b.d = h(1.0f);
  auto* bytes = reinterpret_cast<uint8_t*>(b.qs);
  bytes[0] = 1;                                 // group 0: grid entry 1 (byte 0 = 43)
  const uint32_t aux = (3u << 28) | 1u;          // scale 3; group 0 signs 0b0000001 -> ksigns 129
  std::memcpy(bytes + 4, &aux, 4);
  const auto y = dequant(GgmlType::IQ2_XXS, b);
  EXPECT_EQ(y[0], -37.625f);  // (0.5 + 3)·0.25 = 0.875; 0.875·43, sign bit 0
  EXPECT_EQ(y[1], 7.0f);      // 0.875·8
  EXPECT_EQ(y[7], -7.0f);     // the parity bit 7
  EXPECT_EQ(y[8], 7.0f);      // group 1: entry 0, no signs
  EXPECT_EQ(y[32], 0.5f * 0.25f * 8.0f);  // next 32 values: scale 0
}

TEST(DequantTier2, IQ2_XSAndIQ2_S) {
  auto xs = zero_block<BlockIQ2_XS>();
  xs.d = h(2.0f);
  xs.qs[0] = uint16_t(8 | (1 << 9));  // entry 8 = 0x0808080808192b19, signs 1 -> 129
  xs.scales[0] = 0x51;                // first 16 values scale 1, next 16 scale 5
  auto y = dequant(GgmlType::IQ2_XS, xs);
  EXPECT_EQ(y[0], -2.0f * 1.5f * 0.25f * 25.0f);  // -18.75
  EXPECT_EQ(y[1], 2.0f * 1.5f * 0.25f * 43.0f);
  EXPECT_EQ(y[16], 2.0f * 5.5f * 0.25f * 8.0f);   // group 2 uses the high scale

  auto s = zero_block<BlockIQ2_S>();
  s.d = h(1.0f);
  s.qs[0] = 0xFF;        // index low 8 bits
  s.qh[0] = 0x03;        // group 0 high bits 3 -> index 1023 (all 43)
  s.qs[32] = 0x80;       // group 0 sign byte: value 7 negative
  s.scales[0] = 0x00;
  y = dequant(GgmlType::IQ2_S, s);
  EXPECT_EQ(y[0], 0.125f * 43.0f);
  EXPECT_EQ(y[7], -0.125f * 43.0f);
  EXPECT_EQ(y[8], 0.125f * 8.0f);
}

TEST(DequantTier2, IQ3_XXSAndIQ3_S) {
  auto xxs = zero_block<BlockIQ3_XXS>();
  xxs.d = h(1.0f);
  xxs.qs[0] = 5;  // 0x04040c3e: 62, 12, 4, 4
  const uint32_t aux = 1u << 28;
  std::memcpy(xxs.qs + 64, &aux, 4);
  auto y = dequant(GgmlType::IQ3_XXS, xxs);
  EXPECT_EQ(y[0], 0.75f * 62.0f);  // (0.5 + 1)·0.5 = 0.75
  EXPECT_EQ(y[1], 0.75f * 12.0f);
  EXPECT_EQ(y[4], 0.75f * 4.0f);   // second grid entry: index 0

  auto s = zero_block<BlockIQ3_S>();
  s.d = h(1.0f);
  s.scales[0] = 0x21;   // sub-block 0: 1 + 2·1 = 3; sub-block 1: 1 + 2·2 = 5
  s.qs[0] = 1;          // 0x01010103
  s.signs[0] = 0x02;    // value 1 negative
  s.qs[1] = 0xFF;
  s.qh[0] = 0x02;       // group 1 (values 4..7): ninth bit -> index 511 = 0x0f0f0101
  auto y3 = dequant(GgmlType::IQ3_S, s);
  EXPECT_EQ(y3[0], 9.0f);
  EXPECT_EQ(y3[1], -3.0f);
  EXPECT_EQ(y3[4], 3.0f);
  EXPECT_EQ(y3[7], 45.0f);
  EXPECT_EQ(y3[32], 5.0f);  // sub-block 1, entry 0 = 1
}

TEST(DequantTier2, IQ1_SAndIQ1_M) {
  auto s = zero_block<BlockIQ1_S>();
  s.d = h(0.5f);
  s.qs[0] = 1;                          // entry 1: +1, then -1 x7
  s.qh[0] = uint16_t((2 << 12) | 0x8000);  // scale 2·2 + 1 = 5, shift -1/8
  auto y = dequant(GgmlType::IQ1_S, s);
  EXPECT_EQ(y[0], 2.5f * 0.875f);
  EXPECT_EQ(y[1], 2.5f * -1.125f);
  EXPECT_EQ(y[32], 0.5f * -0.875f);     // next 32: scale 1, shift +1/8, entry 0
  EXPECT_NEAR(weight_offset(GgmlType::IQ1_S, &s, 0), 2.5 * (-0.125 - 1.0), 0);

  auto m = zero_block<BlockIQ1_M>();
  uint16_t sc[4] = {uint16_t(1 | (2 << 3)), 0, 0xC000, 0x3000};  // d = 0x3C00 = 1.0 in the top nibbles
  std::memcpy(m.scales, sc, 8);
  m.qs[0] = 1;
  m.qh[1] = 0x08;  // group 2 of sub-block 0: shift -1/8
  y = dequant(GgmlType::IQ1_M, m);
  EXPECT_EQ(y[0], 3.0f * 1.125f);
  EXPECT_EQ(y[1], 3.0f * -0.875f);
  EXPECT_EQ(y[16], 5.0f * -1.125f);
}

TEST(DequantTier2, Q1_0Bits) {
  auto b = zero_block<BlockQ1_0>();
  b.d = h(0.25f);
  b.qs[0] = 0x81;   // values 0 and 7 positive
  b.qs[15] = 0x80;  // value 127 positive
  const auto y = dequant(GgmlType::Q1_0, b);
  EXPECT_EQ(y[0], 0.25f);
  EXPECT_EQ(y[1], -0.25f);
  EXPECT_EQ(y[7], 0.25f);
  EXPECT_EQ(y[126], -0.25f);
  EXPECT_EQ(y[127], 0.25f);
}

// q2_0 (ggml d99724f): crumb j%4 of qs[j/4] is q, the value (q - 1)·d.
TEST(DequantTier2, Q2_0Crumbs) {
  auto b = zero_block<BlockQ2_0>();
  b.d = h(0.5f);
  b.qs[0] = 0xE4;   // crumbs 0, 1, 2, 3 -> -1, 0, 1, 2
  b.qs[15] = 0x80;  // value 63: crumb 2 -> +1; values 60..62: crumb 0 -> -1
  const auto y = dequant(GgmlType::Q2_0, b);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], -0.5f);
  EXPECT_EQ(y[62], -0.5f);
  EXPECT_EQ(y[63], 0.5f);
}

// ggml's quantize_row_q2_0_ref: d = max |x|, q = round(x / d) + 1 clamped to 0..3.
TEST(QuantizeTier2, Q2_0AsGgml) {
  std::vector<float> x(64, 0.0f);
  x[0] = -4.0f;   // amax: q 0
  x[1] = 1.9f;    // 0.475 -> 0 -> q 1
  x[2] = 2.0f;    // 0.5 rounds away from zero -> q 2
  x[3] = -2.0f;   // -0.5 -> -1 -> q 0
  x[63] = 3.9f;   // 0.975 -> q 2
  std::vector<uint8_t> out(sizeof(BlockQ2_0));
  quantize_row(GgmlType::Q2_0, x.data(), out.data(), 64);
  BlockQ2_0 b;
  std::memcpy(&b, out.data(), sizeof b);
  EXPECT_EQ(b.d, h(4.0f));
  EXPECT_EQ(b.qs[0], 0x00 | (1 << 2) | (2 << 4) | (0 << 6));
  EXPECT_EQ(b.qs[1], 0x55);  // zeros -> q 1
  EXPECT_EQ(b.qs[15], 0x15 | (2 << 6));
  std::vector<float> zero(64, 0.0f);
  quantize_row(GgmlType::Q2_0, zero.data(), out.data(), 64);
  std::memcpy(&b, out.data(), sizeof b);
  EXPECT_EQ(b.d, 0);
  EXPECT_EQ(b.qs[7], 0x55);
}

TEST(DequantTier2, NVFP4) {
  auto b = zero_block<BlockNVFP4>();
  b.d[0] = 0x38;  // 1.0, halved for the doubled E2M1 table
  b.d[1] = 0x40;  // 2.0
  b.qs[0] = 0x7F;  // low -6 (doubled -12), high +6
  b.qs[8] = 0x21;  // sub-block 1: 0.5 and 1.0
  const auto y = dequant(GgmlType::NVFP4, b);
  EXPECT_EQ(y[0], -6.0f);
  EXPECT_EQ(y[8], 6.0f);
  EXPECT_EQ(y[16], 1.0f);
  EXPECT_EQ(y[24], 2.0f);
  EXPECT_EQ(y[32], 0.0f);  // scale code 0 reads as 0
}
