// The decode replay's plan: one token's GEMVs in the model's own order.
#include <algorithm>
#include <map>
#include <optional>

#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/mmvq_traits.h"

namespace temper::engine {
namespace {

struct LayerTensor {
  std::string role;
  const TensorInfo* info;
};

// "blk.12.attn_q.weight" → (12, "attn_q")
std::optional<std::pair<int, std::string>> split_name(std::string_view name) {
  if (name.rfind("blk.", 0) != 0 || name.size() < 12 || name.substr(name.size() - 7) != ".weight") return std::nullopt;
  const std::string_view rest = name.substr(4, name.size() - 4 - 7);
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  int layer = 0;
  for (char c : rest.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    layer = layer * 10 + (c - '0');
  }
  return std::make_pair(layer, std::string(rest.substr(dot + 1)));
}

bool same_matrix(const TensorInfo& a, const TensorInfo& b) { return a.type == b.type && a.dims == b.dims; }

}  // namespace

ReplayPlan plan_replay(const GgufFile& file) {
  ReplayPlan plan;
  const std::string arch(file.get_string("general.architecture").value_or(""));
  const std::optional<uint64_t> used = file.get_u64(arch + ".expert_used_count");
  std::map<int, std::vector<LayerTensor>> layers;
  const TensorInfo* head = nullptr;
  const TensorInfo* embd = nullptr;
  for (const TensorInfo& t : file.tensors()) {
    if (t.name == "output.weight") head = &t;
    if (t.name == "token_embd.weight") embd = &t;
    if (auto s = split_name(t.name)) layers[s->first].push_back({s->second, &t});
  }
  if (!head) head = embd;  // tied embeddings: the head is token_embd

  auto accept = [&](const TensorInfo& t) {
    if (t.n_dims < 2) return false;
    if (!mmvq::type_supported(uint32_t(t.type))) {
      plan.notes.push_back(std::string(t.name) + " (" + std::string(type_name(t.type)) + ") left out: not an mmvq GEMV");
      return false;
    }
    return true;
  };
  auto add = [&](std::string op, const TensorInfo& t, std::vector<const TensorInfo*> ts, int64_t experts, int64_t per_token) {
    ReplayNode n;
    n.op = std::move(op);
    n.type = t.type;
    n.k = int64_t(t.dims[0]);
    n.n = int64_t(t.dims[1]);
    n.experts = experts;
    n.used = per_token;
    for (const TensorInfo* x : ts) {
      n.tensors.emplace_back(x->name);
      plan.weight_bytes += x->bytes;
    }
    plan.max_k = std::max(plan.max_k, n.k);
    const int64_t outputs = n.op == "glu" || n.op == "mmid_glu" ? 3 : 1;
    plan.output_bytes += uint64_t(outputs * n.n * per_token * 4 + 256 * outputs);
    plan.nodes.push_back(std::move(n));
  };

  for (auto& layer_tensors : layers) {
    const std::vector<LayerTensor>& tensors = layer_tensors.second;  // a lambda below uses it (clang 14: no binding captures)
    auto find = [&](const std::string& role) -> const TensorInfo* {
      for (const auto& lt : tensors)
        if (lt.role == role) return lt.info;
      return nullptr;
    };
    std::vector<const TensorInfo*> done;
    auto pair = [&](const char* gate_role, const char* up_role, const char* op, bool experts) {
      const TensorInfo* g = find(gate_role);
      const TensorInfo* u = find(up_role);
      if (!g || !u || !same_matrix(*g, *u) || !accept(*g)) return;
      if (experts && !used) fail(ErrorKind::BadInput, std::string(g->name) + ": expert tensors without <arch>.expert_used_count");
      add(op, *g, {g, u}, experts ? int64_t(g->dims[2]) : 1, experts ? int64_t(*used) : 1);
      done.push_back(g);
      done.push_back(u);
    };
    // Attention and everything not FFN first, in file order; then the FFN as the engine runs it.
    for (const auto& lt : tensors) {
      if (lt.role.rfind("ffn_", 0) == 0 || lt.role.find("norm") != std::string::npos || lt.info->n_dims != 2) continue;
      if (accept(*lt.info)) add("mm", *lt.info, {lt.info}, 1, 1);
      done.push_back(lt.info);
    }
    pair("ffn_gate", "ffn_up", "glu", false);
    pair("ffn_gate_shexp", "ffn_up_shexp", "glu", false);
    pair("ffn_gate_exps", "ffn_up_exps", "mmid_glu", true);
    for (const auto& lt : tensors) {
      const TensorInfo& t = *lt.info;
      if (std::find(done.begin(), done.end(), &t) != done.end() || lt.role.find("norm") != std::string::npos) continue;
      if (t.n_dims == 3) {
        if (!accept(t)) continue;
        if (!used) fail(ErrorKind::BadInput, std::string(t.name) + ": expert tensors without <arch>.expert_used_count");
        add(lt.role == "ffn_down_exps" ? "mmid_down" : "mmid", t, {&t}, int64_t(t.dims[2]), int64_t(*used));
      } else if (t.n_dims == 2 && accept(t)) {
        add("mm", t, {&t}, 1, 1);
      }
    }
  }
  if (head && accept(*head)) add("mm", *head, {head}, 1, 1);
  if (plan.nodes.empty()) fail(ErrorKind::BadInput, file.path().string() + ": no tensor that mmvq runs (no quantized matrix)");
  plan.experts_used = used ? int64_t(*used) : 0;
  return plan;
}

}  // namespace temper::engine
