// A small real sweep end to end on the first GPU (label gpu; skipped without one).
#include <gtest/gtest.h>

#include "temper/gpu_backend.h"
#include "temper/sweep.h"

using namespace temper;

TEST(SweepOnDevice, SmallSweepVerifiesTimesAndPicksWinners) {
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  if (list.devices.empty()) GTEST_SKIP() << list.why_none;
  auto device = gpu::open_device(list, 0);
  SweepSetup setup;
  const uint64_t row = *row_bytes(GgmlType::Q4_K, 4096);
  setup.shapes = {{{GgmlType::Q4_K, 4096, 4096}, 32, 32 * row * 4096, {"test"}},
                  {{GgmlType::Q4_0, 1024, 2048}, 1, *row_bytes(GgmlType::Q4_0, 2048) * 1024, {"test"}}};
  setup.model = {std::string(kSyntheticShape), 0, "", ""};
  setup.grid = quick_grid(std::string(known_engines()[0]));
  setup.options.time_cap_s = 0.2;
  Device* devices[] = {device.get()};
  Session s = new_session(setup, devices);
  CancelFlag never{false};
  run_session(s, devices, nullptr, {}, never);
  EXPECT_EQ(s.status, "complete") << s.devices[0].error;
  EXPECT_GT(s.devices[0].copy_bandwidth_gbs, 0);
  int ok = 0;
  for (const auto& r : s.results) {
    if (r.status == ResultStatus::Invalid) continue;
    EXPECT_EQ(r.status, ResultStatus::Ok) << type_name(r.type) << " " << r.config.nwarps << "x"
                                          << r.config.rows_per_block << ": " << r.failure;
    if (r.status != ResultStatus::Ok) continue;
    ++ok;
    EXPECT_GT(r.time_us.median, 0);
    EXPECT_LE(r.time_us.ci_low, r.time_us.median);
    EXPECT_GE(r.time_us.ci_high, r.time_us.median);
    // Physically possible: no GEMV moves bytes faster than 2x the copy bandwidth (which counts read + write).
    EXPECT_LT(r.gbs, 2 * s.devices[0].copy_bandwidth_gbs);
  }
  EXPECT_GT(ok, 0);
  EXPECT_EQ(s.verdicts.size(), 2u);
  EXPECT_GT(s.estimates[0].default_tokens_per_s, 0);
}
