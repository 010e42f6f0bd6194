// Tune's group step: same-input groups off or with one of the 9 configs, whole token, in the engine.
#include "temper/groups.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "temper/crossover.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/keys.h"
#include "temper/stats.h"

namespace temper::tune {
using nlohmann::json;

namespace {
// The profile key of one run kind of the plan at `ncols`.
ProfileKey run_key(const PlanGroup& g, int ncols, const std::string& arch, const ProfileDevice& device) {
  std::vector<GroupMember> members;
  for (const auto& m : g.members) members.push_back({m.type, m.n});
  return group_profile_key(arch, members, g.k, ncols, device);
}
}  // namespace

const std::vector<engine::GroupSetting>& group_grid() {
  static const std::vector<engine::GroupSetting> grid = [] {
    std::vector<engine::GroupSetting> g;
    for (int w : {2, 4, 8})
      for (int r : {1, 2, 4}) g.push_back({w, r});
    return g;
  }();
  return grid;
}

GroupWidthSamples measure_groups(int ncols, int expected_runs, int rounds, const GroupReplay& replay, const GroupAgree& agree,
                                 const std::function<void()>& replay_done) {
  GroupWidthSamples w;
  w.ncols = ncols;
  w.expected_runs = expected_runs;
  const auto& grid = group_grid();
  w.tried.resize(grid.size());
  w.group_launches.assign(grid.size(), 0);
  auto run = [&](int arm) {  // -1: off
    const GroupRun r = replay(ncols, arm < 0 ? engine::GroupSetting::off() : grid[size_t(arm)]);
    auto& into = arm < 0 ? w.off : w.tried[size_t(arm)];
    into.insert(into.end(), r.token_us.begin(), r.token_us.end());
    if (arm >= 0) w.group_launches[size_t(arm)] = r.group_launches;
    if (replay_done) replay_done();
  };
  const int arms = int(grid.size());
  for (int round = 0; round < rounds; ++round)
    for (int i = 0; i <= arms; ++i) run(round % 2 == 0 ? i - 1 : arms - 1 - i);
  for (const auto& g : grid) w.agrees.push_back(agree(ncols, g));
  return w;
}

GroupDecision decide_groups(const GroupWidthSamples& w, double min_group_gain) {
  if (w.off.empty() || w.tried.size() != group_grid().size()) fail(ErrorKind::BadInput, "group step: an arm without samples");
  GroupDecision d;
  d.ncols = w.ncols;
  d.expected_runs = w.expected_runs;
  const SampleStats off = summarize(w.off);
  d.off_us = off.median, d.off_ci_low = off.ci_low, d.off_ci_high = off.ci_high;
  std::optional<size_t> best;
  SampleStats best_stats;
  int wrong_count = 0, wrong_output = 0;
  for (size_t i = 0; i < w.tried.size(); ++i) {
    if (w.tried[i].empty()) continue;
    if (w.group_launches[i] != w.expected_runs) {
      ++wrong_count;
      continue;
    }
    if (!w.agrees[i]) {
      ++wrong_output;
      continue;
    }
    const SampleStats s = summarize(w.tried[i]);
    if (!best || s.median < best_stats.median) best = i, best_stats = s;
  }
  if (!best) {
    d.why = "no config grouped the plan's " + std::to_string(w.expected_runs) + " runs with outputs that agree (" +
            std::to_string(wrong_count) + " made another number of group launches, " + std::to_string(wrong_output) +
            " changed an output)";
    return d;
  }
  d.found = true;
  d.best = group_grid()[*best];
  d.group_launches = w.group_launches[*best];
  d.best_us = best_stats.median, d.best_ci_low = best_stats.ci_low, d.best_ci_high = best_stats.ci_high;
  d.speedup = off.median / best_stats.median;
  d.speedup_low = off.ci_low / best_stats.ci_high;
  d.speedup_high = off.ci_high / best_stats.ci_low;
  d.approved = d.speedup_low >= 1 + min_group_gain;
  d.why = d.approved ? "its CI lower bound beats groups off by at least " + format_number("%.1f", min_group_gain * 100) + " %"
                     : "its CI lower bound (" + gain_text(d.speedup_low) + ") does not beat groups off by " +
                           format_number("%.1f", min_group_gain * 100) + " %";
  if (wrong_count + wrong_output)
    d.why += "; " + std::to_string(wrong_count + wrong_output) + " configs left out (group launches or outputs)";
  return d;
}

json to_json(const GroupWidthSamples& w) {
  json tried = json::array();
  for (size_t i = 0; i < w.tried.size(); ++i)
    tried.push_back({{"config", group_grid()[i].text()}, {"samples", w.tried[i]}, {"group_launches", w.group_launches[i]},
                     {"agrees", bool(w.agrees[i])}});
  return {{"ncols", w.ncols}, {"expected_runs", w.expected_runs}, {"off", w.off}, {"configs", tried}};
}

GroupWidthSamples group_samples_from_json(const json& j) {
  GroupWidthSamples w;
  try {
    w.ncols = j.at("ncols").get<int>();
    w.expected_runs = j.at("expected_runs").get<int>();
    w.off = j.at("off").get<std::vector<double>>();
    const json& configs = j.at("configs");
    if (configs.size() != group_grid().size()) fail(ErrorKind::BadInput, "tune journal: a group width without the 9 configs");
    for (size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].at("config").get<std::string>() != group_grid()[i].text())
        fail(ErrorKind::BadInput, "tune journal: group configs out of order");
      w.tried.push_back(configs[i].at("samples").get<std::vector<double>>());
      w.group_launches.push_back(configs[i].at("group_launches").get<int64_t>());
      w.agrees.push_back(configs[i].at("agrees").get<bool>());
    }
  } catch (const json::exception& e) {
    fail(ErrorKind::BadInput, std::string("tune journal: a group width that does not read: ") + e.what());
  }
  return w;
}

std::vector<ProfileEntry> group_entries(const GroupDecision& d, const LaunchPlan& plan, const std::string& arch,
                                        const ProfileDevice& device, const Provenance& evidence, const std::string& when) {
  std::vector<ProfileEntry> out;
  if (!d.approved) return out;
  for (const PlanGroup& g : plan.groups) {
    ProfileEntry e;
    e.key = run_key(g, d.ncols, arch, device);
    e.config = {d.best.nwarps, d.best.rows};
    e.default_config = {0, 0};  // stock: no group at all
    e.approval = Approval::Approved;
    e.decided_at = when;
    Provenance p = evidence;
    p.default_us = d.off_us, p.default_ci_low = d.off_ci_low, p.default_ci_high = d.off_ci_high;
    p.tuned_us = d.best_us, p.tuned_ci_low = d.best_ci_low, p.tuned_ci_high = d.best_ci_high;
    p.speedup = d.speedup, p.speedup_low = d.speedup_low, p.speedup_high = d.speedup_high;
    p.calls_per_token = g.runs_per_token;
    e.provenance = std::move(p);
    e.note = "tune's group step: µs are whole-token replays, groups off vs this config";
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<ProfileKey> group_keys(const std::vector<GroupDecision>& decisions, const std::map<int, LaunchPlan>& plans,
                                   const std::string& arch, const ProfileDevice& device) {
  std::vector<ProfileKey> keys;
  for (const GroupDecision& d : decisions) {
    const auto plan = plans.find(d.ncols);
    if (plan == plans.end()) continue;
    for (const PlanGroup& g : plan->second.groups) keys.push_back(run_key(g, d.ncols, arch, device));
  }
  return keys;
}

void install_groups(Profile& p, const std::vector<ProfileKey>& measured, const std::vector<ProfileEntry>& entries) {
  std::erase_if(p.entries, [&](const ProfileEntry& e) {
    return e.key.launch == Launch::MulMatGroup && std::find(measured.begin(), measured.end(), e.key) != measured.end();
  });
  for (const ProfileEntry& e : entries) p.entries.push_back(e);
}

json groups_json(const std::vector<GroupDecision>& decisions) {
  json out = json::array();
  for (const GroupDecision& d : decisions)
    out.push_back({{"ncols", d.ncols}, {"runs_per_token", d.expected_runs},
                   {"config", d.found ? json(d.best.text()) : json(nullptr)}, {"group_launches", d.group_launches},
                   {"off_us", d.off_us}, {"off_ci_low", d.off_ci_low}, {"off_ci_high", d.off_ci_high},
                   {"group_us", d.best_us}, {"group_ci_low", d.best_ci_low}, {"group_ci_high", d.best_ci_high},
                   {"speedup", d.speedup}, {"speedup_low", d.speedup_low}, {"speedup_high", d.speedup_high},
                   {"approved", d.approved}, {"why", d.why}});
  return out;
}

std::string groups_text(const std::vector<GroupDecision>& decisions) {
  std::ostringstream o;
  for (const GroupDecision& d : decisions) {
    o << "ncols " << d.ncols << ": " << d.expected_runs << " runs a token: ";
    if (!d.found) o << "groups stay off: " << d.why;
    else
      o << (d.approved ? "groups " + d.best.text() + " (" + gain_text(d.speedup) + " [" + gain_text(d.speedup_low) + ", " +
                             gain_text(d.speedup_high) + "])"
                       : "groups stay off (best " + d.best.text() + " " + gain_text(d.speedup) + ", not significant)");
    o << "\n";
  }
  return o.str();
}

double group_ratio_at_one_column(const std::vector<GroupDecision>& decisions) {
  for (const GroupDecision& d : decisions)
    if (d.ncols == 1 && d.approved) return d.speedup;
  return 1;
}

}  // namespace temper::tune
