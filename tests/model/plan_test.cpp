// The engine's launch plan (temper/plan.h): what ggml launches for one decode token, on the fixture
// models of real architectures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "fixtures/fixtures.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/plan.h"

using namespace temper;

namespace {

int count(const LaunchPlan& p, Launch kind) {
  return int(std::count_if(p.launches.begin(), p.launches.end(), [&](const auto& l) { return l.launch == kind; }));
}

uint64_t matrix_bytes(const GgufFile& f) {  // every quantized 2-D/3-D weight but the embeddings
  uint64_t total = 0;
  for (const TensorInfo& t : f.tensors())
    if (t.n_dims >= 2 && t.name != "token_embd.weight" && t.type != GgmlType::F32) total += t.bytes;
  return total;
}

TEST(LaunchPlan, DenseLlamaIsSixLaunchesALayerWithGateAndUpFused) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const LaunchPlan p = plan_launches(f);
  // 32 layers × (q, k, v, o, fused gate/up, down) + the output head.
  EXPECT_EQ(p.launches.size(), 32u * 6 + 1);
  EXPECT_EQ(count(p, Launch::MulMatGlu), 32);
  EXPECT_EQ(count(p, Launch::MulMatId) + count(p, Launch::MulMatIdGlu), 0);
  // Every weight matrix is read once a token: 4616.3 MB.
  EXPECT_EQ(p.bytes_per_token, matrix_bytes(f));
  EXPECT_NEAR(double(p.bytes_per_token) / 1e6, 4616.3, 0.05);
  EXPECT_EQ(std::accumulate(p.shapes.begin(), p.shapes.end(), uint64_t(0),
                            [](uint64_t a, const Shape& s) { return a + s.bytes_per_token; }),
            p.bytes_per_token);
  // The model's own order: layer 0's attention first, then its FFN, the head last.
  EXPECT_EQ(p.launches.front().tensors.front(), "blk.0.attn_q.weight");
  const PlannedLaunch& glu = p.launches[4];
  EXPECT_EQ(glu.launch, Launch::MulMatGlu);
  EXPECT_EQ(glu.tensors, (std::vector<std::string>{"blk.0.ffn_gate.weight", "blk.0.ffn_up.weight"}));
  EXPECT_EQ(glu.role(), "ffn_gate+ffn_up");
  EXPECT_EQ(glu.n, 14336);
  EXPECT_EQ(glu.k, 4096);
  EXPECT_EQ(glu.bytes, 2 * *row_bytes(GgmlType::Q4_K, 4096) * 14336);
  EXPECT_EQ(p.launches.back().tensors.front(), "output.weight");
  EXPECT_EQ(p.launches.back().layer, -1);
  EXPECT_EQ(p.launches.back().type, GgmlType::Q6_K);
  EXPECT_EQ(p.max_k, 14336);
  // The fused shape: 32 launches a token, each reading both matrices.
  const auto fused = std::find_if(p.shapes.begin(), p.shapes.end(), [](const Shape& s) { return s.launch == Launch::MulMatGlu; });
  ASSERT_NE(fused, p.shapes.end());
  EXPECT_EQ(fused->calls_per_token, 32);
  EXPECT_EQ(fused->gemvs(), 2);
}

TEST(LaunchPlan, MoeExpertsAreOneMulMatIdLaunchPerLayerOverTheExpertsUsed) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Qwen3_30B_A3B));
  const LaunchPlan p = plan_launches(f);
  // 48 layers × (q, k, v, o, expert gate/up fused, expert down) + the head; the f32 router is not mmvq.
  EXPECT_EQ(p.launches.size(), 48u * 6 + 1);
  EXPECT_EQ(p.experts_used, 8);
  EXPECT_EQ(count(p, Launch::MulMatIdGlu), 48);
  EXPECT_EQ(count(p, Launch::MulMatId), 48);
  const auto it = std::find_if(p.launches.begin(), p.launches.end(), [](const auto& l) { return l.launch == Launch::MulMatIdGlu; });
  ASSERT_NE(it, p.launches.end());
  EXPECT_EQ(it->experts, 128);
  EXPECT_EQ(it->used, 8);
  EXPECT_EQ(it->gemvs(), 16);  // gate and up of each of the 8 experts
  EXPECT_EQ(it->n, 768);
  EXPECT_EQ(it->k, 2048);
  // It reads 8 of 128 experts' gate and up: 16 slices.
  EXPECT_EQ(it->bytes, 16 * *row_bytes(it->type, 2048) * 768);
  const auto down = std::find_if(p.launches.begin(), p.launches.end(), [](const auto& l) { return l.launch == Launch::MulMatId; });
  ASSERT_NE(down, p.launches.end());
  EXPECT_EQ(down->role(), "ffn_down_exps");
  EXPECT_FALSE(down->broadcast_input);  // each expert multiplies its own activations
  EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const auto& s) { return s.find("ffn_gate_inp") != std::string::npos; }));
}

TEST(LaunchPlan, AtMoreThanOneTokenGateAndUpAreTwoLaunches) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const LaunchPlan p = plan_launches(f, 4);
  EXPECT_EQ(p.launches.size(), 32u * 7 + 1);
  EXPECT_EQ(count(p, Launch::MulMatGlu), 0);
  EXPECT_EQ(p.bytes_per_token, plan_launches(f, 1).bytes_per_token);  // the same matrices, read once
  // A sweep measures the fused launch at width 1 and the unfused pair's shape at the others; only the
  // width-1 shapes count towards a token.
  const std::vector<Shape> sweep = sweep_shapes(f, {1, 4});
  const auto plain = std::find_if(sweep.begin(), sweep.end(), [](const Shape& s) {
    return s.launch == Launch::MulMat && s.n == 14336 && s.k == 4096;
  });
  ASSERT_NE(plain, sweep.end());
  EXPECT_EQ(plain->calls_per_token, 0);
  // Beside the fused gate/up, its unfused pair (the hook's alternative), counted nowhere either.
  const auto pair = std::find_if(sweep.begin(), sweep.end(), [](const Shape& s) { return s.launch == Launch::MulMatGluUnfused; });
  ASSERT_NE(pair, sweep.end());
  EXPECT_EQ(pair->calls_per_token, 0);
  EXPECT_EQ(plain_shape(*pair), plain_shape(*plain));
  uint64_t counted = 0;
  for (const Shape& s : sweep) counted += s.bytes_per_token;
  EXPECT_EQ(counted, plan_launches(f, 1).bytes_per_token);
  EXPECT_THROW(plan_launches(f, 9), Error);
}

const PlanGroup* find_group(const LaunchPlan& p, const std::string& members) {
  for (const PlanGroup& g : p.groups)
    if (g.members_text() == members) return &g;
  return nullptr;
}

TEST(LaunchPlan, DenseLlamaHasOneSameInputRunALayerInTwoKinds) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M));
  const LaunchPlan p = plan_launches(f);
  // Groups are a property of the launches: the totals stay those of the plan above.
  EXPECT_EQ(p.launches.size(), 193u);
  EXPECT_NEAR(double(p.bytes_per_token) / 1e6, 4616.3, 0.05);
  // q, k, v read the same activations; o, gate+up and down do not.
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(p.launches[i].shares_input, i == 1 || i == 2) << p.launches[i].role();
  EXPECT_EQ(p.launches[1].role(), "attn_k");
  EXPECT_EQ(p.launches[2].role(), "attn_v");
  EXPECT_FALSE(p.launches.back().shares_input);
  // 32 runs a token; Q4_K_M gives some layers' v q6_K, so two kinds by member types.
  EXPECT_EQ(p.group_runs_per_token(), 32);
  ASSERT_EQ(p.groups.size(), 2u);
  const PlanGroup* q4 = find_group(p, "q4_K:4096,q4_K:1024,q4_K:1024");
  const PlanGroup* q6 = find_group(p, "q4_K:4096,q4_K:1024,q6_K:1024");
  ASSERT_NE(q4, nullptr);
  ASSERT_NE(q6, nullptr);
  EXPECT_EQ(q4->k, 4096);
  EXPECT_EQ(q4->runs_per_token + q6->runs_per_token, 32);
  int v_q6 = 0;
  for (const PlannedLaunch& l : p.launches) v_q6 += l.role() == "attn_v" && l.type == GgmlType::Q6_K;
  EXPECT_EQ(q6->runs_per_token, v_q6);
  EXPECT_GT(v_q6, 0);
  // At 2 columns gate and up are two launches of the same input: one more run per layer.
  const LaunchPlan p2 = plan_launches(f, 2);
  EXPECT_EQ(p2.group_runs_per_token(), 64);
  const PlanGroup* ffn = find_group(p2, "q4_K:14336,q4_K:14336");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(ffn->runs_per_token, 32);
  // The hook groups at 1..4 columns only: the launches still share their input, no run is a group.
  const LaunchPlan p8 = plan_launches(f, 8);
  EXPECT_TRUE(p8.groups.empty());
  EXPECT_TRUE(p8.launches[1].shares_input);
}

TEST(LaunchPlan, MoeQwenHasOneSameInputRunALayer) {
  const GgufFile f = GgufFile::open(fixtures::path(fixtures::Fixture::Qwen3_30B_A3B));
  const LaunchPlan p = plan_launches(f);
  EXPECT_EQ(p.launches.size(), 289u);
  EXPECT_EQ(p.group_runs_per_token(), 48);
  int sharing = 0;
  for (const PlannedLaunch& l : p.launches) {
    sharing += l.shares_input;
    if (l.shares_input) EXPECT_TRUE(l.role() == "attn_k" || l.role() == "attn_v") << l.role();
  }
  EXPECT_EQ(sharing, 96);
  for (const PlanGroup& g : p.groups) EXPECT_EQ(g.members.size(), 3u);
}

TEST(LaunchPlan, QkvRunInGraphOrderWhateverTheFileOrder) {
  // llama.cpp's converters often write a layer's tensors alphabetically: k, output, q, v.
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  const size_t row = *row_bytes(GgmlType::Q8_0, 64);
  for (const char* role : {"attn_k", "attn_output", "attn_q", "attn_v"}) {
    const int n = std::string(role) == "attn_k" || std::string(role) == "attn_v" ? 32 : 64;
    w.add_tensor(std::string("blk.0.") + role + ".weight", GgmlType::Q8_0, {64, uint64_t(n)}, std::string(row * n, '\0'));
  }
  const auto path = std::filesystem::temp_directory_path() / ("temper-plan-order-" + std::to_string(::getpid()) + ".gguf");
  w.write(path);
  const LaunchPlan p = plan_launches(GgufFile::open(path));
  std::filesystem::remove(path);
  ASSERT_EQ(p.launches.size(), 4u);
  EXPECT_EQ(p.launches[0].role(), "attn_q");
  EXPECT_EQ(p.launches[1].role(), "attn_k");
  EXPECT_EQ(p.launches[2].role(), "attn_v");
  EXPECT_EQ(p.launches[3].role(), "attn_output");
  EXPECT_FALSE(p.launches[3].shares_input);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].members_text(), "q8_0:64,q8_0:32,q8_0:32");
  EXPECT_EQ(p.groups[0].k, 64);
  EXPECT_EQ(p.groups[0].runs_per_token, 1);
}

TEST(LaunchPlan, RefusesAModelWithoutQuantizedMatrices) {
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  w.add_tensor("blk.0.attn_q.weight", GgmlType::F32, {32, 32}, std::string(32 * 32 * 4, '\0'));
  const auto path = std::filesystem::temp_directory_path() / ("temper-plan-f32-" + std::to_string(::getpid()) + ".gguf");
  w.write(path);
  const GgufFile f = GgufFile::open(path);
  EXPECT_THROW(plan_launches(f), Error);
  std::filesystem::remove(path);
}

}  // namespace
