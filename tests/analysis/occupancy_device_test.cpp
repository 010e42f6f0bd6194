// Device test (label gpu): our occupancy calculator against the runtime's own
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor / hipOccupancy..., via
// Device::kernel_attributes().blocks_per_cu) for every kernel instantiation of this build.
// NVIDIA must agree exactly; on AMD the comparison is printed (HIP's calculator uses its own
// simplifications). Skipped when there is no device.
#include <gtest/gtest.h>

#include <cstdio>

#include "temper/backend.h"
#include "temper/error.h"
#include "temper/gpus.h"
#include "temper/mmvq_traits.h"
#include "temper/occupancy.h"

namespace temper {
namespace {

TEST(OccupancyDevice, AgreesWithTheRuntimeCalculator) {
  int devices = 0;
  for (auto& backend : gpu_backends()) {
    for (const DeviceInfo& info : backend->devices()) {
      ++devices;
      auto device = backend->open(info.index);
      const GpuSpec spec = spec_for_device(device->info());
      const bool nvidia = spec.is_nvidia();
      std::printf("%s %s (%s, spec %s)\n", backend->name().c_str(), info.name.c_str(), info.arch.c_str(), spec.id.c_str());
      std::printf("%-8s %5s %6s %4s %5s %7s %8s %8s %s\n", "type", "ncols", "nwarps", "rpb", "regs", "shared", "ours",
                  "runtime", "limiter");
      int compared = 0, agreed = 0;
      for (const TypeInfo& t : all_types()) {
        if (!t.quantized) continue;
        for (int ncols = 1; ncols <= 8; ++ncols)
          for (int nwarps : mmvq::kGridNwarps)
            for (int rpb : mmvq::kGridRowsPerBlock) {
              const Config config{nwarps, rpb};
              if (!device->has_kernel(t.type, ncols, config)) continue;
              const auto attr = device->kernel_attributes(t.type, ncols, config);
              if (!attr) continue;
              KernelResources k;
              k.vgprs = attr->registers;
              k.lds_bytes = attr->shared_bytes;
              k.wave_size = device->info().warp_size;
              const Occupancy o = compute_occupancy(spec, k, nwarps * k.wave_size);
              ++compared;
              agreed += o.blocks_per_cu == attr->blocks_per_cu;
              std::printf("%-8s %5d %6d %4d %5d %7d %8d %8d %s%s\n", std::string(t.name).c_str(), ncols, nwarps, rpb,
                          attr->registers, attr->shared_bytes, o.blocks_per_cu, attr->blocks_per_cu,
                          std::string(limiter_name(o.limiter)).c_str(), o.blocks_per_cu == attr->blocks_per_cu ? "" : "  DIFFERS");
              if (nvidia) {
                EXPECT_EQ(o.blocks_per_cu, attr->blocks_per_cu)
                    << t.name << " ncols " << ncols << " config " << nwarps << "x" << rpb << ": " << attr->registers
                    << " regs, " << attr->shared_bytes << " B shared";
              }
            }
      }
      std::printf("%d instantiations compared, %d agree (blocks per %s)\n", compared, agreed, nvidia ? "SM" : "CU");
      RecordProperty("compared_" + std::to_string(devices), compared);
      RecordProperty("agreed_" + std::to_string(devices), agreed);
      EXPECT_GT(compared, 0) << "the device reports no kernel attributes";
    }
  }
  if (devices == 0) GTEST_SKIP() << "no HIP or CUDA device: nothing to compare";
}

}  // namespace
}  // namespace temper
