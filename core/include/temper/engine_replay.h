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
