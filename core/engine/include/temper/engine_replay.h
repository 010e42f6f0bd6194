#pragma once
// The decode replay (docs/engine.md): one decode token's GEMVs, in the model's own order, run
// through the hooked engine as one graph — every layer's projections with their real types and
// shapes, dense FFN gate and up as the fused gate/up kernel, MoE experts through MUL_MAT_ID with
// the model's experts per token, the output head — timed per token, stock and with a profile.
#include <cstdint>
#include <string>
#include <vector>

#include "temper/types.h"

namespace temper {
class GgufFile;
struct Profile;
}

namespace temper::engine {

struct ReplayNode {
  // "mm" (MUL_MAT), "glu" (gate + up + SwiGLU, fused by the engine), "mmid" (MUL_MAT_ID of the
  // token's activations), "mmid_glu" (expert gate + up + SwiGLU), "mmid_down" (MUL_MAT_ID of the
  // experts' own outputs)
  std::string op;
  GgmlType type = GgmlType::Q4_0;
  int64_t n = 0, k = 0;
  int64_t experts = 1, used = 1;     // MUL_MAT_ID: experts in the tensor, experts per token
  std::vector<std::string> tensors;  // one, or gate then up
  // GEMVs (rows × K dot products of one weight matrix) this node makes per token.
  int64_t gemvs() const { return int64_t(tensors.size()) * (op.rfind("mmid", 0) == 0 ? used : 1); }
  // Gate and up in one kernel (the engine's fusion); a profile leaves that kernel stock.
  bool fused() const { return op == "glu" || op == "mmid_glu"; }
};

struct ReplayPlan {
  std::vector<ReplayNode> nodes;
  int64_t max_k = 0;               // the activation buffer's length
  int64_t experts_used = 0;
  uint64_t weight_bytes = 0;       // every tensor the plan reads, once
  uint64_t output_bytes = 0;       // the output arena (each node's result in its own slice)
  std::vector<std::string> notes;  // tensors left out, and why
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
  // approved ncols-1 entry this model's unfused GEMVs hit, times its calls per token.
  double predicted_saving_us = 0;
  double predicted_speedup = 0;     // stock median / (stock median - predicted saving)
  int profile_entries_hit = 0;
};

// Uploads the plan's weights (real bytes when the file has them, random valid blocks otherwise),
// then times `rounds` × (stock, profiled) runs of `tokens` tokens each. `progress(done, total)`.
ReplayReport run_replay(EngineDevice& device, const GgufFile& file, const ReplayPlan& plan, const ReplayOptions& options,
                        const std::function<void(int, int)>& progress = {});

// The profile's prediction for one token of `plan` on `arch`: the sweep's (default - tuned) µs of
// every approved ncols-1 entry the plan's unfused GEMVs hit, times its calls per token.
struct ReplayPrediction {
  double saving_us = 0;
  int entries_hit = 0;
};
ReplayPrediction predict_replay(const ReplayPlan& plan, const Profile& profile, const std::string& arch);

}  // namespace temper::engine
