#pragma once
// Tune's group step (hook v5): for each batch width 1..4 of the tune, the whole token replayed with
// same-input groups off and with each of the 9 group configs (nwarps {2,4,8} x rows {1,2,4}), in
// interleaved rounds as the crossover's; the best config is approved when its CI lower bound beats
// `group off` by --min-group-gain, the group launches per token equal the plan's runs and every
// launch's output agrees with the off arm. One mul_mat_group entry per run kind (member set) at
// that width goes into the profile, device-specific like the other entries.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/engine_replay.h"
#include "temper/plan.h"
#include "temper/profile.h"

namespace temper::tune {

inline constexpr double kDefaultMinGroupGain = 0.01;

// The 9 configs the hook compiles for groups, in a fixed order.
const std::vector<engine::GroupSetting>& group_grid();

// One replay of the token at a width and group setting: µs per token and group launches per token.
struct GroupRun {
  std::vector<double> token_us;
  int64_t group_launches = 0;
};
using GroupReplay = std::function<GroupRun(int ncols, const engine::GroupSetting& setting)>;
// Whether every launch's output with `setting` agrees with the off arm's (the replay's comparison).
using GroupAgree = std::function<bool(int ncols, const engine::GroupSetting& setting)>;

struct GroupWidthSamples {
  int ncols = 1;
  int expected_runs = 0;               // the plan's group runs per token at this width
  std::vector<double> off;             // every token of the off arm
  std::vector<std::vector<double>> tried;  // per group_grid() config
  std::vector<int64_t> group_launches;     // per config, per token
  std::vector<bool> agrees;                // per config: outputs agree with the off arm
};

// Rounds × (off, then the 9 configs; reversed every other round), then each config's outputs.
GroupWidthSamples measure_groups(int ncols, int expected_runs, int rounds, const GroupReplay& replay, const GroupAgree& agree,
                                 const std::function<void()>& replay_done = {});

struct GroupDecision {
  int ncols = 1;
  int expected_runs = 0;
  engine::GroupSetting best;           // the fastest config that grouped every run and agreed
  bool found = false;                  // some config did
  double off_us = 0, off_ci_low = 0, off_ci_high = 0, best_us = 0, best_ci_low = 0, best_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // off / best, conservative CI
  int64_t group_launches = 0;          // the best config's, per token
  bool approved = false;
  std::string why;                     // one line: why approved, or not
};
GroupDecision decide_groups(const GroupWidthSamples& w, double min_group_gain = kDefaultMinGroupGain);

nlohmann::json to_json(const GroupWidthSamples& w);
GroupWidthSamples group_samples_from_json(const nlohmann::json& j);  // Error(BadInput) when it does not read

// The entries an approved decision installs: one mul_mat_group entry per run kind of `plan` (the
// plan at the decision's width), keyed to `device` on `arch`. Provenance: whole-token µs of the off
// arm (default) and the config (tuned), the run kind's runs per token.
std::vector<ProfileEntry> group_entries(const GroupDecision& d, const LaunchPlan& plan, const std::string& arch,
                                        const ProfileDevice& device, const Provenance& evidence, const std::string& when);
// The profile keys of the run kinds `plans` has at the decisions' widths, on `device`: what a group
// step measured (another model's runs are other keys, and keep their entries).
std::vector<ProfileKey> group_keys(const std::vector<GroupDecision>& decisions, const std::map<int, LaunchPlan>& plans,
                                   const std::string& arch, const ProfileDevice& device);
// Replaces the group entries of the `measured` keys by `entries` (a run kind without an approved
// config loses its old entry: the measurement says groups do not pay there).
void install_groups(Profile& p, const std::vector<ProfileKey>& measured, const std::vector<ProfileEntry>& entries);

nlohmann::json groups_json(const std::vector<GroupDecision>& decisions);
std::string groups_text(const std::vector<GroupDecision>& decisions);  // a line a width
// The measured ratio at one column (off / best of the approved decision), 1 when none.
double group_ratio_at_one_column(const std::vector<GroupDecision>& decisions);

}  // namespace temper::tune
