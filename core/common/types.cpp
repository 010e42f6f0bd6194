#include "temper/types.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "temper/error.h"

namespace temper {
namespace {

using T = GgmlType;
constexpr std::array kTypes{
    TypeInfo{T::F32, "f32", 1, 4, false},
    TypeInfo{T::F16, "f16", 1, 2, false},
    TypeInfo{T::Q4_0, "q4_0", 32, 18, true},
    TypeInfo{T::Q4_1, "q4_1", 32, 20, true},
    TypeInfo{T::Q5_0, "q5_0", 32, 22, true},
    TypeInfo{T::Q5_1, "q5_1", 32, 24, true},
    TypeInfo{T::Q8_0, "q8_0", 32, 34, true},
    TypeInfo{T::Q8_1, "q8_1", 32, 36, true},
    TypeInfo{T::Q2_K, "q2_K", 256, 84, true},
    TypeInfo{T::Q3_K, "q3_K", 256, 110, true},
    TypeInfo{T::Q4_K, "q4_K", 256, 144, true},
    TypeInfo{T::Q5_K, "q5_K", 256, 176, true},
    TypeInfo{T::Q6_K, "q6_K", 256, 210, true},
    TypeInfo{T::Q8_K, "q8_K", 256, 292, true},
    TypeInfo{T::IQ2_XXS, "iq2_xxs", 256, 66, true},
    TypeInfo{T::IQ2_XS, "iq2_xs", 256, 74, true},
    TypeInfo{T::IQ3_XXS, "iq3_xxs", 256, 98, true},
    TypeInfo{T::IQ1_S, "iq1_s", 256, 50, true},
    TypeInfo{T::IQ4_NL, "iq4_nl", 32, 18, true},
    TypeInfo{T::IQ3_S, "iq3_s", 256, 110, true},
    TypeInfo{T::IQ2_S, "iq2_s", 256, 82, true},
    TypeInfo{T::IQ4_XS, "iq4_xs", 256, 136, true},
    TypeInfo{T::I8, "i8", 1, 1, false},
    TypeInfo{T::I16, "i16", 1, 2, false},
    TypeInfo{T::I32, "i32", 1, 4, false},
    TypeInfo{T::I64, "i64", 1, 8, false},
    TypeInfo{T::F64, "f64", 1, 8, false},
    TypeInfo{T::IQ1_M, "iq1_m", 256, 56, true},
    TypeInfo{T::BF16, "bf16", 1, 2, false},
    TypeInfo{T::TQ1_0, "tq1_0", 256, 54, true},
    TypeInfo{T::TQ2_0, "tq2_0", 256, 66, true},
    TypeInfo{T::MXFP4, "mxfp4", 32, 17, true},
    TypeInfo{T::NVFP4, "nvfp4", 64, 36, true},
    TypeInfo{T::Q1_0, "q1_0", 128, 18, true},
    TypeInfo{T::Q2_0, "q2_0", 64, 18, true},
};

}  // namespace

std::span<const TypeInfo> all_types() { return kTypes; }

const TypeInfo* find_type(uint32_t id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return &t;
  return nullptr;
}

const TypeInfo& type_info(GgmlType type) {
  const TypeInfo* t = find_type(static_cast<uint32_t>(type));
  if (!t) fail(ErrorKind::Internal, "unknown ggml type id " + std::to_string(static_cast<uint32_t>(type)));
  return *t;
}

std::optional<GgmlType> parse_type(std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string r(s);
    std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return r;
  };
  const std::string wanted = lower(name);
  for (const auto& t : kTypes)
    if (lower(t.name) == wanted) return t.type;
  return std::nullopt;
}

std::optional<uint64_t> row_bytes(GgmlType type, uint64_t k) {
  const TypeInfo& t = type_info(type);
  if (k % t.block_size != 0) return std::nullopt;
  const uint64_t blocks = k / t.block_size;
  if (blocks > UINT64_MAX / t.type_size) return std::nullopt;
  return blocks * t.type_size;
}

}  // namespace temper
