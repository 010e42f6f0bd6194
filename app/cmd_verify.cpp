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
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gpu_backend.h"
#include "temper/verify.h"

namespace temper::cli {
namespace {

std::atomic<bool> g_cancel{false};
extern "C" void on_sigint(int) { g_cancel.store(true); }

int run_verify(const Args& args) {
  const std::vector<std::string_view> valued = {"--device", "--types", "--ncols", "--seed", "--n", "--k", "--save"};
  reject_unknown(args, {"--json", "--device", "--types", "--ncols", "--seed", "--n", "--k", "--save"});
  if (const auto extra = positionals(args, valued); !extra.empty())
    fail(ErrorKind::BadInput, "verify takes no arguments, got '" + extra.front() + "'");
  const bool json = has_flag(args, "--json");

  VerifyOptions options;
  if (const auto t = option(args, "--types")) options.types = parse_type_list(*t);
  if (const auto c = option(args, "--ncols")) options.ncols = parse_ncols_list(*c);
  auto number = [](const std::string& text, const char* name, uint64_t lo, uint64_t hi) {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
      fail(ErrorKind::BadInput, std::string(name) + " expects a number " + std::to_string(lo) + ".." +
                                    std::to_string(hi) + ", got '" + text + "'");
    return v;
  };
  if (const auto s = option(args, "--seed")) options.seed = number(*s, "--seed", 1, UINT64_MAX);
  if (option(args, "--n") || option(args, "--k")) {
    // One shape instead of the two defaults (rows not a multiple of any rows_per_block; long and short K).
    const int n = int(number(option(args, "--n").value_or("67"), "--n", 1, 1 << 20));
    const int k = int(number(option(args, "--k").value_or("4096"), "--k", 32, 1 << 20));
    options.shapes = {{n, k}};
  }
  const int device_number = gpu::parse_device_number(option(args, "--device").value_or("0"));

  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  auto device = gpu::open_device(list, device_number);
  {  // Kernels the build lacks: compiled (or found in the kernel cache) first, with progress.
    std::vector<KernelPair> pairs;
    std::vector<int> ncols = options.ncols;
    if (ncols.empty()) ncols = {1, 2, 3, 4, 5, 6, 7, 8};
    for (const KernelPair& p : all_kernel_pairs(ncols))
      if (options.types.empty() || std::find(options.types.begin(), options.types.end(), p.type) != options.types.end())
        pairs.push_back(p);
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

  if (const auto save = option(args, "--save")) write_file_atomic(*save, to_json(report).dump(2) + "\n");
  if (json)
    std::cout << to_json(report).dump(2) << "\n";
  else
    std::cout << format_report(report);
  if (report.cancelled) return int(ErrorKind::Cancelled);
  if (!report.fault.empty()) {
    std::fprintf(stderr, "temper verify: %s\n", report.fault.c_str());
    return int(ErrorKind::GpuFault);
  }
  if (report.cases.empty())
    fail(ErrorKind::BadInput, "nothing to verify: this build has no kernel for the types and ncols asked for on " +
                                  device->info().name);
  return report.passed() ? 0 : int(ErrorKind::Verification);
}

const Registrar reg{{"verify", "check every kernel instantiation on the device against the CPU reference",
                     "usage: temper verify [--device N] [--types q4_0,q4_K,...] [--ncols 1-8] [--seed S]\n"
                     "                     [--n ROWS --k COLS] [--save FILE.json] [--json]\n\n"
                     "Runs every mmvq instantiation (type x ncols x config) this build has for the device on\n"
                     "random valid blocks and random activations, with outputs poisoned (NaN) first, and checks\n"
                     "  - the device's q8_1 quantizer: quants exact, scale and sum within 1 ulp;\n"
                     "  - each output against the exact integer q8_1 dot (tight tolerance) and the float64\n"
                     "    dequantized dot (loose tolerance); every output written, none infinite.\n"
                     "Default shapes: 67 rows x K 4096 and 67 rows x the type's smallest K (one short pass).\n"
                     "Prints a pass table (rows: types, columns: ncols, cells: passed/instantiations); --save also\n"
                     "writes the JSON report to FILE.\n"
                     "Exit codes: 0 all passed, 5 a check failed, 4 the device faulted, 3 no device, 7 interrupted.",
                     run_verify}};

}  // namespace
}  // namespace temper::cli
