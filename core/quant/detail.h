#pragma once
// Shared by core/quant's sources only.
#include <cstdint>
#include <cstring>
#include <string>

#include "temper/quant/blocks.h"
#include "temper/quant/fp.h"
#include "temper/types.h"

namespace temper::quant::detail {

constexpr int8_t kValuesIq4nl[16] = {TEMPER_KVALUES_IQ4NL};
constexpr int8_t kValuesMxfp4[16] = {TEMPER_KVALUES_MXFP4};

// Number of blocks in a row of k values; Error(BadInput) when `type` has no reference (naming it and
// `what`), when k is negative or not a multiple of the block size.
int64_t row_blocks(GgmlType type, int64_t k, const char* what);

// 6-bit scale and min of sub-block j (0..7) of q4_K / q5_K, packed in 12 bytes.
inline void scale_min_k4(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Signed 6-bit scale (-32..31) of sub-block j (0..15) of q3_K.
inline int scale_q3_k(int j, const uint8_t* s) {
  const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// 6-bit scale (-32..31) of sub-block j (0..7) of iq4_xs.
inline int scale_iq4_xs(int j, const BlockIQ4_XS& b) {
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian host assumed, as GGUF files are little-endian
}

struct Q8 {  // a q8_1 block's scale and sum as the kernel reads them
  float d, s;
  const int8_t* q;
  explicit Q8(const BlockQ8_1& b) : d(fp16_to_fp32(b.d)), s(fp16_to_fp32(b.s)), q(b.qs) {}
};

}  // namespace temper::quant::detail
