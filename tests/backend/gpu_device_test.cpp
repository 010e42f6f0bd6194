// On a real GPU (ctest label `gpu`): identity, memory, timing, the runtime's kernel attributes and the
// full verification of every instantiation against the CPU reference. Skips without a device.
#include <gtest/gtest.h>

#include <cstdio>

#include "temper/device_bench.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"
#include "temper/verify.h"

namespace temper {
namespace {

class GpuDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    list_ = gpu::list_devices(gpu_backends());
    if (list_.devices.empty()) GTEST_SKIP() << list_.why_none;
    device_ = gpu::open_device(list_, 0);
  }
  gpu::DeviceList list_;
  std::unique_ptr<Device> device_;
};

TEST_F(GpuDevice, Identity) {
  const DeviceInfo& d = device_->info();
  EXPECT_FALSE(d.name.empty());
  EXPECT_TRUE(d.arch.rfind("sm_", 0) == 0 || d.arch.rfind("gfx", 0) == 0) << d.arch;
  EXPECT_GT(d.compute_units, 0);
  EXPECT_TRUE(d.warp_size == 32 || d.warp_size == 64);
  EXPECT_GT(d.memory_bytes, 1ull << 30);
  EXPECT_NE(d.runtime_version, "unknown");
  std::printf("%s\n", gpu::device_json(d).dump().c_str());
}

TEST_F(GpuDevice, OutOfMemoryIsReportedAndRecoverable) {
  try {
    device_->alloc(size_t(device_->info().memory_bytes) * 4);
    FAIL() << "allocating 4x the device memory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
  }
  DeviceBuffer b = device_->alloc(1 << 20);  // the device still works
  device_->fill(b, 0x11);
  uint32_t v = 0;
  device_->download(&v, b, 4, 4096);
  EXPECT_EQ(v, 0x11111111u);
}

TEST_F(GpuDevice, CopyBandwidthIsPlausible) {
  const double gbs = device_->copy_bandwidth_gbs(64 << 20);
  EXPECT_GT(gbs, 10.0);
  EXPECT_LT(gbs, 50'000.0);
}

TEST_F(GpuDevice, KernelAttributesAndTiming) {
  const auto configs = instantiated_configs(*device_, GgmlType::Q4_0, 1);
  if (configs.empty()) GTEST_SKIP() << "this build has no q4_0 kernel";
  for (Config c : configs) {
    const auto a = device_->kernel_attributes(GgmlType::Q4_0, 1, c);
    ASSERT_TRUE(a.has_value());
    EXPECT_GT(a->registers, 0);
    EXPECT_GE(a->max_threads_per_block, c.nwarps * device_->info().warp_size);
    EXPECT_GE(a->blocks_per_cu, 1);
  }
  GemvBenchOptions o;
  o.count = 50;
  GemvBench bench(*device_, {{GgmlType::Q4_0, 4096, 4096}, 1}, o);
  const ConfigTiming t = bench.run(configs.front());
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_EQ(t.us.n, 50);
  EXPECT_GT(t.us.median, 0.5);
  EXPECT_LT(t.us.median, 10'000.0);
}

TEST_F(GpuDevice, EveryInstantiationMatchesTheCpuReference) {
  const VerifyReport r = run_verification(*device_, VerifyOptions{});
  std::printf("%s", format_report(r).c_str());
  EXPECT_FALSE(r.cases.empty());
  EXPECT_TRUE(r.passed());
}

}  // namespace
}  // namespace temper
