// Byte counts of one GEMV launch, beside the problem they describe (backend.h).
#include <string>

#include "temper/backend.h"
#include "temper/error.h"
#include "temper/quant/blocks.h"

namespace temper {

double gemv_bytes(GgmlType type, int64_t n, int64_t k, int ncols) {
  const auto row = row_bytes(type, uint64_t(k));
  if (!row) fail(ErrorKind::BadInput, std::string(type_name(type)) + ": row length " + std::to_string(k) +
                                          " is not a whole number of blocks");
  const double weights = double(*row) * double(n);
  const double activations = double(ncols) * double(k / 32) * double(sizeof(quant::BlockQ8_1));
  const double outputs = double(ncols) * double(n) * sizeof(float);
  return weights + activations + outputs;
}

uint64_t gemv_bytes(const GemvProblem& p) {
  return uint64_t(gemv_bytes(p.type, p.n, p.k, p.ncols));  // one byte count for sweep, roofline and bench
}

}  // namespace temper
