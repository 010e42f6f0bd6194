// Random valid blocks (deterministic, finite, quants spread over every value) and the quantizers'
// round trips.
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "quant_test_util.h"
#include "temper/error.h"

using namespace temper::quant;
using namespace quant_test;
using temper::GgmlType;

namespace {

class Generated : public ::testing::TestWithParam<GgmlType> {};

}  // namespace

TEST_P(Generated, SeededAndDeterministic) {
  const GgmlType type = GetParam();
  EXPECT_EQ(random_row(type, kRow, 42), random_row(type, kRow, 42));
  EXPECT_NE(random_row(type, kRow, 42), random_row(type, kRow, 43));
  // rows x k fills exactly rows · row_bytes bytes
  const uint64_t bytes = *temper::row_bytes(type, kRow);
  std::vector<uint8_t> buf(3 * bytes + 1, 0xAB);
  fill_random(type, buf.data(), 3, kRow, 5);
  EXPECT_EQ(buf.back(), 0xAB);
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + bytes), random_row(type, kRow, 5));
}

TEST_P(Generated, ValidBlocksOfRealisticMagnitude) {
  const GgmlType type = GetParam();
  const int64_t k = 64 * 256;
  const auto row = random_row(type, k, 9);
  std::vector<float> w(static_cast<size_t>(k));
  dequantize_row(type, row.data(), w.data(), k);
  double sum2 = 0;
  float max_abs = 0;
  int zeros = 0;
  for (float v : w) {
    ASSERT_TRUE(std::isfinite(v));
    sum2 += double(v) * v;
    max_abs = std::max(max_abs, std::fabs(v));
    zeros += v == 0.0f;
  }
  const double rms = std::sqrt(sum2 / double(k));
  // weights of real models: RMS of order 1e-3..1e-1, nothing huge
  EXPECT_GT(rms, 1e-4) << temper::type_name(type);
  EXPECT_LT(rms, 1.0) << temper::type_name(type);
  EXPECT_LT(max_abs, 64.0f) << temper::type_name(type);
  // q2_0's levels are -1, 0, 1, 2: a quarter of uniform random crumbs are exact zeros.
  EXPECT_LT(zeros, type == GgmlType::Q2_0 ? k * 3 / 10 : k / 4) << temper::type_name(type);
}

TEST_P(Generated, QuantBytesTakeEveryValue) {
  // Quants are uniform random bytes: over a large row every byte value occurs.
  const GgmlType type = GetParam();
  const auto row = random_row(type, 256 * 256, 11);
  std::map<uint8_t, int> histogram;
  for (uint8_t b : row) ++histogram[b];
  EXPECT_EQ(histogram.size(), 256u);
}

TEST(Generate, Errors) {
  std::vector<uint8_t> buf(1024);
  EXPECT_THROW(fill_random(GgmlType::F32, buf.data(), 1, 32, 1), temper::Error);
  EXPECT_THROW(fill_random(GgmlType::Q4_K, buf.data(), 1, 100, 1), temper::Error);
  EXPECT_THROW(fill_random(GgmlType::Q4_0, buf.data(), -1, 32, 1), temper::Error);
}

TEST(Generate, ActivationsLookNormal) {
  std::vector<float> x(1 << 16);
  fill_random_activations(x.data(), int64_t(x.size()), 1);
  double sum = 0, sum2 = 0;
  for (float v : x) {
    sum += v;
    sum2 += double(v) * v;
  }
  const double mean = sum / double(x.size()), var = sum2 / double(x.size()) - mean * mean;
  EXPECT_LT(std::fabs(mean), 0.05);
  EXPECT_GT(var, 0.9);
  EXPECT_LT(var, 2.0);  // unit variance plus the outliers
}

INSTANTIATE_TEST_SUITE_P(Quant, Generated, ::testing::ValuesIn(supported_types().begin(), supported_types().end()),
                         type_label);

// ---- Quantizer round trips ----

namespace {

struct RoundTrip {
  GgmlType type;
  double max_relative_rms;  // RMS error / RMS value on normal data
};

class Quantizer : public ::testing::TestWithParam<RoundTrip> {};

}  // namespace

TEST_P(Quantizer, RoundTripErrorMatchesBitWidth) {
  const auto [type, bound] = GetParam();
  ASSERT_TRUE(has_quantizer(type));
  const int64_t k = 8192;
  std::vector<float> x(static_cast<size_t>(k));
  fill_random_activations(x.data(), k, 77);
  for (float& v : x) v *= 0.02f;  // weight-like magnitudes
  std::vector<uint8_t> blocks(*temper::row_bytes(type, k));
  quantize_row(type, x.data(), blocks.data(), k);
  std::vector<float> y(static_cast<size_t>(k));
  dequantize_row(type, blocks.data(), y.data(), k);
  double err2 = 0, sum2 = 0;
  for (int64_t i = 0; i < k; ++i) {
    err2 += double(x[size_t(i)] - y[size_t(i)]) * double(x[size_t(i)] - y[size_t(i)]);
    sum2 += double(x[size_t(i)]) * x[size_t(i)];
  }
  const double relative = std::sqrt(err2 / sum2);
  EXPECT_LT(relative, bound) << temper::type_name(type);
  EXPECT_GT(relative, bound / 8) << temper::type_name(type) << ": suspiciously exact";
  // Quantizing the dequantized values again reproduces them (each value sits on a level).
  std::vector<uint8_t> again(blocks.size());
  quantize_row(type, y.data(), again.data(), k);
  std::vector<float> z(static_cast<size_t>(k));
  dequantize_row(type, again.data(), z.data(), k);
  double drift2 = 0;
  for (int64_t i = 0; i < k; ++i) drift2 += double(y[size_t(i)] - z[size_t(i)]) * double(y[size_t(i)] - z[size_t(i)]);
  EXPECT_LT(std::sqrt(drift2 / sum2), bound) << temper::type_name(type);
  RecordProperty("relative_rms", std::to_string(relative));
  RecordProperty("requantize_drift", std::to_string(std::sqrt(drift2 / sum2)));
}

// Bounds: a uniform quantizer of b bits over a block's range [-amax, amax] (amax ≈ 2.5σ for 32
// normal values) errs by step/√12 with step = 2·amax/(2^b - 1); per-sub-block scales quantized to
// few bits and the non-linear tables add a little. Bounds sit ~1.5x above the measured error.
INSTANTIATE_TEST_SUITE_P(Quant, Quantizer,
                         ::testing::Values(RoundTrip{GgmlType::Q4_0, 0.15}, RoundTrip{GgmlType::Q4_1, 0.12},
                                           RoundTrip{GgmlType::Q5_0, 0.075}, RoundTrip{GgmlType::Q5_1, 0.06},
                                           RoundTrip{GgmlType::Q8_0, 0.01}, RoundTrip{GgmlType::Q2_K, 0.6},
                                           RoundTrip{GgmlType::Q3_K, 0.25}, RoundTrip{GgmlType::Q4_K, 0.12},
                                           RoundTrip{GgmlType::Q5_K, 0.06}, RoundTrip{GgmlType::Q6_K, 0.033},
                                           RoundTrip{GgmlType::IQ4_NL, 0.15}, RoundTrip{GgmlType::IQ4_XS, 0.15},
                                           RoundTrip{GgmlType::MXFP4, 0.2}, RoundTrip{GgmlType::Q1_0, 0.7},
                                           RoundTrip{GgmlType::Q2_0, 0.9}),
                         [](const auto& p) { return std::string(temper::type_name(p.param.type)); });

TEST(Quantize, Errors) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(1024);
  EXPECT_THROW(quantize_row(GgmlType::IQ2_XXS, x.data(), out.data(), 256), temper::Error);
  EXPECT_THROW(quantize_row(GgmlType::Q4_K, x.data(), out.data(), 200), temper::Error);
  x[3] = INFINITY;
  EXPECT_THROW(quantize_row(GgmlType::Q4_0, x.data(), out.data(), 32), temper::Error);
}

TEST(Quantize, ExactlyRepresentableValuesSurvive) {
  // q8_0: a block whose values are multiples of amax/127 comes back bit-exact.
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = float(i * 4 - 64) * 0.5f;  // -32 .. 30, amax 32
  BlockQ8_0 b;
  quantize_row(GgmlType::Q8_0, x, &b, 32);
  const float d = fp16_to_fp32(b.d);
  float y[32];
  dequantize_row(GgmlType::Q8_0, &b, y, 32);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(y[i], x[i], d / 2) << i;
  EXPECT_EQ(b.qs[0], -127);
}
