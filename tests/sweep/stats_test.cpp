#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "temper/error.h"
#include "temper/stats.h"

using namespace temper;

TEST(Stats, PercentilesInterpolateBetweenOrderStatistics) {
  const std::vector<double> s{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(s, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile(s, 0.1), 1.3);  // position 0.3 between 1 and 2
  EXPECT_DOUBLE_EQ(percentile(s, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(percentile(s, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(s, 1.0), 4.0);
  const std::vector<double> one{5};
  EXPECT_DOUBLE_EQ(percentile(one, 0.9), 5.0);
}

TEST(Stats, MedianCiRanksMatchPublishedTables) {
  // Coverage 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2), by hand:
  // n = 10: P(B <= 1) = 11/1024.
  auto r10 = median_ci_ranks(10);
  EXPECT_EQ(r10.lower, 2);
  EXPECT_EQ(r10.upper, 9);
  EXPECT_NEAR(r10.coverage, 1.0 - 22.0 / 1024.0, 1e-12);
  // n = 20: P(B <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20.
  auto r20 = median_ci_ranks(20);
  EXPECT_EQ(r20.lower, 6);
  EXPECT_EQ(r20.upper, 15);
  EXPECT_NEAR(r20.coverage, 1.0 - 2.0 * 21700.0 / 1048576.0, 1e-12);
  // n = 100: the textbook (40, 61).
  auto r100 = median_ci_ranks(100);
  EXPECT_EQ(r100.lower, 40);
  EXPECT_EQ(r100.upper, 61);
  EXPECT_GE(r100.coverage, 0.95);
}

TEST(Stats, TinySamplesFallBackToTheRangeWithTheirTrueCoverage) {
  auto r5 = median_ci_ranks(5);  // even [min, max] covers only 1 - 2/32
  EXPECT_EQ(r5.lower, 1);
  EXPECT_EQ(r5.upper, 5);
  EXPECT_NEAR(r5.coverage, 0.9375, 1e-12);
  auto r6 = median_ci_ranks(6);  // 1 - 2/64 >= 0.95, the next narrower 1 - 14/64 is not
  EXPECT_EQ(r6.lower, 1);
  EXPECT_EQ(r6.upper, 6);
  EXPECT_NEAR(r6.coverage, 1.0 - 2.0 / 64.0, 1e-12);
  auto r1 = median_ci_ranks(1);
  EXPECT_EQ(r1.lower, 1);
  EXPECT_EQ(r1.upper, 1);
}

TEST(Stats, LargeSamplesStayNearTheNormalApproximation) {
  // j ~ n/2 - 1.96 sqrt(n)/2 for large n.
  for (int n : {1000, 20000}) {
    auto r = median_ci_ranks(n);
    const double expect = n / 2.0 - 1.96 * std::sqrt(double(n)) / 2.0;
    EXPECT_NEAR(r.lower, expect, 2.0) << n;
    EXPECT_EQ(r.upper, n + 1 - r.lower);
    EXPECT_GE(r.coverage, 0.95);
    EXPECT_LT(r.coverage, 0.96);
  }
}

TEST(Stats, SummarizeSortsAndReportsEverything) {
  std::vector<double> s{7, 3, 10, 1, 5, 9, 2, 8, 6, 4};  // 1..10 shuffled
  auto st = summarize(s);
  EXPECT_EQ(st.n, 10);
  EXPECT_DOUBLE_EQ(st.median, 5.5);
  EXPECT_DOUBLE_EQ(st.p10, 1.9);
  EXPECT_DOUBLE_EQ(st.p90, 9.1);
  EXPECT_DOUBLE_EQ(st.min, 1);
  EXPECT_DOUBLE_EQ(st.max, 10);
  EXPECT_DOUBLE_EQ(st.ci_low, 2);  // x(2) .. x(9)
  EXPECT_DOUBLE_EQ(st.ci_high, 9);
}

TEST(Stats, CiCoversTheTrueMedianAboutNinetyFivePercentOfTheTime) {
  // Exponential samples (skewed): true median ln 2. Distribution-free means the rate holds anyway.
  std::mt19937_64 rng(1234);
  std::exponential_distribution<double> exp1(1.0);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> s(50);
    for (auto& x : s) x = exp1(rng);
    auto st = summarize(s);
    if (st.ci_low <= std::log(2.0) && std::log(2.0) <= st.ci_high) ++covered;
  }
  const double rate = double(covered) / trials;
  EXPECT_GT(rate, 0.94);  // exact coverage at n = 50 is 0.967; 2000 trials give ±0.8% noise
  EXPECT_LT(rate, 0.99);
}

TEST(Stats, BadInputIsRefused) {
  EXPECT_THROW(summarize({}), Error);
  EXPECT_THROW(summarize({1.0, std::nan("")}), Error);
  EXPECT_THROW(median_ci_ranks(0), Error);
  EXPECT_THROW(median_ci_ranks(10, 1.5), Error);
  const std::vector<double> s{1, 2};
  EXPECT_THROW(percentile(s, 1.5), Error);
  try {
    summarize({1.0, INFINITY});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("sample 1"), std::string::npos);
  }
}

// The sample order at a few bytes per result: run medians in the order the samples were taken.
TEST(Stats, SampleTraceKeepsTheOrderAsRunMedians) {
  const std::vector<double> few{3, 1, 2};
  EXPECT_EQ(sample_trace(few, 64), few);  // no more samples than points: all of them, in order
  std::vector<double> drift;
  for (int i = 0; i < 1000; ++i) drift.push_back(10.0 + 0.01 * i + (i % 2 ? 0.5 : -0.5));  // a slope plus noise
  const std::vector<double> t = sample_trace(drift, 64);
  ASSERT_EQ(t.size(), 64u);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GT(t[i], t[i - 1] - 0.6);  // the slope shows through the noise
  EXPECT_NEAR(t.front(), 10.08, 0.5);
  EXPECT_NEAR(t.back(), 19.92, 0.5);
  // Runs cover every sample once: a run of equal values gives that value.
  EXPECT_EQ(sample_trace(std::vector<double>(130, 7.0), 64), std::vector<double>(64, 7.0));
  EXPECT_TRUE(sample_trace({}, 64).empty());
}

// Rounds of interleaved arms whose level drifts: b is 2 % faster than a in every round, but the machine
// slows by 4 % after the second round. Each round's ratio is 0.98; the pooled medians say otherwise.
TEST(Stats, RoundRatioIsBlindToDriftBetweenRounds) {
  const std::vector<std::vector<double>> a = {{100, 100.1}, {100.1, 100}, {104, 104.1}, {104.1, 104}, {104, 104.1}};
  std::vector<std::vector<double>> b = a;
  for (auto& round : b)
    for (double& x : round) x *= 0.98;
  const RatioCi r = bootstrap_round_ratio(a, b);
  EXPECT_NEAR(r.ratio, 0.98, 1e-9);
  EXPECT_NEAR(r.low, 0.98, 1e-9);
  EXPECT_NEAR(r.high, 0.98, 1e-9);
  // One round that a step change hits between the arms is one outlier of five: the median stays, the
  // interval widens to take it in.
  b[2] = {104 * 1.01, 104.1 * 1.01};
  const RatioCi s = bootstrap_round_ratio(a, b);
  EXPECT_NEAR(s.ratio, 0.98, 1e-9);
  EXPECT_NEAR(s.low, 0.98, 1e-9);
  EXPECT_NEAR(s.high, 1.01, 1e-9);
  EXPECT_EQ(bootstrap_round_ratio(a, b).low, s.low);  // deterministic for a seed
}

TEST(Stats, RoundRatioRefusesUnpairedOrEmptyRounds) {
  const auto error_of = [](auto f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  };
  EXPECT_NE(error_of([] { bootstrap_round_ratio({{1.0}}, {{1.0}, {2.0}}); }).find("as many on each (1 and 2)"), std::string::npos);
  EXPECT_NE(error_of([] { bootstrap_round_ratio({{1.0}, {}}, {{1.0}, {1.0}}); }).find("round 1 has no sample"), std::string::npos);
  EXPECT_NE(error_of([] { bootstrap_round_ratio({{1.0}}, {{std::nan("")}}); }).find("not finite"), std::string::npos);
}
