// One GEMV problem timed on a device by the rules of measurement (see temper/device_bench.h).
#include "temper/device_bench.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "temper/error.h"
#include "temper/gpus.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/reference.h"
#include "temper/verify.h"

namespace temper {

std::vector<GgmlType> tier1_types() {
  using T = GgmlType;
  return {T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q8_0, T::Q2_K, T::Q3_K,
          T::Q4_K, T::Q5_K, T::Q6_K, T::IQ4_NL, T::IQ4_XS, T::MXFP4};
}

int rotation_copies(uint64_t weight_bytes, uint64_t llc_bytes) {
  if (weight_bytes == 0) return 2;
  const uint64_t need = 2 * llc_bytes;
  const uint64_t copies = need / weight_bytes + 1;  // strictly more than 2 × LLC together
  return int(std::clamp<uint64_t>(copies, 2, 4096));
}

uint64_t device_llc_bytes(const DeviceInfo& device) {
  uint64_t llc = device.l2_bytes;
  if (const GpuSpec* spec = match_device(device)) llc = std::max(llc, spec->llc_bytes);
  return llc;
}

namespace {
// Random activations, ncols columns of k, quantized by the device into `on_device` (allocated here);
// returns the q8_1 blocks it made.
std::vector<quant::BlockQ8_1> quantized_activations(Device& device, int k, int ncols, uint64_t seed, DeviceBuffer& on_device) {
  std::vector<float> x(size_t(k) * size_t(ncols));
  quant::fill_random_activations(x.data(), int64_t(x.size()), seed ^ 0x5DEECE66DULL);
  DeviceBuffer x_device = device.alloc(x.size() * sizeof(float));
  device.upload(x_device, x.data(), x.size() * sizeof(float));
  std::vector<quant::BlockQ8_1> q(x.size() / 32);
  on_device = device.alloc(q.size() * sizeof(quant::BlockQ8_1));
  device.quantize_q8_1(x_device, on_device, k, ncols);
  device.download(q.data(), on_device, q.size() * sizeof(quant::BlockQ8_1));
  return q;
}
}  // namespace

GemvBench::GemvBench(Device& device, const GemvProblem& problem, const GemvBenchOptions& options)
    : device_(device), problem_(problem), options_(options) {
  const std::string what = std::string(type_name(problem.type)) + " n=" + std::to_string(problem.n) +
                           " k=" + std::to_string(problem.k) + " ncols=" + std::to_string(problem.ncols);
  const auto row = row_bytes(problem.type, uint64_t(problem.k));
  if (problem.n < 1 || !row || problem.k % 32 != 0 || problem.ncols < 1 || problem.ncols > 8)
    fail(ErrorKind::BadInput, what + ": n must be positive, k a multiple of the type's block size and of 32, ncols 1..8");
  if (!quant::has_reference(problem.type))
    fail(ErrorKind::BadInput, what + ": no CPU reference for this type, so its results cannot be checked");
  if (options.count < 1 || options.per_sample < 1 || options.warmup < 0)
    fail(ErrorKind::BadInput, what + ": the sample count and launches per sample must be positive, the warm-up not negative");
  weight_bytes_ = *row * uint64_t(problem.n);

  // Device memory first: a shape too large for the device fails before any host work.
  const uint64_t llc = options.llc_bytes ? options.llc_bytes : device_llc_bytes(device.info());
  const int copies = rotation_copies(weight_bytes_, llc);
  const uint64_t padded_bytes = *row * uint64_t(problem.n + mmvq::kWeightPaddingRows);
  for (int i = 0; i < copies; ++i) weights_.push_back(device.alloc(padded_bytes));
  host_weights_.resize(weight_bytes_);
  quant::fill_random(problem.type, host_weights_.data(), problem.n, problem.k, options.seed);
  for (auto& w : weights_) device.upload(w, host_weights_.data(), weight_bytes_);

  host_q8_1_ = quantized_activations(device, problem.k, problem.ncols, options.seed, y_q8_1_);
  dst_ = device.alloc(size_t(problem.n) * size_t(problem.ncols) * sizeof(float));
  if (!options.verify) host_weights_ = {};
}

GemvBench::~GemvBench() = default;

void GemvBench::prepare_expected() {
  if (!exact_.empty()) return;
  const GemvProblem& p = problem_;
  const uint64_t row = *row_bytes(p.type, uint64_t(p.k));
  const quant::BlockQ8_1* y = host_q8_1_.data();
  exact_.resize(size_t(p.n) * size_t(p.ncols));
  tolerance_.resize(exact_.size());
  for (int c = 0; c < p.ncols; ++c)
    for (int r = 0; r < p.n; ++r) {
      const quant::DotQ8_1 d =
          quant::dot_q8_1_detail(p.type, host_weights_.data() + size_t(r) * row, y + size_t(c) * size_t(p.k / 32), p.k);
      exact_[size_t(c) * size_t(p.n) + size_t(r)] = float(d.value);
      tolerance_[size_t(c) * size_t(p.n) + size_t(r)] = float(quant::tolerance_q8_1(d));
    }
  host_weights_ = {};  // 100+ MB at large shapes: only the expected outputs are needed now
}

ConfigTiming GemvBench::run(Config config) {
  ConfigTiming t;
  t.config = config;
  if (!device_.has_kernel(problem_.type, problem_.ncols, config)) {
    t.error = "this build has no kernel for this config";
    return t;
  }
  try {
    if (options_.verify) {
      prepare_expected();
      device_.fill(dst_, 0xFF);
      device_.gemv(problem_, config, weights_.front(), y_q8_1_, dst_);
      std::vector<float> out(exact_.size());
      device_.download(out.data(), dst_, out.size() * sizeof(float));
      std::vector<Expected> expected(exact_.size());
      for (size_t i = 0; i < expected.size(); ++i)  // the tight check only; f64 is verify's job
        expected[i] = {exact_[i], tolerance_[i], exact_[i], std::numeric_limits<double>::infinity()};
      const OutputCheck check = compare_outputs(out, expected, problem_.n);
      if (!check.passed()) {
        t.error = "verification failed: " + check.first_failure;
        return t;
      }
    }
    std::vector<const DeviceBuffer*> copies;
    for (const auto& w : weights_) copies.push_back(&w);
    if (options_.warmup > 0) device_.time_gemv(problem_, config, copies, y_q8_1_, dst_, options_.warmup);
    t.us = summarize(
        device_.time_gemv_grouped(problem_, config, copies, y_q8_1_, dst_, options_.count, options_.per_sample));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput) throw;
    t.error = e.what();
    return t;
  }
  t.gbs = t.us.median > 0 ? double(gemv_bytes(problem_)) / (t.us.median * 1e-6) / 1e9 : 0;
  return t;
}

GroupBench::GroupBench(Device& device, const GemvGroupProblem& problem, const GemvBenchOptions& options)
    : device_(device), problem_(problem), options_(options) {
  const std::string what = "group " + group_text(problem) + " ncols=" + std::to_string(problem.ncols);
  group_weight_types(problem);  // member count, types and width, each a clear error
  if (problem.k % 32 != 0) fail(ErrorKind::BadInput, what + ": k must be a multiple of 32");
  for (const GroupMember& m : problem.members)
    if (!quant::has_reference(m.type))
      fail(ErrorKind::BadInput, what + ": no CPU reference for " + std::string(type_name(m.type)) + ", so it cannot be checked");
  if (options.count < 1 || options.per_sample < 1 || options.warmup < 0)
    fail(ErrorKind::BadInput, what + ": the sample count and launches per sample must be positive, the warm-up not negative");
  uint64_t set_bytes = 0;
  std::vector<size_t> member_bytes;
  for (const GroupMember& m : problem.members) {
    member_bytes.push_back(size_t(*row_bytes(m.type, uint64_t(problem.k))) * size_t(m.n));
    set_bytes += member_bytes.back();
  }
  const uint64_t llc = options.llc_bytes ? options.llc_bytes : device_llc_bytes(device.info());
  copies_ = rotation_copies(set_bytes, llc);
  for (int i = 0; i < copies_; ++i)
    for (size_t bytes : member_bytes) weights_.push_back(device.alloc(bytes));

  const std::vector<quant::BlockQ8_1> y = quantized_activations(device, problem.k, problem.ncols, options.seed, y_q8_1_);

  for (size_t m = 0; m < problem.members.size(); ++m) {
    const GroupMember& member = problem.members[m];
    const size_t row = *row_bytes(member.type, uint64_t(problem.k));
    std::vector<uint8_t> w(member_bytes[m]);
    quant::fill_random(member.type, w.data(), member.n, problem.k, options.seed + m);
    for (int i = 0; i < copies_; ++i) device.upload(weights_[size_t(i) * problem.members.size() + m], w.data(), w.size());
    dst_.push_back(device.alloc(size_t(member.n) * size_t(problem.ncols) * sizeof(float)));
    std::vector<Expected> e(size_t(member.n) * size_t(problem.ncols));
    if (options.verify)
      for (int c = 0; c < problem.ncols; ++c)
        for (int r = 0; r < member.n; ++r) {
          const quant::DotQ8_1 d = quant::dot_q8_1_detail(member.type, w.data() + size_t(r) * row,
                                                          y.data() + size_t(c) * size_t(problem.k / 32), problem.k);
          e[size_t(c) * size_t(member.n) + size_t(r)] = {d.value, quant::tolerance_q8_1(d), d.value,
                                                         std::numeric_limits<double>::infinity()};
        }
    expected_.push_back(std::move(e));
  }
}

GroupBench::~GroupBench() = default;

ConfigTiming GroupBench::run(Config config) {
  ConfigTiming t;
  t.config = config;
  if (!device_.has_group_kernel(problem_, config)) {
    t.error = "this build has no group kernel for this config";
    return t;
  }
  std::vector<DeviceBuffer*> dst;
  for (DeviceBuffer& b : dst_) dst.push_back(&b);
  std::vector<const DeviceBuffer*> copies;
  for (const DeviceBuffer& w : weights_) copies.push_back(&w);
  try {
    if (options_.verify) {
      for (DeviceBuffer& b : dst_) device_.fill(b, 0xFF);
      device_.gemv_group(problem_, config, std::span(copies).first(problem_.members.size()), y_q8_1_, dst);
      for (size_t m = 0; m < dst_.size(); ++m) {
        std::vector<float> out(expected_[m].size());
        device_.download(out.data(), dst_[m], out.size() * sizeof(float));
        const OutputCheck check = compare_outputs(out, expected_[m], problem_.members[m].n);
        if (!check.passed()) {
          t.error = "verification failed: member " + std::to_string(m) + " " + check.first_failure;
          return t;
        }
      }
    }
    if (options_.warmup > 0) device_.time_gemv_group(problem_, config, copies, y_q8_1_, dst, options_.warmup, 1);
    t.us = summarize(device_.time_gemv_group(problem_, config, copies, y_q8_1_, dst, options_.count, options_.per_sample));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput) throw;
    t.error = e.what();
    return t;
  }
  t.gbs = t.us.median > 0 ? double(gemv_bytes(problem_)) / (t.us.median * 1e-6) / 1e9 : 0;
  return t;
}

nlohmann::json stats_json(const SampleStats& s) {
  return {{"n", s.n},         {"median", s.median}, {"p10", s.p10},       {"p90", s.p90},
          {"min", s.min},     {"max", s.max},       {"ci_low", s.ci_low}, {"ci_high", s.ci_high}};
}

}  // namespace temper
