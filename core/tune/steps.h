#pragma once
// Shared inside core/tune only: tune's steps behind one interface. A step is a function of the tune's
// context (TuneContext: the options, the report, the journal and what the steps before it made) and of
// its run (StepRun: the outcome and summary it reports, and its records in the journal — skip, start,
// resume, items). run_step runs one: the cancel check, the events, the timing and the closing record.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/append_log.h"
#include "temper/engine_device.h"
#include "temper/gguf.h"
#include "temper/session.h"
#include "temper/tune.h"

namespace temper::tune::detail {
using nlohmann::json;

// The tune journal: a header naming the model and the engine, then one JSON object a line — a
// step's record ({"step", "input", "outcome", "summary", "seconds", ...}), or an item a step
// journals as it goes (a crossover width, a bench run).
class TuneLog {
 public:
  TuneLog(const std::filesystem::path& path, const json& header);

  // The last record of `step` (nullptr when there is none).
  const json* last(Step step) const;
  // The records after the last one of `step` (e.g. the bench runs after "started").
  std::vector<json> after_last(Step step) const;
  void append(const json& record);

 private:
  AppendLog open(const std::filesystem::path& path, const json& header);

  std::vector<json> records_;  // declared first: open() fills it before log_ is made
  AppendLog log_;
};

// What every step sees: the options, the report and journal, and what the steps before it made.
struct TuneContext {
  TuneContext(const TuneOptions& options, const TuneEvents& events, const std::atomic<bool>& cancelled, const GgufFile& model,
              ModelIdentity id, TuneReport& r, TuneLog& journal)
      : o(options), ev(events), cancel(cancelled), file(model), identity(std::move(id)), report(r), log(journal) {}

  const TuneOptions& o;
  const TuneEvents& ev;
  const std::atomic<bool>& cancel;
  const GgufFile& file;
  const ModelIdentity identity;
  TuneReport& report;
  TuneLog& log;

  engine::ProbeOptions probe;  // the build step's engine probe
  std::string probe_id;        // what identifies it (in the later steps' inputs)
  PlanGrid grid;               // what the sweep measures
  Session session;             // the sweep's
  std::string arch;            // the arch of the sweep's (one) device
  Profile tuned;               // the approve step's: this tune's winners
  // The profile file is shared (other tunes, other models write it meanwhile): every write re-reads it
  // under its lock and applies only this tune's changes (update_profile). `read_back`: the file as this
  // tune last read or wrote it; `as_found`: as it was before this tune, `mine`: that with this tune's
  // changes alone (the replay takes them back out when the profile changes any result).
  Profile read_back, as_found, mine;
  std::optional<std::string> as_found_bytes;
  bool installed_now = false, others_wrote = false;
  // The engine device, started once for the steps that replay, only when one of them runs.
  std::unique_ptr<engine::EngineDevice> device;

  void note(const std::string& text);
  engine::EngineDevice& engine_device();
  // report.installed written to report.profile (this tune's changes to it, under its lock).
  void write_installed();
  // `change` applied to report.installed, written when it changed anything: whether it did.
  bool install(const std::function<void(Profile&)>& change);
};

// One step's run as its function sees it: the report it fills (outcome "done" unless it says
// otherwise, its summary) and its records in the journal.
class StepRun : public StepReport {
 public:
  StepRun(TuneContext& c, Step s);

  // The step's last record (nullptr: none).
  const json* last() const;
  // The last record is a finished run ("done", or "resumed": as complete) of `input`: the step may keep
  // what that run made.
  bool unchanged(const std::string& input) const;
  // The last record is the start of a run of `input` that did not end.
  bool unfinished(const std::string& input) const;
  // Outcome "skipped" or "not asked" with its summary; the step journals no record. Returns the step's
  // (empty) record fields.
  json skipped(std::string why);
  json not_asked(std::string why);
  // Skipped, the input unchanged: "unchanged engine and profile: <what>", and where the step put what it
  // decided before back into the profile (`recorded_again`: the profile had lost it), that too.
  json kept(const std::string& what, bool recorded_again = false);
  // The "started" record of a run of `input` (`extra`: more fields of it).
  void start(const std::string& input, const json& extra = json::object());
  // One item of the run under way, journaled as it is made: {key: value}.
  void journal_item(const char* key, const json& value);
  // The items an unfinished run of `input` journaled under `key`, each handed to `keep` while it takes
  // them (false: that one and the rest are not kept); any kept, the step is resumed (resumed(...)).
  size_t resume(const std::string& input, const char* key, std::string_view what, std::string_view items,
                const std::function<bool(const json&)>& keep);
  // Outcome "resumed", said once: "resuming the <what>: <n> <items> journaled before are kept<tail>".
  void resumed(size_t n, std::string_view what, std::string_view items, std::string_view tail = {});
  // Error(Cancelled) "tune cancelled during <what>" once the tune is cancelled.
  void stop_if_cancelled(const std::string& what) const;
  // The step's own progress event (TuneEvents' crossover, groups, pipeline, token): `done` of `total`.
  void progress(int done, int total) const;

 private:
  TuneContext& c_;
};

// The batch widths a step measures one at a time (the crossover's, the group step's): each of `widths`
// that `done` lacks is measured by `measure(n, replay_done)` and journaled under `key` as it ends;
// the step's progress counts `replays(n)` for every width, those of `done` as made. `done` ends sorted.
template <class Samples>
void measure_widths(StepRun& r, const std::vector<int>& widths, const char* key, std::vector<Samples>& done,
                    const std::function<int(int)>& replays,
                    const std::function<Samples(int, const std::function<void()>&)>& measure) {
  const auto measured = [&](int n) { return std::any_of(done.begin(), done.end(), [&](const Samples& w) { return w.ncols == n; }); };
  int runs = 0, total = 0;
  for (int n : widths) {
    total += replays(n);
    if (measured(n)) runs = total;
  }
  for (int n : widths) {
    if (measured(n)) continue;
    Samples w = measure(n, [&] { r.progress(++runs, total); });
    r.journal_item(key, to_json(w));
    done.push_back(std::move(w));
  }
  std::sort(done.begin(), done.end(), [](const Samples& a, const Samples& b) { return a.ncols < b.ncols; });
}

// Runs one step: the cancel check before it, its start and end events, its timing and its journal
// record (none when it was skipped or not asked). `body` fills the run and returns the record's own
// fields (its input, results).
using StepBody = json (*)(TuneContext&, StepRun&);
void run_step(TuneContext& c, Step s, const std::string& what, StepBody body);

// The steps, in tune's order (steps_engine.cpp, steps_profile.cpp, steps_replay.cpp, steps_bench.cpp).
json check_step(TuneContext& c, StepRun& r);
json patch_step(TuneContext& c, StepRun& r);
json build_step(TuneContext& c, StepRun& r);
PlanGrid sweep_grid(const TuneOptions& o);  // Error(BadInput) for a bad --ncols
json sweep_step(TuneContext& c, StepRun& r);
json approve_step(TuneContext& c, StepRun& r);
json install_step(TuneContext& c, StepRun& r);
json crossover_step(TuneContext& c, StepRun& r);
// Another model's approved path choices reach this model too, at widths this tune did not measure: said.
void note_other_models_paths(TuneContext& c);
json groups_step(TuneContext& c, StepRun& r);
json replay_step(TuneContext& c, StepRun& r);
json pipeline_step(TuneContext& c, StepRun& r);
json token_step(TuneContext& c, StepRun& r);
json bench_step(TuneContext& c, StepRun& r);

// ---- shared by the steps ----
inline constexpr uint64_t kMaxProbeBytes = uint64_t{4} << 30;  // a probe with every kernel of the full set is far smaller

std::string digest(std::initializer_list<std::string> parts);
std::string fmt(const char* format, double v);
// A state file's content, as a journal record keeps it: the step is skipped only while the file is
// the one that step wrote (another model's file copied there is measured again, not trusted).
std::string state_file_hash(const std::filesystem::path& p);
// The same profile content, whatever order its entries are in (a file read back lists them its own way).
bool same_profile(Profile a, Profile b);
int approved_count(const Profile& p, const std::string& arch);
// Whether the engine's ggml is ggml-small-k's commit (temper/engine_versions.h), which decides MUL_MAT's
// path inline, where the hook cannot reach: only the MoE cap moves.
bool old_ggml(engine::EngineDevice& dev);
// The engine's version as defaults' tables name it: ggml-small-k's when old_ggml, else ggml-halve-iters'.
std::string ggml_version(engine::EngineDevice& dev);
// The device and the evidence a step's records were made for, as its journal record keeps them.
json device_json(const ProfileDevice& d);
ProfileDevice device_from_json(const json& d);
json evidence_json(const Provenance& p);
Provenance evidence_from_json(const json& e);
// The bench's tg test: what the pipeline step's llama-bench decides by and the token step predicts (its
// first tg test, else tg128).
BenchTest tg_test(const TuneOptions& o);

}  // namespace temper::tune::detail
