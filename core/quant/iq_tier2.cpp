// Tier-2 types: not yet supported (tier 1 lands first).
#include "iq_tier2.h"

#include "temper/error.h"

namespace temper::quant::detail {

bool has_tier2_reference(GgmlType) { return false; }
void dequantize_tier2(GgmlType type, const void*, float*, int64_t) {
  fail(ErrorKind::Internal, "dequantize: unhandled type " + std::string(type_name(type)));
}
void dot_q8_1_tier2(GgmlType type, const void*, const BlockQ8_1*, int64_t, DotQ8_1&) {
  fail(ErrorKind::Internal, "dot_q8_1: unhandled type " + std::string(type_name(type)));
}
double offset_tier2(GgmlType, const void*, int64_t) { return 0; }

}  // namespace temper::quant::detail
