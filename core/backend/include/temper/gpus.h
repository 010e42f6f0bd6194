#pragma once
// The GPU spec database (resources/gpus.json, compiled into core): static facts per GPU.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "temper/backend.h"

namespace temper {

struct GpuSpec {
  std::string id;                    // stable key: "mi300x", "h100-sxm", "rx7900xtx"
  std::vector<std::string> names;    // marketing names, first is the display name
  std::string vendor;                // "amd" | "nvidia"
  std::string arch;                  // "gfx942", "sm_90"
  std::string family;                // "gcn5", "cdna2", "cdna3", "rdna2", "rdna3", "rdna4", "ampere", "hopper", ...
  int compute_units = 0;             // CUs / SMs
  int simds_per_cu = 0;              // SIMDs per CU; SM sub-partitions on NVIDIA
  std::vector<int> wave_sizes;       // {64}, {32, 64}, {32}
  int registers_per_simd = 0;        // 32-bit registers per SIMD (per SM sub-partition on NVIDIA)
  int lds_per_cu = 0;                // bytes of LDS / shared memory per CU or SM
  int lds_per_block = 0;             // bytes a block may use
  int max_waves_per_simd = 0;        // per SIMD (per SM sub-partition on NVIDIA)
  int max_blocks_per_cu = 0;         // resident blocks per CU / SM (AMD: workgroups using a barrier)
  double memory_gb = 0;              // device memory as marketed (10^9 B); a tie-breaker for match_device
  double memory_bandwidth_gbs = 0;   // peak DRAM/HBM, 10^9 B/s
  uint64_t llc_bytes = 0;            // last-level cache: L2, or Infinity Cache / MALL where larger
  double fp32_tflops = 0, fp16_tflops = 0, int8_tops = 0;  // dense peaks
  int boost_clock_mhz = 0;
  std::string source;                // public document the numbers come from
  std::string notes;                 // what a figure means where it could be misread (dense vs sparse, ...)

  bool is_amd() const { return vendor == "amd"; }
  bool is_nvidia() const { return vendor == "nvidia"; }
};

// All entries, loaded once from the embedded resources/gpus.json.
const std::vector<GpuSpec>& gpu_database();
// By id, arch or any marketing name (case-insensitive, substring of a name allowed when unique).
// An arch shared by several entries names the first one listed (its reference SKU).
const GpuSpec* find_gpu(std::string_view query);
// Every entry `query` could mean (exact id/arch/name matches, else name substrings); for messages.
std::vector<const GpuSpec*> find_gpus(std::string_view query);
// Parses a database in the resources/gpus.json format; Error(BadInput) naming `where` and the field.
std::vector<GpuSpec> parse_gpu_database(std::string_view json_text, const std::string& where);
// The entry for a runtime device (HIP gcnArchName / CUDA compute capability + name + SM count),
// or nullptr: "not in database".
const GpuSpec* match_device(const DeviceInfo& device);
// The database entry for `device`, or — "not in database" — a spec built from what the runtime
// reports (per-CU limits, L2, clock; peak rates 0 = unknown) with id "not in database" and a note.
GpuSpec spec_for_device(const DeviceInfo& device);
// The family an arch belongs to ("gfx90a" → "cdna2", "sm_89" → "ada"); empty when unknown.
std::string family_of_arch(std::string_view arch);

}  // namespace temper
