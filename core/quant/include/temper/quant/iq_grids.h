#pragma once
// Lookup tables of the IQ formats, byte-identical to ggml-common.h's (iq2xxs_grid, ..., ksigns_iq2xs).
// Built once from the lattice definitions in core/quant; tests pin their checksums. Kernels upload
// these spans to device memory rather than keeping a second copy.
#include <cstdint>
#include <span>

namespace temper::quant {

std::span<const uint64_t, 256> iq2xxs_grid();   // bytes in {8, 25, 43}
std::span<const uint64_t, 512> iq2xs_grid();
std::span<const uint64_t, 1024> iq2s_grid();
std::span<const uint32_t, 256> iq3xxs_grid();   // bytes in {4, 12, ..., 52, 62}
std::span<const uint32_t, 512> iq3s_grid();     // bytes odd 1..15
std::span<const uint64_t, 2048> iq1s_grid();    // int8 bytes in {-1, 0, 1}
// 7 sign bits plus an 8th that makes the count of set bits even.
std::span<const uint8_t, 128> ksigns_iq2xs();

}  // namespace temper::quant
