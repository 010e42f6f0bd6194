// llama.cpp's mmvq launch tables as data. Every value below is read from ggml-org/ggml
// src/ggml-cuda/mmvq.cu: calc_nwarps, calc_rows_per_block, get_device_table_id, should_use_small_k
// and (ggml-halve-iters) should_halve_iters, at the commits of temper/engine_versions.h.
#include "temper/defaults.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/mmvq_traits.h"

namespace temper::defaults {
namespace {

using T = GgmlType;

constexpr auto kEngines = [] {
  std::array<std::string_view, std::size(kEngineVersions)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kEngineVersions[i].name;
  return names;
}();

EngineFamily version_of(std::string_view engine) {
  if (const EngineVersion* v = find_engine_version(engine)) return v->family;
  std::string known;
  for (auto e : kEngines) known += (known.empty() ? "" : ", ") + std::string(e);
  fail(ErrorKind::BadInput, "unknown engine \"" + std::string(engine) + "\" (known: " + known + ")");
}

bool one_of(GgmlType t, std::initializer_list<GgmlType> list) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

// What an arch string says about the device, in ggml's terms.
struct ArchFacts {
  bool nvidia = false, amd = false;
  int cc = 0;        // NVIDIA compute capability × 100 (sm_90 → 900, sm_121 → 1210)
  int gfx = 0;       // AMD gfx number read as hex (gfx906 → 0x906, gfx1100 → 0x1100)
  bool gcn = false, cdna = false, rdna1 = false, rdna2 = false, rdna3_0 = false, rdna3_5 = false, rdna4 = false;
  bool rdna() const { return rdna1 || rdna2 || rdna3_0 || rdna3_5 || rdna4; }
};

ArchFacts parse_arch(std::string_view arch) {
  ArchFacts f;
  std::string a;
  for (char c : arch) a += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (a.rfind("sm_", 0) == 0) {
    int v = 0;
    const auto [p, ec] = std::from_chars(a.data() + 3, a.data() + a.size(), v);  // "sm_90a" → 90
    if (ec == std::errc() && p != a.data() + 3 && v > 0) {
      f.nvidia = true;
      f.cc = v * 10;
    }
    return f;
  }
  if (a.rfind("gfx", 0) == 0) {
    const size_t end = a.find(':');  // "gfx90a:sramecc+:xnack-"
    const std::string digits = a.substr(3, end == std::string::npos ? std::string::npos : end - 3);
    int v = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 16);
    if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty()) return f;
    f.amd = true;
    f.gfx = v;
    // ggml-cuda common.cuh: GCN up to Vega 20 (gfx906), CDNA gfx908..gfx950, RDNA1 gfx101x,
    // RDNA2 gfx103x, RDNA3 gfx110x (3.0) and gfx115x (3.5), RDNA4 gfx12xx.
    if (v >= 0x1200) f.rdna4 = true;
    else if (v >= 0x1150) f.rdna3_5 = true;
    else if (v >= 0x1100) f.rdna3_0 = true;
    else if (v >= 0x1030) f.rdna2 = true;
    else if (v >= 0x1010) f.rdna1 = true;
    else if (v >= 0x908) f.cdna = true;
    else f.gcn = true;
  }
  return f;
}

int generic_nwarps(int ncols) { return ncols <= 4 ? 4 : 2; }

int calc_nwarps(EngineFamily v, Table table, GgmlType type, int ncols) {
  switch (table) {
    case Table::Generic:
    case Table::Gb10:  // GB10 is GENERIC unless should_halve_iters doubles it (default_config)
      return generic_nwarps(ncols);
    case Table::Gcn:
      return ncols <= 4 ? 2 : 1;
    case Table::Turing:
      if (ncols == 1) return one_of(type, {T::Q2_K, T::Q3_K, T::Q4_K, T::Q5_K, T::Q6_K}) ? 2 : 4;
      return generic_nwarps(ncols);
    case Table::Rdna2:
      return 1;
    case Table::Rdna3_0:
      if (ncols != 1) return 1;
      if (v == EngineFamily::SmallK)
        return one_of(type, {T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q8_0, T::Q4_K, T::Q6_K, T::IQ4_NL}) ? 8 : 1;
      // ggml-halve-iters: q4_K fell back to 1, q6_K to 2 ("Q2_K / Q5_K / IQ4_XS regress in full quant sweeps").
      if (type == T::Q6_K) return 2;
      return one_of(type, {T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q8_0, T::IQ4_NL}) ? 8 : 1;
    case Table::Rdna4:
      if (ncols != 1) return 1;
      return one_of(type, {T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q8_0, T::Q2_K, T::Q4_K, T::Q5_K, T::Q6_K,
                           T::IQ4_NL, T::IQ4_XS})
                 ? 8
                 : 1;
  }
  return 1;
}

int calc_rows_per_block(Table table, int ncols) {
  const bool two_rows = table == Table::Generic || table == Table::Gcn || table == Table::Turing || table == Table::Gb10;
  return two_rows && ncols > 1 ? 2 : 1;
}

void check_type_and_ncols(GgmlType type, int ncols) {
  if (!mmvq::type_supported(static_cast<uint32_t>(type)))
    fail(ErrorKind::BadInput, "type " + std::string(type_name(type)) + " has no mmvq kernel");
  if (ncols < 1 || ncols > mmvq::kMaxNcols)
    fail(ErrorKind::BadInput, "ncols " + std::to_string(ncols) + " is outside 1.." + std::to_string(mmvq::kMaxNcols));
}

// should_use_small_k's exclusions (identical at both commits): on Turing and newer NVIDIA only
// iq3_xxs / iq3_s at ncols 1; elsewhere the eight slow IQ types at ncols 1, iq3_s / q2_K / q3_K
// before Volta, and every RDNA.
bool small_k_allowed(const ArchFacts& f, GgmlType type, int ncols) {
  if (f.nvidia && f.cc >= 750) return !(ncols == 1 && one_of(type, {T::IQ3_XXS, T::IQ3_S}));
  const bool iq_slow = one_of(type, {T::IQ1_S, T::IQ1_M, T::IQ2_XXS, T::IQ2_XS, T::IQ2_S, T::IQ3_XXS, T::IQ3_S, T::IQ4_XS});
  if (ncols == 1 && iq_slow) return false;
  if (f.nvidia && f.cc < 700 && one_of(type, {T::IQ3_S, T::Q2_K, T::Q3_K})) return false;
  return !f.rdna();
}

// ggml-halve-iters' should_halve_iters on GB10: doubling nwarps pays when the wider block's odd trip
// leaves at most an eighth of its work idle.
bool halve_iters(GgmlType type, int k, int warp_size, int generic) {
  const mmvq::TypeTraits t = mmvq::type_traits(static_cast<uint32_t>(type));
  const int blocks_per_row = k / t.qk;
  const int per_iter = generic * (t.vdr * warp_size / t.qi);
  const int iters = (blocks_per_row + per_iter - 1) / per_iter;
  const int iters_wide = (blocks_per_row + per_iter * 2 - 1) / (per_iter * 2);
  const int idle = iters_wide * 2 - iters;
  return idle * 8 <= iters_wide * 2;
}

}  // namespace

std::string_view table_name(Table table) {
  switch (table) {
    case Table::Generic: return "GENERIC";
    case Table::Turing: return "TURING";
    case Table::Gcn: return "GCN";
    case Table::Rdna2: return "RDNA2";
    case Table::Rdna3_0: return "RDNA3_0";
    case Table::Rdna4: return "RDNA4";
    case Table::Gb10: return "GB10";
  }
  return "GENERIC";
}

std::span<const std::string_view> known_engines() { return kEngines; }

mmvq::KernelVariant kernel_variant(std::string_view engine) {
  if (engine.empty()) engine = kEngines[0];  // sessions that name none use the default engine
  return engine_version(version_of(engine)).variant;
}

bool is_known_engine(std::string_view engine) {
  return find_engine_version(engine) != nullptr;
}

Table table_for(std::string_view engine, std::string_view arch) {
  const EngineFamily v = version_of(engine);
  const ArchFacts f = parse_arch(arch);
  if (f.rdna4) return Table::Rdna4;
  if (f.rdna3_0) return Table::Rdna3_0;
  if (f.rdna2 || f.rdna3_5) return Table::Rdna2;
  if (f.gcn || f.cdna) return Table::Gcn;  // upstream has no separate CDNA table
  if (v == EngineFamily::HalveIters && f.nvidia) {
    if (f.cc >= 750 && f.cc < 800) return Table::Turing;
    if (f.cc == 1210) return Table::Gb10;  // DGX Spark
  }
  return Table::Generic;  // RDNA1, every other NVIDIA part (H100 included), unknown archs
}

std::string_view table_name(std::string_view engine, const DeviceInfo& device) {
  return table_name(table_for(engine, device.arch));
}

int engine_warp_size(std::string_view arch) {
  const ArchFacts f = parse_arch(arch);
  return f.amd && f.gfx < 0x1000 ? 64 : 32;
}

Config table_entry(std::string_view engine, Table table, GgmlType type, int ncols) {
  const EngineFamily v = version_of(engine);
  check_type_and_ncols(type, ncols);
  return {calc_nwarps(v, table, type, ncols), calc_rows_per_block(table, ncols)};
}

std::optional<Config> small_k_variant(std::string_view engine, std::string_view arch, GgmlType type, int ncols,
                                      int /*k*/) {
  const Table table = table_for(engine, arch);
  const Config entry = table_entry(engine, table, type, ncols);
  if (ncols != 1 || entry.nwarps <= 1 || !small_k_allowed(parse_arch(arch), type, ncols)) return std::nullopt;
  return Config{entry.nwarps, entry.nwarps};
}

std::optional<Config> small_k_variant(std::string_view engine, const DeviceInfo& device, GgmlType type, int ncols,
                                      int k) {
  return small_k_variant(engine, std::string_view(device.arch), type, ncols, k);
}

bool small_k_applies(std::string_view engine, std::string_view arch, GgmlType type, int ncols, int k, int warp_size) {
  const std::optional<Config> variant = small_k_variant(engine, arch, type, ncols, k);
  if (!variant) return false;
  if (warp_size <= 0) warp_size = engine_warp_size(arch);
  const mmvq::TypeTraits t = mmvq::type_traits(static_cast<uint32_t>(type));
  return k / t.qk < variant->nwarps * (t.vdr * warp_size / t.qi);
}

Config default_config(std::string_view engine, std::string_view arch, GgmlType type, int ncols, int k, int warp_size) {
  if (warp_size <= 0) warp_size = engine_warp_size(arch);
  const Table table = table_for(engine, arch);
  const Config entry = table_entry(engine, table, type, ncols);
  if (ncols != 1) return entry;
  if (small_k_applies(engine, arch, type, ncols, k, warp_size)) return {entry.nwarps, entry.nwarps};
  if (table == Table::Gb10 &&
      one_of(type, {T::Q4_0, T::Q4_1, T::Q5_0, T::Q5_1, T::Q8_0, T::Q4_K, T::Q5_K, T::Q6_K, T::IQ4_NL}) &&
      halve_iters(type, k, warp_size, entry.nwarps))
    return {2 * entry.nwarps, entry.rows_per_block};
  return entry;
}

Config default_config(std::string_view engine, const DeviceInfo& device, GgmlType type, int ncols, int k) {
  return default_config(engine, std::string_view(device.arch), type, ncols, k, device.warp_size);
}

namespace {

// A per-type limit with a default for every type not listed: the batch widths up to which ggml
// runs mmvq. The values are upstream's (mmvq.cu at ggml-halve-iters' commit), tabulated here.
struct Limit {
  GgmlType type;
  int max_ncols;
};
int limit_of(std::initializer_list<Limit> limits, GgmlType type) {
  for (const Limit& l : limits)
    if (l.type == type) return l.max_ncols;
  return mmvq::kMaxNcols;
}

}  // namespace

int mmvq_max_ncols(std::string_view engine, std::string_view arch, GgmlType type) {
  if (version_of(engine) == EngineFamily::SmallK) return mmvq::kMaxNcols;
  const ArchFacts f = parse_arch(arch);
  // k-quants redo their costlier decode per column in mmvq, so mmq takes over sooner where tuned.
  if (f.nvidia && f.cc == 890) return limit_of({{T::Q2_K, 4}, {T::Q3_K, 6}, {T::Q4_K, 7}, {T::Q5_K, 7}}, type);
  if (f.nvidia && f.cc == 1200)
    return limit_of({{T::Q2_K, 5}, {T::Q3_K, 5}, {T::Q4_K, 5}, {T::Q5_K, 5}, {T::Q6_K, 7}}, type);
  if (f.nvidia && f.cc == 1210) return limit_of({{T::Q2_K, 6}}, type);
  if (f.cdna && f.gfx < 0x90a)  // CDNA1 (MI100)
    return limit_of({{T::Q4_0, 7}, {T::Q4_1, 7}, {T::Q5_1, 7}, {T::Q8_0, 6}, {T::Q2_K, 4}, {T::Q3_K, 3}, {T::Q4_K, 2},
                     {T::Q5_K, 3}, {T::Q6_K, 4}, {T::IQ1_S, 5}, {T::IQ2_XXS, 6}, {T::IQ3_S, 6}, {T::IQ4_XS, 6}},
                    type);
  if (f.cdna) return limit_of({{T::Q2_K, 5}, {T::Q3_K, 3}, {T::Q4_K, 3}, {T::Q5_K, 3}, {T::Q6_K, 5}}, type);
  return mmvq::kMaxNcols;
}

int mmvq_mmid_max_batch(std::string_view arch, GgmlType type) {
  const ArchFacts f = parse_arch(arch);
  if (f.nvidia) {
    if (f.cc == 700 || f.cc >= 890) return mmvq::kMaxNcols;  // Volta, Ada and newer: always mmvq
    if (f.cc >= 750)
      return limit_of({{T::IQ2_S, 7}, {T::IQ3_S, 6}, {T::IQ3_XXS, 7}, {T::MXFP4, 7}, {T::Q2_K, 7}, {T::Q3_K, 5}}, type);
    return limit_of({{T::IQ1_S, 6}, {T::IQ1_M, 6}, {T::IQ2_S, 4}, {T::IQ2_XS, 5}, {T::IQ2_XXS, 5}, {T::IQ3_S, 4},
                     {T::IQ3_XXS, 4}, {T::IQ4_NL, 6}, {T::IQ4_XS, 5}, {T::MXFP4, 4}, {T::NVFP4, 4}, {T::Q2_K, 4},
                     {T::Q3_K, 4}, {T::Q4_0, 6}, {T::Q4_1, 6}, {T::Q4_K, 5}, {T::Q5_0, 6}, {T::Q5_1, 6}, {T::Q5_K, 5},
                     {T::Q6_K, 4}, {T::Q8_0, 4}},
                    type);
  }
  if (f.rdna4)
    return limit_of({{T::IQ1_S, 7}, {T::IQ1_M, 7}, {T::IQ2_S, 4}, {T::IQ2_XS, 4}, {T::IQ2_XXS, 4}, {T::IQ3_S, 4},
                     {T::IQ3_XXS, 4}, {T::IQ4_NL, 7}, {T::IQ4_XS, 5}, {T::MXFP4, 5}, {T::NVFP4, 5}, {T::Q3_K, 4},
                     {T::Q4_0, 7}, {T::Q4_1, 7}, {T::Q4_K, 4}, {T::Q5_0, 7}, {T::Q5_1, 7}, {T::Q5_K, 5}, {T::Q6_K, 5},
                     {T::Q8_0, 7}},
                    type);
  if (f.rdna3_0 || f.rdna3_5)
    return limit_of({{T::IQ1_S, 6}, {T::IQ1_M, 6}, {T::IQ2_S, 4}, {T::IQ2_XS, 4}, {T::IQ2_XXS, 4}, {T::IQ3_S, 4},
                     {T::IQ3_XXS, 4}, {T::IQ4_NL, 6}, {T::IQ4_XS, 6}, {T::Q4_K, 4}, {T::Q5_K, 4}, {T::Q6_K, 4}},
                    type);
  if (f.rdna1 || f.rdna2)
    return limit_of({{T::IQ2_S, 4}, {T::IQ2_XS, 4}, {T::IQ2_XXS, 4}, {T::IQ3_S, 4}, {T::IQ3_XXS, 4}, {T::Q2_K, 7},
                     {T::Q3_K, 4}, {T::Q4_K, 5}, {T::Q5_K, 6}, {T::Q6_K, 5}},
                    type);
  if (f.cdna) return limit_of({{T::IQ2_S, 5}, {T::IQ2_XS, 5}, {T::IQ2_XXS, 5}, {T::IQ3_S, 4}, {T::IQ3_XXS, 5}}, type);
  if (f.gcn)
    return limit_of({{T::IQ1_S, 5}, {T::IQ1_M, 5}, {T::IQ2_S, 4}, {T::IQ2_XS, 4}, {T::IQ2_XXS, 4}, {T::IQ3_S, 4},
                     {T::IQ3_XXS, 4}, {T::IQ4_NL, 6}, {T::IQ4_XS, 4}, {T::Q2_K, 4}, {T::Q3_K, 4}, {T::Q4_0, 5},
                     {T::Q4_1, 5}, {T::Q4_K, 4}, {T::Q5_K, 4}, {T::Q6_K, 4}, {T::Q8_0, 4}},
                    type);
  return mmvq::kMaxNcols;
}

bool stock_uses_mmvq(std::string_view engine, std::string_view arch, GgmlType type, bool mul_mat_id, int ncols) {
  return ncols <= (mul_mat_id ? mmvq_mmid_max_batch(arch, type) : mmvq_max_ncols(engine, arch, type));
}

std::string config_invalid_reason(GgmlType type, int ncols, Config c, int warp_size) {
  if (!mmvq::type_supported(static_cast<uint32_t>(type)))
    return "type " + std::string(type_name(type)) + " has no mmvq kernel";
  const auto in = [](const auto& grid, int v) { return std::find(std::begin(grid), std::end(grid), v) != std::end(grid); };
  if (!in(mmvq::kGridNwarps, c.nwarps))
    return "nwarps " + std::to_string(c.nwarps) + " is outside the kernel grid " + values_text(grid_nwarps());
  if (!in(mmvq::kGridRowsPerBlock, c.rows_per_block))
    return "rows_per_block " + std::to_string(c.rows_per_block) + " is outside the kernel grid " + values_text(grid_rows_per_block());
  if (warp_size != 32 && warp_size != 64) return "wave size " + std::to_string(warp_size) + " is not 32 or 64";
  switch (mmvq::launch_invalid(ncols, c.nwarps, c.rows_per_block, warp_size)) {
    case mmvq::Invalid::None: return {};
    case mmvq::Invalid::Ncols: return "ncols " + std::to_string(ncols) + " is outside 1..8";
    case mmvq::Invalid::Nwarps: return "nwarps " + std::to_string(c.nwarps) + " is not a power of two";
    case mmvq::Invalid::RowsPerBlock:
      return "rows_per_block " + std::to_string(c.rows_per_block) + " exceeds the wave size " + std::to_string(warp_size);
    case mmvq::Invalid::Threads:
      return "nwarps " + std::to_string(c.nwarps) + " × wave " + std::to_string(warp_size) + " = " +
             std::to_string(c.nwarps * warp_size) + " threads exceeds 1024 per block";
    case mmvq::Invalid::SharedMemory: {
      const int bytes = mmvq::partial_sums_bytes(ncols, c.nwarps, c.rows_per_block, warp_size);
      if (bytes <= mmvq::kMaxStaticSharedBytes)
        return "the engine's fused gate/up kernel at ncols 1 needs twice the " + std::to_string(bytes) +
               " bytes of shared memory of the partial sums, over the " + (warp_size == 64 ? "64" : "48") + " KiB limit";
      return "partial sums need " + std::to_string(bytes) +
             " bytes of shared memory ((nwarps-1) × ncols × rows_per_block × wave × 4), over the 48 KiB limit";
    }
    case mmvq::Invalid::Registers:
      return "ncols × rows_per_block = " + std::to_string(ncols * c.rows_per_block) + " partial sums per thread exceed " +
             std::to_string(mmvq::max_partial_sums(c.nwarps, c.rows_per_block)) + " at this block shape (they spill registers)";
  }
  return {};
}

}  // namespace temper::defaults
