#pragma once
// Exact CPU reference for ggml's quant formats: dequantization (bit-identical to ggml's
// dequantize_row_*), q8_1 activation quantization (as ggml-cuda's quantize_q8_1 kernel), and the
// two reference dot products every GPU result is checked against. docs/verification.md explains
// the tolerances.
#include <cstdint>
#include <span>
#include <vector>

#include "temper/quant/blocks.h"
#include "temper/types.h"

namespace temper::quant {

// Whether dequantize_row / dot_f64 / dot_q8_1 / fill_random / weight_offset support `type`. Those
// entry points throw Error(BadInput) naming the type when it does not.
bool quant_supported(GgmlType type);
inline bool has_reference(GgmlType type) { return quant_supported(type); }
// Every supported type, tier 1 first (the order the issue lists them).
std::span<const GgmlType> supported_types();

// `k` values of a row (k a multiple of the type's block size; Error(BadInput) otherwise) from
// k / block_size consecutive blocks. Same floats, bit for bit, as ggml's dequantize_row_<type>.
void dequantize_row(GgmlType type, const void* blocks, float* out, int64_t k);

// q8_1 activation blocks. Both styles store d = amax/127 and the quants as ggml does; they differ in
// how q and s are formed:
//   Gpu: q = roundf(x / d), s = Σ x (the original floats, summed in the butterfly order of a 32-lane
//        warp_reduce_sum) — ggml-cuda's quantize_q8_1, which the mmvq kernels consume.
//   Cpu: q = roundf(x · (1/d)), s = d · Σ q — ggml's quantize_row_q8_1_ref.
enum class Q8_1Style { Gpu, Cpu };
void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t k, Q8_1Style style = Q8_1Style::Gpu);

// (a) Σ w·x in float64 over the dequantized weights and the float activations.
double dot_f64(GgmlType type, const void* row, const float* x, int64_t k);
// Σ |w·x|, the magnitude relative errors of (a) are measured against.
double abs_dot_f64(GgmlType type, const void* row, const float* x, int64_t k);

struct DotOptions {
  // ggml-cuda multiplies the half scale pairs of q4_1 / q5_1 (dm × ds) in half precision wherever
  // FAST_FP16_AVAILABLE is defined (every HIP build, NVIDIA from Pascal on except sm_61). Set false
  // for a kernel that multiplies them in float.
  bool half_products = true;
  // Also return every call's float value (DotQ8_1::call_values), e.g. to emulate a kernel's reduction.
  bool keep_calls = false;
};

struct DotQ8_1 {
  double value = 0;          // Σ over the kernel's vec_dot calls, each evaluated in float as the kernel does
  double magnitude = 0;      // Σ over calls of |every float term| of the call: what float rounding scales with
  int64_t calls = 0;         // number of vec_dot calls (terms a kernel sums in some order)
  double half_rounding = 0;  // Σ |error| of the half-precision products (half_products only)
  double truncation = 0;     // Σ bound of the integer divisions' truncation (iq2_*, iq3_xxs), in value units
  // With DotOptions::keep_calls: each call's value, block by block and, within a block, in the order
  // of the kernel's iqs (so call c of block b sits at b·calls_per_block + c).
  std::vector<float> call_values;
  bool keep_calls = false;  // set from DotOptions
};

// What one vec_dot call computes, per type (qi = ints of quants per block, vdr = ints per call; a
// thread calls it for block kbx at int offset iqs; u = q8_1 quants, d8/s8 = that q8_1 block's d and s,
// dp4a sums are exact ints, everything after them is float in this order):
//   q4_0  (qi 4, vdr 2: 16 values)  d4·(sumi·d8 − 4·s8)          sumi = Σ nibble·u (nibbles 0..15)
//   q5_0  (qi 4, vdr 2)             d5·(sumi·d8 − 8·s8)          sumi over 5-bit values 0..31
//   q4_1, q5_1 (qi 4, vdr 2)        sumi·(d·d8) + (m·s8)/2       d·d8 and m·s8 as one half2 product
//                                   (__hmul2, rounded to half) where FAST_FP16_AVAILABLE, see DotOptions
//   q8_0  (qi 8, vdr 2: 8 values)   (d0·d8)·sumi
//   iq4_nl, mxfp4 (qi 4, vdr 2)     (d·d8)·sumi over table values; mxfp4 d = 2^(e−127)·0.5 (doubled table)
//   iq4_xs (qi 32, vdr 4: one 32-value sub-block)  (d·d8)·(sumi·(ls−32))
//   q2_K  (qi 16, vdr 1: 4 bytes = 16 values over 4 q8 blocks)
//         dm.x·Σ_i d8_i·(dot_i·(sc&15)) − dm.y·Σ_i d8_i·(Σu_i·(sc>>4))
//   q3_K  (qi 16, vdr 1)            d·Σ_i d8_i·(dot_i·(scale_i−32)), value = low 2 bits − (high bit ? 0 : 4)
//   q4_K, q5_K (qi 32, vdr 2: 2×4 bytes of one 64-value pair over 2 q8 blocks)
//         dm.x·Σ_i d8_i·(dot_i·sc_i) − dm.y·Σ_i d8_i·(Σu_i·m_i)
//   q6_K  (qi 32, vdr 1: 4 bytes of ql = 8 values over 2 q8 blocks)  d·Σ_i d8_i·(dot_i·sc_i)
//   iq2_xxs (qi 16, vdr 2: one 32-value group)  (d·d8)·(sumi·(2s+1)/8)   integer division, truncating
//   iq2_xs, iq2_s (qi 16, vdr 2)   (d·d8)·((sumi0·ls0 + sumi1·ls1 + (sumi0+sumi1)/2)/4), halves of 16 values
//   iq3_xxs (qi 16, vdr 2)          (d·d8)·((ls·sumi + sumi/2)/2)
//   iq3_s   (qi 16, vdr 2)          (d·d8)·(sumi·(1 + 2·ls))
//           (signed grid values; sumi over the call's 32 values)
//   iq1_s   (qi 8, vdr 1)           d1q·(d8·sumi + s8·delta), grid values + 1 (0..2), delta = −1 ± 1/8
//   iq1_m   (qi 8, vdr 1)           (d·d8)·((sumi0 + sumf0)·sc0 + (sumi1 + sumf1)·sc1), sumf = Σ_g delta_g·Σu_g
//   nvfp4   (qi 8, vdr 4: two 16-value sub-blocks)  Σ_s (ue4m3_s/2 · d8)·sumi_s
//   q1_0    (qi 4, vdr 1: 32 values)  (d·d8)·sumi over ±1
//   q2_0    (qi 2, vdr 1: 32 values)  (d·d8)·sumi over q − 1 ∈ {−1, 0, 1, 2}
// Sums "Σ_i" run over i = 0, 1, ... in float starting from 0. A kernel is free to add its calls in any
// order; tolerance_q8_1 covers that.
//
// (b) the integer dot of weight blocks with q8_1 blocks exactly as llama.cpp's mmvq vec_dot_*_q8_1
// functions compute it: per call (kernel thread step) integer sums and the same float scale/min
// corrections; calls summed in double. `y` holds k/32 blocks.
DotQ8_1 dot_q8_1_detail(GgmlType type, const void* row, const BlockQ8_1* y, int64_t k, DotOptions options = {});
float dot_q8_1(GgmlType type, const void* row, const BlockQ8_1* y, int64_t k, DotOptions options = {});

// Tight bound on |kernel − dot_q8_1| for a kernel that makes the same calls and only sums them in
// another order (and may fuse multiply-adds).
double tolerance_q8_1(const DotQ8_1& reference);
// Loose bound on |kernel pipeline (quantize_q8_1 Gpu style, then mmvq) − dot_f64|: activation
// rounding, half scales and sums, half products and float rounding, each bounded from the data.
double tolerance_f64(GgmlType type, const void* row, const float* x, int64_t k, DotOptions options = {});

// Weight offset per 32 values that the kernel applies through the q8_1 sum s instead of per value:
// w = (w - offset) + offset, Σ w·x ≈ Σ (w - offset)·d·q + offset·s. Nonzero for q4_0 (-8d), q5_0
// (-16d), q4_1 / q5_1 (m), iq1_s / iq1_m (the delta term); 0 for every other type. `index32` counts
// 32-value groups from the start of `row`.
double weight_offset(GgmlType type, const void* row, int64_t index32);

// ---- Random valid blocks (seeded; the same seed gives the same bytes on every host) ----
// Quants are uniformly random bytes; scales are finite, in the ranges real models use (half scales
// of order 2^-10..2^-4 with their type's sign convention, 6-bit packed scales anywhere in range,
// E8M0 exponents 2^-9..2^-1, UE4M3 scales 2^-5..2^1). Runs at several GB/s on one core.
void fill_random_blocks(GgmlType type, void* blocks, int64_t nblocks, uint64_t seed);
// `rows` rows of `k` values: rows · row_bytes(type, k) bytes.
void fill_random(GgmlType type, void* out, int64_t rows, int64_t k, uint64_t seed);
// Activations like a transformer's hidden state: roughly normal, unit scale, a few larger outliers.
void fill_random_activations(float* x, int64_t n, uint64_t seed);

// ---- Quantizers (float -> blocks), for round trips and hand-made test data ----
// Simple, deterministic (no importance weighting, not ggml's search): max-abs / min-max scales per
// block and sub-block, nearest level. dequantize_row(quantize_row(x)) errs by about half a level step.
bool has_quantizer(GgmlType type);
void quantize_row(GgmlType type, const float* x, void* blocks, int64_t k);

}  // namespace temper::quant
