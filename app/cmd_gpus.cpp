// `temper gpus [QUERY]`: the GPU spec database — every entry, one entry in full, or the entries
// this machine's devices match.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/backend.h"
#include "temper/error.h"
#include "temper/gpus.h"

namespace temper::cli {
namespace cmd_gpus {  // own namespace: the commands are compiled together (unity build)
namespace {

nlohmann::json to_json(const GpuSpec& g) {
  return {{"id", g.id}, {"names", g.names}, {"vendor", g.vendor}, {"arch", g.arch}, {"family", g.family},
          {"compute_units", g.compute_units}, {"simds_per_cu", g.simds_per_cu}, {"wave_sizes", g.wave_sizes},
          {"registers_per_simd", g.registers_per_simd}, {"lds_per_cu", g.lds_per_cu}, {"lds_per_block", g.lds_per_block},
          {"max_waves_per_simd", g.max_waves_per_simd}, {"max_blocks_per_cu", g.max_blocks_per_cu},
          {"memory_gb", g.memory_gb}, {"memory_bandwidth_gbs", g.memory_bandwidth_gbs}, {"llc_bytes", g.llc_bytes},
          {"fp32_tflops", g.fp32_tflops}, {"fp16_tflops", g.fp16_tflops}, {"int8_tops", g.int8_tops},
          {"boost_clock_mhz", g.boost_clock_mhz}, {"source", g.source}, {"notes", g.notes}};
}

void print_row(const GpuSpec& g) {
  std::printf("%-16s %-8s %-9s %4d %8.0f %7.0f %7.1f %8.1f  %s\n", g.id.c_str(), g.arch.c_str(), g.family.c_str(),
              g.compute_units, g.memory_bandwidth_gbs, static_cast<double>(g.llc_bytes) / (1 << 20), g.fp32_tflops,
              g.int8_tops, g.names.at(0).c_str());
}

void print_header() {
  std::printf("%-16s %-8s %-9s %4s %8s %7s %7s %8s  %s\n", "id", "arch", "family", "CUs", "GB/s", "LLC MiB", "fp32 TF",
              "int8 TOPS", "name");
}

void print_full(const GpuSpec& g) {
  std::string names, waves;
  for (const auto& n : g.names) names += (names.empty() ? "" : "; ") + n;
  for (int w : g.wave_sizes) waves += (waves.empty() ? "" : ", ") + std::to_string(w);
  const bool nv = g.is_nvidia();
  std::printf("%s — %s\n", g.id.c_str(), names.c_str());
  std::printf("  arch %s (%s, %s), %d %s, %d %s each, wave size %s\n", g.arch.c_str(), g.vendor.c_str(), g.family.c_str(),
              g.compute_units, nv ? "SMs" : "CUs", g.simds_per_cu, nv ? "sub-partitions" : "SIMDs", waves.c_str());
  std::printf("  %d registers per %s, at most %d %s per %s, %d blocks per %s\n", g.registers_per_simd,
              nv ? "sub-partition" : "SIMD", g.max_waves_per_simd, nv ? "warps" : "waves", nv ? "sub-partition" : "SIMD",
              g.max_blocks_per_cu, nv ? "SM" : "CU");
  std::printf("  %s: %d B per %s, %d B per block\n", nv ? "shared memory" : "LDS", g.lds_per_cu, nv ? "SM" : "CU", g.lds_per_block);
  std::printf("  memory %.0f GB at %.0f GB/s, last-level cache %.1f MiB, boost %d MHz\n", g.memory_gb,
              g.memory_bandwidth_gbs, static_cast<double>(g.llc_bytes) / (1 << 20), g.boost_clock_mhz);
  std::printf("  peaks (dense): fp32 %.1f TFLOPS, fp16 %.1f TFLOPS, int8 %.1f TOPS\n", g.fp32_tflops, g.fp16_tflops, g.int8_tops);
  std::printf("  source: %s\n", g.source.c_str());
  if (!g.notes.empty()) std::printf("  notes: %s\n", g.notes.c_str());
}

struct Options {
  std::vector<std::string> pos;  // QUERY, at most one
  bool devices = false, json = false;
};

int run_gpus(const Options& o) {
  const auto& pos = o.pos;
  const bool json_out = o.json;

  std::vector<GpuSpec> shown;
  std::vector<std::string> device_names;
  if (o.devices) {
    if (!pos.empty()) fail(ErrorKind::BadInput, "--devices takes no QUERY");
    for (auto& backend : gpu_backends())
      for (const DeviceInfo& d : backend->devices()) {
        shown.push_back(spec_for_device(d));
        device_names.push_back(backend->name() + " " + std::to_string(d.index) + ": " + d.name + " (" + d.arch + ")");
      }
    if (shown.empty()) fail(ErrorKind::NoDevice, "no HIP or CUDA device on this machine");
  } else if (pos.empty()) {
    shown = gpu_database();
  } else {
    for (const GpuSpec* g : find_gpus(pos[0])) shown.push_back(*g);
    if (shown.empty()) fail(ErrorKind::BadInput, pos[0] + ": no GPU in the database matches (see `temper gpus`)");
  }

  if (json_out) {
    nlohmann::json j = nlohmann::json::array();
    for (size_t i = 0; i < shown.size(); ++i) {
      auto e = to_json(shown[i]);
      if (!device_names.empty()) e["device"] = device_names[i];
      j.push_back(std::move(e));
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (pos.empty() && device_names.empty()) {
    print_header();
    for (const auto& g : shown) print_row(g);
    std::printf("\n%zu GPUs; `temper gpus ID` shows one in full with its sources\n", shown.size());
    return 0;
  }
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i) std::printf("\n");
    if (!device_names.empty()) std::printf("%s\n", device_names[i].c_str());
    print_full(shown[i]);
  }
  return 0;
}

const Registrar registrar{Command{
    "gpus",
    "the GPU spec database: list it, show an entry, or match this machine's devices",
    "Without QUERY: one line per GPU (id, arch, family, CUs/SMs, bandwidth, last-level cache,\n"
    "fp32 and int8 peaks). With QUERY (an id, an arch such as gfx942 or sm_90, or part of a\n"
    "marketing name): every matching entry in full, with the documents its numbers come from.\n"
    "\n"
    "The database is resources/gpus.json, compiled into temper (docs/gpus.md).",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("QUERY", o->pos, "an id, an arch (gfx942, sm_90) or part of a name")->expected(0, 1);
      app.add_flag("--devices", o->devices,
                   "the entry each device of this machine matches, or the limits its runtime reports when it is "
                   "not in the database");
      add_json(app, o->json)->description("print a JSON array of entries (resources/gpus.json field names)");
      return [o] { return run_gpus(*o); };
    }}};

}  // namespace
}  // namespace cmd_gpus
}  // namespace temper::cli
