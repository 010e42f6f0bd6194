#pragma once
// ggml's tensor types: ids as stored in GGUF, block sizes and bytes per block, so byte counts
// are exact even for types Temper has no kernel for. Values follow ggml.h / ggml-common.h
// (ggml-org/ggml at ggml-halve-iters' commit, temper/engine_versions.h, 2026-08: ids up to Q2_0 = 42;
// gaps are ids upstream retired). Newer files may hold ids beyond these: readers list such tensors
// and leave them out rather than refuse the file.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace temper {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

struct TypeInfo {
  GgmlType type;
  std::string_view name;  // ggml's lower-case name: "q4_K", "iq4_xs", "f16"
  uint32_t block_size;    // values per block
  uint32_t type_size;     // bytes per block
  bool quantized;
};

// Every type ggml knows, in id order.
std::span<const TypeInfo> all_types();
// nullptr when the id is not a ggml type (retired ids included).
const TypeInfo* find_type(uint32_t id);
const TypeInfo& type_info(GgmlType type);
// Accepts ggml's names case-insensitively ("Q4_K", "q4_k", "q4_K").
std::optional<GgmlType> parse_type(std::string_view name);
inline std::string_view type_name(GgmlType t) { return type_info(t).name; }

// Bytes of one row of `k` values; nullopt when k is not a multiple of the block size or overflows.
std::optional<uint64_t> row_bytes(GgmlType type, uint64_t k);

}  // namespace temper
