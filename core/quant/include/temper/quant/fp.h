#pragma once
// Small float formats of the quant blocks, decoded bit-exactly as ggml does.
#include <cstdint>

#include "temper/quant/blocks.h"

namespace temper::quant {

// IEEE binary16 <-> binary32. Widening is exact; narrowing rounds to nearest, ties to even, keeps
// subnormals, overflows to infinity and turns NaN into a quiet NaN of the same sign (0x7E00).
float fp16_to_fp32(half_bits h);
half_bits fp32_to_fp16(float f);

// E8M0 (MXFP4's shared exponent): 2^(e-127); 255 is NaN.
float e8m0_to_fp32(uint8_t e);
// ggml's form, 2^(e-128), paired with the doubled E2M1 values of TEMPER_KVALUES_MXFP4. For e = 255 it
// returns 2^127 as ggml's CPU code does (the format calls it NaN; generators never produce it).
float e8m0_to_fp32_half(uint8_t e);

// UE4M3 (NVFP4's per-16 scale): unsigned, 4 exponent bits (bias 7), 3 mantissa bits; bit 7 is ignored.
// 0x00 and 0x7F (the NaN code) decode to 0, as in ggml. Largest finite value: 0x7E = 448.
float ue4m3_to_fp32(uint8_t x);
// ggml's form: half of that, paired with the doubled E2M1 values.
float ue4m3_to_fp32_half(uint8_t x);
// Nearest UE4M3 code to x (ties to even mantissa); x <= 0 or NaN gives 0, x >= 448 gives 0x7E.
uint8_t fp32_to_ue4m3(float x);

}  // namespace temper::quant
