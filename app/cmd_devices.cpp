// `temper devices`: the GPUs this build can use, with their identity and spec-database match.
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"
#include "temper/gpus.h"

namespace temper::cli {
namespace cmd_devices {  // own namespace: the commands are compiled together (unity build)
namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

int run_devices(bool json) {
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  if (list.devices.empty()) fail(ErrorKind::NoDevice, list.why_none);

  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < list.devices.size(); ++i) {
    const DeviceInfo& d = list.devices[i].info;
    const GpuSpec* spec = match_device(d);
    Telemetry t;
    std::string telemetry_error;
    try {
      t = list.devices[i].backend->open(d.index)->telemetry();
    } catch (const Error& e) {
      telemetry_error = e.what();
    }
    if (json) {
      nlohmann::json j = gpu::device_json(d);
      j["number"] = i;
      j["spec"] = spec ? nlohmann::json(spec->id) : nlohmann::json(nullptr);
      j["telemetry"] = gpu::telemetry_json(t);
      if (!telemetry_error.empty()) j["telemetry_error"] = telemetry_error;
      out.push_back(std::move(j));
      continue;
    }
    std::printf("device %zu: %s\n", i, d.name.c_str());
    std::printf("  api %s, arch %s, %d %s, warp size %d\n", d.api.c_str(), d.arch.c_str(), d.compute_units,
                d.api == "cuda" ? "SMs" : "CUs", d.warp_size);
    std::printf("  memory %s MiB, L2 %s MiB, bus %d bits, clocks %d MHz core / %d MHz memory\n",
                mib(d.memory_bytes).c_str(), mib(d.l2_bytes).c_str(), d.memory_bus_bits, d.clock_mhz,
                d.memory_clock_mhz);
    std::printf("  per %s: %d registers, %d B shared, %d threads; per block: %d registers, %d B shared\n",
                d.api == "cuda" ? "SM" : "CU", d.regs_per_cu, d.shared_per_cu, d.max_threads_per_cu, d.regs_per_block,
                d.shared_per_block);
    std::printf("  driver %s, runtime %s, PCI %s\n", d.driver_version.c_str(), d.runtime_version.c_str(),
                d.pci_bus_id.c_str());
    std::printf("  spec database: %s\n", spec ? (spec->id + " (" + spec->names.front() + ")").c_str() : "not in database");
    const std::string tj = gpu::telemetry_json(t).dump();
    std::printf("  telemetry: %s\n", tj == "{}" ? "not available" : tj.c_str());
  }
  if (json) std::cout << nlohmann::json{{"devices", out}}.dump(2) << "\n";
  return 0;
}

const Registrar reg{{"devices", "list the GPUs this build can use",
                     "Lists every HIP and CUDA device this build can use, numbered as --device N counts them:\n"
                     "name, arch, CU/SM count, memory, L2, clocks, driver and runtime versions, the matching\n"
                     "entry of the GPU spec database and live telemetry where available (rocm-smi, NVML).\n"
                     "Exit code 3 when there is none.",
                     [](CLI::App& app) {
                       auto json = std::make_shared<bool>(false);
                       add_json(app, *json);
                       return [json] { return run_devices(*json); };
                     }}};

}  // namespace
}  // namespace cmd_devices
}  // namespace temper::cli
