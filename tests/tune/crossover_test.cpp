// Tune's crossover step without an engine: the decision per (type, launch, batch width) from known
// samples, the interleaved rounds against a modelled replay, the records and the install rule for
// them, and what `temper tune` prints (issue 27 item 3).
#include <gtest/gtest.h>

#include <map>

#include "temper/crossover.h"

using namespace temper;
using namespace temper::tune;
using nlohmann::json;

namespace {

// `n` samples around `center` µs, ±`spread` (symmetric for n a multiple of 9: the median is `center`).
std::vector<double> samples(double center, double spread = 0.5, int n = 45) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + spread * (double(i % 9) - 4) / 4);
  return v;
}

const PathTarget kQ4K{GgmlType::Q4_K, Launch::MulMat};
const PathTarget kQ6K{GgmlType::Q6_K, Launch::MulMat};
const PathTarget kQ4KExperts{GgmlType::Q4_K, Launch::MulMatId};

TEST(Crossover, FivePercentFasterWithTightSamplesIsApproved) {
  const CrossoverCell c = decide_path(kQ4K, 8, MatPath::Mmvq, samples(1000), samples(1000 / 1.05));
  ASSERT_EQ(c.record, Approval::Approved);
  EXPECT_EQ(c.other_path, MatPath::Mmq);
  EXPECT_EQ(c.chosen(), MatPath::Mmq);
  EXPECT_NEAR(c.speedup, 1.05, 1e-9);
  EXPECT_GT(c.speedup_low, 1.0);
  EXPECT_LE(c.speedup_low, c.speedup);
  EXPECT_GE(c.speedup_high, c.speedup);
  EXPECT_EQ(c.stock_us, 1000);
}

TEST(Crossover, HalfAPercentIsAPendingRecordNotAnApproval) {
  // Separated CIs (the samples are tight) but below the 1 % minimum: recorded, not applied.
  const CrossoverCell c = decide_path(kQ4K, 4, MatPath::Mmvq, samples(1000, 0.2), samples(1000 / 1.005, 0.2));
  EXPECT_GT(c.speedup_low, 1.0);
  EXPECT_EQ(c.record, Approval::Pending);
  EXPECT_EQ(c.chosen(), MatPath::Mmvq);
  // With a minimum of 0.4 % the same measurement is approved.
  EXPECT_EQ(decide_path(kQ4K, 4, MatPath::Mmvq, samples(1000, 0.2), samples(1000 / 1.005, 0.2), 0.004).record,
            Approval::Approved);
}

TEST(Crossover, OverlappingCisAreNotApproved) {
  // 3 % faster by the medians, but the arms' spreads overlap: pending.
  const CrossoverCell c = decide_path(kQ4K, 8, MatPath::Mmvq, samples(1000, 80), samples(1000 / 1.03, 80));
  EXPECT_GT(c.speedup, 1.01);
  EXPECT_LT(c.speedup_low, 1.0);
  EXPECT_EQ(c.record, Approval::Pending);
}

TEST(Crossover, ASlowerOtherPathLeavesNoRecord) {
  const CrossoverCell c = decide_path(kQ6K, 2, MatPath::Mmvq, samples(1000), samples(1100));
  EXPECT_FALSE(c.record);
  EXPECT_EQ(c.chosen(), MatPath::Mmvq);
  // Where ggml picks mmq (Ada's q2_K at 8), the other path tried is mmvq.
  const CrossoverCell back = decide_path(kQ4K, 8, MatPath::Mmq, samples(1000), samples(900));
  EXPECT_EQ(back.other_path, MatPath::Mmvq);
  EXPECT_EQ(back.chosen(), MatPath::Mmvq);
  EXPECT_THROW(decide_path(kQ4K, 8, MatPath::Mmvq, {}, samples(900)), Error);
}

// A replay modelled as a token of q4_K and q6_K launches (and q4_K experts): mmq saves 5 % of the
// token on q4_K from ncols 8 and costs 10 % on q6_K; ggml's pick is mmvq for MUL_MAT everywhere
// and mmq for the experts above ncols 4 (a lowered cap, as on an older GPU).
struct ModelReplay {
  std::vector<std::pair<int, std::vector<engine::ReplayOptions::ForcedPath>>> calls;
  int tokens = 27;
  std::vector<double> operator()(int ncols, const std::vector<engine::ReplayOptions::ForcedPath>& forced) {
    calls.push_back({ncols, forced});
    double us = 1000;
    for (const auto& f : forced) {
      if (f.type == GgmlType::Q4_K && f.launch == Launch::MulMat && f.path == MatPath::Mmq) us *= ncols >= 8 ? 1 / 1.05 : 1.02;
      if (f.type == GgmlType::Q6_K && f.path == MatPath::Mmq) us *= 1.10;
    }
    return samples(us, 0.3, tokens);
  }
};
MatPath model_stock(const PathTarget& t, int ncols) {
  return t.launch == Launch::MulMatId && ncols > 4 ? MatPath::Mmq : MatPath::Mmvq;
}

TEST(Crossover, RoundsInterleaveTheArmsAndDecideEachTarget) {
  ModelReplay model;
  const std::vector<PathTarget> targets = {kQ4K, kQ6K, kQ4KExperts};
  PathReplay replay = [&](int n, const auto& f) { return model(n, f); };
  int done = 0;
  const WidthSamples w8 = measure_width(8, targets, model_stock, 3, replay, [&] { ++done; });
  // At 8 the experts already run mmq (their cap is 4): the cap is never raised, so not tried.
  ASSERT_EQ(w8.targets, (std::vector<PathTarget>{kQ4K, kQ6K}));
  EXPECT_EQ(done, 3 * 3);
  ASSERT_EQ(model.calls.size(), 9u);
  // Round 1: stock, q4_K, q6_K; round 2 reversed: q6_K, q4_K, stock; round 3 as round 1.
  auto forced_type = [&](size_t i) { return model.calls[i].second.empty() ? -1 : int(model.calls[i].second[0].type); };
  const std::vector<int> order = {forced_type(0), forced_type(1), forced_type(2), forced_type(3), forced_type(4), forced_type(5)};
  EXPECT_EQ(order, (std::vector<int>{-1, int(GgmlType::Q4_K), int(GgmlType::Q6_K), int(GgmlType::Q6_K), int(GgmlType::Q4_K), -1}));
  for (const auto& [n, forced] : model.calls) {
    EXPECT_EQ(n, 8);
    ASSERT_LE(forced.size(), 1u);
    if (!forced.empty()) EXPECT_EQ(forced[0].path, MatPath::Mmq);
  }
  EXPECT_EQ(w8.stock.size(), 3u * 27);
  const std::vector<CrossoverCell> cells = decide_width(w8);
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].record, Approval::Approved);  // q4_K: mmq 5 % faster at 8
  EXPECT_NEAR(cells[0].speedup, 1.05, 1e-6);
  EXPECT_FALSE(cells[1].record);                   // q6_K: mmq slower

  // At 2 the experts run mmvq and are tried on mmq; nothing wins there.
  model.calls.clear();
  const WidthSamples w2 = measure_width(2, targets, model_stock, 2, replay);
  EXPECT_EQ(w2.targets.size(), 3u);
  EXPECT_EQ(model.calls.size(), 2u * 4);
  for (const CrossoverCell& c : decide_width(w2)) EXPECT_FALSE(c.record && *c.record == Approval::Approved) << int(c.target.type);

  // The journal's form reads back to the same decisions.
  const WidthSamples back = width_samples_from_json(json::parse(to_json(w8).dump()));
  EXPECT_EQ(back.targets, w8.targets);
  EXPECT_EQ(back.stock, w8.stock);
  EXPECT_EQ(crossover_json(decide_width(back)), crossover_json(cells));
  EXPECT_THROW(width_samples_from_json(json{{"ncols", 2}, {"stock", {1.0}}, {"targets", {{{"type", "q9_X"}}}}}), Error);
}

TEST(Crossover, PathTargetsFollowThePlanOnceEach) {
  LaunchPlan plan;
  auto launch = [](GgmlType t, Launch l) {
    PlannedLaunch p;
    p.type = t;
    p.launch = l;
    return p;
  };
  plan.launches = {launch(GgmlType::Q4_K, Launch::MulMatGlu), launch(GgmlType::Q6_K, Launch::MulMat),
                   launch(GgmlType::Q4_K, Launch::MulMat), launch(GgmlType::Q4_K, Launch::MulMatIdGlu),
                   launch(GgmlType::Q4_K, Launch::MulMatId)};
  EXPECT_EQ(path_targets(plan), (std::vector<PathTarget>{kQ4K, kQ6K, kQ4KExperts}));
}

std::vector<CrossoverCell> known_cells() {
  std::vector<CrossoverCell> cells;
  for (int n : {2, 4, 8}) cells.push_back(decide_path(kQ4K, n, MatPath::Mmvq, samples(1000), samples(n == 8 ? 1000 / 1.031 : 1010)));
  cells.push_back(decide_path(kQ6K, 8, MatPath::Mmvq, samples(1000, 0.2), samples(1000 / 1.006, 0.2)));
  return cells;
}

TEST(Crossover, TextAndJsonReport) {
  const std::vector<CrossoverCell> cells = known_cells();
  EXPECT_EQ(crossover_text(cells),
            "q4_K  mul_mat  ncols 2 mmvq, 4 mmvq, 8 mmq (+3.1 %)\n"
            "q6_K  mul_mat  ncols 8 mmvq (mmq +0.6 %, not significant)\n");
  const json j = crossover_json(cells);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[2]["type"], "q4_K");
  EXPECT_EQ(j[2]["launch"], "mul_mat");
  EXPECT_EQ(j[2]["ncols"], 8);
  EXPECT_EQ(j[2]["path"], "mmq");
  EXPECT_EQ(j[2]["stock_path"], "mmvq");
  EXPECT_EQ(j[2]["approved"], true);
  EXPECT_EQ(j[2]["record"], "approved");
  EXPECT_NEAR(j[2]["speedup"].get<double>(), 1.031, 1e-9);
  EXPECT_LT(j[2]["speedup_low"].get<double>(), j[2]["speedup"].get<double>());
  EXPECT_EQ(j[2]["stock_us"], 1000.0);
  EXPECT_EQ(j[0]["record"], nullptr);
  EXPECT_EQ(j[0]["path"], "mmvq");
  EXPECT_EQ(j[3]["record"], "pending");
  EXPECT_EQ(j[3]["approved"], false);
}

// An approved mmq record of ggml's mmvq on sm_90, as a tune writes one.
PathChoice approved_mmq(const ProfileDevice& d, GgmlType t, int ncols, Launch l = Launch::MulMat) {
  PathChoice c;
  c.arch = "sm_90";
  c.device = d;
  c.type = t;
  c.launch = l;
  c.ncols = ncols;
  c.path = MatPath::Mmq;
  c.stock_path = MatPath::Mmvq;
  c.approval = Approval::Approved;
  return c;
}

TEST(Crossover, RecordsAndTheInstallRule) {
  const std::vector<CrossoverCell> cells = known_cells();
  const ProfileDevice h100{"NVIDIA H100 80GB HBM3", 132, 81559}, h200{"NVIDIA H200", 132, 143771};
  PathEvidence ev;
  ev.source = "tune 0123456789abcdef";
  ev.device_name = h100.name;
  ev.device_arch = "sm_90";
  const std::vector<PathChoice> choices = path_choices(cells, "sm_90", h100, ev, "2026-11-25T22:00:00Z");
  ASSERT_EQ(choices.size(), 2u);  // q4_K at 8 (approved) and q6_K at 8 (pending); stock stays elsewhere
  EXPECT_EQ(choices[0].approval, Approval::Approved);
  EXPECT_EQ(choices[0].decided_at, "2026-11-25T22:00:00Z");
  EXPECT_EQ(choices[0].path, MatPath::Mmq);
  EXPECT_EQ(choices[0].stock_path, MatPath::Mmvq);
  ASSERT_TRUE(choices[0].evidence);
  EXPECT_EQ(choices[0].evidence->source, "tune 0123456789abcdef");
  EXPECT_NEAR(choices[0].evidence->speedup, 1.031, 1e-9);
  EXPECT_EQ(choices[1].approval, Approval::Pending);
  EXPECT_EQ(choices[1].decided_at, "");

  Profile p;
  p.paths = {approved_mmq(h100, GgmlType::Q4_K, 4),   // measured again, stock stays now: goes
             approved_mmq(h100, GgmlType::Q4_K, 6),   // a width not measured this time: stays
             approved_mmq(h200, GgmlType::Q4_K, 8)};  // another device: stays
  install_paths(p, cells, "sm_90", h100, choices, "a.gguf");
  ASSERT_EQ(p.paths.size(), 4u);
  for (size_t i = 1; i < p.paths.size(); ++i) EXPECT_LT(p.paths[i - 1].key(), p.paths[i].key());
  std::map<std::tuple<std::string, GgmlType, int>, Approval> got;
  for (const PathChoice& c : p.paths) got[{c.device.name, c.type, c.ncols}] = c.approval;
  EXPECT_EQ(got, (std::map<std::tuple<std::string, GgmlType, int>, Approval>{
                     {{h100.name, GgmlType::Q4_K, 6}, Approval::Approved},
                     {{h100.name, GgmlType::Q4_K, 8}, Approval::Approved},
                     {{h100.name, GgmlType::Q6_K, 8}, Approval::Pending},
                     {{h200.name, GgmlType::Q4_K, 8}, Approval::Approved}}));
  // Installing the same again changes nothing.
  const std::vector<PathChoice> before = p.paths;
  install_paths(p, cells, "sm_90", h100, choices, "a.gguf");
  ASSERT_EQ(p.paths.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(p.paths[i].key(), before[i].key());

  // Another model's approved mmq at a cell this model measures within noise (q6_K at 8: +0.6 %, not
  // significant) stays; measured beyond noise slower (q4_K at 4) it goes, as above.
  Profile other;
  other.paths = {approved_mmq(h100, GgmlType::Q6_K, 8), approved_mmq(h100, GgmlType::Q4_K, 4)};
  for (PathChoice& r : other.paths) r.evidence = PathEvidence{.model = "b.gguf", .speedup = 1.35};
  // Both say so: one choice serves both models, and what it gives one it may cost the other.
  EXPECT_EQ(install_paths(other, cells, "sm_90", h100, choices, "a.gguf"),
            (std::vector<std::string>{"q6_K mul_mat ncols 8: mmq (approved on b.gguf, +35.0 %) kept: within noise on a.gguf (+0.6 %)",
                                      "q4_K mul_mat ncols 4: mmq (approved on b.gguf, +35.0 %) is slower on a.gguf beyond noise "
                                      "(-1.0 %); one choice serves every model on this device (ggml's question has no shape): "
                                      "dropped, mmvq again"}));
  ASSERT_EQ(other.paths.size(), 2u);
  EXPECT_EQ(other.paths[0].type, GgmlType::Q4_K);
  EXPECT_EQ(other.paths[0].ncols, 8);  // this model's approved record
  EXPECT_EQ(other.paths[1].type, GgmlType::Q6_K);
  EXPECT_EQ(other.paths[1].approval, Approval::Approved);  // the other model's, not this one's pending
  // The same records made by this model's earlier tune are this model's to replace.
  for (PathChoice& r : other.paths) r.evidence = PathEvidence{.model = "a.gguf"};
  EXPECT_TRUE(install_paths(other, cells, "sm_90", h100, choices, "a.gguf").empty());  // its own: nothing to say
  ASSERT_EQ(other.paths.size(), 2u);
  EXPECT_EQ(other.paths[1].type, GgmlType::Q6_K);
  EXPECT_EQ(other.paths[1].approval, Approval::Pending);
}

TEST(Crossover, AnotherModelsChoiceAtAWidthNotMeasuredHereIsNamed) {
  const ProfileDevice h100{"NVIDIA H100 80GB HBM3", 132, 81559}, h200{"NVIDIA H200", 132, 143771};
  auto made_on = [](PathChoice c, const std::string& model) {
    c.evidence = PathEvidence{.model = model, .speedup = 1.35};
    return c;
  };
  Profile p;
  p.paths = {made_on(approved_mmq(h100, GgmlType::Q4_K, 8), "llama.gguf"),                    // named
             made_on(approved_mmq({}, GgmlType::Q4_K, 6), "llama.gguf"),                      // arch-level: applies too, named
             made_on(approved_mmq(h100, GgmlType::Q4_K, 4), "llama.gguf"),                    // measured here: the crossover's to judge
             made_on(approved_mmq(h100, GgmlType::Q4_K, 2), "qwen.gguf"),                     // this model's own
             made_on(approved_mmq(h200, GgmlType::Q4_K, 8), "llama.gguf"),                    // another device
             made_on(approved_mmq(h100, GgmlType::Q5_K, 8), "llama.gguf"),                    // a type this model does not have
             made_on(approved_mmq(h100, GgmlType::Q4_K, 8, Launch::MulMatId), "llama.gguf")};  // a launch this model does not make
  PathChoice pending = made_on(approved_mmq(h100, GgmlType::Q6_K, 8), "llama.gguf");
  pending.approval = Approval::Pending;  // not applied by the engine
  p.paths.push_back(pending);
  const std::vector<PathTarget> targets = {{GgmlType::Q4_K, Launch::MulMat}, {GgmlType::Q6_K, Launch::MulMat}};
  EXPECT_EQ(unmeasured_paths(p, targets, {4}, "sm_90", h100, "qwen.gguf"),
            (std::vector<std::string>{"q4_K mul_mat ncols 8: mmq (approved on llama.gguf, +35.0 %) applies to qwen.gguf too, not "
                                      "measured on it: add 8 to --ncols to measure it",
                                      "q4_K mul_mat ncols 6: mmq (approved on llama.gguf, +35.0 %) applies to qwen.gguf too, not "
                                      "measured on it: add 6 to --ncols to measure it"}));
  EXPECT_TRUE(unmeasured_paths(p, targets, {2, 4, 6, 8}, "sm_90", h100, "qwen.gguf").empty());
  EXPECT_TRUE(unmeasured_paths(p, targets, {}, "gfx1100", h100, "qwen.gguf").empty());
}

}  // namespace
