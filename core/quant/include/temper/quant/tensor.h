#pragma once
// Whole tensors of a GGUF model, dequantized to float32 (`temper dequant`).
#include <cstdint>
#include <ostream>
#include <string_view>

#include "temper/gguf.h"

namespace temper::quant {

// Rows [begin, end) of a tensor; a tensor's rows are its elements / ne[0] (all of ne[1..3]).
struct RowRange {
  uint64_t begin = 0, end = 0;
};

inline uint64_t tensor_rows(const TensorInfo& t) { return t.dims[0] ? t.elements() / t.dims[0] : 0; }

// "A:B" (half-open, like Python), "A:" (to the end), ":B" (from 0) or "A" (one row), checked against
// `rows`; Error(BadInput) naming the text when malformed, empty or out of range.
RowRange parse_row_range(std::string_view text, uint64_t rows);

// Whether dequantize_tensor reads `type`: every quant_supported type plus f32, f16 and bf16.
bool tensor_type_supported(GgmlType type);

// Writes rows [range.begin, range.end) of `t` to `out` as little-endian float32, row by row.
// Error(BadInput) naming the tensor and its type when the type is not supported, or when the range
// exceeds the tensor; Error(Io) when the stream fails.
void dequantize_tensor(const TensorInfo& t, RowRange range, std::ostream& out);

}  // namespace temper::quant
