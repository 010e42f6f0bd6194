// Tune's profile steps: approve the sweep's winners by policy, install the profile where the engine reads it.
#include <algorithm>

#include "steps.h"

#include "temper/content_hash.h"
#include "temper/fileio.h"
#include "temper/input.h"

namespace temper::tune::detail {
namespace fs = std::filesystem;

json approve_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  const fs::path tuned_path = c.report.state_dir / "profile.json";
  const std::string input = digest({"approve 1", content_hash(read_file(c.report.session)),
                                    o.approve_all ? "all" : "significant", fmt("%.6f", o.min_speedup)});
  if (r.unchanged(input) && !r.last()->value("output_hash", "").empty() &&
      r.last()->value("output_hash", "") == state_file_hash(tuned_path)) {
    c.tuned = load_profile(tuned_path);
    r.outcome = "skipped";
  } else {
    // Made again from the session whenever the file is not the one this step wrote.
    c.tuned = profile_from_session(c.session);
    if (o.approve_all) approve_all(c.tuned);
    else approve_significant(c.tuned, o.min_speedup);
    save_profile(c.tuned, tuned_path);
  }
  const int approved = approved_count(c.tuned, c.arch);
  r.summary = std::to_string(c.tuned.entries.size()) + " winners, " + std::to_string(approved) + " approved" +
              (o.approve_all ? std::string(" (all)") : " (CI-separated and at least " + fmt("%.0f", o.min_speedup * 100) + " % faster)");
  if (approved == 0) c.note("no winner was approved: the engine runs stock with this profile");
  return {{"input", input}, {"output_hash", state_file_hash(tuned_path)}};
}

json install_step(TuneContext& c, StepRun& r) {
  TuneReport& report = c.report;
  std::optional<Profile> current;
  std::error_code ec;
  if (fs::exists(report.profile, ec)) {
    current = load_profile(report.profile);
    c.as_found_bytes = read_input(report.profile, kMaxProfileBytes, "profile");
  }
  c.read_back = c.as_found = c.mine = current.value_or(Profile{});
  Profile merged = current ? install_profile(*current, c.tuned, c.session) : c.tuned;
  // What the token step took back stays taken back while the sweep's choice is the one it measured
  // (the token step measures it again whenever its input changes).
  if (current) {
    for (ProfileEntry& e : merged.entries)
      if (const ProfileEntry* was = find_entry(*current, e.key);
          was && token_rejected(*was) && e.approval == Approval::Approved && was->config == e.config)
        e.approval = was->approval, e.note = was->note, e.decided_at = was->decided_at;
    // And what it put in (a fused gate/up instead of its unfused pair) stays while the pair is taken back.
    for (const ProfileEntry& was : current->entries) {
      ProfileKey pair = was.key;
      pair.launch = unfused_kind(was.key.launch);
      const ProfileEntry* taken_back = find_entry(merged, pair);
      if (token_added(was) && !find_entry(merged, was.key) && taken_back && token_rejected(*taken_back)) merged.entries.push_back(was);
    }
    std::sort(merged.entries.begin(), merged.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
  }
  int kept = 0;
  for (const auto& e : merged.entries) kept += !find_entry(c.tuned, e.key);
  report.installed = current.value_or(Profile{});
  if (current && to_json(merged) == to_json(*current)) {
    r.skipped(path_text(report.profile) + " holds this profile already");
  } else {
    merged.created = utc_now_iso8601();
    merged.tool_version = TEMPER_VERSION;
    report.installed = std::move(merged);
    c.write_installed();
    r.summary = "wrote " + path_text(report.profile);
  }
  merged = report.installed;
  r.summary += ": " + std::to_string(approved_count(merged, c.arch)) + " approved entries for " + c.arch +
               (kept ? ", " + std::to_string(kept) + " entries of other shapes or arches kept" : std::string());
  report.installed = std::move(merged);
  return {{"profile", path_text(report.profile)}};
}

}  // namespace temper::tune::detail
