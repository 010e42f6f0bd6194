// On a real GPU (ctest label `gpu`): identity, memory, timing, the runtime's kernel attributes and the
// full verification of every instantiation against the CPU reference. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "temper/device_bench.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"
#include "temper/mmvq_group.h"
#include "temper/quant/reference.h"
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

// The norm that writes its GEMVs' q8_1 activations (Temper's twin of the hook's rms_norm_q8_1): both block
// sizes (K 512 runs 256 threads, the models' hidden sizes 1024), 1, 3 and 8 rows, against the float64
// reference and the CPU quantizer of the device's own output.
TEST_F(GpuDevice, NormWritingQ8_1MatchesTheCpuReference) {
  VerifyOptions o;
  o.types = {GgmlType::Q4_0};
  o.ncols = {1};
  o.shapes = {{67, 256}};
  o.norms = {512, 2048, 4096, 5120};
  const VerifyReport r = run_verification(*device_, o);
  std::printf("%s", format_report(r).c_str());
  EXPECT_EQ(r.norm_cases.size(), 12u);
  EXPECT_TRUE(r.passed());
}

// Temper's kernel as the hook's *_pipelined entries run it (d99724f's kernel that lets the next one
// launch and prefetches its rows before it waits): every output the same as d99724f's bit for bit,
// and both against the CPU reference. The timing of back-to-back launches, where the next launch's
// prefetch overlaps this one, is printed, not asserted (docs/perf-notes.md holds the measurements).
TEST_F(GpuDevice, PipelinedKernelComputesWhatD99724fDoes) {
  using V = mmvq::KernelVariant;
  VerifyOptions vo;
  vo.types = {GgmlType::Q4_K, GgmlType::Q6_K};
  vo.ncols = {1, 2};
  vo.variants = {V::GgmlD99724f, V::GgmlD99724fPipelined};
  const KernelPair pairs[] = {{GgmlType::Q4_K, 1}, {GgmlType::Q4_K, 2}, {GgmlType::Q6_K, 1}, {GgmlType::Q6_K, 2}};
  device_->prepare_kernels(pairs, {}, nullptr);  // compiled at run time where this build has none
  const VerifyReport r = run_verification(*device_, vo);
  if (r.cases.empty()) GTEST_SKIP() << "this build has no q4_K / q6_K kernel";
  EXPECT_TRUE(r.passed()) << format_report(r);

  const int n = 4096 + 3, k = 4096;  // the last block reads past the end (the spare rows)
  for (GgmlType type : vo.types) {
    const size_t row = *row_bytes(type, uint64_t(k));
    std::vector<uint8_t> weights(row * size_t(n));
    quant::fill_random(type, weights.data(), n, k, 7);
    DeviceBuffer w = device_->alloc(weights.size() + row * mmvq::kWeightPaddingRows);
    device_->upload(w, weights.data(), weights.size());
    std::vector<float> x(k);
    quant::fill_random_activations(x.data(), k, 8);
    DeviceBuffer xd = device_->alloc(x.size() * sizeof(float)), y = device_->alloc(size_t(k / 32) * sizeof(quant::BlockQ8_1));
    device_->upload(xd, x.data(), x.size() * sizeof(float));
    device_->quantize_q8_1(xd, y, k, 1);
    DeviceBuffer dst = device_->alloc(size_t(n) * sizeof(float));
    for (Config c : instantiated_configs(*device_, type, 1)) {
      std::vector<float> out[2];
      for (int i = 0; i < 2; ++i) {
        device_->fill(dst, 0xFF);
        device_->gemv({{type, n, k}, 1, i ? V::GgmlD99724fPipelined : V::GgmlD99724f}, c, w, y, dst);
        out[i].resize(size_t(n));
        device_->download(out[i].data(), dst, out[i].size() * sizeof(float));
      }
      EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0)
          << type_name(type) << " " << c.nwarps << "x" << c.rows_per_block;
    }
    GemvBenchOptions o;
    o.count = 200;
    for (V v : vo.variants) {
      GemvBench bench(*device_, {{type, 14336, 4096}, 1, v}, o);
      const ConfigTiming t = bench.run({4, 2});
      ASSERT_TRUE(t.ok()) << t.error;
      std::printf("%s 14336x4096 4x2 %s: median %.2f us back to back\n", std::string(type_name(type)).c_str(),
                  std::string(variant_name(v)).c_str(), t.us.median);
    }
  }
}

// Temper's same-input group kernel (the hook's mul_mat_group launch, as a layer's q, k and v): every
// member's outputs against the CPU reference, and bit for bit what mmvq writes for that member alone
// at the same config. The time of one group launch against the members' three launches back to back
// is printed, not asserted (docs/perf-notes.md holds the measurements).
TEST_F(GpuDevice, GroupKernelComputesWhatMmvqDoes) {
  using V = mmvq::KernelVariant;
  VerifyOptions vo;
  vo.types = {GgmlType::Q4_K};
  vo.ncols = {1, 2, 3, 4};
  vo.variants = {V::Ggml7180759, V::GgmlD99724f};
  vo.groups = parse_group_list("q4_K+q4_K+q6_K,q8_0+q8_0");
  const VerifyReport r = run_verification(*device_, vo);
  if (r.group_cases.empty()) GTEST_SKIP() << "no group kernels on this device (no run-time compiler)";
  EXPECT_EQ(r.group_cases.size(), 2u * 4 * 9 * 2 * 2);  // groups × widths × configs × variants × shapes
  EXPECT_TRUE(r.passed()) << format_report(r);

  const int k = 4096;
  const std::vector<GroupMember> members = {{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}, {GgmlType::Q6_K, 1024 + 3}};
  std::vector<DeviceBuffer> w, dst, plain_dst;
  for (size_t m = 0; m < members.size(); ++m) {
    const size_t row = *row_bytes(members[m].type, uint64_t(k));
    std::vector<uint8_t> weights(row * size_t(members[m].n));
    quant::fill_random(members[m].type, weights.data(), members[m].n, k, 11 + m);
    w.push_back(device_->alloc(weights.size() + row * mmvq::kWeightPaddingRows));
    device_->upload(w.back(), weights.data(), weights.size());
  }
  std::vector<float> x(size_t(k) * 4);
  quant::fill_random_activations(x.data(), int64_t(x.size()), 12);
  DeviceBuffer xd = device_->alloc(x.size() * sizeof(float)), y = device_->alloc(size_t(k / 32) * 4 * sizeof(quant::BlockQ8_1));
  device_->upload(xd, x.data(), x.size() * sizeof(float));
  device_->quantize_q8_1(xd, y, k, 4);
  for (const GroupMember& m : members) dst.push_back(device_->alloc(size_t(m.n) * 4 * sizeof(float)));
  DeviceBuffer one = device_->alloc(size_t(4096) * 4 * sizeof(float));
  std::vector<const DeviceBuffer*> w_ptrs;
  std::vector<DeviceBuffer*> dst_ptrs;
  for (size_t m = 0; m < members.size(); ++m) w_ptrs.push_back(&w[m]), dst_ptrs.push_back(&dst[m]);
  int compared = 0;
  for (int ncols = 1; ncols <= 4; ++ncols)
    for (int nw : mmvq::kGroupNwarps)
      for (int rows : mmvq::kGroupRowsPerBlock) {
        const Config c{nw, rows};
        const GemvGroupProblem p{members, k, ncols, V::GgmlD99724f};
        device_->gemv_group(p, c, w_ptrs, y, dst_ptrs);
        for (size_t m = 0; m < members.size(); ++m) {
          if (!device_->has_kernel(members[m].type, ncols, c)) continue;
          const size_t values = size_t(members[m].n) * size_t(ncols);
          std::vector<float> group(values), alone(values);
          device_->download(group.data(), dst[m], values * sizeof(float));
          device_->gemv({{members[m].type, members[m].n, k}, ncols, V::GgmlD99724f}, c, w[m], y, one);
          device_->download(alone.data(), one, values * sizeof(float));
          EXPECT_EQ(std::memcmp(group.data(), alone.data(), values * sizeof(float)), 0)
              << "member " << m << " ncols " << ncols << " " << config_words(c);
          ++compared;
        }
      }
  EXPECT_GT(compared, 50);

  // One group launch against its members' launches, ncols 1, each timed alone with device events,
  // weights rotating through 8 copies (past L2) as the sweep times.
  const Config c{4, 2};
  const GemvGroupProblem p{members, k, 1, V::GgmlD99724f};
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<DeviceBuffer> copies;
  std::vector<const DeviceBuffer*> group_copies;
  std::vector<std::vector<const DeviceBuffer*>> member_copies(members.size());
  for (int i = 0; i < 8; ++i)
    for (size_t m = 0; m < members.size(); ++m) copies.push_back(device_->alloc(w[m].size()));
  for (size_t i = 0; i < copies.size(); ++i) {
    device_->fill(copies[i], 0);  // zero blocks: valid weights, and the timing does not depend on values
    group_copies.push_back(&copies[i]);
    member_copies[i % members.size()].push_back(&copies[i]);
  }
  const double group_us = median(device_->time_gemv_group(p, c, group_copies, y, dst_ptrs, 400, 1));
  double members_us = 0;
  for (size_t m = 0; m < members.size(); ++m)
    members_us +=
        median(device_->time_gemv({{members[m].type, members[m].n, k}, 1, V::GgmlD99724f}, c, member_copies[m], y, one, 400));
  std::printf("group %s at %s: %.2f us, its members' launches %.2f us together (medians, each launch timed alone)\n",
              group_text(p).c_str(), config_words(c).c_str(), group_us, members_us);
}

}  // namespace
}  // namespace temper
