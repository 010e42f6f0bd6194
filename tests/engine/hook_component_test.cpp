// The hook as a component (hook/, issue 47): the families table against the edit lists and against
// the engine versions' table (temper/engine_versions.h: the same ggml commit, family for family), the
// unified diff writer's known answers, and `engine patch --dry-run` round trips: the diff, applied by
// `patch -p1` to a pristine copy, gives exactly what `engine patch` writes (the stand-in tree in CI,
// $TEMPER_UPSTREAM's trees where set).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "engine/hook_component.h"
#include "engine/unified_diff.h"
#include "support/test_dir.h"
#include "support/upstream_tree.h"
#include "temper/engine.h"
#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/fileio.h"

namespace fs = std::filesystem;
using namespace temper;
namespace hc = engine::hook_component;

namespace {

const fs::path kFixtures = fs::path(TEMPER_SOURCE_DIR) / "tests/engine/fixtures";

// ---- the unified diff writer: known answers ----

TEST(UnifiedDiff, EqualTextsGiveNothing) { EXPECT_EQ(engine::unified_diff("a\nb\n", "a\nb\n", "a/f", "b/f"), ""); }

TEST(UnifiedDiff, AChangedLineWithItsContext) {
  EXPECT_EQ(engine::unified_diff("a\nb\nc\n", "a\nB\nc\n", "a/f", "b/f"), "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
}

TEST(UnifiedDiff, ANewFileAndAMissingLastNewline) {
  EXPECT_EQ(engine::unified_diff("", "x\ny\n", "/dev/null", "b/f"), "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n");
  EXPECT_EQ(engine::unified_diff("a\n", "a\nb", "a/f", "b/f"), "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n");
}

TEST(UnifiedDiff, DistantChangesAreSeparateHunksNearOnesOne) {
  std::string before, far, near;
  for (int i = 1; i <= 20; ++i) before += "l" + std::to_string(i) + "\n";
  far = before, near = before;
  far.replace(far.find("l2\n"), 3, "X\n");
  far.replace(far.find("l18\n"), 4, "Y\n");
  EXPECT_EQ(engine::unified_diff(before, far, "a/f", "b/f"),
            "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n l1\n-l2\n+X\n l3\n l4\n l5\n"
            "@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+Y\n l19\n l20\n");
  near.replace(near.find("l5\n"), 3, "");       // 6 equal lines between the changes: one hunk
  near.replace(near.find("l11\n"), 4, "l11\nZ\n");
  EXPECT_EQ(engine::unified_diff(before, near, "a/f", "b/f"),
            "--- a/f\n+++ b/f\n@@ -2,13 +2,13 @@\n l2\n l3\n l4\n-l5\n l6\n l7\n l8\n l9\n l10\n l11\n+Z\n l12\n l13\n l14\n");
}

// ---- the families table and the edit lists say the same ----

bool has_edit(const std::vector<hc::Edit>& edits, const std::string& prefix) {
  return std::any_of(edits.begin(), edits.end(), [&](const hc::Edit& e) { return e.name.rfind(prefix, 0) == 0; });
}

TEST(HookFamilies, EachRowSaysWhatItsEditListsDo) {
  ASSERT_GE(engine::hook_families().size(), 2u);
  for (const engine::HookFamily& f : engine::hook_families()) {
    SCOPED_TRACE(f.name);
    const auto& mmvq = hc::edits(f.name, "mmvq.cu");
    ASSERT_FALSE(mmvq.empty());
    EXPECT_FALSE(f.tested.empty());
    for (const std::string& t : f.tested) EXPECT_NE(t.find('@'), std::string::npos) << t;  // tree@commit
    EXPECT_EQ(f.pipelining, std::any_of(mmvq.begin(), mmvq.end(), [](const hc::Edit& e) { return e.feature == "pipeline"; }));
    EXPECT_EQ(f.mul_mat_path, has_edit(mmvq, "bool ggml_cuda_should_use_mmvq("));
    EXPECT_EQ(f.moe_cap, has_edit(mmvq, "int get_mmvq_mmid_max_batch("));
    EXPECT_EQ(f.groups, !hc::edits(f.name, "ggml-cuda.cu").empty());
    EXPECT_NO_THROW(hc::vars(f.name).at("types"));
    EXPECT_NO_THROW(hc::vars(f.name).at("launch_flags"));
  }
}

TEST(HookFamilies, TheStandInsAreTheirFamilies) {
  EXPECT_EQ(engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci")).family, "ggml-halve-iters");
  EXPECT_EQ(engine::make_patch(read_file(kFixtures / "mmvq-paths-7180759.cu"), engine::kernel_set("ci")).family, "ggml-small-k");
  // A tree of neither: refused naming the anchor of the family nearest to it, and where the hook applies.
  std::string moved = read_file(kFixtures / "mmvq-paths.cu");
  const std::string rpb = "constexpr int rows_per_cuda_block = calc_rows_per_block(";
  moved.replace(moved.find(rpb), rpb.size(), "constexpr int rows_per_block = calc_rows_per_block(");
  try {
    engine::make_patch(moved, engine::kernel_set("ci"));
    ADD_FAILURE() << "patched a tree of no family";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("anchor not found: constexpr int rows_per_cuda_block = calc_rows_per_block(...)"), std::string::npos) << what;
    for (const engine::HookFamily& f : engine::hook_families()) EXPECT_NE(what.find("(" + f.name + ")"), std::string::npos) << what;
  }
}

// ---- the families table and the engine versions (temper/engine_versions.h) name the same commits ----

// Each family's tested ggml commit is its engine version's, and each version is a family's.
TEST(HookFamilies, TheirTestedGgmlCommitsAreTheEngineVersions) {
  std::map<std::string, std::string> tested_ggml;  // family -> commit
  for (const engine::HookFamily& f : engine::hook_families())
    for (const std::string& t : f.tested)
      if (t.rfind("ggml@", 0) == 0) tested_ggml[f.name] = t.substr(5);
  EXPECT_EQ(tested_ggml.size(), engine::hook_families().size()) << "a family without a tested ggml commit";
  EXPECT_EQ(tested_ggml.size(), std::size(kEngineVersions));
  for (const EngineVersion& v : kEngineVersions) {
    SCOPED_TRACE(v.name);
    ASSERT_TRUE(tested_ggml.count(std::string(v.family_name))) << "no family " << v.family_name << " in hook/families.txt";
    EXPECT_EQ(tested_ggml.at(std::string(v.family_name)), v.full_commit);
    EXPECT_EQ(v.full_commit.size(), 40u);
    EXPECT_TRUE(v.full_commit.starts_with(v.commit));
    EXPECT_EQ(v.name, "ggml-" + std::string(v.commit));
    EXPECT_EQ(&engine_version(v.family), &v);
  }
}

// $TEMPER_UPSTREAM's tree of each version (named as the version) is that version's family.
TEST(HookFamilies, EachVersionsUpstreamTreeIsItsFamily) {
  std::string skipped;
  for (const EngineVersion& v : kEngineVersions) {
    SCOPED_TRACE(v.name);
    std::string why;
    const fs::path tree = test::upstream_tree(std::string(v.name), &why);
    if (tree.empty()) {
      skipped += (skipped.empty() ? "" : "; ") + why;
      continue;
    }
    const engine::CheckReport c = engine::check(tree);
    EXPECT_TRUE(c.applies) << c.problem;
    EXPECT_EQ(c.family, v.family_name);
  }
  if (!skipped.empty()) GTEST_SKIP() << "SKIPPED: " << skipped;
}

// ik_llama.cpp is no family (docs/engine.md says which anchors and structure differ): its tree
// ($TEMPER_UPSTREAM/ik_llama.cpp, read only) is refused naming the first anchor, nothing written.
TEST(HookFamilies, IkLlamaCppIsRefusedNamingAnAnchor) {
  std::string why;
  const fs::path tree = test::upstream_tree("ik_llama.cpp", &why);
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const engine::CheckReport c = engine::check(tree);
  EXPECT_FALSE(c.applies);
  EXPECT_EQ(c.family, "");
  EXPECT_NE(c.problem.find("anchor not found: "), std::string::npos) << c.problem;
  // Its kernel template is not there for any family, whatever the first refusal names.
  const std::string mmvq = read_file(tree / "ggml/src/ggml-cuda/mmvq.cu");
  for (const engine::HookFamily& f : engine::hook_families())
    for (const hc::Edit& e : hc::edits(f.name, "mmvq.cu"))
      if (e.name == "mul_mat_vec_q's template and __launch_bounds__") EXPECT_EQ(mmvq.find(e.anchor), std::string::npos) << f.name;
}

// ---- --dry-run: the diff patch -p1 applies to a pristine copy gives what patch writes ----

// Every file under `dir` but the undo record, by relative path, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".temper-hook") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out[it->path().lexically_relative(dir).generic_string()] = read_file(it->path());
  }
  return out;
}

// `tree` (which ggml_cuda_part holds the ggml-cuda folder of) through --dry-run + patch -p1 and through patch.
void expect_dry_run_is_patch(const fs::path& tree, const fs::path& work) {
  fs::copy(tree, work / "dry", fs::copy_options::recursive);
  fs::copy(tree, work / "real", fs::copy_options::recursive);
  const auto before = files_under(work / "dry");
  const std::string diff = engine::dry_run(work / "dry", engine::kernel_set("ci"));
  EXPECT_EQ(files_under(work / "dry"), before);  // the dry run wrote nothing
  ASSERT_NE(diff.find("+++ b/"), std::string::npos);
  write_file_atomic(work / "hook.diff", diff);
  const std::string cmd = "patch -p1 -s -d '" + (work / "dry").string() + "' -i '" + (work / "hook.diff").string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  engine::patch(work / "real", engine::kernel_set("ci"));
  const auto dry = files_under(work / "dry"), real = files_under(work / "real");
  EXPECT_EQ(dry.size(), real.size());
  for (const auto& [name, bytes] : real) {
    ASSERT_TRUE(dry.count(name)) << name << " is missing from the dry run's result";
    EXPECT_TRUE(dry.at(name) == bytes) << name << " differs";
  }
}

TEST(HookDryRun, TheStandInTreesDiffIsWhatPatchWrites) {
  const fs::path base = test::fresh_test_dir("temper-hook-dry-run");
  const fs::path tree = base / "tree", cuda = tree / "src/ggml-cuda";
  fs::create_directories(cuda);
  write_file_atomic(cuda / "mmvq.cu", read_file(kFixtures / "mmvq-paths.cu"));
  write_file_atomic(cuda / "ggml-cuda.cu", read_file(kFixtures / "ggml-cuda-groups.cu"));
  write_file_atomic(cuda / "other.cu", "// a file the hook does not touch\n");
  expect_dry_run_is_patch(tree, base);
  const std::string diff = engine::dry_run(tree, engine::kernel_set("ci"));
  EXPECT_EQ(diff.rfind("--- a/src/ggml-cuda/mmvq.cu\n+++ b/src/ggml-cuda/mmvq.cu\n@@ -1,", 0), 0u) << diff.substr(0, 300);
  EXPECT_NE(diff.find(" @@\n+// temper-hook v" + std::to_string(engine::kHookVersion) + ": "), std::string::npos);
  EXPECT_NE(diff.find("--- a/src/ggml-cuda/ggml-cuda.cu\n+++ b/src/ggml-cuda/ggml-cuda.cu\n"), std::string::npos);
  EXPECT_NE(diff.find("--- /dev/null\n+++ b/src/ggml-cuda/temper-mmvq-registry.cu\n@@ -0,0 +1,"), std::string::npos);
  // What patch refuses, the dry run refuses: a tree patched already.
  engine::patch(tree, engine::kernel_set("ci"));
  EXPECT_THROW(engine::dry_run(tree, engine::kernel_set("ci")), Error);
  test::remove_test_dir(base);
}

class HookDryRunOn : public ::testing::TestWithParam<std::string> {};

TEST_P(HookDryRunOn, TheDiffIsWhatPatchWrites) {
  std::string why;
  const fs::path upstream = test::upstream_tree(GetParam(), &why);
  if (upstream.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const fs::path base = test::fresh_test_dir("temper-hook-dry-run-up");
  // The parts a patch reads and writes: the ggml-cuda folder, in the tree's own layout.
  const std::string part = GetParam() == "llama.cpp" ? "ggml/src/ggml-cuda" : "src/ggml-cuda";
  fs::create_directories((base / "tree" / part).parent_path());
  fs::copy(upstream / part, base / "tree" / part, fs::copy_options::recursive);
  expect_dry_run_is_patch(base / "tree", base);
  test::remove_test_dir(base);
}

INSTANTIATE_TEST_SUITE_P(Upstream, HookDryRunOn,
                         ::testing::Values(std::string(engine_version(EngineFamily::HalveIters).name),
                                           std::string(engine_version(EngineFamily::SmallK).name), std::string("llama.cpp")),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
