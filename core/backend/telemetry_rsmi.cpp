#include "telemetry_rsmi.h"

#include <rocm_smi/rocm_smi.h>

namespace temper::gpu {
namespace {

class RsmiTelemetry final : public TelemetryReader {
 public:
  explicit RsmiTelemetry(uint32_t index) : index_(index) {}
  ~RsmiTelemetry() override { rsmi_shut_down(); }

  Telemetry read() override {
    Telemetry t;
    rsmi_frequencies_t f{};
    if (rsmi_dev_gpu_clk_freq_get(index_, RSMI_CLK_TYPE_SYS, &f) == RSMI_STATUS_SUCCESS && f.current < f.num_supported)
      t.sm_clock_mhz = static_cast<double>(f.frequency[f.current]) / 1e6;
    if (rsmi_dev_gpu_clk_freq_get(index_, RSMI_CLK_TYPE_MEM, &f) == RSMI_STATUS_SUCCESS && f.current < f.num_supported)
      t.memory_clock_mhz = static_cast<double>(f.frequency[f.current]) / 1e6;
    uint64_t microwatts = 0;
    if (rsmi_dev_power_ave_get(index_, 0, &microwatts) == RSMI_STATUS_SUCCESS) t.power_w = static_cast<double>(microwatts) / 1e6;
    int64_t millicelsius = 0;
    if (rsmi_dev_temp_metric_get(index_, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &millicelsius) == RSMI_STATUS_SUCCESS)
      t.temperature_c = static_cast<double>(millicelsius) / 1000.0;
    uint32_t busy = 0;
    if (rsmi_dev_busy_percent_get(index_, &busy) == RSMI_STATUS_SUCCESS) t.busy_percent = busy;
    return t;
  }

 private:
  uint32_t index_;
};

}  // namespace

std::unique_ptr<TelemetryReader> open_rsmi_telemetry(int pci_domain, int pci_bus, int pci_device, int pci_function) {
  if (rsmi_init(0) != RSMI_STATUS_SUCCESS) return nullptr;
  // rocm-smi packs the address as domain[63:32] bus[15:8] device[7:3] function[2:0].
  const uint64_t wanted = (uint64_t(uint32_t(pci_domain)) << 32) | (uint64_t(pci_bus & 0xff) << 8) |
                          (uint64_t(pci_device & 0x1f) << 3) | uint64_t(pci_function & 0x7);
  uint32_t count = 0;
  if (rsmi_num_monitor_devices(&count) == RSMI_STATUS_SUCCESS) {
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t bdf = 0;
      if (rsmi_dev_pci_id_get(i, &bdf) == RSMI_STATUS_SUCCESS && (bdf & 0xffffffff0000ffffULL) == wanted)
        return std::make_unique<RsmiTelemetry>(i);
    }
  }
  rsmi_shut_down();
  return nullptr;
}

}  // namespace temper::gpu
