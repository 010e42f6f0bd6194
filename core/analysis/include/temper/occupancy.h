#pragma once
// Occupancy: how many waves (warps) of a kernel fit on one SIMD (SM sub-partition) at once, and
// which resource stops more from fitting. Each family's allocation rules are documented, with
// their sources, in docs/occupancy.md.
#include <climits>
#include <optional>
#include <string>
#include <string_view>

#include "temper/backend.h"
#include "temper/gpus.h"

namespace temper {

// What one compiled kernel uses. AMD: from the code object's metadata; NVIDIA: from the runtime's
// function attributes (registers per thread, static shared memory).
struct KernelResources {
  int vgprs = 0;          // VGPRs per lane as allocated (.vgpr_count; on CDNA it already includes AGPRs),
                          // or registers per thread on NVIDIA
  int agprs = 0;          // CDNA accumulation registers (informational: part of vgprs' allocation)
  int sgprs = 0;          // AMD scalar registers per wave (0: not known / not limiting)
  int lds_bytes = 0;      // static LDS / shared memory per block
  int scratch_bytes = 0;  // private (scratch / local) memory per lane: spills land here
  int vgpr_spills = 0, sgpr_spills = 0;
  int wave_size = 0;      // 0: the GPU's first wave size
};

enum class OccupancyLimiter { Waves, Blocks, Registers, Sgprs, Lds, Unlaunchable };
std::string_view limiter_name(OccupancyLimiter limiter);  // "waves", "blocks", "registers", "sgprs", "lds", "unlaunchable"

inline constexpr int kUnlimited = INT_MAX;

// Where the waves of a block reside together, as the compiler schedules them: a CU (SM on NVIDIA);
// on RDNA a WGP, two CUs whose four SIMDs, LDS and barrier slots a block shares, since HIP compiles
// gfx10+ for WGP mode unless told -mcumode (LLVM getEUsPerCU, getMaxWorkGroupsPerCU).
struct OccupancyUnit {
  std::string_view name;  // "CU", "WGP", "SM"
  int cus = 1, simds = 0, lds_bytes = 0, max_blocks = 0;
};
OccupancyUnit occupancy_unit(const GpuSpec& gpu);

// An AMD SIMD's VGPR file as the occupancy rule sees it at one wave size, in registers per lane
// (LLVM AMDGPUBaseInfo getTotalNumVGPRs, getVGPRAllocGranule, getAddressableNumVGPRs).
struct VgprFile {
  int total = 0, granule = 0, addressable = 0;
};
VgprFile amd_vgpr_file(const GpuSpec& gpu, int wave_size);

struct Occupancy {
  int threads_per_block = 0;
  int wave_size = 0;
  int waves_per_block = 0;
  int blocks_per_cu = 0;         // resident blocks per occupancy_unit() (a CU; a WGP on RDNA; an SM):
                                 // the minimum of the limits below
  double waves_per_simd = 0;     // blocks × waves per block / the unit's SIMDs (warps per SM sub-partition)
  int max_waves_per_simd = 0;
  int register_waves_per_simd = 0;  // what registers alone allow per SIMD (AMD: VGPRs and SGPRs), capped at the max
  double occupancy = 0;          // waves_per_simd / max_waves_per_simd, 0..1
  OccupancyLimiter limiter = OccupancyLimiter::Waves;
  std::string why;               // for Unlaunchable: which limit the kernel breaks
  // Each resource's limit in blocks per unit (kUnlimited where it does not apply).
  int blocks_by_waves = kUnlimited, blocks_by_slots = kUnlimited, blocks_by_registers = kUnlimited,
      blocks_by_sgprs = kUnlimited, blocks_by_lds = kUnlimited;
  // As allocated: registers per lane (thread) after the family's granule; LDS bytes per block.
  int register_granule = 0, allocated_registers = 0, allocated_lds = 0;
};

// Occupancy of a kernel using `k` launched with `threads_per_block` threads on `gpu`.
Occupancy compute_occupancy(const GpuSpec& gpu, const KernelResources& k, int threads_per_block);

// Registers a CDNA kernel allocates from separately reported arch VGPRs and AGPRs (as the
// compiler's resource-usage remarks print them): gfx90a/gfx942 share one file (arch VGPRs rounded
// to 4, then AGPRs), gfx908 has two equal files (the larger count decides); others have no AGPRs.
int allocated_vgprs(const GpuSpec& gpu, int arch_vgprs, int agprs);

// Occupancy of a config from what the runtime reported for its kernel (a session Result's
// `kernel`): registers per thread, static shared memory, at config.nwarps × wave_size threads.
Occupancy occupancy_from_attributes(const GpuSpec& gpu, const KernelAttributes& attributes, Config config, int wave_size);
KernelResources resources_from_attributes(const KernelAttributes& attributes, int wave_size);

struct Session;
struct SessionDevice;
struct Result;
// The spec a session's device was recorded against (its spec_id, else matched by name); nullptr when unknown.
const GpuSpec* device_spec(const SessionDevice& d);
// A session result's occupancy from its kernel attributes; nullopt without attributes or a known spec.
std::optional<Occupancy> result_occupancy(const Session& s, const Result& r);

}  // namespace temper
