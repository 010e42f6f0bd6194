// Decode GEMVs from a GGUF tensor table: which weights are multiplied by the activation vector
// for every generated token, grouped into distinct (type, N, K) shapes.
#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/model.h"
#include "temper/plan.h"

namespace temper {
namespace {

// 2-D weights applied once per token in their layer.
constexpr std::string_view kDenseRoles[] = {
    "attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output",        // attention
    "attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_kv_b",           // deepseek2 (MLA) projections
    "ffn_gate", "ffn_up", "ffn_down",                               // dense FFN
    "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",             // MoE shared expert
    "ffn_gate_inp",                                                 // MoE router
};
// 3-D weights of MoE experts: ne = (K, N, n_expert); experts_used slices are applied per token.
constexpr std::string_view kExpertRoles[] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "ffn_gate_up_exps"};
// 3-D per-head weights of absorbed MLA (deepseek2): ne = (K, N, n_head), one GEMV per head.
constexpr std::string_view kPerHeadRoles[] = {"attn_k_b", "attn_v_b"};
// Legacy MoE layout (early Mixtral GGUFs): one 2-D tensor per expert, `blk.L.ffn_gate.E.weight`.
constexpr std::string_view kLegacyExpertRoles[] = {"ffn_gate", "ffn_up", "ffn_down"};

template <size_t N>
bool one_of(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

struct BlockName {
  uint64_t layer = 0;
  std::string_view role;  // between "blk.L." and ".weight"
};

// "blk.12.attn_q.weight" → {12, "attn_q"}; nullopt for anything else.
std::optional<BlockName> parse_block_name(std::string_view name) {
  constexpr std::string_view prefix = "blk.", suffix = ".weight";
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  std::string_view rest = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  BlockName b;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), b.layer);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.') return std::nullopt;
  b.role = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
  if (b.role.empty()) return std::nullopt;
  return b;
}

// "ffn_gate.3" → "ffn_gate" when it is a legacy expert tensor name.
std::optional<std::string_view> legacy_expert_role(std::string_view role) {
  const size_t dot = role.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == role.size()) return std::nullopt;
  const std::string_view index = role.substr(dot + 1);
  if (!std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const std::string_view base = role.substr(0, dot);
  if (!one_of(base, kLegacyExpertRoles)) return std::nullopt;
  return base;
}

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

class ShapeBuilder {
 public:
  // Adds `calls` GEMVs of one (n × k) slice of tensor t; `names` lists the tensors behind them.
  void add(const TensorInfo& t, uint64_t n, uint64_t k, uint64_t calls, std::vector<std::string_view> names = {}) {
    const uint64_t slice = *row_bytes(t.type, k) * n;  // the reader checked divisibility and size
    constexpr uint64_t kMaxDim = uint64_t(std::numeric_limits<int>::max());
    if (n > kMaxDim || k > kMaxDim)
      fail(ErrorKind::BadInput, "tensor " + std::string(t.name) + ": a GEMV of " + std::to_string(n) + " x " + std::to_string(k) +
                                    " exceeds the kernel's 32-bit row and column counts");
    const ShapeKey key{t.type, static_cast<int>(n), static_cast<int>(k)};
    Shape& s = shapes_[key];
    static_cast<ShapeKey&>(s) = key;
    s.calls_per_token += static_cast<int64_t>(calls);
    s.bytes_per_token += slice * calls;
    if (names.empty()) names.push_back(t.name);
    for (auto name : names) s.tensors.emplace_back(name);
  }

  std::vector<Shape> take() {
    std::vector<Shape> out;
    for (auto& [key, s] : shapes_) out.push_back(std::move(s));
    std::stable_sort(out.begin(), out.end(), [](const Shape& a, const Shape& b) { return a.bytes_per_token > b.bytes_per_token; });
    return out;
  }

 private:
  std::map<ShapeKey, Shape> shapes_;
};

}  // namespace

const std::vector<std::string>& known_architectures() {
  static const std::vector<std::string> archs{"llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe",
                                              "gemma2", "gemma3", "phi3", "deepseek2"};
  return archs;
}

std::string hex64(uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = digits[value & 15];
  return out;
}

double decode_ceiling_tokens_per_s(uint64_t bytes_per_token, double bandwidth_gbs) {
  return bytes_per_token == 0 ? 0.0 : bandwidth_gbs * 1e9 / static_cast<double>(bytes_per_token);
}

Model describe_model(const GgufFile& file) {
  Model m;
  m.path = file.path();
  m.gguf_version = file.version();
  m.file_size = file.file_size();
  m.header_hash = file.header_hash();
  const std::string where = file.path().string();

  if (const auto arch = file.get_string("general.architecture")) m.architecture = *arch;
  const auto& known = known_architectures();
  m.known_architecture = std::find(known.begin(), known.end(), m.architecture) != known.end();
  if (m.architecture.empty()) m.notes.push_back("no general.architecture; generic rule used");
  else if (!m.known_architecture) m.notes.push_back("architecture " + m.architecture + " not known; generic rule used");
  const std::string prefix = m.architecture + ".";

  m.experts = file.get_u64(prefix + "expert_count").value_or(0);
  m.experts_used = file.get_u64(prefix + "expert_used_count").value_or(0);

  // Parameters, quant mix and what the layer structure tells.
  std::map<uint32_t, QuantShare> mix;
  uint64_t max_layer_plus_one = 0;
  std::set<uint64_t> mla_layers;  // layers with absorbed MLA weights: attn_kv_b is not used at decode
  for (const TensorInfo& t : file.tensors()) {
    m.parameters += t.elements();
    QuantShare& q = mix[static_cast<uint32_t>(t.type)];
    q.type = t.type;
    q.bytes += t.bytes;
    q.tensors += 1;
    if (const auto b = parse_block_name(t.name)) {
      max_layer_plus_one = std::max(max_layer_plus_one, b->layer + 1);
      if (b->role == "attn_k_b") mla_layers.insert(b->layer);
    }
  }
  std::map<uint32_t, std::vector<std::string>> unknown_by_id;
  for (const UnknownTensor& t : file.unknown_tensors()) {
    m.unknown_type_tensors.push_back({std::string(t.name), t.type_id});
    unknown_by_id[t.type_id].emplace_back(t.name);
  }
  for (const auto& [id, names] : unknown_by_id) {
    const std::set<std::string> first(names.begin(), names.begin() + std::ptrdiff_t(std::min<size_t>(names.size(), 3)));
    m.notes.push_back(std::to_string(names.size()) + " tensor" + (names.size() == 1 ? "" : "s") + " of ggml type id " +
                      std::to_string(id) + " (not supported by this Temper) left out: " + join(first) +
                      (names.size() > first.size() ? " (+" + std::to_string(names.size() - first.size()) + ")" : ""));
  }
  for (auto& [id, q] : mix) m.quant_mix.push_back(q);
  std::stable_sort(m.quant_mix.begin(), m.quant_mix.end(), [](const QuantShare& a, const QuantShare& b) { return a.bytes > b.bytes; });

  if (const auto layers = file.get_u64(prefix + "block_count")) {
    m.layers = *layers;
  } else {
    m.layers = max_layer_plus_one;
    m.notes.push_back("no " + prefix + "block_count; layers counted from tensor names");
  }

  const bool has_output = file.find_tensor("output.weight") != nullptr;
  ShapeBuilder shapes;
  std::set<std::string> generic_roles, skipped;
  std::map<std::pair<uint64_t, std::string_view>, std::vector<const TensorInfo*>> legacy_experts;
  bool skipped_kv_b = false, has_experts = false;

  auto expert_calls = [&](const TensorInfo& t) -> uint64_t {
    if (m.experts_used == 0)
      fail(ErrorKind::BadInput, where + ": " + prefix + "expert_used_count: expected a positive integer (tensor " +
                                    std::string(t.name) + " holds experts), got " + (file.find(prefix + "expert_used_count") ? "0" : "nothing"));
    return m.experts_used;
  };

  for (const TensorInfo& t : file.tensors()) {
    const std::string_view name = t.name;
    if (name == "output.weight" || (name == "token_embd.weight" && !has_output)) {
      if (t.n_dims != 2) {
        skipped.insert(std::string(name));
        continue;
      }
      shapes.add(t, t.dims[1], t.dims[0], 1);
      if (name == "token_embd.weight") m.notes.push_back("no output.weight: the output head is token_embd.weight (tied)");
      continue;
    }
    const auto b = parse_block_name(name);
    if (!b || t.n_dims == 1 || b->role.find("norm") != std::string_view::npos) {
      if (!b && t.n_dims >= 2 && name != "token_embd.weight") skipped.insert(std::string(name));
      continue;  // norms, biases, 1-D tensors and non-layer tensors never count
    }
    if (one_of(b->role, kExpertRoles)) {
      if (t.n_dims != 3) {
        skipped.insert(std::string(name));
        continue;
      }
      const uint64_t used = expert_calls(t);
      has_experts = true;
      if (used > t.dims[2])
        fail(ErrorKind::BadInput, where + ": " + prefix + "expert_used_count: expected at most " + std::to_string(t.dims[2]) +
                                      " (experts in " + std::string(name) + "), got " + std::to_string(used));
      if (m.experts != 0 && m.experts != t.dims[2])
        m.notes.push_back(std::string(name) + " holds " + std::to_string(t.dims[2]) + " experts, metadata says " + std::to_string(m.experts));
      shapes.add(t, t.dims[1], t.dims[0], used);
    } else if (one_of(b->role, kPerHeadRoles) && t.n_dims == 3) {
      shapes.add(t, t.dims[1], t.dims[0], t.dims[2]);
    } else if (const auto legacy = legacy_expert_role(b->role); legacy && t.n_dims == 2) {
      legacy_experts[{b->layer, *legacy}].push_back(&t);
    } else if (b->role == "attn_kv_b" && mla_layers.count(b->layer)) {
      skipped_kv_b = true;
    } else if (t.n_dims == 2) {
      if (!one_of(b->role, kDenseRoles)) generic_roles.insert(std::string(b->role));
      shapes.add(t, t.dims[1], t.dims[0], 1);
    } else {
      skipped.insert(std::string(name));
    }
  }

  // Legacy per-expert tensors: each layer applies experts_used of its experts per role.
  for (const auto& [key, group] : legacy_experts) {
    const TensorInfo& first = *group.front();
    const uint64_t used = std::min<uint64_t>(expert_calls(first), group.size());
    const bool uniform = std::all_of(group.begin(), group.end(), [&](const TensorInfo* t) {
      return t->type == first.type && t->dims == first.dims;
    });
    if (!uniform)
      m.notes.push_back("experts of blk." + std::to_string(key.first) + "." + std::string(key.second) +
                        " differ in type or shape; all counted as " + std::string(first.name));
    std::vector<std::string_view> names;
    for (const TensorInfo* t : group) names.push_back(t->name);
    shapes.add(first, first.dims[1], first.dims[0], used, names);
  }

  m.shapes = shapes.take();
  try {
    m.launches = sweep_shapes(file, {1, 2, 4, 8});
  } catch (const Error&) {
    // Nothing mmvq runs (f16 / f32 only): no launches, and the shapes say why.
  }
  for (const auto& s : m.shapes) m.bytes_per_token += s.bytes_per_token;

  if (has_experts || !legacy_experts.empty())
    m.notes.push_back("MoE: " + std::to_string(m.experts) + " experts, " + std::to_string(m.experts_used) +
                      " used per token; expert weights counted as " + std::to_string(m.experts_used) + " slices per layer");
  if (skipped_kv_b) m.notes.push_back("attn_kv_b not counted: absorbed MLA (attn_k_b, attn_v_b) replaces it at decode");
  if (!generic_roles.empty()) m.notes.push_back("counted by the generic rule (role not known): " + join(generic_roles));
  if (!skipped.empty()) m.notes.push_back("not counted (not a decode GEMV by its name or dims): " + join(skipped));
  return m;
}

Model open_model(const std::filesystem::path& path) { return describe_model(GgufFile::open(path)); }

}  // namespace temper
