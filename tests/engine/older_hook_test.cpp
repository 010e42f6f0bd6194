// Issue 29: a profile using the grid's new axes (rows_per_block 16, nwarps 32) in an engine patched by
// hook v3, which compiled neither. The engine's side is v3's own profile reader (tests/engine/hook-v3/,
// resources/engine/temper-mmvq-profile.h as of commit c9e4e4b) and what v3's run time could launch:
// its units registered the configs of kNwarps {1, 2, 4, 8, 16} × kRows {1, 2, 4, 8} that launch at
// 32-wide waves, and find_instance knows no others. Such entries are skipped one by one and counted
// as "not compiled in" on the profile's one line; the other entries still apply.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>

#include "temper-mmvq-profile.h"  // v3's, from tests/engine/hook-v3
#include "temper/mmvq_traits.h"
#include "support/profile_type_facts.h"
#include "temper/types.h"

namespace temper {
namespace {

namespace tp = temper_profile;

// Temper's own type facts, as the engine's are ggml's.
tp::TypeFacts temper_types(const std::string& name) { return test::profile_type_facts<tp::TypeFacts>(name); }

bool in(std::initializer_list<int> values, int v) { return std::find(values.begin(), values.end(), v) != values.end(); }

// What a hook could launch on a 32-wide-wave device: v3's grid, or today's (mmvq_traits.h).
bool v3_compiled(int, int, int ncols, int nwarps, int rows) {
  return in({1, 2, 4, 8, 16}, nwarps) && in({1, 2, 4, 8}, rows) && mmvq::launchable(ncols, nwarps, rows, 32);
}
bool v4_compiled(int, int, int ncols, int nwarps, int rows) {
  return std::ranges::count(mmvq::kGridNwarps, nwarps) && std::ranges::count(mmvq::kGridRowsPerBlock, rows) &&
         mmvq::launchable(ncols, nwarps, rows, 32);
}

TEST(OlderHook, EntriesUsingTheNewAxesAreSkippedOneByOneAndCounted) {
  const auto file = std::filesystem::path(TEMPER_SOURCE_DIR) / "tests/profile/corpus/valid-new-axes.json";
  const tp::Profile p = tp::read(file.string(), temper_types);
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.entries.size(), 4u);
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const tp::Key head{tp::kMulMat, int(GgmlType::Q6_K), 128256, 4096, 1};   // (4, 16)
  const tp::Key gate{tp::kMulMat, int(GgmlType::Q4_K), 14336, 4096, 1};    // (32, 1)
  const tp::Key q{tp::kMulMat, int(GgmlType::Q4_K), 4096, 4096, 1};        // (8, 2)
  const tp::Key kv{tp::kMulMat, int(GgmlType::Q4_K), 1024, 4096, 1};       // (2, 1)

  const tp::Choices v3 = tp::choose(p, h100, v3_compiled);
  EXPECT_EQ(tp::line("/p.json", v3, h100),
            "temper: profile /p.json: 0 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 2 for sm_90; ignored 0 for other "
            "archs, 0 for other devices, 0 for launches this hook lacks, 2 with a config not compiled in, 0 malformed, 0 not approved");
  EXPECT_EQ(v3.table.count(head), 0u);  // stock
  EXPECT_EQ(v3.table.count(gate), 0u);  // stock
  ASSERT_EQ(v3.table.count(q), 1u);
  EXPECT_EQ(v3.table.at(q).nwarps, 8);
  EXPECT_EQ(v3.table.at(q).rows, 2);
  ASSERT_EQ(v3.table.count(kv), 1u);
  EXPECT_EQ(v3.table.at(kv).nwarps, 2);

  // Hook v4 compiles both axes: every entry applies.
  const tp::Choices v4 = tp::choose(p, h100, v4_compiled);
  EXPECT_EQ(v4.for_arch, 4);
  EXPECT_EQ(v4.not_compiled, 0);
  ASSERT_EQ(v4.table.count(head), 1u);
  EXPECT_EQ(v4.table.at(head).rows, 16);
  ASSERT_EQ(v4.table.count(gate), 1u);
  EXPECT_EQ(v4.table.at(gate).nwarps, 32);
}

}  // namespace
}  // namespace temper
