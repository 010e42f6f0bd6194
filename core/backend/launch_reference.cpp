// The CPU reference of one launch of any kind (verify.h): exact q8_1 dots, the fused GLU in double.
#include <cmath>
#include <limits>
#include <string>

#include "temper/error.h"
#include "temper/quant/reference.h"
#include "temper/verify.h"

namespace temper {
namespace {

struct Glu {
  double value, d_up, d_gate;  // out and its partial derivatives
};

// up · act(gate) as ggml's fused mmvq computes it (SwiGLU: silu; GeGLU: tanh-approximated gelu).
Glu glu(GluOp op, double up, double gate) {
  if (op == GluOp::GeGlu) {
    constexpr double a = 0.044715, c = 0.79788456080286535587989211986876;
    const double u = c * gate * (1 + a * gate * gate), t = std::tanh(u);
    const double act = 0.5 * gate * (1 + t);
    const double d_act = 0.5 * (1 + t) + 0.5 * gate * (1 - t * t) * c * (1 + 3 * a * gate * gate);
    return {up * act, act, up * d_act};
  }
  const double sig = 1 / (1 + std::exp(-gate));
  const double act = gate * sig;
  return {up * act, act, up * sig * (1 + gate * (1 - sig))};
}

}  // namespace

void expected_launch_rows(const GemvProblem& p, const uint8_t* weights, const quant::BlockQ8_1* y, const int32_t* ids,
                          int64_t r0, int64_t r1, Expected* out) {
  const WeightLayout l = weight_layout(p);
  const bool has_ids = launch_has_ids(p.launch), fused = launch_is_fused(p.launch);
  const int columns = output_columns(p, p.ncols);
  const size_t blocks = size_t(p.k / 32);
  for (int col = 0; col < columns; ++col) {
    size_t expert = 0;
    if (has_ids) {
      if (!ids || ids[col] < 0 || ids[col] >= p.experts)
        fail(ErrorKind::BadInput, "expert id " + std::to_string(ids ? ids[col] : -1) + " out of range 0.." +
                                      std::to_string(p.experts - 1));
      expert = size_t(ids[col]);
    }
    // Expert gate/up broadcast the token's one column; down reads one column per expert.
    const quant::BlockQ8_1* yc = y + size_t(has_ids && fused ? 0 : col) * blocks;
    for (int64_t r = r0; r < r1; ++r) {
      const size_t at = expert * l.matrix_bytes + size_t(r) * l.row_bytes;
      const quant::DotQ8_1 up = quant::dot_q8_1_detail(p.type, weights + at, yc, p.k);
      Expected& e = out[size_t(col) * size_t(p.n) + size_t(r)];
      e.exact = up.value;
      e.tolerance = quant::tolerance_q8_1(up);
      if (fused) {
        const quant::DotQ8_1 gate = quant::dot_q8_1_detail(p.type, weights + l.gate_offset + at, yc, p.k);
        const Glu g = glu(p.glu, up.value, gate.value);
        // The dots' tolerances through the GLU, and the device's float act() (expf/tanhf: a few ulp).
        e.tolerance = std::abs(g.d_up) * e.tolerance + std::abs(g.d_gate) * quant::tolerance_q8_1(gate) +
                      1e-5 * std::abs(g.value) + 1e-30;
        e.exact = g.value;
      }
      // The loose float64 check belongs to `temper verify`; here the exact one decides.
      e.f64 = e.exact;
      e.f64_tolerance = std::numeric_limits<double>::infinity();
    }
  }
}

}  // namespace temper
