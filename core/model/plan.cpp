// The engine's launch plan: one decode token's mmvq launches in the model's order, grouped the way
// ggml's CUDA backend groups them (docs/plan.md).
#include <algorithm>
#include <map>
#include <optional>

#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/mmvq_traits.h"
#include "temper/plan.h"

namespace temper {
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
    if (c < '0' || c > '9' || layer > 100000000) return std::nullopt;
    layer = layer * 10 + (c - '0');
  }
  return std::make_pair(layer, std::string(rest.substr(dot + 1)));
}

bool same_matrix(const TensorInfo& a, const TensorInfo& b) { return a.type == b.type && a.dims == b.dims; }

std::string role_of(const std::string& tensor) {
  if (auto s = split_name(tensor)) return s->second;
  const size_t dot = tensor.rfind(".weight");
  return dot == std::string::npos ? tensor : tensor.substr(0, dot);
}

// The activations a plain MUL_MAT reads, by role: q, k and v read the attention's normalized input;
// unfused gate and up (ncols > 1) the FFN's. Empty: its own input (o reads attention's output,
// down the GLU's).
std::string input_of(const std::string& role) {
  if (role == "attn_q" || role == "attn_k" || role == "attn_v") return "attn";
  if (role == "ffn_gate" || role == "ffn_up") return "ffn";
  if (role == "ffn_gate_shexp" || role == "ffn_up_shexp") return "ffn_shexp";
  return {};
}

// q, k, v first, in that order (the graph's order, whatever the file's), then the rest as filed.
int attention_rank(const std::string& role) {
  if (role == "attn_q") return 0;
  if (role == "attn_k") return 1;
  if (role == "attn_v") return 2;
  return 3;
}

void mark_groups(LaunchPlan& plan) {
  for (size_t i = 1; i < plan.launches.size(); ++i) {
    PlannedLaunch& l = plan.launches[i];
    const PlannedLaunch& prev = plan.launches[i - 1];
    if (l.launch != Launch::MulMat || prev.launch != Launch::MulMat || l.layer != prev.layer || l.layer < 0 || l.k != prev.k ||
        l.tensors.size() != 1 || prev.tensors.size() != 1)
      continue;
    const std::string in = input_of(role_of(l.tensors.front()));
    l.shares_input = !in.empty() && in == input_of(role_of(prev.tensors.front()));
  }
  if (plan.ncols > kGroupMaxNcols) return;  // the hook groups runs at 1..4 columns only
  std::vector<PlanGroup> kinds;
  for (size_t i = 0; i < plan.launches.size();) {
    size_t end = i + 1;
    while (end < plan.launches.size() && plan.launches[end].shares_input) ++end;
    PlanGroup g;
    g.k = plan.launches[i].k;
    std::vector<GgmlType> types;
    for (size_t j = i; j < end; ++j) {
      g.members.push_back({plan.launches[j].type, plan.launches[j].n});
      if (std::find(types.begin(), types.end(), plan.launches[j].type) == types.end()) types.push_back(plan.launches[j].type);
    }
    i = end;
    if (g.members.size() < 2 || g.members.size() > size_t(kGroupMaxMembers) || types.size() > size_t(kGroupMaxTypes)) continue;
    auto same = std::find_if(kinds.begin(), kinds.end(), [&](const PlanGroup& o) { return o.k == g.k && o.members == g.members; });
    if (same == kinds.end()) {
      g.runs_per_token = 1;
      kinds.push_back(std::move(g));
    } else {
      ++same->runs_per_token;
    }
  }
  std::stable_sort(kinds.begin(), kinds.end(), [](const PlanGroup& a, const PlanGroup& b) { return a.runs_per_token > b.runs_per_token; });
  plan.groups = std::move(kinds);
}

}  // namespace

std::string PlanGroup::members_text() const {
  std::string out;
  for (const Member& m : members) out += (out.empty() ? "" : ",") + std::string(type_name(m.type)) + ":" + std::to_string(m.n);
  return out;
}

int LaunchPlan::group_runs_per_token() const {
  int total = 0;
  for (const PlanGroup& g : groups) total += g.runs_per_token;
  return total;
}

std::string PlannedLaunch::role() const {
  std::string out;
  for (const auto& t : tensors) out += (out.empty() ? "" : "+") + role_of(t);
  return out;
}

std::vector<Shape> launch_shapes(const std::vector<PlannedLaunch>& launches) {
  std::map<ShapeKey, Shape> by_key;
  for (const PlannedLaunch& l : launches) {
    Shape& s = by_key[l.shape()];
    static_cast<ShapeKey&>(s) = l.shape();
    s.calls_per_token += 1;
    s.bytes_per_token += l.bytes;
    for (const auto& t : l.tensors) s.tensors.push_back(t);
  }
  std::vector<Shape> out;
  for (auto& [key, s] : by_key) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(), [](const Shape& a, const Shape& b) { return a.bytes_per_token > b.bytes_per_token; });
  return out;
}

std::vector<Shape> sweep_shapes(const GgufFile& file, const std::vector<int>& ncols) {
  std::vector<Shape> out = plan_launches(file, 1).shapes;
  auto add_uncounted = [&](Shape s) {
    if (std::any_of(out.begin(), out.end(), [&](const Shape& o) { return o.shape() == s.shape(); })) return;
    s.calls_per_token = 0;
    s.bytes_per_token = 0;
    out.push_back(std::move(s));
  };
  // Each fused gate/up as the hook can run it instead: the unfused pair, timed beside it.
  for (size_t i = 0, fused = out.size(); i < fused; ++i)
    if (launch_is_fused(out[i].launch)) {
      Shape pair = out[i];
      static_cast<ShapeKey&>(pair) = with_launch(pair, unfused_kind(pair.launch));
      add_uncounted(std::move(pair));
    }
  // Launches only wider batches make; MUL_MAT_ID's there run the multi-token MoE kernel, which
  // has nothing to tune.
  for (int nc : ncols)
    if (nc > 1)
      for (Shape& s : plan_launches(file, nc).shapes)
        if (!launch_has_ids(s.launch)) add_uncounted(std::move(s));
  return out;
}

LaunchPlan plan_launches(const GgufFile& file, int ncols) {
  if (ncols < 1 || ncols > 8) fail(ErrorKind::BadInput, "batch width " + std::to_string(ncols) + ": expected 1..8");
  LaunchPlan plan;
  plan.ncols = ncols;
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

  // Tensors left out, one note per (role, type): "48 x ffn_gate_inp (f32) left out: ...".
  std::map<std::pair<std::string, std::string>, int> not_mmvq;
  auto accept = [&](const TensorInfo& t) {
    if (t.n_dims < 2) return false;
    if (!mmvq::type_supported(uint32_t(t.type))) {
      ++not_mmvq[{role_of(std::string(t.name)), std::string(type_name(t.type))}];
      return false;
    }
    if (t.dims[0] > uint64_t(INT32_MAX) || t.dims[1] > uint64_t(INT32_MAX) || t.dims[2] > uint64_t(INT32_MAX))
      fail(ErrorKind::BadInput, std::string(t.name) + ": dimensions exceed the kernel's 32-bit counts");
    return true;
  };
  auto experts_used = [&](const TensorInfo& t) -> int {
    if (!used || *used == 0)
      fail(ErrorKind::BadInput, file.path().string() + ": " + arch + ".expert_used_count: expected a positive integer (tensor " +
                                    std::string(t.name) + " holds experts)");
    if (*used > t.dims[2])
      fail(ErrorKind::BadInput, file.path().string() + ": " + arch + ".expert_used_count: expected at most " +
                                    std::to_string(t.dims[2]) + " (experts in " + std::string(t.name) + "), got " + std::to_string(*used));
    return int(*used);
  };
  // Experts one launch reads: each of `ncols` tokens picks `used`; at most every expert once.
  auto experts_read = [&](int per_token, int experts) { return std::min<int64_t>(experts, int64_t(per_token) * ncols); };

  auto add = [&](Launch kind, int layer, std::vector<const TensorInfo*> ts, bool broadcast = false) {
    const TensorInfo& t = *ts.front();
    PlannedLaunch l;
    l.type = t.type;
    l.k = int(t.dims[0]);
    l.n = int(t.dims[1]);
    l.launch = kind;
    l.layer = layer;
    l.broadcast_input = broadcast;
    const uint64_t slice = *row_bytes(t.type, t.dims[0]) * t.dims[1];
    if (launch_has_ids(kind)) {
      l.experts = int(t.dims[2]);
      l.used = experts_used(t);
      l.bytes = slice * uint64_t(experts_read(l.used, l.experts)) * ts.size();
    } else {
      l.bytes = slice * ts.size();
    }
    for (const TensorInfo* x : ts) l.tensors.emplace_back(x->name);
    plan.max_k = std::max<int64_t>(plan.max_k, l.k);
    plan.bytes_per_token += l.bytes;
    plan.launches.push_back(std::move(l));
  };

  for (auto& layer_tensors : layers) {
    const int layer = layer_tensors.first;
    const std::vector<LayerTensor>& tensors = layer_tensors.second;
    auto find = [&](const std::string& role) -> const TensorInfo* {
      for (const auto& lt : tensors)
        if (lt.role == role) return lt.info;
      return nullptr;
    };
    std::vector<const TensorInfo*> done;
    // Gate and up of one FFN: ggml fuses them with their GLU into one launch at one token.
    auto pair = [&](const char* gate_role, const char* up_role, bool experts) {
      const TensorInfo* g = find(gate_role);
      const TensorInfo* u = find(up_role);
      if (!g || !u || !same_matrix(*g, *u) || g->n_dims != (experts ? 3u : 2u) || !accept(*g)) return;
      if (ncols == 1) {
        add(experts ? Launch::MulMatIdGlu : Launch::MulMatGlu, layer, {g, u});
      } else {
        add(experts ? Launch::MulMatId : Launch::MulMat, layer, {g}, experts);
        add(experts ? Launch::MulMatId : Launch::MulMat, layer, {u}, experts);
      }
      done.push_back(g);
      done.push_back(u);
    };
    // Attention and everything not FFN first: q, k, v (the graph's order), the rest in file order;
    // then the FFN as the engine runs it.
    std::vector<LayerTensor> attention = tensors;
    std::stable_sort(attention.begin(), attention.end(),
                     [](const LayerTensor& a, const LayerTensor& b) { return attention_rank(a.role) < attention_rank(b.role); });
    for (const auto& lt : attention) {
      if (lt.role.rfind("ffn_", 0) == 0 || lt.role.find("norm") != std::string::npos || lt.info->n_dims != 2) continue;
      if (accept(*lt.info)) add(Launch::MulMat, layer, {lt.info});
      done.push_back(lt.info);
    }
    pair("ffn_gate", "ffn_up", false);
    pair("ffn_gate_shexp", "ffn_up_shexp", false);
    pair("ffn_gate_exps", "ffn_up_exps", true);
    for (const auto& lt : tensors) {
      const TensorInfo& t = *lt.info;
      if (std::find(done.begin(), done.end(), &t) != done.end() || lt.role.find("norm") != std::string::npos) continue;
      if (t.n_dims == 3 && lt.role.find("_exps") != std::string::npos) {
        if (accept(t)) add(Launch::MulMatId, layer, {&t}, lt.role != "ffn_down_exps");
      } else if (t.n_dims == 3) {
        plan.notes.push_back(std::string(t.name) + " left out: a MUL_MAT batched over its third dimension is not modelled");
      } else if (t.n_dims == 2 && accept(t)) {
        add(Launch::MulMat, layer, {&t});
      }
    }
  }
  if (head && accept(*head)) add(Launch::MulMat, -1, {head});
  for (const auto& [role_type, count] : not_mmvq)
    plan.notes.push_back((count > 1 ? std::to_string(count) + " x " : std::string()) + role_type.first + " (" +
                         role_type.second + ") left out: not an mmvq launch");
  if (plan.launches.empty()) fail(ErrorKind::BadInput, file.path().string() + ": no tensor that mmvq runs (no quantized matrix)");
  plan.experts_used = used ? int64_t(*used) : 0;
  if (ncols > 1 && plan.experts_used > 0)
    plan.notes.push_back("at batch width " + std::to_string(ncols) + " an expert launch is counted as reading up to " +
                         std::to_string(ncols) + " x experts used distinct experts");
  plan.shapes = launch_shapes(plan.launches);
  mark_groups(plan);
  return plan;
}

}  // namespace temper
