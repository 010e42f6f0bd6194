// GPU-backend helpers that need no GPU (see temper/gpu_backend.h).
#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "temper/error.h"
#include "temper/gpu_backend.h"

namespace temper::gpu {

std::string clean_gcn_arch(std::string_view gcn_arch_name) {
  const auto colon = gcn_arch_name.find(':');
  std::string_view arch = gcn_arch_name.substr(0, colon);
  while (!arch.empty() && (arch.back() == ' ' || arch.back() == '\0')) arch.remove_suffix(1);
  return std::string(arch);
}

std::string cuda_arch(int major, int minor) { return "sm_" + std::to_string(major) + std::to_string(minor); }

std::string format_version(std::string_view api, int version) {
  if (version <= 0) return "unknown";
  if (api == "cuda") return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  return std::to_string(version / 10'000'000) + "." + std::to_string(version % 10'000'000 / 100'000) + "." +
         std::to_string(version % 100'000);
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + timeout;
  // Spin briefly (kernels of a few microseconds), then back off to at most 1 ms between polls.
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    if (done()) return true;
    const auto now = clock::now();
    if (now >= deadline) return false;
    if (now - start > std::chrono::microseconds(200)) pause = std::min(std::max(pause * 2, std::chrono::microseconds(10)), std::chrono::microseconds(1000));
    if (pause.count() == 0)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(pause);
  }
}

namespace {

// NVML's C interface, declared from its documentation: every call returns 0 on success.
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned int gpu, memory;
};
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2, kNvmlTemperatureGpu = 0;

class NvmlTelemetry final : public TelemetryReader {
 public:
  static std::unique_ptr<NvmlTelemetry> open(const std::string& pci_bus_id, const char* library) {
    void* lib = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    std::unique_ptr<NvmlTelemetry> t(new NvmlTelemetry(lib));
    if (!t->load() || t->init_() != 0) return nullptr;
    t->initialised_ = true;
    if (t->by_pci_(pci_bus_id.c_str(), &t->device_) != 0) return nullptr;
    return t;
  }

  ~NvmlTelemetry() override {
    if (initialised_ && shutdown_) shutdown_();
    ::dlclose(lib_);
  }

  Telemetry read() override {
    Telemetry t;
    unsigned int v = 0;
    if (clock_ && clock_(device_, kNvmlClockSm, &v) == 0) t.sm_clock_mhz = v;
    if (clock_ && clock_(device_, kNvmlClockMem, &v) == 0) t.memory_clock_mhz = v;
    if (power_ && power_(device_, &v) == 0) t.power_w = v / 1000.0;
    if (temperature_ && temperature_(device_, kNvmlTemperatureGpu, &v) == 0) t.temperature_c = v;
    NvmlUtilization u{};
    if (utilization_ && utilization_(device_, &u) == 0) t.busy_percent = u.gpu;
    return t;
  }

 private:
  explicit NvmlTelemetry(void* lib) : lib_(lib) {}

  template <typename F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(lib_, name));
    return f != nullptr;
  }
  bool load() {
    // Sensors are optional one by one; init and the device look-up are not.
    sym(shutdown_, "nvmlShutdown");
    sym(clock_, "nvmlDeviceGetClockInfo");
    sym(power_, "nvmlDeviceGetPowerUsage");
    sym(temperature_, "nvmlDeviceGetTemperature");
    sym(utilization_, "nvmlDeviceGetUtilizationRates");
    return sym(init_, "nvmlInit_v2") && sym(by_pci_, "nvmlDeviceGetHandleByPciBusId_v2");
  }

  void* lib_;
  bool initialised_ = false;
  NvmlDevice device_ = nullptr;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*by_pci_)(const char*, NvmlDevice*) = nullptr;
  int (*clock_)(NvmlDevice, int, unsigned int*) = nullptr;
  int (*power_)(NvmlDevice, unsigned int*) = nullptr;
  int (*temperature_)(NvmlDevice, int, unsigned int*) = nullptr;
  int (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
};

}  // namespace

std::unique_ptr<TelemetryReader> open_nvml_telemetry(const std::string& pci_bus_id, const char* library) {
  return NvmlTelemetry::open(pci_bus_id, library);
}

DeviceList list_devices(std::vector<std::unique_ptr<Backend>> backends) {
  DeviceList list;
  list.backends = std::move(backends);
  if (list.backends.empty()) {
    list.why_none = "no HIP or CUDA device found (this build has neither backend compiled in)";
    return list;
  }
  std::string reasons;
  for (auto& b : list.backends) {
    for (auto& info : b->devices()) list.devices.push_back({b.get(), std::move(info)});
    if (const std::string why = b->unavailable_reason(); !why.empty())
      reasons += (reasons.empty() ? "" : "; ") + b->name() + ": " + why;
  }
  if (list.devices.empty()) list.why_none = "no HIP or CUDA device found" + (reasons.empty() ? "" : " (" + reasons + ")");
  return list;
}

std::unique_ptr<Device> open_device(DeviceList& list, int number) {
  if (list.devices.empty()) fail(ErrorKind::NoDevice, list.why_none);
  if (number < 0 || size_t(number) >= list.devices.size())
    fail(ErrorKind::NoDevice, "no device " + std::to_string(number) + ": this machine has devices 0.." +
                                  std::to_string(list.devices.size() - 1));
  const DeviceChoice& c = list.devices[size_t(number)];
  return c.backend->open(c.info.index);
}

int parse_device_number(const std::string& text) {
  int n = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0)
    fail(ErrorKind::BadInput, "--device expects a device number (0, 1, ...), got '" + text + "'");
  return n;
}

nlohmann::json device_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"api", d.api},
          {"name", d.name},
          {"arch", d.arch},
          {"compute_units", d.compute_units},
          {"warp_size", d.warp_size},
          {"memory_bytes", d.memory_bytes},
          {"l2_bytes", d.l2_bytes},
          {"clock_mhz", d.clock_mhz},
          {"memory_clock_mhz", d.memory_clock_mhz},
          {"memory_bus_bits", d.memory_bus_bits},
          {"shared_per_block", d.shared_per_block},
          {"shared_per_cu", d.shared_per_cu},
          {"regs_per_block", d.regs_per_block},
          {"regs_per_cu", d.regs_per_cu},
          {"max_threads_per_cu", d.max_threads_per_cu},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version},
          {"pci_bus_id", d.pci_bus_id}};
}

nlohmann::json telemetry_json(const Telemetry& t) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
  };
  put("sm_clock_mhz", t.sm_clock_mhz);
  put("memory_clock_mhz", t.memory_clock_mhz);
  put("power_w", t.power_w);
  put("temperature_c", t.temperature_c);
  put("busy_percent", t.busy_percent);
  return j;
}

}  // namespace temper::gpu
