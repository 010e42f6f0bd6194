// Tensor-level dequantization for `temper dequant`: a row at a time, so a multi-gigabyte tensor
// needs only one row of memory.
#include "temper/quant/tensor.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/quant/reference.h"

namespace temper::quant {
namespace {

uint64_t parse_row(std::string_view text, std::string_view whole) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    fail(ErrorKind::BadInput, "--rows " + std::string(whole) + ": expected A:B with row numbers, got '" + std::string(text) + "'");
  return value;
}

// One row of a float type to float32.
void widen_row(GgmlType type, const std::byte* src, float* out, uint64_t k) {
  for (uint64_t i = 0; i < k; ++i) {
    if (type == GgmlType::F32) {
      std::memcpy(out + i, src + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      out[i] = type == GgmlType::F16 ? fp16_to_fp32(h) : std::bit_cast<float>(uint32_t(h) << 16);  // bf16: top half
    }
  }
}

}  // namespace

RowRange parse_row_range(std::string_view text, uint64_t rows) {
  RowRange r;
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    r.begin = parse_row(text, text);
    r.end = r.begin + 1;
  } else {
    const std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
    r.begin = a.empty() ? 0 : parse_row(a, text);
    r.end = b.empty() ? rows : parse_row(b, text);
  }
  if (r.begin >= r.end || r.end > rows)
    fail(ErrorKind::BadInput, "--rows " + std::string(text) + ": expected a non-empty range within 0:" + std::to_string(rows) +
                                  " (the tensor has " + std::to_string(rows) + " rows)");
  return r;
}

bool tensor_type_supported(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || quant_supported(type);
}

void dequantize_tensor(const TensorInfo& t, RowRange range, std::ostream& out) {
  const std::string name(t.name);
  if (!tensor_type_supported(t.type))
    fail(ErrorKind::BadInput, "tensor " + name + ": type " + std::string(type_name(t.type)) +
                                  " is not supported (dequant reads f32, f16, bf16 and the quant types of `temper help dequant`)");
  const uint64_t rows = tensor_rows(t), k = t.dims[0];
  if (range.begin >= range.end || range.end > rows)
    fail(ErrorKind::BadInput, "tensor " + name + ": rows " + std::to_string(range.begin) + ":" + std::to_string(range.end) +
                                  " outside its " + std::to_string(rows) + " rows");
  const auto bytes = row_bytes(t.type, k);
  if (!bytes || *bytes * rows > t.data.size())
    fail(ErrorKind::BadInput, "tensor " + name + ": row length " + std::to_string(k) + " does not fit type " +
                                  std::string(type_name(t.type)) + " or its data");
  std::vector<float> row(k);
  for (uint64_t r = range.begin; r < range.end; ++r) {
    const std::byte* src = t.data.data() + r * *bytes;
    if (quant_supported(t.type)) dequantize_row(t.type, src, row.data(), int64_t(k));
    else widen_row(t.type, src, row.data(), k);
    static_assert(std::endian::native == std::endian::little, "float32 output is written in host order");
    out.write(reinterpret_cast<const char*>(row.data()), std::streamsize(k * sizeof(float)));
    if (!out) fail(ErrorKind::Io, "tensor " + name + ": writing row " + std::to_string(r) + " failed");
  }
}

}  // namespace temper::quant
