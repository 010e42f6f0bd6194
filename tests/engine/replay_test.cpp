// The decode replay's plan and the profile's prediction for it: entries count where the engine
// launches their kind, on their device.
#include <gtest/gtest.h>

#include "fixtures/fixtures.h"
#include "temper/backend.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/profile.h"

using namespace temper;

namespace {

DeviceInfo h100() {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.compute_units = 132;
  d.memory_bytes = 85'000'000'000ull;
  return d;
}

engine::ReplayPrediction predict_with(const engine::ReplayPlan& plan, std::vector<std::pair<ShapeKey, double>> savings,
                                      const DeviceInfo& on = h100(), Approval approval = Approval::Approved,
                                      ProfileDevice entry_device = {}) {
  Profile profile;
  for (const auto& [shape, saving] : savings) {
    ProfileEntry e;
    e.key = ProfileKey("sm_90", shape, 1, entry_device);
    e.approval = approval;
    e.provenance = Provenance{};
    e.provenance->default_us = 10 + saving;
    e.provenance->tuned_us = 10;
    profile.entries.push_back(e);
  }
  return engine::predict_replay(plan, profile, on);
}

TEST(ReplayPlan, IsTheEnginesLaunchPlanAtOneToken) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const engine::ReplayPlan p = engine::plan_replay(f);
  EXPECT_EQ(p.launches.launches.size(), 32u * 6 + 1);
  EXPECT_EQ(p.launches.ncols, 1);
  EXPECT_GT(p.weight_bytes, 4'000'000'000u);
  EXPECT_GE(p.output_bytes, uint64_t(4) * 128256);
}

// An entry predicts only where the engine makes its launch: the fused gate/up entry for the fused
// launch (32 a token), the attention's q and o (4096x4096, 64 a token) and the head (one); a
// plain-GEMV entry of the gate/up shape predicts nothing, since the engine fuses those at one token.
TEST(ReplayPlan, PredictionCountsEntriesWhereTheirLaunchKindRuns) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const engine::ReplayPlan p = engine::plan_replay(f);
  const ShapeKey plain_gate_up{GgmlType::Q4_K, 14336, 4096}, attn{GgmlType::Q4_K, 4096, 4096}, head{GgmlType::Q6_K, 128256, 4096};
  ShapeKey fused = plain_gate_up;
  fused.launch = Launch::MulMatGlu;
  EXPECT_EQ(predict_with(p, {{plain_gate_up, 1.0}}).entries_hit, 0);
  const engine::ReplayPrediction all = predict_with(p, {{plain_gate_up, 1.0}, {fused, 0.25}, {attn, 0.5}, {head, 2.0}});
  EXPECT_EQ(all.entries_hit, 3);
  EXPECT_NEAR(all.saving_us, 32 * 0.25 + 64 * 0.5 + 2.0, 1e-9);
  DeviceInfo mi = h100();
  mi.arch = "gfx90a";
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, mi).entries_hit, 0);                           // another arch
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, h100(), Approval::Rejected).entries_hit, 0);  // not approved
  // A device's own entries apply on that device only; arch-level ones on every device of the arch.
  DeviceInfo h200 = h100();
  h200.name = "NVIDIA H200";
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, h100(), Approval::Approved, profile_device(h100())).entries_hit, 1);
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, h200, Approval::Approved, profile_device(h100())).entries_hit, 0);
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, h200).entries_hit, 1);
}

TEST(ReplayPlan, MoePredictionCountsTheMulMatIdLaunches) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Qwen3_30B_A3B));
  const engine::ReplayPlan p = engine::plan_replay(f);
  ShapeKey gate_up{GgmlType::Q4_K, 768, 2048, Launch::MulMatIdGlu, 128, 8};
  const auto it = std::find_if(p.launches.shapes.begin(), p.launches.shapes.end(),
                               [](const Shape& s) { return s.launch == Launch::MulMatIdGlu; });
  ASSERT_NE(it, p.launches.shapes.end());
  gate_up.type = it->type;
  EXPECT_EQ(predict_with(p, {{gate_up, 1.0}}).saving_us, 48.0);
  EXPECT_EQ(predict_with(p, {{plain_shape(gate_up), 1.0}}).entries_hit, 0);  // an expert timed as a plain GEMV
}

}  // namespace
