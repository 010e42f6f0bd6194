#pragma once
// The decode replay (docs/engine.md): one decode token's GEMVs, in the model's own order, run
// through the hooked engine as one graph — every layer's projections with their real types and
// shapes, dense FFN gate and up as the fused gate/up kernel, MoE experts through MUL_MAT_ID with
// the model's experts per token, the output head — timed per token, stock and with a profile.
#include <cstdint>
#include <string>
#include <vector>

#include "temper/plan.h"
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

namespace temper::engine {

class EngineDevice;

struct ReplayOptions {
  std::filesystem::path profile;  // the profile the hooked engine loads for the tuned arm
  int tokens = 40;                // tokens per round and arm
  int rounds = 5;                 // stock and profile alternate, so drift hits both alike
  uint64_t seed = 1;
};

struct ReplayArm {
  std::vector<double> token_us;   // device time of each token's GEMV graph
  double median = 0, ci_low = 0, ci_high = 0;
  int64_t launches = 0, tuned = 0;  // mmvq launches per token, and how many ran a Temper instantiation
};

struct ReplayReport {
  ReplayPlan plan;
  bool real_bytes = false;          // the weights came from the file (else random valid blocks)
  ReplayArm stock, profiled;
  double speedup = 0, speedup_low = 0, speedup_high = 0;  // stock / profiled median, conservative CI
  // The profile's own prediction for this token: the sweep's (default - tuned) µs of every
  // approved ncols-1 entry this token's launches hit, times its launches per token.
  double predicted_saving_us = 0;
  double predicted_speedup = 0;     // stock median / (stock median - predicted saving)
  int profile_entries_hit = 0;
};

// Uploads the plan's weights (real bytes when the file has them, random valid blocks otherwise),
// then times `rounds` × (stock, profiled) runs of `tokens` tokens each. `progress(done, total)`.
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
