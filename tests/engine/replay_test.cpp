// The decode replay's plan: one token's GEMVs in the model's order, fused where the engine fuses.
#include <gtest/gtest.h>

#include "fixtures/fixtures.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/profile.h"

using namespace temper;

namespace {

int count(const engine::ReplayPlan& p, const std::string& op) {
  return int(std::count_if(p.nodes.begin(), p.nodes.end(), [&](const auto& n) { return n.op == op; }));
}

TEST(ReplayPlan, DenseLlamaIsSevenGemvsALayerWithGateAndUpFused) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const engine::ReplayPlan p = engine::plan_replay(f);
  // 32 layers × (q, k, v, o, gate+up fused, down) + the output head.
  EXPECT_EQ(p.nodes.size(), 32u * 6 + 1);
  EXPECT_EQ(count(p, "glu"), 32);
  EXPECT_EQ(count(p, "mmid"), 0);
  int64_t gemvs = 0;
  for (const auto& n : p.nodes) gemvs += n.gemvs();
  EXPECT_EQ(gemvs, 32 * 7 + 1);
  // The model's own order: layer 0's attention first, the head last.
  EXPECT_EQ(p.nodes.front().tensors.front(), "blk.0.attn_q.weight");
  EXPECT_EQ(p.nodes[4].op, "glu");
  EXPECT_EQ(p.nodes[4].tensors, (std::vector<std::string>{"blk.0.ffn_gate.weight", "blk.0.ffn_up.weight"}));
  EXPECT_EQ(p.nodes[4].n, 14336);
  EXPECT_EQ(p.nodes[4].k, 4096);
  EXPECT_EQ(p.nodes.back().tensors.front(), "output.weight");
  EXPECT_EQ(p.nodes.back().type, GgmlType::Q6_K);
  EXPECT_EQ(p.nodes.back().n, 128256);
  EXPECT_EQ(p.max_k, 14336);
  EXPECT_GT(p.weight_bytes, 4'000'000'000u);
}

engine::ReplayPrediction predict_with(const engine::ReplayPlan& plan, std::vector<std::pair<ShapeKey, double>> savings,
                                      const std::string& arch = "sm_90", Approval approval = Approval::Approved) {
  Profile profile;
  for (const auto& [shape, saving] : savings) {
    ProfileEntry e;
    e.key = ProfileKey("sm_90", shape, 1);
    e.approval = approval;
    e.provenance = Provenance{};
    e.provenance->default_us = 10 + saving;
    e.provenance->tuned_us = 10;
    profile.entries.push_back(e);
  }
  return engine::predict_replay(plan, profile, arch);
}

// The engine keeps its fused gate/up kernel stock under a profile: an entry for the gate/up shape
// predicts nothing; the attention's q and o (4096x4096, 64 a token) and the head (one) do.
TEST(ReplayPlan, PredictionCountsOnlyTheLaunchesAProfileTunes) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const engine::ReplayPlan p = engine::plan_replay(f);
  const ShapeKey gate_up{GgmlType::Q4_K, 14336, 4096}, attn{GgmlType::Q4_K, 4096, 4096}, head{GgmlType::Q6_K, 128256, 4096};
  EXPECT_EQ(predict_with(p, {{gate_up, 1.0}}).entries_hit, 0);
  const engine::ReplayPrediction both = predict_with(p, {{gate_up, 1.0}, {attn, 0.5}, {head, 2.0}});
  EXPECT_EQ(both.entries_hit, 2);
  EXPECT_NEAR(both.saving_us, 64 * 0.5 + 2.0, 1e-9);
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, "gfx90a").entries_hit, 0);                   // another arch
  EXPECT_EQ(predict_with(p, {{attn, 0.5}}, "sm_90", Approval::Rejected).entries_hit, 0);  // not approved
}

TEST(ReplayPlan, MoeExpertsGoThroughMulMatIdWithTheModelsExpertsPerToken) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Qwen3_30B_A3B));
  const engine::ReplayPlan p = engine::plan_replay(f);
  EXPECT_EQ(p.experts_used, 8);
  EXPECT_EQ(count(p, "mmid_glu"), 48);
  EXPECT_EQ(count(p, "mmid_down"), 48);
  const auto it = std::find_if(p.nodes.begin(), p.nodes.end(), [](const auto& n) { return n.op == "mmid_glu"; });
  ASSERT_NE(it, p.nodes.end());
  EXPECT_EQ(it->experts, 128);
  EXPECT_EQ(it->used, 8);
  EXPECT_EQ(it->gemvs(), 16);  // gate and up for each of the 8 experts
  EXPECT_EQ(it->k, 2048);
  EXPECT_EQ(it->n, 768);
  // The router is f32: not an mmvq GEMV, and said so.
  EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const auto& s) { return s.find("ffn_gate_inp") != std::string::npos; }));
}

TEST(ReplayPlan, RefusesAModelWithoutQuantizedMatrices) {
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {32, 32}, std::string(32 * 32 * 4, '\0'));
  const auto path = std::filesystem::temp_directory_path() / ("temper-replay-f32-" + std::to_string(::getpid()) + ".gguf");
  w.write(path);
  const GgufFile f = GgufFile::open(path);
  EXPECT_THROW(engine::plan_replay(f), Error);
  std::filesystem::remove(path);
}

}  // namespace
