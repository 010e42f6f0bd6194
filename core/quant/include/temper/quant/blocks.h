#pragma once
// Quant block layouts, byte-identical to ggml's (ggml-common.h). Shared by the CPU reference and
// the device kernels, so this header uses nothing but fixed-width integers: halves are stored as
// their IEEE binary16 bits (uint16_t), converted where they are used.
#include <stdint.h>

namespace temper::quant {

constexpr int QK_K = 256;   // values per K-quant / IQ super-block
constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
constexpr int QK4_NL = 32, QK_MXFP4 = 32, QK_NVFP4 = 64, QK_NVFP4_SUB = 16;
constexpr int K_SCALE_SIZE = 12;  // packed 6-bit scales + mins of q4_K / q5_K

using half_bits = uint16_t;

struct BlockQ4_0 { half_bits d; uint8_t qs[QK4_0 / 2]; };
struct BlockQ4_1 { half_bits d, m; uint8_t qs[QK4_1 / 2]; };
struct BlockQ5_0 { half_bits d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
struct BlockQ5_1 { half_bits d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
struct BlockQ8_0 { half_bits d; int8_t qs[QK8_0]; };
// Activations: d = amax/127 and s = sum of the block's values (GPU style: the float sum).
struct BlockQ8_1 { half_bits d, s; int8_t qs[QK8_1]; };

struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; half_bits d, dmin; };
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; half_bits d; };
struct BlockQ4_K { half_bits d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct BlockQ5_K { half_bits d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; half_bits d; };
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

struct BlockIQ4_NL { half_bits d; uint8_t qs[QK4_NL / 2]; };
struct BlockIQ4_XS { half_bits d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
struct BlockMXFP4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };  // e: E8M0 shared exponent

// Tier 2.
struct BlockIQ2_XXS { half_bits d; uint16_t qs[QK_K / 8]; };
struct BlockIQ2_XS { half_bits d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; };
struct BlockIQ2_S { half_bits d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; };
struct BlockIQ3_XXS { half_bits d; uint8_t qs[3 * QK_K / 8]; };
struct BlockIQ3_S { half_bits d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; };
struct BlockIQ1_S { half_bits d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; };
struct BlockIQ1_M { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; };  // d lives in scales
struct BlockNVFP4 { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; };  // d: UE4M3 per 16 values
constexpr int QK1_0 = 128;
struct BlockQ1_0 { half_bits d; uint8_t qs[QK1_0 / 8]; };  // value j: bit j%8 of qs[j/8] ? +d : -d
constexpr int QK2_0 = 64;
struct BlockQ2_0 { half_bits d; uint8_t qs[QK2_0 / 4]; };  // value j: (crumb j%4 of qs[j/4] - 1) · d

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136 && sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110 && sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56 && sizeof(BlockNVFP4) == 36 && sizeof(BlockQ1_0) == 18);
static_assert(sizeof(BlockQ2_0) == 18);

// Value tables, as initialiser lists so host (constexpr) and device (__constant__) copies come
// from one definition: `constexpr int8_t t[16] = {TEMPER_KVALUES_IQ4NL};`.
#define TEMPER_KVALUES_IQ4NL -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
// E2M1 magnitudes doubled (so they are integers); the block scale is halved to match.
#define TEMPER_KVALUES_MXFP4 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12

}  // namespace temper::quant
