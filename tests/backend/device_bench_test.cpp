#include <gtest/gtest.h>

#include "host_device.h"
#include "temper/device_bench.h"
#include "temper/error.h"
#include "temper/fake_backend.h"

namespace temper {
namespace {

using testing::HostDevice;

TEST(GemvBytes, CountsWeightsActivationsAndOutputs) {
  // q4_0 4096 x 14336: 448 blocks of 18 B per row; q8_1: 448 blocks of 36 B; 4096 floats out.
  EXPECT_EQ(gemv_bytes({{GgmlType::Q4_0, 4096, 14336}, 1}), 4096ull * 448 * 18 + 448 * 36 + 4096 * 4);
  EXPECT_EQ(gemv_bytes({{GgmlType::Q8_0, 10, 64}, 3}), 10ull * 2 * 34 + 3 * 2 * 36 + 3 * 10 * 4);
}

TEST(RotationCopies, ExceedTwiceTheCache) {
  EXPECT_EQ(rotation_copies(33'030'144, 52'428'800), 4);  // 4 × 33 MB > 100 MB
  EXPECT_EQ(rotation_copies(100, 50), 2);                 // never fewer than 2
  EXPECT_EQ(rotation_copies(100, 100), 3);                // strictly more than 2 × LLC
  EXPECT_EQ(rotation_copies(0, 100), 2);
  EXPECT_EQ(rotation_copies(1000, 1ull << 30), 4096);    // tiny shapes: capped allocation count
  for (uint64_t w : {1000ull, 12345ull, 1ull << 20})
    for (uint64_t llc : {0ull, 4096ull, 1ull << 20}) {
      const int c = rotation_copies(w, llc);
      EXPECT_GT(uint64_t(c) * w, 2 * llc);
      EXPECT_GE(c, 2);
    }
}

TEST(Tier1, ThirteenTypesInTheIssuesOrder) {
  const auto t = tier1_types();
  ASSERT_EQ(t.size(), 13u);
  EXPECT_EQ(t.front(), GgmlType::Q4_0);
  EXPECT_EQ(t.back(), GgmlType::MXFP4);
}

TEST(GemvBench, VerifiesThenTimesRotatingCopies) {
  HostDevice dev;
  dev.bugs[{2, 1}] = HostDevice::Bug::Wrong;
  GemvBenchOptions o;
  o.count = 101;
  o.per_sample = 1;  // the host device times launches one by one only
  o.warmup = 3;
  o.llc_bytes = 10'000;
  GemvBench bench(dev, {{GgmlType::Q4_0, 64, 512}, 1}, o);
  // 64 rows × 16 blocks × 18 B = 18432 B per copy; 2 copies exceed 20000 B.
  EXPECT_EQ(bench.weight_bytes(), 18432u);
  EXPECT_EQ(bench.copies(), 2);

  const ConfigTiming good = bench.run({4, 1});
  ASSERT_TRUE(good.ok()) << good.error;
  EXPECT_EQ(good.us.n, 101);
  EXPECT_DOUBLE_EQ(good.us.median, 41.0);
  EXPECT_NEAR(good.gbs, double(gemv_bytes(bench.problem())) / 41e-6 / 1e9, 1e-9);
  EXPECT_EQ(dev.timed_weights.size(), 2u);  // both copies were used

  const ConfigTiming bad = bench.run({2, 1});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.rfind("verification failed", 0), 0u) << bad.error;
  EXPECT_EQ(bad.us.n, 0);

  const ConfigTiming missing = bench.run({8, 8});
  EXPECT_FALSE(missing.ok());
}

// The bench launches the kernel variant its problem names (the engine version's), on weight
// buffers with the spare rows the kernel's last block may read.
TEST(GemvBench, LaunchesTheProblemsKernelVariantOnPaddedWeights) {
  HostDevice dev;
  GemvBenchOptions o;
  o.count = 101;
  o.per_sample = 1;
  o.warmup = 1;
  GemvProblem p{{GgmlType::Q8_0, 5, 256}, 1};
  p.variant = mmvq::KernelVariant::GgmlD99724f;
  GemvBench bench(dev, p, o);
  EXPECT_EQ(bench.weight_bytes(), 5u * 8 * 34);  // the matrix itself; the spare rows are not counted
  ASSERT_TRUE(bench.run({4, 4}).ok());           // 5 rows, 4 per block: the last block reads 3 past the end
  EXPECT_EQ(dev.variants, std::set<mmvq::KernelVariant>{mmvq::KernelVariant::GgmlD99724f});
}

TEST(GemvBench, BackToBackSamplesAverageTheirLaunches) {
  FakeDeviceOptions fo;
  fo.jitter = 0;
  FakeDevice fake(fo);
  GemvBenchOptions o;
  o.count = 7;
  o.per_sample = 1;
  o.warmup = 0;
  o.verify = false;
  GemvBench one(fake, {{GgmlType::Q4_0, 64, 512}, 1}, o);
  const ConfigTiming single = one.run({4, 1});
  o.per_sample = 8;
  GemvBench grouped(fake, {{GgmlType::Q4_0, 64, 512}, 1}, o);
  const int64_t before = fake.launches();
  const ConfigTiming eight = grouped.run({4, 1});
  ASSERT_TRUE(single.ok() && eight.ok()) << single.error << eight.error;
  EXPECT_EQ(eight.us.n, 7);  // one value per sample, in µs per launch
  EXPECT_EQ(fake.launches() - before, 7 * 8);
  EXPECT_NEAR(eight.us.median, single.us.median, 0.1 * single.us.median);

  // A device that can only time launches one by one says so instead of faking it.
  HostDevice host;
  GemvBench refused(host, {{GgmlType::Q4_0, 64, 512}, 1}, o);
  const ConfigTiming t = refused.run({4, 1});
  EXPECT_NE(t.error.find("times launches one by one only"), std::string::npos) << t.error;
}

TEST(GemvBench, RejectsBadProblems) {
  HostDevice dev;
  EXPECT_THROW(GemvBench(dev, {{GgmlType::Q4_0, 0, 512}, 1}), Error);
  EXPECT_THROW(GemvBench(dev, {{GgmlType::Q4_0, 4, 100}, 1}), Error);
  EXPECT_THROW(GemvBench(dev, {{GgmlType::Q4_0, 4, 512}, 9}), Error);
  GemvBenchOptions o;
  o.count = 0;
  EXPECT_THROW(GemvBench(dev, {{GgmlType::Q4_0, 4, 512}, 1}, o), Error);
}

TEST(GemvBench, OutOfMemoryIsAGpuFault) {
  HostDevice dev;  // refuses allocations above 16 GiB, like a device that is full
  try {
    GemvBench bench(dev, {{GgmlType::Q8_0, 1 << 20, 1 << 15}, 1});  // 34 GiB of weights
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos);
  }
}

// A group bench verifies every member once per config, then times sets of member copies that together
// exceed twice the cache; a config whose member is wrong is not timed and the error names the member.
TEST(GroupBench, VerifiesEveryMemberThenTimesRotatingCopies) {
  HostDevice dev;  // 1 MiB of L2
  dev.group_bugs[{8, 1}] = {1, HostDevice::Bug::Wrong};
  const GemvGroupProblem p{{{GgmlType::Q4_0, 64}, {GgmlType::Q4_0, 32}, {GgmlType::Q8_0, 32}}, 4096, 2};
  GemvBenchOptions o;
  o.count = 9;
  o.per_sample = 2;
  GroupBench bench(dev, p, o);
  // A set: 64 + 32 rows of 128 q4_0 blocks (18 B) and 32 of 128 q8_0 blocks (34 B) = 360448 B; 2 MiB / that.
  EXPECT_EQ(bench.copies(), 6);
  const ConfigTiming good = bench.run({4, 2});
  ASSERT_TRUE(good.ok()) << good.error;
  EXPECT_EQ(good.us.n, 9);
  EXPECT_DOUBLE_EQ(good.us.median, 11.0);  // 5 · 4 / 2 + (0, 1, 2)
  EXPECT_NEAR(good.gbs, double(gemv_bytes(p)) / 11e-6 / 1e9, 1e-9);
  EXPECT_EQ(dev.group_timed_weights.size(), 18u);  // every copy of every member
  const ConfigTiming bad = bench.run({8, 1});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.rfind("verification failed: member 1 row 0", 0), 0u) << bad.error;
  EXPECT_FALSE(bench.run({1, 1}).ok());  // not a group config
  EXPECT_EQ(gemv_bytes(p), 64ull * 128 * 18 + 32 * 128 * 18 + 32 * 128 * 34 + 2 * 128 * 36 + 2 * 128 * 4);
  EXPECT_THROW(GroupBench(dev, {{{GgmlType::Q4_0, 64}}, 4096, 1}), Error);  // one member
  EXPECT_THROW(GroupBench(dev, {p.members, 4096, 5}), Error);              // width past 4
}

}  // namespace
}  // namespace temper
