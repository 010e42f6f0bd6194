// Known answers for the occupancy rules, computed by hand from each family's allocation rules
// (docs/occupancy.md). Where a figure was also printed by a compiler (hipcc's
// -Rpass-analysis=kernel-resource-usage "Occupancy [waves/SIMD]"), the comment says so.
#include <gtest/gtest.h>

#include "temper/error.h"
#include "temper/gpus.h"
#include "temper/occupancy.h"

namespace temper {
namespace {

const GpuSpec& gpu(const char* id) {
  const GpuSpec* g = find_gpu(id);
  if (!g) throw std::runtime_error(std::string("no gpu ") + id);
  return *g;
}

KernelResources res(int vgprs, int lds = 0, int sgprs = 0, int wave = 0) {
  KernelResources k;
  k.vgprs = vgprs;
  k.lds_bytes = lds;
  k.sgprs = sgprs;
  k.wave_size = wave;
  return k;
}

void expect(const Occupancy& o, int blocks, double waves_per_simd, OccupancyLimiter limiter) {
  EXPECT_EQ(o.blocks_per_cu, blocks);
  EXPECT_DOUBLE_EQ(o.waves_per_simd, waves_per_simd);
  EXPECT_EQ(limiter_name(o.limiter), limiter_name(limiter));
}

// GCN5 (gfx906, MI50): 256 VGPRs per lane in granules of 4, 10 waves per SIMD, 4 SIMDs, 64 KiB
// LDS per CU, 16 work-group slots.
TEST(OccupancyGcn, RegisterLimited) {
  // 75 VGPRs → 76 → 3 waves per SIMD; 2-wave blocks → 6 blocks per CU (hipcc: Occupancy 3).
  const auto o = compute_occupancy(gpu("mi50"), res(75, 8192, 8), 128);
  expect(o, 6, 3.0, OccupancyLimiter::Registers);
  EXPECT_EQ(o.allocated_registers, 76);
  EXPECT_EQ(o.blocks_by_lds, 8);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.3);
}

TEST(OccupancyGcn, LdsLimited) {
  // 20000 B → 20480 allocated → 3 blocks per CU → 6 waves over 4 SIMDs.
  const auto o = compute_occupancy(gpu("mi50"), res(16, 20000), 128);
  expect(o, 3, 1.5, OccupancyLimiter::Lds);
  EXPECT_EQ(o.allocated_lds, 20480);
}

TEST(OccupancyGcn, WaveLimited) {
  // 16 VGPRs would allow 16 waves, the SIMD holds 10; one-wave blocks need no barrier slot.
  const auto o = compute_occupancy(gpu("mi50"), res(16), 64);
  expect(o, 40, 10.0, OccupancyLimiter::Waves);
  EXPECT_DOUBLE_EQ(o.occupancy, 1.0);
}

TEST(OccupancyGcn, WorkgroupSlotLimited) {
  // 2-wave blocks: 20 would fit by waves, 16 barrier slots per CU → 8 waves per SIMD.
  expect(compute_occupancy(gpu("mi50"), res(16), 128), 16, 8.0, OccupancyLimiter::Blocks);
}

TEST(OccupancyGcn, SgprLimited) {
  // 90 SGPRs → 8 waves per SIMD (the gfx9 SGPR table).
  expect(compute_occupancy(gpu("mi50"), res(16, 0, 90), 64), 32, 8.0, OccupancyLimiter::Sgprs);
}

// CDNA2 (gfx90a, MI210): one 512-register file for VGPRs + AGPRs, granule 8, 8 waves per SIMD.
TEST(OccupancyCdna, UnifiedRegisterFile) {
  // 71 VGPRs → 72 → 7 waves per SIMD (hipcc's register-only figure for such a kernel: 7).
  expect(compute_occupancy(gpu("mi210"), res(71), 128), 14, 7.0, OccupancyLimiter::Registers);
  // The same kernel with 8 KiB of LDS: 8 blocks per CU → 4 waves per SIMD. (LLVM 15's remark
  // still printed 7: it does not count LDS a kernel gets from module-level lowering.)
  expect(compute_occupancy(gpu("mi210"), res(71, 8192), 128), 8, 4.0, OccupancyLimiter::Lds);
  EXPECT_EQ(allocated_vgprs(gpu("mi210"), 70, 33), 72 + 33);
  EXPECT_EQ(allocated_vgprs(gpu("mi210"), 70, 0), 70);
  // 105 → 112 → 4 waves.
  expect(compute_occupancy(gpu("mi210"), res(105), 256), 4, 4.0, OccupancyLimiter::Registers);
  // Up to 512 VGPRs are addressable: 512 → one wave per SIMD.
  expect(compute_occupancy(gpu("mi210"), res(512), 64), 4, 1.0, OccupancyLimiter::Registers);
}

TEST(OccupancyCdna, Cdna1SeparateFiles) {
  // gfx908 (MI100): arch VGPRs and AGPRs each have 256; the larger count decides.
  EXPECT_EQ(allocated_vgprs(gpu("mi100"), 40, 100), 100);
  expect(compute_occupancy(gpu("mi100"), res(100), 64), 8, 2.0, OccupancyLimiter::Registers);
  EXPECT_EQ(compute_occupancy(gpu("mi100"), res(300), 64).limiter, OccupancyLimiter::Unlaunchable);
}

// RDNA (WGP mode, HIP's default for gfx10+): a block's waves share a WGP — two CUs, 4 SIMDs, 128 KiB
// LDS, 32 work-group slots; 16 waves per SIMD; wave32 and wave64 see different files and granules.
TEST(OccupancyRdna, TheUnitIsTheWgp) {
  const OccupancyUnit wgp = occupancy_unit(gpu("rx7900xtx"));
  EXPECT_EQ(wgp.name, "WGP");
  EXPECT_EQ(wgp.cus, 2);
  EXPECT_EQ(wgp.simds, 4);
  EXPECT_EQ(wgp.lds_bytes, 131072);
  EXPECT_EQ(wgp.max_blocks, 32);
  EXPECT_EQ(occupancy_unit(gpu("mi50")).name, "CU");
  EXPECT_EQ(occupancy_unit(gpu("mi50")).simds, 4);
  EXPECT_EQ(occupancy_unit(gpu("h100-sxm")).name, "SM");
}

TEST(OccupancyRdna, Rdna3FullFileWave32AndWave64) {
  // gfx1100: 1536 VGPRs per lane in wave32, granule 24: 97 → 120 → 12 waves per SIMD, 48 per WGP:
  // six 8-wave blocks.
  auto o = compute_occupancy(gpu("rx7900xtx"), res(97, 0, 0, 32), 256);
  expect(o, 6, 12.0, OccupancyLimiter::Registers);
  EXPECT_EQ(o.allocated_registers, 120);
  EXPECT_EQ(compute_occupancy(gpu("rx7900xtx"), res(96, 0, 0, 32), 32).waves_per_simd, 16.0);
  // wave64: 768 VGPRs, granule 12: 97 → 108 → 7 waves.
  o = compute_occupancy(gpu("rx7900xtx"), res(97, 0, 0, 64), 128);
  expect(o, 14, 7.0, OccupancyLimiter::Registers);
  EXPECT_EQ(o.allocated_registers, 108);
  EXPECT_EQ(amd_vgpr_file(gpu("rx7800xt"), 32).total, 1536);
  EXPECT_EQ(amd_vgpr_file(gpu("rx7800xt"), 32).granule, 24);
}

TEST(OccupancyRdna, Rdna2AndNavi33AndPhoenix) {
  // 1024 VGPRs in wave32, granule 16: 100 → 112 → 9 waves; wave64: 512, granule 8: 100 → 104 → 4.
  for (const char* id : {"rx6900xt", "rx7600", "radeon-780m"}) {
    SCOPED_TRACE(id);
    expect(compute_occupancy(gpu(id), res(100, 0, 0, 32), 32), 36, 9.0, OccupancyLimiter::Registers);
    expect(compute_occupancy(gpu(id), res(100, 0, 0, 64), 64), 16, 4.0, OccupancyLimiter::Registers);
    EXPECT_EQ(amd_vgpr_file(gpu(id), 32).granule, 16);
  }
  // SGPRs never limit RDNA.
  EXPECT_EQ(compute_occupancy(gpu("rx6900xt"), res(16, 0, 106, 32), 32).limiter, OccupancyLimiter::Waves);
  // LDS: 40000 B → 40448; the WGP's 128 KiB holds three 8-wave blocks → 6 waves per SIMD. (Counted
  // per CU, 64 KiB would hold one: 4 waves per SIMD, what CU mode would give.)
  expect(compute_occupancy(gpu("rx6900xt"), res(16, 40000, 0, 32), 256), 3, 6.0, OccupancyLimiter::Lds);
  expect(compute_occupancy(gpu("rx7900xtx"), res(16, 40000, 0, 32), 256), 3, 6.0, OccupancyLimiter::Lds);
}

// NVIDIA Hopper (sm_90, H100): 4 sub-partitions × 16384 registers, 16 warps each, 32 blocks per SM,
// 228 KiB shared per SM with 1 KiB reserved per block.
TEST(OccupancyNvidia, RegisterLimited) {
  // 128 regs → 4096 per warp → 4 warps per sub-partition → 16 per SM → 4 blocks of 4 warps.
  auto o = compute_occupancy(gpu("h100-sxm"), res(128), 128);
  expect(o, 4, 4.0, OccupancyLimiter::Registers);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.25);
  // 40 regs → 1280 per warp → 12 warps per sub-partition → 48 per SM → 6 blocks of 8 warps.
  o = compute_occupancy(gpu("h100-sxm"), res(40), 256);
  expect(o, 6, 12.0, OccupancyLimiter::Registers);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.75);
}

TEST(OccupancyNvidia, SharedMemoryLimited) {
  // 48 KiB + 1 KiB reserved = 50176 B per block → 233472 / 50176 = 4 blocks.
  const auto o = compute_occupancy(gpu("h100-sxm"), res(32, 49152), 128);
  expect(o, 4, 4.0, OccupancyLimiter::Lds);
  EXPECT_EQ(o.allocated_lds, 50176);
  // No shared memory still costs the reservation: 228 blocks, never the limiter.
  EXPECT_EQ(compute_occupancy(gpu("h100-sxm"), res(32), 128).blocks_by_lds, 228);
}

TEST(OccupancyNvidia, WarpAndBlockLimited) {
  // 16 regs allow 32 warps per sub-partition; the SM holds 64 warps: 16 blocks of 4 warps.
  expect(compute_occupancy(gpu("h100-sxm"), res(16), 128), 16, 16.0, OccupancyLimiter::Waves);
  // One-warp blocks: 32 resident blocks per SM cap it at half.
  const auto o = compute_occupancy(gpu("h100-sxm"), res(32), 32);
  expect(o, 32, 8.0, OccupancyLimiter::Blocks);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.5);
  // Ada (sm_89): 12 warps per sub-partition, 24 blocks: 64 regs → 8 warps per sub-partition.
  expect(compute_occupancy(gpu("rtx4090"), res(64), 128), 8, 8.0, OccupancyLimiter::Registers);
}

TEST(OccupancyNvidia, Unlaunchable) {
  auto o = compute_occupancy(gpu("h100-sxm"), res(256), 128);
  EXPECT_EQ(o.limiter, OccupancyLimiter::Unlaunchable);
  EXPECT_EQ(o.blocks_per_cu, 0);
  EXPECT_NE(o.why.find("255"), std::string::npos);
  // 255 regs × 1024 threads: 8192 per warp × 32 warps > 65536 per block.
  EXPECT_EQ(compute_occupancy(gpu("h100-sxm"), res(255), 1024).limiter, OccupancyLimiter::Unlaunchable);
  EXPECT_EQ(compute_occupancy(gpu("h100-sxm"), res(32), 2048).limiter, OccupancyLimiter::Unlaunchable);
  EXPECT_EQ(compute_occupancy(gpu("h100-sxm"), res(32, 240000), 128).limiter, OccupancyLimiter::Unlaunchable);
}

TEST(Occupancy, FromRuntimeAttributes) {
  KernelAttributes a;
  a.registers = 40;
  a.shared_bytes = 0;
  const Occupancy o = occupancy_from_attributes(gpu("h100-sxm"), a, Config{8, 1}, 32);
  expect(o, 6, 12.0, OccupancyLimiter::Registers);
  EXPECT_EQ(o.threads_per_block, 256);
}

TEST(Occupancy, RejectsBadInput) {
  EXPECT_THROW(compute_occupancy(gpu("mi50"), res(16, 0, 0, 32), 64), Error);  // GCN has no wave32
  EXPECT_THROW(compute_occupancy(gpu("h100-sxm"), res(16), 0), Error);
  EXPECT_THROW(compute_occupancy(gpu("h100-sxm"), res(-1), 32), Error);
}

}  // namespace
}  // namespace temper
