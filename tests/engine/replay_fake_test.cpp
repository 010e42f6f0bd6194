// The decode replay through the engine device (fake probe): the profile's tuned launches are counted
// and predicted, every launch's output is compared between the arms (a wrong tuned config is named),
// and the per-shape breakdown accounts for the token; at batch widths 2..8 with forced mmvq/mmq paths
// (probe protocol 4), against the fake engine's cost model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "engine/cli_run.h"
#include "fixtures/fixtures.h"
#include "fake_probe_options.h"
#include "temper/engine_device.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/profile.h"
#include "temper/quant/reference.h"
#include "temper/sweep.h"

using namespace temper;
namespace fs = std::filesystem;

namespace {

// A two-layer llama-like model with random valid weights of `type` (q4_0 unless said); every N a
// multiple of 128, so the fake engine has a faster config for each launch.
fs::path tiny_model(GgmlType type = GgmlType::Q4_0, uint64_t k_unit = 128) {
  const fs::path path = fs::temp_directory_path() /
                        ("temper-replay-fake-" + std::to_string(::getpid()) + "-" + std::string(type_name(type)) + ".gguf");
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  uint64_t seed = 1;
  auto matrix = [&](const std::string& name, uint64_t n, uint64_t k) {
    std::string data(*row_bytes(type, k) * n, '\0');
    quant::fill_random(type, data.data(), int64_t(n), int64_t(k), seed++);
    w.add_tensor(name, type, {k, n}, std::move(data));
  };
  const uint64_t u = k_unit;
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    matrix(b + "attn_q.weight", 128, 2 * u);
    matrix(b + "ffn_gate.weight", 256, u);
    matrix(b + "ffn_up.weight", 256, u);
    matrix(b + "ffn_down.weight", 128, 2 * u);
  }
  matrix("output.weight", 384, u);
  w.write(path);
  return path;
}

struct Fixture {
  fs::path model = tiny_model(), profile = model.string() + ".profile.json";
  GgufFile file = GgufFile::open(model);
  engine::ReplayPlan plan = engine::plan_replay(file);
  Fixture() {
    // The engine's own sweep of the model's launches, and its winners approved.
    engine::EngineDevice dev(test::fake_probe());
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

// pipeline: the profile arm's pipelined launches (probe protocol 6); nullopt, the hook decides.
engine::ReplayReport replay(const Fixture& f, std::optional<bool> pipeline = std::nullopt) {
  engine::EngineDevice dev(test::fake_probe());
  engine::ReplayOptions o;
  o.profile = f.profile;
  o.tokens = 5;
  o.rounds = 2;
  o.breakdown_tokens = 3;
  o.pipeline = pipeline;
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

// ---- batch widths and forced mmvq/mmq paths (probe protocol 4) ----

// A q4_K model (a k-quant: in the fake engine's cost model mmq beats mmvq from 4 columns on) and an
// empty profile, so both arms run ggml's own configs and only the paths differ.
struct PathFixture {
  fs::path model = tiny_model(GgmlType::Q4_K, 256), profile = model.string() + ".profile.json";
  GgufFile file = GgufFile::open(model);
  engine::ReplayPlan plan = engine::plan_replay(file);
  PathFixture() { save_profile(Profile{}, profile); }
  ~PathFixture() {
    fs::remove(model);
    fs::remove(profile);
  }
  engine::ReplayReport replay(int ncols, std::vector<engine::ReplayOptions::ForcedPath> paths = {}) const {
    engine::EngineDevice dev(test::fake_probe());
    engine::ReplayOptions o;
    o.profile = profile;
    o.tokens = 5;
    o.rounds = 2;
    o.breakdown_tokens = 0;
    o.ncols = ncols;
    o.forced_paths = std::move(paths);
    return engine::run_replay(dev, file, plan, o);
  }
};

TEST(ReplayPaths, AForcedPathChangesTheTimeAsTheCostModelSays) {
  const PathFixture f;
  ASSERT_EQ(f.plan.launches.launches.size(), 7u);  // q, gate+up, down per layer; the head
  const engine::ReplayOptions::ForcedPath mmq{GgmlType::Q4_K, Launch::MulMat, MatPath::Mmq};
  // ggml's own pick (mmvq) at 4 columns: every q4_K launch costs 2.2 T; gate and up run unfused (8 launches + head).
  const engine::ReplayReport stock4 = f.replay(4);
  EXPECT_EQ(stock4.ncols, 4);
  EXPECT_EQ(stock4.stock.launches, 9);
  EXPECT_EQ(stock4.stock.path_changes, 0);
  EXPECT_NEAR(stock4.speedup, 1.0, 0.01);
  EXPECT_EQ(stock4.launches_compared, 7);
  EXPECT_TRUE(stock4.differences.empty());
  EXPECT_EQ(stock4.predicted_speedup, 0);  // no prediction beyond one column
  // mmq forced for q4_K at 4 columns: 2 T each, so the token takes 2 / 2.2 of the time, without mmvq.
  const engine::ReplayReport mmq4 = f.replay(4, {mmq});
  EXPECT_EQ(mmq4.stock.launches, 0);
  EXPECT_EQ(mmq4.stock.path_changes, 9);
  EXPECT_EQ(mmq4.profiled.path_changes, 9);
  EXPECT_NEAR(mmq4.stock.median / stock4.stock.median, 2.0 / 2.2, 0.005);
  EXPECT_TRUE(mmq4.differences.empty());
  // At 2 columns mmvq still wins (1.4 T against 2 T).
  const engine::ReplayReport stock2 = f.replay(2), mmq2 = f.replay(2, {mmq});
  EXPECT_NEAR(mmq2.stock.median / stock2.stock.median, 2.0 / 1.4, 0.01);
  // Forcing ggml's own pick, or a type the model lacks, changes nothing.
  const engine::ReplayReport same = f.replay(4, {{GgmlType::Q4_K, Launch::MulMat, MatPath::Mmvq}, {GgmlType::Q6_K, Launch::MulMat, MatPath::Mmq}});
  EXPECT_EQ(same.stock.path_changes, 0);
  EXPECT_NEAR(same.stock.median / stock4.stock.median, 1.0, 0.005);
  const nlohmann::json j = engine::replay_report_json(mmq4);
  EXPECT_EQ(j["ncols"], 4);
  EXPECT_EQ(j["stock"]["path_changes"], 9);
}

// The fake engine takes an approved path choice of the profile (the device's own, else the arch's) in
// the profile's arm only.
TEST(ReplayPaths, TheProfilesApprovedPathChoiceRunsInItsArm) {
  const PathFixture f;
  Profile p;
  PathChoice c;
  c.arch = "sm_90";
  c.type = GgmlType::Q4_K;
  c.ncols = 4;
  c.approval = Approval::Approved;
  c.decided_at = "2026-11-25T22:00:00Z";
  c.evidence = PathEvidence{"test", "fake", "sm_90", "engine", "m.gguf", 100, 99, 101, 91, 90, 92, 1.1, 1.08, 1.12};
  p.paths = {c};
  save_profile(p, f.profile);
  const engine::ReplayReport r = f.replay(4);
  EXPECT_EQ(r.stock.path_changes, 0);
  EXPECT_EQ(r.profiled.path_changes, 9);
  EXPECT_NEAR(r.speedup, 2.2 / 2.0, 0.01);
  EXPECT_NEAR(f.replay(8).speedup, 1.0, 0.01);  // the choice is for 4 columns only
}

TEST(ReplayPaths, AnOldProbeAndBadRequestsAreRefusedWithOneLine) {
  const PathFixture f;
  setenv("FAKE_PROBE_PROTOCOL", "3", 1);
  try {
    f.replay(4);
    ADD_FAILURE() << "a protocol-3 probe replayed 4 columns";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("speaks protocol 3, which replays one column with ggml's own mmvq/mmq pick only"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  EXPECT_EQ(f.replay(1).stock.path_changes, 0);  // one column works as before
  unsetenv("FAKE_PROBE_PROTOCOL");
  for (const auto& [ncols, paths, why] : std::vector<std::tuple<int, std::vector<engine::ReplayOptions::ForcedPath>, std::string>>{
           {9, {}, "ncols 9 is outside 1..8"},
           {1, {{GgmlType::Q4_K, Launch::MulMat, MatPath::Mmq}}, "needs a batch width 2..8"},
           {4, {{GgmlType::Q4_K, Launch::MulMatGlu, MatPath::Mmq}}, "mul_mat and mul_mat_id only"}}) {
    try {
      f.replay(ncols, paths);
      ADD_FAILURE() << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  // The probe's side: plan lines it cannot read are refused, naming the line.
  engine::EngineDevice dev(test::fake_probe());
  DeviceBuffer x = dev.alloc(4096), out = dev.alloc(4096);
  const std::string head = "profile -\nx " + std::to_string(engine::EngineDevice::handle(x)) + "\nout " +
                           std::to_string(engine::EngineDevice::handle(out)) + "\n";
  for (const std::string& bad : {std::string("ncols 9"), std::string("ncols 0"), std::string("path 1 12 2"),
                                 std::string("path 0 12 3"), std::string("ncols 2 3")}) {
    try {
      dev.replay(head + bad + "\n", 1);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot read plan line \"" + bad + "\""), std::string::npos) << e.what();
    }
  }
}

// `temper engine replay --ncols N --path TYPE=PATH`: the report's width and paths, and one line for a bad --path.
TEST(ReplayPaths, TheCliTakesAWidthAndForcedPaths) {
  const PathFixture f;
  const auto r = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                   "--tokens", "3", "--rounds", "1", "--ncols", "4", "--path", "q4_K=mmq", "--json"},
                                  {}, true);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ncols"], 4);
  EXPECT_EQ(j["forced_paths"], nlohmann::json::array({"q4_K=mmq"}));
  EXPECT_EQ(j["stock"]["mmvq_launches"], 0);
  EXPECT_EQ(j["profiled"]["path_changes"], 9);
  for (const auto& [arg, why] : std::vector<std::pair<std::string, std::string>>{{"q4_K=cublas", "the path is mmvq or mmq"},
                                                                                  {"q4_K:mul_mat_glu=mmq", "the launch is mul_mat or mul_mat_id"},
                                                                                  {"q9_Z=mmq", "unknown ggml type \"q9_Z\""},
                                                                                  {"q4_K", "no '='"}}) {
    const auto bad = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                       "--ncols", "4", "--path", arg});
    EXPECT_EQ(bad.code, 2) << arg << ": " << bad.output;
    EXPECT_NE(bad.output.find("--path \"" + arg + "\": " + why), std::string::npos) << bad.output;
  }
}

// A MoE token at 3 columns: 3 tokens of 2 experts each (ids, activations and outputs sized for them,
// every output compared), then the experts forced onto mmq: their launches leave mmvq.
TEST(ReplayPaths, AMoeTokenAtThreeColumnsAndItsExpertsOnMmq) {
  const GgufFile file = GgufFile::open(fixtures::path(fixtures::Fixture::MiniMoe));
  const engine::ReplayPlan plan = engine::plan_replay(file);
  const fs::path profile = fs::temp_directory_path() / ("temper-replay-moe-" + std::to_string(::getpid()) + ".json");
  save_profile(Profile{}, profile);
  const auto replay = [&](std::vector<engine::ReplayOptions::ForcedPath> paths) {
    engine::EngineDevice dev(test::fake_probe());
    engine::ReplayOptions o;
    o.profile = profile;
    o.tokens = 3;
    o.rounds = 1;
    o.breakdown_tokens = 0;
    o.ncols = 3;
    o.forced_paths = std::move(paths);
    return engine::run_replay(dev, file, plan, o);
  };
  int64_t plain = 0, experts = 0;  // launches at 3 columns: gate and up unfused
  for (const PlannedLaunch& l : plan.launches.launches) (launch_has_ids(l.launch) ? experts : plain) += launch_is_fused(l.launch) ? 2 : 1;
  ASSERT_GT(experts, 0);
  const engine::ReplayReport stock = replay({});
  EXPECT_EQ(stock.stock.launches, plain + experts);
  EXPECT_EQ(stock.launches_compared, int(plan.launches.launches.size()));
  EXPECT_TRUE(stock.differences.empty());
  const engine::ReplayReport mmq = replay({{GgmlType::Q4_0, Launch::MulMatId, MatPath::Mmq}, {GgmlType::Q8_0, Launch::MulMatId, MatPath::Mmq}});
  EXPECT_EQ(mmq.stock.launches, plain);
  EXPECT_EQ(mmq.stock.path_changes, experts);
  EXPECT_TRUE(mmq.differences.empty());
  fs::remove(profile);
}

}  // namespace

// ---- same-input groups (probe protocol 5) ----

// Two layers of q, k, v (one K; layer 1's v q8_0, so two kinds of run) and o, and a head; an empty
// profile, so only the group setting differs between the arms.
struct GroupFixture {
  fs::path model, profile;
  GgufFile file;
  engine::ReplayPlan plan;
  GroupFixture() : model(make()), profile(model.string() + ".profile.json"), file(GgufFile::open(model)), plan(engine::plan_replay(file)) {
    save_profile(Profile{}, profile);
  }
  ~GroupFixture() {
    fs::remove(model);
    fs::remove(profile);
  }
  static fs::path make() {
    const fs::path path = fs::temp_directory_path() / ("temper-replay-groups-" + std::to_string(::getpid()) + ".gguf");
    GgufWriter w;
    w.add("general.architecture", GgufWriter::Value::string("llama"));
    uint64_t seed = 7;
    auto matrix = [&](const std::string& name, GgmlType type, uint64_t n, uint64_t k) {
      std::string data(*row_bytes(type, k) * n, '\0');
      quant::fill_random(type, data.data(), int64_t(n), int64_t(k), seed++);
      w.add_tensor(name, type, {k, n}, std::move(data));
    };
    for (int l = 0; l < 2; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      matrix(b + "attn_q.weight", GgmlType::Q4_0, 256, 256);
      matrix(b + "attn_k.weight", GgmlType::Q4_0, 128, 256);
      matrix(b + "attn_v.weight", l == 1 ? GgmlType::Q8_0 : GgmlType::Q4_0, 128, 256);
      matrix(b + "attn_output.weight", GgmlType::Q4_0, 256, 256);
    }
    matrix("output.weight", GgmlType::Q4_0, 384, 256);
    w.write(path);
    return path;
  }
  engine::ReplayReport replay(std::optional<engine::GroupSetting> group, int ncols = 1) const {
    engine::EngineDevice dev(test::fake_probe());
    engine::ReplayOptions o;
    o.profile = profile;
    o.tokens = 5;
    o.rounds = 3;
    o.breakdown_tokens = 0;
    o.ncols = ncols;
    o.group = group;
    return engine::run_replay(dev, file, plan, o);
  }
};

TEST(ReplayGroups, TheWinningConfigGroupsEveryRunAndAgrees) {
  const GroupFixture f;
  ASSERT_EQ(f.plan.launches.launches.size(), 9u);
  ASSERT_EQ(f.plan.launches.group_runs_per_token(), 2);
  // The probe's plan: k and v read q's tensor (mm+), o its own.
  {
    engine::EngineDevice dev(test::fake_probe());
    engine::TokenReplayer token(dev, f.file, f.plan, 1);
    const std::string text = token.plan_text(f.profile, 1, {}, nullptr, engine::GroupSetting{4, 2});
    EXPECT_NE(text.find("group 4 2\n"), std::string::npos) << text;
    size_t plus = 0;
    for (size_t at = text.find("mm+ "); at != std::string::npos; at = text.find("mm+ ", at + 1)) ++plus;
    EXPECT_EQ(plus, 4u) << text;
    EXPECT_NE(token.plan_text(f.profile, 1, {}, nullptr, engine::GroupSetting::off()).find("group off\n"), std::string::npos);
  }
  // 4x2 is the fake engine's winner: each run in 0.6 of its time, one launch instead of three.
  const engine::ReplayReport won = f.replay(engine::GroupSetting{4, 2});
  EXPECT_EQ(won.stock.group_launches, 0);  // the stock arm runs with groups off
  EXPECT_EQ(won.profiled.group_launches, 2);
  EXPECT_EQ(won.stock.launches, 9);
  EXPECT_EQ(won.profiled.launches, 9 - 2 * 2);
  EXPECT_GT(won.speedup_low, 1.02);
  EXPECT_EQ(won.launches_compared, 9);
  EXPECT_TRUE(won.differences.empty());
  // Another config: grouped too, but no faster than stock.
  const engine::ReplayReport slow = f.replay(engine::GroupSetting{8, 4});
  EXPECT_EQ(slow.profiled.group_launches, 2);
  EXPECT_LT(slow.speedup, 1.0);
  // Off, or no setting and a profile without group entries: nothing grouped.
  EXPECT_EQ(f.replay(engine::GroupSetting::off()).profiled.group_launches, 0);
  EXPECT_EQ(f.replay(std::nullopt).profiled.group_launches, 0);
  // The hook groups at 1..4 columns only.
  EXPECT_EQ(f.replay(engine::GroupSetting{4, 2}, 4).profiled.group_launches, 2);
  EXPECT_EQ(f.replay(engine::GroupSetting{4, 2}, 5).profiled.group_launches, 0);
  const nlohmann::json j = engine::replay_report_json(won);
  EXPECT_EQ(j["profiled"]["group_launches"], 2);
  EXPECT_EQ(j["stock"]["group_launches"], 0);
}

TEST(ReplayGroups, AWrongGroupIsNamed) {
  const GroupFixture f;
  setenv("FAKE_PROBE_GROUP_WRONG", "4x2", 1);
  const engine::ReplayReport r = f.replay(engine::GroupSetting{4, 2});
  unsetenv("FAKE_PROBE_GROUP_WRONG");
  ASSERT_EQ(r.differences.size(), 2u);
  EXPECT_EQ(r.differences[0].role, "blk.0 attn_v");  // the run's last member
}

TEST(ReplayGroups, AnOlderProbeIsRefusedWithOneLineAndBadLinesAreNamed) {
  const GroupFixture f;
  setenv("FAKE_PROBE_PROTOCOL", "4", 1);
  try {
    f.replay(engine::GroupSetting{4, 2});
    ADD_FAILURE() << "a protocol-4 probe took a group setting";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("speaks protocol 4, which has no same-input groups (protocol 5); rebuild it"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  {  // without a group setting it replays as before: no mm+ line it could not read
    engine::EngineDevice dev(test::fake_probe());
    engine::TokenReplayer token(dev, f.file, f.plan, 1);
    EXPECT_EQ(token.plan_text(f.profile, 1, {}).find("mm+"), std::string::npos);
  }
  EXPECT_EQ(f.replay(std::nullopt).profiled.group_launches, 0);
  unsetenv("FAKE_PROBE_PROTOCOL");
  EXPECT_EQ(engine::parse_group_setting("4:2", "--group"), (engine::GroupSetting{4, 2}));
  EXPECT_TRUE(engine::parse_group_setting("off", "--group").is_off());
  for (const std::string& bad : {"3:2", "4:3", "4", "on", "4:2x"}) EXPECT_THROW(engine::parse_group_setting(bad, "--group"), Error) << bad;
  engine::EngineDevice dev(test::fake_probe());
  DeviceBuffer x = dev.alloc(4096), out = dev.alloc(4096), w = dev.alloc(4096);
  const std::string head = "profile -\nx " + std::to_string(engine::EngineDevice::handle(x)) + "\nout " +
                           std::to_string(engine::EngineDevice::handle(out)) + "\n";
  const std::string wh = std::to_string(engine::EngineDevice::handle(w));
  for (const auto& [plan, why] : std::vector<std::pair<std::string, std::string>>{
           {"group 3 2\n", "cannot read plan line \"group 3 2\""},
           {"group on\n", "cannot read plan line \"group on\""},
           {"mm+ 2 32 64 " + wh + "\n", "follows no mm/mm+ node of the same K"},
           {"mm 2 32 64 " + wh + "\nmm+ 2 32 32 " + wh + "\n", "follows no mm/mm+ node of the same K"},
           {"mm 2 32 64 " + wh + "\ngroup off\n", "comes after the nodes"}}) {
    try {
      dev.replay(head + plan, 1);
      ADD_FAILURE() << plan;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

// `temper engine replay --group W:R|off`: the profile arm's groups, the report's field, one line for a bad value.
TEST(ReplayGroups, TheCliTakesAGroupSetting) {
  const GroupFixture f;
  const auto r = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                   "--tokens", "3", "--rounds", "1", "--group", "4:2", "--json"},
                                  {}, true);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["group"], "4:2");
  EXPECT_EQ(j["profiled"]["group_launches"], 2);
  EXPECT_EQ(j["stock"]["group_launches"], 0);
  const auto text = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                      "--tokens", "3", "--rounds", "1", "--group", "off"},
                                     {}, true);
  ASSERT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.out.find("0 group launches per token, the plan has 2 runs"), std::string::npos) << text.out;
  const auto bad = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                     "--group", "3:2"});
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--group: \"3:2\": expected off or W:R with W 2, 4 or 8 and R 1, 2 or 4"), std::string::npos) << bad.output;
}

// ---- pipelined launches (probe protocol 6, hook v6) ----

TEST(ReplayPipeline, OnRunsEveryTunedOneColumnLaunchPipelinedAndOutputsAgree) {
  const Fixture f;
  {
    engine::EngineDevice dev(test::fake_probe());
    engine::TokenReplayer token(dev, f.file, f.plan, 1);
    EXPECT_NE(token.plan_text(f.profile, 1, {}, nullptr, std::nullopt, true).find("pipeline on\n"), std::string::npos);
    EXPECT_NE(token.plan_text(f.profile, 1, {}, nullptr, std::nullopt, false).find("pipeline off\n"), std::string::npos);
    EXPECT_EQ(token.plan_text(f.profile, 1, {}).find("pipeline"), std::string::npos);
  }
  const engine::ReplayReport on = replay(f, true);
  EXPECT_EQ(on.stock.pipelined_launches, 0);  // the stock arm runs none
  // The tuned launches but the fused gate/up ones the profile runs as their unfused pair (2 of 7).
  EXPECT_EQ(on.profiled.tuned, 7);
  EXPECT_EQ(on.profiled.pipelined_launches, 5);
  EXPECT_TRUE(on.differences.empty());
  const engine::ReplayReport off = replay(f, false);
  EXPECT_EQ(off.profiled.pipelined_launches, 0);
  EXPECT_GT(on.speedup, off.speedup);  // the fake engine's pipelined launch takes 0.95 of its time
  EXPECT_EQ(replay(f, std::nullopt).profiled.pipelined_launches, 0);
  const nlohmann::json j = engine::replay_report_json(on);
  EXPECT_EQ(j["profiled"]["pipelined_launches"], 5);
  EXPECT_EQ(j["stock"]["pipelined_launches"], 0);
}

TEST(ReplayPipeline, AnOlderProbeIsRefusedWithOneLine) {
  const Fixture f;
  setenv("FAKE_PROBE_PROTOCOL", "5", 1);
  try {
    replay(f, true);
    ADD_FAILURE() << "a protocol-5 probe took a pipeline setting";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("speaks protocol 5, which has no pipelined launches (protocol 6); rebuild it"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  const engine::ReplayReport r = replay(f, std::nullopt);  // without the setting it replays as before
  EXPECT_EQ(r.profiled.pipelined_launches, 0);
  EXPECT_TRUE(r.differences.empty());
  unsetenv("FAKE_PROBE_PROTOCOL");
}

// `temper engine replay --pipeline on|off`: the profile arm's pipelined launches, the report's field, one line for a bad value.
TEST(ReplayPipeline, TheCliTakesAPipelineSetting) {
  const Fixture f;
  const auto r = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                   "--tokens", "3", "--rounds", "1", "--pipeline", "on", "--json"},
                                  {}, true);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pipeline"], "on");
  EXPECT_EQ(j["profiled"]["pipelined_launches"], 5);
  EXPECT_EQ(j["stock"]["pipelined_launches"], 0);
  const auto text = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                      "--tokens", "3", "--rounds", "1", "--pipeline", "on"},
                                     {}, true);
  ASSERT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.out.find("pipelined launches (--pipeline on in the profile arm; none in the stock arm): 5 per token"), std::string::npos)
      << text.out;
  const auto bad = test::run_temper({"engine", "replay", f.model.string(), "--probe", FAKE_PROBE, "--profile", f.profile.string(),
                                     "--pipeline", "yes"});
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--pipeline: \"yes\": expected on or off"), std::string::npos) << bad.output;
}
