#pragma once
// The `temper` command line: each sub-command lives in its own cmd_*.cpp and registers itself.
// Options are parsed by CLI11 (one parser for every command: validation, --help, subcommands);
// a command declares its options on its CLI::App and returns the action to run once they parse.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace temper::cli {

using Action = std::function<int()>;  // returns the exit code; may throw temper::Error

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `temper help`
  std::string_view details;  // prose after the option list in `temper help NAME`
  std::function<Action(CLI::App&)> define;  // declares the options, returns what to run
};

std::vector<Command>& registry();

struct Registrar {
  explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

// The one integer parser of the CLI: the whole text is a decimal integer in lo..hi, else
// Error(BadInput) "WHAT: expected an integer LO..HI, got 'TEXT'".
int64_t parse_integer(std::string_view text, std::string_view what, int64_t lo, int64_t hi);
// Its check as a CLI11 validator: the whole text is a decimal integer in lo..hi; otherwise
// "OPTION: expected an integer LO..HI, got 'TEXT'" (exit 2).
CLI::Validator integer_in(int64_t lo, uint64_t hi);
// Seconds: a finite number in (0, hi].
CLI::Validator seconds_up_to(double hi);
// A fraction in [0, hi]; the message gives `example` ("0.01 = 1%").
CLI::Validator fraction_up_to(int hi, const std::string& example);
// One of the listed words.
CLI::Validator one_of(std::vector<std::string> words);
// Any check that throws temper::Error(BadInput) on bad text (the core list parsers); its message
// follows the option's name.
CLI::Validator checked_by(std::function<void(const std::string&)> parse);

// Shared option spellings.
CLI::Option* add_json(CLI::App& app, bool& json);
CLI::Option* add_output(CLI::App& app, std::string& path, std::string what = "output file");
CLI::Option* add_force(CLI::App& app, bool& force);  // --force: replace read-only outputs
CLI::Option* add_device(CLI::App& app, int& device);  // --device N (default 0)
CLI::Option* add_type(CLI::App& app, std::string& type, std::string what);  // --type T (one ggml type)
CLI::Option* add_types(CLI::App& app, std::string& list);  // --types q4_0,q4_K,...
CLI::Option* add_ncols(CLI::App& app, std::string& list);  // --ncols 1,2,4 or 1-8
CLI::Option* add_engine(CLI::App& app, std::string& engine);  // --engine VERSION (default the newest known)
CLI::Option* add_min_speedup(CLI::App& app, double& min_speedup);  // --min-speedup FRACTION (approve significant)

}  // namespace temper::cli

namespace temper::engine {
struct ProbeOptions;
struct BenchOptions;
}
namespace temper::cli {
// The engine probe a command talks to (sweep, profile verify, engine replay): `--probe PATH`, else
// the hooked engine built (or found in the cache) from `--engine-src DIR` for `--arch` (default:
// this machine's first GPU) and `--kernel-set`, with the provenance a session records.
struct EngineProbeArgs {
  std::string probe, engine_src, arch, kernel_set = "full";
  bool given() const { return !probe.empty() || !engine_src.empty(); }
};
// Declares --probe, --engine-src, --arch and --kernel-set on `app` (--arch only when `with_arch`:
// profile verify's --arch already names a profile's arch).
void add_engine_probe(CLI::App& app, EngineProbeArgs& e, bool with_arch = true);
// Defined in cmd_engine.cpp.
engine::ProbeOptions engine_probe_options(const EngineProbeArgs& e);
// llama-bench with and without a profile (`engine bench`, `tune`): the binaries and how to run them.
struct BenchArgs {
  std::string llama_bench, stock_bench, tests, extra;
  int rounds = 3, repetitions = 5, timeout_s = 3600;
};
// Declares --llama-bench (required when `required`), --stock-bench, --tests, --rounds, --repetitions,
// --bench-timeout and --bench-args.
void add_bench_args(CLI::App& app, BenchArgs& b, bool required);
// Defined in cmd_engine.cpp; model and profile are the caller's.
engine::BenchOptions bench_options(const BenchArgs& b);
}  // namespace temper::cli
