#pragma once
// Tune's pipeline step (hook v7, issue 29): every one-column launch of the token pipelined — the
// hook's instantiation that lets the next kernel launch as each block starts and asks L2 for the
// block's weight rows before it waits for the previous kernel — at the config it already runs (the
// profile's approved one, else the engine's default). The whole token is replayed with pipelining
// off and on in interleaved rounds; the pipelined entries are approved when the CI lower bound of
// off / on beats 1 + --min-pipeline-gain and every output is bit for bit the off arm's (the
// arithmetic is the same: any difference means a launch read something before it was written).
// The replay holds only the GEMVs and their quantizers, so it sees the prefetch and the quantizer's
// overlap but not the rest of the token's kernels launching early: llama-bench (the bench step)
// measures that (docs/perf-notes.md).
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
  std::vector<double> off, on;
  int64_t pipelined_launches = 0;  // the on arm's, per token
  bool identical = false;          // every launch's output on equals off, bit for bit
};

// Rounds × (off, on; reversed every other round), then whether the outputs are identical.
PipelineSamples measure_pipeline(int rounds, const PipelineReplay& replay, const std::function<bool()>& identical,
                                 const std::function<void()>& replay_done = {});

struct PipelineDecision {
  double off_us = 0, off_ci_low = 0, off_ci_high = 0, on_us = 0, on_ci_low = 0, on_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // off / on, conservative CI
  int64_t pipelined_launches = 0;
  bool approved = false;
  std::string why;  // one line
};
PipelineDecision decide_pipeline(const PipelineSamples& s, double min_pipeline_gain = kDefaultMinPipelineGain);

nlohmann::json to_json(const PipelineSamples& s);
PipelineSamples pipeline_samples_from_json(const nlohmann::json& j);  // Error(BadInput) when it does not read

// The pipelined entries for `plan`'s one-column launches on `device` of `arch`, pending: each at the
// config `installed` applies to that launch, else the engine's default (engine version `engine`).
// A fused gate/up that `installed` runs as the hook's unfused pair gets none (the pair is two plain
// launches of another kernel). Provenance comes from decide's whole-token replays (`evidence`).
std::vector<ProfileEntry> pipeline_candidates(const LaunchPlan& plan, const Profile& installed, const std::string& arch,
                                              const ProfileDevice& device, const std::string& engine);
// The candidates with the decision's evidence: approved when the decision is, whole-token µs off
// (default) and on (tuned), each launch shape's launches per token.
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
