// Profiles: from a session, approval policy, JSON round trips against the schema, the kernel-anvil
// import, validation, merge and diff on hand-made profiles.
#include "temper/profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "profile_helpers.h"
#include "sweep/sample_session.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/ggml_table.h"
#include "temper/sweep.h"

namespace temper {
namespace {

using nlohmann::json;
using test::approved;
using test::bench_record;
using test::measured;
using test::profile_of;

std::filesystem::path temp_dir() {
  auto d = std::filesystem::temp_directory_path() /
           ("temper-profile-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The JSON-schema keywords resources/profile.schema.json uses; collects every violation.
struct Schema {
  json root;
  std::vector<std::string> errors;

  static bool has_type(const json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
  }
  const json& resolve(const json& s) const {
    if (!s.contains("$ref")) return s;
    const std::string ref = s["$ref"];
    return root["$defs"][ref.substr(std::string("#/$defs/").size())];
  }
  bool ok(const json& schema, const json& v) {
    Schema sub{root, {}};
    sub.check(schema, v, "");
    return sub.errors.empty();
  }
  void check(const json& schema_in, const json& v, const std::string& path) {
    const json& s = resolve(schema_in);
    if (s.contains("anyOf")) {
      bool any = false;
      for (const auto& alt : s["anyOf"]) any = any || ok(alt, v);
      if (!any) errors.push_back(path + ": matches no alternative");
      return;
    }
    if (s.contains("type") && !has_type(v, s["type"])) return errors.push_back(path + ": expected " + s["type"].get<std::string>());
    if (s.contains("const") && v != s["const"]) errors.push_back(path + ": expected " + s["const"].dump());
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
      errors.push_back(path + ": " + v.dump() + " not in enum");
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>()) errors.push_back(path + ": below minimum");
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>()) errors.push_back(path + ": above maximum");
    }
    if (v.is_string()) {
      const std::string str = v;
      if (s.contains("minLength") && str.size() < s["minLength"].get<size_t>()) errors.push_back(path + ": too short");
      if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>())))
        errors.push_back(path + ": pattern");
    }
    if (v.is_array() && s.contains("items"))
      for (size_t i = 0; i < v.size(); ++i) check(s["items"], v[i], path + "[" + std::to_string(i) + "]");
    if (v.is_object()) {
      for (const auto& r : s.value("required", json::array()))
        if (!v.contains(r.get<std::string>())) errors.push_back(path + ": missing " + r.get<std::string>());
      const json props = s.value("properties", json::object());
      for (const auto& [key, val] : v.items()) {
        if (props.contains(key))
          check(props[key], val, path + "." + key);
        else if (s.contains("additionalProperties") && s["additionalProperties"] == false)
          errors.push_back(path + ": unexpected field " + key);
      }
    }
  }
};

std::vector<std::string> schema_errors(const json& doc) {
  Schema s{json::parse(read_file(TEMPER_SOURCE_DIR "/resources/profile.schema.json")), {}};
  s.check(s.root, doc, "$");
  return s.errors;
}

Session session_with_winners() {
  Session s = test::sample_session();
  s.verdicts = select_verdicts(s);
  return s;
}

Profile mixed_profile() {
  Profile p = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 14336, 4096, 1, {4, 4}, {4, 1}, 1.2, 5000)),
                          measured("sm_90", GgmlType::Q6_K, 4096, 14336, 2, {2, 2}, {4, 2}, 1.01),
                          approved(measured("gfx942", GgmlType::Q4_0, 4096, 4096, 1, {2, 2}, {2, 1}, 1.1))});
  p.entries[1].approval = Approval::Rejected;
  p.entries[1].decided_at = "2026-11-23T12:01:00Z";
  p.entries[1].note = "noisy; \"quoted\" note";
  return p;
}

TEST(Profile, FromSessionTakesWinnersWithProvenance) {
  const Session s = session_with_winners();
  const Profile p = profile_from_session(s);
  ASSERT_EQ(p.entries.size(), 1u);  // q4_K wins, q6_K's default stays
  const ProfileEntry& e = p.entries[0];
  // Keyed by the device it was measured on: another GPU of the arch may want another config.
  EXPECT_EQ(e.key, (ProfileKey{"sm_90", ShapeKey{GgmlType::Q4_K, 14336, 4096}, 1, ProfileDevice{"Fake GPU", 132}}));
  EXPECT_EQ(e.key.device.memory_mib, 80u << 10);
  EXPECT_EQ(e.config, (Config{2, 1}));
  EXPECT_EQ(e.default_config, (Config{4, 1}));
  EXPECT_EQ(e.approval, Approval::Pending);
  ASSERT_TRUE(e.provenance);
  EXPECT_EQ(e.provenance->session_id, s.id);
  EXPECT_EQ(e.provenance->device_name, "Fake GPU");
  EXPECT_DOUBLE_EQ(e.provenance->default_us, 100.0);
  EXPECT_DOUBLE_EQ(e.provenance->tuned_us, 90.0);
  EXPECT_NEAR(e.provenance->speedup, 100.0 / 90.0, 1e-12);
  EXPECT_EQ(e.provenance->bytes_per_token, s.shapes[0].bytes_per_token);
  EXPECT_EQ(e.provenance->engine, "ggml-7180759");
  EXPECT_TRUE(validate_profile(p).empty());
  EXPECT_TRUE(profile_from_session(s, 1).entries.empty());  // no device 1
}

TEST(Profile, ApproveSignificantHonoursCiAndMinimumSpeedup) {
  ProfileEntry overlapping = measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {2, 1}, {4, 1}, 1.2);
  overlapping.provenance->tuned_ci_high = 99.5;  // CI reaches into the default's
  Profile p = profile_of({measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {2, 1}, {4, 1}, 1.05),
                          measured("sm_90", GgmlType::Q6_K, 4096, 4096, 1, {2, 1}, {4, 1}, 1.02), overlapping});
  Profile q = p;
  EXPECT_EQ(approve_significant(q, 0.03, "2026-11-23T13:00:00Z"), 1);
  EXPECT_EQ(find_entry(q, {"sm_90", GgmlType::Q4_K, 4096, 4096, 1})->approval, Approval::Approved);
  EXPECT_EQ(find_entry(q, {"sm_90", GgmlType::Q4_K, 4096, 4096, 1})->decided_at, "2026-11-23T13:00:00Z");
  EXPECT_EQ(find_entry(q, {"sm_90", GgmlType::Q6_K, 4096, 4096, 1})->approval, Approval::Pending);  // 2% < 3%
  EXPECT_EQ(find_entry(q, {"sm_90", GgmlType::Q4_0, 4096, 4096, 1})->approval, Approval::Pending);  // CI overlap
  q = p;
  EXPECT_EQ(approve_significant(q, 0.01), 2);
  q = p;
  EXPECT_EQ(approve_significant(q, 0.10), 0);
  EXPECT_THROW(approve_significant(q, -0.1), Error);
  EXPECT_EQ(approve_all(q), 3);
  set_approval(q, {"sm_90", GgmlType::Q6_K, 4096, 4096, 1}, Approval::Rejected, "too small");
  EXPECT_EQ(find_entry(q, {"sm_90", GgmlType::Q6_K, 4096, 4096, 1})->approval, Approval::Rejected);
  EXPECT_EQ(find_entry(q, {"sm_90", GgmlType::Q6_K, 4096, 4096, 1})->note, "too small");
  try {
    set_approval(q, {"sm_90", GgmlType::Q6_K, 4096, 8192, 1}, Approval::Approved);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("4096x8192"), std::string::npos);
  }
}

TEST(Profile, EstimateCountsOnlyApprovedEntries) {
  const Session s = session_with_winners();
  Profile p = profile_from_session(s);
  const Estimate pending = estimate_with_profile(s, 0, p);
  EXPECT_DOUBLE_EQ(pending.default_tokens_per_s, pending.tuned_tokens_per_s);
  approve_all(p);
  const Estimate on = estimate_with_profile(s, 0, p);
  // q4_K: 64 calls × 100 → 90 µs; q6_K: 32 calls × 150 µs stays.
  EXPECT_NEAR(on.default_us_per_token, 64 * 100.0 + 32 * 150.0, 1e-6);
  EXPECT_NEAR(on.tuned_us_per_token, 64 * 90.0 + 32 * 150.0, 1e-6);
  EXPECT_GT(on.tuned_tokens_per_s, on.default_tokens_per_s);
  EXPECT_THROW(estimate_with_profile(s, 3, p), Error);
}

TEST(ProfileJson, RoundTripsIdenticallyAndMatchesSchema) {
  const Profile p = mixed_profile();
  const json j = to_json(p);
  EXPECT_EQ(schema_errors(j), std::vector<std::string>{});
  const auto dir = temp_dir();
  save_profile(p, dir / "p.json");
  const Profile back = load_profile(dir / "p.json");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.entries.size(), 3u);
  EXPECT_EQ(back.entries[1].note, "noisy; \"quoted\" note");
  // A session-made profile and the shipped example validate too.
  EXPECT_EQ(schema_errors(to_json(profile_from_session(session_with_winners()))), std::vector<std::string>{});
  const json example = json::parse(read_file(TEMPER_SOURCE_DIR "/tests/profile/fixtures/profile.json"));
  EXPECT_EQ(schema_errors(example), std::vector<std::string>{});
  EXPECT_TRUE(validate_profile(profile_from_json(example, "example")).empty());
  // The schema can fail: a bad approval and an extra field.
  json bad = j;
  bad["entries"][0]["approval"] = "maybe";
  bad["entries"][0]["extra"] = 1;
  EXPECT_EQ(schema_errors(bad).size(), 2u);
  std::filesystem::remove_all(dir);
}

// Issue 28: a profile carries its llama-bench records (optional "bench"), valid while its approved
// entries are what the record's fingerprint says.
TEST(ProfileBench, RecordsRoundTripMatchTheSchemaAndGoStaleWithTheApprovals) {
  Profile p = mixed_profile();
  EXPECT_FALSE(to_json(p).contains("bench"));  // absent when there is none: files as before
  add_bench_record(p, bench_record(p));
  const json j = to_json(p);
  ASSERT_TRUE(j.contains("bench"));
  EXPECT_EQ(schema_errors(j), std::vector<std::string>{});
  EXPECT_TRUE(validate_profile(p).empty());
  const Profile back = profile_from_json(j, "p.json");
  EXPECT_EQ(to_json(back), j);
  ASSERT_NE(current_bench(back, "sm_90"), nullptr);
  EXPECT_EQ(current_bench(back, "sm_90")->tests[1].profiled_runs, (std::vector<std::vector<double>>{{105.1, 105.3}, {104.9, 105.0}}));
  EXPECT_EQ(current_bench(back, "gfx942"), nullptr);
  // Another arch's approvals leave the sm_90 record current; an sm_90 approval makes it stale.
  Profile other = back;
  other.entries[0].approval = Approval::Rejected;  // gfx942
  EXPECT_NE(current_bench(other, "sm_90"), nullptr);
  Profile changed = back;
  for (auto& e : changed.entries)
    if (e.key.arch == "sm_90" && e.approval != Approval::Approved) e.approval = Approval::Approved, e.decided_at = "2026-11-25T11:00:00Z";
  EXPECT_EQ(current_bench(changed, "sm_90"), nullptr);
  // A new record of the same device and model replaces the old one; another device's is added.
  add_bench_record(p, bench_record(p));
  EXPECT_EQ(p.benches.size(), 1u);
  add_bench_record(p, bench_record(p, "NVIDIA H200"));
  EXPECT_EQ(p.benches.size(), 2u);
  // Bad records: one line naming the field; validation catches a speedup outside its CI.
  json bad = j;
  bad["bench"][0]["tests"][0]["stock_ts"] = "fast";
  try {
    profile_from_json(bad, "p.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.json: $.bench[0].tests[0].stock_ts: expected a number");
  }
  Profile wrong = back;
  wrong.benches[0].tests[0].speedup = 2;
  ASSERT_EQ(validate_profile(wrong).size(), 1u);
  EXPECT_NE(validate_profile(wrong)[0].find("tg128: speedup lies outside its confidence interval"), std::string::npos);
}

// Issue 27 item 3: a profile carries mmvq/mmq path choices (optional "paths"): sorted, round trips,
// the schema, one line for a bad field, validate's rules, and the fingerprint of what the engine runs.
TEST(ProfilePaths, RoundTripSortedSchemaValidationAndFingerprint) {
  Profile p = load_profile(TEMPER_SOURCE_DIR "/tests/profile/corpus/valid-paths.json");
  ASSERT_EQ(p.paths.size(), 4u);
  for (size_t i = 1; i < p.paths.size(); ++i) EXPECT_LT(p.paths[i - 1].key(), p.paths[i].key());
  EXPECT_EQ(p.paths[0].launch, Launch::MulMatId);  // the arch-level choice sorts first
  EXPECT_EQ(p.paths[3].type, GgmlType::Q6_K);       // "Q6_K" in the file: any case
  const json j = to_json(p);
  EXPECT_EQ(schema_errors(j), std::vector<std::string>{});
  EXPECT_EQ(to_json(profile_from_json(j, "p.json")), j);
  EXPECT_TRUE(validate_profile(p).empty());
  EXPECT_FALSE(to_json(mixed_profile()).contains("paths"));  // absent when there is none
  Profile reversed = p;
  std::reverse(reversed.paths.begin(), reversed.paths.end());
  EXPECT_EQ(to_json(reversed), j);  // written sorted by key
  // One line naming the field.
  json bad = j;
  bad["paths"][1]["path"] = "cublas";
  try {
    profile_from_json(bad, "p.json");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.json: $.paths[1].path: expected \"mmvq\" or \"mmq\", got \"cublas\"");
  }
  bad = j;
  bad["paths"].push_back(j["paths"][0]);
  try {
    profile_from_json(bad, "p.json");
    ADD_FAILURE() << "accepted a duplicate";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("$.paths[4]: a second path choice for sm_90 q4_K mul_mat_id ncols 2"), std::string::npos) << e.what();
  }
  // Validate: every rule names the choice.
  Profile wrong = p;
  wrong.paths[0].ncols = 1;
  wrong.paths[1].path = wrong.paths[1].stock_path;
  wrong.paths[2].evidence.reset();
  const auto problems = validate_profile(wrong);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_NE(problems[0].find("path choice sm_90 q4_K mul_mat_id ncols 1: ncols must be 2..8"),
            std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("path equals stock_path"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("no evidence"), std::string::npos) << problems[2];
  // Approved path choices change what the engine runs: the fingerprint; pending ones do not.
  const std::string before = approved_fingerprint(p, "sm_90");
  Profile flipped = p;
  flipped.paths[0].path = MatPath::Mmvq, flipped.paths[0].stock_path = MatPath::Mmq;
  EXPECT_NE(approved_fingerprint(flipped, "sm_90"), before);
  Profile pending = p;
  for (auto& c : pending.paths) c.approval = Approval::Pending;
  Profile none = p;
  none.paths.clear();
  EXPECT_EQ(approved_fingerprint(pending, "sm_90"), approved_fingerprint(none, "sm_90"));
  EXPECT_EQ(approved_fingerprint(p, "gfx942"), approved_fingerprint(none, "gfx942"));
}

// Vendor words (issue 49): an NVIDIA device counts SMs, an AMD one CUs; the fingerprint a bench
// record keeps stays what it was, so the real H200 tune's record still describes its profile.
TEST(ProfileText, DevicesInTheirVendorsWordsAndFingerprintsUnchanged) {
  EXPECT_EQ(device_text({"NVIDIA H200", 132, 0}, "sm_90"), "NVIDIA H200 (132 SMs)");
  EXPECT_EQ(device_text({"NVIDIA H200", 132, 0}), "NVIDIA H200 (132 SMs)");
  EXPECT_EQ(device_text({"AMD Instinct MI300X", 304, 0}, "gfx942"), "AMD Instinct MI300X (304 CUs)");
  ProfileKey key("gfx942", ShapeKey{GgmlType::Q4_K, 4096, 4096}, 1, ProfileDevice{"AMD Instinct MI300X", 304, 0});
  EXPECT_EQ(key_text(key), "gfx942 q4_K 4096x4096 ncols 1 on AMD Instinct MI300X (304 CUs)");
  for (const char* name : {"h200-llama3-qwen3-pipelined.json", "h100-llama3-qwen3-groups.json"}) {
    const Profile p = load_profile(std::string(TEMPER_SOURCE_DIR) + "/bench/profiles/" + name);
    ASSERT_FALSE(p.benches.empty()) << name;
    EXPECT_EQ(approved_fingerprint(p, "sm_90"), p.benches.back().profile_fingerprint) << name;
  }
}

TEST(ProfileBench, MarkdownInCompareLlamaBenchsShapeAndCsvOfEverySample) {
  const Profile p = mixed_profile();
  const BenchRecord r = bench_record(p);
  const std::string md = bench_markdown(r);
  EXPECT_EQ(md,
            "| GPU                   | Model           | Microbatch size | Test  | t/s stock | t/s profile | Speedup | 95 % CI        |\n"
            "|:----------------------|:----------------|----------------:|:------|----------:|------------:|--------:|:---------------|\n"
            "| NVIDIA H100 80GB HBM3 | llama 8B Q4_K_M |             512 | tg128 |    100.10 |      105.05 |   1.050 | [1.046, 1.053] |\n"
            "| NVIDIA H100 80GB HBM3 | llama 8B Q4_K_M |               4 | pp128 |    100.10 |      105.05 |   1.050 | [1.046, 1.053] |\n");
  // A small loss reads as one, never rounded up to "1.00" (issue 49).
  BenchRecord loss = r;
  loss.tests.resize(1);
  loss.tests[0].speedup = 0.996, loss.tests[0].speedup_low = 0.990, loss.tests[0].speedup_high = 1.002;
  EXPECT_NE(bench_markdown(loss).find("|   0.996 | [0.990, 1.002] |"), std::string::npos) << bench_markdown(loss);
  const std::string csv = bench_csv(r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "test,llama_bench_test,n_ubatch,arm,round,repetition,tokens_per_s");
  EXPECT_NE(csv.find("\npp4,pp128,4,profile,2,1,104.900000\n"), std::string::npos) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 * 2 * 2 * 2);
  // Text from llama-bench cannot break the table.
  BenchRecord odd = r;
  odd.model_type = "a | b";
  EXPECT_NE(bench_markdown(odd).find("| a   b "), std::string::npos);
}

TEST(ProfileJson, RefusesNewerVersionsAndMalformedFields) {
  json j = to_json(mixed_profile());
  j["schema_version"] = kProfileSchemaVersion + 1;
  try {
    profile_from_json(j, "p.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("newer Temper"), std::string::npos);
  }
  auto expect_bad = [](const json& doc, const std::string& needle) {
    try {
      profile_from_json(doc, "p.json");
      ADD_FAILURE() << "accepted " << doc.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  json t = to_json(mixed_profile());
  t["entries"][1]["type"] = "q9_X";
  expect_bad(t, "$.entries[1].type: unknown ggml type");
  t = to_json(mixed_profile());
  t["entries"][0].erase("config");
  expect_bad(t, "missing field \"config\"");
  t = to_json(mixed_profile());
  t["entries"][0]["n"] = -5;
  expect_bad(t, "$.entries[0].n");
  t = to_json(mixed_profile());
  t["entries"][1] = t["entries"][0];
  expect_bad(t, "duplicate entry");
  expect_bad(json{{"hello", 1}}, "not a Temper profile");
  const auto dir = temp_dir();
  write_file_atomic(dir / "broken.json", "{\"format\": ");
  EXPECT_THROW(load_profile(dir / "broken.json"), Error);
  std::filesystem::remove_all(dir);
}

TEST(ProfileJson, ReadsKernelAnvilFilesWithoutProvenance) {
  const json anvil = json::parse(R"({"configs": {"12": {"3,2": {"nwarps": 4, "rows_per_block": 4}},
                                                  "2": {"0,4": {"nwarps": 2, "rows_per_block": 2}}}})");
  ASSERT_TRUE(is_kernel_anvil_json(anvil));
  const Profile p = profile_from_json(anvil, "anvil.json", "gfx1100");
  EXPECT_EQ(p.source, kSourceKernelAnvil);
  ASSERT_EQ(p.entries.size(), 2u);
  // Sorted by type id: q4_0 (2) then q4_K (12); n, k are the bucket's upper edge (16385 for the top).
  EXPECT_EQ(p.entries[0].key, (ProfileKey{"gfx1100", GgmlType::Q4_0, 128, 16385, 1}));
  EXPECT_EQ(p.entries[1].key, (ProfileKey{"gfx1100", GgmlType::Q4_K, 16384, 4096, 1}));
  EXPECT_EQ(p.entries[1].config, (Config{4, 4}));
  EXPECT_TRUE(p.entries[1].bucketed);
  EXPECT_FALSE(p.entries[1].provenance);
  EXPECT_EQ(p.entries[1].approval, Approval::Approved);
  EXPECT_TRUE(validate_profile(p).empty());
  // Without an arch the import is flagged, and merging refuses it.
  const Profile no_arch = profile_from_json(anvil, "anvil.json");
  EXPECT_FALSE(validate_profile(no_arch).empty());
  EXPECT_THROW(merge_profiles({no_arch, p}), Error);
  for (const char* bad : {R"({"configs": {"q4": {}}})", R"({"configs": {"99": {}}})",
                          R"({"configs": {"2": {"5,0": {"nwarps": 1, "rows_per_block": 1}}}})",
                          R"({"configs": {"2": {"0,0": {"nwarps": 33, "rows_per_block": 1}}}})",
                          R"({"configs": {"2": {"0,0": {"nwarps": 2}}}})"})
    EXPECT_THROW(profile_from_json(json::parse(bad), "anvil.json", "gfx1100"), Error) << bad;
}

TEST(ProfileValidate, FindsRangeTypeArchAndProvenanceProblems) {
  EXPECT_TRUE(validate_profile(mixed_profile()).empty());
  Profile p = mixed_profile();
  p.entries[0].config = {64, 1};                          // > 32
  p.entries[1].key.arch = "rtx4090";                      // not an arch
  p.entries[2].key.k = 4100;                              // not whole q6_K blocks
  const auto problems = validate_profile(p);
  auto has = [&](const std::string& needle) {
    return std::any_of(problems.begin(), problems.end(), [&](const std::string& s) { return s.find(needle) != s.npos; });
  };
  EXPECT_TRUE(has("1..32")) << testing::PrintToString(problems);
  EXPECT_TRUE(has("unknown arch \"rtx4090\""));
  EXPECT_TRUE(has("whole number of q6_K blocks"));
  Profile q = mixed_profile();
  q.entries[0].key.type = GgmlType::F16;
  q.entries[1].provenance->speedup = 5;  // outside its CI
  q.entries[2].provenance.reset();
  const auto more = validate_profile(q);
  EXPECT_EQ(more.size(), 3u) << testing::PrintToString(more);
}

TEST(ProfileMerge, KeepsTheMeasuredFasterAndReportsConflicts) {
  const Profile a = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {2, 1}, {4, 1}, 1.10, 1, "A")),
                                approved(measured("sm_90", GgmlType::Q6_K, 4096, 4096, 1, {2, 2}, {4, 1}, 1.05, 1, "A"))});
  const Profile b = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {1, 1}, {4, 1}, 1.20, 1, "B")),
                                approved(measured("sm_90", GgmlType::Q6_K, 4096, 4096, 1, {2, 2}, {4, 1}, 1.06, 1, "B")),
                                approved(measured("gfx942", GgmlType::Q4_K, 4096, 4096, 1, {8, 1}, {2, 1}, 1.3, 1, "B"))});
  const MergeResult m = merge_profiles({a, b});
  ASSERT_EQ(m.profile.entries.size(), 3u);
  ASSERT_EQ(m.conflicts.size(), 1u);  // same config for q6_K: no conflict
  EXPECT_EQ(m.conflicts[0].key, (ProfileKey{"sm_90", GgmlType::Q4_K, 4096, 4096, 1}));
  EXPECT_EQ(m.conflicts[0].kept, (Config{1, 1}));
  EXPECT_EQ(m.conflicts[0].kept_from, "B");
  EXPECT_EQ(m.conflicts[0].dropped_from, "A");
  EXPECT_EQ(find_entry(m.profile, {"sm_90", GgmlType::Q4_K, 4096, 4096, 1})->config, (Config{1, 1}));
  EXPECT_EQ(find_entry(m.profile, {"gfx942", GgmlType::Q4_K, 4096, 4096, 1})->config, (Config{8, 1}));
  EXPECT_EQ(m.arches, (std::vector<std::string>{"gfx942", "sm_90"}));
  EXPECT_NE(m.text().find("2 arches"), std::string::npos);
  EXPECT_EQ(m.profile.sessions, (std::vector<std::string>{"S1"}));
  // Order does not change the winner.
  EXPECT_EQ(find_entry(merge_profiles({b, a}).profile, {"sm_90", GgmlType::Q4_K, 4096, 4096, 1})->config, (Config{1, 1}));
  // A measured entry beats an import without provenance, whatever the order.
  Profile imp = a;
  for (auto& e : imp.entries) e.provenance.reset(), e.config = {16, 16};
  const MergeResult mi = merge_profiles({imp, a});
  EXPECT_EQ(mi.conflicts.size(), 2u);
  EXPECT_EQ(find_entry(mi.profile, {"sm_90", GgmlType::Q4_K, 4096, 4096, 1})->config, (Config{2, 1}));
  EXPECT_EQ(mi.conflicts[0].kept_from, "A");
  EXPECT_EQ(mi.conflicts[0].dropped_from, "import");
}

// Issue 20: an H100's and an H200's profiles share the arch sm_90. The H200's faster memory makes
// every one of its medians lower, so "measured faster" would always pick the H200's config; the
// gain over each device's own default decides instead, and the reason names both GPUs.
TEST(ProfileMerge, DifferentGpusOfOneArchCompareGainsNotMicroseconds) {
  ProfileEntry h100 = approved(measured("sm_90", GgmlType::Q4_K, 14336, 4096, 1, {4, 4}, {4, 1}, 1.30, 1, "A"));
  ProfileEntry h200 = approved(measured("sm_90", GgmlType::Q4_K, 14336, 4096, 1, {2, 4}, {4, 1}, 1.20, 1, "B"));
  h100.provenance->device_name = "NVIDIA H100 80GB HBM3";
  h200.provenance->device_name = "NVIDIA H200";
  h200.provenance->default_us /= 1.5;  // the H200 is faster in absolute terms at every config
  h200.provenance->tuned_us /= 1.5;
  ASSERT_LT(h200.provenance->tuned_us, h100.provenance->tuned_us);
  for (const auto& order : {std::vector<Profile>{profile_of({h100}), profile_of({h200})},
                            std::vector<Profile>{profile_of({h200}), profile_of({h100})}}) {
    const MergeResult m = merge_profiles(order);
    ASSERT_EQ(m.conflicts.size(), 1u);
    EXPECT_EQ(m.conflicts[0].kept, (Config{4, 4}));
    EXPECT_EQ(m.conflicts[0].kept_from, "A");
    EXPECT_NE(m.conflicts[0].reason.find("different GPUs of one arch (NVIDIA H100 80GB HBM3, NVIDIA H200)"),
              std::string::npos)
        << m.conflicts[0].reason;
  }
}

// Issue 19 (9): the same config approved in one file and rejected in the other merged as "0
// conflicts", the first file's approval silently winning.
TEST(ProfileMerge, ApprovalDifferencesAreConflictsAndARejectionStands) {
  Profile a = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {2, 1}, {4, 1}, 1.10, 1, "A"))});
  Profile b = a;
  b.entries[0].approval = Approval::Rejected;
  b.entries[0].note = "drift on the second card";
  for (const auto& order : {std::vector<Profile>{a, b}, std::vector<Profile>{b, a}}) {
    const MergeResult m = merge_profiles(order);
    ASSERT_EQ(m.conflicts.size(), 1u);
    EXPECT_NE(m.conflicts[0].reason.find("rejected in one and approved in the other: rejected stays"), std::string::npos)
        << m.conflicts[0].reason;
    ASSERT_EQ(m.profile.entries.size(), 1u);
    EXPECT_EQ(m.profile.entries[0].approval, Approval::Rejected);
    EXPECT_EQ(m.profile.entries[0].note, "drift on the second card");
    EXPECT_NE(m.text().find("1 conflicts"), std::string::npos);
  }
  // A decision beats pending.
  Profile pending = a;
  pending.entries[0].approval = Approval::Pending;
  const MergeResult p = merge_profiles({pending, a});
  EXPECT_EQ(p.profile.entries[0].approval, Approval::Approved);
  EXPECT_EQ(p.conflicts.size(), 1u);
}

TEST(ProfileDiff, AddedRemovedChangedAndSpeedupChanges) {
  const Profile a = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {2, 1}, {4, 1}, 1.10)),
                                approved(measured("sm_90", GgmlType::Q6_K, 4096, 4096, 1, {2, 2}, {4, 1}, 1.05)),
                                approved(measured("sm_90", GgmlType::Q8_0, 4096, 4096, 1, {2, 2}, {4, 1}, 1.05))});
  Profile b = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {1, 1}, {4, 1}, 1.20)),
                          approved(measured("sm_90", GgmlType::Q6_K, 4096, 4096, 1, {2, 2}, {4, 1}, 1.07)),
                          approved(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {2, 2}, {4, 1}, 1.05))});
  const ProfileDiff d = diff_profiles(a, b);
  EXPECT_TRUE(d.by_arch);
  EXPECT_EQ(d.count(DiffKind::Added), 1);
  EXPECT_EQ(d.count(DiffKind::Removed), 1);
  EXPECT_EQ(d.count(DiffKind::Changed), 1);
  EXPECT_EQ(d.count(DiffKind::Same), 1);
  for (const auto& l : d.lines) {
    if (l.key.type == GgmlType::Q4_0) {
      EXPECT_EQ(l.kind, DiffKind::Added);
    } else if (l.key.type == GgmlType::Q8_0) {
      EXPECT_EQ(l.kind, DiffKind::Removed);
    } else if (l.key.type == GgmlType::Q4_K) {
      EXPECT_EQ(l.kind, DiffKind::Changed);
    }
    if (l.key.type == GgmlType::Q6_K) {
      EXPECT_EQ(l.kind, DiffKind::Same);
      ASSERT_TRUE(l.speedup_change);
      EXPECT_NEAR(*l.speedup_change, 0.02, 1e-12);
    }
  }
  EXPECT_NE(d.text().find("diff: 1 added, 1 removed, 1 changed, 1 same"), std::string::npos);
  // One model on two GPUs: each profile has one arch, shapes line up across arches.
  for (auto& e : b.entries) e.key.arch = "gfx942";
  const ProfileDiff two = diff_profiles(a, b);
  EXPECT_FALSE(two.by_arch);
  EXPECT_EQ(two.arch_b, "gfx942");
  EXPECT_EQ(two.count(DiffKind::Same), 1);
  EXPECT_EQ(two.count(DiffKind::Changed), 1);
  // Two GPUs of one arch (an H100 and an H200): each profile's entries name their device, and the
  // shapes line up across the devices too.
  Profile h100 = a, h200 = b;
  for (auto& e : h100.entries) e.key.device = {"NVIDIA H100 80GB HBM3", 132, 81559};
  for (auto& e : h200.entries) e.key.arch = "sm_90", e.key.device = {"NVIDIA H200", 132, 143771};
  const ProfileDiff devices = diff_profiles(h100, h200);
  EXPECT_FALSE(devices.by_arch);
  EXPECT_EQ(devices.arch_b, "sm_90 NVIDIA H200 (132 SMs)");
  EXPECT_EQ(devices.count(DiffKind::Same), 1);
  EXPECT_EQ(devices.count(DiffKind::Changed), 1);
  // Merged, both devices' entries stay: no conflict, since the device is part of the key.
  const MergeResult m = merge_profiles({h100, h200});
  EXPECT_TRUE(m.conflicts.empty());
  EXPECT_EQ(m.profile.entries.size(), h100.entries.size() + h200.entries.size());
  // The engine's choice on each device: its own entry (then the arch-level one; here none).
  const ShapeKey q4k{GgmlType::Q4_K, 4096, 4096};
  EXPECT_EQ(applied_entry(m.profile, "sm_90", {"NVIDIA H200", 132}, q4k, 1)->config, (Config{1, 1}));
  EXPECT_EQ(applied_entry(m.profile, "sm_90", {"NVIDIA H100 80GB HBM3", 132}, q4k, 1)->config, (Config{2, 1}));
  EXPECT_EQ(applied_entry(m.profile, "sm_90", {"NVIDIA H100 PCIe", 114}, q4k, 1), nullptr);
  // An approval change alone is a change.
  Profile c = a;
  c.entries[0].approval = Approval::Rejected;
  EXPECT_EQ(diff_profiles(a, c).count(DiffKind::Changed), 1);
}

}  // namespace
}  // namespace temper

// ---- Path choices (mmvq or mmq at batch widths 2..8): merge, diff and the fingerprint ----
namespace temper {
namespace {

PathChoice path_choice(const std::string& device, GgmlType type, int ncols, MatPath path, Approval a, std::string when = {}) {
  PathChoice c;
  c.arch = "sm_90";
  c.device = {device, 132, 81559};
  c.type = type;
  c.ncols = ncols;
  c.path = path;
  c.stock_path = path == MatPath::Mmq ? MatPath::Mmvq : MatPath::Mmq;
  c.approval = a;
  c.decided_at = std::move(when);
  return c;
}

TEST(ProfilePaths, FingerprintCountsApprovedPathChoicesOnly) {
  Profile p;
  const std::string none = approved_fingerprint(p, "sm_90");
  p.paths = {path_choice("H100", GgmlType::Q4_K, 8, MatPath::Mmq, Approval::Pending)};
  EXPECT_EQ(approved_fingerprint(p, "sm_90"), none);  // pending: the engine runs ggml's pick
  p.paths[0].approval = Approval::Approved;
  const std::string with = approved_fingerprint(p, "sm_90");
  EXPECT_NE(with, none);
  EXPECT_EQ(approved_fingerprint(p, "gfx942"), approved_fingerprint(Profile{}, "gfx942"));  // another arch's state
  p.paths[0].ncols = 4;
  EXPECT_NE(approved_fingerprint(p, "sm_90"), with);
  EXPECT_EQ(path_choice_text(p.paths[0]), "sm_90 q4_K mul_mat ncols 4 on H100 (132 SMs)");
}

TEST(ProfilePaths, MergeKeepsEveryDevicesRecordsAndTheNewerDecision) {
  Profile a, b;
  a.paths = {path_choice("H100", GgmlType::Q4_K, 8, MatPath::Mmq, Approval::Approved, "2026-11-20T10:00:00Z"),
             path_choice("H100", GgmlType::Q6_K, 8, MatPath::Mmq, Approval::Approved, "2026-11-25T10:00:00Z")};
  b.paths = {path_choice("H200", GgmlType::Q4_K, 8, MatPath::Mmq, Approval::Approved, "2026-11-21T10:00:00Z"),
             path_choice("H100", GgmlType::Q4_K, 8, MatPath::Mmq, Approval::Rejected, "2026-11-24T10:00:00Z"),
             path_choice("H100", GgmlType::Q6_K, 8, MatPath::Mmq, Approval::Pending)};
  const MergeResult m = merge_profiles({a, b});
  ASSERT_EQ(m.profile.paths.size(), 3u);  // H100 q4_K, H100 q6_K, H200 q4_K
  for (size_t i = 1; i < m.profile.paths.size(); ++i) EXPECT_LT(m.profile.paths[i - 1].key(), m.profile.paths[i].key());
  EXPECT_EQ(m.profile.paths[0].device.name, "H100");
  EXPECT_EQ(m.profile.paths[0].type, GgmlType::Q4_K);
  EXPECT_EQ(m.profile.paths[0].approval, Approval::Rejected);  // decided later in b
  EXPECT_EQ(m.profile.paths[1].approval, Approval::Approved);  // a decision beats pending
  EXPECT_EQ(m.profile.paths[2].device.name, "H200");
  ASSERT_EQ(m.path_conflicts.size(), 2u);
  EXPECT_NE(m.path_conflicts[0].find("sm_90 q4_K mul_mat ncols 8 on H100 (132 SMs): kept mmq rejected"), std::string::npos)
      << m.path_conflicts[0];
  EXPECT_NE(m.text().find("3 path choices, 2 conflicts"), std::string::npos) << m.text();
}

TEST(ProfilePaths, DiffShowsChangedPaths) {
  Profile a, b;
  a.paths = {path_choice("H100", GgmlType::Q4_K, 8, MatPath::Mmq, Approval::Approved),
             path_choice("H100", GgmlType::Q6_K, 8, MatPath::Mmq, Approval::Approved)};
  b.paths = {path_choice("H100", GgmlType::Q4_K, 8, MatPath::Mmq, Approval::Approved),
             path_choice("H100", GgmlType::Q6_K, 8, MatPath::Mmq, Approval::Pending),
             path_choice("H100", GgmlType::Q6_K, 4, MatPath::Mmq, Approval::Approved)};
  const ProfileDiff d = diff_profiles(a, b);
  ASSERT_EQ(d.paths.size(), 3u);
  std::map<std::pair<GgmlType, int>, DiffKind> kinds;
  for (const auto& l : d.paths) kinds[{(l.a ? *l.a : *l.b).type, (l.a ? *l.a : *l.b).ncols}] = l.kind;
  EXPECT_EQ(kinds, (std::map<std::pair<GgmlType, int>, DiffKind>{{{GgmlType::Q4_K, 8}, DiffKind::Same},
                                                                  {{GgmlType::Q6_K, 4}, DiffKind::Added},
                                                                  {{GgmlType::Q6_K, 8}, DiffKind::Changed}}));
  const std::string text = d.text();
  EXPECT_NE(text.find("path changed: sm_90 q6_K mul_mat ncols 8 on H100 (132 SMs)  a: mmq approved  b: mmq pending"), std::string::npos)
      << text;
  EXPECT_NE(text.find("paths: 1 added, 0 removed, 1 changed, 1 same"), std::string::npos) << text;
  EXPECT_EQ(diff_profiles(a, a).text().find("path changed"), std::string::npos);
}

}  // namespace
}  // namespace temper

// ---- Pipelined launches (the *_pipelined kinds, hook v7) ----
namespace temper {
namespace {

ProfileEntry pipelined_entry(Launch kind, int n, Config c) {
  ProfileEntry e = approved(measured("sm_90", GgmlType::Q4_K, n, 4096, 1, c, c, 1.05));
  e.key.launch = kind;
  if (launch_has_ids(kind)) e.key.experts = 128, e.key.used = 8;
  return e;
}

TEST(ProfilePipelined, KindsRoundTripValidateAtOneColumnAndMapBothWays) {
  for (Launch l : {Launch::MulMat, Launch::MulMatGlu, Launch::MulMatId, Launch::MulMatIdGlu}) {
    const Launch p = pipelined_kind(l);
    EXPECT_TRUE(launch_is_pipelined(p));
    EXPECT_EQ(unpipelined_kind(p), l);
    EXPECT_EQ(launch_is_fused(p), launch_is_fused(l));
    EXPECT_EQ(launch_has_ids(p), launch_has_ids(l));
    EXPECT_EQ(parse_launch(launch_name(p)), p);
  }
  EXPECT_EQ(launch_name(Launch::MulMatIdGluPipelined), "mul_mat_id_glu_pipelined");
  EXPECT_EQ(pipelined_kind(Launch::MulMatGroup), Launch::MulMatGroup);
  EXPECT_EQ(pipelined_kind(Launch::MulMatGluUnfused), Launch::MulMatGluUnfused);
  Profile p = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {4, 2}, {4, 1}, 1.05)),
                          pipelined_entry(Launch::MulMatPipelined, 4096, {4, 2}), pipelined_entry(Launch::MulMatGluPipelined, 14336, {4, 1}),
                          pipelined_entry(Launch::MulMatIdPipelined, 2048, {1, 4}),
                          pipelined_entry(Launch::MulMatIdGluPipelined, 768, {4, 2})});
  EXPECT_TRUE(validate_profile(p).empty()) << validate_profile(p).front();
  const json j = to_json(p);
  EXPECT_EQ(schema_errors(j), std::vector<std::string>{});
  EXPECT_EQ(to_json(profile_from_json(j, "p.json")), j);
  Profile wide = p;
  const auto plain_pipelined = [](Profile& q) {
    return std::find_if(q.entries.begin(), q.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::MulMatPipelined; });
  };
  plain_pipelined(wide)->key.ncols = 2;
  const std::vector<std::string> problems = validate_profile(wide);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("a pipelined launch exists at ncols 1 only"), std::string::npos) << problems[0];
  // Pipelining a launch changes what the engine launches: its approval moves the fingerprint.
  Profile pending = p;
  plain_pipelined(pending)->approval = Approval::Pending;
  EXPECT_NE(approved_fingerprint(pending), approved_fingerprint(p));
}

TEST(ProfilePipelined, ExportsForUpstreamsKernelLeaveThemOutAndSaySo) {
  const Profile p = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {4, 4}, {4, 1}, 1.05)),
                                pipelined_entry(Launch::MulMatPipelined, 4096, {4, 4})});
  for (const Export& ex : {export_kernel_anvil(p, {"sm_90"}), export_header(p, {"sm_90"}), export_ggml_table(p, {"sm_90"})}) {
    SCOPED_TRACE(ex.report.format);
    const auto n = std::find_if(ex.report.notes.begin(), ex.report.notes.end(),
                                [](const ExportNote& x) { return launch_is_pipelined(x.key.launch); });
    ASSERT_NE(n, ex.report.notes.end());
    EXPECT_EQ(n->fate, ExportFate::Dropped);
    EXPECT_NE(n->reason.find("pipelined"), std::string::npos) << n->reason;
    EXPECT_EQ(ex.content.find("pipelined"), std::string::npos);
    EXPECT_EQ(ex.report.emitted(), 1);
  }
}

}  // namespace
}  // namespace temper

// ---- Same-input groups (launch kind mul_mat_group, hook v5) ----
namespace temper {
namespace {

const std::vector<GroupMember> kQkv{{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}, {GgmlType::Q4_K, 1024}};
const std::vector<GroupMember> kQkvMixed{{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}, {GgmlType::Q6_K, 1024}};

// A measured group entry on `device` (an arch-level one when empty), config `c`, `speedup` × faster.
ProfileEntry group_entry(const std::vector<GroupMember>& members, int ncols, Config c, double speedup, std::string device = "H100",
                         std::string session = "S1") {
  ProfileEntry e = measured("sm_90", GgmlType::Q4_K, 1, 4096, ncols, c, {0, 0}, speedup, 1000, std::move(session));
  e.key = group_profile_key("sm_90", members, 4096, ncols, device.empty() ? ProfileDevice{} : ProfileDevice{device, 132, 81559});
  e.is_small_k = false;
  return approved(e);
}

TEST(ProfileGroups, TheKeyFollowsTheTypeRuleAndNamesItsMembers) {
  EXPECT_EQ(group_type(kQkv), GgmlType::Q4_K);
  EXPECT_EQ(group_type(kQkvMixed), GgmlType::Q6_K);  // the type other than the first member's
  EXPECT_EQ(group_type({{GgmlType::Q6_K, 1}, {GgmlType::Q4_K, 1}, {GgmlType::Q6_K, 1}}), GgmlType::Q4_K);
  EXPECT_EQ(group_n(kQkvMixed), 6144);
  const ProfileKey k = group_profile_key("sm_90", kQkvMixed, 4096, 2);
  EXPECT_EQ(k.launch, Launch::MulMatGroup);
  EXPECT_EQ(k.type, GgmlType::Q6_K);
  EXPECT_EQ(k.n, 6144);
  EXPECT_EQ(key_text(k), "sm_90 group q4_K:4096,q4_K:1024,q6_K:1024 k 4096 ncols 2");
  EXPECT_NE(group_profile_key("sm_90", kQkv, 4096, 1), group_profile_key("sm_90", {kQkv[1], kQkv[0], kQkv[2]}, 4096, 1));
  EXPECT_EQ(parse_launch("mul_mat_group"), Launch::MulMatGroup);
  EXPECT_EQ(launch_name(Launch::MulMatGroup), "mul_mat_group");
  EXPECT_NE(launch_names().find("|mul_mat_group"), std::string_view::npos);
  // The members' text, both ways; what is not TYPE:N says why.
  EXPECT_EQ(members_text(kQkvMixed), "q4_K:4096,q4_K:1024,q6_K:1024");
  EXPECT_EQ(parse_members("Q4_K:4096,q4_k:1024,q6_K:1024"), kQkvMixed);
  std::string why;
  for (const char* bad : {"", "q4_K", "q4_K:", ":12", "q4_K:1,", "q4_K:01", "q4_K:-1", "q4_K:+1", "q4_K:2147483648", "q4_K:1;q4_K:2",
                          "q9_Z:1", "q4_K:1 ,q4_K:2"}) {
    why.clear();
    EXPECT_FALSE(parse_members(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_EQ(parse_members("q4_K:2147483647")->front().n, INT32_MAX);
}

TEST(ProfileGroups, RoundTripSortedAndMatchingTheSchema) {
  Profile p = profile_of({group_entry(kQkvMixed, 1, {8, 1}, 1.1), approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {4, 2}, {4, 1}, 1.05)),
                          group_entry(kQkv, 1, {4, 2}, 1.1), group_entry(kQkv, 2, {2, 4}, 1.1, "")});
  EXPECT_TRUE(validate_profile(p).empty()) << validate_profile(p).front();
  const json j = to_json(p);
  EXPECT_EQ(schema_errors(j), std::vector<std::string>{});
  ASSERT_EQ(j["entries"].size(), 4u);
  int groups = 0;
  for (const json& e : j["entries"])
    if (e.value("launch", "") == "mul_mat_group") {
      ++groups;
      EXPECT_TRUE(e["members"].is_string());
      EXPECT_FALSE(e.contains("experts"));
    } else {
      EXPECT_FALSE(e.contains("members"));
    }
  EXPECT_EQ(groups, 3);
  const Profile back = profile_from_json(j, "p.json");
  EXPECT_EQ(to_json(back), j);
  ASSERT_EQ(back.entries.size(), 4u);
  for (size_t i = 1; i < back.entries.size(); ++i) EXPECT_LT(back.entries[i - 1].key, back.entries[i].key);
  const ProfileEntry* mixed = applied_group(back, "sm_90", {"H100", 132, 0}, kQkvMixed, 4096, 1);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->config, (Config{8, 1}));
  // A group's approval changes the fingerprint (what the engine launches).
  Profile pending = back;
  for (auto& e : pending.entries)
    if (launch_is_group(e.key.launch)) e.approval = Approval::Pending;
  EXPECT_NE(approved_fingerprint(pending), approved_fingerprint(back));
}

// Hook v12 matches a group's members in any order (llama.cpp runs q, v, k; Temper's plan lists q, k, v):
// applied_group does too, and two entries of the same members in two orders get a warning.
TEST(ProfileGroups, TheSameMembersInAnotherOrderAreOneGroupForTheEngine) {
  const std::vector<GroupMember> engine_order{kQkvMixed[0], kQkvMixed[2], kQkvMixed[1]};
  const Profile one = profile_of({group_entry(kQkvMixed, 1, {8, 1}, 1.1)});
  const ProfileEntry* e = applied_group(one, "sm_90", {"H100", 132, 0}, engine_order, 4096, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config, (Config{8, 1}));
  EXPECT_EQ(applied_group(one, "sm_90", {"H100", 132, 0}, {kQkvMixed[0], kQkvMixed[2], kQkvMixed[2]}, 4096, 1), nullptr);
  EXPECT_TRUE(profile_warnings(one).empty());
  const Profile two = profile_of({group_entry(kQkvMixed, 1, {8, 1}, 1.1), group_entry(engine_order, 1, {2, 4}, 1.1)});
  EXPECT_TRUE(validate_profile(two).empty());
  // The exact order first.
  EXPECT_EQ(applied_group(two, "sm_90", {"H100", 132, 0}, engine_order, 4096, 1)->config, (Config{2, 4}));
  EXPECT_EQ(applied_group(two, "sm_90", {"H100", 132, 0}, kQkvMixed, 4096, 1)->config, (Config{8, 1}));
  const std::vector<std::string> w = profile_warnings(two);
  ASSERT_FALSE(w.empty());
  EXPECT_NE(w.back().find("the same members as"), std::string::npos) << w.back();
  EXPECT_NE(w.back().find("q4_K:4096,q6_K:1024,q4_K:1024"), std::string::npos) << w.back();
  EXPECT_NE(w.back().find("q4_K:4096,q4_K:1024,q6_K:1024"), std::string::npos) << w.back();
}

// What refuses the file names the entry and its field: no members, members that are not TYPE:N, a
// second entry of one key (members included).
TEST(ProfileGroups, BadMembersRefuseTheFileNamingEntryAndField) {
  const json good = to_json(profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {4, 2}, {4, 1}, 1.05)),
                                        group_entry(kQkv, 1, {4, 2}, 1.1)}));
  const auto refusal = [](const json& j) {
    try {
      profile_from_json(j, "p.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      return std::string(e.what());
    }
    return std::string();
  };
  ASSERT_EQ(good["entries"][1]["launch"], "mul_mat_group");
  json none = good;
  none["entries"][1].erase("members");
  EXPECT_EQ(refusal(none), "p.json: $.entries[1]: missing field \"members\"");
  json number = good;
  number["entries"][1]["members"] = 3;
  EXPECT_EQ(refusal(number), "p.json: $.entries[1].members: expected a string");
  json syntax = good;
  syntax["entries"][1]["members"] = "q4_K:4096;q4_K:1024";
  EXPECT_EQ(refusal(syntax), "p.json: $.entries[1].members: expected TYPE:N,... (member 0's N is not an integer 1..2147483647)");
  json unknown = good;
  unknown["entries"][1]["members"] = "q4_K:4096,q9_Z:1024";
  EXPECT_EQ(refusal(unknown), "p.json: $.entries[1].members: expected TYPE:N,... (unknown ggml type \"q9_Z\")");
  json twice = good;
  twice["entries"].push_back(good["entries"][1]);
  EXPECT_NE(refusal(twice).find("$.entries[2]: duplicate entry sm_90 group q4_K:4096,q4_K:1024,q4_K:1024 k 4096 ncols 1 on H100"),
            std::string::npos)
      << refusal(twice);
  json reordered = twice;  // the same type, n, k and ncols, other members: another entry
  reordered["entries"][2]["members"] = "q4_K:1024,q4_K:4096,q4_K:1024";
  EXPECT_EQ(refusal(reordered), "");
  // A members field on another kind is not read (as any field a kind does not have).
  json plain = good;
  plain["entries"][0]["members"] = "nonsense";
  EXPECT_EQ(refusal(plain), "");
}

TEST(ProfileGroups, ValidateNamesTheFieldOfEachGroupRule) {
  const auto problems_of = [](ProfileEntry e) { return validate_profile(profile_of({std::move(e)})); };
  const auto one = [&](ProfileEntry e, const std::string& expected) {
    const std::vector<std::string> problems = problems_of(std::move(e));
    ASSERT_EQ(problems.size(), 1u) << expected;
    EXPECT_NE(problems[0].find(expected), std::string::npos) << problems[0];
    EXPECT_EQ(problems[0].rfind("sm_90 group ", 0), 0u) << problems[0];
  };
  EXPECT_TRUE(problems_of(group_entry(kQkv, 4, {8, 4}, 1.1)).empty());
  one(group_entry({kQkv[0]}, 1, {4, 2}, 1.1), "members: 1 members (a group has 2..4)");
  one(group_entry({kQkv[0], kQkv[1], kQkv[2], kQkv[1], kQkv[2]}, 1, {4, 2}, 1.1), "members: 5 members");
  one(group_entry({{GgmlType::Q4_K, 4096}, {GgmlType::Q5_K, 1024}, {GgmlType::Q6_K, 1024}}, 1, {4, 2}, 1.1),
      "members: 3 distinct types (a group has at most 2)");
  ProfileEntry type = group_entry(kQkvMixed, 1, {4, 2}, 1.1);
  type.key.type = GgmlType::Q4_K;
  one(type, "type: q4_K is not the members' q6_K");
  ProfileEntry n = group_entry(kQkv, 1, {4, 2}, 1.1);
  n.key.n = 6000;
  one(n, "n: 6000 is not the sum of the members' N, 6144");
  one(group_entry(kQkv, 5, {4, 2}, 1.1), "ncols: a group runs at ncols 1..4");
  one(group_entry(kQkv, 1, {1, 1}, 1.1), "config: nwarps 1, rows_per_block 1 is outside the group grid");
  one(group_entry(kQkv, 1, {4, 8}, 1.1), "config: nwarps 4, rows_per_block 8 is outside the group grid");
  ProfileEntry f16 = group_entry({{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}}, 1, {4, 2}, 1.1);
  f16.key.members[1].type = GgmlType::F16;
  f16.key.type = GgmlType::F16;
  EXPECT_GE(problems_of(f16).size(), 2u);  // the entry's type and the member's: no mmvq kernel
  ProfileEntry blocks = group_entry({{GgmlType::Q4_0, 4096}, {GgmlType::Q4_K, 1024}}, 1, {4, 2}, 1.1);
  blocks.key.k = 4128;  // whole q4_0 blocks, not whole q4_K blocks
  const std::vector<std::string> block_problems = problems_of(blocks);
  ASSERT_FALSE(block_problems.empty());
  EXPECT_NE(block_problems.back().find("not a whole number of the member's q4_K blocks"), std::string::npos) << block_problems.back();
}

TEST(ProfileGroups, MergeKeepsEachDevicesGroupsAndDiffNamesThem) {
  const Profile a = profile_of({group_entry(kQkv, 1, {4, 2}, 1.10, "H100", "S1"), group_entry(kQkvMixed, 1, {8, 1}, 1.05, "H100", "S1")});
  const Profile b = profile_of({group_entry(kQkv, 1, {2, 1}, 1.20, "H200", "S2"), group_entry(kQkv, 1, {8, 4}, 1.15, "H100", "S2")});
  const MergeResult m = merge_profiles({a, b});
  ASSERT_EQ(m.profile.entries.size(), 3u);  // H100's two groups, H200's one
  EXPECT_EQ(applied_group(m.profile, "sm_90", {"H200", 132, 0}, kQkv, 4096, 1)->config, (Config{2, 1}));
  EXPECT_EQ(applied_group(m.profile, "sm_90", {"H100", 132, 0}, kQkv, 4096, 1)->config, (Config{8, 4}));  // measured faster
  EXPECT_EQ(applied_group(m.profile, "sm_90", {"H100", 132, 0}, kQkvMixed, 4096, 1)->config, (Config{8, 1}));
  ASSERT_EQ(m.conflicts.size(), 1u);
  EXPECT_EQ(key_text(m.conflicts[0].key), "sm_90 group q4_K:4096,q4_K:1024,q4_K:1024 k 4096 ncols 1 on H100 (132 SMs)");
  const ProfileDiff d = diff_profiles(a, m.profile);
  EXPECT_EQ(d.count(DiffKind::Added), 1);
  EXPECT_EQ(d.count(DiffKind::Changed), 1);
  EXPECT_EQ(d.count(DiffKind::Same), 1);
  EXPECT_NE(d.text().find("group q4_K:4096,q4_K:1024,q4_K:1024 k 4096 ncols 1"), std::string::npos) << d.text();
}

TEST(ProfileGroups, ExportsWithoutAGroupLaunchLeaveItOutAndSaySo) {
  const Profile p = profile_of({approved(measured("sm_90", GgmlType::Q4_K, 4096, 4096, 1, {4, 4}, {4, 1}, 1.05)),
                                group_entry(kQkv, 1, {4, 2}, 1.1)});
  const auto group_note = [](const Export& ex) -> const ExportNote* {
    for (const ExportNote& n : ex.report.notes)
      if (launch_is_group(n.key.launch)) return &n;
    return nullptr;
  };
  for (const Export& ex : {export_kernel_anvil(p, {"sm_90"}), export_header(p, {"sm_90"}), export_ggml_table(p, {"sm_90"})}) {
    SCOPED_TRACE(ex.report.format);
    const ExportNote* n = group_note(ex);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->fate, ExportFate::Dropped);
    EXPECT_NE(n->reason.find("same-input group"), std::string::npos) << n->reason;
    EXPECT_NE(ex.report.text().find("same-input group"), std::string::npos) << ex.report.text();
    EXPECT_EQ(ex.content.find("mul_mat_group"), std::string::npos);
    EXPECT_EQ(ex.report.emitted(), 1);
  }
  const Export temper = export_temper(p);
  EXPECT_NE(temper.content.find("\"members\": \"q4_K:4096,q4_K:1024,q4_K:1024\""), std::string::npos);
}

}  // namespace
}  // namespace temper
