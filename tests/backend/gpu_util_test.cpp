#include <gtest/gtest.h>

#include <chrono>

#include "host_device.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"

namespace temper {
namespace {

using namespace std::chrono_literals;

TEST(Identity, ArchStrings) {
  EXPECT_EQ(gpu::clean_gcn_arch("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(gpu::clean_gcn_arch("gfx1100"), "gfx1100");
  EXPECT_EQ(gpu::clean_gcn_arch(std::string_view("gfx942\0\0", 8)), "gfx942");
  EXPECT_EQ(gpu::cuda_arch(9, 0), "sm_90");
  EXPECT_EQ(gpu::cuda_arch(12, 1), "sm_121");
}

TEST(Identity, Versions) {
  EXPECT_EQ(gpu::format_version("cuda", 13000), "13.0");
  EXPECT_EQ(gpu::format_version("cuda", 12080), "12.8");
  EXPECT_EQ(gpu::format_version("hip", 50221153), "5.2.21153");
  EXPECT_EQ(gpu::format_version("hip", 60342134), "6.3.42134");
  EXPECT_EQ(gpu::format_version("hip", 0), "unknown");
  EXPECT_EQ(gpu::format_version("cuda", -1), "unknown");
}

TEST(Watchdog, ReturnsWhenDone) {
  int polls = 0;
  EXPECT_TRUE(gpu::wait_until([&] { return ++polls == 5; }, 1s));
  EXPECT_EQ(polls, 5);
}

TEST(Watchdog, GivesUpAfterTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(gpu::wait_until([] { return false; }, 50ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 50ms);
  EXPECT_LT(took, 1s);  // backs off to at most 1 ms between polls: bounded overshoot
}

TEST(Watchdog, PassesDeviceErrorsThrough) {
  EXPECT_THROW(gpu::wait_until([]() -> bool { fail(ErrorKind::GpuFault, "kernel fault"); }, 1s), Error);
}

TEST(Nvml, AbsentLibraryIsFine) {
  EXPECT_EQ(gpu::open_nvml_telemetry("0000:00:00.0", "libtemper-no-such-nvml.so"), nullptr);
}

// A backend with a fixed device list, for the numbering `--device N` uses.
class ListBackend final : public Backend {
 public:
  ListBackend(std::string name, int count, std::string why = {}) : name_(std::move(name)), count_(count), why_(std::move(why)) {}
  std::string name() const override { return name_; }
  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> out;
    for (int i = 0; i < count_; ++i) {
      DeviceInfo d;
      d.index = i;
      d.api = name_;
      d.name = name_ + " " + std::to_string(i);
      out.push_back(d);
    }
    return out;
  }
  std::unique_ptr<Device> open(int index) override {
    opened = index;
    return std::make_unique<testing::HostDevice>();
  }
  std::string unavailable_reason() const override { return count_ ? "" : why_; }
  int opened = -1;

 private:
  std::string name_;
  int count_;
  std::string why_;
};

TEST(DeviceList, NoBackendMeansNoDevice) {
  gpu::DeviceList list = gpu::list_devices({});
  EXPECT_TRUE(list.devices.empty());
  EXPECT_EQ(list.why_none.rfind("no HIP or CUDA device found", 0), 0u) << list.why_none;
  try {
    gpu::open_device(list, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoDevice);
    EXPECT_EQ(e.exit_code(), 3);
  }
}

TEST(DeviceList, ReasonsOfEmptyBackendsAreKept) {
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(std::make_unique<ListBackend>("hip", 0, "hipGetDeviceCount: no ROCm-capable device"));
  gpu::DeviceList list = gpu::list_devices(std::move(b));
  EXPECT_NE(list.why_none.find("hip: hipGetDeviceCount: no ROCm-capable device"), std::string::npos) << list.why_none;
}

TEST(DeviceList, NumbersDevicesAcrossBackends) {
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(std::make_unique<ListBackend>("hip", 2));
  b.push_back(std::make_unique<ListBackend>("cuda", 1));
  auto* cuda = static_cast<ListBackend*>(b[1].get());
  gpu::DeviceList list = gpu::list_devices(std::move(b));
  ASSERT_EQ(list.devices.size(), 3u);
  EXPECT_EQ(list.devices[2].info.name, "cuda 0");
  EXPECT_NE(gpu::open_device(list, 2), nullptr);
  EXPECT_EQ(cuda->opened, 0);
  try {
    gpu::open_device(list, 3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoDevice);
    EXPECT_NE(std::string(e.what()).find("devices 0..2"), std::string::npos);
  }
}

TEST(DeviceList, ParsesDeviceNumbers) {
  EXPECT_EQ(gpu::parse_device_number("0"), 0);
  EXPECT_EQ(gpu::parse_device_number("12"), 12);
  for (const char* bad : {"", "-1", "x", "1x", " 1"}) EXPECT_THROW(gpu::parse_device_number(bad), Error) << bad;
}

TEST(Json, DeviceAndTelemetry) {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.l2_bytes = 52428800;
  const auto j = gpu::device_json(d);
  EXPECT_EQ(j["arch"], "sm_90");
  EXPECT_EQ(j["l2_bytes"], 52428800u);
  Telemetry t;
  EXPECT_EQ(gpu::telemetry_json(t).dump(), "{}");
  t.power_w = 350.5;
  EXPECT_EQ(gpu::telemetry_json(t)["power_w"], 350.5);
}

}  // namespace
}  // namespace temper
