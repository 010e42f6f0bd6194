#pragma once
// Tier-2 types (IQ2/IQ3/IQ1 grids, NVFP4), kept apart from the tier-1 code; see iq_tier2.cpp.
#include <cstdint>

#include "temper/quant/reference.h"

namespace temper::quant::detail {

bool has_tier2_reference(GgmlType type);
// nb blocks of a tier-2 type; the caller has checked quant_supported.
void dequantize_tier2(GgmlType type, const void* blocks, float* out, int64_t nb);
// Adds the vec_dot calls of nb blocks to `acc` (y: the matching q8_1 blocks).
void dot_q8_1_tier2(GgmlType type, const void* row, const BlockQ8_1* y, int64_t nb, DotQ8_1& acc);
// Weight offset that the kernel applies through the q8_1 sum s (0 when it has none), per 32 values.
double offset_tier2(GgmlType type, const void* row, int64_t index32);

}  // namespace temper::quant::detail
