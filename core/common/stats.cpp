#include "temper/stats.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "temper/error.h"

namespace temper {

MedianCiRanks median_ci_ranks(int n, double confidence) {
  if (n < 1) fail(ErrorKind::BadInput, "median confidence interval of an empty sample");
  if (!(confidence > 0 && confidence < 1))
    fail(ErrorKind::BadInput, "confidence must lie in (0, 1), got " + std::to_string(confidence));
  // [x(j), x(n+1-j)] misses the median when fewer than j samples lie below it or fewer than j
  // above: coverage(j) = 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2).
  const double log_norm = std::lgamma(n + 1.0) - n * std::log(2.0);
  auto pmf = [&](int i) { return std::exp(log_norm - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0)); };
  MedianCiRanks r{1, n, 1.0 - 2.0 * pmf(0)};
  double cdf = pmf(0);  // P(B <= j-1) for the next candidate j = r.lower + 1
  for (int j = 2; 2 * j <= n + 1; ++j) {
    cdf += pmf(j - 1);
    const double coverage = 1.0 - 2.0 * cdf;
    if (coverage < confidence) break;
    r = {j, n + 1 - j, coverage};
  }
  return r;
}

double percentile(std::span<const double> sorted, double p) {
  if (sorted.empty()) fail(ErrorKind::BadInput, "percentile of an empty sample");
  if (!(p >= 0 && p <= 1)) fail(ErrorKind::BadInput, "percentile must lie in [0, 1], got " + std::to_string(p));
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

SampleStats summarize(std::vector<double> samples, double confidence) {
  if (samples.empty()) fail(ErrorKind::BadInput, "no samples to summarise");
  for (size_t i = 0; i < samples.size(); ++i)
    if (!std::isfinite(samples[i])) fail(ErrorKind::BadInput, "sample " + std::to_string(i) + " is not a finite number");
  std::sort(samples.begin(), samples.end());
  SampleStats s;
  s.n = static_cast<int>(samples.size());
  s.median = percentile(samples, 0.5);
  s.p10 = percentile(samples, 0.1);
  s.p90 = percentile(samples, 0.9);
  s.min = samples.front();
  s.max = samples.back();
  const MedianCiRanks r = median_ci_ranks(s.n, confidence);
  s.ci_low = samples[static_cast<size_t>(r.lower - 1)];
  s.ci_high = samples[static_cast<size_t>(r.upper - 1)];
  s.ci_coverage = r.coverage;
  return s;
}

std::vector<double> sample_trace(std::span<const double> samples, size_t points) {
  std::vector<double> out;
  if (samples.empty() || points == 0) return out;
  const size_t runs = std::min(points, samples.size());
  for (size_t i = 0; i < runs; ++i) {
    // Run i covers [i·n/runs, (i+1)·n/runs): every sample in exactly one run, runs differ by at most one.
    std::vector<double> run(samples.begin() + std::ptrdiff_t(i * samples.size() / runs),
                            samples.begin() + std::ptrdiff_t((i + 1) * samples.size() / runs));
    std::sort(run.begin(), run.end());
    out.push_back(percentile(run, 0.5));
  }
  return out;
}

namespace {
std::vector<double> pooled(const std::vector<std::vector<double>>& groups, const char* side) {
  std::vector<double> all;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  if (all.empty()) fail(ErrorKind::BadInput, std::string("bootstrap: no sample on side ") + side);
  for (double v : all)
    if (!std::isfinite(v)) fail(ErrorKind::BadInput, std::string("bootstrap: a sample of side ") + side + " is not finite");
  return all;
}

void check_bootstrap(double confidence, int replicates) {
  if (!(confidence > 0 && confidence < 1))
    fail(ErrorKind::BadInput, "confidence must lie in (0, 1), got " + std::to_string(confidence));
  if (replicates < 100) fail(ErrorKind::BadInput, "bootstrap: at least 100 replicates, got " + std::to_string(replicates));
}

double median_of(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return percentile(v, 0.5);
}
}  // namespace

RatioCi bootstrap_median_ratio(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               double confidence, int replicates, uint64_t seed) {
  check_bootstrap(confidence, replicates);
  std::vector<double> pa = pooled(a, "a"), pb = pooled(b, "b");
  RatioCi r;
  r.ratio = median_of(pb) / median_of(pa);
  std::mt19937_64 rng(seed);
  // Runs are drawn with replacement, then each drawn run's samples: the CI carries the drift from
  // run to run, not only the spread within a run. Equal run counts are rounds of interleaved arms:
  // both arms draw the same rounds, so drift that hits a round's two runs alike cancels.
  const bool paired = a.size() == b.size();
  std::vector<size_t> rounds_a(a.size()), rounds_b(b.size());
  auto draw_runs = [&](std::vector<size_t>& into, size_t n) {
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    for (size_t& i : into) i = pick(rng);
  };
  auto resample = [&](const std::vector<std::vector<double>>& groups, const std::vector<size_t>& runs, std::vector<double>& into) {
    into.clear();
    for (size_t run : runs) {
      const auto& g = groups[run];
      if (g.empty()) continue;
      std::uniform_int_distribution<size_t> pick(0, g.size() - 1);
      for (size_t i = 0; i < g.size(); ++i) into.push_back(g[pick(rng)]);
    }
    return into.empty() ? std::nan("") : median_of(into);
  };
  std::vector<double> ratios, ra, rb;
  ratios.reserve(static_cast<size_t>(replicates));
  for (int i = 0; i < replicates; ++i) {
    draw_runs(rounds_a, a.size());
    if (paired) rounds_b = rounds_a;
    else draw_runs(rounds_b, b.size());
    const double x = resample(b, rounds_b, rb) / resample(a, rounds_a, ra);
    if (std::isfinite(x)) ratios.push_back(x);  // a draw of only empty runs has no median
  }
  if (ratios.empty()) ratios.push_back(r.ratio);
  std::sort(ratios.begin(), ratios.end());
  r.low = percentile(ratios, (1 - confidence) / 2);
  r.high = percentile(ratios, 1 - (1 - confidence) / 2);
  return r;
}

RatioCi bootstrap_round_ratio(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                              double confidence, int replicates, uint64_t seed) {
  check_bootstrap(confidence, replicates);
  if (a.empty() || a.size() != b.size())
    fail(ErrorKind::BadInput, "bootstrap: rounds of both sides, as many on each (" + std::to_string(a.size()) + " and " +
                                  std::to_string(b.size()) + ")");
  std::vector<double> per_round;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].empty() || b[r].empty()) fail(ErrorKind::BadInput, "bootstrap: round " + std::to_string(r) + " has no sample on a side");
    std::vector<double> x = pooled({a[r]}, "a"), y = pooled({b[r]}, "b");  // each finite
    per_round.push_back(median_of(y) / median_of(x));
  }
  RatioCi r;
  std::vector<double> sorted = per_round;
  r.ratio = median_of(sorted);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, per_round.size() - 1);
  std::vector<double> medians, draw(per_round.size());
  medians.reserve(static_cast<size_t>(replicates));
  for (int i = 0; i < replicates; ++i) {
    for (double& v : draw) v = per_round[pick(rng)];
    medians.push_back(median_of(draw));
  }
  std::sort(medians.begin(), medians.end());
  r.low = percentile(medians, (1 - confidence) / 2);
  r.high = percentile(medians, 1 - (1 - confidence) / 2);
  return r;
}

}  // namespace temper
