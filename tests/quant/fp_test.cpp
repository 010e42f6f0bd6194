// The small float formats of the blocks: binary16, E8M0, UE4M3.
#include <bit>
#include <cmath>

#include <gtest/gtest.h>

#include "temper/quant/fp.h"

using namespace temper::quant;

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0400), 0x1p-14f);      // smallest normal
  EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);      // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0x3555), 0x1.554p-2f);   // 1/3 rounded
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp16_to_fp32(0x7C00), INFINITY);
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
}

TEST(Fp16, RoundingToNearestEven) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3C00);      // tie: stays even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie: up to even
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // rounds to infinity
  EXPECT_EQ(fp32_to_fp16(-1e9f), 0xFC00);
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);       // tie between 0 and the smallest subnormal: even
  EXPECT_EQ(fp32_to_fp16(3 * 0x1p-26f), 0x0001);   // 0.75 of the smallest subnormal
  EXPECT_EQ(fp32_to_fp16(0x1.ffcp-15f), 0x0400);   // largest subnormal + half a step: tie, carries to normal
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(NAN) & 0x7FFF, 0x7E00);
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<half_bits>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Fp16, NarrowingMatchesNearestByExhaustiveNeighbours) {
  // Midpoints between consecutive positive halves round to the even one; a hair off goes to the nearer.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double lo = fp16_to_fp32(half_bits(h)), hi = fp16_to_fp32(half_bits(h + 1));
    const float mid = float((lo + hi) / 2);  // exact in float
    ASSERT_EQ(fp32_to_fp16(mid), (h % 2 == 0) ? h : h + 1) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, INFINITY)), h + 1) << std::hex << h;
  }
}

TEST(E8M0, Values) {
  EXPECT_EQ(e8m0_to_fp32(127), 1.0f);
  EXPECT_EQ(e8m0_to_fp32(128), 2.0f);
  EXPECT_EQ(e8m0_to_fp32(0), 0x1p-127f);
  EXPECT_EQ(e8m0_to_fp32(254), 0x1p127f);
  EXPECT_TRUE(std::isnan(e8m0_to_fp32(255)));
  EXPECT_EQ(e8m0_to_fp32_half(128), 1.0f);
  EXPECT_EQ(e8m0_to_fp32_half(1), 0x1p-127f);
  EXPECT_EQ(e8m0_to_fp32_half(0), 0x1p-128f);
  for (int e = 0; e < 255; ++e) EXPECT_EQ(e8m0_to_fp32_half(uint8_t(e)), e8m0_to_fp32(uint8_t(e)) / 2) << e;
}

TEST(Ue4m3, Values) {
  EXPECT_EQ(ue4m3_to_fp32(0x38), 1.0f);     // exponent 7 = bias
  EXPECT_EQ(ue4m3_to_fp32(0x7E), 448.0f);   // largest finite
  EXPECT_EQ(ue4m3_to_fp32(0x7F), 0.0f);     // the NaN code reads as 0, as in ggml
  EXPECT_EQ(ue4m3_to_fp32(0x08), 0x1p-6f);  // smallest normal
  EXPECT_EQ(ue4m3_to_fp32(0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_EQ(ue4m3_to_fp32(0x3C), 1.5f);
  EXPECT_EQ(ue4m3_to_fp32_half(0x38), 0.5f);
  for (int c = 0; c < 0x7F; ++c) EXPECT_EQ(fp32_to_ue4m3(ue4m3_to_fp32(uint8_t(c))), c) << c;
  EXPECT_EQ(fp32_to_ue4m3(1.0625f), 0x38);  // tie between 1.0 (even) and 1.125
  EXPECT_EQ(fp32_to_ue4m3(1e6f), 0x7E);
  EXPECT_EQ(fp32_to_ue4m3(-1.0f), 0x00);
}
