// Hook v7's pipelined launch kinds (mul_mat_pipelined, mul_mat_glu_pipelined, mul_mat_id_pipelined,
// mul_mat_id_glu_pipelined) in an engine patched by an older hook: its own profile reader
// (tests/engine/hook-v6/: v5's and v6's, unchanged between them) skips each pipelined entry on its own,
// counted as a launch this hook lacks, and applies the rest: the engine runs those launches as the
// plain entries beside them say, unpipelined (issue 29: "ignored entry by entry with its line").
#include <gtest/gtest.h>

#include <filesystem>

#include "temper-mmvq-profile.h"  // the older hook's, by include path
#include "support/profile_type_facts.h"
#include "temper/types.h"

namespace temper {
namespace {

namespace tp = temper_profile;
const std::filesystem::path kCorpus = std::filesystem::path(TEMPER_SOURCE_DIR) / "tests/profile/corpus";

tp::TypeFacts temper_types(const std::string& name) { return test::profile_type_facts<tp::TypeFacts>(name); }

TEST(OlderHookPipelined, TheHookKnowsNoPipelinedKind) {
  EXPECT_LE(tp::kLaunchKinds, 7) << "hook v" << TEMPER_OLDER_HOOK << "'s reader is frozen: it must not know the pipelined kinds";
}

TEST(OlderHookPipelined, PipelinedEntriesAreSkippedOneByOneAndThePlainEntryApplies) {
  const tp::Profile p = tp::read((kCorpus / "valid-pipelined.json").string(), temper_types);
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.entries.size(), 6u);
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const tp::Choices c = tp::choose(p, h100, [](int, int, int, int, int) { return true; });
  EXPECT_EQ(tp::line("/p.json", c, h100),
            "temper: profile /p.json: 0 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 1 for sm_90; ignored 0 for other "
            "archs, 0 for other devices, 5 for launches this hook lacks, 0 with a config not compiled in, 0 malformed, 0 not approved");
  ASSERT_EQ(c.table.size(), 1u);
  const tp::Key plain{tp::kMulMat, int(GgmlType::Q4_K), 512, 4096, 1};
  ASSERT_EQ(c.table.count(plain), 1u);
  EXPECT_EQ(c.table.at(plain).nwarps, 4);
  EXPECT_EQ(c.table.at(plain).rows, 4);
}

// A malformed pipelined entry is skipped (as a kind it lacks), never applied and never refuses the file.
TEST(OlderHookPipelined, AMalformedPipelinedEntryIsSkippedAndThePlainEntryApplies) {
  for (const char* name : {"malformed-pipelined-at-ncols-2.json", "malformed-pipelined-config-64.json"}) {
    SCOPED_TRACE(name);
    const tp::Profile p = tp::read((kCorpus / name).string(), temper_types);
    ASSERT_EQ(p.error, "");
    const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
    const tp::Choices c = tp::choose(p, h100, [](int, int, int, int, int) { return true; });
    EXPECT_EQ(c.lacking_launch + c.malformed, 1);
    EXPECT_EQ(c.for_arch, 1);
    EXPECT_EQ(c.table.size(), 1u);
  }
}

}  // namespace
}  // namespace temper
