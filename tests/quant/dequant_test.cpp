// Known answers: hand-made blocks whose values were worked out by hand from the format definitions
// (ggml-common.h): scale extremes and signs, high bits, the packed 6-bit K-quant scales and mins,
// the non-linear tables.
#include <cmath>

#include <gtest/gtest.h>

#include "quant_test_util.h"
#include "temper/error.h"

using namespace temper::quant;
using namespace quant_test;
using temper::GgmlType;

TEST(Dequant, Q4_0) {
  auto b = zero_block<BlockQ4_0>();
  b.d = h(0.5f);
  std::memset(b.qs, 0x88, sizeof b.qs);  // every quant 8: value 0
  b.qs[0] = 0x0F;                        // low 15 -> +7, high 0 -> -8
  b.qs[1] = 0x80;
  auto y = dequant(GgmlType::Q4_0, b);
  EXPECT_EQ(y[0], 3.5f);
  EXPECT_EQ(y[16], -4.0f);
  EXPECT_EQ(y[1], -4.0f);
  EXPECT_EQ(y[17], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
  b.d = h(-2.0f);  // negative scale flips every sign
  y = dequant(GgmlType::Q4_0, b);
  EXPECT_EQ(y[0], -14.0f);
  EXPECT_EQ(y[16], 16.0f);
  b.d = 0x7BFF;  // largest half
  y = dequant(GgmlType::Q4_0, b);
  EXPECT_EQ(y[16], -8 * 65504.0f);
}

TEST(Dequant, Q4_1) {
  auto b = zero_block<BlockQ4_1>();
  b.d = h(0.25f);
  b.m = h(-1.0f);
  b.qs[0] = 0xF0;
  auto y = dequant(GgmlType::Q4_1, b);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[16], 2.75f);
  EXPECT_EQ(y[31], -1.0f);
}

TEST(Dequant, Q5_0HighBits) {
  auto b = zero_block<BlockQ5_0>();
  b.d = h(1.0f);
  b.qs[0] = 0x0F;
  b.qh[0] = 0x01;  // bit 0: fifth bit of value 0
  b.qh[2] = 0x01;  // bit 16: fifth bit of value 16
  auto y = dequant(GgmlType::Q5_0, b);
  EXPECT_EQ(y[0], 15.0f);   // (15 | 16) - 16
  EXPECT_EQ(y[16], 0.0f);   // (0 | 16) - 16
  EXPECT_EQ(y[1], -16.0f);  // 0 - 16
  EXPECT_EQ(y[17], -16.0f);
}

TEST(Dequant, Q5_1HighBits) {
  auto b = zero_block<BlockQ5_1>();
  b.d = h(0.5f);
  b.m = h(2.0f);
  b.qs[0] = 0x1F;
  b.qh[0] = 0x01;
  b.qh[3] = 0x80;  // bit 31: value 31
  b.qs[15] = 0x30;
  auto y = dequant(GgmlType::Q5_1, b);
  EXPECT_EQ(y[0], 17.5f);   // 31·0.5 + 2
  EXPECT_EQ(y[16], 2.5f);   // 1·0.5 + 2
  EXPECT_EQ(y[31], 11.5f);  // (3 | 16)·0.5 + 2
}

TEST(Dequant, Q8_0) {
  auto b = zero_block<BlockQ8_0>();
  b.d = h(-0.125f);
  b.qs[0] = -128;
  b.qs[31] = 127;
  auto y = dequant(GgmlType::Q8_0, b);
  EXPECT_EQ(y[0], 16.0f);
  EXPECT_EQ(y[31], -15.875f);
  EXPECT_EQ(y[5], 0.0f);
}

TEST(Dequant, Q2_K) {
  auto b = zero_block<BlockQ2_K>();
  b.d = h(1.0f);
  b.dmin = h(0.5f);
  b.scales[0] = 0x23;  // values 0..15: scale 3, min 2
  b.scales[1] = 0x01;  // values 16..31: scale 1, min 0
  b.scales[2] = 0x10;  // values 32..47: scale 0, min 1
  b.scales[4] = 0xF5;  // values 64..79: scale 5, min 15
  b.scales[8] = 0x47;  // values 128..143: scale 7, min 4
  b.qs[0] = 3 | 1 << 2 | 2 << 4 | 3 << 6;  // values 0, 32, 64, 96
  b.qs[16] = 3;                            // value 16
  b.qs[32] = 2;                            // value 128
  auto y = dequant(GgmlType::Q2_K, b);
  EXPECT_EQ(y[0], 8.0f);     // 1·3·3 - 0.5·2
  EXPECT_EQ(y[1], -1.0f);    // 1·3·0 - 0.5·2
  EXPECT_EQ(y[16], 3.0f);
  EXPECT_EQ(y[32], -0.5f);   // 0·1 - 0.5·1
  EXPECT_EQ(y[64], 2.5f);    // 5·2 - 0.5·15
  EXPECT_EQ(y[96], 0.0f);
  EXPECT_EQ(y[128], 12.0f);  // 7·2 - 0.5·4
}

TEST(Dequant, Q3_KSignedScalesAndHighMask) {
  auto b = zero_block<BlockQ3_K>();  // all-zero scales read as -32
  b.d = h(0.5f);
  b.scales[0] = 0x05;        // sub-block 0: 37 = 0b10'0101 -> low 5 here,
  b.scales[8] = 0x02;        //   high bits 2 here: scale 37 - 32 = 5
  b.scales[7] = 0xF0;        // sub-block 15: 63 -> low 15 in the high nibble of byte 7,
  b.scales[11] = 0xC0;       //   high bits 3 at bits 6-7 of byte 11: scale 31
  b.qs[0] = 3;               // value 0: low bits 3
  b.hmask[0] = 0x01;         //   high bit set: no -4 -> 3
  b.qs[48] = 1;              // value 144 (sub-block 9, scale -32): 1 - 4 = -3
  b.qs[63] = 2 << 6;         // value 255: low bits 2
  b.hmask[31] = 0x80;        //   high bit set -> 2
  auto y = dequant(GgmlType::Q3_K, b);
  EXPECT_EQ(y[0], 7.5f);     // 0.5·5·3
  EXPECT_EQ(y[1], -10.0f);   // 0.5·5·(0 - 4)
  EXPECT_EQ(y[144], 48.0f);  // 0.5·(-32)·(-3)
  EXPECT_EQ(y[255], 31.0f);  // 0.5·31·2
}

template <class B>
void packed_scales_k4(B& b) {
  b.d = h(0.5f);
  b.dmin = h(0.25f);
  b.scales[0] = 10;           // sub-block 0: scale 10,
  b.scales[4] = 3;            //   min 3
  b.scales[9] = 0x21;         // sub-block 5: scale low 1, min low 2,
  b.scales[1] = 0x80;         //   scale high bits 2 -> 33,
  b.scales[5] = 0xC0;         //   min high bits 3 -> 50
}

TEST(Dequant, Q4_KPackedScalesAndMins) {
  auto b = zero_block<BlockQ4_K>();
  packed_scales_k4(b);
  b.qs[0] = 0x07;   // value 0
  b.qs[65] = 0xF0;  // value 161: sub-block 5 is the high nibble of bytes 64..95
  auto y = dequant(GgmlType::Q4_K, b);
  EXPECT_EQ(y[0], 34.25f);   // 0.5·10·7 - 0.25·3
  EXPECT_EQ(y[1], -0.75f);
  EXPECT_EQ(y[161], 235.0f); // 0.5·33·15 - 0.25·50
  EXPECT_EQ(y[160], -12.5f);
}

TEST(Dequant, Q5_KPackedScalesAndHighBits) {
  auto b = zero_block<BlockQ5_K>();
  packed_scales_k4(b);
  b.qs[0] = 0x07;
  b.qh[0] = 0x01;   // value 0: bit 0 of qh[0]
  b.qs[65] = 0xF0;
  b.qh[1] = 0x20;   // value 161: bit 5 of qh[1]
  auto y = dequant(GgmlType::Q5_K, b);
  EXPECT_EQ(y[0], 114.25f);   // 0.5·10·23 - 0.75
  EXPECT_EQ(y[161], 499.0f);  // 0.5·33·31 - 12.5
}

TEST(Dequant, Q6_K) {
  auto b = zero_block<BlockQ6_K>();
  b.d = h(0.25f);
  b.scales[0] = -3;
  b.scales[15] = 100;
  b.ql[0] = 0x05;
  b.qh[0] = 0x02;    // value 0: 5 | 2<<4 = 37 -> 5
  b.ql[127] = 0xA0;
  b.qh[63] = 0x40;   // value 255: 10 | 1<<4 = 26 -> -6
  auto y = dequant(GgmlType::Q6_K, b);
  EXPECT_EQ(y[0], -3.75f);    // 0.25·(-3)·5
  EXPECT_EQ(y[1], 24.0f);     // 0.25·(-3)·(-32)
  EXPECT_EQ(y[255], -150.0f); // 0.25·100·(-6)
}

TEST(Dequant, IQ4_NLTable) {
  auto b = zero_block<BlockIQ4_NL>();
  b.d = h(0.5f);
  b.qs[0] = 0xF0;
  b.qs[1] = 0x78;
  auto y = dequant(GgmlType::IQ4_NL, b);
  EXPECT_EQ(y[0], -63.5f);  // table[0] = -127
  EXPECT_EQ(y[16], 56.5f);  // table[15] = 113
  EXPECT_EQ(y[1], 0.5f);    // table[8] = 1
  EXPECT_EQ(y[17], -5.0f);  // table[7] = -10
}

TEST(Dequant, IQ4_XSScales) {
  auto b = zero_block<BlockIQ4_XS>();  // zero scales read as -32
  b.d = h(0.25f);
  b.scales_l[0] = 0xF8;    // sub-block 0 low 8, sub-block 1 low 15
  b.scales_h = 0x0006;     // sub-block 0 high 2 -> 40 - 32 = 8; sub-block 1 high 1 -> 31 - 32 = -1
  b.qs[0] = 0x0F;          // value 0 -> 113
  b.qs[112] = 0x08;        // value 224 (sub-block 7) -> 1
  auto y = dequant(GgmlType::IQ4_XS, b);
  EXPECT_EQ(y[0], 226.0f);   // 0.25·8·113
  EXPECT_EQ(y[48], 31.75f);  // 0.25·(-1)·(-127)
  EXPECT_EQ(y[224], -8.0f);  // 0.25·(-32)·1
}

TEST(Dequant, MXFP4) {
  auto b = zero_block<BlockMXFP4>();
  b.e = 128;       // 2^1
  b.qs[0] = 0xF7;  // E2M1 0x7 = 6 -> 12, 0xF = -6 -> -12
  b.qs[1] = 0x91;  // 0x1 = 0.5 -> 1, 0x9 = -0.5 -> -1
  auto y = dequant(GgmlType::MXFP4, b);
  EXPECT_EQ(y[0], 12.0f);
  EXPECT_EQ(y[16], -12.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[17], -1.0f);
  b.e = 0;  // 2^-127: the smallest scale is a float subnormal
  y = dequant(GgmlType::MXFP4, b);
  EXPECT_EQ(y[0], 6 * 0x1p-127f);
}

TEST(Dequant, RowOfSeveralBlocks) {
  BlockQ8_0 blocks[2] = {zero_block<BlockQ8_0>(), zero_block<BlockQ8_0>()};
  blocks[0].d = h(1.0f);
  blocks[1].d = h(2.0f);
  blocks[0].qs[3] = 5;
  blocks[1].qs[3] = 5;
  std::vector<float> y(64);
  dequantize_row(GgmlType::Q8_0, blocks, y.data(), 64);
  EXPECT_EQ(y[3], 5.0f);
  EXPECT_EQ(y[35], 10.0f);
}

TEST(Dequant, Errors) {
  std::vector<float> y(256);
  BlockQ4_0 b{};
  try {
    dequantize_row(GgmlType::Q4_0, &b, y.data(), 33);
    FAIL();
  } catch (const temper::Error& e) {
    EXPECT_EQ(e.kind(), temper::ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
  try {
    dequantize_row(GgmlType::TQ2_0, &b, y.data(), 256);
    FAIL();
  } catch (const temper::Error& e) {
    EXPECT_EQ(e.kind(), temper::ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("tq2_0"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(quant_supported(GgmlType::F16));
  EXPECT_TRUE(quant_supported(GgmlType::Q4_K));
}
