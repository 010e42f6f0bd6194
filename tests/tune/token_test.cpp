// The token step without an engine: the token probe's output read strictly against its plan, the
// coordinates a profile gives, what each option changes in the profile, and the decision from known
// samples (issue 46).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/upstream_tree.h"
#include "temper/error.h"
#include "temper/process.h"
#include "temper/token.h"
#include "temper/token_probe.h"

using namespace temper;
using namespace temper::tune;

namespace {

engine::TokenPlan plan(int arms, int rounds, int greedy = 0) {
  engine::TokenPlan p;
  for (int i = 0; i < arms; ++i) p.arms.push_back("/tmp/arm-" + std::to_string(i) + ".json");
  p.rounds = rounds;
  p.greedy = greedy;
  return p;
}

std::string error_of(std::string_view text, const engine::TokenPlan& p, bool finished = true) {
  try {
    engine::parse_token_output(text, p, finished);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
    return e.what();
  }
  return "";
}

TEST(TokenProbeOutput, ReadsWindowsAndGreedyOfEveryArm) {
  const std::string out =
      "temper-token-probe 1 hook 9\nmodel 32 128256\nwindow 0 0 0 5012.5\nwindow 1 0 0 4800\nwindow 1 1 0 4810.25\n"
      "window 0 1 0 5020\ngreedy 0 0123456789abcdef 1 5 7\ngreedy 1 0123456789abcdef 1 5 7\ndone\n";
  const engine::TokenRun r = engine::parse_token_output(out, plan(2, 2, 2), true);
  EXPECT_EQ(r.hook_version, 9);
  EXPECT_EQ(r.layers, 32);
  EXPECT_EQ(r.vocab, 128256);
  EXPECT_EQ(r.arm_samples(0), (std::vector<double>{5012.5, 5020}));
  EXPECT_EQ(r.arm_samples(1), (std::vector<double>{4800, 4810.25}));
  ASSERT_EQ(r.greedy.size(), 2u);
  EXPECT_EQ(r.greedy[1].tokens, (std::vector<int>{5, 7}));
  EXPECT_TRUE(r.greedy[0].finite);
}

TEST(TokenProbeOutput, AnythingElseIsOneLineNamingTheLine) {
  const std::string head = "temper-token-probe 1 hook 9\nmodel 2 100\n";
  EXPECT_NE(error_of(head + "window 0 0 0 fast\n", plan(1, 1)).find("output line 3"), std::string::npos);
  EXPECT_NE(error_of(head + "window 2 0 0 10\n", plan(2, 1)).find("an arm below 2"), std::string::npos);
  EXPECT_NE(error_of(head + "window 0 1 0 10\n", plan(1, 1)).find("a round below 1"), std::string::npos);
  EXPECT_NE(error_of(head + "window 0 0 0 nan\n", plan(1, 1)).find("output line 3"), std::string::npos);
  EXPECT_NE(error_of(head + "window 0 0 0 -3\n", plan(1, 1)).find("positive, finite"), std::string::npos);
  EXPECT_NE(error_of(head + "window 0 0 0 10\n", plan(1, 1)).find("without 'done'"), std::string::npos);
  EXPECT_NE(error_of(head + "done\n", plan(1, 1)).find("arm 0 has 0 windows"), std::string::npos);
  EXPECT_NE(error_of(head + "window 0 0 0 10\nwindow 0 0 0 10\ndone\n", plan(1, 1)).find("no more windows"), std::string::npos);
  EXPECT_NE(error_of(head + "greedy 0 xyz 1 1\n", plan(1, 1, 1)).find("16 hex digits"), std::string::npos);
  EXPECT_NE(error_of(head + "greedy 0 0123456789abcdef 1 100\n", plan(1, 1, 1)).find("below the vocabulary"), std::string::npos);
  EXPECT_NE(error_of(head + "window 0 0 0 10\ndone\nwindow 0 0 0 10\n", plan(1, 1)).find("nothing after 'done'"), std::string::npos);
  EXPECT_NE(error_of("model 2 100\n", plan(1, 1)).find("'temper-token-probe 1 hook V' first"), std::string::npos);
  EXPECT_NE(error_of("", plan(1, 1)).find("no output"), std::string::npos);
  // An engine without the profile switch says so in its first line and nothing else is expected.
  EXPECT_EQ(engine::parse_token_output("temper-token-probe 1 hook 0\n", plan(1, 1), true).hook_version, 0);
}

// Building the probe: what is missing is named; a llama.h it does not compile against is the
// compiler's first error (tune then goes on without the step).
TEST(TokenProbeBuild, NamesWhatIsMissingAndTheCompilersFirstError) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("temper-token-build-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tree" / "ggml" / "include");
  fs::create_directories(dir / "lib");
  engine::TokenProbeBuild b;
  b.llama_tree = dir / "tree";
  b.lib_dir = dir / "lib";
  b.out_dir = dir / "out";
  auto error = [&](ErrorKind kind) {
    try {
      engine::build_token_probe(b);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(ErrorKind::BadInput).find("no include/llama.h"), std::string::npos);
  fs::create_directories(dir / "tree" / "include");
  std::ofstream(dir / "tree" / "include" / "llama.h") << "#error this llama.h is not one the probe knows\n";
  EXPECT_NE(error(ErrorKind::BadInput).find("no libllama.so beside llama-bench"), std::string::npos);
  std::ofstream(dir / "lib" / "libllama.so") << "";
  const std::string e = error(ErrorKind::Io);
  EXPECT_NE(e.find("the token probe does not build against"), std::string::npos) << e;
  EXPECT_NE(e.find("this llama.h is not one the probe knows"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir / "out" / "temper-token-probe")) << "nothing half-written";
  fs::remove_all(dir);
}

// The probe compiles against upstream llama.cpp's llama.h (the API it calls: contexts, memory,
// decode, logits). Needs $TEMPER_UPSTREAM's llama.cpp/; skips without it (CI).
TEST(TokenProbeBuild, CompilesAgainstUpstreamLlamaH) {
  std::string why;
  const std::filesystem::path tree = test::upstream_tree("llama.cpp", &why);
  if (tree.empty()) GTEST_SKIP() << why;
  const std::filesystem::path src = std::filesystem::temp_directory_path() / ("temper-token-probe-" + std::to_string(::getpid()) + ".cpp");
  std::ofstream(src) << engine::token_probe_source();
  std::string out;
  ProcessOptions p;
  p.capture = &out;
  const int rc = run_process({"c++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", src.string(), "-I",
                              (tree / "include").string(), "-I", (tree / "ggml" / "include").string()},
                             p);
  std::filesystem::remove(src);
  EXPECT_EQ(rc, 0) << out;
}

TEST(TokenProbePlan, ListsEverySettingAndArm) {
  engine::TokenPlan p = plan(2, 3, 16);
  p.tokens = 64;
  const std::string t = engine::token_plan_text(p);
  EXPECT_EQ(t.rfind("temper-token-plan 1\n", 0), 0u);
  for (const char* line : {"tokens 64\n", "rounds 3\n", "greedy 16\n", "arm /tmp/arm-0.json\n", "arm /tmp/arm-1.json\n"})
    EXPECT_NE(t.find(line), std::string::npos) << line;
}

ProfileEntry entry(Launch launch, int n, double calls, double default_us, double tuned_us, Config c = {4, 2}) {
  ProfileEntry e;
  e.key = ProfileKey("sm_90", ShapeKey{GgmlType::Q4_K, n, 4096, launch}, 1);
  e.config = c;
  e.default_config = {4, 1};
  e.approval = Approval::Approved;
  Provenance p;
  p.calls_per_token = int64_t(calls);
  p.default_us = default_us;
  p.tuned_us = tuned_us;
  e.provenance = p;
  return e;
}

Profile two_families() {
  Profile p;
  p.entries = {entry(Launch::MulMat, 4096, 64, 10, 8), entry(Launch::MulMat, 1024, 32, 5, 4),
               entry(Launch::MulMatGlu, 14336, 32, 40, 35), entry(Launch::MulMatPipelined, 4096, 64, 0, 0, {4, 2})};
  ProfileEntry other_arch = entry(Launch::MulMat, 4096, 64, 10, 8);
  other_arch.key.arch = "gfx90a";
  ProfileEntry two_columns = entry(Launch::MulMat, 4096, 64, 10, 8);
  two_columns.key.ncols = 2;
  p.entries.push_back(other_arch);
  p.entries.push_back(two_columns);
  return p;
}

TEST(TokenCoordinates, FamiliesOfApprovedOneColumnEntriesHeaviestFirst) {
  const std::vector<TokenCoordinate> c = token_coordinates(two_families(), "sm_90", 4);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, "mul_mat_glu");  // 32 × 40 µs
  EXPECT_DOUBLE_EQ(c[0].weight_us, 1280);
  EXPECT_EQ(c[1].kind, "mul_mat");      // 64 × 10 + 32 × 5 µs
  EXPECT_EQ(c[1].entries, 2);
  EXPECT_DOUBLE_EQ(c[1].weight_us, 800);
  EXPECT_EQ(c[1].options, (std::vector<std::string>{"tuned", "default"}));
  EXPECT_EQ(token_coordinates(two_families(), "sm_90", 1).size(), 1u);
  EXPECT_TRUE(token_coordinates(two_families(), "sm_80", 4).empty());
  // Only the model's own launches count: another model's entries in a shared profile are not measured.
  const std::vector<TokenCoordinate> glu_only =
      token_coordinates(two_families(), "sm_90", 4, {ShapeKey{GgmlType::Q4_K, 14336, 4096, Launch::MulMatGlu}});
  ASSERT_EQ(glu_only.size(), 1u);
  EXPECT_EQ(glu_only[0].kind, "mul_mat_glu");
}

// Hook v8's norm: its K is the fused gate/up's (the FFN norm feeds it); "on" puts in one entry that
// validate accepts, with the measured µs per token once there are samples; "off" and without_token take it out.
// Hook v9's GLU: its K is the gate/up's n, and it applies only where the profile runs the unfused pair.
TEST(TokenCoordinates, TheNormIsOneEntryAtTheGateUpsKAndTheGluAtItsN) {
  std::vector<TokenCoordinate> c;
  add_producer_coordinates(c, {ShapeKey{GgmlType::Q4_K, 4096, 4096, Launch::MulMat}});
  EXPECT_TRUE(c.empty());  // no gate/up: no norm known to feed GEMVs
  add_producer_coordinates(c, {ShapeKey{GgmlType::Q4_K, 4096, 2560, Launch::MulMat}, ShapeKey{GgmlType::Q4_K, 768, 2048, Launch::MulMatIdGlu}});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, kNormKind);
  EXPECT_EQ(c[0].norm_k, 2048);
  EXPECT_EQ(c[0].options, (std::vector<std::string>{"off", "on"}));
  EXPECT_EQ(c[1].kind, kGluKind);
  EXPECT_EQ(c[1].norm_k, 768);

  TokenCoordinate t = c[0];
  t.why = "on +2.0 % per token";
  t.samples = {{{100.0, 100.2}, {100.1, 99.9}}, {{98.0, 98.1}, {97.9, 98.2}}};
  decide_coordinate(t);
  EXPECT_EQ(t.options[size_t(t.chosen)], "on");
  const Profile on = with_producer_option(two_families(), "sm_90", t, 1);
  ASSERT_EQ(on.entries.size(), two_families().entries.size() + 1);
  const auto norm = std::find_if(on.entries.begin(), on.entries.end(), [](const ProfileEntry& e) { return launch_writes_q8(e.key.launch); });
  ASSERT_NE(norm, on.entries.end());
  EXPECT_EQ(norm->key.launch, Launch::RmsNormQ8);
  EXPECT_EQ(norm->key.k, 2048);
  EXPECT_EQ(norm->key.ncols, 1);
  EXPECT_EQ(norm->key.type, GgmlType::F32);
  EXPECT_TRUE(token_added(*norm));
  ASSERT_TRUE(norm->provenance.has_value());
  EXPECT_NEAR(norm->provenance->default_us, 100.05, 0.1);  // off
  EXPECT_NEAR(norm->provenance->tuned_us, 98.05, 0.1);     // on
  // The GLU's entry beside it: both validate, and "off" of one leaves the other.
  TokenCoordinate g = c[1];
  const Profile both = with_producer_option(on, "sm_90", g, 1);
  ASSERT_EQ(both.entries.size(), on.entries.size() + 1);
  const auto glu = std::find_if(both.entries.begin(), both.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::GluQ8; });
  ASSERT_NE(glu, both.entries.end());
  EXPECT_EQ(glu->key.k, 768);
  Profile checked = both;
  checked.source = kSourceTemper;
  for (const std::string& problem : validate_profile(checked))
    EXPECT_TRUE(problem.find("rms_norm") == std::string::npos && problem.find("glu_q8_1") == std::string::npos) << problem;
  const Profile glu_off = with_producer_option(both, "sm_90", g, 0);
  EXPECT_EQ(glu_off.entries.size(), on.entries.size());
  EXPECT_TRUE(std::any_of(glu_off.entries.begin(), glu_off.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::RmsNormQ8; }));
  for (const Profile& back : {with_producer_option(on, "sm_90", t, 0), without_token(both)}) {
    EXPECT_EQ(back.entries.size(), two_families().entries.size());
    EXPECT_TRUE(std::none_of(back.entries.begin(), back.entries.end(), [](const ProfileEntry& e) { return launch_writes_q8(e.key.launch); }));
  }
  EXPECT_THROW(with_producer_option(on, "sm_90", TokenCoordinate{}, 1), Error);
}

// The norm removes the same launches at every batch width: with --ncols 1,2,4 its "on" is an entry at each
// (the GLU's pair runs at one column only); the widths survive the journal, and a bad one is refused.
TEST(TokenCoordinates, TheNormGoesInAtEveryBatchWidthOfTheTune) {
  std::vector<TokenCoordinate> c;
  add_producer_coordinates(c, {ShapeKey{GgmlType::Q4_K, 14336, 4096, Launch::MulMatGlu}}, {1, 2, 4, 16});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].widths, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(c[1].widths, (std::vector<int>{1}));
  c[0].samples = {{{100.0}, {100.1}}, {{98.0}, {98.1}}};
  decide_coordinate(c[0]);
  const Profile on = with_producer_option(two_families(), "sm_90", c[0], 1);
  std::vector<int> widths;
  for (const ProfileEntry& e : on.entries)
    if (e.key.launch == Launch::RmsNormQ8) {
      widths.push_back(e.key.ncols);
      EXPECT_EQ(e.note.find("measured at one column") != std::string::npos, e.key.ncols != 1) << e.note;
    }
  EXPECT_EQ(widths, (std::vector<int>{1, 2, 4}));
  Profile checked = on;
  checked.source = kSourceTemper;
  for (const std::string& problem : validate_profile(checked)) EXPECT_EQ(problem.find("rms_norm"), std::string::npos) << problem;
  EXPECT_EQ(token_coordinate_from_json(to_json(c[0])).widths, c[0].widths);
  nlohmann::json bad = to_json(c[0]);
  bad["widths"] = {1, 9};
  EXPECT_THROW(token_coordinate_from_json(bad), Error);
  bad.erase("widths");  // a journal of an older Temper: one column
  EXPECT_EQ(token_coordinate_from_json(bad).widths, (std::vector<int>{1}));
}

// The pair as one group launch: a mul_mat_group entry of the pair's two members at the group-grid config
// nearest the pair's, validated; "off" and a profile without the pair leave no such entry.
TEST(TokenCoordinates, ThePairGroupIsOneGroupEntryOfThePairsTwoMembers) {
  std::vector<TokenCoordinate> c;
  add_pair_group_coordinate(c, {ShapeKey{GgmlType::Q4_K, 768, 2048, Launch::MulMatIdGlu}});
  EXPECT_TRUE(c.empty());  // experts: the group kernel has none
  add_pair_group_coordinate(c, {ShapeKey{GgmlType::Q4_K, 14336, 4096, Launch::MulMatGlu}});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, kPairGroupKind);
  const Profile without = with_pair_group_option(two_families(), "sm_90", c[0], 1);
  EXPECT_EQ(without.entries.size(), two_families().entries.size());  // no pair: nothing to group
  Profile p = two_families();
  ProfileEntry pair;
  pair.key = ProfileKey("sm_90", GgmlType::Q4_K, 14336, 4096, 1);
  pair.key.launch = Launch::MulMatGluUnfused;
  pair.config = {16, 8};
  pair.default_config = {4, 1};
  pair.approval = Approval::Approved;
  p.entries.push_back(pair);
  ASSERT_NE(unfused_pair(p, "sm_90", 14336), nullptr);
  EXPECT_EQ(unfused_pair(p, "sm_90", 4096), nullptr);  // another model's gate/up
  c[0].samples = {{{100.0}, {100.1}}, {{99.0}, {99.1}}};
  decide_coordinate(c[0]);
  const Profile on = with_pair_group_option(p, "sm_90", c[0], 1);
  ASSERT_EQ(on.entries.size(), p.entries.size() + 1);
  const auto g = std::find_if(on.entries.begin(), on.entries.end(), [](const ProfileEntry& e) { return launch_is_group(e.key.launch); });
  ASSERT_NE(g, on.entries.end());
  EXPECT_EQ(g->key.members, (std::vector<GroupMember>{{GgmlType::Q4_K, 14336}, {GgmlType::Q4_K, 14336}}));
  EXPECT_EQ(g->key.k, 4096);
  EXPECT_EQ(g->key.ncols, 1);
  EXPECT_EQ(g->config, (Config{8, 4}));  // 16 x 8 is outside the group grid: its nearest
  EXPECT_TRUE(token_added(*g));
  Profile checked = on;
  checked.source = kSourceTemper;
  for (const std::string& problem : validate_profile(checked)) EXPECT_EQ(problem.find("mul_mat_group"), std::string::npos) << problem;
  EXPECT_EQ(with_pair_group_option(on, "sm_90", c[0], 0).entries.size(), p.entries.size());
  EXPECT_EQ(without_token(on).entries.size(), p.entries.size());
}

// A shared profile: what one model's token step decided stays when another model's runs. The dense
// model's decisions (a family taken back, its norm and GLU entries) against the MoE model's shapes.
TEST(TokenCoordinates, AnotherModelsTokenDecisionsStayInASharedProfile) {
  const std::vector<ShapeKey> dense = {ShapeKey{GgmlType::Q4_K, 4096, 4096, Launch::MulMat}, ShapeKey{GgmlType::Q4_K, 1024, 4096, Launch::MulMat},
                                       ShapeKey{GgmlType::Q4_K, 14336, 4096, Launch::MulMatGlu}};
  const std::vector<ShapeKey> moe = {ShapeKey{GgmlType::Q4_K, 768, 2048, Launch::MulMatIdGlu}, ShapeKey{GgmlType::Q4_K, 4096, 2048, Launch::MulMat}};
  Profile p = with_token_option(two_families(), "sm_90", "mul_mat", "default", "dense's own config", {}, dense);
  std::vector<TokenCoordinate> c;
  add_producer_coordinates(c, dense);
  for (TokenCoordinate& t : c) p = with_producer_option(p, "sm_90", t, 1);
  const auto decided = [](const Profile& q) {
    int n = 0;
    for (const ProfileEntry& e : q.entries) n += token_added(e) || token_rejected(e);
    return n;
  };
  ASSERT_EQ(decided(p), 4);  // two mul_mat entries taken back, the norm's and the GLU's put in
  EXPECT_EQ(decided(without_token(p, moe)), 4);
  EXPECT_EQ(decided(with_token_option(p, "sm_90", "mul_mat", "tuned", "", {}, moe)), 4);
  std::vector<TokenCoordinate> m;
  add_producer_coordinates(m, moe);
  EXPECT_EQ(decided(with_producer_option(p, "sm_90", m[0], 0)), 4);  // the MoE's norm off leaves the dense's
  EXPECT_EQ(decided(with_producer_option(p, "sm_90", m[0], 1)), 5);
  EXPECT_EQ(decided(without_token(p, dense)), 0);
  EXPECT_EQ(decided(without_token(p)), 0);
  // Membership: every form of a launch, a group of its launches, its producers; not another model's.
  ProfileEntry piped = entry(Launch::MulMatPipelined, 4096, 1, 1, 1);
  EXPECT_TRUE(of_model(piped, dense));
  EXPECT_FALSE(of_model(piped, moe));
  ProfileEntry unfused = entry(Launch::MulMatGluUnfused, 14336, 1, 1, 1);
  EXPECT_TRUE(of_model(unfused, dense));
  ProfileEntry group;
  group.key = group_profile_key("sm_90", {{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}}, 4096, 1, {});
  EXPECT_TRUE(of_model(group, dense));
  EXPECT_FALSE(of_model(group, moe));
  EXPECT_TRUE(of_model(group, {}));
}

// The GLU writes a copy only where the unfused pair runs: an approved one-column pair of n = its K.
TEST(TokenCoordinates, TheGluAppliesOnlyWhereTheUnfusedPairRuns) {
  TokenCoordinate g;
  g.kind = std::string(kGluKind);
  g.options = {"off", "on"};
  g.norm_k = 14336;
  Profile p = two_families();
  EXPECT_FALSE(glu_applies(p, "sm_90", g));
  ProfileEntry pair;
  pair.key.arch = "sm_90";
  pair.key.type = GgmlType::Q4_K;
  pair.key.n = 14336;
  pair.key.k = 4096;
  pair.key.ncols = 1;
  pair.key.launch = Launch::MulMatGluUnfused;
  pair.config = pair.default_config = Config{4, 1};
  pair.approval = Approval::Rejected;
  p.entries.push_back(pair);
  EXPECT_FALSE(glu_applies(p, "sm_90", g));  // not approved
  p.entries.back().approval = Approval::Approved;
  EXPECT_TRUE(glu_applies(p, "sm_90", g));
  EXPECT_FALSE(glu_applies(p, "sm_89", g));  // another arch
  g.norm_k = 4096;
  EXPECT_FALSE(glu_applies(p, "sm_90", g));  // another n
}

// Hook v10: a fused gate/up over experts writes the copy in its own kernel, with or without a pair.
TEST(TokenCoordinates, TheGluAppliesAtAFusedGateUpOverExperts) {
  TokenCoordinate g;
  g.kind = std::string(kGluKind);
  g.options = {"off", "on"};
  g.norm_k = 768;
  const Profile p = two_families();
  ShapeKey experts{GgmlType::Q4_K, 768, 2048, Launch::MulMatIdGlu};
  experts.experts = 128;
  experts.used = 8;
  ShapeKey down{GgmlType::Q4_K, 2048, 768, Launch::MulMatId};
  down.experts = 128;
  down.used = 8;
  EXPECT_TRUE(glu_applies(p, "sm_90", g, {down, experts}));
  EXPECT_FALSE(glu_applies(p, "sm_90", g, {down}));  // no gate/up over experts
  ShapeKey dense{GgmlType::Q4_K, 768, 2048, Launch::MulMatGlu};
  EXPECT_FALSE(glu_applies(p, "sm_90", g, {dense}));  // a plain fused gate/up keeps its GLU inside
  g.norm_k = 2048;
  EXPECT_FALSE(glu_applies(p, "sm_90", g, {down, experts}));  // another n
}

// Decided round by round: "on" 1.5 % faster in every round, on a machine 3 % slower from the fourth round
// on (the H200's token probe drifted so on 2026-12-03): every round's ratio is 1.015, so is the interval.
TEST(TokenCoordinates, ADriftBetweenRoundsDoesNotHideAGain) {
  TokenCoordinate c;
  c.kind = std::string(kNormKind);
  c.options = {"off", "on"};
  c.norm_k = 4096;
  const std::vector<double> level = {3200, 3205, 3198, 3300, 3305, 3298, 3302, 3299, 3301, 3297};
  std::vector<std::vector<double>> off, on;
  for (size_t r = 0; r < level.size(); ++r) {
    off.push_back({level[r]});
    on.push_back({level[r] / 1.015});
  }
  c.samples = {off, on};
  decide_coordinate(c);
  EXPECT_EQ(c.options[size_t(c.chosen)], "on") << c.why;
  EXPECT_NEAR(c.speedup, 1.015, 1e-9);
  EXPECT_EQ(c.why.rfind("on +1.5 %", 0), 0u) << c.why;
}

TEST(TokenCoordinates, DefaultTakesTheFamilysTunedConfigsBackAndOnlyThose) {
  const Profile p = with_token_option(two_families(), "sm_90", "mul_mat", "default", "why");
  int rejected = 0;
  for (const ProfileEntry& e : p.entries) {
    const bool family_here = e.key.arch == "sm_90" && e.key.ncols == 1 && e.key.launch == Launch::MulMat;
    EXPECT_EQ(e.approval == Approval::Rejected, family_here) << key_text(e.key);
    if (family_here) {
      EXPECT_EQ(e.note, "token probe: why");
    }
    rejected += e.approval == Approval::Rejected;
  }
  EXPECT_EQ(rejected, 2);
  // The family's pipelined entry stays pipelined, at the engine's default config; another family's
  // option leaves it as it is.
  const Profile glu = with_token_option(two_families(), "sm_90", "mul_mat_glu", "default");
  for (const auto& [profile, config] : {std::pair{p, Config{4, 1}}, std::pair{glu, Config{4, 2}}})
    for (const ProfileEntry& e : profile.entries)
      if (e.key.launch == Launch::MulMatPipelined) {
        EXPECT_EQ(e.approval, Approval::Approved);
        EXPECT_EQ(e.config, config);
      }
  EXPECT_EQ(to_json(with_token_option(two_families(), "sm_90", "mul_mat", "tuned")), to_json(two_families()));
  // without_token gives the replay's choices back, the pipelined entry at the plain launch's config again.
  EXPECT_EQ(to_json(without_token(p)), to_json(two_families()));
  // Taken back by a token step, the replay's choices are still the family's "tuned" option.
  EXPECT_EQ(token_coordinates(p, "sm_90", 4).size(), 2u);
  EXPECT_EQ(to_json(with_token_option(p, "sm_90", "mul_mat", "tuned")), to_json(two_families()));
  EXPECT_THROW(with_token_option(two_families(), "sm_90", "mul_mat", "off"), Error);
}

TEST(TokenCoordinates, GroupsOffRejectsTheGroupEntries) {
  Profile p = two_families();
  ProfileEntry group = entry(Launch::MulMatGroup, 6144, 32, 0, 0);
  p.entries.push_back(group);
  const std::vector<TokenCoordinate> c = token_coordinates(p, "sm_90", 4);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].kind, "groups");
  EXPECT_EQ(c[2].options, (std::vector<std::string>{"tuned", "off"}));
  const Profile off = with_token_option(p, "sm_90", "groups", "off");
  for (const ProfileEntry& e : off.entries) EXPECT_EQ(e.approval == Approval::Rejected, launch_is_group(e.key.launch));
}

// A gate/up the replay runs as the hook's unfused pair: "fused" puts the sweep's best fused launch in
// instead; every option starts from the replay's choices, and without_token gives them back.
TEST(TokenCoordinates, FusedReplacesTheUnfusedPairAndEveryOptionStartsFromTheReplay) {
  Profile p;
  p.entries = {entry(Launch::MulMat, 4096, 64, 10, 8), entry(Launch::MulMatGluUnfused, 14336, 32, 40, 34, {2, 4})};  // by key
  ProfileEntry fused = entry(Launch::MulMatGlu, 14336, 32, 40, 35, {2, 2});
  fused.approval = Approval::Pending;  // as the sweep's profile holds it
  const std::vector<ProfileEntry> alternatives = {fused};
  const std::vector<TokenCoordinate> c = token_coordinates(p, "sm_90", 4, {}, alternatives);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, "mul_mat_glu");  // 32 × 40 µs against 64 × 10
  EXPECT_EQ(c[0].options, (std::vector<std::string>{"tuned", "default", "fused"}));
  EXPECT_EQ(c[1].options, (std::vector<std::string>{"tuned", "default"}));  // nothing fused to offer
  EXPECT_EQ(token_coordinates(p, "sm_90", 4)[0].options.size(), 2u);       // no alternatives given

  const Profile f = with_token_option(p, "sm_90", "mul_mat_glu", "fused", "fused wins", alternatives);
  const ProfileEntry* pair = find_entry(f, p.entries[1].key);
  const ProfileEntry* in = find_entry(f, fused.key);
  ASSERT_TRUE(pair && in);
  EXPECT_EQ(pair->approval, Approval::Rejected);
  EXPECT_TRUE(token_rejected(*pair));
  EXPECT_EQ(in->approval, Approval::Approved);
  EXPECT_TRUE(token_added(*in));
  EXPECT_EQ(in->config, (Config{2, 2}));
  // The coordinates still see the replay's choice, not what the token step put in.
  EXPECT_EQ(token_coordinates(f, "sm_90", 4, {}, alternatives)[0].entries, 1);
  // Back to "tuned" or "default": the fused entry goes again.
  const Profile t = with_token_option(f, "sm_90", "mul_mat_glu", "tuned", "", alternatives);
  EXPECT_EQ(find_entry(t, fused.key), nullptr);
  EXPECT_EQ(find_entry(t, p.entries[1].key)->approval, Approval::Approved);
  const Profile d = with_token_option(f, "sm_90", "mul_mat_glu", "default", "why", alternatives);
  EXPECT_EQ(find_entry(d, fused.key), nullptr);
  EXPECT_EQ(find_entry(d, p.entries[1].key)->approval, Approval::Rejected);
  EXPECT_EQ(to_json(without_token(f)), to_json(p));
  EXPECT_EQ(to_json(without_token(d)), to_json(p));
  EXPECT_THROW(with_token_option(p, "sm_90", "mul_mat", "fused", "", alternatives), Error);
}

// Rounds of µs per token around `center`, ±0.1 %.
std::vector<std::vector<double>> rounds(double center, int n = 5) {
  std::vector<std::vector<double>> r;
  for (int i = 0; i < n; ++i) r.push_back({center * (1 + 0.001 * (i % 3 - 1))});
  return r;
}

TEST(TokenDecision, TheEnginesConfigWinsOnlyWhenItsLowerBoundBeatsTheGain) {
  TokenCoordinate c;
  c.kind = "mul_mat_id";
  c.options = {"tuned", "default"};
  c.samples = {rounds(5000), rounds(4850)};  // the default 3 % faster per token
  decide_coordinate(c, 0.005);
  EXPECT_EQ(c.chosen, 1);
  EXPECT_NEAR(c.speedup, 5000.0 / 4850, 1e-3);
  EXPECT_GT(c.low, 1.005);
  EXPECT_NE(c.why.find("loses in the engine's graph"), std::string::npos) << c.why;

  c.samples = {rounds(5000), rounds(4990)};  // 0.2 %: below the gain asked for
  decide_coordinate(c, 0.005);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_NE(c.why.find("tuned kept"), std::string::npos) << c.why;

  c.samples = {rounds(4800), rounds(5000)};  // tuned faster
  decide_coordinate(c, 0.005);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_LT(c.speedup, 1);

  c.samples = {rounds(5000)};
  EXPECT_THROW(decide_coordinate(c), Error);
  const TokenCoordinate back = token_coordinate_from_json(to_json(c));
  EXPECT_EQ(back.samples, c.samples);
}

TEST(TokenPrediction, StockOverProfileWithACi) {
  TokenPrediction p;
  p.tokens = 128;
  p.stock = rounds(6000);
  p.profile = rounds(5000);
  summarize_prediction(p);
  EXPECT_NEAR(p.speedup, 1.2, 1e-3);
  EXPECT_LE(p.low, p.speedup);
  EXPECT_GE(p.high, p.speedup);
  const TokenPrediction back = token_prediction_from_json(to_json(p));
  EXPECT_DOUBLE_EQ(back.speedup, p.speedup);
  EXPECT_NE(token_text({}, &p).find("predicted tg128 x1.200"), std::string::npos) << token_text({}, &p);
}

}  // namespace
