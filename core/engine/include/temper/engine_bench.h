#pragma once
// `temper engine bench`: the user's own llama-bench, with the profile and without it, arms
// interleaved run by run (stock, profile, stock, ...), every run's samples kept; per test the
// median tokens/s of each arm and the speedup with a 95 % CI (docs/llama-cpp.md). The result is a
// BenchRecord, which a profile carries (temper/profile.h).
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "temper/profile.h"

namespace temper::engine {

// Where the hooked engine looks when TEMPER_PROFILE is unset: $XDG_CONFIG_HOME/temper/engine-profile.json,
// else ~/.config/temper/engine-profile.json (hook/src/temper-mmvq-runtime.cu).
std::filesystem::path default_engine_profile();

inline constexpr std::string_view kDefaultBenchTests = "tg128,pp2,pp4,pp8";

// "tg128,pp2,pp4,pp8" as tests with llama-bench's arguments, samples empty. tgN: N generated tokens
// (-p 0 -n N). ppW, W = 1..8: prompt batches W tokens wide, the widths that run through mmvq —
// as upstream's maintainers time them, a 128-token prompt in W-token micro-batches
// (-p 128 -n 0 -ub W): 128 / W graphs per sample. Error(BadInput) naming the bad item.
std::vector<BenchTest> parse_bench_tests(std::string_view list);

// One result row of llama-bench's JSON output (-o json, or jsonl).
struct LlamaBenchRow {
  std::string build_commit, gpu_info, model_filename, model_type;
  int64_t build_number = 0, n_prompt = 0, n_gen = 0, n_ubatch = 0;
  std::vector<double> samples_ts;  // tokens/s of each repetition (from samples_ns when absent)
};
// Error(BadInput) "WHERE: ..." naming the field when the text is not llama-bench's JSON.
std::vector<LlamaBenchRow> parse_llama_bench_json(std::string_view text, const std::string& where);

// The hooked engine's own line among a run's stderr ("temper: profile PATH: N entries for ARCH
// ..." or "temper: profile PATH ignored: WHY; ..."), empty when there is none: the binary is not
// patched (or did not reach its first mmvq launch).
std::string find_engine_line(std::string_view stderr_text);
// The arch and the number of entries it uses, from such a line; empty / -1 when the line says
// the whole file was ignored.
std::string engine_line_arch(const std::string& line);
int engine_line_entries(const std::string& line);

struct BenchOptions {
  std::filesystem::path llama_bench;  // the patched build: the profile arm (and the stock one, unless stock_bench)
  std::filesystem::path stock_bench;  // optional: an unpatched build for the stock arm
  std::filesystem::path model;
  std::filesystem::path profile;      // what the profile arm loads (TEMPER_PROFILE); the stock arm gets TEMPER_PROFILE=
  // Optional: what the stock arm loads instead of no profile (tune's pipeline step compares a profile
  // with and without its pipelined entries). Empty: TEMPER_PROFILE= (stock).
  std::filesystem::path stock_profile;
  std::string tests{kDefaultBenchTests};
  int rounds = 3;                     // runs per arm and test, interleaved
  int repetitions = 5;                // llama-bench -r: samples per run
  std::vector<std::string> extra_args;  // appended to every llama-bench command line (-ngl 99, -fa 1, ...)
  // One run taking longer is stopped (Error(GpuFault)); its output is bounded too (16 MiB a stream).
  std::chrono::seconds run_timeout{3600};
  const std::atomic<bool>* cancel = nullptr;  // set: the running llama-bench is stopped, Error(Cancelled)
};

struct BenchProgress {
  int done = 0, total = 0;  // llama-bench runs
  std::string current;      // "round 2/3 · pp4 · profile"
  double eta_s = 0;
};
// One finished run: its place in bench_sequence(), its result row and the engine's line (tune
// journals these, and hands them back after a kill so they are not run again).
struct BenchRunDone {
  int index = 0;
  LlamaBenchRow row;
  std::string engine_line;
};
struct BenchEvents {
  std::function<void(const BenchProgress&)> progress;
  std::function<void(const BenchRunDone&)> run_done;
  // The journaled runs were dropped (made on another GPU than the one llama-bench runs on now): the
  // bench starts again from its first run.
  std::function<void(const std::string& why)> restarted;
};

struct BenchResult {
  BenchRecord record;
  std::vector<std::string> notes;  // e.g. the profile holds no entry this GPU uses
};

// Error(BadInput) "llama-bench PATH: no such file" / "not an executable file" for either binary
// (tune checks them before its long steps).
void check_bench_binaries(const BenchOptions& options);

// Checks the binaries (check_bench_binaries), the model and the profile first; then runs rounds × tests × (stock, profile). A run that
// fails is Error(GpuFault) with llama-bench's last stderr lines; a profile arm that prints no
// engine line is Error(BadInput): the binary is not patched. `done`: the first runs of the
// sequence, journaled before, taken as they are.
BenchResult run_bench(const BenchOptions& options, const BenchEvents& events = {}, const std::vector<BenchRunDone>& done = {});

// The runs in the order run_bench makes them: round-major, then test; stock before profile in even
// rounds (0, 2, ...), profile first in odd ones, so that neither arm always runs first (measured on an
// H100: a fixed order read as a 1-3 % cost of the second arm in noisy prompt tests).
struct BenchSlot {
  int round = 0, test = 0;
  bool profiled = false;
};
std::vector<BenchSlot> bench_sequence(int rounds, int tests);

}  // namespace temper::engine
