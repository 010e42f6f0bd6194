// Tune's replay steps: the mmvq-or-mmq crossover, same-input groups and the decode replay, in the engine.
#include <algorithm>
#include <map>
#include <set>

#include "steps.h"

#include "temper/defaults.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/input.h"
#include "temper/plan.h"

namespace temper::tune::detail {
namespace fs = std::filesystem;

namespace {

std::string crossover_summary(const std::vector<CrossoverCell>& cells) {
  int approved = 0, pending = 0;
  std::set<int> widths;
  for (const CrossoverCell& c : cells) {
    approved += c.record == Approval::Approved;
    pending += c.record == Approval::Pending;
    widths.insert(c.ncols);
  }
  std::string w;
  for (int n : widths) w += (w.empty() ? "" : ", ") + std::to_string(n);
  return std::to_string(cells.size()) + " (type, launch, batch width) measured at ncols " + (w.empty() ? "-" : w) + ": " +
         std::to_string(approved) + " path choices approved, " + std::to_string(pending) + " pending (not significant)";
}

std::string replay_summary(const json& r) {
  return "GEMV time per token " + fmt("%.1f", r["stock"]["median_us"].get<double>()) + " µs stock, " +
         fmt("%.1f", r["profiled"]["median_us"].get<double>()) + " µs with the profile: speedup " +
         fmt("%.3f", r["speedup"].get<double>()) + " [" + fmt("%.3f", r["speedup_low"].get<double>()) + ", " +
         fmt("%.3f", r["speedup_high"].get<double>()) + "], predicted " + fmt("%.3f", r["predicted_speedup"].get<double>()) +
         "; " + std::to_string(r["profiled"]["tuned_launches"].get<int64_t>()) + " of " +
         std::to_string(r["profiled"]["mmvq_launches"].get<int64_t>()) + " mmvq launches tuned";
}

// The launches whose path the hook can move (an old ggml: only the MoE cap).
std::vector<PathTarget> movable_targets(engine::EngineDevice& dev, const engine::ReplayPlan& plan) {
  std::vector<PathTarget> targets = path_targets(plan.launches);
  if (old_ggml(dev)) std::erase_if(targets, [](const PathTarget& t) { return t.launch == Launch::MulMat; });
  return targets;
}

// The profile without the group and pipeline steps' entries (which come after the crossover).
Profile without_groups(Profile p) {
  std::erase_if(p.entries, [](const ProfileEntry& e) { return launch_is_group(e.key.launch) || launch_is_pipelined(e.key.launch); });
  return p;
}

}  // namespace

// ---- crossover: mmvq or mmq at each batch width above 1 ----
json crossover_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  std::vector<int> widths;
  for (int n : o.ncols)
    if (n >= 2) widths.push_back(n);
  // The input: what the engine launches, bar the paths this step writes and the group and pipeline
  // steps' entries (which come after it).
  Profile entries_only = without_groups(without_token(report.installed));
  entries_only.paths.clear();
  const std::string input =
      digest({"crossover 1", c.probe_id, approved_fingerprint(entries_only, c.arch), c.identity.header_hash, json(widths).dump(),
              std::to_string(o.replay_tokens), std::to_string(o.replay_rounds), fmt("%.6f", o.min_path_gain)});
  if (widths.empty()) return r.not_asked("no batch width above 1 in --ncols");
  auto decide_all = [&](const std::vector<WidthSamples>& done) {
    std::vector<CrossoverCell> cells;
    for (const WidthSamples& w : done)
      for (CrossoverCell& cell : decide_width(w, o.min_path_gain)) cells.push_back(std::move(cell));
    return cells;
  };
  // The records of these decisions go into the installed profile (measured keys replaced).
  auto record = [&](const ProfileDevice& on, const PathEvidence& evidence, const std::string& when) {
    return c.install([&](Profile& p) {
      for (const std::string& line : install_paths(p, report.crossover, c.arch, on,
                                                   path_choices(report.crossover, c.arch, on, evidence, when), evidence.model))
        c.note("crossover: " + line);
    });
  };
  // Unchanged input: the journaled decisions, put back into the profile if it lost them.
  if (r.unchanged(input)) {
    const json& last = *r.last();
    std::vector<WidthSamples> journaled;
    for (const json& w : last.at("widths")) journaled.push_back(width_samples_from_json(w));
    report.crossover = decide_all(journaled);
    const json& e = last.at("evidence");
    const PathEvidence evidence{e.at("source"), e.at("device_name"), e.at("device_arch"), e.at("kernel"), e.at("model")};
    const bool again = record(device_from_json(last.at("device")), evidence, last.at("decided_at"));
    return r.kept(crossover_summary(report.crossover), again);
  }
  std::vector<WidthSamples> done;
  r.resume(input, "crossover_width", "crossover", "batch widths", [&](const json& w) {
    done.push_back(width_samples_from_json(w));
    return true;
  });
  if (done.empty()) r.start(input);
  engine::EngineDevice& dev = c.engine_device();
  const engine::ReplayPlan plan = engine::plan_replay(c.file);
  const std::vector<PathTarget> targets = movable_targets(dev, plan);
  const std::string engine_version = ggml_version(dev);
  const StockPath stock = [&](const PathTarget& t, int n) {
    return defaults::stock_uses_mmvq(engine_version, c.arch, t.type, t.launch == Launch::MulMatId, n) ? MatPath::Mmvq : MatPath::Mmq;
  };
  // The model's token goes up once (a MoE model's experts are many GB) and is replayed for every
  // width and arm; the arms alternate in measure_width.
  std::unique_ptr<engine::TokenReplayer> token;
  const PathReplay replay = [&](int n, const std::vector<engine::ReplayOptions::ForcedPath>& forced) {
    r.stop_if_cancelled("the crossover; the batch widths measured are journaled: run the same command again to go on");
    if (!token) token = std::make_unique<engine::TokenReplayer>(dev, c.file, plan, 1);
    return token->run(token->plan_text(fs::absolute(report.profile), n, forced), o.replay_tokens).token_us;
  };
  if (done.empty()) {
    try {
      engine::TokenReplayer::check(dev, widths.front(), {});
    } catch (const Error& e) {
      // An engine that cannot replay wider tokens or force a path (a probe before protocol 4):
      // tune goes on with ggml's own choice, said once.
      if (e.kind() != ErrorKind::BadInput) throw;
      c.note("no crossover: " + std::string(e.what()));
      return r.not_asked(std::string("this engine cannot replay at batch widths above 1: ") + e.what());
    }
  }
  measure_widths<WidthSamples>(
      r, widths, "crossover_width", done,
      [&](int n) {  // the replays of a width: its stock arm and each target's other path, every round
        const size_t tried = targets_to_try(targets, stock, n).size();
        return tried ? o.replay_rounds * (1 + int(tried)) : 0;
      },
      [&](int n, const std::function<void()>& replay_done) {
        return measure_width(n, targets, stock, o.replay_rounds, replay, replay_done);
      });
  report.crossover = decide_all(done);
  PathEvidence evidence;
  evidence.source = "tune " + report.state_dir.filename().string();
  evidence.device_name = dev.info().name;
  evidence.device_arch = c.arch;
  evidence.kernel = kernel_label(dev.kernel_source());
  evidence.model = c.identity.file_name;
  const ProfileDevice on = profile_device(dev.info());
  const std::string when = utc_now_iso8601();
  record(on, evidence, when);
  r.summary = crossover_summary(report.crossover) + "; recorded in " + path_text(report.profile);
  json widths_json = json::array();
  for (const WidthSamples& w : done) widths_json.push_back(to_json(w));
  return {{"input", input}, {"widths", widths_json}, {"decided_at", when},
          {"device", device_json(on)},
          {"evidence", {{"source", evidence.source}, {"device_name", evidence.device_name}, {"device_arch", evidence.device_arch},
                        {"kernel", evidence.kernel}, {"model", evidence.model}}}};
}

void note_other_models_paths(TuneContext& c) {
  const TuneReport& report = c.report;
  if (std::none_of(report.installed.paths.begin(), report.installed.paths.end(), [&](const PathChoice& p) {
        return p.arch == c.arch && another_models_choice(p, c.identity.file_name);
      }))
    return;
  engine::EngineDevice& dev = c.engine_device();
  const std::vector<PathTarget> targets = movable_targets(dev, engine::plan_replay(c.file));
  std::vector<int> measured;
  for (const CrossoverCell& cell : report.crossover) measured.push_back(cell.ncols);
  for (const std::string& line :
       unmeasured_paths(report.installed, targets, measured, c.arch, profile_device(dev.info()), c.identity.file_name))
    c.note("crossover: " + line);
}

// ---- groups: same-input runs (q, k, v) as one launch, at each batch width 1..4 ----
json groups_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  std::vector<int> group_widths;
  for (int n : o.ncols)
    if (n >= 1 && n <= kGroupMaxNcols) group_widths.push_back(n);
  const std::string input =
      digest({"groups 1", c.probe_id, approved_fingerprint(without_groups(without_token(report.installed)), c.arch),
              c.identity.header_hash, json(group_widths).dump(), std::to_string(o.replay_tokens),
              std::to_string(o.replay_rounds), fmt("%.6f", o.min_group_gain)});
  std::map<int, LaunchPlan> plans;  // the plan at each width: its runs and their kinds
  int runs_total = 0;
  for (int n : group_widths) runs_total += (plans[n] = plan_launches(c.file, n)).group_runs_per_token();
  if (group_widths.empty() || runs_total == 0)
    return r.not_asked(group_widths.empty() ? "no batch width 1..4 in --ncols" : "the model has no same-input runs to group");
  auto decide_all = [&](const std::vector<GroupWidthSamples>& done) {
    std::vector<GroupDecision> out;
    for (const GroupWidthSamples& w : done) out.push_back(decide_groups(w, o.min_group_gain));
    return out;
  };
  auto summary = [&] {
    int approved = 0;
    for (const GroupDecision& d : report.groups) approved += d.approved;
    std::string s = std::to_string(report.groups.size()) + " batch widths measured, " + std::to_string(approved) + " with groups approved";
    for (const GroupDecision& d : report.groups)
      if (d.approved) s += "; ncols " + std::to_string(d.ncols) + " " + d.best.text() + " ×" + fmt("%.3f", d.speedup);
    return s;
  };
  auto record = [&](const ProfileDevice& on, const Provenance& evidence, const std::string& when) {
    std::vector<ProfileEntry> entries;
    for (const GroupDecision& d : report.groups)
      for (ProfileEntry& e : group_entries(d, plans.at(d.ncols), c.arch, on, evidence, when)) entries.push_back(std::move(e));
    return c.install([&](Profile& p) { install_groups(p, group_keys(report.groups, plans, c.arch, on), entries); });
  };
  if (r.unchanged(input)) {
    const json& last = *r.last();
    std::vector<GroupWidthSamples> journaled;
    for (const json& w : last.at("widths")) journaled.push_back(group_samples_from_json(w));
    report.groups = decide_all(journaled);
    const bool again = record(device_from_json(last.at("device")), evidence_from_json(last.at("evidence")), last.at("decided_at"));
    return r.kept(summary(), again);
  }
  std::vector<GroupWidthSamples> done;
  r.resume(input, "group_width", "group step", "batch widths", [&](const json& w) {
    done.push_back(group_samples_from_json(w));
    return true;
  });
  engine::EngineDevice& dev = c.engine_device();
  if (done.empty()) {
    try {
      engine::TokenReplayer::check(dev, 1, {}, engine::GroupSetting::off());
    } catch (const Error& e) {
      // A probe before protocol 5 (or an engine without groups): tune goes on without them, said once.
      if (e.kind() != ErrorKind::BadInput) throw;
      c.note("no group step: " + std::string(e.what()));
      return r.not_asked(std::string("this engine cannot run same-input groups: ") + e.what());
    }
    // A hook whose ggml-cuda.cu was not patched for groups launches none: nothing to measure.
    const auto hooks = dev.hello().find("group_hooks");
    if (hooks != dev.hello().end() && (std::atoi(hooks->second.c_str()) & 1) == 0) {
      const std::string why = "the engine's hook launches no same-input groups (group_hooks=" + hooks->second +
                              ": ggml-cuda.cu not patched for them; see temper engine check)";
      c.note("no group step: " + why);
      return r.not_asked(why);
    }
    r.start(input);
  }
  const engine::ReplayPlan plan = engine::plan_replay(c.file);
  std::unique_ptr<engine::TokenReplayer> token;
  const fs::path profile_path = fs::absolute(report.profile);
  auto text = [&](int n, const engine::GroupSetting& g) {
    r.stop_if_cancelled("the group step; the batch widths measured are journaled: run the same command again to go on");
    if (!token) token = std::make_unique<engine::TokenReplayer>(dev, c.file, plan, 1);
    return token->plan_text(profile_path, n, {}, nullptr, g);
  };
  const GroupReplay replay = [&](int n, const engine::GroupSetting& g) {
    const std::string t = text(n, g);
    const engine::ReplayTokens rt = token->run(t, o.replay_tokens);
    return GroupRun{rt.token_us, rt.group_launches};
  };
  const GroupAgree agree = [&](int n, const engine::GroupSetting& g) {
    const std::vector<float> off = token->outputs(text(n, engine::GroupSetting::off()), n);
    const std::vector<float> on = token->outputs(text(n, g), n);
    return engine::compare_replay_outputs(plan, n, off, on).empty();
  };
  std::vector<int> grouped;  // the widths with runs to group
  for (int n : group_widths)
    if (plans.at(n).group_runs_per_token() > 0) grouped.push_back(n);
  const int per_width = o.replay_rounds * (1 + int(group_grid().size()));
  measure_widths<GroupWidthSamples>(
      r, grouped, "group_width", done, [&](int) { return per_width; },
      [&](int n, const std::function<void()>& replay_done) {
        return measure_groups(n, plans.at(n).group_runs_per_token(), o.replay_rounds, replay, agree, replay_done);
      });
  report.groups = decide_all(done);
  Provenance evidence;
  evidence.session_id = "tune " + report.state_dir.filename().string();
  evidence.device_name = dev.info().name;
  evidence.device_arch = c.arch;
  evidence.engine = "replay";
  evidence.kernel = kernel_label(dev.kernel_source());
  const ProfileDevice on = profile_device(dev.info());
  const std::string when = utc_now_iso8601();
  record(on, evidence, when);
  r.summary = summary() + "; recorded in " + path_text(report.profile);
  json widths_json = json::array();
  for (const GroupWidthSamples& w : done) widths_json.push_back(to_json(w));
  return {{"input", input}, {"widths", widths_json}, {"decided_at", when}, {"device", device_json(on)},
          {"evidence", evidence_json(evidence)}};
}

// ---- replay: one decode token's GEMVs, stock against the profile's configs ----
// (the pipeline step after it measures pipelining)
json replay_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  const std::string input =
      digest({"replay 2", c.probe_id, approved_fingerprint(without_pipelined(without_token(report.installed)), c.arch),
              c.identity.header_hash, std::to_string(o.replay_tokens), std::to_string(o.replay_rounds)});
  if (r.unchanged(input) && r.last()->contains("result")) {
    report.replay = r.last()->at("result");
    return r.kept(replay_summary(*report.replay));
  }
  if (approved_count(report.installed, c.arch) == 0) return r.not_asked("nothing to replay: no approved entry for " + c.arch);
  const engine::ReplayPlan plan = engine::plan_replay(c.file);
  engine::ReplayOptions ro;
  ro.profile = fs::absolute(report.state_dir / "replay-profile.json");
  save_profile(without_pipelined(without_token(report.installed)), ro.profile);
  ro.tokens = o.replay_tokens;
  ro.rounds = o.replay_rounds;
  const engine::ReplayReport rr = engine::run_replay(c.engine_device(), c.file, plan, ro, c.ev.replay);
  if (!rr.differences.empty()) {  // the profile changes what the engine computes: never left installed
    const engine::ReplayDifference& d = rr.differences.front();
    std::string undone = path_text(report.profile) + " held this profile before this run and is left as it is: do not run with it";
    if (c.installed_now) {  // this tune's changes taken back out; what other tunes wrote meanwhile stays
      // Nobody else wrote: the file as it was, byte for byte; else this tune's changes undone in theirs.
      const Profile now = c.others_wrote
                              ? update_profile(report.profile, c.read_back, rebase_profile(c.mine, c.as_found, c.read_back))
                              : update_profile(report.profile, c.read_back, c.as_found, c.as_found_bytes);
      std::error_code ec;
      undone = !fs::exists(report.profile, ec)   ? path_text(report.profile) + " is removed"
               : same_profile(now, c.as_found)    ? "the previous profile is back in " + path_text(report.profile)
                                                  : "this tune's changes are taken back out of " + path_text(report.profile) +
                                                        " (other tunes' entries stay)";
    }
    fail(ErrorKind::Verification, "the replay found " + std::to_string(rr.differences.size()) +
                                      " launches whose output differs with the profile (first: launch " + std::to_string(d.index) +
                                      ", " + d.role + ", max |stock - profile| " + fmt("%g", d.max_abs_difference) + "); " + undone);
  }
  report.replay = engine::replay_report_json(rr);
  // The sweep's entries predict per launch; the group step measured whole tokens: its ratio at
  // one column multiplies in.
  if (const double ratio = group_ratio_at_one_column(report.groups); ratio != 1 && rr.predicted_speedup > 0) {
    (*report.replay)["predicted_speedup"] = rr.predicted_speedup * ratio;
    (*report.replay)["predicted_group_ratio"] = ratio;
    c.note("the replay's prediction multiplies in the group step's measured ×" + fmt("%.3f", ratio) + " (same-input groups at one column)");
  }
  r.summary = replay_summary(*report.replay);
  return {{"input", input}, {"result", *report.replay}};
}

}  // namespace temper::tune::detail
