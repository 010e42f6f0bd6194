// The ggml-table export (issue 16 item 3): the generated functions are compiled by the system
// compiler with our own ggml_type enum (ggml's ids) and must launch, through
// should_use_small_k → calc_nwarps → calc_rows_per_block, the approved config of every approved
// entry (the kept one where the report says merged) and the stock config everywhere else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "profile_helpers.h"
#include "support/shell_run.h"
#include "support/upstream_tree.h"
#include "temper/defaults.h"
#include "temper/fileio.h"
#include "temper/ggml_table.h"
#include "temper/mmvq_traits.h"
#include "temper/profile.h"

namespace temper {
namespace {

using test::approved;
using test::measured;
using test::profile_of;

// ggml.h's enum ggml_type, written out here with ggml's ids.
constexpr const char* kGgmlTypeEnum = R"(enum ggml_type {
    GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q4_1 = 3, GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7, GGML_TYPE_Q8_0 = 8, GGML_TYPE_Q8_1 = 9, GGML_TYPE_Q2_K = 10, GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12, GGML_TYPE_Q5_K = 13, GGML_TYPE_Q6_K = 14, GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16, GGML_TYPE_IQ2_XS = 17, GGML_TYPE_IQ3_XXS = 18, GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20, GGML_TYPE_IQ3_S = 21, GGML_TYPE_IQ2_S = 22, GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24, GGML_TYPE_I16 = 25, GGML_TYPE_I32 = 26, GGML_TYPE_I64 = 27, GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29, GGML_TYPE_BF16 = 30, GGML_TYPE_TQ1_0 = 34, GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39, GGML_TYPE_NVFP4 = 40, GGML_TYPE_Q1_0 = 41, GGML_TYPE_Q2_0 = 42, GGML_TYPE_COUNT = 43,
};
)";

std::string enum_name(GgmlType t) {
  std::string s = "GGML_TYPE_";
  for (char c : type_name(t)) s += char(std::toupper(uint8_t(c)));
  return s;
}

// Removes a test's scratch directory however the test leaves (ASSERT returns early).
struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + std::to_string(::testing::UnitTest::GetInstance()->random_seed()))) {
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// The checks, independent of the exporter's own model: expected values come from the profile's
// entries, the report's notes and temper::defaults (the stock tables).
std::string harness(const Profile& p, const GgmlTable& t) {
  std::ostringstream h;
  h << kGgmlTypeEnum << "#include \"table.h\"\n\n";
  for (const GgmlTableArch& a : t.arches) {
    const std::string s = a.suffix;
    h << "constexpr bool launches_" << s << "(ggml_type t, int ncols, int blocks, int per_iter, int nwarps, int rows) {\n"
      << "    const bool small_k = should_use_small_k_" << s << "(t, ncols, blocks, per_iter);\n"
      << "    const int n = calc_nwarps_" << s << "(t, ncols, small_k);\n"
      << "    return n == nwarps && calc_rows_per_block_" << s << "(t, ncols, small_k, n) == rows;\n}\n";
    auto check = [&](GgmlType type, int ncols, int k, Config want, const std::string& what) {
      const mmvq::TypeTraits tr = mmvq::type_traits(uint32_t(type));
      h << "static_assert(launches_" << s << "(" << enum_name(type) << ", " << ncols << ", " << k / tr.qk << ", "
        << tr.vdr * a.warp_size / tr.qi << ", " << want.nwarps << ", " << want.rows_per_block << "), \"" << a.arch
        << " " << type_name(type) << " K " << k << " ncols " << ncols << ": " << what << "\");\n";
    };
    // Every approved entry: its own config, or the kept entry's where the report says merged.
    std::map<std::tuple<GgmlType, int, bool>, Config> branch_value;
    for (const ExportNote& n : t.file.report.notes) {
      if (n.key.arch != a.arch || n.fate == ExportFate::Dropped) continue;
      Config want = n.config;
      if (n.fate == ExportFate::Merged) want = find_entry(p, *n.kept)->config;
      check(n.key.type, n.key.ncols, n.key.k, want, n.fate == ExportFate::Emitted ? "approved" : "kept for a merged shape");
      const bool small = n.key.ncols == 1 &&
                         defaults::small_k_applies(a.engine, a.arch, n.key.type, 1, n.key.k, a.warp_size);
      branch_value[{n.key.type, n.key.ncols, small}] = want;
    }
    // Everywhere else: the branch's value where the profile has one, the stock launch otherwise.
    for (const TypeInfo& ti : all_types()) {
      if (!mmvq::type_supported(uint32_t(ti.type))) continue;
      const int qk = int(ti.block_size);
      for (int ncols = 1; ncols <= mmvq::kMaxNcols; ++ncols)
        for (int k : {qk, 2 * qk, 8 * qk, 4096, 14336}) {
          if (k % qk) continue;
          const bool small = ncols == 1 && defaults::small_k_applies(a.engine, a.arch, ti.type, 1, k, a.warp_size);
          const auto v = branch_value.find({ti.type, ncols, small});
          if (v != branch_value.end()) check(ti.type, ncols, k, v->second, "the branch's value");
          else check(ti.type, ncols, k, defaults::default_config(a.engine, a.arch, ti.type, ncols, k, a.warp_size), "stock");
        }
    }
  }
  h << "int main() { return 0; }\n";
  return h.str();
}

// Writes the export and the harness, compiles both as C++17 with warnings as errors, runs it.
void expect_compiles_and_launches(const Profile& p, const GgmlTable& t, const std::string& name) {
  const ScratchDir scratch("temper-ggml-table-" + name);
  const std::filesystem::path& dir = scratch.path;
  write_file_atomic(dir / "table.h", t.file.content);
  const std::string h = harness(p, t);
  write_file_atomic(dir / "harness.cpp", h);
  const std::string cxx = TEMPER_HOST_CXX, d = dir.string();
  const std::string flags = " -std=c++17 -Wall -Wextra -Werror -pedantic ";
  EXPECT_EQ(test::system_status(cxx + flags + "-o " + d + "/harness " + d + "/harness.cpp"), 0) << t.file.content;
  EXPECT_EQ(test::system_status(d + "/harness"), 0);
  if (test::system_status("command -v clang++ >/dev/null 2>&1") == 0) {
    EXPECT_EQ(test::system_status("clang++" + flags + "-fsyntax-only " + d + "/harness.cpp"), 0);
  }
  // The harness can fail: one wrong expectation does not compile.
  if (t.arches.empty()) return;
  std::string wrong = h;
  const size_t at = wrong.find(", \"");  // the first check's message: change its rows_per_block
  ASSERT_NE(at, std::string::npos);
  const size_t rows = wrong.rfind(", ", at - 1);
  wrong.replace(rows, at - rows, ", 99)");
  write_file_atomic(dir / "wrong.cpp", wrong);
  EXPECT_NE(test::system_status(cxx + flags + "-fsyntax-only " + d + "/wrong.cpp 2>/dev/null"), 0);
}

TEST(GgmlTable, DemoSessionProfileCompilesAndLaunchesTheApprovedValues) {
  const std::filesystem::path demo = std::filesystem::path(TEMPER_SOURCE_DIR) / "resources/demo-session.json";
  const Session s = load_session(demo);
  Profile made = profile_from_session(s);
  ASSERT_GT(approve_significant(made), 0);
  // As a user does it: the session → a Temper profile file → the ggml table.
  const Profile p = profile_from_json(nlohmann::json::parse(export_temper(made).content), "profile");
  const GgmlTable t = build_ggml_table(p);
  ASSERT_EQ(t.arches.size(), 1u);
  EXPECT_EQ(t.arches[0].arch, "sm_90");
  EXPECT_EQ(t.arches[0].stock_table, "GENERIC");
  EXPECT_EQ(t.arches[0].engine, "ggml-7180759");
  int approved_entries = 0;
  for (const auto& e : p.entries) approved_entries += e.approval == Approval::Approved;
  EXPECT_EQ(t.file.report.notes.size(), p.entries.size());  // every entry accounted for
  // From the profile alone a kept config unmeasured at a shape counts as stock: every approved entry is carried or merged.
  EXPECT_EQ(t.file.report.emitted() + t.file.report.merged(), approved_entries);
  EXPECT_GT(t.file.report.merged(), 0);  // Llama-3-8B's q6_K shapes disagree at ncols 1
  EXPECT_NE(t.file.content.find("static constexpr TEMPER_MMVQ_HD int calc_nwarps_sm_90(ggml_type type, int ncols_dst"),
            std::string::npos);
  EXPECT_NE(t.evidence.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(t.evidence.find("ggml-7180759"), std::string::npos);
  expect_compiles_and_launches(p, t, "demo");

  // From the session directly: the driver is known and kept configs are looked up in its results.
  const GgmlTable direct = build_ggml_table(made, {}, &s);
  EXPECT_NE(direct.evidence.find("- driver: 13.0 (runtime 13.0)"), std::string::npos);
  EXPECT_NE(direct.evidence.find("(session " + s.id + ")"), std::string::npos) << direct.evidence;
  EXPECT_EQ(t.evidence.find("13.0 (runtime"), std::string::npos);
  // The session measured q6_K 2x2 at 1024x4096 and 8x2 at 128256x4096: neither gains over the
  // row's three measured shapes at ncols 1, so upstream's 4x1 stays and both approved shapes are
  // reported as dropped.
  const GgmlTableArch& a = direct.arches.at(0);
  EXPECT_EQ(a.value(GgmlType::Q6_K, 1, false), (Config{4, 1}));
  int kept_upstream = 0;
  for (const auto& n : direct.file.report.notes)
    kept_upstream += n.fate == ExportFate::Dropped && n.key.type == GgmlType::Q6_K && n.key.ncols == 1 &&
                     n.reason.find("upstream's 4x1 stays") != std::string::npos;
  EXPECT_EQ(kept_upstream, 2);
  // Issue 30: the output head's 1x4 at q6_K ncols 4 (1.165x there) slows the two other q6_K shapes it
  // would reach, 1021 -> 1319 µs per token: upstream's 4x2 stays and the entry says what it costs.
  EXPECT_EQ(a.value(GgmlType::Q6_K, 4, false), (Config{4, 2}));
  bool head_dropped = false;
  for (const auto& n : direct.file.report.notes)
    head_dropped = head_dropped || (n.fate == ExportFate::Dropped && n.key.shape() == ShapeKey{GgmlType::Q6_K, 128256, 4096} && n.key.ncols == 4 &&
                                    n.reason.find("+297.85 µs per token (1021.04 -> 1318.89 over 3 measured shapes)") != std::string::npos);
  EXPECT_TRUE(head_dropped) << direct.file.report.text();
  // Each row's net effect per token is in the report and the evidence.
  ASSERT_EQ(direct.file.report.rows.size(), a.cells.size());
  EXPECT_NE(direct.file.report.text().find("row: sm_90 q6_K ncols 4: upstream's 4x2 stays, 1021.04 -> 1021.04 µs per token (net +0.00) over 3 measured shapes"),
            std::string::npos) << direct.file.report.text();
  EXPECT_NE(direct.evidence.find("| q4_K | 1 | large | 4x1 | 4x2 | 1024×4096, 4096×4096*, 4096×14336, 14336×4096* | 2213.38 | 2096.96 | -116.42 |"),
            std::string::npos) << direct.evidence;
  // Measured shapes without an approved entry that the table reaches are listed: q4_K 1024x4096 stayed stock.
  EXPECT_NE(direct.evidence.find("| q4_K 1024×4096 ncols 1 | default stays | 4x1 | 4x2 |"), std::string::npos);
  expect_compiles_and_launches(made, direct, "direct");
}

// Issue 30's "done when": no (type, ncols) row of the demo session's table, applied to every shape of
// that type and batch width the session measured, is slower per token than the stock configs —
// checked from the session's own medians and calls per token, not from the exporter's sums.
TEST(GgmlTable, NoRowOfTheDemoTableIsSlowerThanStockOverEveryMeasuredShape) {
  const Session s = load_session(std::filesystem::path(TEMPER_SOURCE_DIR) / "resources/demo-session.json");
  for (const char* policy : {"significant", "all"}) {
    Profile p = profile_from_session(s);
    if (std::string(policy) == "all") approve_all(p);
    else approve_significant(p);
    const GgmlTable t = build_ggml_table(p, {}, &s);
    std::map<std::pair<GgmlType, int>, std::pair<double, double>> per_row;  // stock, table µs per token
    int changed = 0;
    for (const Verdict& w : s.verdicts) {
      const Shape* shape = nullptr;
      for (const Shape& sh : s.shapes)
        if (sh.shape() == w.shape()) shape = &sh;
      ASSERT_TRUE(shape);
      const std::optional<Config> launched = t.launch({"sm_90", w.shape(), w.ncols});
      ASSERT_TRUE(launched);
      const Result* stock = find_result(s, w.group(), w.default_config);
      const Result* table = find_result(s, w.group(), *launched);
      ASSERT_TRUE(stock && table) << key_text({"sm_90", w.shape(), w.ncols}) << " " << config_text(*launched);
      auto& [stock_us, table_us] = per_row[{w.type, w.ncols}];
      stock_us += double(shape->calls_per_token) * stock->time_us.median;
      table_us += double(shape->calls_per_token) * table->time_us.median;
      changed += !(*launched == w.default_config);
    }
    EXPECT_GT(changed, 0) << policy;  // the table does change launches
    for (const auto& [row, us] : per_row)
      EXPECT_LE(us.second, us.first + 1e-6) << policy << ": " << type_name(row.first) << " ncols " << row.second;
  }
}

// The tokens/s an export makes the engine run: the ggml table's one value per (type, ncols) at ncols 1,
// between stock and every approval; an export carrying nothing says why.
TEST(GgmlTable, EstimateAsExportedAndEmptyExports) {
  const Session s = load_session(std::filesystem::path(TEMPER_SOURCE_DIR) / "resources/demo-session.json");
  Profile p = profile_from_session(s);
  approve_significant(p);
  const Estimate approved = estimate_with_profile(s, 0, p);
  const Estimate table = estimate_exported(s, 0, p, "ggml-table");
  const GgmlTable t = build_ggml_table(p, {}, &s);
  double us = 0;
  for (const Shape& sh : s.shapes) {
    const Result* r = find_result(s, group_key(0, sh, 1), *t.launch({"sm_90", sh.shape(), 1}));
    ASSERT_TRUE(r);
    us += double(sh.calls_per_token) * r->time_us.median;
  }
  EXPECT_NEAR(table.tuned_us_per_token, us, 1e-6);
  EXPECT_GT(table.tuned_tokens_per_s, table.default_tokens_per_s);
  EXPECT_LT(table.tuned_tokens_per_s, approved.tuned_tokens_per_s);  // q6_K's approvals do not survive one value per type
  EXPECT_NEAR(estimate_exported(s, 0, p, "temper").tuned_tokens_per_s, approved.tuned_tokens_per_s, 1e-9);
  // kernel-anvil can express none of the demo's approvals: stock, and the export says why.
  const Estimate anvil = estimate_exported(s, 0, p, "kernel-anvil");
  EXPECT_NEAR(anvil.tuned_tokens_per_s, anvil.default_tokens_per_s, 1e-9);
  EXPECT_NE(empty_export_reason(export_kernel_anvil(p)).find("nothing approved is expressible in the kernel-anvil format"),
            std::string::npos);
  EXPECT_EQ(empty_export_reason(t.file), "");
  EXPECT_EQ(empty_export_reason(export_csv(s)), "");
  Profile none = profile_from_session(s);
  EXPECT_NE(empty_export_reason(export_ggml_table(none, {}, &s)).find("nothing is approved"), std::string::npos);
  EXPECT_NEAR(estimate_exported(s, 0, none, "ggml-table").tuned_tokens_per_s, approved.default_tokens_per_s, 1e-9);
}

TEST(GgmlTable, SmallKRuleMergesArchesAndDrops) {
  const Config generic{4, 1};
  // q4_0: small K (4 blocks < 4 × 16) and large K want different configs: the rule stays, each branch its own.
  // q8_0: the same config on both sides: small K is switched off for it.
  // q6_K ncols 2: two shapes disagree; the one with the larger gain per token decides.
  ProfileEntry q6_big = approved(measured("sm_90", GgmlType::Q6_K, 4096, 14336, 2, {2, 4}, {4, 2}, 1.25));
  ProfileEntry q6_small = approved(measured("sm_90", GgmlType::Q6_K, 1024, 4096, 2, {4, 2}, {2, 4}, 1.05));
  const Profile p = profile_of({
      approved(measured("sm_90", GgmlType::Q4_0, 4096, 128, 1, {8, 8}, {4, 4}, 1.2)),
      approved(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {2, 1}, generic, 1.1)),
      approved(measured("sm_90", GgmlType::Q8_0, 4096, 256, 1, {8, 1}, {4, 4}, 1.1)),
      approved(measured("sm_90", GgmlType::Q8_0, 4096, 4096, 1, {8, 1}, generic, 1.1)),
      q6_big, q6_small,
      approved(measured("gfx1100", GgmlType::Q4_0, 4096, 4096, 1, {4, 1}, {8, 1}, 1.1)),
      measured("sm_90", GgmlType::Q5_K, 4096, 4096, 1, {2, 1}, generic, 1.1),  // pending
  });
  const GgmlTable t = build_ggml_table(p);
  ASSERT_EQ(t.arches.size(), 2u);  // gfx1100, sm_90: one set of functions each
  const GgmlTableArch& nv = t.arches[1];
  EXPECT_EQ(nv.arch, "sm_90");
  EXPECT_EQ(t.arches[0].stock_table, "RDNA3_0");
  EXPECT_EQ(nv.small_k_off, std::vector<GgmlType>{GgmlType::Q8_0});
  EXPECT_EQ(nv.small_k_factor(GgmlType::Q4_0), 4);
  EXPECT_TRUE(nv.uses_small_k(GgmlType::Q4_0, 1, 128));
  EXPECT_FALSE(nv.uses_small_k(GgmlType::Q8_0, 1, 256));
  EXPECT_EQ(nv.value(GgmlType::Q4_0, 1, true), (Config{8, 8}));
  EXPECT_EQ(nv.value(GgmlType::Q4_0, 1, false), (Config{2, 1}));
  EXPECT_EQ(nv.value(GgmlType::Q6_K, 2, false), (Config{2, 4}));
  EXPECT_EQ(t.file.report.dropped(), 1);
  ASSERT_EQ(t.file.report.merged(), 1);
  for (const auto& n : t.file.report.notes)
    if (n.fate == ExportFate::Merged) {
      EXPECT_EQ(n.key, q6_small.key);
      EXPECT_EQ(*n.kept, q6_big.key);
      // 2x4 is q6_small's default: its cost is measured, the whole gain (100 − 100/1.05 µs).
      EXPECT_NE(n.reason.find("here 100.00 µs vs 95.24 µs approved (+4.76 µs per call)"), std::string::npos)
          << n.reason;
    }
  EXPECT_NE(t.evidence.find("| q6_K 1024×4096 ncols 2 | 4x2 | 2x4 | 95.24 | 100.00 (default) | 4.76 | 152.38 |"),
            std::string::npos)
      << t.evidence;
  EXPECT_NE(t.file.content.find("Switched off where the same config won on both sides of the threshold: q8_0"),
            std::string::npos);
  expect_compiles_and_launches(p, t, "rules");

  // --arch keeps one arch; the other's entries are reported as dropped.
  const GgmlTable one = build_ggml_table(p, {"gfx1100"});
  ASSERT_EQ(one.arches.size(), 1u);
  EXPECT_EQ(one.file.content.find("calc_nwarps_sm_90"), std::string::npos);
  EXPECT_EQ(one.file.report.emitted(), 1);
  expect_compiles_and_launches(p, one, "one");
  EXPECT_THROW(build_ggml_table(p, {"gfx942"}), Error);

  // Nothing approved: a valid file with upstream's values only.
  const GgmlTable none = build_ggml_table(profile_of({}));
  EXPECT_TRUE(none.arches.empty());
  EXPECT_NE(none.file.content.find("No approved entry"), std::string::npos);
  expect_compiles_and_launches(profile_of({}), none, "none");
}

TEST(GgmlTable, ArchesSpellingOneIdentifierStayApartAndCommentsStaySafe) {
  ProfileEntry odd = approved(measured("gfx90a:xnack-", GgmlType::Q4_0, 4096, 4096, 1, {1, 1}, {2, 1}, 1.1));
  odd.provenance->device_name = "GPU */ with\na comment end";
  const Profile p = profile_of({odd, approved(measured("gfx90a_xnack_", GgmlType::Q4_0, 4096, 4096, 1, {4, 1}, {4, 1}, 1.1))});
  const GgmlTable t = build_ggml_table(p);
  ASSERT_EQ(t.arches.size(), 2u);
  EXPECT_NE(t.arches[0].suffix, t.arches[1].suffix);
  EXPECT_EQ(t.arches[0].warp_size, 64);  // GCN/CDNA waves
  expect_compiles_and_launches(p, t, "odd");
}

// Cuts `from` ... the first line after it that is `until` alone out of `text`.
std::string cut(const std::string& text, const std::string& from, const std::string& until) {
  const size_t a = text.find(from);
  if (a == std::string::npos) return {};
  const size_t b = text.find("\n" + until + "\n", a);
  return b == std::string::npos ? std::string() : text.substr(a, b + until.size() + 2 - a);
}

// Issue 28: the pull request's evidence carries the profile's llama-bench table in compare-llama-bench's
// shape while the record describes the profile as it is; a stale or missing record is said so.
TEST(GgmlTable, EvidenceCarriesTheCurrentLlamaBenchRecord) {
  Profile p = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 14336, 4096, 1, {4, 4}, {4, 1}, 1.2, 5000)),
                          measured("sm_90", GgmlType::Q6_K, 4096, 14336, 2, {2, 2}, {4, 2}, 1.05)});
  EXPECT_NE(build_ggml_table(p).evidence.find("No llama-bench record in the profile for sm_90"), std::string::npos);
  BenchRecord r = test::bench_record(p, "GPU */ with a comment end");
  add_bench_record(p, r);
  const GgmlTable t = build_ggml_table(p);
  EXPECT_NE(t.evidence.find("#### llama-bench"), std::string::npos);
  EXPECT_NE(t.evidence.find("| Microbatch size | Test  | t/s stock | t/s profile | Speedup | 95 % CI"), std::string::npos) << t.evidence;
  EXPECT_NE(t.evidence.find("| tg128 |    100.10 |      105.05 |   1.050 | [1.046, 1.053] |"), std::string::npos) << t.evidence;
  EXPECT_NE(t.evidence.find("`temper: profile /p.json: 1 entries for sm_90"), std::string::npos);
  EXPECT_EQ(t.file.content.find("*/"), t.file.content.rfind("*/"));  // the evidence's comment ends once
  // Approving the q6_K entry changes what the engine launches: the record no longer describes it.
  p.entries[1].approval = Approval::Approved;
  p.entries[1].decided_at = "2026-11-25T12:00:00Z";
  const std::string stale = build_ggml_table(p).evidence;
  EXPECT_NE(stale.find("predates its current approvals: re-run `temper engine bench`"), std::string::npos) << stale;
  EXPECT_EQ(stale.find("| tg128 |"), std::string::npos);
}

// Issue 49: the evidence claims only what the table carries. A record that measured a same-input
// group (or pipelining, or an mmq path) is not the table's: its numbers are left out and the text says
// what it measured. A row whose speedup CI reaches 1.000 keeps upstream's value and says why.
TEST(GgmlTable, EvidenceClaimsOnlyWhatTheTableCarries) {
  ProfileEntry group = approved(measured("sm_90", GgmlType::Q4_K, 6144, 4096, 1, {4, 2}, {4, 1}, 1.1));
  group.key = group_profile_key("sm_90", {{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}, {GgmlType::Q4_K, 1024}}, 4096, 1);
  Profile p = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 14336, 4096, 1, {4, 4}, {4, 1}, 1.2, 5000)), group});
  add_bench_record(p, test::bench_record(p));
  const GgmlTable t = build_ggml_table(p);
  EXPECT_NE(t.evidence.find("measured the whole profile in the hooked engine, including 1 same-input groups"), std::string::npos)
      << t.evidence;
  EXPECT_EQ(t.evidence.find("| tg128 |"), std::string::npos) << t.evidence;
  EXPECT_EQ(t.evidence.find("1.050"), std::string::npos);

  // 1 % faster with CIs that overlap: not a gain the table may claim.
  const Profile close = profile_of({approved(measured("sm_90", GgmlType::Q6_K, 4096, 14336, 1, {2, 1}, {4, 1}, 1.01))});
  const GgmlTable c = build_ggml_table(close);
  ASSERT_EQ(c.arches.size(), 1u);
  EXPECT_EQ(c.arches[0].value(GgmlType::Q6_K, 1, false), c.arches[0].cells.at(0).stock);
  EXPECT_EQ(c.file.report.emitted(), 0);
  bool said = false;
  for (const auto& n : c.file.report.notes) said = said || n.reason.find("reaches 1.000") != std::string::npos;
  EXPECT_TRUE(said) << c.file.report.text();
}

// Wherever the profile has no entry, the export agrees with upstream's own calc_nwarps and
// calc_rows_per_block, cut at test time from the mmvq.cu of the version the entries were measured
// against ($TEMPER_UPSTREAM/ggml-<commit>, read in place; skipped without it).
TEST(GgmlTable, StockValuesAreUpstreamsOwn) {
  std::string why;
  for (const char* tree : {"ggml-d99724f", "ggml-7180759"})
    if (test::upstream_tree(tree, &why).empty()) GTEST_SKIP() << why;
  const ScratchDir scratch("temper-ggml-upstream-");
  const std::filesystem::path& dir = scratch.path;
  const std::string d = dir.string(), cxx = TEMPER_HOST_CXX;
  struct Case {
    std::string commit, arch, table;
  };
  for (const Case& c : {Case{"7180759", "sm_90", "GENERIC"}, Case{"7180759", "gfx906", "GCN"},
                        Case{"d99724f", "sm_75", "TURING"}, Case{"d99724f", "gfx1100", "RDNA3_0"},
                        Case{"d99724f", "gfx1201", "RDNA4"}}) {
    SCOPED_TRACE(c.arch + " at " + c.commit);
    const std::string mmvq = read_file(test::upstream_tree("ggml-" + c.commit) / "src/ggml-cuda/mmvq.cu");
    const std::string table_ids = cut(mmvq, "enum mmvq_parameter_table_id {", "};");
    const std::string nwarps = cut(mmvq, "static constexpr __host__ __device__ int calc_nwarps(", "}");
    const std::string rows = cut(mmvq, "static constexpr __host__ __device__ int calc_rows_per_block(", "}");
    ASSERT_FALSE(table_ids.empty() || nwarps.empty() || rows.empty());
    // One approved entry (q4_0 at ncols 3); everything else must be upstream's.
    ProfileEntry e = approved(measured(c.arch, GgmlType::Q4_0, 4096, 4096, 3, {1, 1}, {2, 2}, 1.2));
    e.provenance->engine = "ggml-" + c.commit;
    const GgmlTable t = build_ggml_table(profile_of({e}));
    ASSERT_EQ(t.arches.size(), 1u);
    EXPECT_EQ(t.arches[0].stock_table, c.table);
    write_file_atomic(dir / "table.h", t.file.content);
    std::ostringstream h;
    h << "#define __host__\n#define __device__\n" << kGgmlTypeEnum << table_ids << "\n" << nwarps << "\n" << rows
      << "\n#include \"table.h\"\n";
    const std::string sfx = t.arches[0].suffix, id = "MMVQ_PARAMETERS_" + c.table;
    for (const TypeInfo& ti : all_types()) {
      if (!mmvq::type_supported(uint32_t(ti.type))) continue;
      const std::string type = enum_name(ti.type);
      for (int ncols = 1; ncols <= mmvq::kMaxNcols; ++ncols) {
        if (ti.type == GgmlType::Q4_0 && ncols == 3) continue;
        h << "static_assert(calc_nwarps_" << sfx << "(" << type << ", " << ncols << ") == calc_nwarps(" << type << ", "
          << ncols << ", " << id << ") && calc_rows_per_block_" << sfx << "(" << type << ", " << ncols
          << ") == calc_rows_per_block(" << ncols << ", " << id << "), \"" << type << " " << ncols << "\");\n";
      }
      // Small K where upstream can launch it: rows_per_block = nwarps.
      if (defaults::small_k_variant("ggml-" + c.commit, c.arch, ti.type, 1))
        h << "static_assert(calc_rows_per_block_" << sfx << "(" << type << ", 1, true, calc_nwarps_" << sfx << "(" << type
          << ", 1, true)) == calc_rows_per_block(1, " << id << ", true, calc_nwarps(" << type << ", 1, " << id
          << ")), \"" << type << " small K\");\n";
    }
    h << "static_assert(calc_nwarps_" << sfx << "(GGML_TYPE_Q4_0, 3) == 1, \"the approved entry\");\n"
      << "int main() { return 0; }\n";
    write_file_atomic(dir / "upstream.cpp", h.str());
    EXPECT_EQ(test::system_status(cxx + " -std=c++17 -fsyntax-only " + d + "/upstream.cpp"), 0) << h.str();
  }
}

}  // namespace
}  // namespace temper
