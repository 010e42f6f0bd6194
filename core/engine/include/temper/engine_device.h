#pragma once
// The engine device: llama.cpp's own mmvq, reached through `temper-probe` (a small program built
// against a user's hooked ggml tree) running as a child process. It speaks the wire protocol of
// core/engine/probe_protocol.h over the child's stdin/stdout; the child's stderr goes to a log file.
// A probe that dies, hangs or answers an error becomes one temper::Error naming the probe, its last
// stderr lines and its log; after a crash or a timeout every later call refuses with that cause.
//
// DeviceInfo::api is "engine-cuda" (probe arch sm_*) or "engine-hip" (gfx*): sessions made through
// the probe never pass for Temper's own kernel.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "temper/backend.h"
#include "temper/engine_build.h"
#include "temper/session.h"

namespace temper::engine {

struct ProbeOptions {
  std::filesystem::path probe;           // the temper-probe executable
  std::vector<std::string> args;         // extra arguments for it
  double timeout_s = 120;                // longest wait for one answer; then the probe is killed
  std::filesystem::path log;             // the probe's stderr; empty: a file in the engine cache's logs/,
                                         // removed when the probe ends without an error that names it
  // Provenance recorded in the session's kernel source (what --engine-src built); may stay empty.
  std::string source_path, ggml_commit, hook_version;
  // time_gemv times mul_mat_vec_q alone (Op::TimeKernel: activations quantized once, no MUL_MAT
  // around it), every config as its grid instantiation, the stock one included; needs protocol 2.
  bool kernel_only = false;
};

// The probe of an engine build() made from the tree at `src`, with the provenance the session
// records (the tree's absolute path, its commit, the hook version).
ProbeOptions probe_options(const std::filesystem::path& src, const BuildResult& built);

// "engine-cuda" / "engine-hip" for a probe arch ("sm_90" / "gfx90a"); true for either.
std::string api_for_arch(const std::string& arch);
bool is_engine_api(const std::string& api);

// One running probe: framing, timeouts, death. Not thread-safe on its own (EngineDevice locks).
class ProbeProcess;

// One decode-replay run (probe_protocol.h, Op::Replay).
struct ReplayTokens {
  std::vector<double> token_us;  // device time of each token's graph
  int64_t launches = 0;          // mmvq launches per token
  int64_t tuned = 0;             // of them, from a Temper instantiation
  int64_t path_changes = 0;      // mmvq/mmq decisions the hook changed per token (protocol 4; else 0)
  int64_t group_launches = 0;    // same-input group launches per token (protocol 5; else 0)
  int64_t pipelined_launches = 0;  // pipelined launches per token (protocol 6; else 0)
};

class EngineDevice final : public Device {
 public:
  // Starts the probe and says Hello. Error(BadInput) when the file is missing or not executable, or
  // when kernel_only asks for an op its protocol lacks; Error(GpuFault) when it dies, hangs, speaks
  // a protocol version outside kMinProtocolVersion..kProtocolVersion or answers an error.
  explicit EngineDevice(ProbeOptions options);
  ~EngineDevice() override;
  const DeviceInfo& info() const override { return info_; }
  const ProbeOptions& options() const { return options_; }
  const std::map<std::string, std::string>& hello() const { return hello_; }  // the probe's Hello lines
  int protocol() const { return protocol_; }
  // What the session records about the kernel timed: kind "engine", probe path, commit, hook version.
  KernelSource kernel_source() const;
  const std::filesystem::path& log_path() const;

  DeviceBuffer alloc(size_t bytes) override;
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset = 0) override;
  void download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset = 0) override;
  void fill(DeviceBuffer& dst, uint8_t byte) override;
  void quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) override;
  bool has_kernel(GgmlType type, int ncols, Config config) const override;
  bool runs_launch(Launch l) const override { return l == Launch::MulMat || protocol_ >= 3; }
  std::optional<Config> stock_config(GgmlType type, int ncols, int k) const override;
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

  // The probe's handle of a buffer this device allocated (for replay plans).
  static uint64_t handle(const DeviceBuffer& b) { return uint64_t(reinterpret_cast<uintptr_t>(b.get())); }
  // Runs a replay plan (probe_protocol.h) for `tokens` tokens.
  ReplayTokens replay(const std::string& plan, uint32_t tokens);

 protected:
  void release(void* ptr) noexcept override;

 private:
  std::vector<uint8_t> call(uint32_t op, const std::vector<uint8_t>& payload, const char* what) const;
  // The config to send: {0, 0} (the engine's stock launch) when c is the stock config for (type, ncols, k).
  Config wire_config(const GemvProblem& p, Config c) const;
  // GemvLaunch / TimeLaunch's header for a launch of a fused or ids kind (protocol 3).
  void put_launch_header(std::vector<uint8_t>& out, const GemvProblem& p, Config wire) const;

  ProbeOptions options_;
  std::unique_ptr<ProbeProcess> process_;
  DeviceInfo info_;
  std::map<std::string, std::string> hello_;
  int protocol_ = 0;
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<GgmlType, int, int>, Config> stock_;  // (type, ncols, k)
  mutable std::map<std::tuple<GgmlType, int, int, int>, bool> has_kernel_;
};

// One probe, one device (index 0).
class EngineBackend final : public Backend {
 public:
  explicit EngineBackend(ProbeOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "engine"; }
  std::vector<DeviceInfo> devices() override;
  std::unique_ptr<Device> open(int index) override;
  std::string unavailable_reason() const override { return why_; }

 private:
  ProbeOptions options_;
  std::unique_ptr<EngineDevice> started_;  // from devices(), handed out by open(0)
  std::string why_;
};

}  // namespace temper::engine
