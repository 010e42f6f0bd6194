// `temper bench-gemv`: one GEMV shape timed per type, the engine's default config against the best
// config of the grid, next to the measured copy bandwidth (the device evidence of issue 5).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "compile_progress.h"
#include "temper/defaults.h"
#include "temper/device_bench.h"
#include "temper/engine_device.h"
#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gpu_backend.h"
#include "temper/mmvq_group.h"
#include "temper/verify.h"

namespace temper::cli {
namespace cmd_benchgemv {  // own namespace: the commands are compiled together (unity build)
namespace {

// The engine version whose hooked one-column launch --pipelined models.
constexpr const EngineVersion& kPipelining = engine_version(EngineFamily::HalveIters);

// `bytes`: what one launch moves (gemv_bytes of its problem).
nlohmann::json timing_json(const ConfigTiming& t, uint64_t bytes, double copy_gbs) {
  nlohmann::json j = {{"config", {{"nwarps", t.config.nwarps}, {"rows_per_block", t.config.rows_per_block}}},
                      {"ok", t.ok()}};
  if (!t.ok()) {
    j["error"] = t.error;
    return j;
  }
  j["us"] = stats_json(t.us);
  j["gbs"] = t.gbs;
  j["fraction_of_copy"] = copy_gbs > 0 ? t.gbs / copy_gbs : 0.0;
  j["bytes"] = bytes;
  return j;
}

// Kernels the build lacks: compiled (or taken from the kernel cache) before any timing.
void prepare(Device& device, const std::vector<KernelPair>& pairs) {
  CompileProgressPrinter compile_printer(device.info().arch + " kernels");
  with_compile_cancel([&] { device.prepare_kernels(pairs, std::ref(compile_printer), &g_compile_cancel); });
}

// The copy bandwidth of this run, the denominator of every percentage: its bytes and GB/s.
std::pair<uint64_t, double> copy_bandwidth(Device& device) {
  const DeviceInfo& d = device.info();
  uint64_t copy_bytes = std::max<uint64_t>(256ULL << 20, 8 * device_llc_bytes(d));
  if (d.memory_bytes) copy_bytes = std::min(copy_bytes, d.memory_bytes / 4);
  const double copy_gbs = device.copy_bandwidth_gbs(copy_bytes);
  std::fprintf(stderr, "%s (%s %s): copy bandwidth %.1f GB/s\n", d.name.c_str(), d.api.c_str(), d.arch.c_str(), copy_gbs);
  return {copy_bytes, copy_gbs};
}

struct Options {
  int device = 0, n = 4096, k = 14336, ncols = 1;
  GemvBenchOptions bench;
  std::string types, engine, save, csv, group;
  bool json = false, default_only = false, kernel_only = false, pipelined = false, force = false;
  EngineProbeArgs probe;
};

// `--group MEMBERS`: Temper's same-input group kernel at every group config against its members'
// own launches, each at its best config of the grid.
int run_benchgroup(const Options& o) {
  std::string why;
  const auto members = parse_members(o.group, &why);
  if (!members) fail(ErrorKind::BadInput, "--group '" + o.group + "': " + why);
  const GemvGroupProblem problem{*members, o.k, o.ncols, defaults::kernel_variant(o.engine)};
  const std::vector<GgmlType> types = group_weight_types(problem);
  for (const std::string& out : {o.save, o.csv})
    if (!out.empty()) check_output(out, {o.force});
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  std::unique_ptr<Device> device = gpu::open_device(list, o.device);
  const DeviceInfo& d = device->info();
  std::vector<KernelPair> pairs{{types[0], o.ncols, types.back()}};
  for (GgmlType t : types) pairs.push_back({t, o.ncols});
  prepare(*device, pairs);
  const double copy_gbs = copy_bandwidth(*device).second;

  bool any_failed = false;
  std::vector<ConfigTiming> group;
  std::optional<ConfigTiming> group_best;
  int copies = 0;
  {
    GroupBench bench(*device, problem, o.bench);
    copies = bench.copies();
    for (int w : mmvq::kGroupNwarps)
      for (int r : mmvq::kGroupRowsPerBlock) {
        group.push_back(bench.run({w, r}));
        const ConfigTiming& t = group.back();
        if (!t.ok() && t.error.rfind("verification failed", 0) == 0) any_failed = true;
        if (t.ok() && (!group_best || t.us.median < group_best->us.median)) group_best = t;
      }
    std::fprintf(stderr, "group: %zu configs timed\n", group.size());
  }
  struct Alone {
    GemvProblem problem;
    std::optional<ConfigTiming> best;
  };
  std::vector<Alone> alone;
  double members_us = 0;
  for (const GroupMember& m : *members) {
    Alone a{{{m.type, m.n, o.k}, o.ncols, problem.variant}, std::nullopt};
    GemvBench bench(*device, a.problem, o.bench);
    for (Config c : instantiated_configs(*device, m.type, o.ncols)) {
      const ConfigTiming t = bench.run(c);
      if (!t.ok() && t.error.rfind("verification failed", 0) == 0) any_failed = true;
      if (t.ok() && (!a.best || t.us.median < a.best->us.median)) a.best = t;
    }
    if (!a.best) fail(ErrorKind::Verification, "member " + shape_text(a.problem.shape()) + ": no config ran");
    members_us += a.best->us.median;
    std::fprintf(stderr, "member %s: best %s\n", shape_text(a.problem.shape()).c_str(), config_text(a.best->config, ",").c_str());
    alone.push_back(std::move(a));
  }
  const double speedup = group_best ? members_us / group_best->us.median : 0;

  if (!o.csv.empty()) {
    std::string text = "members,k,ncols,nwarps,rows_per_block,us\n";
    for (const auto& t : group)
      if (t.ok())
        text += members_text(*members) + "," + std::to_string(o.k) + "," + std::to_string(o.ncols) + "," +
                std::to_string(t.config.nwarps) + "," + std::to_string(t.config.rows_per_block) + "," +
                std::to_string(t.us.median) + "\n";
    write_file_atomic(o.csv, text, {o.force});
  }
  if (o.json || !o.save.empty()) {
    nlohmann::json out = {{"device", gpu::device_json(d)}, {"copy_gbs", copy_gbs}, {"engine", o.engine},
                          {"variant", std::string(variant_name(problem.variant))}, {"members", members_text(*members)},
                          {"k", o.k}, {"ncols", o.ncols}, {"count", o.bench.count}, {"warmup", o.bench.warmup},
                          {"launches_per_sample", o.bench.per_sample}, {"weight_copies", copies},
                          {"kernel", "temper group"}};
    nlohmann::json configs = nlohmann::json::array();
    for (const auto& t : group) configs.push_back(timing_json(t, gemv_bytes(problem), copy_gbs));
    out["configs"] = std::move(configs);
    if (group_best) out["best"] = timing_json(*group_best, gemv_bytes(problem), copy_gbs);
    nlohmann::json each = nlohmann::json::array();
    for (const auto& a : alone)
      each.push_back({{"type", std::string(type_name(a.problem.type))}, {"n", a.problem.n}, {"best", timing_json(*a.best, gemv_bytes(a.problem), copy_gbs)}});
    out["alone"] = std::move(each);
    out["alone_us"] = members_us;
    out["speedup"] = speedup;
    if (!o.save.empty()) write_file_atomic(o.save, out.dump(2) + "\n", {o.force});
    if (o.json) {
      std::cout << out.dump(2) << "\n";
      return any_failed ? int(ErrorKind::Verification) : 0;
    }
  }
  std::printf("device: %s (%s, %s, %d %s), driver %s, runtime %s\n", d.name.c_str(), d.api.c_str(), d.arch.c_str(),
              d.compute_units, d.api == "cuda" ? "SMs" : "CUs", d.driver_version.c_str(), d.runtime_version.c_str());
  std::printf("measured copy bandwidth: %.1f GB/s\n", copy_gbs);
  std::printf("group: %s, ncols %d; Temper's group kernel (the hook's mul_mat_group launch), %s; weights rotated past 2x LLC "
              "(%d copies); median of %d samples of %d back-to-back launches after %d warm-up\n\n",
              group_text(problem).c_str(), o.ncols, std::string(variant_name(problem.variant)).c_str(), copies, o.bench.count,
              o.bench.per_sample, o.bench.warmup);
  std::printf("%-8s %10s %9s %8s\n", "config", "us", "GB/s", "% copy");
  for (const auto& t : group) {
    if (t.ok())
      std::printf("%-8s %10.2f %9.1f %7.1f%%\n", config_text(t.config, ",").c_str(), t.us.median, t.gbs, 100.0 * t.gbs / copy_gbs);
    else
      std::printf("%-8s %s\n", config_text(t.config, ",").c_str(), t.error.c_str());
  }
  std::printf("\nits members alone, each at its best config of the grid:\n");
  for (const auto& a : alone)
    std::printf("  %-24s %8.2f us (%s)\n", shape_text(a.problem.shape()).c_str(), a.best->us.median,
                config_text(a.best->config, ",").c_str());
  if (group_best)
    std::printf("one group launch (%s) %.2f us against its members' launches %.2f us: x%.3f\n",
                config_text(group_best->config, ",").c_str(), group_best->us.median, members_us, speedup);
  return any_failed ? int(ErrorKind::Verification) : 0;
}

int run_benchgemv(const Options& o) {
  if (!o.group.empty()) {
    if (!o.probe.probe.empty() || !o.probe.engine_src.empty() || o.pipelined || o.default_only || !o.types.empty())
      fail(ErrorKind::BadInput, "--group times Temper's group kernel; it cannot go with --probe / --engine-src, "
                                "--pipelined, --default-only or --types");
    if (o.ncols > mmvq::kGroupMaxNcols)
      fail(ErrorKind::BadInput, "--group needs --ncols 1.." + std::to_string(mmvq::kGroupMaxNcols) +
                                    ": the hook groups batch widths up to 4");
    return run_benchgroup(o);
  }
  const bool json = o.json, default_only = o.default_only;
  const int n = o.n, k = o.k, ncols = o.ncols;
  const GemvBenchOptions& options = o.bench;
  const std::string& engine = o.engine;
  const int device_number = o.device;
  for (const std::string& out : {o.save, o.csv})  // refused now, not after the timing
    if (!out.empty()) check_output(out, {o.force});

  // The engine's own kernel through its probe, or Temper's kernel on this machine's GPUs.
  const bool in_engine = !o.probe.probe.empty() || !o.probe.engine_src.empty();
  const bool kernel_only = o.kernel_only;
  // The hook's pipelined launch in Temper's kernel: ggml-halve-iters' kernel, one column (docs/kernels.md).
  mmvq::KernelVariant variant = defaults::kernel_variant(engine);
  if (o.pipelined) {
    if (in_engine) fail(ErrorKind::BadInput, "--pipelined times Temper's kernel; it cannot go with --probe / --engine-src");
    if (ncols != 1) fail(ErrorKind::BadInput, "--pipelined needs --ncols 1: the engine pipelines one-column launches only");
    if (variant != kPipelining.variant)
      fail(ErrorKind::BadInput, "--pipelined models " + std::string(kPipelining.name) + "'s hooked launch; --engine " +
                                    engine + " has none");
    variant = mmvq::KernelVariant::GgmlD99724fPipelined;
  }
  gpu::DeviceList list;  // outlives the device it opens
  std::unique_ptr<Device> device;
  if (in_engine) {
    engine::ProbeOptions probe = engine_probe_options(o.probe);
    probe.kernel_only = kernel_only;
    device = std::make_unique<engine::EngineDevice>(std::move(probe));
  } else {
    list = gpu::list_devices(gpu_backends());
    device = gpu::open_device(list, device_number);
  }
  const DeviceInfo& d = device->info();

  std::vector<GgmlType> types;
  if (!o.types.empty()) {
    types = parse_type_list(o.types);
  } else {
    for (GgmlType type : tier1_types())
      if (!instantiated_configs(*device, type, ncols).empty()) types.push_back(type);
  }
  if (types.empty()) fail(ErrorKind::BadInput, "no type to time: this build has no kernel at ncols " + std::to_string(ncols));
  std::vector<KernelPair> pairs;
  for (GgmlType type : types) pairs.push_back({type, ncols});
  prepare(*device, pairs);
  const auto [copy_bytes, copy_gbs] = copy_bandwidth(*device);

  struct Row {
    GgmlType type;
    GemvProblem problem;
    int copies = 0;
    ConfigTiming stock;
    std::optional<ConfigTiming> best;
    std::vector<ConfigTiming> all;
    std::string error;
  };
  std::vector<Row> rows;
  bool any_failed = false;
  for (GgmlType type : types) {
    Row row;
    row.type = type;
    row.problem = {{type, n, k}, ncols, variant};
    std::fprintf(stderr, "%s: ", std::string(type_name(type)).c_str());
    try {
      GemvBench bench(*device, row.problem, options);
      row.copies = bench.copies();
      const Config stock = defaults::default_config(engine, d, type, ncols, k);
      row.stock = bench.run(stock);
      row.all.push_back(row.stock);
      if (!row.stock.ok()) any_failed = true;
      if (!default_only) {
        for (Config c : instantiated_configs(*device, type, ncols)) {
          if (c == stock) continue;
          row.all.push_back(bench.run(c));
          if (!row.all.back().ok() && row.all.back().error.rfind("verification failed", 0) == 0) any_failed = true;
        }
      }
      for (const auto& t : row.all)
        if (t.ok() && (!row.best || t.us.median < row.best->us.median)) row.best = t;
      std::fprintf(stderr, "%zu configs timed\n", row.all.size());
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::GpuFault) throw;
      row.error = e.what();
      any_failed = true;
      std::fprintf(stderr, "%s\n", e.what());
      rows.push_back(std::move(row));
      break;  // the device may be unusable now
    }
    rows.push_back(std::move(row));
  }

  if (!o.csv.empty()) {
    // One row per config timed (bench/fidelity.sh's format for both kernels).
    std::string text = "type,n,k,ncols,nwarps,rows_per_block,us\n";
    char line[160];
    for (const auto& r : rows)
      for (const auto& t : r.all)
        if (t.ok()) {
          std::snprintf(line, sizeof line, "%s,%d,%d,%d,%d,%d,%.4f\n", std::string(type_name(r.type)).c_str(), n, k, ncols,
                        t.config.nwarps, t.config.rows_per_block, t.us.median);
          text += line;
        }
    write_file_atomic(o.csv, text, {o.force});
  }

  if (json || !o.save.empty()) {
    nlohmann::json out = {{"device", gpu::device_json(d)},
                          {"copy_gbs", copy_gbs},
                          {"copy_bytes", copy_bytes},
                          {"engine", engine},
                          {"defaults_table", std::string(defaults::table_name(engine, d))},
                          {"n", n},
                          {"k", k},
                          {"ncols", ncols},
                          {"count", options.count},
                          {"warmup", options.warmup},
                          {"launches_per_sample", options.per_sample},
                          {"kernel", !in_engine ? (o.pipelined ? "temper pipelined" : "temper")
                                     : kernel_only ? "engine mul_mat_vec_q alone" : "engine MUL_MAT"}};
    nlohmann::json results = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{"type", std::string(type_name(r.type))}, {"weight_copies", r.copies}};
      if (!r.error.empty()) j["error"] = r.error;
      if (r.error.empty()) j["default"] = timing_json(r.stock, gemv_bytes(r.problem), copy_gbs);
      if (r.best) j["best"] = timing_json(*r.best, gemv_bytes(r.problem), copy_gbs);
      nlohmann::json all = nlohmann::json::array();
      for (const auto& t : r.all) all.push_back(timing_json(t, gemv_bytes(r.problem), copy_gbs));
      j["configs"] = std::move(all);
      results.push_back(std::move(j));
    }
    out["results"] = std::move(results);
    if (!o.save.empty()) write_file_atomic(o.save, out.dump(2) + "\n", {o.force});
    if (json) {
      std::cout << out.dump(2) << "\n";
      return any_failed ? int(ErrorKind::Verification) : 0;
    }
  }

  std::printf("device: %s (%s, %s, %d %s), driver %s, runtime %s\n", d.name.c_str(), d.api.c_str(), d.arch.c_str(),
              d.compute_units, d.api == "cuda" ? "SMs" : "CUs", d.driver_version.c_str(), d.runtime_version.c_str());
  std::printf("measured copy bandwidth: %.1f GB/s (device-to-device, %.0f MiB, read + write, median of 20)\n", copy_gbs,
              double(copy_bytes) / (1 << 20));
  const std::string samples = options.per_sample == 1 ? "event-timed launches"
                                                       : "event pairs around " + std::to_string(options.per_sample) +
                                                             " back-to-back launches";
  if (in_engine)
    std::printf("kernel: the engine's %s\n", kernel_only ? "mul_mat_vec_q alone (activations quantized once; every config, the "
                                                           "stock one too, as its grid instantiation)"
                                                         : "MUL_MAT (its q8_1 quantize + mmvq; stock config through its own dispatch)");
  else if (o.pipelined)
    std::printf("kernel: Temper's, pipelined (each block lets the next launch start and prefetches its rows to L2 "
                "before it waits: on Hopper and newer; elsewhere %s's own)\n",
                std::string(kPipelining.commit).c_str());
  std::printf("shape: N=%d K=%d ncols=%d; weights rotated past 2x LLC (%.0f MiB); median of %d %s "
              "after %d warm-up; default config: %s table of %s\n\n",
              n, k, ncols, double(device_llc_bytes(d)) / (1 << 20), options.count, samples.c_str(), options.warmup,
              std::string(defaults::table_name(engine, d)).c_str(), engine.c_str());
  std::printf("%-8s %20s %20s %9s %8s %9s %8s\n", "type", "default us (config)", "best us (config)", "GB/s", "% copy",
              "dflt GB/s", "% copy");
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-8s %s\n", std::string(type_name(r.type)).c_str(), r.error.c_str());
      continue;
    }
    char stock[48], best[48];
    if (r.stock.ok())
      std::snprintf(stock, sizeof stock, "%.2f (%s)", r.stock.us.median, config_text(r.stock.config, ",").c_str());
    else
      std::snprintf(stock, sizeof stock, "FAILED (%s)", config_text(r.stock.config, ",").c_str());
    if (r.best)
      std::snprintf(best, sizeof best, "%.2f (%s)", r.best->us.median, config_text(r.best->config, ",").c_str());
    else
      std::snprintf(best, sizeof best, "-");
    const double bgbs = r.best ? r.best->gbs : 0, sgbs = r.stock.ok() ? r.stock.gbs : 0;
    std::printf("%-8s %20s %20s %9.1f %7.1f%% %9.1f %7.1f%%\n", std::string(type_name(r.type)).c_str(), stock, best,
                bgbs, 100.0 * bgbs / copy_gbs, sgbs, 100.0 * sgbs / copy_gbs);
  }
  for (const auto& r : rows)
    for (const auto& t : r.all)
      if (!t.ok())
        std::printf("note: %s (%s): %s\n", std::string(type_name(r.type)).c_str(), config_text(t.config, ",").c_str(),
                    t.error.c_str());
  return any_failed ? int(ErrorKind::Verification) : 0;
}

const std::string kDetails =
    "Measures the device-to-device copy bandwidth, then for each type (default: every tier-1 type\n"
    "this build has) uploads random valid weights in enough copies to exceed twice the last-level\n"
    "cache, quantizes random activations on the device, verifies each config once against the exact\n"
    "integer q8_1 dot, and times COUNT samples with device events (weights rotating each launch).\n"
    "Prints per type: the default config's median (llama.cpp's table and kernel variant of --engine),\n"
    "the best config of the grid, its GB/s (weights + activations + outputs per launch) and its\n"
    "share of the measured copy bandwidth. Configs are written nwarps,rows_per_block.\n"
    "--back-to-back L times L launches between one event pair (no event between kernels, as decode's\n"
    "graphs run them) and reports the time per launch: COUNT such samples (default 8, as `temper\n"
    "sweep`; 1 puts an event pair around every launch).\n"
    "--probe / --engine-src time the engine's own kernel through its probe (`temper help engine`):\n"
    "whole MUL_MATs (the engine's q8_1 quantize + mmvq), or with --kernel-only mul_mat_vec_q alone\n"
    "(activations quantized once, events around the kernel launches only, as Temper's own kernel is\n"
    "timed; every config including the stock one runs as its grid instantiation; probe protocol 2).\n"
    "--pipelined times Temper's kernel as the hook runs a *_pipelined profile entry (" +
    std::string(kPipelining.name) + ", one\n"
    "column): back to back, each launch's blocks start while the previous one ends and prefetch their rows.\n"
    "--group TYPE:N,TYPE:N[,...] times Temper's same-input group kernel instead (the hook's mul_mat_group\n"
    "launch: 2..4 GEMVs of --k reading the same activations, e.g. q4_K:4096,q4_K:1024,q6_K:1024 for a\n"
    "layer's q, k and v) at every group config, against its members' own launches each at its best config.\n"
    "--csv writes one row per config timed: type,n,k,ncols,nwarps,rows_per_block,us (the median).\n"
    "--save also writes the JSON form to FILE. Exit code 5 when a config fails verification (it is\n"
    "then never the best).";

const Registrar reg{
    {"bench-gemv", "time one GEMV shape per type: default config vs the best of the grid", kDetails,
     [](CLI::App& app) {
       auto o = std::make_shared<Options>();
       GemvBenchOptions& b = o->bench;
       add_device(app, o->device);
       add_types(app, o->types)->description("types to time (default: every tier-1 type this build has)");
       app.add_option("--n", o->n, "rows (default 4096)")->check(integer_in(1, 1 << 24));
       app.add_option("--k", o->k, "row length (default 14336)")->check(integer_in(32, 1 << 24));
       app.add_option("--ncols", o->ncols, "batch width (default 1)")->check(integer_in(1, 8));
       app.add_option("--count", b.count, "timed samples (default 200)")->check(integer_in(1, 1'000'000));
       app.add_option("--warmup", b.warmup, "warm-up launches (default 20)")->check(integer_in(0, 1'000'000));
       add_engine(app, o->engine);
       app.add_flag("--default-only", o->default_only, "time only the default config");
       app.add_option("--seed", b.seed, "inputs' seed (default 1)")->check(integer_in(1, 1 << 30));
       app.add_option("--back-to-back", b.per_sample, "launches per timed sample (default 8)")->check(integer_in(1, 64));
       app.add_option("--save", o->save, "also write the JSON form to FILE")->type_name("FILE");
       app.add_option("--csv", o->csv, "also write one row per config timed: type,n,k,ncols,nwarps,rows_per_block,us")
           ->type_name("FILE");
       add_force(app, o->force);
       add_engine_probe(app, o->probe, true);
       app.add_flag("--kernel-only", o->kernel_only, "with --probe / --engine-src: time mul_mat_vec_q alone (probe protocol 2)");
       app.add_flag("--pipelined", o->pipelined,
                    "time Temper's kernel as the hook runs a *_pipelined entry (--engine " + std::string(kPipelining.name) +
                        ", --ncols 1)");
       app.add_option("--group", o->group,
                      "time Temper's same-input group kernel of these members (TYPE:N,...; --k, --ncols 1..4) instead")
           ->type_name("MEMBERS");
       add_json(app, o->json);
       return [o] { return run_benchgemv(*o); };
     }}};

}  // namespace
}  // namespace cmd_benchgemv
}  // namespace temper::cli
