#pragma once
// The decode replay (docs/engine.md): one decode token's GEMVs, in the model's own order, run
// through the hooked engine as one graph — every layer's projections with their real types and
// shapes, dense FFN gate and up as the fused gate/up kernel, MoE experts through MUL_MAT_ID with
// the model's experts per token, the output head — timed per token, stock and with a profile.
#include <cstdint>
#include <string>
#include <vector>

#include "temper/plan.h"
#include "temper/profile.h"
#include "temper/types.h"

namespace temper {
class GgufFile;
struct Profile;
struct DeviceInfo;
}

namespace temper::engine {

// One token's launches at batch width 1 (the engine's launch plan, temper/plan.h) and the buffers
// the replay needs for them.
struct ReplayPlan {
  LaunchPlan launches;
  uint64_t weight_bytes = 0;  // every tensor the plan reads, once
  uint64_t output_bytes = 0;  // the output arena (each launch's results in their own slices)
};

// Error(BadInput) when the model has no tensor mmvq can run.
ReplayPlan plan_replay(const GgufFile& file);

}  // namespace temper::engine

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

namespace temper::engine {

class EngineDevice;
struct ReplayTokens;

// The probe's group override for a replay (probe_protocol.h "group W R" / "group off").
struct GroupSetting {
  int nwarps = -1, rows = 0;  // nwarps -1: groups off
  static GroupSetting off() { return {}; }
  bool is_off() const { return nwarps < 0; }
  std::string text() const;  // "off" / "W:R" (the CLI's --group)
  bool operator==(const GroupSetting&) const = default;
};
// "off" or "W:R" with W 2|4|8, R 1|2|4; Error(BadInput) naming `what` otherwise.
GroupSetting parse_group_setting(const std::string& text, const std::string& what);

struct ReplayOptions {
  std::filesystem::path profile;  // the profile the hooked engine loads for the tuned arm
  int tokens = 40;                // tokens per round and arm
  int rounds = 5;                 // stock and profile alternate, so drift hits both alike
  uint64_t seed = 1;
  // Also time each launch shape's launches of a token on their own, stock and with the profile
  // (ReplayReport::breakdown): `breakdown_tokens` tokens per shape and arm; 0: no breakdown.
  int breakdown_tokens = 10;
  // Batch width of the replayed token (1..8): every launch reads `ncols` activation columns (ggml
  // fuses gate/up at 1 only; MUL_MAT_ID then runs ncols tokens of `used` experts each).
  int ncols = 1;
  // mmvq/mmq picks forced in both arms (the probe's override, as a profile's path choice would do):
  // the type's launches of that kind at this ncols run `path`; others as ggml (or the profile) picks.
  struct ForcedPath { GgmlType type; Launch launch; MatPath path; };
  std::vector<ForcedPath> forced_paths;
  // Same-input groups (probe protocol 5) in the profiled arm: nullopt, the profile decides (the
  // probe's override 0); else GroupSetting::off() or a forced group config. The stock arm runs with
  // groups off (ggml's own launches) whenever the probe speaks protocol 5.
  std::optional<GroupSetting> group;
  // Pipelined launches (probe protocol 6, hook v6) in the profiled arm: nullopt, the hook decides;
  // true, every tuned one-column launch runs pipelined; false, none does. The stock arm runs none
  // whenever the probe speaks protocol 6.
  std::optional<bool> pipeline;
};

// Where a token's GEMV time goes: one launch shape's launches of a token, run as a graph of their
// own (stock and with the profile), against what their bytes cost at the measured copy bandwidth.
struct ReplayShare : ShapeKey {
  int64_t launches = 0;           // per token
  uint64_t bytes = 0;             // weight bytes per token
  double stock_us = 0, profiled_us = 0;  // medians per token
  double ideal_us = 0;            // bytes at the copy bandwidth
  // Stock: percent of copy bandwidth, and the µs per launch beyond the bytes' time (ramp, tail, launch).
  double percent_of_copy = 0, overhead_us_per_launch = 0;
};

// A launch whose output differs between the arms beyond rounding: a tuned config that is wrong.
struct ReplayDifference {
  int index = 0;                  // in the plan's order
  std::string role;               // "blk.3 ffn_gate+ffn_up"
  double max_abs_difference = 0, scale = 0;  // worst |stock - profiled|, and the stock output's rms
};

struct ReplayArm {
  std::vector<double> token_us;   // device time of each token's GEMV graph
  double median = 0, ci_low = 0, ci_high = 0;
  int64_t launches = 0, tuned = 0;  // mmvq launches per token, and how many ran a Temper instantiation
  // mmvq/mmq decisions per token the hook answered otherwise than ggml (a forced path or the
  // profile's path choice that took effect; 0 with a probe before protocol 4).
  int64_t path_changes = 0;
  int64_t group_launches = 0;  // same-input group launches per token (0 before protocol 5)
  int64_t pipelined_launches = 0;  // pipelined launches per token (0 before protocol 6)
};

struct ReplayReport {
  ReplayPlan plan;
  int ncols = 1;                    // the batch width replayed (ReplayOptions::ncols)
  bool real_bytes = false;          // the weights came from the file (else random valid blocks)
  ReplayArm stock, profiled;
  double speedup = 0, speedup_low = 0, speedup_high = 0;  // stock / profiled median, conservative CI
  // The profile's own prediction for this token: the sweep's (default - tuned) µs of every
  // approved ncols-1 entry this token's launches hit, times its launches per token. At ncols > 1
  // none is made (all three stay 0): the entries' evidence is of one column.
  double predicted_saving_us = 0;
  double predicted_speedup = 0;     // stock median / (stock median - predicted saving)
  int profile_entries_hit = 0;
  double copy_bandwidth_gbs = 0;    // measured on the device (read + write counted)
  std::vector<ReplayShare> breakdown;   // per launch shape, largest stock time first
  // Every launch's output compared between the arms (the last token of each): a value finite in
  // one arm only, or a difference beyond 1e-3 of the stock output's rms, is named here.
  int launches_compared = 0;
  std::vector<ReplayDifference> differences;
};

// The report as `temper engine replay --json` and `temper tune --json` print it (docs/json.md):
// `stock`, `profiled`, `speedup*`, `predicted_*`, `profile_entries_hit`, `real_bytes`,
// `copy_bandwidth_gbs`, `launches_compared`, `breakdown`, `differences`.
nlohmann::json replay_report_json(const ReplayReport& r);

// Where each launch's result lies in the replay's output arena (as the probe lays it out: each
// result in its own slice, 256-byte aligned; the fused kinds' gate and up before it): offset and
// float count of the launch's final output, in plan order.
// At batch width `ncols` every result holds ncols times the floats (gate and up keep their slices).
std::vector<std::pair<size_t, size_t>> replay_output_slices(const ReplayPlan& plan, int ncols = 1);
// Every launch's output of arm `b` against arm `a` (TokenReplayer::outputs at `ncols`): a value
// finite in one arm only, or a difference beyond 1e-3 of `a`'s rms, names the launch.
std::vector<ReplayDifference> compare_replay_outputs(const ReplayPlan& plan, int ncols, const std::vector<float>& a,
                                                    const std::vector<float>& b);

// Uploads the plan's weights (real bytes when the file has them, random valid blocks otherwise),
// then times `rounds` × (stock, profiled) runs of `tokens` tokens each. `progress(done, total)`.
// Error(BadInput) for ncols outside 1..8, a forced path at ncols 1 or of a launch other than
// MUL_MAT / MUL_MAT_ID, or either with a probe older than protocol 4.
// One token's weights, activations (8 columns), expert ids (8 tokens) and output arena on the
// device, uploaded once and replayed as often as asked: at any batch width, with any profile and
// forced paths. run_replay is built on it; tune's crossover replays one of these at every width
// and path instead of uploading the model again for each replay.
class TokenReplayer {
 public:
  TokenReplayer(EngineDevice& device, const GgufFile& file, const ReplayPlan& plan, uint64_t seed);
  ~TokenReplayer();
  TokenReplayer(const TokenReplayer&) = delete;
  TokenReplayer& operator=(const TokenReplayer&) = delete;
  bool real_bytes() const;  // the weights came from the file (else random valid blocks)
  // Error(BadInput) when the probe cannot replay at `ncols` or force these paths (protocol < 4), set a
  // group override (protocol < 5) or a pipeline one (protocol < 6).
  static void check(const EngineDevice& device, int ncols, const std::vector<ReplayOptions::ForcedPath>& forced,
                    const std::optional<GroupSetting>& group = std::nullopt, std::optional<bool> pipeline = std::nullopt);
  // The probe's plan text (Op::Replay): the token's launches, or only those of `only`. A launch that
  // shares its input with the one before is an `mm+` (protocol 5; the hook may group the run).
  std::string plan_text(const std::filesystem::path& profile, int ncols, const std::vector<ReplayOptions::ForcedPath>& forced,
                        const ShapeKey* only = nullptr, const std::optional<GroupSetting>& group = std::nullopt,
                        std::optional<bool> pipeline = std::nullopt) const;
  // `tokens` tokens of `plan_text`'s graph (Error(BadInput) for a width or path the probe cannot run).
  ReplayTokens run(const std::string& plan_text, int tokens);
  // Runs one token of `plan_text` and reads back the output arena at `ncols` columns.
  std::vector<float> outputs(const std::string& plan_text, int ncols);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

ReplayReport run_replay(EngineDevice& device, const GgufFile& file, const ReplayPlan& plan, const ReplayOptions& options,
                        const std::function<void(int, int)>& progress = {});

// The profile's prediction for one token of `plan` on `arch`: the sweep's (default - tuned) µs of
// every approved ncols-1 entry whose launch (kind, type, n, k) the plan makes, times its launches
// per token. A launch without an entry is counted stock.
struct ReplayPrediction {
  double saving_us = 0;
  int entries_hit = 0;
};
ReplayPrediction predict_replay(const ReplayPlan& plan, const Profile& profile, const DeviceInfo& device);

}  // namespace temper::engine
