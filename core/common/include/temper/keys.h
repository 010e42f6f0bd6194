#pragma once
// The keys every record is named by, declared once: a launch config, a shape (type, n, k) and a
// group (device, shape, ncols). Each has one ordering and one text form; records that carry a key
// derive from it, so `r.type`, `r.shape()` and `r.group()` mean the same everywhere.
#include <compare>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "temper/mmvq_traits.h"
#include "temper/types.h"

namespace temper {

// Kernel launch parameters: the thing Temper tunes.
struct Config {
  int nwarps = 1;
  int rows_per_block = 1;
  auto operator<=>(const Config&) const = default;
};
std::string config_text(Config c, std::string_view times = "x");  // "4x2": nwarps x rows_per_block
std::string config_words(Config c);  // "nwarps 4, rows_per_block 2"

// The kernel grid's axes, from the kernel traits: the only nwarps and rows_per_block any kernel set
// is built with (plans, the GUI's grid and the checks all take them from here).
inline std::vector<int> grid_nwarps() { return std::vector<int>(std::begin(mmvq::kGridNwarps), std::end(mmvq::kGridNwarps)); }
inline std::vector<int> grid_rows_per_block() {
  return std::vector<int>(std::begin(mmvq::kGridRowsPerBlock), std::end(mmvq::kGridRowsPerBlock));
}
std::string values_text(const std::vector<int>& values);  // "{1, 2, 4, 8}"

// Which engine launch a shape is (docs/plan.md): ggml's plain MUL_MAT, its fused gate/up
// (MUL_MAT, MUL_MAT, GLU in one mmvq launch), MUL_MAT_ID over the experts a token uses, and the
// fused expert gate/up. One launch of a fused kind reads both matrices; one of an ids kind reads
// `used` experts' slices. The two "unfused" kinds are a fused launch as the hook can run it
// instead: gate and up as two plain launches of one config on the activations the engine
// quantized once, then the GLU (the engine never makes them; a sweep times them beside the fused
// kind, and a profile entry of such a kind tells the hook to run the pair).
// MulMatGroup (hook v5) is a same-input group: 2..4 consecutive plain MUL_MATs reading one
// activation tensor (a layer's q, k, v) run as one launch after one quantization; a profile entry
// of that kind names its members (GroupMember) and the hook runs the group with its config. Sweeps
// and plans never hold it as a shape.
// The four *Pipelined kinds (hook v7) are the engine's four launches at one column as the hook runs them
// pipelined: its instantiation that lets the next kernel launch as each block starts and asks L2 for
// the block's weight rows before waiting for the previous kernel (the same arithmetic, so the same
// output). A profile entry of such a kind gives the launch its config and pipelines it; sweeps and
// plans never hold them as shapes.
// RmsNormQ8 (hook v8) is not a GEMV: an RMS_NORM·MUL over rows of `k` floats at `ncols` columns that also
// writes the q8_1 activations of the mmvq GEMVs reading it, which then quantize nothing (a layer's q, k, v
// and its gate/up or experts: fewer launches per token, the same bits). Its entry has type f32, n 1 and no
// config ({0, 0}); the profile switches the structure on for that shape.
// GluQ8 (hook v9), likewise not a GEMV: the GLU of an unfused gate/up pair (rows of `k` floats, k the
// pair's n) also writes the q8_1 activations of the down GEMV reading it. Entries as RmsNormQ8's.
enum class Launch : uint8_t {
  MulMat, MulMatGlu, MulMatId, MulMatIdGlu, MulMatGluUnfused, MulMatIdGluUnfused, MulMatGroup,
  MulMatPipelined, MulMatGluPipelined, MulMatIdPipelined, MulMatIdGluPipelined, RmsNormQ8, GluQ8
};
// "mul_mat", "mul_mat_glu", "mul_mat_id", "mul_mat_id_glu", "mul_mat_glu_unfused", "mul_mat_id_glu_unfused",
// "mul_mat_group", "mul_mat_pipelined", "mul_mat_glu_pipelined", "mul_mat_id_pipelined", "mul_mat_id_glu_pipelined",
// "rms_norm_q8_1", "glu_q8_1"
std::string_view launch_name(Launch l);
std::optional<Launch> parse_launch(std::string_view name);
std::string_view launch_names();         // "mul_mat|mul_mat_glu|...", for messages
inline bool launch_is_group(Launch l) { return l == Launch::MulMatGroup; }
// The kinds that are not GEMVs but producers writing the q8_1 activations of the GEMVs after them.
inline bool launch_writes_q8(Launch l) { return l == Launch::RmsNormQ8 || l == Launch::GluQ8; }
inline std::string producer_words(Launch l) { return l == Launch::GluQ8 ? "GLU" : "norm"; }  // "a norm that writes ..."

inline bool launch_is_unfused(Launch l) { return l == Launch::MulMatGluUnfused || l == Launch::MulMatIdGluUnfused; }
inline bool launch_is_pipelined(Launch l) {
  return l == Launch::MulMatPipelined || l == Launch::MulMatGluPipelined || l == Launch::MulMatIdPipelined ||
         l == Launch::MulMatIdGluPipelined;
}
inline bool launch_has_ids(Launch l) {
  return l == Launch::MulMatId || l == Launch::MulMatIdGlu || l == Launch::MulMatIdGluUnfused || l == Launch::MulMatIdPipelined ||
         l == Launch::MulMatIdGluPipelined;
}
// Reads gate and up and writes their GLU (fused by the engine, or as the hook's pair).
inline bool launch_is_fused(Launch l) {
  return l == Launch::MulMatGlu || l == Launch::MulMatIdGlu || launch_is_unfused(l) || l == Launch::MulMatGluPipelined ||
         l == Launch::MulMatIdGluPipelined;
}
inline int launch_matrices(Launch l) { return launch_is_fused(l) ? 2 : 1; }  // weight matrices per launch
// The fused kind and its unfused pair, each way (other kinds map to themselves).
inline Launch fused_kind(Launch l) {
  return l == Launch::MulMatGluUnfused ? Launch::MulMatGlu : l == Launch::MulMatIdGluUnfused ? Launch::MulMatIdGlu : l;
}
inline Launch unfused_kind(Launch l) {
  return l == Launch::MulMatGlu ? Launch::MulMatGluUnfused : l == Launch::MulMatIdGlu ? Launch::MulMatIdGluUnfused : l;
}
// The engine's four launches and their pipelined kinds, each way (other kinds map to themselves).
inline Launch pipelined_kind(Launch l) {
  switch (l) {
    case Launch::MulMat: return Launch::MulMatPipelined;
    case Launch::MulMatGlu: return Launch::MulMatGluPipelined;
    case Launch::MulMatId: return Launch::MulMatIdPipelined;
    case Launch::MulMatIdGlu: return Launch::MulMatIdGluPipelined;
    default: return l;
  }
}
inline Launch unpipelined_kind(Launch l) {
  switch (l) {
    case Launch::MulMatPipelined: return Launch::MulMat;
    case Launch::MulMatGluPipelined: return Launch::MulMatGlu;
    case Launch::MulMatIdPipelined: return Launch::MulMatId;
    case Launch::MulMatIdGluPipelined: return Launch::MulMatIdGlu;
    default: return l;
  }
}

// One GEMV launch shape: dst[n] = W[n×k] · x[k] with W of `type`, as the engine launches it.
// For the ids kinds, W is one of `experts` expert matrices and a launch multiplies `used` of them
// (MulMatId: each with its own activation column, as decode's down projection; MulMatIdGlu: the
// token's one column, gate and up). Plain shapes leave launch, experts and used at their defaults,
// so every record of a plain sweep reads and writes as it always did.
struct ShapeKey {
  GgmlType type = GgmlType::Q4_0;
  int n = 0;  // rows
  int k = 0;  // row length
  Launch launch = Launch::MulMat;
  int experts = 0;  // ids kinds: experts in the tensor; else 0
  int used = 0;     // ids kinds: experts one token uses; else 0
  const ShapeKey& shape() const { return *this; }
  // GEMVs (rows × K dot products of one expert's matrix) one launch makes per activation column.
  int gemvs() const { return launch_matrices(launch) * (launch_has_ids(launch) ? used : 1); }
  auto operator<=>(const ShapeKey&) const = default;  // type id, n, k, launch, experts, used
};
// "q4_K 14336x4096"; other launches add their kind: "q4_K 14336x4096 gate+up",
// "q4_K 768x2048 experts 8/128", "q4_K 768x2048 gate+up experts 8/128".
std::string shape_text(const ShapeKey& s, std::string_view times = "x");
// The same shape as a plain GEMV of one matrix (what Temper's own kernel times).
inline ShapeKey plain_shape(const ShapeKey& s) { return ShapeKey{s.type, s.n, s.k}; }
// The same shape as another launch kind.
inline ShapeKey with_launch(ShapeKey s, Launch l) {
  s.launch = l;
  return s;
}

// One member of a same-input group (Launch::MulMatGroup): a plain MUL_MAT of `type` with `n` rows;
// a group's members are listed in graph order.
struct GroupMember {
  GgmlType type = GgmlType::Q4_0;
  int n = 0;
  auto operator<=>(const GroupMember&) const = default;
};
inline constexpr int kMinGroupMembers = 2, kMaxGroupMembers = 4, kMaxGroupTypes = 2, kMaxGroupNcols = 4;
// "q4_K:4096,q4_K:1024,q6_K:1024": a profile entry's "members".
std::string members_text(const std::vector<GroupMember>& members);
// The inverse: TYPE:N[,TYPE:N...] with N an integer 1..2147483647 (no sign, no leading zero) and
// TYPE a known ggml type (any case). nullopt, with `why` set, when it is not that. How many members
// and which types are a profile's validation, not the syntax's.
std::optional<std::vector<GroupMember>> parse_members(std::string_view text, std::string* why = nullptr);
// The type a group entry is keyed by: its members' one type, or in a mix of two the one other than
// the first member's (so a hook that does not know groups still reads a known type).
GgmlType group_type(const std::vector<GroupMember>& members);
int64_t group_n(const std::vector<GroupMember>& members);  // the sum of the members' N
int group_types(const std::vector<GroupMember>& members);  // how many distinct types

struct DeviceKey {
  int device = 0;  // DeviceInfo::index
  auto operator<=>(const DeviceKey&) const = default;
};

// What a verdict is given per: one shape at one ncols on one device. Ordered device, shape, ncols.
struct GroupKey : DeviceKey, ShapeKey {
  int ncols = 1;
  const GroupKey& group() const { return *this; }
  auto operator<=>(const GroupKey&) const = default;
};
// "q4_K 14336x4096 ncols 1", prefixed by "device 1 " when `with_device`.
std::string group_text(const GroupKey& g, bool with_device = false);

inline GroupKey group_key(int device, const ShapeKey& shape, int ncols) {
  GroupKey g;
  g.device = device;
  static_cast<ShapeKey&>(g) = shape;
  g.ncols = ncols;
  return g;
}

}  // namespace temper
