// `temper verify`: every mmvq instantiation of this build checked on the device against the CPU
// reference (exact integer q8_1 dot, float64 dequantized dot, all outputs written, no NaN).
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "compile_progress.h"
#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gpu_backend.h"
#include "temper/mmvq_group.h"
#include "temper/verify.h"

namespace temper::cli {
namespace cmd_verify {  // own namespace: the commands are compiled together (unity build)
namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_sigint(int) { g_cancel.store(true); }

struct Options {
  int device = 0, n = 0, k = 0;  // n, k: 0 = the default shapes
  std::string types, ncols, variants, groups, norms, save;
  uint64_t seed = 0;
  bool json = false, force = false;
};

int run_verify(const Options& o) {
  const bool json = o.json;
  VerifyOptions options;
  if (!o.types.empty()) options.types = parse_type_list(o.types);
  if (!o.ncols.empty()) options.ncols = parse_ncols_list(o.ncols);
  if (!o.variants.empty()) options.variants = parse_variant_list(o.variants);
  if (!o.groups.empty()) options.groups = parse_group_list(o.groups);
  if (!o.norms.empty()) options.norms = parse_norm_list(o.norms);
  if (o.seed) options.seed = o.seed;
  // One shape instead of the two defaults (rows not a multiple of any rows_per_block; long and short K).
  if (o.n || o.k) options.shapes = {{o.n ? o.n : 67, o.k ? o.k : 4096}};
  if (!o.save.empty()) check_output(o.save, {o.force});  // refused now, not after the run

  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  auto device = gpu::open_device(list, o.device);
  {  // Kernels the build lacks: compiled (or found in the kernel cache) first, with progress.
    std::vector<KernelPair> pairs;
    std::vector<int> ncols = options.ncols;
    if (ncols.empty()) ncols = {1, 2, 3, 4, 5, 6, 7, 8};
    for (const KernelPair& p : all_kernel_pairs(ncols))
      if (options.types.empty() || std::find(options.types.begin(), options.types.end(), p.type) != options.types.end())
        pairs.push_back(p);
    for (const auto& g : options.groups) {  // one group unit per (A, B, width)
      const auto b = std::find_if(g.begin(), g.end(), [&](GgmlType t) { return t != g[0]; });
      for (int n : ncols)
        if (n <= mmvq::kGroupMaxNcols) pairs.push_back({g[0], n, b == g.end() ? g[0] : *b});
    }
    CompileProgressPrinter compile_printer(device->info().arch + " kernels");
    with_compile_cancel([&] { device->prepare_kernels(pairs, std::ref(compile_printer), &g_compile_cancel); });
  }

  g_cancel = false;
  auto previous = std::signal(SIGINT, on_sigint);
  const bool tty = ::isatty(2);
  size_t last_percent = 101;
  VerifyReport report = run_verification(
      *device, options,
      [&](size_t done, size_t total) {
        if (total == 0) return;
        const size_t percent = done * 100 / total;
        if (tty) {
          std::fprintf(stderr, "\rverifying %zu/%zu", done, total);
          if (done == total) std::fprintf(stderr, "\n");
        } else if (percent / 10 != last_percent / 10 || done == total) {
          std::fprintf(stderr, "verifying %zu/%zu\n", done, total);
        }
        last_percent = percent;
      },
      &g_cancel);
  std::signal(SIGINT, previous);

  if (!o.save.empty()) write_file_atomic(o.save, to_json(report).dump(2) + "\n", {o.force});
  if (json)
    std::cout << to_json(report).dump(2) << "\n";
  else
    std::cout << format_report(report);
  if (report.cancelled) return int(ErrorKind::Cancelled);
  if (!report.fault.empty()) {
    std::fprintf(stderr, "temper verify: %s\n", report.fault.c_str());
    return int(ErrorKind::GpuFault);
  }
  if (report.cases.empty() && report.group_cases.empty())
    fail(ErrorKind::BadInput, "nothing to verify: this build has no kernel for the types and ncols asked for on " +
                                  device->info().name);
  return report.passed() ? 0 : int(ErrorKind::Verification);
}

// The help's variant names.
const std::string kDefaultVariant(variant_name(default_engine_version().variant));
const std::string kHalveIters(variant_name(engine_version(EngineFamily::HalveIters).variant));
const std::string kDetails =
    "Runs every mmvq instantiation (type x ncols x config) this build has for the device on\n"
    "random valid blocks and random activations, with outputs poisoned (NaN) first, and checks\n"
    "  - the device's q8_1 quantizer: quants exact, scale and sum within 1 ulp;\n"
    "  - each output against the exact integer q8_1 dot (tight tolerance) and the float64\n"
    "    dequantized dot (loose tolerance); every output written, none infinite.\n"
    "Default shapes: 67 rows x K 4096 and 67 rows x the type's smallest K (one short pass).\n"
    "--variants picks which compiled kernel of each config runs (default " + kDefaultVariant + "; " +
    kHalveIters + ", and\n" + std::string(variant_name(mmvq::KernelVariant::GgmlD99724fPipelined)) +
    " at one column: the hook's pipelined launch, different code on NVIDIA Hopper).\n"
    "--groups also verifies Temper's same-input group kernel (the hook's mul_mat_group launch:\n"
    "2..4 GEMVs reading the same activations, e.g. q4_K+q4_K+q6_K for q, k and v) at every group\n"
    "config and batch width 1..4; member m has n/(m+1) rows.\n"
    "--norms also verifies Temper's twin of the hook's norm that writes its GEMVs' q8_1 activations\n"
    "(rms_norm_q8_1) at each row length given, 1, 3 and 8 rows: the output against ggml's RMS_NORM*MUL\n"
    "in float64 within a bound on float rounding, the q8_1 copy against the CPU quantizer of it.\n"
    "Prints a pass table (rows: types, columns: ncols, cells: passed/instantiations); --save also\n"
    "writes the JSON report to FILE.\n"
    "Exit codes: 0 all passed, 5 a check failed, 4 the device faulted, 3 no device, 7 interrupted.";

const Registrar reg{{"verify", "check every kernel instantiation on the device against the CPU reference", kDetails,
                     [](CLI::App& app) {
                       auto o = std::make_shared<Options>();
                       add_device(app, o->device);
                       add_types(app, o->types);
                       add_ncols(app, o->ncols);
                       app.add_option("--variants", o->variants,
                                      "kernel variants: all, or a list of " + variant_names() + " (default " + kDefaultVariant + ")")
                           ->type_name("LIST");
                       app.add_option("--groups", o->groups,
                                      "same-input groups to verify too: member types joined by +, groups by commas "
                                      "(e.g. q4_K+q4_K+q6_K)")
                           ->type_name("LIST");
                       app.add_option("--norms", o->norms,
                                      "row lengths of the norm writing q8_1 to verify too (multiples of 32, e.g. 2048,4096)")
                           ->type_name("LIST");
                       app.add_option("--seed", o->seed, "inputs' seed (default: random)")->check(integer_in(1, UINT64_MAX));
                       app.add_option("--n", o->n, "rows of the one shape to verify (default 67)")
                           ->check(integer_in(1, 1 << 20));
                       app.add_option("--k", o->k, "row length of the one shape to verify (default 4096)")
                           ->check(integer_in(32, 1 << 20));
                       app.add_option("--save", o->save, "also write the JSON report to FILE")->type_name("FILE");
                       add_force(app, o->force);
                       add_json(app, o->json);
                       return [o] { return run_verify(*o); };
                     }}};

}  // namespace
}  // namespace cmd_verify
}  // namespace temper::cli
