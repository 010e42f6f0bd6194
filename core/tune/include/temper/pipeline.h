#pragma once
// Tune's pipeline step (hook v7, issue 29): every one-column launch pipelined — the hook's
// instantiation that lets the next kernel launch as each block starts and asks L2 for the block's
// weight rows before it waits for the previous kernel — at the config it already runs (the profile's
// approved one, else the engine's default). Two measurements, two jobs:
// - the replay (the token's GEMVs and their quantizers, off and on in interleaved rounds) checks that
//   every output is bit for bit the unpipelined one's (the arithmetic is the same: a difference
//   means a launch read something before it was written), and times the GEMVs alone;
// - llama-bench (the profile without and with the pipelined entries, interleaved) decides: the gain
//   is the rest of the token's kernels (rope, attention, norms) launching while a GEMV ends, which
//   the replay cannot see (H200, 2026-11-28: the replay read -1.2 % where llama-bench measured +10 %).
// Approved when the outputs are identical and llama-bench's CI lower bound beats off by
// --min-pipeline-gain; without --llama-bench the step is not asked.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/plan.h"
#include "temper/profile.h"

namespace temper::tune {

inline constexpr double kDefaultMinPipelineGain = 0.005;

// One replay of the token with pipelining off or on: µs per token, pipelined launches per token.
struct PipelineRun {
  std::vector<double> token_us;
  int64_t pipelined_launches = 0;
};
using PipelineReplay = std::function<PipelineRun(bool on)>;

struct PipelineSamples {
  std::vector<double> replay_off, replay_on;  // µs per replayed token (GEMVs and quantizers only)
  int64_t pipelined_launches = 0;             // the on arm's, per token
  bool identical = false;                     // every launch's output on equals off, bit for bit
  std::string test;                           // llama-bench's test ("tg128"); empty: not measured
  std::vector<std::vector<double>> bench_off, bench_on;  // its t/s samples per round, each arm
};

// Rounds × (off, on; reversed every other round) of the replay, then whether the outputs are identical.
PipelineSamples measure_pipeline(int rounds, const PipelineReplay& replay, const std::function<bool()>& identical,
                                 const std::function<void()>& replay_done = {});

struct PipelineDecision {
  double replay_speedup = 1, replay_speedup_low = 1, replay_speedup_high = 1;  // replayed GEMVs, off / on
  int64_t pipelined_launches = 0;
  bool identical = false;
  std::string test;                                                       // llama-bench's test
  double off_ts = 0, on_ts = 0;                                           // its medians
  double off_us = 0, off_ci_low = 0, off_ci_high = 0, on_us = 0, on_ci_low = 0, on_ci_high = 0;  // µs per token
  double speedup = 1, speedup_low = 1, speedup_high = 1;                  // on / off t/s, bootstrap CI
  bool approved = false;
  std::string why;  // one line
};
PipelineDecision decide_pipeline(const PipelineSamples& s, double min_pipeline_gain = kDefaultMinPipelineGain);

nlohmann::json to_json(const PipelineSamples& s);
PipelineSamples pipeline_samples_from_json(const nlohmann::json& j);  // Error(BadInput) when it does not read

// The pipelined entries for `plan`'s one-column launches on `device` of `arch`, pending: each at the
// config `installed` applies to that launch, else the engine's default (engine version `engine`).
// A fused gate/up that `installed` runs as the hook's unfused pair gets none (the pair is two plain
// launches of another kernel).
std::vector<ProfileEntry> pipeline_candidates(const LaunchPlan& plan, const Profile& installed, const std::string& arch,
                                              const ProfileDevice& device, const std::string& engine);
// The candidates with the decision's evidence: approved when the decision is, llama-bench's µs per
// token off (default) and on (tuned), each launch shape's launches per token.
std::vector<ProfileEntry> pipeline_entries(std::vector<ProfileEntry> candidates, const LaunchPlan& plan, const PipelineDecision& d,
                                           const Provenance& evidence, const std::string& when);
// Replaces the pipelined entries of the candidates' keys by `entries` (none when the step did not
// approve: the measurement says pipelining does not pay there).
void install_pipelined(Profile& p, const std::vector<ProfileEntry>& candidates, const std::vector<ProfileEntry>& entries);
// `p` without any pipelined entry (the off arm, and the other steps' view of the profile).
Profile without_pipelined(Profile p);

nlohmann::json pipeline_json(const PipelineDecision& d);
std::string pipeline_text(const PipelineDecision& d);

}  // namespace temper::tune
