#pragma once
// Helpers shared by the quant tests.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "temper/quant/fp.h"
#include "temper/quant/reference.h"
#include "temper/types.h"

namespace quant_test {

using temper::GgmlType;

// A parameterised test's name: the type's ggml name.
inline std::string type_label(const ::testing::TestParamInfo<GgmlType>& info) {
  return std::string(temper::type_name(info.param));
}

// A zeroed block of type B.
template <class B>
B zero_block() {
  B b;
  std::memset(&b, 0, sizeof b);
  return b;
}

template <class B>
std::vector<float> dequant(GgmlType type, const B& block, int n = 1) {
  std::vector<float> out(size_t(n) * temper::type_info(type).block_size);
  temper::quant::dequantize_row(type, &block, out.data(), int64_t(out.size()));
  return out;
}

inline temper::quant::half_bits h(float f) { return temper::quant::fp32_to_fp16(f); }

// Random row of `k` values of `type` (blocks as bytes).
inline std::vector<uint8_t> random_row(GgmlType type, int64_t k, uint64_t seed) {
  std::vector<uint8_t> row(*temper::row_bytes(type, uint64_t(k)));
  temper::quant::fill_random(type, row.data(), 1, k, seed);
  return row;
}

// A row length that holds several blocks of every type (multiple of 256).
constexpr int64_t kRow = 1024;

}  // namespace quant_test
