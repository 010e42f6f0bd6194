// Hook v5's same-input groups (launch kind mul_mat_group) in an engine patched by an older hook: its
// own profile reader (tests/engine/hook-v3/ or hook-v4/, by TEMPER_OLDER_HOOK, compiled from this
// one file twice) reads the profile, skips each group entry on its own (counted as a launch this
// hook lacks, or malformed where its rules object) and applies the rest. Two groups that such a
// hook takes for one key make it ignore the whole file: `temper profile validate` warns of that.
#include <gtest/gtest.h>

#include <filesystem>

#include "temper-mmvq-profile.h"  // hook v3's or v4's, by include path
#include "temper/profile.h"
#include "support/profile_type_facts.h"
#include "temper/types.h"

namespace temper {
namespace {

namespace tp = temper_profile;
const std::filesystem::path kCorpus = std::filesystem::path(TEMPER_SOURCE_DIR) / "tests/profile/corpus";

tp::TypeFacts temper_types(const std::string& name) { return test::profile_type_facts<tp::TypeFacts>(name); }

TEST(OlderHookGroups, TheHookKnowsNoGroupKind) {
  EXPECT_EQ(tp::kLaunchKinds, 6) << "hook v" << TEMPER_OLDER_HOOK << "'s reader is frozen: it must not know mul_mat_group";
}

TEST(OlderHookGroups, GroupEntriesAreSkippedOneByOneAndTheRestApplies) {
  const tp::Profile p = tp::read((kCorpus / "valid-groups.json").string(), temper_types);
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.entries.size(), 4u);
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const tp::Choices c = tp::choose(p, h100, [](int, int, int, int, int) { return true; });
  EXPECT_EQ(tp::line("/p.json", c, h100),
            "temper: profile /p.json: 0 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 1 for sm_90; ignored 0 for other "
            "archs, 0 for other devices, 3 for launches this hook lacks, 0 with a config not compiled in, 0 malformed, 0 not approved");
  ASSERT_EQ(c.table.size(), 1u);  // the plain entry, and nothing under the group entries' type, n and k
  const tp::Key plain{tp::kMulMat, int(GgmlType::Q4_K), 512, 4096, 1};
  ASSERT_EQ(c.table.count(plain), 1u);
  EXPECT_EQ(c.table.at(plain).nwarps, 4);
  EXPECT_EQ(c.table.at(plain).rows, 4);
}

// A malformed group entry is skipped as malformed or as a kind it lacks, never applied, and never
// refuses the file (the group's own rules are v5's); the plain entry beside it applies.
TEST(OlderHookGroups, AMalformedGroupEntryIsSkippedAndThePlainEntryApplies) {
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(kCorpus)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("malformed-group-", 0) != 0) continue;
    ++files;
    SCOPED_TRACE(name);
    const tp::Profile p = tp::read(f.path().string(), temper_types);
    ASSERT_EQ(p.error, "");
    const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
    const tp::Choices c = tp::choose(p, h100, [](int, int, int, int, int) { return true; });
    EXPECT_EQ(c.lacking_launch + c.malformed, 1);
    EXPECT_EQ(c.for_arch, 1);
    EXPECT_EQ(c.table.size(), 1u);
  }
  EXPECT_GE(files, 10);
}

// Two groups of one type, n, k and ncols: one key to this hook, whose duplicate rule ignores the
// whole file (it runs stock and says why); Temper reads it, and validate warns.
TEST(OlderHookGroups, TwoGroupsOfOneOlderKeyAreRefusedAndValidateWarns) {
  const auto file = kCorpus / "valid-groups-older-hooks-collide.json";
  const tp::Profile p = tp::read(file.string(), temper_types);
  EXPECT_EQ(p.error, "entry 2: a second entry for its key");
  const Profile core = load_profile(file);
  EXPECT_TRUE(validate_profile(core).empty());
  const std::vector<std::string> warnings = profile_warnings(core);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("a hook before v5"), std::string::npos) << warnings[0];
  EXPECT_TRUE(profile_warnings(load_profile(kCorpus / "valid-groups.json")).empty());
}

}  // namespace
}  // namespace temper
