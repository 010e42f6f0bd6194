// Exports: kernel-anvil buckets, applicability and merge rules at every bucket edge, the header
// (compiled standalone with the system compiler and queried by a driver), CSV of a session.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "profile_helpers.h"
#include "support/shell_run.h"
#include "sweep/sample_session.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/profile.h"
#include "temper/sweep.h"

namespace temper {
namespace {

using nlohmann::json;
using test::approved;
using test::measured;
using test::profile_of;

const Config kGenericDefault{4, 1};  // GENERIC at ncols 1
const Config kSmallK{4, 4};          // its small-K variant

ProfileEntry small_k(int n, int k, uint64_t bytes = 1000, GgmlType t = GgmlType::Q4_0) {
  return approved(measured("sm_90", t, n, k, 1, kSmallK, kGenericDefault, 1.1, bytes));
}

const ExportNote* note_for(const ExportReport& r, const ProfileKey& key) {
  for (const auto& n : r.notes)
    if (n.key == key) return &n;
  return nullptr;
}

TEST(KernelAnvil, BucketEdges) {
  const std::pair<int64_t, int> cases[] = {{1, 0},     {128, 0},   {129, 1},   {1024, 1},  {1025, 2},
                                           {4096, 2},  {4097, 3},  {16384, 3}, {16385, 4}, {1 << 20, 4}};
  for (auto [x, b] : cases) EXPECT_EQ(anvil_bucket(x), b) << x;
}

TEST(KernelAnvil, ApplicabilityFollowsThePatch) {
  EXPECT_FALSE(anvil_inapplicable(small_k(4096, 4096)));
  auto why = [](ProfileEntry e) { return anvil_inapplicable(e).value_or(""); };
  EXPECT_NE(why(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 2, {4, 4}, {4, 2}, 1.1)).find("ncols 1 only"), std::string::npos);
  EXPECT_NE(why(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {2, 1}, {4, 1}, 1.1)).find("small-K"), std::string::npos);
  EXPECT_NE(why(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {8, 8}, {4, 1}, 1.1)).find("does not apply nwarps"),
            std::string::npos);
  EXPECT_NE(why(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {4, 2}, {4, 1}, 1.1)).find("rows_per_block = nwarps"),
            std::string::npos);
  EXPECT_NE(why(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 1, {64, 64}, {64, 1}, 1.1)).find("1..32"), std::string::npos);
}

TEST(KernelAnvil, CellsMergeAtEveryBucketEdgeWithNFirst) {
  Profile p = profile_of({
      small_k(4096, 1024), small_k(4097, 1024),                // cells 2,1 and 3,1
      small_k(1025, 1025, 200), small_k(4096, 4096, 300),      // both cell 2,2: the larger share stays
      small_k(128, 129), small_k(129, 128),                    // cells 0,1 and 1,0
      small_k(16384, 16385), small_k(16385, 16384),            // cells 3,4 and 4,3
      small_k(14336, 4096, 10, GgmlType::Q4_K),                // other type id (12)
      approved(measured("sm_90", GgmlType::Q4_0, 1024, 1024, 1, {2, 1}, kGenericDefault, 1.2)),  // rows 1
      approved(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 2, {4, 4}, {4, 2}, 1.2)),           // ncols 2
      measured("sm_90", GgmlType::Q4_0, 64, 64, 1, kSmallK, kGenericDefault, 1.2),               // pending
      approved(measured("gfx942", GgmlType::Q4_0, 4096, 4096, 1, {2, 2}, {2, 1}, 1.2)),          // other arch
  });
  try {
    export_kernel_anvil(p);
    FAIL() << "two arches need --arch";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("--arch"), std::string::npos);
  }
  const Export ex = export_kernel_anvil(p, {"sm_90"});
  const json j = json::parse(ex.content);
  ASSERT_EQ(j.size(), 1u);
  const json& q40 = j["configs"]["2"];
  const json small = {{"nwarps", 4}, {"rows_per_block", 4}};
  for (const char* cell : {"2,1", "3,1", "2,2", "0,1", "1,0", "3,4", "4,3"}) EXPECT_EQ(q40[cell], small) << cell;
  EXPECT_EQ(q40.size(), 7u);
  EXPECT_EQ(j["configs"]["12"]["3,2"], small);  // q4_K 14336 rows (bucket 3) × 4096 (bucket 2)
  EXPECT_EQ(ex.report.emitted(), 8);
  EXPECT_EQ(ex.report.merged(), 1);
  EXPECT_EQ(ex.report.dropped(), 4);
  const ExportNote* merged = note_for(ex.report, {"sm_90", GgmlType::Q4_0, 1025, 1025, 1});
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->fate, ExportFate::Merged);
  ASSERT_TRUE(merged->kept);
  EXPECT_EQ(*merged->kept, (ProfileKey{"sm_90", GgmlType::Q4_0, 4096, 4096, 1}));
  EXPECT_EQ(note_for(ex.report, {"sm_90", GgmlType::Q4_0, 64, 64, 1})->reason, "not approved (pending)");
  EXPECT_NE(note_for(ex.report, {"gfx942", GgmlType::Q4_0, 4096, 4096, 1})->reason.find("sm_90 only"), std::string::npos);
  EXPECT_NE(ex.report.text().find("8 emitted, 1 merged, 4 dropped"), std::string::npos);

  // Imported back, each cell is one bucketed entry; exported again, the file is identical.
  const Profile back = profile_from_json(j, "anvil.json", "sm_90");
  EXPECT_EQ(back.entries.size(), 8u);
  EXPECT_EQ(export_kernel_anvil(back).content, ex.content);
}

TEST(KernelAnvil, LargerShareDecidesACellWhateverTheOrder) {
  // Two different applicable configs can't share a default, so vary the default: the cell carries one value.
  ProfileEntry big = approved(measured("sm_90", GgmlType::Q6_K, 4096, 14336, 1, {2, 2}, {2, 1}, 1.05, 900));
  ProfileEntry small = approved(measured("sm_90", GgmlType::Q6_K, 4096, 12288, 1, {4, 4}, {4, 1}, 1.30, 100));
  for (const Profile& p : {profile_of({big, small}), profile_of({small, big})}) {
    const Export ex = export_kernel_anvil(p);
    EXPECT_EQ(json::parse(ex.content)["configs"]["14"]["2,3"], (json{{"nwarps", 2}, {"rows_per_block", 2}}));
    const ExportNote* n = note_for(ex.report, small.key);
    ASSERT_TRUE(n);
    EXPECT_EQ(n->fate, ExportFate::Merged);
    EXPECT_NE(n->reason.find("not this entry's 4x4"), std::string::npos);
    // What the engine runs: the merged shape gets the cell's value, not its own winner.
    const Profile applied = as_applied(p, ex.report);
    EXPECT_EQ(find_entry(applied, small.key)->config, (Config{2, 2}));
    EXPECT_EQ(find_entry(applied, small.key)->approval, Approval::Approved);
  }
  // Dropped entries are not applied.
  Profile q = profile_of({big, approved(measured("sm_90", GgmlType::Q4_0, 4096, 4096, 2, {4, 4}, {4, 2}, 1.2))});
  const Profile applied = as_applied(q, export_kernel_anvil(q).report);
  EXPECT_EQ(find_entry(applied, q.entries[0].key)->approval, Approval::Pending);
}

TEST(Header, CompilesStandaloneAndLooksUpTheRightValues) {
  ProfileEntry bucket;  // an imported kernel-anvil cell: q4_0, N ≤ 128, K in 1025..4096
  bucket.key = {"sm_90", GgmlType::Q4_0, 128, 4096, 1};
  bucket.config = {2, 2};
  bucket.bucketed = true;
  bucket.approval = Approval::Approved;
  Profile p = profile_of({
      approved(measured("sm_90", GgmlType::Q4_K, 14336, 4096, 1, {4, 4}, {4, 1}, 1.1)),
      approved(measured("sm_90", GgmlType::Q6_K, 4096, 14336, 2, {2, 2}, {4, 2}, 1.1)),
      approved(measured("sm_90", GgmlType::Q4_0, 100, 2048, 1, {8, 1}, {4, 1}, 1.1)),  // exact beats the bucket
      bucket,
      measured("sm_90", GgmlType::Q8_0, 4096, 4096, 1, {1, 1}, {4, 1}, 1.1),  // pending: not in the header
  });
  p.entries[0].provenance->device_name = "GPU with // comment\nand newline";
  const Export ex = export_header(p);
  EXPECT_EQ(ex.report.emitted(), 4);
  EXPECT_EQ(ex.report.dropped(), 1);
  EXPECT_NE(ex.content.find("session(s) S1"), std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() /
                   ("temper-header-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  write_file_atomic(dir / "tuning.h", ex.content);
  std::ofstream(dir / "driver.cpp") << R"(#include "tuning.h"
using temper_tuning::lookup;
static_assert(lookup(12, 14336, 4096, 1).nwarps == 4 && lookup(12, 14336, 4096, 1).rows_per_block == 4, "q4_K");
static_assert(!lookup(12, 14336, 4096, 1).use_default, "q4_K tuned");
static_assert(lookup(12, 14336, 4096, 2).use_default, "q4_K ncols 2 is not in the profile");
static_assert(lookup(14, 4096, 14336, 2).nwarps == 2 && lookup(14, 4096, 14336, 2).rows_per_block == 2, "q6_K ncols 2");
static_assert(lookup(2, 100, 2048, 1).nwarps == 8 && lookup(2, 100, 2048, 1).rows_per_block == 1, "exact first");
static_assert(lookup(2, 128, 1025, 1).nwarps == 2 && lookup(2, 1, 4096, 1).rows_per_block == 2, "bucket edges in");
static_assert(lookup(2, 129, 2048, 1).use_default && lookup(2, 64, 1024, 1).use_default && lookup(2, 64, 4097, 1).use_default,
              "bucket edges out");
static_assert(lookup(8, 4096, 4096, 1).use_default, "pending q8_0 not exported");
static_assert(temper_tuning::kEntryCount == 4, "count");
int main(int argc, char**) {
  // The same at run time, with values the compiler cannot fold.
  const long long n = 14336 + (argc - 1), k = 4096;
  const temper_tuning::LaunchConfig c = lookup(12, n, k, 1);
  return (c.nwarps == 4 && c.rows_per_block == 4 && !c.use_default && lookup(3, n, k, 1).use_default) ? 0 : 1;
}
)";
  const std::string cxx = TEMPER_HOST_CXX;
  const std::string d = dir.string();
  EXPECT_EQ(test::system_status(cxx + " -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c++ " + d + "/tuning.h"), 0);
  ASSERT_EQ(test::system_status(cxx + " -std=c++17 -Wall -Wextra -Werror -pedantic -o " + d + "/driver " + d + "/driver.cpp"), 0)
      << ex.content;
  EXPECT_EQ(test::system_status(d + "/driver"), 0);
  // clang checks unused constants of a header compiled as the main file: none may warn.
  if (test::system_status("command -v clang++ >/dev/null 2>&1") == 0)
    EXPECT_EQ(test::system_status("clang++ -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c++ " + d + "/tuning.h"), 0);
  // An empty profile still makes a valid header that always says "use default".
  write_file_atomic(dir / "tuning.h", export_header(profile_of({})).content);
  std::ofstream(dir / "empty.cpp") << "#include \"tuning.h\"\nstatic_assert(temper_tuning::lookup(2, 1, 32, 1).use_default, \"\");\n"
                                      "int main() { return 0; }\n";
  EXPECT_EQ(test::system_status(cxx + " -std=c++17 -Wall -Wextra -Werror -o " + d + "/empty " + d + "/empty.cpp"), 0);
  std::filesystem::remove_all(dir);
}

TEST(Csv, OneRowPerResultWithQuotingAndVerdicts) {
  Session s = test::sample_session();
  s.verdicts = select_verdicts(s);
  const Export ex = export_csv(s);
  std::istringstream in(ex.content);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), s.results.size() + 1);
  EXPECT_EQ(lines[0].rfind("session,device,device_name,arch,type,n,k,ncols,nwarps,rows_per_block,", 0), 0u);
  const size_t columns = std::count(lines[0].begin(), lines[0].end(), ',');
  bool saw_winner = false, saw_quoted = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.find("\"row 3 column 0: got 1.5, expected 2.5\"") != std::string::npos) saw_quoted = true;
    else EXPECT_EQ(size_t(std::count(l.begin(), l.end(), ',')), columns) << l;
    if (l.find("q4_K,14336,4096,1,2,1,0,0,ok,90,") != std::string::npos) {
      saw_winner = true;
      EXPECT_NE(l.find(",1.11111,winner,"), std::string::npos) << l;
    }
  }
  EXPECT_TRUE(saw_winner);
  EXPECT_TRUE(saw_quoted);
}

}  // namespace
}  // namespace temper
