// q8_1 activation quantization and the two reference dots: known answers, the integer dot (b)
// against an independent float64 evaluation of the same quantities, (a) against (b) within the
// documented tolerance, and tolerances tight enough to catch a misplaced block.
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "quant_test_util.h"
#include "temper/error.h"

using namespace temper::quant;
using namespace quant_test;
using temper::GgmlType;

TEST(Q8_1, GpuStyleKnownBlock) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = 0.5f * float(i) - 4.0f;  // -4 .. 11.5
  BlockQ8_1 b;
  quantize_q8_1(x, &b, 32, Q8_1Style::Gpu);
  const float d = 11.5f / 127.0f;
  EXPECT_EQ(b.d, fp32_to_fp16(d));
  EXPECT_EQ(b.qs[31], 127);
  EXPECT_EQ(b.qs[8], 0);
  EXPECT_EQ(b.qs[0], int8_t(std::round(-4.0f / d)));  // -44
  EXPECT_EQ(b.qs[0], -44);
  EXPECT_EQ(fp16_to_fp32(b.s), 120.0f);  // Σ x, the original floats
}

TEST(Q8_1, CpuStyleSumsQuants) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = 0.5f * float(i) - 4.0f;
  BlockQ8_1 b;
  quantize_q8_1(x, &b, 32, Q8_1Style::Cpu);
  const int sum = std::accumulate(b.qs, b.qs + 32, 0);
  EXPECT_EQ(b.s, fp32_to_fp16(float(sum) * (11.5f / 127.0f)));
}

TEST(Q8_1, ZeroBlockAndErrors) {
  float x[64] = {};
  BlockQ8_1 b[2];
  quantize_q8_1(x, b, 64);
  EXPECT_EQ(b[1].d, 0);
  EXPECT_EQ(b[1].s, 0);
  EXPECT_EQ(b[1].qs[7], 0);
  x[40] = NAN;
  EXPECT_THROW(quantize_q8_1(x, b, 64), temper::Error);
  EXPECT_THROW(quantize_q8_1(x, b, 40), temper::Error);
}

TEST(Q8_1, StylesAgreeUpToRounding) {
  std::vector<float> x(4096);
  fill_random_activations(x.data(), int64_t(x.size()), 7);
  std::vector<BlockQ8_1> gpu(x.size() / 32), cpu(x.size() / 32);
  quantize_q8_1(x.data(), gpu.data(), int64_t(x.size()), Q8_1Style::Gpu);
  quantize_q8_1(x.data(), cpu.data(), int64_t(x.size()), Q8_1Style::Cpu);
  for (size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_EQ(gpu[i].d, cpu[i].d);
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::abs(gpu[i].qs[j] - cpu[i].qs[j]), 1);
    const float d = fp16_to_fp32(gpu[i].d);
    ASSERT_NEAR(fp16_to_fp32(gpu[i].s), fp16_to_fp32(cpu[i].s), 16 * d + 0.01f);
  }
}

TEST(DotQ8_1, Q4_0KnownAnswer) {
  auto w = zero_block<BlockQ4_0>();
  w.d = h(1.0f);
  std::memset(w.qs, 0x99, sizeof w.qs);  // every weight 9 - 8 = 1
  float x[32];
  std::fill(x, x + 32, 1.0f);
  BlockQ8_1 y;
  quantize_q8_1(x, &y, 32);
  ASSERT_EQ(y.qs[0], 127);
  ASSERT_EQ(fp16_to_fp32(y.s), 32.0f);
  const float d8 = fp16_to_fp32(y.d);
  // two calls of 16 values: d4 · (sumi · d8 - 4 · s) with sumi = 16 · 9 · 127
  const float call = 1.0f * (float(16 * 9 * 127) * d8 - 4.0f * 32.0f);
  const DotQ8_1 r = dot_q8_1_detail(GgmlType::Q4_0, &w, &y, 32);
  EXPECT_EQ(r.calls, 2);
  EXPECT_EQ(r.value, double(call) + double(call));
  EXPECT_NEAR(r.value, 32.0, 0.1);
  EXPECT_EQ(dot_f64(GgmlType::Q4_0, &w, x, 32), 32.0);
}

TEST(DotQ8_1, Q6_KKnownAnswer) {
  // One sub-block of 16 weights -3·0.25·5 = -3.75 against activations 2: one call touches it.
  auto w = zero_block<BlockQ6_K>();
  w.d = h(0.25f);
  w.scales[0] = -3;
  for (int l = 0; l < 16; ++l) {
    w.ql[l] = 0x05;
    w.qh[l] = 0x02;
  }
  // every other sub-block: scale 0
  std::vector<float> x(256, 0.0f);
  std::fill(x.begin(), x.begin() + 16, 2.0f);
  std::vector<BlockQ8_1> y(8);
  quantize_q8_1(x.data(), y.data(), 256);
  EXPECT_EQ(dot_f64(GgmlType::Q6_K, &w, x.data(), 256), -120.0);
  const DotQ8_1 r = dot_q8_1_detail(GgmlType::Q6_K, &w, y.data(), 256);
  EXPECT_EQ(r.calls, 32);
  // q8: 2 -> 127 with d8 = 2/127 (as a half); 4 weights per call, 4 calls over the 16 values
  const float d8 = fp16_to_fp32(y[0].d);
  const float call = 0.25f * (d8 * float(4 * 5 * 127 * -3));
  EXPECT_EQ(r.value, 4.0 * double(call));
}

TEST(DotQ8_1, IQ2_XXSTruncatesLikeTheKernel) {
  // One weight 43·(0.5 + 0)·0.25 = 5.375 against activation 1: the kernel computes sumi·ls/8 in
  // integers, 43·127·1/8 = 682.625 -> 682.
  BlockIQ2_XXS w;
  std::memset(&w, 0, sizeof w);
  w.d = h(1.0f);
  reinterpret_cast<uint8_t*>(w.qs)[0] = 1;  // grid entry 1: first byte 43, the rest 8
  std::vector<float> x(256, 0.0f);
  x[0] = 1.0f;
  std::vector<BlockQ8_1> y(8);
  quantize_q8_1(x.data(), y.data(), 256);
  ASSERT_EQ(y[0].qs[0], 127);
  EXPECT_EQ(dot_f64(GgmlType::IQ2_XXS, &w, x.data(), 256), 5.375);
  const DotQ8_1 r = dot_q8_1_detail(GgmlType::IQ2_XXS, &w, y.data(), 256);
  const float d8 = fp16_to_fp32(y[0].d);
  EXPECT_EQ(r.value, double(1.0f * d8 * 682.0f));
  EXPECT_EQ(r.calls, 8);
  EXPECT_GT(r.truncation, 0.0);
  EXPECT_LE(std::fabs(r.value - 5.375), tolerance_f64(GgmlType::IQ2_XXS, &w, x.data(), 256));
}

namespace {

// Σ over 32-value groups of Σ (w - offset)·d8·q + offset·s, in float64: the quantities the kernel
// combines, evaluated independently of the per-type call structure.
double independent_q8_1(GgmlType type, const std::vector<uint8_t>& row, const std::vector<BlockQ8_1>& y, int64_t k) {
  std::vector<float> w(static_cast<size_t>(k));
  dequantize_row(type, row.data(), w.data(), k);
  double total = 0;
  for (int64_t j = 0; j < k / 32; ++j) {
    const double offset = weight_offset(type, row.data(), j);
    const double d8 = fp16_to_fp32(y[size_t(j)].d), s8 = fp16_to_fp32(y[size_t(j)].s);
    for (int l = 0; l < 32; ++l) total += (double(w[size_t(32 * j + l)]) - offset) * d8 * y[size_t(j)].qs[l];
    total += offset * s8;
  }
  return total;
}

class EveryType : public ::testing::TestWithParam<GgmlType> {};

}  // namespace

TEST_P(EveryType, IntegerDotMatchesIndependentEvaluation) {
  const GgmlType type = GetParam();
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto row = random_row(type, kRow, seed);
    std::vector<float> x(kRow);
    fill_random_activations(x.data(), kRow, seed + 100);
    std::vector<BlockQ8_1> y(kRow / 32);
    quantize_q8_1(x.data(), y.data(), kRow);
    const double expected = independent_q8_1(type, row, y, kRow);
    // float scale products: exact evaluation differs only by float rounding
    const DotQ8_1 exact = dot_q8_1_detail(type, row.data(), y.data(), kRow, {.half_products = false});
    // the IQ2/IQ3 kernels truncate integer divisions: bounded by `truncation`
    EXPECT_NEAR(exact.value, expected, tolerance_q8_1(exact) + exact.truncation) << "seed " << seed;
    EXPECT_EQ(exact.half_rounding, 0.0);
    // half scale products (q4_1, q5_1): off by at most the rounding they account for
    const DotQ8_1 half = dot_q8_1_detail(type, row.data(), y.data(), kRow);
    EXPECT_NEAR(half.value, expected, tolerance_q8_1(half) + half.half_rounding + half.truncation) << "seed " << seed;
    EXPECT_EQ(dot_q8_1(type, row.data(), y.data(), kRow), float(half.value));
  }
}

TEST_P(EveryType, FloatDotAgreesWithIntegerDotWithinTolerance) {
  const GgmlType type = GetParam();
  double worst = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto row = random_row(type, kRow, seed);
    std::vector<float> x(kRow);
    fill_random_activations(x.data(), kRow, seed + 200);
    std::vector<BlockQ8_1> y(kRow / 32);
    quantize_q8_1(x.data(), y.data(), kRow);
    const double a = dot_f64(type, row.data(), x.data(), kRow);
    const double b = dot_q8_1(type, row.data(), y.data(), kRow);
    const double tol = tolerance_f64(type, row.data(), x.data(), kRow);
    EXPECT_LE(std::fabs(a - b), tol) << "seed " << seed;
    // loose, but not vacuous: a few percent of Σ|w·x| at most
    EXPECT_LT(tol, 0.03 * abs_dot_f64(type, row.data(), x.data(), kRow)) << "seed " << seed;
    worst = std::max(worst, std::fabs(a - b) / tol);
  }
  EXPECT_GT(worst, 0.0);
}

TEST_P(EveryType, TightToleranceCatchesSwappedBlocks) {
  // A kernel that reads one weight block from the wrong place must fail verification.
  const GgmlType type = GetParam();
  const auto& info = temper::type_info(type);
  const auto row = random_row(type, kRow, 3);
  auto swapped = row;
  std::swap_ranges(swapped.begin(), swapped.begin() + info.type_size, swapped.begin() + info.type_size);
  std::vector<float> x(kRow);
  fill_random_activations(x.data(), kRow, 4);
  std::vector<BlockQ8_1> y(kRow / 32);
  quantize_q8_1(x.data(), y.data(), kRow);
  const DotQ8_1 good = dot_q8_1_detail(type, row.data(), y.data(), kRow);
  const double bad = dot_q8_1(type, swapped.data(), y.data(), kRow);
  EXPECT_GT(std::fabs(bad - good.value), tolerance_q8_1(good));
}

TEST_P(EveryType, KernelStyleReductionStaysWithinTightTolerance) {
  // Emulate mmvq's order of additions: 128 threads (4 warps) each own one call position and stride
  // over the blocks, summing in float; then a butterfly within each warp and the warps added in
  // float. The result must stay within tolerance_q8_1 of the float64 sum of the same calls.
  const GgmlType type = GetParam();
  const int64_t k = 8192;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto row = random_row(type, k, seed);
    std::vector<float> x(static_cast<size_t>(k));
    fill_random_activations(x.data(), k, seed + 300);
    std::vector<BlockQ8_1> y(size_t(k / 32));
    quantize_q8_1(x.data(), y.data(), k);
    const DotQ8_1 r = dot_q8_1_detail(type, row.data(), y.data(), k, {.keep_calls = true});
    ASSERT_EQ(int64_t(r.call_values.size()), r.calls);
    const int64_t blocks = k / int64_t(temper::type_info(type).block_size);
    const int64_t per_block = r.calls / blocks;
    ASSERT_EQ(per_block * blocks, r.calls);
    constexpr int kThreads = 128;
    const int64_t blocks_per_pass = std::max<int64_t>(1, kThreads / per_block);
    std::vector<float> partial(kThreads, 0.0f);
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t c = 0; c < per_block; ++c) {
        const int64_t thread = ((b % blocks_per_pass) * per_block + c) % kThreads;
        partial[size_t(thread)] += r.call_values[size_t(b * per_block + c)];
      }
    float total = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) {
      std::vector<float> lanes(partial.begin() + 32 * w, partial.begin() + 32 * w + 32);
      for (int offset = 16; offset > 0; offset >>= 1) {
        std::vector<float> next(32);
        for (int l = 0; l < 32; ++l) next[size_t(l)] = lanes[size_t(l)] + lanes[size_t(l ^ offset)];
        lanes = next;
      }
      total += lanes[0];
    }
    EXPECT_LE(std::fabs(double(total) - r.value), tolerance_q8_1(r)) << "seed " << seed;
  }
}

TEST_P(EveryType, SupportsAndRejects) {
  const GgmlType type = GetParam();
  EXPECT_TRUE(quant_supported(type));
  std::vector<uint8_t> row(4096);
  std::vector<BlockQ8_1> y(32);
  EXPECT_THROW(dot_q8_1(type, row.data(), y.data(), 1000), temper::Error);
}

INSTANTIATE_TEST_SUITE_P(Quant, EveryType, ::testing::ValuesIn(supported_types().begin(), supported_types().end()),
                         type_label);
