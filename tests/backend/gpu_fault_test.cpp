// On a real GPU (ctest label `gpu`), in its own process because a fault ends the device context:
// the test-only out-of-bounds kernel must end in Error(GpuFault) with a message, never a hang or a
// crash, and the device must refuse later work with the first cause.
#include <gtest/gtest.h>

#include "temper/error.h"
#include "temper/gpu_backend.h"

namespace temper {
namespace {

TEST(GpuFault, FaultingKernelEndsCleanly) {
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  if (list.devices.empty()) GTEST_SKIP() << list.why_none;
  auto device = gpu::open_device(list, 0);
  std::string first;
  try {
    if (!device->run_faulting_kernel()) GTEST_SKIP() << "no faulting kernel in this build";
    FAIL() << "the out-of-bounds kernel reported no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
    first = e.what();
    EXPECT_NE(first.find("faulting kernel"), std::string::npos) << first;
  }
  try {
    device->alloc(4096);
    FAIL() << "the device accepted work after a fault";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
    EXPECT_NE(std::string(e.what()).find("unusable after an earlier fault"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace temper
