// Re-verification through the sweep runner, on the fake device with a chosen timing model.
#include <gtest/gtest.h>

#include "profile_helpers.h"
#include "temper/error.h"
#include "temper/fake_backend.h"
#include "temper/profile.h"

namespace temper {
namespace {

using test::approved;
using test::measured;
using test::profile_of;

RecheckOptions quick() {
  RecheckOptions o;
  o.sweep.warmup = 1;
  o.sweep.batch = 8;
  o.sweep.min_samples = 16;
  o.sweep.max_samples = 64;
  o.sweep.time_cap_s = 0.05;
  o.sweep.seed = 7;
  return o;
}

// GENERIC default for q4_0 at ncols 1, K = 4096 (no small-K): 4 warps × 1 row.
FakeDeviceOptions timed(std::function<double(Config)> us) {
  FakeDeviceOptions f;
  f.time_model = [us](const GemvProblem&, Config c) { return us(c); };
  return f;
}

const Profile kProfile = profile_of({
    approved(measured("sm_90", GgmlType::Q4_0, 256, 4096, 1, {2, 1}, {4, 1}, 1.2)),
    approved(measured("sm_90", GgmlType::Q4_0, 512, 4096, 1, {1, 1}, {4, 1}, 1.2)),
    approved(measured("sm_90", GgmlType::Q4_K, 256, 4096, 1, {4, 1}, {2, 1}, 1.2)),  // now the default here
    measured("sm_90", GgmlType::Q8_0, 256, 4096, 1, {2, 1}, {4, 1}, 1.2),            // pending: not measured
    approved(measured("gfx942", GgmlType::Q4_0, 256, 4096, 1, {2, 1}, {2, 1}, 1.2)),  // other arch
});

const RecheckLine* line_for(const RecheckReport& r, GgmlType t, int n) {
  for (const auto& l : r.lines)
    if (l.key.type == t && l.key.n == n) return &l;
  return nullptr;
}

TEST(Verify, ReportsWhichApprovedEntriesStillWin) {
  // 2x1 is fast, 1x1 slow, the default in between.
  FakeDevice device(timed([](Config c) { return c == Config{2, 1} ? 10.0 : c == Config{1, 1} ? 30.0 : 20.0; }));
  const RecheckReport r = recheck_profile(kProfile, device, quick());
  EXPECT_EQ(r.device_arch, "sm_90");
  ASSERT_EQ(r.lines.size(), 3u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].arch, "gfx942");
  const RecheckLine* win = line_for(r, GgmlType::Q4_0, 256);
  ASSERT_TRUE(win);
  EXPECT_EQ(win->verdict, "still wins") << r.text();
  EXPECT_EQ(win->default_config, (Config{4, 1}));
  EXPECT_NEAR(win->speedup, 2.0, 0.1);
  EXPECT_LT(win->speedup_low, win->speedup);
  ASSERT_TRUE(win->recorded_speedup);
  const RecheckLine* lost = line_for(r, GgmlType::Q4_0, 512);
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->verdict, "no longer wins");
  EXPECT_NEAR(lost->speedup, 20.0 / 30.0, 0.05);
  EXPECT_EQ(line_for(r, GgmlType::Q4_K, 256)->verdict, "now the default");
  EXPECT_EQ(r.still_winning(), 1);
  EXPECT_NE(r.text().find("1 of 3 approved entries still win"), std::string::npos);

  // Nothing changes unless asked; applied, the loser goes back to pending with a note.
  const Profile updated = apply_recheck(kProfile, r);
  const ProfileEntry* e_win = find_entry(updated, {"sm_90", GgmlType::Q4_0, 256, 4096, 1});
  EXPECT_EQ(e_win->approval, Approval::Approved);
  EXPECT_EQ(e_win->provenance->session_id, r.session_id);
  EXPECT_NEAR(e_win->provenance->tuned_us, 10.0, 0.5);
  const ProfileEntry* e_lost = find_entry(updated, {"sm_90", GgmlType::Q4_0, 512, 4096, 1});
  EXPECT_EQ(e_lost->approval, Approval::Pending);
  EXPECT_NE(e_lost->note.find("no longer wins"), std::string::npos);
  EXPECT_TRUE(validate_profile(updated).empty()) << testing::PrintToString(validate_profile(updated));
}

TEST(Verify, WrongOutputIsFailedNeverAWin) {
  FakeDeviceOptions f = timed([](Config c) { return c == Config{2, 1} ? 10.0 : 20.0; });
  f.wrong_configs = {{2, 1}};
  FakeDevice device(f);
  const RecheckReport r = recheck_profile(kProfile, device, quick());
  const RecheckLine* l = line_for(r, GgmlType::Q4_0, 256);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->verdict, "failed");
  EXPECT_NE(l->detail.find("approved config failed"), std::string::npos) << l->detail;
}

TEST(Verify, NoApprovedEntryForTheArchIsBadInput) {
  FakeDeviceOptions f;
  f.arch = "sm_80";
  FakeDevice device(f);
  try {
    recheck_profile(kProfile, device, quick());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("sm_80"), std::string::npos);
  }
}

}  // namespace
}  // namespace temper
