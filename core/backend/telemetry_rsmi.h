#pragma once
// AMD telemetry through rocm-smi (librocm_smi64), built only when the library was found.
#include <memory>

#include "temper/gpu_backend.h"

namespace temper::gpu {

// The rocm-smi device with this PCI address; nullptr when rocm-smi does not initialise or does not
// list it. The address comes from the HIP runtime, so HIP_VISIBLE_DEVICES does not confuse them.
std::unique_ptr<TelemetryReader> open_rsmi_telemetry(int pci_domain, int pci_bus, int pci_device, int pci_function);

}  // namespace temper::gpu
