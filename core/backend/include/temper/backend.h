#pragma once
// The device interface: everything core needs from a GPU, and nothing more. Implementations:
// the GPU backend (one source in the HIP dialect, compiled for HIP and for CUDA) and a fake
// backend (host memory, CPU reference results, deterministic timings) for tests and demos.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/keys.h"
#include "temper/mmvq_traits.h"
#include "temper/kernel_cache.h"
#include "temper/types.h"

namespace temper {

struct DeviceInfo {
  int index = 0;                 // index within its backend
  std::string api;               // "hip", "cuda", "fake"
  std::string name;              // "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
  std::string arch;              // "sm_90", "gfx942" (HIP gcnArchName without feature suffixes)
  int compute_units = 0;         // CUs or SMs
  int warp_size = 32;
  uint64_t memory_bytes = 0;
  uint64_t l2_bytes = 0;         // last-level cache as the runtime reports it
  int clock_mhz = 0;
  int memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  int shared_per_block = 0;      // bytes
  int shared_per_cu = 0;         // bytes
  int regs_per_block = 0;
  int regs_per_cu = 0;
  int max_threads_per_cu = 0;
  std::string driver_version;
  std::string runtime_version;
  std::string pci_bus_id;
};

struct KernelAttributes {
  int registers = 0;             // per thread (VGPRs on AMD)
  int shared_bytes = 0;          // static LDS / shared memory per block
  int local_bytes = 0;           // spill / scratch per thread
  int max_threads_per_block = 0;
  int blocks_per_cu = 0;         // the runtime's own occupancy calculator, at this block size
};

struct Telemetry {
  std::optional<double> sm_clock_mhz, memory_clock_mhz, power_w, temperature_c, busy_percent;
};

// The gate activation of a fused gate/up launch: out = up · act(gate). ggml's fused mmvq applies
// SwiGLU (silu) or GeGLU (tanh-approximated gelu), whichever the model's graph uses.
enum class GluOp : uint8_t { SwiGlu, GeGlu };
std::string_view glu_name(GluOp g);                    // "swiglu", "geglu"
GluOp glu_of_architecture(std::string_view architecture);  // gemma*: GeGlu; else SwiGlu

class DeviceBuffer;

// One GEMV launch: dst[ncols][n] = W[n][k] · y[ncols][k] for a plain launch; the fused and ids
// kinds of ShapeKey read their weights as weight_layout() lays them out, and ids launches write one
// column per expert (`used` columns of n) from the expert ids in `ids`.
struct GemvProblem : ShapeKey {
  int ncols = 1;
  // Which engine version's compiled kernel to run (defaults::kernel_variant of the session's engine).
  mmvq::KernelVariant variant = default_engine_version().variant;
  GluOp glu = GluOp::SwiGlu;            // fused kinds
  // ids kinds: `ids_sets` sets of `used` distinct int32 expert ids, one after the other; a launch
  // uses set (launch index mod ids_sets), gemv() set 0, so timed launches read a spread of experts.
  const DeviceBuffer* ids = nullptr;
  int ids_sets = 1;
};

// Where a launch's weights live in one buffer: the matrix (all `experts` matrices of an ids kind,
// one after the other), then for fused kinds the gate matrix (likewise) at gate_offset. The up
// matrix comes first because ggml's fused mmvq reads it as its x and the gate through its fusion
// arguments. Each matrix is followed by the spare rows the kernels may read past the last one.
struct WeightLayout {
  size_t row_bytes = 0;
  size_t matrix_bytes = 0;   // one expert's matrix (n rows)
  size_t experts = 1;        // matrices per operand
  size_t gate_offset = 0;    // 0 when the launch has no gate
  size_t total = 0;          // the buffer's size
};
WeightLayout weight_layout(const ShapeKey& s);
// Activation columns one launch reads (y) and output columns it writes (dst).
int input_columns(const ShapeKey& s, int ncols);
int output_columns(const ShapeKey& s, int ncols);

// Bytes one launch moves, as GB/s and the roofline count them: weights + q8_1 activations
// (ncols × k/32 blocks of 36 bytes) + float outputs (ncols × n); a launch of a fused or ids kind
// counts every matrix it reads (both of gate/up, `used` experts) and its activation and output
// columns (one per expert for ids kinds, whose ncols is 1).
double gemv_bytes(const ShapeKey& shape, int ncols);
double gemv_bytes(GgmlType type, int64_t n, int64_t k, int ncols);  // a plain GEMV
uint64_t gemv_bytes(const GemvProblem& p);

// A same-input group launch in Temper's own kernel (kernels/mmvq_group.h), as the hook's mul_mat_group
// entries run a layer's q, k and v: 2..mmvq::kGroupMaxMembers GEMVs of one K reading the same
// activation columns (ncols 1..kGroupMaxNcols), of at most two weight types. Member m (keys.h's
// GroupMember) has plain rows (n × row_bytes) and writes ncols columns of n floats.
struct GemvGroupProblem {
  std::vector<GroupMember> members;
  int k = 0;
  int ncols = 1;
  mmvq::KernelVariant variant = default_engine_version().variant;
};
// "q4_K 4096x4096 + q4_K 1024x4096 + q6_K 1024x4096".
std::string group_text(const GemvGroupProblem& p);
// The members' types in order of first appearance (A, then B); Error(BadInput) past two types, or
// a member count outside 2..kGroupMaxMembers, or a width outside 1..kGroupMaxNcols.
std::vector<GgmlType> group_weight_types(const GemvGroupProblem& p);
// Bytes one group launch moves: every member's weights and outputs, the activations once.
uint64_t gemv_bytes(const GemvGroupProblem& p);

class Device;

// Move-only device allocation; freed by its device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* owner, void* ptr, size_t bytes) : owner_(owner), ptr_(ptr), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset();
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  Device* owner_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Every method throws temper::Error: GpuFault (with the runtime call, device and config in the
// text), BadInput (a config this build cannot launch) or NoDevice.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;

  virtual DeviceBuffer alloc(size_t bytes) = 0;  // out of memory: GpuFault saying so
  virtual void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset = 0) = 0;
  virtual void download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset = 0) = 0;
  virtual void fill(DeviceBuffer& dst, uint8_t byte) = 0;  // 0xFF poisons floats to NaN

  // x: ncols columns of k floats → y: ncols × k/32 q8_1 blocks (36 bytes each).
  virtual void quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) = 0;
  virtual bool has_kernel(GgmlType type, int ncols, Config config) const = 0;
  // The norm that writes its GEMVs' q8_1 activations (Temper's twin of the hook's rms_norm_q8_1
  // structure): `rows` (1..8) rows of k floats x and the weight row w → dst, ggml's RMS_NORM·MUL, and y,
  // its q8_1 copy (rows × k/32 blocks). A device without it: Error(BadInput).
  virtual bool has_norm_kernel() const { return false; }
  virtual void rms_norm_q8_1(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& dst, DeviceBuffer& y, int k, int rows,
                             float eps) {
    (void)x, (void)w, (void)dst, (void)y, (void)k, (void)rows, (void)eps;
    fail(ErrorKind::BadInput, info().name + " has no kernel for the norm that writes q8_1 activations");
  }
  // Whether this device can launch shapes of this kind (Temper's own kernel: plain GEMVs only; the
  // engine's: every kind its probe serves).
  virtual bool runs_launch(Launch l) const { return l == Launch::MulMat; }
  // The config the device's own engine launches for (type, ncols, K), when it knows (the engine
  // device asks its probe); nullopt: the sweep takes the default from Temper's tables.
  virtual std::optional<Config> stock_config(GgmlType, int /*ncols*/, int /*k*/) const { return std::nullopt; }
  // Makes the kernels of these (type, ncols) pairs ready before work starts: those the build lacks
  // are compiled for this device's arch (or found in the kernel cache), with progress; a no-op
  // where every kernel is built in. Error(Cancelled) when `cancel` turns true. Work on a pair not
  // prepared compiles it on first use, without progress.
  virtual void prepare_kernels(std::span<const KernelPair> pairs, const CompileProgressFn& progress,
                               const std::atomic<bool>* cancel) {
    (void)pairs, (void)progress, (void)cancel;
  }
  // One launch, synchronised and checked.
  virtual void gemv(const GemvProblem& p, Config c, const DeviceBuffer& weights, const DeviceBuffer& y_q8_1,
                    DeviceBuffer& dst) = 0;
  // `count` launches timed one by one with device events, the weights rotating through
  // `weight_copies` so they come from DRAM. Returns microseconds per launch.
  virtual std::vector<double> time_gemv(const GemvProblem& p, Config c,
                                        std::span<const DeviceBuffer* const> weight_copies,
                                        const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int count) = 0;
  // `groups` × `per_group` launches back to back, one event pair around each group and none between
  // its kernels (as a graph of decode kernels runs them); weights rotate per launch. Returns
  // microseconds per launch, one value per group. per_group 1 is time_gemv.
  virtual std::vector<double> time_gemv_grouped(const GemvProblem& p, Config c,
                                                std::span<const DeviceBuffer* const> weight_copies,
                                                const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int groups,
                                                int per_group) {
    if (per_group == 1) return time_gemv(p, c, weight_copies, y_q8_1, dst, groups);
    fail(ErrorKind::BadInput, "device " + info().name + " times launches one by one only");
  }
  // Same-input groups (GemvGroupProblem): whether the device can launch `p` at `c` (a config of the
  // group grid), one launch synchronised and checked (weights[m], dst[m]: member m's), and `samples`
  // × `per_sample` launches, an event pair around each sample's back-to-back launches, member m's
  // weights rotating per launch through weight_copies[i * members + m] (i = launch mod copies):
  // microseconds per launch, one value per sample. A device without group kernels says no / throws
  // Error(BadInput).
  virtual bool has_group_kernel(const GemvGroupProblem& p, Config c) const {
    (void)p, (void)c;
    return false;
  }
  virtual void gemv_group(const GemvGroupProblem& p, Config c, std::span<const DeviceBuffer* const> weights,
                          const DeviceBuffer& y_q8_1, std::span<DeviceBuffer* const> dst) {
    (void)c, (void)weights, (void)y_q8_1, (void)dst;
    fail(ErrorKind::BadInput, "device " + info().name + " has no same-input group kernel for " + group_text(p));
  }
  virtual std::vector<double> time_gemv_group(const GemvGroupProblem& p, Config c,
                                              std::span<const DeviceBuffer* const> weight_copies,
                                              const DeviceBuffer& y_q8_1, std::span<DeviceBuffer* const> dst, int samples,
                                              int per_sample) {
    (void)c, (void)weight_copies, (void)y_q8_1, (void)dst, (void)samples, (void)per_sample;
    fail(ErrorKind::BadInput, "device " + info().name + " has no same-input group kernel for " + group_text(p));
  }
  // Median device-to-device copy bandwidth in GB/s (10^9 B/s), counting bytes read + written.
  virtual double copy_bandwidth_gbs(size_t bytes) = 0;
  virtual std::optional<KernelAttributes> kernel_attributes(GgmlType type, int ncols, Config config) = 0;
  virtual Telemetry telemetry() { return {}; }
  // Test-only: launches a kernel that writes far out of bounds and waits for it. A device that has
  // one throws Error(GpuFault) and refuses all later work with that cause; false: no such kernel.
  virtual bool run_faulting_kernel() { return false; }

 protected:
  friend class DeviceBuffer;
  virtual void release(void* ptr) noexcept = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "hip", "cuda", "fake"
  // Devices this backend sees; empty (never an exception) when the driver or device is absent.
  virtual std::vector<DeviceInfo> devices() = 0;
  virtual std::unique_ptr<Device> open(int index) = 0;
  // Why devices() is empty ("no HIP runtime", "hipGetDeviceCount: no ROCm-capable device"), if it is.
  virtual std::string unavailable_reason() const { return {}; }
};

// The GPU backends compiled into this build (HIP and/or CUDA); empty in a build with neither.
std::vector<std::unique_ptr<Backend>> gpu_backends();

}  // namespace temper
