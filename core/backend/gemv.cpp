// Byte counts of one GEMV launch, beside the problem they describe (backend.h).
#include <algorithm>
#include <string>

#include "temper/backend.h"
#include "temper/error.h"
#include "temper/mmvq_group.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/blocks.h"

namespace temper {

namespace {
size_t checked_row_bytes(GgmlType type, int k) {
  const auto row = row_bytes(type, uint64_t(k));
  if (!row) fail(ErrorKind::BadInput, std::string(type_name(type)) + ": row length " + std::to_string(k) +
                                          " is not a whole number of blocks");
  return size_t(*row);
}
}  // namespace

std::string_view glu_name(GluOp g) { return g == GluOp::GeGlu ? "geglu" : "swiglu"; }

GluOp glu_of_architecture(std::string_view architecture) {
  return architecture.rfind("gemma", 0) == 0 ? GluOp::GeGlu : GluOp::SwiGlu;
}

WeightLayout weight_layout(const ShapeKey& s) {
  WeightLayout l;
  l.row_bytes = checked_row_bytes(s.type, s.k);
  l.matrix_bytes = l.row_bytes * size_t(s.n);
  l.experts = launch_has_ids(s.launch) ? size_t(std::max(s.experts, 1)) : 1;
  const size_t operand = (l.matrix_bytes * l.experts + l.row_bytes * mmvq::kWeightPaddingRows + 255) / 256 * 256;
  l.gate_offset = launch_is_fused(s.launch) ? operand : 0;
  l.total = operand * size_t(launch_matrices(s.launch));
  return l;
}

// An ids launch writes one column per expert; down (MulMatId) reads one activation column per
// expert, the fused gate/up the token's one column.
int input_columns(const ShapeKey& s, int ncols) { return s.launch == Launch::MulMatId ? s.used : launch_has_ids(s.launch) ? 1 : ncols; }
int output_columns(const ShapeKey& s, int ncols) { return launch_has_ids(s.launch) ? s.used : ncols; }

double gemv_bytes(const ShapeKey& s, int ncols) {
  const double row = double(checked_row_bytes(s.type, s.k));
  const double weights = row * double(s.n) * double(s.gemvs());
  const double activations = double(input_columns(s, ncols)) * double(s.k / 32) * double(sizeof(quant::BlockQ8_1));
  const double outputs = double(output_columns(s, ncols)) * double(s.n) * sizeof(float);
  return weights + activations + outputs;
}

double gemv_bytes(GgmlType type, int64_t n, int64_t k, int ncols) {
  return gemv_bytes(ShapeKey{type, int(n), int(k)}, ncols);
}

uint64_t gemv_bytes(const GemvProblem& p) {
  return uint64_t(gemv_bytes(p.shape(), p.ncols));  // one byte count for sweep, roofline and bench
}

static_assert(mmvq::kGroupMaxMembers == kMaxGroupMembers && mmvq::kGroupMaxNcols == kMaxGroupNcols,
              "Temper's group kernel takes the groups a profile can hold");

std::string group_text(const GemvGroupProblem& p) {
  std::string s;
  for (const GroupMember& m : p.members)
    s += (s.empty() ? "" : " + ") + std::string(type_name(m.type)) + " " + std::to_string(m.n) + "x" + std::to_string(p.k);
  return s.empty() ? "an empty group" : s;
}

std::vector<GgmlType> group_weight_types(const GemvGroupProblem& p) {
  const int count = int(p.members.size());
  if (count < 2 || count > mmvq::kGroupMaxMembers)
    fail(ErrorKind::BadInput, "group " + group_text(p) + ": " + std::to_string(count) + " members, expected 2.." +
                                  std::to_string(mmvq::kGroupMaxMembers));
  if (p.ncols < 1 || p.ncols > mmvq::kGroupMaxNcols)
    fail(ErrorKind::BadInput, "group " + group_text(p) + ": batch width " + std::to_string(p.ncols) + ", expected 1.." +
                                  std::to_string(mmvq::kGroupMaxNcols));
  std::vector<GgmlType> types;
  for (const GroupMember& m : p.members) {
    if (m.n < 1) fail(ErrorKind::BadInput, "group " + group_text(p) + ": a member has no rows");
    checked_row_bytes(m.type, p.k);
    if (std::find(types.begin(), types.end(), m.type) == types.end()) types.push_back(m.type);
  }
  if (types.size() > 2)
    fail(ErrorKind::BadInput, "group " + group_text(p) + ": members of " + std::to_string(types.size()) +
                                  " weight types, a group launch takes at most 2");
  return types;
}

uint64_t gemv_bytes(const GemvGroupProblem& p) {
  double bytes = double(p.ncols) * double(p.k / 32) * double(sizeof(quant::BlockQ8_1));
  for (const GroupMember& m : p.members)
    bytes += double(checked_row_bytes(m.type, p.k)) * double(m.n) + double(p.ncols) * double(m.n) * sizeof(float);
  return uint64_t(bytes);
}

}  // namespace temper
