#pragma once
// A deterministic fake device for tests and demos: buffers in host memory, results from the CPU
// reference (core/quant), timings drawn from a seeded model (bytes / bandwidth × a per-config
// factor, plus jitter), and knobs that inject faults: wrong answers for chosen configs, a device
// lost after N launches, a slow kernel, a memory limit. Its numbers are not measurements: sessions
// made with it carry api "fake".
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "temper/backend.h"

namespace temper {

struct FakeDeviceOptions {
  std::string name = "Temper fake GPU (host memory, simulated timings)";
  std::string arch = "sm_90";       // picks the default tables (sm_90: GENERIC)
  int warp_size = 32;
  int compute_units = 16;
  uint64_t memory_bytes = 1ull << 30;  // allocations beyond this fail as out of memory
  uint64_t l2_bytes = 1ull << 20;
  double bandwidth_gbs = 1000;      // copy_bandwidth_gbs() and the timing model
  double launch_overhead_us = 4;
  double jitter = 0.004;            // relative standard deviation of a timing sample
  uint64_t seed = 1;                // of the timing model: same seed, same timings
  // Time per launch in µs before jitter; empty: bytes / bandwidth × a per-config factor in
  // [0.85, 1.35) hashed from (type, n, k, ncols, config) + overhead.
  std::function<double(const GemvProblem&, Config)> time_model;
  std::vector<Config> wrong_configs;   // these configs return wrong outputs (verification fails)
  std::vector<Config> missing_configs; // has_kernel() says no
  std::optional<int64_t> lose_after_launches;  // then every call fails: "device lost"
  double sleep_per_launch_us = 0;   // real wall time per launch: a slow kernel
  // A device that starts cold: its first `cold_launches` timed launches (time_gemv, any config)
  // take `cold_factor` × the model's time, like a GPU still leaving idle clocks. A sweep times a
  // group's default first, so the default looks slow in the main pass only (a spurious win).
  int64_t cold_launches = 0;
  double cold_factor = 1.0;
};

// Reads test knobs from the environment (used by `temper ... --backend fake`):
// TEMPER_FAKE_SLEEP_US, TEMPER_FAKE_LOSE_AFTER, TEMPER_FAKE_WRONG ("4x1,2x2": nwarps x rows),
// TEMPER_FAKE_ARCH, TEMPER_FAKE_SEED. Error(BadInput) naming a malformed variable.
FakeDeviceOptions fake_options_from_env();

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(FakeDeviceOptions options = {}, int index = 0);
  ~FakeDevice() override;
  const DeviceInfo& info() const override { return info_; }
  const FakeDeviceOptions& options() const { return options_; }

  DeviceBuffer alloc(size_t bytes) override;
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset = 0) override;
  void download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset = 0) override;
  void fill(DeviceBuffer& dst, uint8_t byte) override;
  void quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) override;
  bool has_kernel(GgmlType type, int ncols, Config config) const override;
  void gemv(const GemvProblem& p, Config c, const DeviceBuffer& weights, const DeviceBuffer& y_q8_1,
            DeviceBuffer& dst) override;
  std::vector<double> time_gemv(const GemvProblem& p, Config c, std::span<const DeviceBuffer* const> weight_copies,
                                const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int count) override;
  std::vector<double> time_gemv_grouped(const GemvProblem& p, Config c,
                                        std::span<const DeviceBuffer* const> weight_copies,
                                        const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int groups,
                                        int per_group) override;
  double copy_bandwidth_gbs(size_t bytes) override;
  std::optional<KernelAttributes> kernel_attributes(GgmlType type, int ncols, Config config) override;
  Telemetry telemetry() override;

  // Fault injection at run time (thread-safe): the device is lost from the next call on.
  void lose() { lost_ = true; }
  int64_t launches() const { return launches_; }
  double mean_time_us(const GemvProblem& p, Config c) const;  // the model, without jitter

 protected:
  void release(void* ptr) noexcept override;

 private:
  void check_alive(const char* call);
  void count_launch(const char* call);
  void check_buffer(const DeviceBuffer& b, size_t bytes, size_t offset, const char* call) const;
  void invalidate(const void* ptr);

  FakeDeviceOptions options_;
  DeviceInfo info_;
  std::atomic<bool> lost_{false};
  std::atomic<int64_t> launches_{0};
  std::mutex mutex_;
  uint64_t allocated_ = 0;
  std::map<void*, size_t> sizes_;
  // Outputs of the last reference GEMV per (weights, activations): configs differ only in speed.
  struct CachedGemv {
    const void* weights;
    const void* y;
    GemvProblem p;
    std::vector<float> out;
  };
  std::vector<CachedGemv> cache_;
  uint64_t timing_calls_ = 0;
  int64_t timed_launches_ = 0;  // for cold_launches (under mutex_)
};

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(FakeDeviceOptions options = {}, int device_count = 1);
  std::string name() const override { return "fake"; }
  std::vector<DeviceInfo> devices() override;
  std::unique_ptr<Device> open(int index) override;

 private:
  FakeDeviceOptions options_;
  int count_;
};

}  // namespace temper
