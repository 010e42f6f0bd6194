#pragma once
// Per-type constants of llama.cpp's mmvq work decomposition and the rule for which launch configs
// can exist, as constexpr data shared by the device kernels (kernels/) and core (plan, defaults).
// Plain C++ with no includes beyond <stdint.h>, so hipcc and nvcc compile it in device code too.
// Values follow ggml-common.h (QK*, QI* = QK / (4·QR)) and vecdotq.cuh (VDR_*_Q8_1_MMVQ).
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define TEMPER_HD __host__ __device__
#else
#define TEMPER_HD
#endif

namespace temper::mmvq {

// qk: values per weight block; qi: 32-bit ints of quants per block; vdr: ints one thread consumes
// per step. A thread starts at block tid / (qi/vdr) and strides by vdr·nwarps·warp_size/qi blocks.
struct TypeTraits {
  int qk = 0, qi = 0, vdr = 0;
};

// Zeroes for types mmvq has no kernel for. Ids are ggml's (temper::GgmlType).
TEMPER_HD constexpr TypeTraits type_traits(uint32_t type) {
  switch (type) {
    case 2: return {32, 4, 2};     // Q4_0
    case 3: return {32, 4, 2};     // Q4_1
    case 6: return {32, 4, 2};     // Q5_0
    case 7: return {32, 4, 2};     // Q5_1
    case 8: return {32, 8, 2};     // Q8_0
    case 10: return {256, 16, 1};  // Q2_K
    case 11: return {256, 16, 1};  // Q3_K
    case 12: return {256, 32, 2};  // Q4_K
    case 13: return {256, 32, 2};  // Q5_K
    case 14: return {256, 32, 1};  // Q6_K
    case 16: return {256, 16, 2};   // IQ2_XXS
    case 17: return {256, 16, 2};   // IQ2_XS
    case 18: return {256, 16, 2};   // IQ3_XXS
    case 19: return {256, 8, 1};   // IQ1_S
    case 20: return {32, 4, 2};    // IQ4_NL
    case 21: return {256, 16, 2};   // IQ3_S
    case 22: return {256, 16, 2};   // IQ2_S
    case 23: return {256, 32, 4};  // IQ4_XS
    case 29: return {256, 8, 1};   // IQ1_M
    case 39: return {32, 4, 2};    // MXFP4
    case 40: return {64, 8, 4};    // NVFP4
    case 41: return {128, 4, 1};   // Q1_0: one 32-value chunk per call
    case 42: return {64, 2, 1};    // Q2_0: one 32-value chunk per call
    default: return {};
  }
}

TEMPER_HD constexpr bool type_supported(uint32_t type) { return type_traits(type).qk != 0; }

constexpr int kMaxNcols = 8;              // MMVQ_MAX_BATCH_SIZE
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxStaticSharedBytes = 48 * 1024;  // static __shared__ limit on NVIDIA (AMD LDS: 64 KiB)
constexpr int kMaxLdsBytes = 64 * 1024;           // AMD's LDS per block, what hipcc takes
// The grid every kernel set is built over (TEMPER_KERNEL_SET picks types and ncols, never these).
// nwarps 32 (1024 threads) exists only with 32-wide waves; both it and rows 16 only at the ncols
// whose partial sums fit the thread's registers (max_partial_sums).
constexpr int kGridNwarps[] = {1, 2, 4, 8, 16, 32};
constexpr int kGridRowsPerBlock[] = {1, 2, 4, 8, 16};
// The kernel's last block reads all its rows_per_block rows, past the matrix's end as upstream's
// does (ggml reads the padding after the tensor there); weight buffers carry this many spare rows
// so those reads stay inside the allocation. Their results are never written.
constexpr int kWeightPaddingRows = 15;  // largest rows_per_block of the grid - 1

// The engine version whose compiled kernel a launch models. The two compile alike except on
// NVIDIA Hopper and newer, where d99724f launches with programmatic dependent launch and so drops
// __restrict__ (docs/kernels.md). GgmlD99724fPipelined is d99724f's kernel as the hook (v6+) runs a
// *_pipelined profile entry, one column only: on Hopper each block lets the next kernel launch as it
// starts and asks L2 for its weight rows before it waits; elsewhere it is d99724f's kernel.
// Values index the kernel tables (kernels/mmvq.h). The versions themselves (names, commits, hook
// families, which variant models each) are the table of temper/engine_versions.h.
enum class KernelVariant : int { Ggml7180759 = 0, GgmlD99724f = 1, GgmlD99724fPipelined = 2 };
constexpr int kKernelVariants = 3;

// Shared memory of the partial-sum exchange, as upstream declares it: warps 1..nwarps-1 each hold
// ncols × rows_per_block × warp_size floats (one warp's worth even when nwarps is 1).
TEMPER_HD constexpr int partial_sums_bytes(int ncols, int nwarps, int rows_per_block, int warp_size) {
  return (nwarps > 1 ? nwarps - 1 : 1) * ncols * rows_per_block * warp_size * 4;
}

// Partial sums one thread may keep in registers (ncols × rows_per_block), from `ptxas -v` on the
// engine's own units, q4_K and q6_K on sm_90 (docs/kernels.md, "The register rule"): 64, the old
// grid's largest (ncols 8 × rows 8 spills nothing); 32 at rows 16, whose per-row loads double too
// (q4_K spills 148 B at ncols 3, both types ~600 B at ncols 8); 8 at nwarps 32, where 1024 threads
// leave 64 registers a thread (10–12 sums spill for both types).
TEMPER_HD constexpr int max_partial_sums(int nwarps, int rows_per_block) {
  return nwarps >= 32 ? 8 : rows_per_block > 8 ? 32 : 64;
}

// Why a (ncols, nwarps, rows_per_block) cannot be launched at this wave size; 0 when it can.
enum class Invalid : int { None = 0, Ncols, Nwarps, RowsPerBlock, Threads, SharedMemory, Registers };

TEMPER_HD constexpr Invalid launch_invalid(int ncols, int nwarps, int rows_per_block, int warp_size) {
  if (ncols < 1 || ncols > kMaxNcols) return Invalid::Ncols;
  if (nwarps < 1 || (nwarps & (nwarps - 1)) != 0) return Invalid::Nwarps;
  // Lane i of warp 0 writes row i, so a block cannot own more rows than a warp has lanes.
  if (rows_per_block < 1 || rows_per_block > warp_size) return Invalid::RowsPerBlock;
  if (nwarps * warp_size > kMaxThreadsPerBlock) return Invalid::Threads;
  const int bytes = partial_sums_bytes(ncols, nwarps, rows_per_block, warp_size);
  if (bytes > kMaxStaticSharedBytes) return Invalid::SharedMemory;
  // At ncols 1 the engine compiles every config as its fused gate/up kernel too, which holds the
  // gate's partial sums beside up's (upstream's tmp_shared_gate): twice the bytes, within what the
  // compiler takes, 48 KiB on NVIDIA and the LDS at wave 64 (only GCN/CDNA run 64-wide waves).
  if (ncols == 1 && 2 * bytes > (warp_size == 64 ? kMaxLdsBytes : kMaxStaticSharedBytes)) return Invalid::SharedMemory;
  if (ncols * rows_per_block > max_partial_sums(nwarps, rows_per_block)) return Invalid::Registers;
  return Invalid::None;
}

TEMPER_HD constexpr bool launchable(int ncols, int nwarps, int rows_per_block, int warp_size) {
  return launch_invalid(ncols, nwarps, rows_per_block, warp_size) == Invalid::None;
}

// Blocks of one row a whole thread block consumes per K-loop iteration.
TEMPER_HD constexpr int blocks_per_iter(uint32_t type, int nwarps, int warp_size) {
  const TypeTraits t = type_traits(type);
  return t.qi == 0 ? 0 : t.vdr * nwarps * warp_size / t.qi;
}

}  // namespace temper::mmvq
