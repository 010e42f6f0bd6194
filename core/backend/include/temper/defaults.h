#pragma once
// What "stock" means: llama.cpp's own per-architecture mmvq launch tables (mmvq.cu calc_nwarps /
// calc_rows_per_block / should_use_small_k / should_halve_iters) as versioned data, so the sweep
// measures the config the engine would really launch as its baseline. Values were read from
// ggml-org/ggml at the commits of temper/engine_versions.h (docs/kernels.md lists them side by side).
//
// Terms: the *table entry* is (calc_nwarps, calc_rows_per_block) for (table, type, ncols); the
// *small-K variant* (ncols 1 only) keeps nwarps and sets rows_per_block = nwarps, which the engine
// launches instead when one pass of the block covers the whole row; the *default config* is what
// the engine launches for a given K — the table entry, the small-K variant, or on GB10 the
// doubled-nwarps entry of should_halve_iters.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "temper/mmvq_traits.h"
#include "temper/backend.h"
#include "temper/types.h"

namespace temper::defaults {

enum class Table { Generic, Turing, Gcn, Rdna2, Rdna3_0, Rdna4, Gb10 };

// "GENERIC", "TURING", "GCN", "RDNA2", "RDNA3_0", "RDNA4", "GB10" (upstream's names, minus the prefix).
std::string_view table_name(Table table);

// Engine versions with known tables, the names of temper/engine_versions.h in its order (oldest
// first). The first is the default the sweep compares against.
std::span<const std::string_view> known_engines();
bool is_known_engine(std::string_view engine);

// The kernel variant that models an engine version's compiled mmvq (Error(BadInput) if unknown).
mmvq::KernelVariant kernel_variant(std::string_view engine);

// The table an engine version picks for a device architecture: "sm_90" (NVIDIA compute capability),
// "gfx1100" (AMD, feature suffixes ignored); anything else gets GENERIC. Error(BadInput) for an
// unknown engine.
Table table_for(std::string_view engine, std::string_view arch);
std::string_view table_name(std::string_view engine, const DeviceInfo& device);

// The wave size llama.cpp compiles for on an arch: 64 on GCN/CDNA (gfx9xx and older), else 32.
int engine_warp_size(std::string_view arch);

// calc_nwarps / calc_rows_per_block for a table (ncols 1..8), without the K-dependent rules.
Config table_entry(std::string_view engine, Table table, GgmlType type, int ncols);

// The small-K variant the engine can select on this arch for this type at ncols 1 (for some K):
// nullopt at ncols > 1, when the table entry has one warp, or where upstream switches small-K off
// (all RDNA; the slow IQ types; iq3_s / q2_K / q3_K before Volta). `k` is accepted for symmetry
// and ignored.
std::optional<Config> small_k_variant(std::string_view engine, std::string_view arch, GgmlType type, int ncols,
                                      int k = 0);
std::optional<Config> small_k_variant(std::string_view engine, const DeviceInfo& device, GgmlType type, int ncols,
                                      int k = 0);

// Whether the engine launches the small-K variant for this K: the variant exists and the row's K
// blocks are fewer than one pass of the block (K/qk < nwarps · vdr · warp_size / qi).
bool small_k_applies(std::string_view engine, std::string_view arch, GgmlType type, int ncols, int k,
                     int warp_size);

// The config the engine launches for (type, ncols, K) on this arch — the sweep's baseline.
// warp_size 0: engine_warp_size(arch). Error(BadInput) for an unknown engine or type without mmvq.
Config default_config(std::string_view engine, std::string_view arch, GgmlType type, int ncols, int k,
                      int warp_size = 0);
Config default_config(std::string_view engine, const DeviceInfo& device, GgmlType type, int ncols, int k);

// ---- mmvq or mmq at batch widths 2..8 (ggml's own pick; issue 27) ----
// The largest batch width at which the engine still runs mmvq for a plain MUL_MAT of `type` on this
// arch: upstream's ggml_cuda_should_use_mmvq (ggml-halve-iters; per-type cutoffs on Ada sm_89,
// Blackwell sm_120, GB10 sm_121 and CDNA, 8 elsewhere). ggml-small-k decides inline in ggml-cuda.cu
// with the plain limit of 8 everywhere. Error(BadInput) for an unknown engine.
int mmvq_max_ncols(std::string_view engine, std::string_view arch, GgmlType type);
// MUL_MAT_ID's cap: the engine runs mmvq for up to this many tokens of experts, mmq above it
// (upstream's get_mmvq_mmid_max_batch; the same tables in both versions, bar the types ggml-small-k lacks).
int mmvq_mmid_max_batch(std::string_view arch, GgmlType type);
// Whether the engine picks mmvq (true) or mmq at batch width `ncols` for a MUL_MAT (`mul_mat_id`
// false) or MUL_MAT_ID launch of `type`.
bool stock_uses_mmvq(std::string_view engine, std::string_view arch, GgmlType type, bool mul_mat_id, int ncols);

// Why Temper's kernel grid cannot run (type, ncols, config) at this wave size; empty when it can.
// Covers types without an mmvq kernel, ncols outside 1..8, nwarps / rows_per_block outside the grid
// ({1,2,4,8,16,32} × {1,2,4,8,16}), more than 1024 threads, partial sums over 48 KiB of shared memory
// (twice that at ncols 1, for the engine's fused gate/up kernel) or more per thread than registers
// hold (mmvq::max_partial_sums).
std::string config_invalid_reason(GgmlType type, int ncols, Config config, int warp_size);

}  // namespace temper::defaults
