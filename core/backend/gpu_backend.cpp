// The GPU backend: one host source in the HIP dialect, compiled twice — against HIP's runtime for
// AMD and, through kernels/hip_on_cuda.h, against CUDA's for NVIDIA (TEMPER_GPU_CUDA). The few
// facts the two runtimes report differently (arch string, telemetry) are the only #if branches.
#if defined(TEMPER_GPU_CUDA)
#include "hip_on_cuda.h"
#else
#include <hip/hip_runtime_api.h>
#endif

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/launch.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"
#include "temper/kernel_cache.h"
#include "temper/mmvq_group.h"
#include "temper/mmvq_traits.h"
#if defined(TEMPER_WITH_RSMI) && !defined(TEMPER_GPU_CUDA)
#include "telemetry_rsmi.h"
#endif

namespace temper {
namespace {

#if defined(TEMPER_GPU_CUDA)
constexpr const char* kApi = "cuda";
constexpr KernelToolchain kToolchain = KernelToolchain::Cuda;
#else
constexpr const char* kApi = "hip";
constexpr KernelToolchain kToolchain = KernelToolchain::Hip;
#endif

// Kernels compiled at run time: one shared library per kernel cache unit, loaded once per process and
// kept (kernels stay registered with the runtime). A (type, ncols) unit holds every config of the grid;
// a group unit (KernelPair::group_b) the group kernels of one (A, B, ncols).
struct RtcKernels {
  int (*launch)(const void* mmvq_launch) = nullptr;
  const void* (*function)(int nwarps, int rows_per_block, int warp_size) = nullptr;
};
struct RtcGroupKernels {
  int (*launch)(const void* group_launch) = nullptr;
};

// `so`'s entry point `symbol`, the library loaded once and checked to be of this Temper's ABI.
void* rtc_symbol(const std::filesystem::path& so, const char* symbol) {
  static std::mutex m;
  static std::map<std::string, void*> handles;
  std::lock_guard lock(m);
  void*& h = handles[so.string()];
  if (!h) {
    h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) fail(ErrorKind::GpuFault, "cannot load the compiled kernels " + so.string() + ": " + ::dlerror());
    const auto abi = reinterpret_cast<int (*)()>(::dlsym(h, "temper_rtc_abi"));
    if (!abi || abi() != 1)
      fail(ErrorKind::Internal, so.string() + " is not a Temper kernel library of this version (delete it to rebuild)");
  }
  void* f = ::dlsym(h, symbol);
  if (!f) fail(ErrorKind::Internal, so.string() + " lacks " + symbol + " (delete it to rebuild)");
  return f;
}

const RtcKernels& load_rtc(const std::filesystem::path& so) {
  static std::mutex m;
  static std::map<std::string, RtcKernels> loaded;
  std::lock_guard lock(m);
  if (auto it = loaded.find(so.string()); it != loaded.end()) return it->second;
  RtcKernels k;
  k.launch = reinterpret_cast<decltype(k.launch)>(rtc_symbol(so, "temper_rtc_launch"));
  k.function = reinterpret_cast<decltype(k.function)>(rtc_symbol(so, "temper_rtc_function"));
  return loaded.emplace(so.string(), k).first->second;
}

const RtcGroupKernels& load_rtc_group(const std::filesystem::path& so) {
  static std::mutex m;
  static std::map<std::string, RtcGroupKernels> loaded;
  std::lock_guard lock(m);
  if (auto it = loaded.find(so.string()); it != loaded.end()) return it->second;
  return loaded.emplace(so.string(), RtcGroupKernels{reinterpret_cast<int (*)(const void*)>(rtc_symbol(so, "temper_rtc_group_launch"))})
      .first->second;
}

bool in_grid(Config c) {
  return std::find(std::begin(mmvq::kGridNwarps), std::end(mmvq::kGridNwarps), c.nwarps) != std::end(mmvq::kGridNwarps) &&
         std::find(std::begin(mmvq::kGridRowsPerBlock), std::end(mmvq::kGridRowsPerBlock), c.rows_per_block) !=
             std::end(mmvq::kGridRowsPerBlock);
}

constexpr int kMaxNcols = 8;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kTimingWindow = 256;  // launches in flight before the host waits for the oldest
constexpr int kBandwidthCopies = 20;

// Our call names are HIP's; on CUDA say what was really called.
std::string call_name(const char* hip_name) {
  std::string s(hip_name);
  if (std::string_view(kApi) == "cuda" && s.rfind("hip", 0) == 0) s = "cuda" + s.substr(3);
  return s;
}

std::string error_text(hipError_t e) {
  return std::string(hipGetErrorName(e)) + ": " + hipGetErrorString(e);
}

std::string describe(const GemvProblem& p, Config c) {
  return std::string(type_name(p.type)) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         " ncols=" + std::to_string(p.ncols) + " config (" + config_words(c) + ")";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

struct PciAddress {
  int domain = 0, bus = 0, device = 0;
};

// Identity of device `index`; throws GpuFault naming the call that failed.
DeviceInfo query_info(int index, PciAddress& pci) {
  auto check = [index](hipError_t e, const char* call) {
    if (e != hipSuccess)
      fail(ErrorKind::GpuFault, call_name(call) + " failed for device " + std::to_string(index) + ": " + error_text(e));
  };
  auto attribute = [&](hipDeviceAttribute_t a, const char* what) {
    int v = 0;
    check(hipDeviceGetAttribute(&v, a, index), what);
    return v;
  };
  hipDeviceProp_t p{};
  check(hipGetDeviceProperties(&p, index), "hipGetDeviceProperties");
  DeviceInfo d;
  d.index = index;
  d.api = kApi;
  d.name = p.name;
#if defined(TEMPER_GPU_CUDA)
  d.arch = gpu::cuda_arch(p.major, p.minor);
#else
  d.arch = gpu::clean_gcn_arch(p.gcnArchName);
#endif
  d.compute_units = p.multiProcessorCount;
  d.warp_size = p.warpSize;
  d.memory_bytes = p.totalGlobalMem;
  d.l2_bytes = static_cast<uint64_t>(std::max(p.l2CacheSize, 0));
  d.clock_mhz = attribute(hipDeviceAttributeClockRate, "hipDeviceGetAttribute(ClockRate)") / 1000;
  d.memory_clock_mhz = attribute(hipDeviceAttributeMemoryClockRate, "hipDeviceGetAttribute(MemoryClockRate)") / 1000;
  d.memory_bus_bits = p.memoryBusWidth;
  d.shared_per_block = static_cast<int>(p.sharedMemPerBlock);
  d.shared_per_cu = attribute(hipDeviceAttributeMaxSharedMemoryPerMultiprocessor,
                              "hipDeviceGetAttribute(MaxSharedMemoryPerMultiprocessor)");
  d.regs_per_block = p.regsPerBlock;
  d.regs_per_cu = attribute(hipDeviceAttributeMaxRegistersPerMultiprocessor,
                            "hipDeviceGetAttribute(MaxRegistersPerMultiprocessor)");
  d.max_threads_per_cu = p.maxThreadsPerMultiProcessor;
  int driver = 0, runtime = 0;
  check(hipDriverGetVersion(&driver), "hipDriverGetVersion");
  check(hipRuntimeGetVersion(&runtime), "hipRuntimeGetVersion");
  d.driver_version = gpu::format_version(kApi, driver);
  d.runtime_version = gpu::format_version(kApi, runtime);
  char bus_id[64] = {};
  check(hipDeviceGetPCIBusId(bus_id, sizeof bus_id, index), "hipDeviceGetPCIBusId");
  d.pci_bus_id = lower(bus_id);
  pci = {p.pciDomainID, p.pciBusID, p.pciDeviceID};
  return d;
}

class GpuDevice final : public Device {
 public:
  GpuDevice(DeviceInfo info, PciAddress pci) : info_(std::move(info)), pci_(pci) {
    activate();
    check(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking), "hipStreamCreateWithFlags");
    check(hipEventCreateWithFlags(&done_, hipEventDisableTiming), "hipEventCreateWithFlags");
  }

  ~GpuDevice() override {
    if (hung_) return;  // a kernel still runs: any call could block, so leak instead
    (void)hipSetDevice(info_.index);
    for (hipEvent_t e : timing_events_) (void)hipEventDestroy(e);
    if (done_) (void)hipEventDestroy(done_);
    if (stream_) (void)hipStreamDestroy(stream_);
  }

  const DeviceInfo& info() const override { return info_; }

  DeviceBuffer alloc(size_t bytes) override {
    usable();
    if (bytes == 0) return {};
    void* ptr = nullptr;
    const hipError_t e = hipMalloc(&ptr, bytes);
    if (e == hipErrorOutOfMemory) {
      (void)hipGetLastError();  // not sticky: clear it so the next call starts clean
      size_t free_bytes = 0, total_bytes = 0;
      (void)hipMemGetInfo(&free_bytes, &total_bytes);
      fail(ErrorKind::GpuFault, "out of device memory: asked " + std::to_string(bytes) + " bytes, " +
                                    std::to_string(free_bytes) + " free of " + std::to_string(total_bytes) + " on " +
                                    where());
    }
    check(e, "hipMalloc", std::to_string(bytes) + " bytes");
    return DeviceBuffer(this, ptr, bytes);
  }

  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    in_range(dst, bytes, offset, "upload");
    usable();
    if (bytes == 0) return;
    check(hipMemcpyAsync(static_cast<char*>(dst.get()) + offset, src, bytes, hipMemcpyHostToDevice, stream_),
          "hipMemcpyAsync", "upload of " + std::to_string(bytes) + " bytes");
    sync("upload");
  }

  void download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset) override {
    in_range(src, bytes, offset, "download");
    usable();
    if (bytes == 0) return;
    check(hipMemcpyAsync(dst, static_cast<const char*>(src.get()) + offset, bytes, hipMemcpyDeviceToHost, stream_),
          "hipMemcpyAsync", "download of " + std::to_string(bytes) + " bytes");
    sync("download");
  }

  void fill(DeviceBuffer& dst, uint8_t byte) override {
    usable();
    if (dst.size() == 0) return;
    check(hipMemsetAsync(dst.get(), byte, dst.size(), stream_), "hipMemsetAsync");
    sync("fill");
  }

  void quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) override {
    const std::string what = "q8_1 quantization of " + std::to_string(ncols) + " × " + std::to_string(k) + " floats";
    if (k <= 0 || k % 32 != 0 || ncols < 1 || ncols > kMaxNcols)
      fail(ErrorKind::BadInput, what + ": k must be a positive multiple of 32 and ncols 1.." + std::to_string(kMaxNcols));
    const size_t values = size_t(k) * size_t(ncols);
    big_enough(x, values * sizeof(float), what + " (input)");
    big_enough(y, values / 32 * 36, what + " (output)");
    usable();
    const int rc = kernels::launch_quantize_q8_1(static_cast<const float*>(x.get()), y.get(), k, ncols, stream_);
    check(static_cast<hipError_t>(rc), "launch_quantize_q8_1", what);
    sync(what);
  }

  bool has_norm_kernel() const override { return true; }
  void rms_norm_q8_1(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& dst, DeviceBuffer& y, int k, int rows,
                     float eps) override {
    const std::string what = "the norm writing q8_1 of " + std::to_string(rows) + " × " + std::to_string(k) + " floats";
    if (k <= 0 || k % 32 != 0 || rows < 1 || rows > kMaxNcols || !(eps >= 0.0f))
      fail(ErrorKind::BadInput, what + ": k must be a positive multiple of 32, rows 1.." + std::to_string(kMaxNcols) + " and eps ≥ 0");
    const size_t values = size_t(k) * size_t(rows);
    big_enough(x, values * sizeof(float), what + " (input)");
    big_enough(w, size_t(k) * sizeof(float), what + " (weight row)");
    big_enough(dst, values * sizeof(float), what + " (output)");
    big_enough(y, values / 32 * 36, what + " (q8_1 output)");
    usable();
    const int rc = kernels::launch_rms_norm_q8_1(static_cast<const float*>(x.get()), static_cast<const float*>(w.get()),
                                                 static_cast<float*>(dst.get()), y.get(), k, rows, eps, stream_);
    check(static_cast<hipError_t>(rc), "launch_rms_norm_q8_1", what);
    sync(what);
  }

  bool has_kernel(GgmlType type, int ncols, Config c) const override {
    if (ncols < 1 || ncols > kMaxNcols || c.nwarps < 1 || c.rows_per_block < 1) return false;
    if (c.nwarps * info_.warp_size > kMaxThreadsPerBlock) return false;
    if (built_in(type, ncols, c)) return true;
    // Otherwise compiled at run time, when the compiler is there.
    const bool warp_ok = kToolchain == KernelToolchain::Cuda ? info_.warp_size == 32
                                                             : info_.warp_size == 32 || info_.warp_size == 64;
    return warp_ok && rtc_compiler_ && kernel_type_supported(type) && in_grid(c) &&
           mmvq::launchable(ncols, c.nwarps, c.rows_per_block, info_.warp_size);
  }

  void prepare_kernels(std::span<const KernelPair> pairs, const CompileProgressFn& progress,
                       const std::atomic<bool>* cancel) override {
    std::vector<KernelPair> needed;
    for (const KernelPair& p : pairs)
      if ((p.group_b || !built_in_pair(p)) && kernel_type_supported(p.type) &&
          std::find(needed.begin(), needed.end(), p) == needed.end())
        needed.push_back(p);
    if (needed.empty()) return;
    const auto paths = cache().ensure(needed, progress, cancel);
    std::lock_guard lock(rtc_mutex_);
    for (size_t i = 0; i < needed.size(); ++i) {
      const uint32_t a = static_cast<uint32_t>(needed[i].type);
      if (needed[i].group_b)
        rtc_group_[{a, static_cast<uint32_t>(*needed[i].group_b), needed[i].ncols}] = &load_rtc_group(paths[i]);
      else
        rtc_[{a, needed[i].ncols}] = &load_rtc(paths[i]);
    }
  }

  bool has_group_kernel(const GemvGroupProblem& p, Config c) const override {
    if (!rtc_compiler_ || !mmvq::group_config_in_grid(c.nwarps, c.rows_per_block) || p.ncols < 1 ||
        p.ncols > mmvq::kGroupMaxNcols || p.members.size() < 2 || p.members.size() > size_t(mmvq::kGroupMaxMembers))
      return false;
    const bool warp_ok = kToolchain == KernelToolchain::Cuda ? info_.warp_size == 32
                                                             : info_.warp_size == 32 || info_.warp_size == 64;
    std::vector<GgmlType> types;
    for (const GroupMember& m : p.members) {
      if (!kernel_type_supported(m.type)) return false;
      if (std::find(types.begin(), types.end(), m.type) == types.end()) types.push_back(m.type);
    }
    return warp_ok && types.size() <= 2;
  }

  void gemv_group(const GemvGroupProblem& p, Config c, std::span<const DeviceBuffer* const> weights,
                  const DeviceBuffer& y_q8_1, std::span<DeviceBuffer* const> dst) override {
    time_or_run_group(p, c, weights, y_q8_1, dst, 0, 1);
  }

  std::vector<double> time_gemv_group(const GemvGroupProblem& p, Config c, std::span<const DeviceBuffer* const> weight_copies,
                                      const DeviceBuffer& y_q8_1, std::span<DeviceBuffer* const> dst, int samples,
                                      int per_sample) override {
    if (samples < 1 || per_sample < 1) fail(ErrorKind::Internal, "timing a group needs at least one launch");
    return time_or_run_group(p, c, weight_copies, y_q8_1, dst, samples, per_sample);
  }

  void gemv(const GemvProblem& p, Config c, const DeviceBuffer& weights, const DeviceBuffer& y_q8_1,
            DeviceBuffer& dst) override {
    const std::string what = describe(p, c);
    kernels::MmvqLaunch launch = prepare(p, c, y_q8_1, dst, what);
    big_enough(weights, weight_bytes(p), what + " (weights)");
    usable();
    launch.weights = weights.get();
    launched(launcher_for(launch)(launch), what);
    sync(what);
  }

  std::vector<double> time_gemv(const GemvProblem& p, Config c, std::span<const DeviceBuffer* const> weight_copies,
                                const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int count) override {
    return time_gemv_grouped(p, c, weight_copies, y_q8_1, dst, count, 1);
  }

  std::vector<double> time_gemv_grouped(const GemvProblem& p, Config c,
                                        std::span<const DeviceBuffer* const> weight_copies,
                                        const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int groups,
                                        int per_group) override {
    const std::string what = describe(p, c);
    kernels::MmvqLaunch launch = prepare(p, c, y_q8_1, dst, what);
    if (groups < 1 || per_group < 1 || weight_copies.empty())
      fail(ErrorKind::Internal, what + ": timing needs at least one launch and one weight copy");
    for (const DeviceBuffer* w : weight_copies) {
      if (!w) fail(ErrorKind::Internal, what + ": a weight copy is missing");
      big_enough(*w, weight_bytes(p), what + " (weight copy)");
    }
    usable();
    const Launcher launch_with = launcher_for(launch);
    // A ring of event pairs: group i uses slot i % ring; the host waits for group i - window
    // before queueing group i, so a hung kernel is caught within the watchdog (and a full launch
    // queue can never block the host indefinitely).
    const int window = std::max(1, kTimingWindow / per_group), ring = 2 * window;
    while (timing_events_.size() < size_t(2 * ring)) {
      hipEvent_t e = nullptr;
      check(hipEventCreate(&e), "hipEventCreate");
      timing_events_.push_back(e);
    }
    std::vector<double> us(size_t(groups), 0.0);
    auto collect = [&](int i) {
      hipEvent_t start = timing_events_[size_t(2 * (i % ring))], stop = timing_events_[size_t(2 * (i % ring) + 1)];
      wait(stop, what + ", timed launch " + std::to_string(i * per_group));
      float ms = 0;
      check(hipEventElapsedTime(&ms, start, stop), "hipEventElapsedTime", what);
      us[size_t(i)] = double(ms) * 1000.0 / per_group;
    };
    size_t launches = 0;
    for (int i = 0; i < groups; ++i) {
      if (i >= window) collect(i - window);
      check(hipEventRecord(timing_events_[size_t(2 * (i % ring))], stream_), "hipEventRecord", what);
      for (int j = 0; j < per_group; ++j) {
        launch.weights = weight_copies[launches++ % weight_copies.size()]->get();
        launched(launch_with(launch), what);
      }
      check(hipEventRecord(timing_events_[size_t(2 * (i % ring) + 1)], stream_), "hipEventRecord", what);
    }
    for (int i = std::max(0, groups - window); i < groups; ++i) collect(i);
    return us;
  }

  double copy_bandwidth_gbs(size_t bytes) override {
    if (bytes < 4096) fail(ErrorKind::BadInput, "copy bandwidth needs at least 4096 bytes, got " + std::to_string(bytes));
    DeviceBuffer src = alloc(bytes), dst = alloc(bytes);
    fill(src, 0x5A);
    hipEvent_t start = nullptr, stop = nullptr;
    check(hipEventCreate(&start), "hipEventCreate");
    struct Events {  // destroyed on every path out
      hipEvent_t& a;
      hipEvent_t& b;
      ~Events() {
        if (a) (void)hipEventDestroy(a);
        if (b) (void)hipEventDestroy(b);
      }
    } guard{start, stop};
    check(hipEventCreate(&stop), "hipEventCreate");
    const std::string what = "device-to-device copy of " + std::to_string(bytes) + " bytes";
    std::vector<double> gbs;
    for (int i = 0; i < kBandwidthCopies + 2; ++i) {  // the first two warm up
      check(hipEventRecord(start, stream_), "hipEventRecord", what);
      check(hipMemcpyAsync(dst.get(), src.get(), bytes, hipMemcpyDeviceToDevice, stream_), "hipMemcpyAsync", what);
      check(hipEventRecord(stop, stream_), "hipEventRecord", what);
      wait(stop, what);
      float ms = 0;
      check(hipEventElapsedTime(&ms, start, stop), "hipEventElapsedTime", what);
      if (i >= 2 && ms > 0) gbs.push_back(2.0 * double(bytes) / (double(ms) * 1e-3) / 1e9);
    }
    if (gbs.empty()) fail(ErrorKind::GpuFault, what + ": the device reported zero elapsed time on " + where());
    std::sort(gbs.begin(), gbs.end());
    const size_t m = gbs.size() / 2;
    return gbs.size() % 2 ? gbs[m] : 0.5 * (gbs[m - 1] + gbs[m]);
  }

  std::optional<KernelAttributes> kernel_attributes(GgmlType type, int ncols, Config c) override {
    if (!has_kernel(type, ncols, c)) return std::nullopt;
    const void* f =
        built_in(type, ncols, c)
            ? kernels::mmvq_function(static_cast<uint32_t>(type), ncols, c.nwarps, c.rows_per_block, info_.warp_size)
            : rtc(static_cast<uint32_t>(type), ncols).function(c.nwarps, c.rows_per_block, info_.warp_size);
    if (!f) return std::nullopt;
    usable();
    const std::string what = std::string(type_name(type)) + " ncols=" + std::to_string(ncols) + " config (" +
                             config_words(c) + ")";
    hipFuncAttributes a{};
    check(hipFuncGetAttributes(&a, f), "hipFuncGetAttributes", what);
    int blocks = 0;
    check(hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, c.nwarps * info_.warp_size, 0),
          "hipOccupancyMaxActiveBlocksPerMultiprocessor", what);
    KernelAttributes k;
    k.registers = a.numRegs;
    k.shared_bytes = static_cast<int>(a.sharedSizeBytes);
    k.local_bytes = static_cast<int>(a.localSizeBytes);
    k.max_threads_per_block = a.maxThreadsPerBlock;
    k.blocks_per_cu = blocks;
    return k;
  }

  bool run_faulting_kernel() override {
    usable();
    const std::string what = "the test-only faulting kernel";
    check(static_cast<hipError_t>(kernels::launch_faulting_kernel(stream_)), "launch_faulting_kernel", what);
    sync(what);  // throws: the fault surfaces here, or the watchdog fires
    return true;
  }

  Telemetry telemetry() override {
    if (!telemetry_tried_) {
      telemetry_tried_ = true;
#if defined(TEMPER_GPU_CUDA)
      sensors_ = gpu::open_nvml_telemetry(info_.pci_bus_id);
#elif defined(TEMPER_WITH_RSMI)
      sensors_ = gpu::open_rsmi_telemetry(pci_.domain, pci_.bus, pci_.device, 0);
#endif
    }
    return sensors_ ? sensors_->read() : Telemetry{};
  }

 protected:
  void release(void* ptr) noexcept override {
    if (hung_) return;  // hipFree would wait for the hung kernel
    (void)hipSetDevice(info_.index);
    (void)hipFree(ptr);
  }

 private:
  std::string where() const { return "device " + std::to_string(info_.index) + " (" + info_.name + ", " + info_.arch + ")"; }

  void activate() { check(hipSetDevice(info_.index), "hipSetDevice"); }

  bool built_in(GgmlType type, int ncols, Config c) const {
    return kernels::mmvq_instantiated(static_cast<uint32_t>(type), ncols, c.nwarps, c.rows_per_block, info_.warp_size);
  }
  // Whether the build holds (type, ncols) at all (its default config is always in the grid).
  bool built_in_pair(KernelPair p) const {
    for (int w : mmvq::kGridNwarps)
      for (int r : mmvq::kGridRowsPerBlock)
        if (built_in(p.type, p.ncols, {w, r})) return true;
    return false;
  }

  KernelCache& cache() {
    std::lock_guard lock(rtc_mutex_);
    if (!cache_) cache_ = std::make_unique<KernelCache>(kToolchain, info_.arch, KernelArtifact::SharedLibrary);
    return *cache_;
  }

  // The run-time kernels of (type, ncols), compiled now when no prepare_kernels() did.
  const RtcKernels& rtc(uint32_t type, int ncols) {
    {
      std::lock_guard lock(rtc_mutex_);
      if (auto it = rtc_.find({type, ncols}); it != rtc_.end()) return *it->second;
    }
    const KernelPair p{static_cast<GgmlType>(type), ncols};
    prepare_kernels(std::span(&p, 1), {}, nullptr);
    std::lock_guard lock(rtc_mutex_);
    return *rtc_.at({type, ncols});
  }

  // samples 0: one launch, synchronised; else `samples` event pairs around `per_sample` launches each,
  // weights rotating per launch.
  std::vector<double> time_or_run_group(const GemvGroupProblem& p, Config c, std::span<const DeviceBuffer* const> weights,
                                        const DeviceBuffer& y_q8_1, std::span<DeviceBuffer* const> dst, int samples,
                                        int per_sample) {
    const std::string what = "group " + group_text(p) + " ncols=" + std::to_string(p.ncols) + " config (" + config_words(c) + ")";
    const std::vector<GgmlType> types = group_weight_types(p);
    if (!has_group_kernel(p, c))
      fail(ErrorKind::BadInput, "this build has no same-input group kernel for " + what + " at warp size " +
                                    std::to_string(info_.warp_size));
    const size_t members = p.members.size();
    if (weights.empty() || weights.size() % members != 0 || dst.size() != members)
      fail(ErrorKind::Internal, what + ": expected whole sets of member weights and one output per member");
    for (size_t i = 0; i < weights.size(); ++i) {
      const GroupMember& m = p.members[i % members];
      if (!weights[i]) fail(ErrorKind::Internal, what + ": a weight buffer is missing");
      big_enough(*weights[i], size_t(*row_bytes(m.type, uint64_t(p.k))) * size_t(m.n), what + " (weights)");
    }
    for (size_t m = 0; m < members; ++m)
      big_enough(*dst[m], size_t(p.ncols) * size_t(p.members[m].n) * sizeof(float), what + " (output)");
    big_enough(y_q8_1, size_t(p.ncols) * size_t(p.k / 32) * 36, what + " (q8_1 activations)");
    usable();
    const KernelPair unit{types[0], p.ncols, types.size() > 1 ? types[1] : types[0]};
    const RtcGroupKernels& kernels = rtc_group(unit);
    kernels::MmvqGroupLaunch l;
    l.type_a = static_cast<uint32_t>(types[0]);
    l.type_b = static_cast<uint32_t>(*unit.group_b);
    l.ncols = p.ncols;
    l.nwarps = c.nwarps;
    l.rows_per_block = c.rows_per_block;
    l.warp_size = info_.warp_size;
    l.variant = static_cast<int>(p.variant);
    l.count = int(members);
    for (size_t m = 0; m < members; ++m) {
      l.dst[m] = static_cast<float*>(dst[m]->get());
      l.nrows[m] = p.members[m].n;
      l.is_b[m] = p.members[m].type != types[0];
    }
    l.act_q8_1 = y_q8_1.get();
    l.k = p.k;
    l.stream = stream_;
    auto launch = [&](size_t set) {
      for (size_t m = 0; m < members; ++m) l.weights[m] = weights[set * members + m]->get();
      const int rc = kernels.launch(&l);
      if (rc == kernels::kNotInstantiated) fail(ErrorKind::BadInput, "this build has no group kernel for " + what);
      check(static_cast<hipError_t>(rc), "temper_rtc_group_launch", what);
    };
    if (samples == 0) {
      launch(0);
      sync(what);
      return {};
    }
    const size_t sets = weights.size() / members;
    while (timing_events_.size() < 2) {
      hipEvent_t e = nullptr;
      check(hipEventCreate(&e), "hipEventCreate");
      timing_events_.push_back(e);
    }
    std::vector<double> us;
    size_t launches = 0;
    for (int i = 0; i < samples; ++i) {  // the host waits for each sample: groups are timed in hundreds, not thousands
      check(hipEventRecord(timing_events_[0], stream_), "hipEventRecord", what);
      for (int j = 0; j < per_sample; ++j) launch(launches++ % sets);
      check(hipEventRecord(timing_events_[1], stream_), "hipEventRecord", what);
      wait(timing_events_[1], what + ", timed sample " + std::to_string(i));
      float ms = 0;
      check(hipEventElapsedTime(&ms, timing_events_[0], timing_events_[1]), "hipEventElapsedTime", what);
      us.push_back(double(ms) * 1000.0 / per_sample);
    }
    return us;
  }

  const RtcGroupKernels& rtc_group(const KernelPair& unit) {
    const std::tuple<uint32_t, uint32_t, int> key{static_cast<uint32_t>(unit.type), static_cast<uint32_t>(*unit.group_b),
                                                  unit.ncols};
    {
      std::lock_guard lock(rtc_mutex_);
      if (auto it = rtc_group_.find(key); it != rtc_group_.end()) return *it->second;
    }
    prepare_kernels(std::span(&unit, 1), {}, nullptr);
    std::lock_guard lock(rtc_mutex_);
    return *rtc_group_.at(key);
  }

  // The built-in dispatcher or the run-time library of the launch's (type, ncols), found once per call.
  struct Launcher {
    const RtcKernels* rtc = nullptr;
    int operator()(const kernels::MmvqLaunch& l) const { return rtc ? rtc->launch(&l) : kernels::launch_mmvq(l); }
  };
  Launcher launcher_for(const kernels::MmvqLaunch& l) {
    if (kernels::mmvq_instantiated(l.type, l.ncols, l.nwarps, l.rows_per_block, l.warp_size)) return {};
    return {&rtc(l.type, l.ncols)};
  }

  // After a kernel fault or a hang the device's context is gone: refuse work with the first cause.
  void usable() {
    if (!broken_.empty())
      fail(ErrorKind::GpuFault, where() + " is unusable after an earlier fault: " + broken_);
    activate();
  }

  void check(hipError_t e, const char* call, const std::string& what = {}) {
    if (e == hipSuccess) return;
    (void)hipGetLastError();
    fail(ErrorKind::GpuFault, call_name(call) + " failed on " + where() + (what.empty() ? "" : " for " + what) + ": " +
                                  error_text(e));
  }

  // An error found while waiting comes from a kernel: sticky, so the device is done.
  [[noreturn]] void broke(const std::string& text) {
    if (broken_.empty()) broken_ = text;
    fail(ErrorKind::GpuFault, text);
  }

  void wait(hipEvent_t event, const std::string& what) {
    hipError_t failure = hipSuccess;
    const bool finished = gpu::wait_until(
        [&] {
          const hipError_t e = hipEventQuery(event);
          if (e == hipErrorNotReady) return false;
          failure = e;
          return true;
        },
        gpu::kWatchdog);
    if (!finished) {
      hung_ = true;
      broke("watchdog: " + what + " did not finish within " + std::to_string(gpu::kWatchdog.count() / 1000) +
            " s on " + where() + "; the kernel is presumed hung");
    }
    if (failure != hipSuccess) broke(what + " failed on " + where() + ": " + error_text(failure));
  }

  void sync(const std::string& what) {
    check(hipEventRecord(done_, stream_), "hipEventRecord", what);
    wait(done_, what);
  }

  static void in_range(const DeviceBuffer& b, size_t bytes, size_t offset, const char* op) {
    if (offset > b.size() || bytes > b.size() - offset)
      fail(ErrorKind::Internal, std::string(op) + " of " + std::to_string(bytes) + " bytes at offset " +
                                    std::to_string(offset) + " overruns a buffer of " + std::to_string(b.size()) +
                                    " bytes");
  }
  static void big_enough(const DeviceBuffer& b, size_t bytes, const std::string& what) {
    if (b.size() < bytes)
      fail(ErrorKind::Internal, what + ": buffer of " + std::to_string(b.size()) + " bytes, needs " +
                                    std::to_string(bytes));
  }

  static size_t weight_bytes(const GemvProblem& p) {
    const auto row = row_bytes(p.type, uint64_t(p.k));
    return row ? size_t(*row) * size_t(p.n + mmvq::kWeightPaddingRows) : 0;  // with the spare rows
  }

  // Checks a problem against this build and the buffers; the launch without its weights.
  kernels::MmvqLaunch prepare(const GemvProblem& p, Config c, const DeviceBuffer& y_q8_1, DeviceBuffer& dst,
                              const std::string& what) {
    if (p.n < 1 || p.k < 1 || p.k % 32 != 0 || !row_bytes(p.type, uint64_t(p.k)))
      fail(ErrorKind::BadInput, what + ": k must be a positive multiple of the type's block size and n positive");
    if (!has_kernel(p.type, p.ncols, c))
      fail(ErrorKind::BadInput, "this build has no mmvq kernel for " + what + " at warp size " +
                                    std::to_string(info_.warp_size));
    big_enough(y_q8_1, size_t(p.ncols) * size_t(p.k / 32) * 36, what + " (q8_1 activations)");
    big_enough(dst, size_t(p.ncols) * size_t(p.n) * sizeof(float), what + " (output)");
    kernels::MmvqLaunch l;
    l.type = static_cast<uint32_t>(p.type);
    l.ncols = p.ncols;
    l.nwarps = c.nwarps;
    l.rows_per_block = c.rows_per_block;
    l.warp_size = info_.warp_size;
    l.variant = static_cast<int>(p.variant);
    l.act_q8_1 = y_q8_1.get();
    l.dst = static_cast<float*>(dst.get());
    l.nrows = p.n;
    l.k = p.k;
    l.stream = stream_;
    return l;
  }

  void launched(int rc, const std::string& what) {
    if (rc == kernels::kNotInstantiated)
      fail(ErrorKind::BadInput, "this build has no mmvq kernel for " + what);
    check(static_cast<hipError_t>(rc), "launch_mmvq", what);
  }

  DeviceInfo info_;
  PciAddress pci_;
  hipStream_t stream_ = nullptr;
  hipEvent_t done_ = nullptr;
  std::vector<hipEvent_t> timing_events_;  // start, stop pairs
  std::string broken_;                     // the first fault; empty while usable
  bool hung_ = false;
  bool telemetry_tried_ = false;
  std::unique_ptr<gpu::TelemetryReader> sensors_;
  const bool rtc_compiler_ = kernel_compiler(kToolchain).has_value();
  std::mutex rtc_mutex_;
  std::unique_ptr<KernelCache> cache_;
  std::map<std::pair<uint32_t, int>, const RtcKernels*> rtc_;
  std::map<std::tuple<uint32_t, uint32_t, int>, const RtcGroupKernels*> rtc_group_;  // (A, B, ncols)
};

class GpuBackend final : public Backend {
 public:
  std::string name() const override { return kApi; }

  std::vector<DeviceInfo> devices() override {
    reason_.clear();
    int count = 0;
    const hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess) {
      (void)hipGetLastError();
      reason_ = call_name("hipGetDeviceCount") + ": " + error_text(e);
      return {};
    }
    std::vector<DeviceInfo> out;
    for (int i = 0; i < count; ++i) {
      try {
        PciAddress pci;
        out.push_back(query_info(i, pci));
      } catch (const Error& err) {
        reason_ += (reason_.empty() ? "" : "; ") + std::string(err.what());
      }
    }
    if (count == 0) reason_ = call_name("hipGetDeviceCount") + ": no device";
    return out;
  }

  std::unique_ptr<Device> open(int index) override {
    int count = 0;
    const hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess || index < 0 || index >= count)
      fail(ErrorKind::NoDevice, std::string(kApi) + " device " + std::to_string(index) + " does not exist (" +
                                    std::to_string(e == hipSuccess ? count : 0) + " found)");
    PciAddress pci;
    DeviceInfo info = query_info(index, pci);
    return std::make_unique<GpuDevice>(std::move(info), pci);
  }

  std::string unavailable_reason() const override { return reason_; }

 private:
  std::string reason_;
};

}  // namespace

#if defined(TEMPER_GPU_CUDA)
std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<GpuBackend>(); }
#else
std::unique_ptr<Backend> make_hip_backend() { return std::make_unique<GpuBackend>(); }
#endif

}  // namespace temper
