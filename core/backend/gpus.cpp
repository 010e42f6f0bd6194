#include "temper/gpus.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "temper/error.h"

namespace temper {
namespace detail {
extern const std::string_view kGpusJson;  // resources/gpus.json, embedded at build time
}

namespace {

using nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains_ci(std::string_view hay, std::string_view needle) {
  return !needle.empty() && lower(hay).find(lower(needle)) != std::string::npos;
}

// Strict field access: every error names the file, the entry and the field.
struct Entry {
  const json& j;
  std::string where;

  const json& field(const char* key) const {
    auto it = j.find(key);
    if (it == j.end()) fail(ErrorKind::BadInput, where + ": missing field \"" + key + "\"");
    return *it;
  }
  [[noreturn]] void bad(const char* key, const char* expected) const {
    fail(ErrorKind::BadInput, where + "." + key + ": expected " + expected);
  }
  std::string str(const char* key, bool required = true) const {
    if (!required && !j.contains(key)) return {};
    const json& v = field(key);
    if (!v.is_string()) bad(key, "a string");
    return v.get<std::string>();
  }
  int integer(const char* key) const {
    const json& v = field(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      bad(key, "a non-negative integer");
    return static_cast<int>(v.get<int64_t>());
  }
  uint64_t u64(const char* key) const {
    const json& v = field(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      bad(key, "a non-negative integer");
    return v.get<uint64_t>();
  }
  double number(const char* key) const {
    const json& v = field(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      bad(key, "a non-negative number");
    return v.get<double>();
  }
};

GpuSpec parse_entry(const json& j, const std::string& where) {
  if (!j.is_object()) fail(ErrorKind::BadInput, where + ": expected an object");
  const Entry e{j, where};
  GpuSpec g;
  g.id = e.str("id");
  const json& names = e.field("names");
  if (!names.is_array() || names.empty()) e.bad("names", "a non-empty array of strings");
  for (const auto& n : names) {
    if (!n.is_string()) e.bad("names", "a non-empty array of strings");
    g.names.push_back(n.get<std::string>());
  }
  g.vendor = e.str("vendor");
  if (g.vendor != "amd" && g.vendor != "nvidia") e.bad("vendor", "\"amd\" or \"nvidia\"");
  g.arch = e.str("arch");
  g.family = e.str("family");
  g.compute_units = e.integer("compute_units");
  g.simds_per_cu = e.integer("simds_per_cu");
  const json& waves = e.field("wave_sizes");
  if (!waves.is_array() || waves.empty()) e.bad("wave_sizes", "a non-empty array of 32 and/or 64");
  for (const auto& w : waves) {
    if (!w.is_number_integer() || (w.get<int>() != 32 && w.get<int>() != 64))
      e.bad("wave_sizes", "a non-empty array of 32 and/or 64");
    g.wave_sizes.push_back(w.get<int>());
  }
  g.registers_per_simd = e.integer("registers_per_simd");
  g.lds_per_cu = e.integer("lds_per_cu");
  g.lds_per_block = e.integer("lds_per_block");
  g.max_waves_per_simd = e.integer("max_waves_per_simd");
  g.max_blocks_per_cu = e.integer("max_blocks_per_cu");
  g.memory_gb = e.number("memory_gb");
  g.memory_bandwidth_gbs = e.number("memory_bandwidth_gbs");
  g.llc_bytes = e.u64("llc_bytes");
  g.fp32_tflops = e.number("fp32_tflops");
  g.fp16_tflops = e.number("fp16_tflops");
  g.int8_tops = e.number("int8_tops");
  g.boost_clock_mhz = e.integer("boost_clock_mhz");
  g.source = e.str("source");
  g.notes = e.str("notes", false);
  // Zero in these would divide by zero in occupancy; the schema test checks the ranges in full.
  if (g.compute_units == 0 || g.simds_per_cu == 0 || g.registers_per_simd == 0 || g.max_waves_per_simd == 0 ||
      g.max_blocks_per_cu == 0 || g.lds_per_cu == 0)
    fail(ErrorKind::BadInput, where + ": per-CU limits must be positive");
  return g;
}

// The arch a runtime reports, without feature suffixes: "gfx90a:sramecc+:xnack-" → "gfx90a".
std::string base_arch(std::string_view arch) {
  return lower(arch.substr(0, arch.find(':')));
}

bool is_rdna(const GpuSpec& g) { return g.family.rfind("rdna", 0) == 0; }

}  // namespace

std::vector<GpuSpec> parse_gpu_database(std::string_view json_text, const std::string& where) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) fail(ErrorKind::BadInput, where + ": not valid JSON");
  if (!doc.is_object() || !doc.contains("gpus") || !doc["gpus"].is_array())
    fail(ErrorKind::BadInput, where + ": expected an object with a \"gpus\" array");
  std::vector<GpuSpec> out;
  for (size_t i = 0; i < doc["gpus"].size(); ++i) {
    const json& e = doc["gpus"][i];
    std::string at = where + ": gpus[" + std::to_string(i) + "]";
    if (e.is_object() && e.contains("id") && e["id"].is_string()) at += " (" + e["id"].get<std::string>() + ")";
    out.push_back(parse_entry(e, at));
    for (size_t k = 0; k + 1 < out.size(); ++k)
      if (out[k].id == out.back().id) fail(ErrorKind::BadInput, at + ": duplicate id");
  }
  return out;
}

const std::vector<GpuSpec>& gpu_database() {
  static const std::vector<GpuSpec> db = parse_gpu_database(detail::kGpusJson, "resources/gpus.json (embedded)");
  return db;
}

std::vector<const GpuSpec*> find_gpus(std::string_view query) {
  std::vector<const GpuSpec*> out;
  const std::string q = lower(query);
  if (q.empty()) return out;
  const auto& db = gpu_database();
  for (const auto& g : db)  // exact id, arch or name
    if (lower(g.id) == q || lower(g.arch) == q ||
        std::any_of(g.names.begin(), g.names.end(), [&](const std::string& n) { return lower(n) == q; }))
      out.push_back(&g);
  if (!out.empty()) return out;
  for (const auto& g : db)  // substring of a name
    if (std::any_of(g.names.begin(), g.names.end(), [&](const std::string& n) { return contains_ci(n, q); }))
      out.push_back(&g);
  return out;
}

const GpuSpec* find_gpu(std::string_view query) {
  const auto hits = find_gpus(query);
  if (hits.empty()) return nullptr;
  const std::string q = lower(query);
  // An arch names its first entry (the reference SKU the database lists first).
  if (lower(hits.front()->arch) == q) return hits.front();
  for (const GpuSpec* g : hits)
    if (lower(g->id) == q) return g;
  return hits.size() == 1 ? hits.front() : nullptr;
}

const GpuSpec* match_device(const DeviceInfo& device) {
  const std::string arch = base_arch(device.arch);
  std::vector<const GpuSpec*> cands;
  for (const auto& g : gpu_database()) {
    if (lower(g.arch) != arch) continue;
    // RDNA runtimes may count WGPs (two CUs each) instead of CUs.
    const bool cu_ok = device.compute_units <= 0 || g.compute_units == device.compute_units ||
                       (is_rdna(g) && g.compute_units == 2 * device.compute_units);
    if (cu_ok) cands.push_back(&g);
  }
  if (cands.size() <= 1) return cands.empty() ? nullptr : cands.front();
  // Same arch and CU count (H100 SXM vs H200, MI300X vs MI325X): the longest marketing name
  // found in the runtime's device name decides, then memory size.
  const GpuSpec* best = nullptr;
  size_t best_len = 0;
  bool tie = false;
  for (const GpuSpec* g : cands)
    for (const auto& n : g->names)
      if (contains_ci(device.name, n)) {
        if (n.size() > best_len) best = g, best_len = n.size(), tie = false;
        else if (n.size() == best_len && best != g) tie = true;
      }
  if (best && !tie) return best;
  if (device.memory_bytes > 0) {
    const double gb = static_cast<double>(device.memory_bytes) / 1e9;
    const GpuSpec* by_memory = nullptr;
    int hits = 0;
    for (const GpuSpec* g : cands)
      if (std::abs(gb - g->memory_gb) <= 0.15 * g->memory_gb) by_memory = g, ++hits;
    if (hits == 1) return by_memory;
  }
  return nullptr;  // ambiguous: better "not in database" than the wrong peaks
}

}  // namespace temper

namespace temper {

std::string family_of_arch(std::string_view arch_in) {
  const std::string arch = base_arch(arch_in);
  auto is = [&](std::string_view prefix) { return arch.rfind(prefix, 0) == 0; };
  if (is("gfx906")) return "gcn5";
  if (is("gfx908")) return "cdna1";
  if (is("gfx90a")) return "cdna2";
  if (is("gfx94")) return "cdna3";
  if (is("gfx95")) return "cdna4";
  if (is("gfx101")) return "rdna1";
  if (is("gfx103")) return "rdna2";
  if (is("gfx110")) return "rdna3";
  if (is("gfx115")) return "rdna3.5";
  if (is("gfx12")) return "rdna4";
  if (arch == "sm_80" || arch == "sm_86" || arch == "sm_87") return "ampere";
  if (arch == "sm_89") return "ada";
  if (arch == "sm_90" || arch == "sm_90a") return "hopper";
  if (is("sm_10") || is("sm_11") || is("sm_12")) return "blackwell";
  return {};
}

GpuSpec spec_for_device(const DeviceInfo& d) {
  if (const GpuSpec* g = match_device(d)) return *g;
  GpuSpec g;
  g.id = "not in database";
  g.names = {d.name.empty() ? base_arch(d.arch) : d.name};
  g.arch = base_arch(d.arch);
  g.vendor = g.arch.rfind("sm_", 0) == 0 ? "nvidia" : "amd";
  g.family = family_of_arch(g.arch);
  g.compute_units = d.compute_units;
  const bool rdna = g.family.rfind("rdna", 0) == 0;
  g.simds_per_cu = rdna ? 2 : 4;
  g.wave_sizes = rdna ? std::vector<int>{32, 64} : std::vector<int>{d.warp_size > 0 ? d.warp_size : 32};
  // Per-CU limits as the runtime reports them; the usual value where it reports nothing.
  g.registers_per_simd = d.regs_per_cu > 0 ? d.regs_per_cu / g.simds_per_cu : 16384;
  g.lds_per_cu = d.shared_per_cu > 0 ? d.shared_per_cu : 65536;
  g.lds_per_block = d.shared_per_block > 0 ? d.shared_per_block : g.lds_per_cu;
  const int wave = g.wave_sizes.front();
  g.max_waves_per_simd = d.max_threads_per_cu > 0 ? d.max_threads_per_cu / wave / g.simds_per_cu : 8;
  g.max_blocks_per_cu = g.is_nvidia() ? (g.max_waves_per_simd * g.simds_per_cu >= 64 ? 32 : 16) : 16;
  g.memory_gb = static_cast<double>(d.memory_bytes) / 1e9;
  if (d.memory_clock_mhz > 0 && d.memory_bus_bits > 0)  // DDR: two transfers per clock
    g.memory_bandwidth_gbs = 2.0 * d.memory_clock_mhz * 1e6 * (d.memory_bus_bits / 8.0) / 1e9;
  g.llc_bytes = d.l2_bytes;
  g.boost_clock_mhz = d.clock_mhz;
  g.source = "runtime (" + (d.api.empty() ? std::string("device") : d.api) + " device properties)";
  g.notes = "not in database: per-CU limits from the runtime, peak rates unknown";
  return g;
}

}  // namespace temper
