// Byte counts of one GEMV launch, beside the problem they describe (backend.h).
#include <algorithm>
#include <string>

#include "temper/backend.h"
#include "temper/error.h"
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

}  // namespace temper
