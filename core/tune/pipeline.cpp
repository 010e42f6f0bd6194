// Tune's pipeline step: every one-column launch pipelined at the config it runs; the replay checks the
// outputs, llama-bench decides.
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
    auto& into = on ? s.replay_on : s.replay_off;
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
  if (s.replay_off.empty() || s.replay_on.empty()) fail(ErrorKind::BadInput, "pipeline step: a replay arm without samples");
  PipelineDecision d;
  const SampleStats roff = summarize(s.replay_off), ron = summarize(s.replay_on);
  d.replay_speedup = roff.median / ron.median;
  d.replay_speedup_low = roff.ci_low / ron.ci_high;
  d.replay_speedup_high = roff.ci_high / ron.ci_low;
  d.pipelined_launches = s.pipelined_launches;
  d.identical = s.identical;
  d.test = s.test;
  const bool measured = !s.test.empty() && !s.bench_off.empty() && s.bench_off.size() == s.bench_on.size();
  if (measured) {
    std::vector<double> off, on;
    for (const auto& r : s.bench_off) off.insert(off.end(), r.begin(), r.end());
    for (const auto& r : s.bench_on) on.insert(on.end(), r.begin(), r.end());
    const SampleStats a = summarize(off), b = summarize(on);
    d.off_ts = a.median, d.on_ts = b.median;
    d.off_us = 1e6 / a.median, d.off_ci_low = 1e6 / a.ci_high, d.off_ci_high = 1e6 / a.ci_low;
    d.on_us = 1e6 / b.median, d.on_ci_low = 1e6 / b.ci_high, d.on_ci_high = 1e6 / b.ci_low;
    const RatioCi ci = bootstrap_median_ratio(s.bench_off, s.bench_on);
    d.speedup = ci.ratio, d.speedup_low = ci.low, d.speedup_high = ci.high;
  }
  const std::string gain = format_number("%.1f", min_pipeline_gain * 100) + " %";
  if (s.pipelined_launches == 0) d.why = "the engine pipelined no launch (a hook without pipelined instantiations for these configs)";
  else if (!s.identical) d.why = "an output differs from the unpipelined token's: a launch read what was not written yet";
  else if (!measured) d.why = "outputs identical, but not measured by llama-bench (the replay of the GEMVs alone cannot decide)";
  else if (d.speedup_low < 1 + min_pipeline_gain)
    d.why = "llama-bench " + s.test + "'s CI lower bound (" + gain_text(d.speedup_low) + ") does not beat pipelining off by " + gain;
  else {
    d.approved = true;
    d.why = "outputs identical, and llama-bench " + s.test + "'s CI lower bound beats pipelining off by at least " + gain;
  }
  return d;
}

json to_json(const PipelineSamples& s) {
  return {{"replay_off", s.replay_off}, {"replay_on", s.replay_on}, {"pipelined_launches", s.pipelined_launches},
          {"identical", s.identical}, {"test", s.test}, {"bench_off", s.bench_off}, {"bench_on", s.bench_on}};
}

PipelineSamples pipeline_samples_from_json(const json& j) {
  PipelineSamples s;
  try {
    s.replay_off = j.at("replay_off").get<std::vector<double>>();
    s.replay_on = j.at("replay_on").get<std::vector<double>>();
    s.pipelined_launches = j.at("pipelined_launches").get<int64_t>();
    s.identical = j.at("identical").get<bool>();
    s.test = j.at("test").get<std::string>();
    s.bench_off = j.at("bench_off").get<std::vector<std::vector<double>>>();
    s.bench_on = j.at("bench_on").get<std::vector<std::vector<double>>>();
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
    p.calls_per_token = 0, p.bytes_per_token = 0;
    for (const PlannedLaunch& l : plan.launches)
      if (l.shape() == shape) ++p.calls_per_token, p.bytes_per_token += l.bytes;
    e.provenance = std::move(p);
    e.approval = d.approved ? Approval::Approved : Approval::Pending;
    e.decided_at = d.approved ? when : std::string();
    e.note = "tune's pipeline step: µs per token from llama-bench " + d.test + ", the profile without vs with its pipelined entries";
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
  return {{"pipelined_launches", d.pipelined_launches}, {"identical", d.identical},
          {"replay_speedup", d.replay_speedup}, {"replay_speedup_low", d.replay_speedup_low},
          {"replay_speedup_high", d.replay_speedup_high}, {"test", d.test}, {"off_ts", d.off_ts}, {"on_ts", d.on_ts},
          {"off_us", d.off_us}, {"off_ci_low", d.off_ci_low}, {"off_ci_high", d.off_ci_high}, {"on_us", d.on_us},
          {"on_ci_low", d.on_ci_low}, {"on_ci_high", d.on_ci_high}, {"speedup", d.speedup}, {"speedup_low", d.speedup_low},
          {"speedup_high", d.speedup_high}, {"approved", d.approved}, {"why", d.why}};
}

std::string pipeline_text(const PipelineDecision& d) {
  std::string s = (d.approved ? "pipelined: " : "not pipelined: ") + std::to_string(d.pipelined_launches) + " launches a token";
  if (!d.test.empty())
    s += ", llama-bench " + d.test + " " + gain_text(d.speedup) + " [" + gain_text(d.speedup_low) + ", " + gain_text(d.speedup_high) + "]";
  return s + " (the replayed GEMVs alone " + gain_text(d.replay_speedup) + "); " + d.why;
}

}  // namespace temper::tune
