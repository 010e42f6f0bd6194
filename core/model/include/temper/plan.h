#pragma once
// The engine's launch plan (docs/plan.md): the mmvq launches ggml makes for one decode token of a
// model at a batch width — plain MUL_MAT, the fused gate/up (MUL_MAT, MUL_MAT, GLU in one launch
// at one token), MUL_MAT_ID over the experts a token uses (fused gate/up at one token, then down),
// the output head — each with the bytes it reads. The sweep, the estimate, the replay, the GUI and
// the exports take per-token counts from here; nothing else sums a token.
#include <cstdint>
#include <string>
#include <vector>

#include "temper/keys.h"
#include "temper/model.h"

namespace temper {

class GgufFile;

// One launch of the token, in the model's order.
struct PlannedLaunch : ShapeKey {
  int layer = -1;                    // the blk index; -1 for the output head
  std::vector<std::string> tensors;  // the weights it reads: one, or gate then up
  uint64_t bytes = 0;                // weight bytes one launch reads (every matrix, `used` experts)
  // MulMatId only: the token's one activation column is broadcast to every expert (an expert
  // projection that is not the down projection); false: one column per expert (down).
  bool broadcast_input = false;
  // A plain MUL_MAT reading the very activations of the launch before it (the same ggml tensor: k
  // and v after q; at ncols > 1 up after gate): the two can run as one same-input group launch.
  bool shares_input = false;
  std::string role() const;          // "attn_q", "ffn_gate+ffn_up", "ffn_down_exps", "output"
};

// One kind of same-input run the hooked engine can launch as one group (hook v5): 2..4 consecutive
// plain MUL_MATs reading the same activations, of one K and at most 2 weight types (q, k, v of a
// layer). Runs with the same members in order are one kind.
struct PlanGroup {
  struct Member {
    GgmlType type{};
    int n = 0;
    bool operator==(const Member&) const = default;
  };
  std::vector<Member> members;  // in graph order
  int k = 0;
  int runs_per_token = 0;
  // "q4_K:4096,q4_K:1024,q6_K:1024" (the profile's `members` field)
  std::string members_text() const;
};

struct LaunchPlan {
  int ncols = 1;
  std::vector<PlannedLaunch> launches;  // one token, in order
  // The distinct launch shapes with their launches and bytes per token, largest bytes first.
  std::vector<Shape> shapes;
  uint64_t bytes_per_token = 0;        // weight bytes of every launch
  int64_t max_k = 0;                   // the longest row (activation length)
  int64_t experts_used = 0;            // <arch>.expert_used_count (0: dense)
  std::vector<std::string> notes;      // tensors left out, and why; what is approximated
  // The same-input runs the hook can group, by kind (members in order), most runs first. Groups are
  // a property of the launches, not extra launches: `launches` and the totals are unchanged.
  std::vector<PlanGroup> groups;
  int group_runs_per_token() const;    // Σ runs_per_token
};

// Same-input group limits of the hook (v5): members per run, distinct weight types, batch widths.
inline constexpr int kGroupMaxMembers = 4;
inline constexpr int kGroupMaxTypes = 2;
inline constexpr int kGroupMaxNcols = 4;

// The plan at batch width `ncols` (1..8). ggml fuses gate/up only at one token, so at ncols > 1 the
// pair are two launches. Error(BadInput) when the model has no tensor mmvq runs, or its metadata
// contradicts its expert tensors.
LaunchPlan plan_launches(const GgufFile& file, int ncols = 1);

// The distinct shapes of `launches`, with calls and bytes per token, largest bytes first.
std::vector<Shape> launch_shapes(const std::vector<PlannedLaunch>& launches);

// What a sweep of the engine's kernel measures for these batch widths: the launch shapes of batch
// width 1 with their launches and bytes per token (what the estimate counts), then with 0 launches
// per token each fused gate/up's unfused kind (the hook's pair, which a profile may choose instead)
// and the shapes the engine launches only at a larger width.
std::vector<Shape> sweep_shapes(const GgufFile& file, const std::vector<int>& ncols);

}  // namespace temper
