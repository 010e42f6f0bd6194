#pragma once
// Timing one GEMV problem on a device the way DESIGN.md's rules of measurement ask: random valid
// weights in enough copies to exceed twice the last-level cache (so every launch reads DRAM),
// activations quantized by the device, each config verified once before it is timed, then many
// launches timed one by one with device events. Used by `temper bench-gemv` and bench/device.sh.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"
#include "temper/stats.h"
#include "temper/verify.h"

namespace temper {

// The tier-1 types, in its order: the ones the device evidence times.
std::vector<GgmlType> tier1_types();

// Weight copies to rotate through so that together they exceed 2 × llc_bytes; at least 2, at most
// 4096 (a shape of a few KB then stays partly in cache: too small to matter for decode anyway).
int rotation_copies(uint64_t weight_bytes, uint64_t llc_bytes);
// The last-level cache to defeat on this device: the larger of the runtime's L2 and the spec
// database's LLC (Infinity Cache / MALL on AMD, which the runtime does not report).
uint64_t device_llc_bytes(const DeviceInfo& device);

struct GemvBenchOptions {
  int warmup = 20;          // launches before timing, discarded
  int count = 200;          // timed samples (the median is reported)
  int per_sample = 8;       // launches back to back per sample (one event pair around them), as the sweep
  uint64_t llc_bytes = 0;   // 0: device_llc_bytes(device)
  uint64_t seed = 1;
  bool verify = true;       // check each config once against the exact q8_1 dot before timing it
};

struct ConfigTiming {
  Config config;
  SampleStats us;           // microseconds per launch
  double gbs = 0;           // gemv_bytes / median, 10^9 B/s
  std::string error;        // verification failure or device error: the config was not timed
  bool ok() const { return error.empty(); }
};

// One problem set up on a device; run() any number of configs against it.
class GemvBench {
 public:
  // Allocates and uploads the weight copies and activations; Error(GpuFault) when they do not fit.
  GemvBench(Device& device, const GemvProblem& problem, const GemvBenchOptions& options = {});
  ~GemvBench();
  GemvBench(const GemvBench&) = delete;
  GemvBench& operator=(const GemvBench&) = delete;

  // Verifies (when asked) and times one config. Verification failures and BadInput come back in
  // ConfigTiming::error; a GPU fault is thrown (the device may be unusable).
  ConfigTiming run(Config config);

  const GemvProblem& problem() const { return problem_; }
  int copies() const { return int(weights_.size()); }
  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  Device& device_;
  GemvProblem problem_;
  GemvBenchOptions options_;
  uint64_t weight_bytes_ = 0;
  std::vector<DeviceBuffer> weights_;
  DeviceBuffer y_q8_1_;
  DeviceBuffer dst_;
  std::vector<float> exact_, tolerance_;  // per output, computed lazily on the first verify
  std::vector<uint8_t> host_weights_;    // kept only until the expected outputs exist
  std::vector<quant::BlockQ8_1> host_q8_1_;  // the device's quantized activations
  void prepare_expected();
};

// One same-input group (Temper's group kernel, kernels/mmvq_group.h) set up the same way: every
// member's random valid weights in enough copies that a set of them exceeds twice the LLC, the
// activations quantized once, each config verified (every member, tight tolerance) before it is timed.
class GroupBench {
 public:
  GroupBench(Device& device, const GemvGroupProblem& problem, const GemvBenchOptions& options = {});
  ~GroupBench();
  GroupBench(const GroupBench&) = delete;
  GroupBench& operator=(const GroupBench&) = delete;

  // As GemvBench::run; gbs counts gemv_bytes(problem).
  ConfigTiming run(Config config);

  const GemvGroupProblem& problem() const { return problem_; }
  int copies() const { return copies_; }

 private:
  Device& device_;
  GemvGroupProblem problem_;
  GemvBenchOptions options_;
  int copies_ = 0;
  std::vector<DeviceBuffer> weights_;  // copy i, member m at i * members + m
  DeviceBuffer y_q8_1_;
  std::vector<DeviceBuffer> dst_;
  std::vector<std::vector<Expected>> expected_;  // per member, the tight check
};

// {"n", "median", "p10", "p90", "min", "max", "ci_low", "ci_high"} in microseconds.
nlohmann::json stats_json(const SampleStats& s);

}  // namespace temper
