// The decode replay through the engine device (fake probe): the profile's tuned launches are counted
// and predicted, every launch's output is compared between the arms (a wrong tuned config is named),
// and the per-shape breakdown accounts for the token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "temper/engine_device.h"
#include "temper/engine_replay.h"
#include "temper/gguf.h"
#include "temper/profile.h"
#include "temper/quant/reference.h"
#include "temper/sweep.h"

using namespace temper;
namespace fs = std::filesystem;

namespace {

// A two-layer llama-like model with random valid q4_0 weights; every N a multiple of 128, so the
// fake engine has a faster config for each launch.
fs::path tiny_model() {
  const fs::path path = fs::temp_directory_path() / ("temper-replay-fake-" + std::to_string(::getpid()) + ".gguf");
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  uint64_t seed = 1;
  auto matrix = [&](const std::string& name, uint64_t n, uint64_t k) {
    std::string data(*row_bytes(GgmlType::Q4_0, k) * n, '\0');
    quant::fill_random(GgmlType::Q4_0, data.data(), int64_t(n), int64_t(k), seed++);
    w.add_tensor(name, GgmlType::Q4_0, {k, n}, std::move(data));
  };
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    matrix(b + "attn_q.weight", 128, 256);
    matrix(b + "ffn_gate.weight", 256, 128);
    matrix(b + "ffn_up.weight", 256, 128);
    matrix(b + "ffn_down.weight", 128, 256);
  }
  matrix("output.weight", 384, 128);
  w.write(path);
  return path;
}

engine::ProbeOptions fake() {
  engine::ProbeOptions o;
  o.probe = FAKE_PROBE;
  return o;
}

struct Fixture {
  fs::path model = tiny_model(), profile = model.string() + ".profile.json";
  GgufFile file = GgufFile::open(model);
  engine::ReplayPlan plan = engine::plan_replay(file);
  Fixture() {
    // The engine's own sweep of the model's launches, and its winners approved.
    engine::EngineDevice dev(fake());
    SweepSetup setup;
    setup.shapes = sweep_shapes(file, {1});
    setup.model = model_identity(describe_model(file));
    setup.grid = {{1}, {1, 2, 4, 8}, {1, 2}, "ggml-d99724f", false};
    setup.options.time_cap_s = 0.02;
    setup.options.confirm_time_s = 0.05;
    setup.kernel_source = dev.kernel_source();
    Device* devices[] = {&dev};
    Session s = new_session(setup, devices);
    CancelFlag never{false};
    run_session(s, devices, nullptr, {}, never);
    Profile p = profile_from_session(s);
    approve_all(p);
    save_profile(p, profile);
  }
  ~Fixture() {
    fs::remove(model);
    fs::remove(profile);
  }
};

engine::ReplayReport replay(const Fixture& f) {
  engine::EngineDevice dev(fake());
  engine::ReplayOptions o;
  o.profile = f.profile;
  o.tokens = 5;
  o.rounds = 2;
  o.breakdown_tokens = 3;
  return engine::run_replay(dev, f.file, f.plan, o);
}

TEST(ReplayOnTheEngine, TunedLaunchesAgreeAndThePredictionHolds) {
  const Fixture f;
  // q, gate+up fused, down per layer, and the head.
  ASSERT_EQ(f.plan.launches.launches.size(), 7u);
  const engine::ReplayReport r = replay(f);
  EXPECT_EQ(r.stock.launches, 7);
  EXPECT_EQ(r.stock.tuned, 0);
  EXPECT_EQ(r.profiled.tuned, 7);  // every launch, the fused ones included, runs its entry
  // The fake engine's unfused pair beats its fused gate/up where N is a multiple of 256 (here, 256):
  // the profile chose the pair, whose two plain launches each fused launch becomes.
  const Profile p = load_profile(f.profile);
  EXPECT_TRUE(std::any_of(p.entries.begin(), p.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::MulMatGluUnfused; }));
  EXPECT_FALSE(std::any_of(p.entries.begin(), p.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::MulMatGlu; }));
  EXPECT_EQ(r.profiled.launches, 7 + 2);
  EXPECT_EQ(r.launches_compared, 7);
  EXPECT_TRUE(r.differences.empty()) << r.differences.front().role;
  EXPECT_GT(r.speedup, 1.05);
  EXPECT_NEAR(r.predicted_speedup, r.speedup, 0.02);  // the sweep's per-launch gains, summed over the plan
  EXPECT_EQ(r.profile_entries_hit, int(f.plan.launches.shapes.size()));
  // The breakdown: one row per launch shape, whose times add up to the token's.
  ASSERT_EQ(r.breakdown.size(), f.plan.launches.shapes.size());
  double stock = 0, profiled = 0;
  for (const auto& s : r.breakdown) stock += s.stock_us, profiled += s.profiled_us;
  EXPECT_NEAR(stock, r.stock.median, 0.01 * r.stock.median);
  EXPECT_NEAR(profiled, r.profiled.median, 0.01 * r.profiled.median);
  EXPECT_GE(r.breakdown.front().stock_us, r.breakdown.back().stock_us);  // largest first
  EXPECT_TRUE(std::any_of(r.breakdown.begin(), r.breakdown.end(), [](const auto& s) {
    return s.launch == Launch::MulMatGlu && s.launches == 2 && s.percent_of_copy > 0;
  }));
}

TEST(ReplayOnTheEngine, AWrongTunedConfigIsNamed) {
  const Fixture f;
  const Profile p = load_profile(f.profile);
  ASSERT_FALSE(p.entries.empty());
  const Config bad = p.entries.front().config;
  setenv("FAKE_PROBE_WRONG", config_text(bad).c_str(), 1);
  const engine::ReplayReport r = replay(f);
  unsetenv("FAKE_PROBE_WRONG");
  ASSERT_FALSE(r.differences.empty());
  for (const auto& d : r.differences) EXPECT_GT(d.max_abs_difference, 1e-3 * d.scale) << d.role;
}

}  // namespace
