#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sample_session.h"
#include "temper/error.h"
#include "temper/estimate.h"
#include "temper/fileio.h"
#include "temper/sweep.h"

using namespace temper;
namespace fs = std::filesystem;

namespace {

fs::path temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("temper-session-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

ErrorKind kind_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return ErrorKind::Internal;
}

}  // namespace

TEST(Session, RoundTripsThroughJsonIdentically) {
  Session s = test::sample_session();
  s.results[1].trace_us = {90.2, 90.0, 89.9};  // the sample order; absent (older sessions) elsewhere
  finish_session(s);
  const nlohmann::json j = to_json(s);
  EXPECT_FALSE(j["results"][0].contains("trace_us"));
  const Session back = session_from_json(j, "memory");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.results[1].trace_us, (std::vector<double>{90.2, 90.0, 89.9}));
  EXPECT_TRUE(back.results[0].trace_us.empty());
  ASSERT_EQ(back.results.size(), s.results.size());
  EXPECT_EQ(back.results[1].kernel->registers, 40);
  EXPECT_FALSE(back.results[0].kernel.has_value());
  EXPECT_EQ(back.results[2].status, ResultStatus::Failed);
  EXPECT_EQ(back.results[3].status, ResultStatus::Invalid);
  EXPECT_EQ(*back.results[1].telemetry.power_w, 612.5);
  EXPECT_FALSE(back.results[1].telemetry.temperature_c.has_value());
  EXPECT_EQ(back.devices[0].plan.excluded[0].reason, "more than 1024 threads");
  EXPECT_EQ(back.shapes[0].tensors.size(), 2u);
}

TEST(Session, SavesAtomicallyAndLoadsBack) {
  Session s = test::sample_session();
  finish_session(s);
  const fs::path path = temp_path("a.json");
  save_session(s, path);
  const Session back = load_session(path);
  EXPECT_EQ(to_json(back), to_json(s));
  // Saving again replaces the file whole.
  s.status = "cancelled";
  save_session(s, path);
  EXPECT_EQ(load_session(path).status, "cancelled");
  fs::remove_all(path.parent_path());
}

TEST(Session, RefusesNewerAndBogusSchemaVersions) {
  nlohmann::json j = to_json(test::sample_session());
  j["schema_version"] = kSessionSchemaVersion + 1;
  std::string msg;
  EXPECT_EQ(kind_of([&] { session_from_json(j, "x.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("newer Temper"), std::string::npos) << msg;
  j["schema_version"] = 0;
  EXPECT_EQ(kind_of([&] { session_from_json(j, "x.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("not a Temper session version"), std::string::npos) << msg;
}

TEST(Session, ErrorsNameTheFieldPath) {
  nlohmann::json j = to_json(test::sample_session());
  j["results"][4]["config"].erase("nwarps");
  std::string msg;
  EXPECT_EQ(kind_of([&] { session_from_json(j, "x.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("x.json.results[4].config: missing field \"nwarps\""), std::string::npos) << msg;
  j = to_json(test::sample_session());
  j["results"][0]["type"] = "q9_Z";
  EXPECT_EQ(kind_of([&] { session_from_json(j, "x.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("unknown ggml type"), std::string::npos) << msg;
  j = to_json(test::sample_session());
  j["results"][0]["n"] = "many";
  EXPECT_EQ(kind_of([&] { session_from_json(j, "x.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("results[0].n: expected an integer, found string"), std::string::npos) << msg;
}

TEST(Session, LoadRejectsGarbageWithByteOffset) {
  const fs::path path = temp_path("bad.json");
  write_file_atomic(path, "{\"schema_version\": 1,, }");
  std::string msg;
  EXPECT_EQ(kind_of([&] { load_session(path); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("not valid JSON (byte"), std::string::npos) << msg;
  // Issue 19 (15): an input that cannot be opened is bad input, as for models.
  EXPECT_EQ(kind_of([&] { load_session(temp_path("missing.json")); }), ErrorKind::BadInput);
  fs::remove_all(path.parent_path());
}

TEST(Session, GemvBytesCountWeightsActivationsAndOutputs) {
  // q4_0, n 2, k 64: weights 2 rows × 2 blocks × 18 B; q8_1 2 blocks × 36 B per column; 2 floats per column.
  EXPECT_DOUBLE_EQ(gemv_bytes(GgmlType::Q4_0, 2, 64, 1), 72 + 72 + 8);
  EXPECT_DOUBLE_EQ(gemv_bytes(GgmlType::Q4_0, 2, 64, 3), 72 + 3 * 72 + 3 * 8);
  EXPECT_EQ(kind_of([] { gemv_bytes(GgmlType::Q4_K, 2, 100, 1); }), ErrorKind::BadInput);
}

TEST(Winners, ClearWinBeatsDefaultAndNoiseKeepsIt) {
  const Session s = test::sample_session();
  const auto winners = select_verdicts(s);
  ASSERT_EQ(winners.size(), 2u);
  const Verdict& q4 = winners[0];
  EXPECT_EQ(q4.type, GgmlType::Q4_K);
  EXPECT_EQ(q4.verdict, kVerdictWinner);
  // {1,1} is faster but failed verification: never a winner.
  EXPECT_EQ(q4.config, (Config{2, 1}));
  EXPECT_EQ(q4.default_config, (Config{4, 1}));
  EXPECT_NEAR(q4.speedup, 100.0 / 90.0, 1e-12);
  EXPECT_NEAR(q4.speedup_low, 99.5 / 90.4, 1e-12);
  EXPECT_NEAR(q4.speedup_high, 100.5 / 89.6, 1e-12);
  const Verdict& q6 = winners[1];
  EXPECT_EQ(q6.verdict, kVerdictDefaultStays);  // 149 ± 1 overlaps 150 ± 1
  EXPECT_EQ(q6.config, (Config{4, 1}));
  EXPECT_DOUBLE_EQ(q6.speedup, 1.0);
}

TEST(Winners, AmongTiedConfigsTheSmallestStepFromTheDefaultWins) {
  Session s = test::sample_session();
  // 16x1 is a little faster than 2x1 but their CIs overlap, and it is two steps from 4x1 where
  // 2x1 is one: 2x1 stays. 8x2 is clearly faster than both: it wins whatever its distance.
  s.results.push_back(test::ok_result(GgmlType::Q4_K, 14336, 4096, 1, {16, 1}, 89.8, 0.4));
  EXPECT_EQ(select_verdicts(s)[0].config, (Config{2, 1}));
  s.results.push_back(test::ok_result(GgmlType::Q4_K, 14336, 4096, 1, {8, 2}, 80.0, 0.3));
  const Verdict w = select_verdicts(s)[0];
  EXPECT_EQ(w.config, (Config{8, 2}));
  EXPECT_NEAR(w.speedup, 100.0 / 80.0, 1e-12);
}

TEST(Winners, NoVerifiedDefaultMeansNoWinner) {
  Session s = test::sample_session();
  s.results[0].status = ResultStatus::Failed;
  const auto winners = select_verdicts(s);
  EXPECT_EQ(winners[0].verdict, kVerdictNoDefault);
  EXPECT_FALSE(winners[0].is_winner());
}

TEST(Estimate, SumsCallsTimesMediansAndLabelsItself) {
  Session s = test::sample_session();
  finish_session(s);
  ASSERT_EQ(s.estimates.size(), 1u);
  const Estimate& e = s.estimates[0];
  EXPECT_EQ(e.label, kEstimateLabel);
  EXPECT_EQ(e.shapes_total, 2);
  EXPECT_EQ(e.shapes_measured, 2);
  EXPECT_DOUBLE_EQ(e.default_us_per_token, 64 * 100.0 + 32 * 150.0);
  EXPECT_DOUBLE_EQ(e.tuned_us_per_token, 64 * 90.0 + 32 * 150.0);
  EXPECT_DOUBLE_EQ(e.default_tokens_per_s, 1e6 / 11200.0);
  EXPECT_DOUBLE_EQ(e.tuned_tokens_per_s, 1e6 / 10560.0);
  const double bytes = double(s.shapes[0].bytes_per_token + s.shapes[1].bytes_per_token);
  EXPECT_DOUBLE_EQ(e.bytes_per_token, bytes);
  EXPECT_DOUBLE_EQ(e.ceiling_tokens_per_s, 3000e9 / bytes);
  ASSERT_EQ(e.shapes.size(), 2u);
  EXPECT_DOUBLE_EQ(e.shapes[0].share, 6400.0 / 11200.0);
  EXPECT_EQ(e.shapes[0].tuned_config, (Config{2, 1}));
  EXPECT_EQ(e.shapes[1].tuned_config, (Config{4, 1}));
}

TEST(Estimate, ChoicesWithoutVerifiedResultsFallBackToDefault) {
  const Session s = test::sample_session();
  // {1,1} failed verification; {8,8} was never measured.
  const Estimate e = estimate_decode(s, 0, [](const ShapeKey& shape) -> std::optional<Config> {
    return shape.type == GgmlType::Q4_K ? Config{1, 1} : Config{8, 8};
  });
  EXPECT_DOUBLE_EQ(e.tuned_us_per_token, e.default_us_per_token);
  EXPECT_EQ(kind_of([&] { estimate_decode(s, 3, {}); }), ErrorKind::BadInput);
}

TEST(Estimate, UnmeasuredShapesAreCountedAsMissing) {
  Session s = test::sample_session();
  std::erase_if(s.results, [](const Result& r) { return r.type == GgmlType::Q6_K; });
  const Estimate e = estimate_decode(s, 0, {});
  EXPECT_EQ(e.shapes_measured, 1);
  EXPECT_EQ(e.shapes_total, 2);
  EXPECT_DOUBLE_EQ(e.default_us_per_token, 6400.0);
  EXPECT_FALSE(e.shapes[1].measured);
}

TEST(Winners, GroupsWithOnlyExcludedConfigsGetNoVerdict) {
  Session s = test::sample_session();
  Result invalid = s.results[3];
  invalid.ncols = 8;
  s.results.push_back(invalid);
  EXPECT_EQ(select_verdicts(s).size(), 2u);
}

TEST(Compare, SameSessionAgreesAndAShiftedOneShowsItsSpread) {
  Session a = test::sample_session();
  finish_session(a);
  SessionComparison c = compare_sessions(a, a);
  EXPECT_EQ(c.winners_compared, 2);
  EXPECT_EQ(c.winners_agree, 2);
  EXPECT_EQ(c.medians_compared, 5);  // the failed and invalid results are not timed
  EXPECT_DOUBLE_EQ(c.spread_max, 0.0);

  Session b = a;
  b.results[1].time_us.median = 110.0;  // q4_K {2,1}: 90 → 110, so the default stays
  b.results[1].time_us.ci_low = 109.0;
  b.results[1].time_us.ci_high = 111.0;
  finish_session(b);
  c = compare_sessions(a, b);
  EXPECT_EQ(c.winners_agree, 1);
  ASSERT_EQ(c.disagreements.size(), 1u);
  EXPECT_NE(c.disagreements[0].find("winner 2x1 vs default stays"), std::string::npos) << c.disagreements[0];
  EXPECT_NEAR(c.spread_max, 20.0 / 100.0, 1e-12);
  EXPECT_NE(c.spread_max_at.find("config 2x1"), std::string::npos);
  EXPECT_NE(format_comparison(c).find("1 of 2 agree (50%)"), std::string::npos) << format_comparison(c);

  // Per (shape, ncols): each side's default and best, as the GUI's comparison view shows them.
  ASSERT_EQ(c.rows.size(), 2u);
  const auto& q4 = c.rows[0];
  EXPECT_EQ(shape_text(q4), "q4_K 14336x4096");
  EXPECT_DOUBLE_EQ(q4.a.default_us, 100.0);
  EXPECT_DOUBLE_EQ(q4.a.best_us, 90.0);
  EXPECT_EQ(q4.a.config, (Config{2, 1}));
  EXPECT_EQ(q4.a.verdict, kVerdictWinner);
  EXPECT_DOUBLE_EQ(q4.b.default_us, 100.0);
  EXPECT_EQ(q4.b.verdict, kVerdictDefaultStays);
  EXPECT_EQ(q4.b.config, (Config{4, 1}));
  EXPECT_FALSE(q4.agree);
  EXPECT_TRUE(c.rows[1].agree);
  EXPECT_DOUBLE_EQ(c.rows[1].a.default_us, 150.0);
  ASSERT_EQ(c.estimates_a.size(), 1u);
  EXPECT_GT(c.estimates_a[0].default_us_per_token, c.estimates_a[0].tuned_us_per_token);  // a's winner counts
  EXPECT_DOUBLE_EQ(c.estimates_b[0].default_us_per_token, c.estimates_b[0].tuned_us_per_token);  // b has none
  const std::string text = format_comparison(c);
  EXPECT_NE(text.find("q4_K 14336x4096       1     100.00 (4x1)        90.00 (2x1)     100.00 (4x1)        100.00 (4x1)    no"),
            std::string::npos) << text;
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["rows"][0]["a"]["config"], "2x1");
  EXPECT_EQ(j["rows"][0]["agree"], false);
}

TEST(Compare, ModelMismatchSaysWhy) {
  Session a = test::sample_session();
  EXPECT_EQ(model_mismatch(a, a), "");
  Session b = a;
  b.model.header_hash = "fnv1a64:0000000000000001";
  EXPECT_NE(model_mismatch(a, b).find("different models"), std::string::npos) << model_mismatch(a, b);
  Session synthetic = a, other = a;
  synthetic.model = other.model = {std::string(kSyntheticShape), 0, "", ""};
  EXPECT_EQ(model_mismatch(synthetic, other), "");
  other.shapes.clear();
  EXPECT_EQ(model_mismatch(synthetic, other), "no shape in common");
  EXPECT_NE(model_mismatch(a, synthetic).find("different models"), std::string::npos);
}
