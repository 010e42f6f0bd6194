#include "temper/occupancy.h"

#include "temper/session.h"

#include <algorithm>
#include <utility>

#include "temper/error.h"

namespace temper {
namespace {

int round_up(int value, int granule) { return (value + granule - 1) / granule * granule; }
int div_up(int a, int b) { return (a + b - 1) / b; }
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Waves per SIMD an SGPR count allows on GCN/CDNA (LLVM getOccupancyWithNumSGPRs, gfx8+: the
// 800-SGPR file in 16-register granules, as the hardware's table rounds it). RDNA: not limiting.
int amd_waves_by_sgprs(int sgprs) {
  if (sgprs <= 80) return 10;
  if (sgprs <= 88) return 9;
  if (sgprs <= 100) return 8;
  return 7;
}

constexpr int kAmdLdsGranule = 512;            // LDS_SIZE is allocated in 128-dword blocks (gfx7+)
constexpr int kAmdMaxSgprs = 112;              // SGPRs per wave incl. VCC, FLAT_SCRATCH, XNACK_MASK (gfx9)
constexpr int kNvRegGranule = 256;             // registers per warp are allocated in 256s
constexpr int kNvMaxRegsPerThread = 255;
constexpr int kNvRegsPerBlock = 65536;
constexpr int kNvReservedSharedPerBlock = 1024;  // the driver's per-block reservation (sm_80+)
constexpr int kNvSharedGranule = 128;
constexpr int kMaxThreadsPerBlock = 1024;

void finish(Occupancy& o, const GpuSpec& gpu, const OccupancyUnit& unit) {
  // The tightest limit wins; on a tie name the hardware cap first (waves, then block slots),
  // since spending fewer registers or less LDS would not raise occupancy then.
  const std::pair<int, OccupancyLimiter> limits[] = {
      {o.blocks_by_waves, OccupancyLimiter::Waves},   {o.blocks_by_slots, OccupancyLimiter::Blocks},
      {o.blocks_by_registers, OccupancyLimiter::Registers}, {o.blocks_by_sgprs, OccupancyLimiter::Sgprs},
      {o.blocks_by_lds, OccupancyLimiter::Lds}};
  o.blocks_per_cu = kUnlimited;
  for (const auto& [blocks, limiter] : limits)
    if (blocks < o.blocks_per_cu) o.blocks_per_cu = blocks, o.limiter = limiter;
  o.max_waves_per_simd = gpu.max_waves_per_simd;
  o.waves_per_simd = static_cast<double>(o.blocks_per_cu) * o.waves_per_block / unit.simds;
  o.occupancy = o.waves_per_simd / gpu.max_waves_per_simd;
}

Occupancy unlaunchable(Occupancy o, const GpuSpec& gpu, std::string why) {
  o.blocks_per_cu = 0;
  o.limiter = OccupancyLimiter::Unlaunchable;
  o.why = std::move(why);
  o.max_waves_per_simd = gpu.max_waves_per_simd;
  return o;
}

}  // namespace

OccupancyUnit occupancy_unit(const GpuSpec& gpu) {
  if (gpu.is_nvidia()) return {"SM", 1, gpu.simds_per_cu, gpu.lds_per_cu, gpu.max_blocks_per_cu};
  if (starts_with(gpu.family, "rdna"))
    return {"WGP", 2, 2 * gpu.simds_per_cu, 2 * gpu.lds_per_cu, 2 * gpu.max_blocks_per_cu};
  return {"CU", 1, gpu.simds_per_cu, gpu.lds_per_cu, gpu.max_blocks_per_cu};
}

VgprFile amd_vgpr_file(const GpuSpec& gpu, int wave_size) {
  const int file = gpu.registers_per_simd / wave_size;  // VGPRs per lane in the whole SIMD
  const std::string& f = gpu.family;
  if (f == "cdna2" || f == "cdna3" || f == "cdna4") return {file, 8, 512};   // unified VGPR+AGPR file
  if (f == "cdna1") return {file / 2, 4, 256};                               // two files, 256 each
  if (f == "gcn5") return {file, 4, 256};
  if (f == "rdna1") return {file, file / 128, 256};                          // 8 (wave32) / 4 (wave64)
  return {file, file / 64, 256};  // RDNA2+: 16/8, or 24/12 with the 1.5x file (gfx1100, gfx1101, gfx1151, gfx12)
}

std::string_view limiter_name(OccupancyLimiter limiter) {
  switch (limiter) {
    case OccupancyLimiter::Waves: return "waves";
    case OccupancyLimiter::Blocks: return "blocks";
    case OccupancyLimiter::Registers: return "registers";
    case OccupancyLimiter::Sgprs: return "sgprs";
    case OccupancyLimiter::Lds: return "lds";
    case OccupancyLimiter::Unlaunchable: return "unlaunchable";
  }
  return "?";
}

int allocated_vgprs(const GpuSpec& gpu, int arch_vgprs, int agprs) {
  if (gpu.family == "cdna2" || gpu.family == "cdna3" || gpu.family == "cdna4")
    return agprs > 0 ? round_up(arch_vgprs, 4) + agprs : arch_vgprs;
  if (gpu.family == "cdna1") return std::max(arch_vgprs, agprs);
  return arch_vgprs;
}

Occupancy compute_occupancy(const GpuSpec& gpu, const KernelResources& k, int threads_per_block) {
  Occupancy o;
  o.threads_per_block = threads_per_block;
  o.wave_size = k.wave_size ? k.wave_size : gpu.wave_sizes.at(0);
  if (std::find(gpu.wave_sizes.begin(), gpu.wave_sizes.end(), o.wave_size) == gpu.wave_sizes.end())
    fail(ErrorKind::BadInput, gpu.id + " (" + gpu.arch + ") does not run wave" + std::to_string(o.wave_size));
  if (threads_per_block <= 0) fail(ErrorKind::BadInput, "threads per block must be positive");
  if (k.vgprs < 0 || k.sgprs < 0 || k.lds_bytes < 0) fail(ErrorKind::BadInput, "negative resource count");
  o.waves_per_block = div_up(threads_per_block, o.wave_size);
  if (threads_per_block > kMaxThreadsPerBlock)
    return unlaunchable(o, gpu, std::to_string(threads_per_block) + " threads per block > 1024");
  if (k.lds_bytes > gpu.lds_per_block)
    return unlaunchable(o, gpu, std::to_string(k.lds_bytes) + " bytes of LDS > " + std::to_string(gpu.lds_per_block) + " per block");

  const OccupancyUnit unit = occupancy_unit(gpu);
  const int wave_slots = gpu.max_waves_per_simd * unit.simds;
  o.blocks_by_waves = wave_slots / o.waves_per_block;
  if (o.blocks_by_waves == 0)
    return unlaunchable(o, gpu, std::to_string(o.waves_per_block) + " waves per block > " + std::to_string(wave_slots) +
                                    " per " + std::string(unit.name));

  if (gpu.is_nvidia()) {
    // CUDA's occupancy rules (cuda_occupancy.h): registers per warp rounded to 256, warps per
    // sub-partition from its quarter of the file; shared memory plus the driver's 1 KiB per block,
    // rounded to 128 B; resident-block and warp-slot caps.
    o.blocks_by_slots = unit.max_blocks;
    o.register_granule = kNvRegGranule / o.wave_size;
    o.allocated_registers = round_up(k.vgprs, o.register_granule);
    if (k.vgprs > kNvMaxRegsPerThread)
      return unlaunchable(o, gpu, std::to_string(k.vgprs) + " registers per thread > 255");
    if (k.vgprs > 0) {
      const int regs_per_warp = round_up(k.vgprs * o.wave_size, kNvRegGranule);
      if (regs_per_warp * round_up(o.waves_per_block, unit.simds) > kNvRegsPerBlock)
        return unlaunchable(o, gpu, "registers per block > 65536");
      const int warps = gpu.registers_per_simd / regs_per_warp * unit.simds;
      o.blocks_by_registers = warps / o.waves_per_block;
      o.register_waves_per_simd = std::min(gpu.max_waves_per_simd, gpu.registers_per_simd / regs_per_warp);
    } else {
      o.register_waves_per_simd = gpu.max_waves_per_simd;
    }
    o.allocated_lds = round_up(k.lds_bytes + kNvReservedSharedPerBlock, kNvSharedGranule);
    o.blocks_by_lds = unit.lds_bytes / o.allocated_lds;
    finish(o, gpu, unit);
    return o;
  }

  // AMD: registers are per SIMD, the waves of a block spread over the unit's SIMDs; LDS and the
  // work-group (barrier) slots are per unit. Single-wave work-groups need no barrier slot.
  const VgprFile rules = amd_vgpr_file(gpu, o.wave_size);
  o.register_granule = rules.granule;
  if (k.vgprs > rules.addressable)
    return unlaunchable(o, gpu, std::to_string(k.vgprs) + " VGPRs > " + std::to_string(rules.addressable) + " addressable");
  if (k.sgprs > kAmdMaxSgprs && !starts_with(gpu.family, "rdna"))
    return unlaunchable(o, gpu, std::to_string(k.sgprs) + " SGPRs > " + std::to_string(kAmdMaxSgprs));
  if (o.waves_per_block > 1) o.blocks_by_slots = unit.max_blocks;
  o.allocated_registers = round_up(std::max(k.vgprs, 1), rules.granule);
  const int waves_by_vgprs = rules.total / o.allocated_registers;  // per SIMD, before the wave cap
  o.blocks_by_registers = waves_by_vgprs * unit.simds / o.waves_per_block;
  o.register_waves_per_simd = std::min(gpu.max_waves_per_simd, waves_by_vgprs);
  if (k.sgprs > 0 && !starts_with(gpu.family, "rdna")) {
    o.blocks_by_sgprs = amd_waves_by_sgprs(k.sgprs) * unit.simds / o.waves_per_block;
    o.register_waves_per_simd = std::min(o.register_waves_per_simd, amd_waves_by_sgprs(k.sgprs));
  }
  if (k.lds_bytes > 0) {
    o.allocated_lds = round_up(k.lds_bytes, kAmdLdsGranule);
    o.blocks_by_lds = unit.lds_bytes / o.allocated_lds;
  }
  if (o.blocks_by_registers == 0)
    return unlaunchable(o, gpu, "one block's waves need more VGPRs than the " + std::string(unit.name) + " has");
  finish(o, gpu, unit);
  return o;
}

const GpuSpec* device_spec(const SessionDevice& d) {
  if (d.spec_id != kNotInDatabase)
    if (const GpuSpec* g = find_gpu(d.spec_id)) return g;
  return match_device(d.info);
}

std::optional<Occupancy> result_occupancy(const Session& s, const Result& r) {
  const SessionDevice* d = find_device(s, r.device);
  if (!d || !r.kernel) return std::nullopt;
  const GpuSpec* g = device_spec(*d);
  if (!g) return std::nullopt;
  return occupancy_from_attributes(*g, *r.kernel, r.config, d->info.warp_size);
}

KernelResources resources_from_attributes(const KernelAttributes& attributes, int wave_size) {
  KernelResources k;
  k.vgprs = attributes.registers;
  k.lds_bytes = attributes.shared_bytes;
  k.scratch_bytes = attributes.local_bytes;
  k.wave_size = wave_size;
  return k;
}

Occupancy occupancy_from_attributes(const GpuSpec& gpu, const KernelAttributes& attributes, Config config, int wave_size) {
  return compute_occupancy(gpu, resources_from_attributes(attributes, wave_size), config.nwarps * wave_size);
}

}  // namespace temper
