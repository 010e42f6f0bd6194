// Hook v3's profile reader (tests/engine/hook-v3/temper-mmvq-profile.h: Temper's own
// resources/engine/temper-mmvq-profile.h as of c9e4e4b, `git show c9e4e4b:resources/engine/temper-mmvq-profile.h`)
// reading a profile with the "paths" of hook v4: an engine patched by an older Temper ignores the
// unknown top-level field and launches the same entries (ggml's own mmvq/mmq pick stays).
#include <gtest/gtest.h>

#include <filesystem>

#include "hook-v3/temper-mmvq-profile.h"
#include "temper/profile.h"
#include "support/profile_type_facts.h"
#include "temper/types.h"

namespace temper {
namespace {

namespace fs = std::filesystem;
namespace tp = temper_profile;

// Temper's own type facts, as the engine's are ggml's.
tp::TypeFacts temper_types(const std::string& name) { return test::profile_type_facts<tp::TypeFacts>(name); }

TEST(ProfileReaderV3, AProfileWithPathsLoadsWithTheSameEntries) {
  const fs::path corpus = fs::path(TEMPER_SOURCE_DIR) / "tests/profile/corpus";
  const auto all = [](int, int, int, int, int) { return true; };
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  for (const char* name : {"valid-paths.json", "malformed-path-ncols-9.json", "malformed-path-no-evidence.json"}) {
    SCOPED_TRACE(name);
    const Profile v4 = load_profile(corpus / name, "");
    ASSERT_FALSE(v4.paths.empty());
    const tp::Profile v3 = tp::read((corpus / name).string(), temper_types);
    ASSERT_EQ(v3.error, "");
    ASSERT_EQ(v3.entries.size(), v4.entries.size());
    ASSERT_EQ(v3.entries.size(), 1u);
    EXPECT_EQ(v3.entries[0].problem, "");
    const tp::Choices c = tp::choose(v3, h100, all);
    EXPECT_EQ(c.for_arch, 1);
    EXPECT_EQ(c.for_device + c.other_arch + c.other_device + c.lacking_launch + c.not_compiled + c.malformed + c.unapproved, 0);
    EXPECT_EQ(tp::line("/p.json", c, h100),
              "temper: profile /p.json: 0 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 1 for sm_90; ignored 0 for other "
              "archs, 0 for other devices, 0 for launches this hook lacks, 0 with a config not compiled in, 0 malformed, 0 not approved");
  }
}

}  // namespace
}  // namespace temper
