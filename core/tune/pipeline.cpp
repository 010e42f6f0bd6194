// Tune's pipeline step: every one-column launch pipelined at the config it runs, whole token, in the engine.
#include "temper/pipeline.h"

#include <algorithm>
#include <set>

#include "temper/crossover.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/stats.h"

namespace temper::tune {
using nlohmann::json;

PipelineSamples measure_pipeline(int rounds, const PipelineReplay& replay, const std::function<bool()>& identical,
                                 const std::function<void()>& replay_done) {
  PipelineSamples s;
  auto run = [&](bool on) {
    const PipelineRun r = replay(on);
    auto& into = on ? s.on : s.off;
    into.insert(into.end(), r.token_us.begin(), r.token_us.end());
    if (on) s.pipelined_launches = r.pipelined_launches;
    if (replay_done) replay_done();
  };
  for (int round = 0; round < rounds; ++round) {
    run(round % 2 != 0);
    run(round % 2 == 0);
  }
  s.identical = identical();
  return s;
}

PipelineDecision decide_pipeline(const PipelineSamples& s, double min_pipeline_gain) {
  if (s.off.empty() || s.on.empty()) fail(ErrorKind::BadInput, "pipeline step: an arm without samples");
  PipelineDecision d;
  const SampleStats off = summarize(s.off), on = summarize(s.on);
  d.off_us = off.median, d.off_ci_low = off.ci_low, d.off_ci_high = off.ci_high;
  d.on_us = on.median, d.on_ci_low = on.ci_low, d.on_ci_high = on.ci_high;
  d.speedup = off.median / on.median;
  d.speedup_low = off.ci_low / on.ci_high;
  d.speedup_high = off.ci_high / on.ci_low;
  d.pipelined_launches = s.pipelined_launches;
  const std::string gain = format_number("%.1f", min_pipeline_gain * 100) + " %";
  if (s.pipelined_launches == 0) d.why = "the engine pipelined no launch (a hook without pipelined instantiations for these configs)";
  else if (!s.identical) d.why = "an output differs from the unpipelined token's: a launch read what was not written yet";
  else if (d.speedup_low < 1 + min_pipeline_gain)
    d.why = "its CI lower bound (" + gain_text(d.speedup_low) + ") does not beat pipelining off by " + gain;
  else {
    d.approved = true;
    d.why = "outputs identical, and its CI lower bound beats pipelining off by at least " + gain;
  }
  return d;
}

json to_json(const PipelineSamples& s) {
  return {{"off", s.off}, {"on", s.on}, {"pipelined_launches", s.pipelined_launches}, {"identical", s.identical}};
}

PipelineSamples pipeline_samples_from_json(const json& j) {
  PipelineSamples s;
  try {
    s.off = j.at("off").get<std::vector<double>>();
    s.on = j.at("on").get<std::vector<double>>();
    s.pipelined_launches = j.at("pipelined_launches").get<int64_t>();
    s.identical = j.at("identical").get<bool>();
  } catch (const json::exception& e) {
    fail(ErrorKind::BadInput, std::string("tune journal: pipeline samples that do not read: ") + e.what());
  }
  return s;
}

std::vector<ProfileEntry> pipeline_candidates(const LaunchPlan& plan, const Profile& installed, const std::string& arch,
                                              const ProfileDevice& device, const std::string& engine) {
  std::vector<ProfileEntry> out;
  std::set<ShapeKey> seen;
  for (const PlannedLaunch& l : plan.launches) {
    const ShapeKey shape = l.shape();
    if (!seen.insert(shape).second || pipelined_kind(shape.launch) == shape.launch) continue;
    const ProfileEntry* applied = applied_launch(installed, arch, device, shape, 1);
    if (applied && launch_is_unfused(applied->key.launch)) continue;  // the hook runs the pair: not this launch
    ProfileEntry e;
    e.key = ProfileKey(arch, with_launch(shape, pipelined_kind(shape.launch)), 1, device);
    e.default_config = defaults::default_config(engine, arch, shape.type, 1, shape.k);
    e.config = applied ? applied->config : e.default_config;
    e.is_small_k = applied ? applied->is_small_k : false;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<ProfileEntry> pipeline_entries(std::vector<ProfileEntry> candidates, const LaunchPlan& plan, const PipelineDecision& d,
                                           const Provenance& evidence, const std::string& when) {
  for (ProfileEntry& e : candidates) {
    const ShapeKey shape = with_launch(e.key.shape(), unpipelined_kind(e.key.launch));
    Provenance p = evidence;
    p.default_us = d.off_us, p.default_ci_low = d.off_ci_low, p.default_ci_high = d.off_ci_high;
    p.tuned_us = d.on_us, p.tuned_ci_low = d.on_ci_low, p.tuned_ci_high = d.on_ci_high;
    p.speedup = d.speedup, p.speedup_low = d.speedup_low, p.speedup_high = d.speedup_high;
    p.calls_per_token = std::count_if(plan.launches.begin(), plan.launches.end(), [&](const PlannedLaunch& l) { return l.shape() == shape; });
    p.bytes_per_token = 0;
    for (const PlannedLaunch& l : plan.launches)
      if (l.shape() == shape) p.bytes_per_token += l.bytes;
    e.provenance = std::move(p);
    e.approval = d.approved ? Approval::Approved : Approval::Pending;
    e.decided_at = d.approved ? when : std::string();
    e.note = "tune's pipeline step: µs are whole-token replays, pipelining off vs on";
  }
  return candidates;
}

void install_pipelined(Profile& p, const std::vector<ProfileEntry>& candidates, const std::vector<ProfileEntry>& entries) {
  std::erase_if(p.entries, [&](const ProfileEntry& e) {
    return std::any_of(candidates.begin(), candidates.end(), [&](const ProfileEntry& c) { return c.key == e.key; });
  });
  for (const ProfileEntry& e : entries) p.entries.push_back(e);
  std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
}

Profile without_pipelined(Profile p) {
  std::erase_if(p.entries, [](const ProfileEntry& e) { return launch_is_pipelined(e.key.launch); });
  return p;
}

json pipeline_json(const PipelineDecision& d) {
  return {{"off_us", d.off_us}, {"off_ci_low", d.off_ci_low}, {"off_ci_high", d.off_ci_high}, {"on_us", d.on_us},
          {"on_ci_low", d.on_ci_low}, {"on_ci_high", d.on_ci_high}, {"speedup", d.speedup}, {"speedup_low", d.speedup_low},
          {"speedup_high", d.speedup_high}, {"pipelined_launches", d.pipelined_launches}, {"approved", d.approved}, {"why", d.why}};
}

std::string pipeline_text(const PipelineDecision& d) {
  return (d.approved ? "pipelined: " : "not pipelined: ") + std::to_string(d.pipelined_launches) + " launches a token, " +
         gain_text(d.speedup) + " [" + gain_text(d.speedup_low) + ", " + gain_text(d.speedup_high) + "] in the replay; " + d.why;
}

}  // namespace temper::tune
