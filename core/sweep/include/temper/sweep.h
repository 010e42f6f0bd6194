#pragma once
// The sweep engine: plan (shapes × ncols × configs), measure each item on a device (verify against
// the CPU reference, then time until the median is known to ±1%), journal every result as it
// lands, pick winners against the default config and estimate the model-level effect.
//
//   Session s = new_session(setup, devices);        // plans, copy bandwidth, identities
//   double eta = estimated_seconds(s);
//   Journal journal = Journal::create("x.journal", s);  // or read_journal + resume_session + reopen
//   run_session(s, devices, &journal, progress, cancel);
//   save_session(s, "x.temper-session.json");
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "temper/append_log.h"
#include "temper/backend.h"
#include "temper/session.h"

namespace temper {

// Engine versions whose default tables Temper knows; the first is the default.
std::span<const std::string_view> known_engines();

PlanGrid full_grid(std::string engine);   // ncols 1,2,4,8 × nwarps 1..16 × rows_per_block 1..8
PlanGrid quick_grid(std::string engine);  // ncols 1 × nwarps 1,2,4,8 × rows_per_block 1,2

// Checks a grid (positive powers of two, nwarps ≤ 16, rows_per_block ≤ 16, ncols 1..8, a known
// engine); Error(BadInput) naming the bad value.
void validate_grid(const PlanGrid& grid);

// The plan for one device. Shapes are measured in order of bytes_per_token (largest first), each
// at every ncols (ascending); per (shape, ncols) the default config comes first, then the small-K
// variant, then the grid. Configs this device cannot run are listed in `excluded` with the reason.
Plan make_plan(std::span<const Shape> shapes, const PlanGrid& grid, const Device& device);

// Rough wall time of a plan on a device with `bandwidth_gbs` (verification, warm-up, timing).
double estimated_seconds(const Plan& plan, const SweepOptions& options, double bandwidth_gbs);

// Everything about a sweep that is known before it runs.
struct SweepSetup {
  std::vector<Shape> shapes;
  ModelIdentity model;
  PlanGrid grid;
  SweepOptions options;  // seed 0: a fresh random one
  KernelSource kernel_source;  // engine empty for kind temper: the grid's engine
};

// A new session: identities, plans and measured copy bandwidth for each device (in order).
Session new_session(const SweepSetup& setup, std::span<Device* const> devices);
// Wall time of the whole session: the slowest device (devices run in parallel), minus work done.
double estimated_seconds(const Session& session);

struct Progress {
  size_t done = 0, total = 0;  // results, all devices together (resumed ones count as done)
  std::string current;         // "q4_K 14336×4096 ncols 1 · nwarps 4 rows 1 (default)"
  double eta_s = 0;
  int device = 0;              // DeviceInfo::index of the device reporting
};
// Called from the sweep's worker threads, one call at a time.
using ProgressFn = std::function<void(const Progress&)>;
// Set to true (from any thread or a signal handler) to stop; honoured between launch batches.
using CancelFlag = std::atomic<bool>;

// Append-only record of a running sweep: a header line (the session without results), then one
// JSON line per result and one {"confirmation": {...}} line per interleaved re-measure, each
// flushed and fsync'd before the sweep goes on.
struct JournalContents {
  Session header;
  std::vector<Result> results;
  std::vector<Confirmation> confirmations;
  bool dropped_last_line = false;  // a line torn by a crash was ignored
  bool missing_newline = false;    // the last good line lacks its '\n'
  size_t valid_bytes = 0;          // bytes up to and including the last good line
};
// Tolerates a torn or garbled last line; anything wrong elsewhere is Error(BadInput) with file:line.
JournalContents read_journal(const std::filesystem::path& path);
// The same, over a journal's text; `name` stands for the file in messages.
JournalContents parse_journal(std::string_view text, const std::string& name);

class Journal {
 public:
  static Journal create(const std::filesystem::path& path, const Session& header, const WriteOptions& options = {});
  // Continues a journal read by read_journal: cuts a torn last line off first.
  static Journal reopen(const std::filesystem::path& path, const JournalContents& contents);
  void append(const Result& r);  // thread-safe
  void append(const Confirmation& c);  // thread-safe
  const std::filesystem::path& path() const { return log_.path(); }

 private:
  explicit Journal(AppendLog log);
  AppendLog log_;
};

// The session recorded in a journal, with its results and confirmations so far (status "running").
Session resume_session(const JournalContents& contents);

// Measures every item of every device's plan not yet in session.results: one worker thread per
// device, results tagged with the device index, each appended to `journal` (if any) as it lands.
// Afterwards winners and estimates are filled in and status is "complete", "cancelled" or "failed"
// (a device's fault is recorded in its SessionDevice::error; the other devices carry on).
void run_session(Session& session, std::span<Device* const> devices, Journal* journal, const ProgressFn& progress,
                 const CancelFlag& cancel);

// Winners and estimates from the results so far (run_session calls it; a loaded session may too).
void finish_session(Session& session);

// Opening a saved session for reading (GUI, `temper session`, `profile export`, `roofline`): verdicts
// and estimates are derived data, recomputed from the results by this build, so every face shows
// the same verdicts for one file (a session from an older writer included).
Session read_session(const std::filesystem::path& path);
Session read_session(const nlohmann::json& j, const std::string& where);

// Per (device, shape, ncols): a config wins only when its CI lies wholly below the default's.
std::vector<Verdict> select_verdicts(const Session& session);

// Presentation: counts of results by status name ("ok", "failed", "invalid", "error"); the text
// summary (devices, failures, the per-shape winner table, the estimate) that `temper sweep` ends
// with and `temper session` prints; and its JSON form (session minus plans and results).
std::map<std::string, int> status_counts(const Session& s);
std::string format_summary(const Session& s);
nlohmann::json summary_json(const Session& s);

// Two sweeps of the same shapes (e.g. run twice on one device): do the winners agree, and how far
// apart are the medians? A tuner whose winners flip between runs is measuring noise.
struct SessionComparison {
  int winners_compared = 0;  // (device, shape, ncols) with a verdict in both
  int winners_agree = 0;     // same verdict and same config
  std::vector<std::string> disagreements;  // "q4_K 14336x4096 ncols 1: winner 2x1 vs default stays"
  int confirmed_a = 0, confirmed_b = 0;    // winners of each confirmed by an interleaved re-measure
  int medians_compared = 0;  // results verified and timed in both
  // |a − b| / mean of the two medians, over those results.
  double spread_median = 0, spread_p90 = 0, spread_max = 0;
  std::string spread_max_at;  // which result
  // kernel_label of each session's kernel source: an engine sweep beside a Temper-kernel sweep of
  // the same shapes compares the two kernels, not two runs.
  std::string kernel_a, kernel_b;
  // Per (device, shape, ncols) with a verdict in both, in the first session's order: each side's
  // default and best (the engine_table.py table; the GUI's comparison view shows these rows).
  struct Side {
    std::string verdict;
    Config default_config, config;  // config: the winner, or the default when it stays
    double default_us = 0, best_us = 0;
    bool confirmed = false;
  };
  struct Row : GroupKey {
    Side a, b;
    bool agree = false;  // same verdict and same config
  };
  std::vector<Row> rows;
  // Each session's GEMV-share estimate (default -> tuned), as its own summary prints it.
  std::vector<Estimate> estimates_a, estimates_b;
};
// Why two sessions are not sweeps of one model (GGUF header hash, else file name and size; synthetic
// shapes: none in common), for a clear refusal; empty when they are.
std::string model_mismatch(const Session& a, const Session& b);
SessionComparison compare_sessions(const Session& a, const Session& b);
std::string format_comparison(const SessionComparison& c);
nlohmann::json to_json(const SessionComparison& c);

// Opens every device of a backend (for `--device all`).
std::vector<std::unique_ptr<Device>> open_all(Backend& backend);

}  // namespace temper
