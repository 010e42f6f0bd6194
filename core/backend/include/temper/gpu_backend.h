#pragma once
// The parts of the GPU backend (core/backend/gpu_backend.cpp, compiled once for HIP and once for
// CUDA) that need no GPU: identity strings, the watchdog's bounded wait and NVML telemetry. They
// live in temper_core so they are tested on any machine.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"

namespace temper::gpu {

// How long a synchronisation may wait for the device before the backend calls the kernel hung.
inline constexpr std::chrono::milliseconds kWatchdog{10'000};

// HIP's gcnArchName without its feature suffixes: "gfx90a:sramecc+:xnack-" → "gfx90a".
std::string clean_gcn_arch(std::string_view gcn_arch_name);
// CUDA compute capability as an arch string: (9, 0) → "sm_90", (12, 1) → "sm_121".
std::string cuda_arch(int major, int minor);
// The runtimes' integer versions as text. CUDA: 1000·major + 10·minor (13000 → "13.0").
// HIP: 10^7·major + 10^5·minor + patch (50221153 → "5.2.21153"). 0 or negative → "unknown".
std::string format_version(std::string_view api, int version);

// The watchdog: polls `done` (which throws on a device error) until it returns true, sleeping a
// little longer between polls as time passes. False when `timeout` runs out first.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// A sensor source for one device. Absent sensors stay empty in the Telemetry.
class TelemetryReader {
 public:
  virtual ~TelemetryReader() = default;
  virtual Telemetry read() = 0;
};

// NVIDIA's NVML, loaded with dlopen at run time so builds and machines without it still work.
// nullptr when the library cannot be loaded, does not initialise or does not know the device.
std::unique_ptr<TelemetryReader> open_nvml_telemetry(const std::string& pci_bus_id,
                                                     const char* library = "libnvidia-ml.so.1");

// Every device of some backends, numbered in order: what the CLI's `--device N` counts.
struct DeviceChoice {
  Backend* backend = nullptr;
  DeviceInfo info;  // info.index is the index within its backend
};
struct DeviceList {
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<DeviceChoice> devices;
  std::string why_none;  // when devices is empty: "no HIP or CUDA device found (...why...)"
};
DeviceList list_devices(std::vector<std::unique_ptr<Backend>> backends);
// Device `number` of the list; Error(NoDevice) with why_none, or naming the valid range.
std::unique_ptr<Device> open_device(DeviceList& list, int number);
// `--device N` (default 0) from a command's arguments, as a number; Error(BadInput) otherwise.
int parse_device_number(const std::string& text);

// JSON forms shared by `temper devices`, `verify` and `bandwidth` (same keys as a session's).
nlohmann::json device_json(const DeviceInfo& d);
nlohmann::json telemetry_json(const Telemetry& t);

}  // namespace temper::gpu
