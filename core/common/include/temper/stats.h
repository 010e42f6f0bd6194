#pragma once
// Sample statistics for timings: percentiles and a distribution-free confidence interval for the
// median (order statistics + the binomial distribution), so no normality is assumed.
#include <cstdint>
#include <span>
#include <vector>

namespace temper {

struct SampleStats {
  int n = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
  double ci_low = 0, ci_high = 0;  // confidence interval of the median
  double ci_coverage = 0;          // exact coverage of [ci_low, ci_high]; below the target when n is tiny
};

// Ranks (1-based, into the sorted sample) of the interval [x(lower), x(upper)] that covers the median
// with at least `confidence`: the narrowest symmetric one, upper = n + 1 - lower. When even
// [min, max] falls short (n < 6 at 95%), that is returned with its true, lower coverage.
struct MedianCiRanks {
  int lower = 1, upper = 1;
  double coverage = 0;
};
MedianCiRanks median_ci_ranks(int n, double confidence = 0.95);

// p in [0, 1], linear interpolation between order statistics (numpy's default). `sorted` ascending.
double percentile(std::span<const double> sorted, double p);

// Sorts a copy and summarises it; Error(BadInput) on an empty sample or a non-finite value.
SampleStats summarize(std::vector<double> samples, double confidence = 0.95);

// The samples in the order they were taken, condensed to at most `points` values: the median of each
// run of consecutive samples (all of them when there are no more than `points`). Shows drift (clocks,
// heat) over a measurement at a few bytes per result.
std::vector<double> sample_trace(std::span<const double> samples, size_t points = 64);

// median(b) / median(a) of the pooled samples, with a percentile-bootstrap confidence interval.
// Each side's samples come in runs (one per llama-bench invocation, say); a replicate draws runs with
// replacement and then each drawn run's samples, so the interval carries the drift from run to run
// as well as the spread within one. With as many runs on both sides (rounds of interleaved arms),
// both sides draw the same rounds: drift that hits a round's two runs alike cancels. Deterministic
// for a seed. Error(BadInput) when a side has no sample or a value is not finite.
struct RatioCi {
  double ratio = 1, low = 1, high = 1;
};
RatioCi bootstrap_median_ratio(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               double confidence = 0.95, int replicates = 4000, uint64_t seed = 1);

// The median over rounds of each round's median(b) / median(a), with a percentile-bootstrap interval
// over the rounds (drawn with replacement). For arms interleaved round by round whose level drifts
// between rounds (a machine getting slower): each round's ratio compares runs made side by side, so a
// shift between rounds moves no ratio, and one round a step change hits is one outlier, not a shifted
// pool. Error(BadInput) unless both sides have as many rounds, each with a finite sample.
RatioCi bootstrap_round_ratio(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                              double confidence = 0.95, int replicates = 4000, uint64_t seed = 1);

}  // namespace temper
