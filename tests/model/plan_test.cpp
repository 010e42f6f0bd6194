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
