// `temper occupancy --arch ARCH`: registers, LDS, waves per SIMD, occupancy and the limiting
// resource of every mmvq instantiation — statically from AMD code objects (no GPU needed), at run
// time from the device for NVIDIA, or for one kernel described by hand.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "compile_progress.h"
#include "temper/backend.h"
#include "temper/codeobject.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/gpus.h"
#include "temper/kernel_cache.h"
#include "temper/mmvq_group.h"
#include "temper/occupancy.h"

namespace temper::cli {
namespace cmd_occupancy {  // own namespace: the commands are compiled together (unity build)
namespace {

struct Options {
  std::string arch, type, codeobj_dir, group;
  int ncols = 0;                                            // 0: every ncols
  int regs = -1, sgprs = -1, lds = -1, threads = -1, wave = -1;  // -1: not given
  bool json = false;
};

const GpuSpec& resolve_gpu(const std::string& query) {
  if (const GpuSpec* g = find_gpu(query)) return *g;
  const auto hits = find_gpus(query);
  std::string msg = "--arch " + query + ": ";
  if (hits.empty()) {
    msg += "not in the GPU database (known arches:";
    std::string last;
    for (const auto& g : gpu_database())
      if (g.arch != last && msg.find(" " + g.arch + ",") == std::string::npos) msg += " " + g.arch + ",", last = g.arch;
    msg.back() = ')';
  } else {
    msg += "ambiguous (";
    for (size_t i = 0; i < hits.size(); ++i) msg += (i ? ", " : "") + hits[i]->id;
    msg += ")";
  }
  fail(ErrorKind::BadInput, msg);
}

std::string percent(double x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * x);
  return buf;
}

void print_header(const GpuSpec& g) {
  if (g.is_nvidia()) {
    std::printf("%s (%s, %s): %d sub-partitions per SM, at most %d warps each, %d KiB shared memory per SM\n",
                g.arch.c_str(), g.names.at(0).c_str(), g.family.c_str(), g.simds_per_cu, g.max_waves_per_simd,
                g.lds_per_cu / 1024);
    return;
  }
  const OccupancyUnit u = occupancy_unit(g);
  const int wave = g.wave_sizes.at(0);
  const VgprFile f = amd_vgpr_file(g, wave);
  std::printf("%s (%s, %s): %d SIMDs per %s%s, at most %d waves per SIMD, %d KiB LDS per %s; wave%d VGPR file %d per "
              "lane, granule %d\n",
              g.arch.c_str(), g.names.at(0).c_str(), g.family.c_str(), u.simds, std::string(u.name).c_str(),
              u.cus > 1 ? (" (" + std::to_string(u.cus) + " CUs, HIP's WGP mode)").c_str() : "", g.max_waves_per_simd,
              u.lds_bytes / 1024, std::string(u.name).c_str(), wave, f.total, f.granule);
}

// "default" for the engine table's entry on this arch, "small-K" for its small-K variant (oldest known engine).
std::string stock_label(const GpuSpec& g, const MmvqInstance& m) {
  try {
    const std::string_view engine = defaults::known_engines().front();
    if (defaults::table_entry(engine, defaults::table_for(engine, g.arch), m.type, m.ncols) == m.config) return "default";
    if (defaults::small_k_variant(engine, g.arch, m.type, m.ncols) == m.config) return "small-K";
  } catch (const Error&) {  // a type the tables do not cover
  }
  return "";
}

void print_table(const GpuSpec& g, const std::vector<ConfigOccupancy>& rows, bool with_runtime,
                 const std::vector<int>& runtime_blocks) {
  const bool amd = g.is_amd();
  std::printf("%-8s %5s %6s %4s %7s %5s %5s %5s %7s %7s %6s %10s %9s  %s%s\n", "type", "ncols", "nwarps", "rpb", "threads",
              amd ? "VGPR" : "regs", amd ? "AGPR" : "-", amd ? "SGPR" : "-", amd ? "LDS" : "shared", "scratch", "spills",
              amd ? "waves/SIMD" : "warps/SMSP", "occupancy", "limiter", with_runtime ? "   runtime blocks/SM" : "");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rows[i];
    const auto& r = c.resources;
    const auto& o = c.occupancy;
    const std::string label = std::string(type_name(c.instance.type)) + (c.group_b ? "+" + std::string(type_name(*c.group_b)) : "");
    std::printf("%-8s %5d %6d %4d %7d %5d %5s %5s %7d %7d %6d %10.2f %9s  %s", label.c_str(),
                c.instance.ncols, c.instance.config.nwarps, c.instance.config.rows_per_block, o.threads_per_block, r.vgprs,
                amd ? std::to_string(r.agprs).c_str() : "-", amd ? std::to_string(r.sgprs).c_str() : "-", r.lds_bytes,
                r.scratch_bytes, r.vgpr_spills + r.sgpr_spills, o.waves_per_simd, percent(o.occupancy).c_str(),
                std::string(limiter_name(o.limiter)).c_str());
    if (!o.why.empty()) std::printf(" (%s)", o.why.c_str());
    if (const std::string stock = c.group_b ? std::string() : stock_label(g, c.instance); !stock.empty())
      std::printf("  [%s]", stock.c_str());
    if (with_runtime) std::printf("   %d%s", runtime_blocks[i], runtime_blocks[i] == o.blocks_per_cu ? "" : " (differs)");
    std::printf("\n");
  }
}

nlohmann::json gpu_json(const GpuSpec& g) {
  const OccupancyUnit u = occupancy_unit(g);
  return {{"id", g.id}, {"name", g.names.at(0)}, {"arch", g.arch}, {"family", g.family},
          {"unit", {{"name", u.name}, {"cus", u.cus}, {"simds", u.simds}, {"lds_bytes", u.lds_bytes}}}};
}

// NVIDIA: registers are known only once the driver has loaded the kernels.
std::unique_ptr<Device> open_device_for(const GpuSpec& g, std::string& why_not) {
  for (auto& backend : gpu_backends()) {
    const auto devices = backend->devices();
    for (const auto& d : devices)
      if (d.arch.substr(0, d.arch.find(':')) == g.arch) return backend->open(d.index);
    if (devices.empty() && !backend->unavailable_reason().empty()) why_not += "; " + backend->name() + ": " + backend->unavailable_reason();
  }
  return nullptr;
}

// `--group A+B`: the same-input group kernels of members of types A and B (kernels/mmvq_group.h), AMD
// code objects compiled on demand into the kernel cache.
int run_group_occupancy(const Options& opt, const GpuSpec& gpu) {
  if (!gpu.is_amd())
    fail(ErrorKind::BadInput, "--group analyses AMD code objects; on " + gpu.arch +
                                  " time the group kernel with `temper bench-gemv --group`");
  if (opt.regs >= 0 || !opt.type.empty() || !opt.codeobj_dir.empty())
    fail(ErrorKind::BadInput, "--group cannot go with --regs, --type or --codeobj-dir");
  const size_t plus = opt.group.find('+');
  std::vector<GgmlType> types;
  for (const std::string& name : {opt.group.substr(0, plus), plus == std::string::npos ? std::string() : opt.group.substr(plus + 1)}) {
    if (name.empty() && !types.empty()) break;
    const auto t = parse_type(name);
    if (!t || !kernel_type_supported(*t))
      fail(ErrorKind::BadInput, "--group '" + opt.group + "': '" + name + "' is not a type with a GPU kernel (expected A or A+B, e.g. q4_K+q6_K)");
    types.push_back(*t);
  }
  if (opt.ncols > mmvq::kGroupMaxNcols)
    fail(ErrorKind::BadInput, "--group needs --ncols 1.." + std::to_string(mmvq::kGroupMaxNcols) + " (the hook groups batch widths up to 4)");
  std::vector<KernelPair> units;
  for (int nc = 1; nc <= mmvq::kGroupMaxNcols; ++nc)
    if (opt.ncols == 0 || nc == opt.ncols) units.push_back({types[0], nc, types.back()});
  KernelCache cache(KernelToolchain::Hip, gpu.arch, KernelArtifact::CodeObject);
  CompileProgressPrinter printer(gpu.arch + " group code objects");
  const auto paths = with_compile_cancel([&] { return cache.ensure(units, std::ref(printer), &g_compile_cancel); });
  std::vector<CodeObject> objects;
  for (const auto& p : paths)
    for (auto& co : load_code_objects(p)) objects.push_back(std::move(co));
  const auto rows = static_group_occupancy(gpu, objects);
  const std::string source = "group code objects compiled on demand in " + cache.directory().string() + " (static)";
  if (opt.json) {
    nlohmann::json j = {{"gpu", gpu_json(gpu)}, {"source", source}, {"configs", nlohmann::json::array()}};
    for (const auto& r : rows) j["configs"].push_back(to_json(r));
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  print_header(gpu);
  std::printf("source: %s\n", source.c_str());
  print_table(gpu, rows, false, {});
  return 0;
}

int run_occupancy(const Options& opt) {
  const GpuSpec& gpu = resolve_gpu(opt.arch);
  const bool json_out = opt.json;

  // One kernel described by hand.
  if (opt.regs >= 0) {
    KernelResources k;
    k.vgprs = opt.regs;
    k.sgprs = std::max(opt.sgprs, 0);
    k.lds_bytes = std::max(opt.lds, 0);
    k.wave_size = opt.wave > 0 ? opt.wave : gpu.wave_sizes.at(0);
    const int threads = opt.threads > 0 ? opt.threads : 4 * k.wave_size;
    const Occupancy o = compute_occupancy(gpu, k, threads);
    if (json_out) {
      nlohmann::json j = {{"gpu", gpu_json(gpu)}, {"threads_per_block", threads}, {"wave_size", o.wave_size},
                          {"registers", k.vgprs}, {"sgprs", k.sgprs}, {"lds_bytes", k.lds_bytes},
                          {"blocks_per_cu", o.blocks_per_cu}, {"waves_per_simd", o.waves_per_simd},
                          {"max_waves_per_simd", o.max_waves_per_simd}, {"occupancy", o.occupancy},
                          {"limiter", std::string(limiter_name(o.limiter))}, {"allocated_registers", o.allocated_registers},
                          {"allocated_lds", o.allocated_lds}};
      if (!o.why.empty()) j["why"] = o.why;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      print_header(gpu);
      const bool nv = gpu.is_nvidia();
      std::printf("%d threads (%d %s of %d), %d registers (allocated %d), %d B %s (allocated %d)\n", threads,
                  o.waves_per_block, nv ? "warps" : "waves", o.wave_size, k.vgprs, o.allocated_registers, k.lds_bytes,
                  nv ? "shared memory" : "LDS", o.allocated_lds);
      const std::string unit(occupancy_unit(gpu).name);
      std::printf("%d blocks per %s, %.2f %s of %d: occupancy %s, limited by %s%s\n", o.blocks_per_cu, unit.c_str(),
                  o.waves_per_simd, nv ? "warps per sub-partition" : "waves per SIMD",
                  o.max_waves_per_simd, percent(o.occupancy).c_str(),
                  std::string(limiter_name(o.limiter)).c_str(), o.why.empty() ? "" : (" (" + o.why + ")").c_str());
    }
    return 0;
  }
  for (auto [name, value] : {std::pair{"--sgprs", opt.sgprs}, {"--lds", opt.lds}, {"--threads", opt.threads}, {"--wave", opt.wave}})
    if (value >= 0) fail(ErrorKind::BadInput, std::string(name) + " describes a kernel by hand: give --regs too");

  if (!opt.group.empty()) return run_group_occupancy(opt, gpu);
  std::optional<GgmlType> type;
  if (!opt.type.empty()) type = parse_type(opt.type);
  const int ncols = opt.ncols;
  auto wanted = [&](const MmvqInstance& m) { return (!type || m.type == *type) && (ncols == 0 || m.ncols == ncols); };

  std::vector<ConfigOccupancy> rows;
  std::vector<int> runtime_blocks;
  std::string source;
  if (gpu.is_amd()) {
    const bool given = !opt.codeobj_dir.empty();
    auto dir = given ? std::filesystem::path(opt.codeobj_dir) : default_codeobj_dir();
    auto objects = load_code_objects_for(dir, gpu.arch);
    if (objects.empty() && given)
      fail(ErrorKind::BadInput, "no " + gpu.arch + " code objects in " + dir.string());
    for (auto& c : static_mmvq_occupancy(gpu, objects))
      if (wanted(c.instance)) rows.push_back(std::move(c));
    if (rows.empty() && !given) {
      // This build has none for the arch: compile them now (kernel cache; the next call is immediate).
      const std::vector<int> ncols_list = {ncols ? ncols : 1};
      std::vector<KernelPair> pairs;
      for (const KernelPair& p : all_kernel_pairs(ncols_list))
        if (!type || p.type == *type) pairs.push_back(p);
      if (pairs.empty()) fail(ErrorKind::BadInput, "--type " + std::string(type_name(*type)) + " has no GPU kernel");
      KernelCache cache(KernelToolchain::Hip, gpu.arch, KernelArtifact::CodeObject);
      CompileProgressPrinter printer(gpu.arch + " code objects");
      const auto paths = with_compile_cancel([&] { return cache.ensure(pairs, std::ref(printer), &g_compile_cancel); });
      objects.clear();
      for (const auto& p : paths)
        for (auto& co : load_code_objects(p)) objects.push_back(std::move(co));
      dir = cache.directory();
      source = "code objects compiled on demand in " + dir.string() + " (static" +
               (ncols ? std::string(")") : std::string("; ncols 1, --ncols N for others)"));
      for (auto& c : static_mmvq_occupancy(gpu, objects))
        if (wanted(c.instance)) rows.push_back(std::move(c));
    } else {
      source = "code objects in " + dir.string() + " (static)";
    }
  } else {
    if (!opt.codeobj_dir.empty()) fail(ErrorKind::BadInput, "--codeobj-dir reads AMD code objects; " + gpu.arch + " is NVIDIA");
    std::string why_not;
    auto device = open_device_for(gpu, why_not);
    if (!device)
      fail(ErrorKind::NoDevice, "registers of NVIDIA kernels are known only at run time, and this machine has no " +
                                    gpu.arch + " device" + why_not +
                                    "; describe a kernel by hand with --regs N [--lds B] [--threads T]");
    const GpuSpec* spec = match_device(device->info());
    const GpuSpec& g = spec ? *spec : gpu;
    for (const TypeInfo& t : all_types()) {
      if (!t.quantized) continue;
      for (int nc = 1; nc <= 8; ++nc)
        for (int nw : grid_nwarps())
          for (int rpb : grid_rows_per_block()) {
            const MmvqInstance m{t.type, nc, {nw, rpb}};
            if (!wanted(m) || !device->has_kernel(t.type, nc, m.config)) continue;
            const auto attr = device->kernel_attributes(t.type, nc, m.config);
            if (!attr) continue;
            ConfigOccupancy c;
            c.instance = m;
            c.resources.vgprs = attr->registers;
            c.resources.lds_bytes = attr->shared_bytes;
            c.resources.scratch_bytes = attr->local_bytes;
            c.resources.wave_size = device->info().warp_size;
            c.occupancy = compute_occupancy(g, c.resources, nw * c.resources.wave_size);
            rows.push_back(std::move(c));
            runtime_blocks.push_back(attr->blocks_per_cu);
          }
    }
    source = "function attributes of " + device->info().name + " (run time)";
  }

  if (json_out) {
    nlohmann::json j = {{"gpu", gpu_json(gpu)}, {"source", source}, {"configs", nlohmann::json::array()}};
    for (size_t i = 0; i < rows.size(); ++i) {
      auto row = to_json(rows[i]);
      if (!runtime_blocks.empty()) row["runtime_blocks_per_cu"] = runtime_blocks[i];
      row["stock"] = stock_label(gpu, rows[i].instance);
      j["configs"].push_back(std::move(row));
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  print_header(gpu);
  std::printf("source: %s\n", source.c_str());
  if (rows.empty()) {
    std::printf("no mmvq instantiation matches%s%s\n", type ? (" --type " + std::string(type_name(*type))).c_str() : "",
                ncols ? (" --ncols " + std::to_string(ncols)).c_str() : "");
    return 0;
  }
  print_table(gpu, rows, !runtime_blocks.empty(), runtime_blocks);
  return 0;
}

const Registrar registrar{Command{
    "occupancy",
    "registers, LDS, waves per SIMD and the limiting resource of every kernel config",
    "Per mmvq instantiation (type, ncols, nwarps, rows_per_block): threads per block, registers\n"
    "(VGPRs, AGPRs and SGPRs on AMD), LDS / shared memory, scratch and spills, waves per SIMD\n"
    "(warps per SM sub-partition on NVIDIA), occupancy and the resource that limits it, by each\n"
    "architecture's allocation rules (docs/occupancy.md).\n"
    "\n"
    "AMD targets are analysed statically from code objects, so no GPU is needed: this build's, or\n"
    "when it has none for ARCH, compiled now with hipcc (ncols 1, or --ncols N; progress on stderr,\n"
    "Ctrl-C cancels) into the kernel cache (~/.cache/temper/kernels), so the next call is immediate.\n"
    "gfx942 (MI300X), gfx1150/gfx1151 (Strix Point / Halo), gfx1200/gfx1201 (RDNA4), which Debian's\n"
    "hipcc does not know, are compiled with clang-19 (Debian packages clang-19, lld-19).\n"
    "NVIDIA registers are known only at run time: with an ARCH device present its function\n"
    "attributes are used and the runtime's own blocks per SM shown beside ours.\n"
    "Or describe one kernel by hand: --regs N [--sgprs N] [--lds BYTES] [--threads T] [--wave 32|64].\n"
    "--group A+B: the same-input group kernel (the hook's mul_mat_group launch, Temper's kernels/mmvq_group.h)\n"
    "of members of types A and B, its 9 configs at widths 1..4 (or --ncols), AMD only, compiled on demand.",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("--arch", o->arch, "gfx90a, sm_90, or a GPU id / name from `temper gpus` (mi300x, \"RX 7900 XTX\")")
          ->required();
      add_type(app, o->type, "only this ggml type (q4_0, q4_K, ...)");
      app.add_option("--ncols", o->ncols, "only this batch width")->check(integer_in(1, 8));
      app.add_option("--group", o->group,
                     "the same-input group kernels of members of types A and B instead (AMD; widths 1..4 or --ncols)")
          ->type_name("A+B");
      app.add_option("--codeobj-dir", o->codeobj_dir,
                     "read AMD code objects from DIR instead (default $TEMPER_CODEOBJ_DIR, else the install's "
                     "share/temper/codeobj/ or the build's codeobj/; "
                     "DIR/<arch>/ or any code object, offload bundle under DIR)")
          ->type_name("DIR");
      app.add_option("--regs,--vgprs", o->regs, "describe one kernel by hand: registers (VGPRs) per thread")
          ->check(integer_in(0, 512));
      app.add_option("--sgprs", o->sgprs, "its SGPRs (with --regs)")->check(integer_in(0, 128));
      app.add_option("--lds", o->lds, "its LDS bytes per block (with --regs)")->check(integer_in(0, 1 << 20));
      app.add_option("--threads", o->threads, "its threads per block (with --regs; default 4 waves)")
          ->check(integer_in(1, 4096));
      app.add_option("--wave", o->wave, "its wave size (with --regs)")->check(integer_in(32, 64));
      add_json(app, o->json)->description("print one JSON document (gpu, source, configs[])");
      return [o] { return run_occupancy(*o); };
    }}};

}  // namespace
}  // namespace cmd_occupancy
}  // namespace temper::cli
