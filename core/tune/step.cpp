// Tune's one step runner and what its steps share: the journal, the context, the run's journal helpers.
#include <chrono>

#include "steps.h"

#include "temper/content_hash.h"
#include "temper/engine.h"
#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/format.h"
#include "temper/input.h"

namespace temper::tune::detail {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kJournalKind = "tune journal", kJournalOwner = "temper tune";

// A step's last record has this input and outcome; "done" also matches a step that finished after
// resuming ("resumed"): its result is as complete.
bool same_input(const json* record, const std::string& input, std::string_view outcome) {
  if (!record || record->value("input", "") != input) return false;
  const std::string was = record->value("outcome", "");
  return was == outcome || (outcome == "done" && was == "resumed");
}

}  // namespace

// ---- the journal ----

TuneLog::TuneLog(const fs::path& path, const json& header) : log_(open(path, header)) {}

const json* TuneLog::last(Step step) const {
  for (auto it = records_.rbegin(); it != records_.rend(); ++it)
    if (it->value("step", "") == step_name(step)) return &*it;
  return nullptr;
}

std::vector<json> TuneLog::after_last(Step step) const {
  std::vector<json> out;
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->value("step", "") == step_name(step)) break;
    out.insert(out.begin(), *it);
  }
  return out;
}

void TuneLog::append(const json& record) {
  log_.append(record.dump() + "\n");
  records_.push_back(record);
}

AppendLog TuneLog::open(const fs::path& path, const json& header) {
  const std::string first = header.dump() + "\n";
  std::error_code ec;
  if (!fs::exists(path, ec)) return AppendLog::create(path, first, kJournalKind, kJournalOwner);
  const std::string text = read_input(path, kMaxJournalInputBytes, kJournalKind);
  std::vector<json> lines;
  const LogLines read = split_log(text, path_text(path), kJournalKind, [&](std::string_view line) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return false;
    lines.push_back(std::move(j));
    return true;
  });
  // Another engine or model under the same name (or a newer Temper's journal): start afresh.
  if (lines.front() != header) return AppendLog::create(path, first, kJournalKind, kJournalOwner);
  records_.assign(lines.begin() + 1, lines.end());
  return AppendLog::reopen(path, read.valid_bytes, read.missing_newline, kJournalKind, kJournalOwner);
}

// ---- the context ----

void TuneContext::note(const std::string& text) {
  report.notes.push_back(text);
  if (ev.note) ev.note(text);
}

engine::EngineDevice& TuneContext::engine_device() {
  if (!device) device = std::make_unique<engine::EngineDevice>(probe);
  return *device;
}

void TuneContext::write_installed() {
  mine = rebase_profile(read_back, report.installed, mine);
  const Profile wrote = update_profile(report.profile, read_back, report.installed);
  others_wrote = others_wrote || !same_profile(wrote, report.installed);
  report.installed = read_back = wrote;
  installed_now = true;
}

bool TuneContext::install(const std::function<void(Profile&)>& change) {
  const Profile before = report.installed;
  change(report.installed);
  if (to_json(report.installed) == to_json(before)) return false;
  write_installed();
  return true;
}

// ---- a step's run ----

StepRun::StepRun(TuneContext& c, Step s) : c_(c) {
  step = s;
  outcome = "done";
}

const json* StepRun::last() const { return c_.log.last(step); }

bool StepRun::unchanged(const std::string& input) const { return same_input(last(), input, "done"); }

bool StepRun::unfinished(const std::string& input) const { return same_input(last(), input, "started"); }

json StepRun::skipped(std::string why) {
  outcome = "skipped";
  summary = std::move(why);
  return {};
}

json StepRun::not_asked(std::string why) {
  outcome = "not asked";
  summary = std::move(why);
  return {};
}

json StepRun::kept(const std::string& what, bool recorded_again) {
  return skipped("unchanged engine and profile: " + what +
                 (recorded_again ? "; recorded again in " + path_text(c_.report.profile) : std::string()));
}

void StepRun::start(const std::string& input, const json& extra) {
  json record = {{"step", step_name(step)}, {"input", input}, {"outcome", "started"}, {"date", utc_now_iso8601()}};
  record.update(extra);
  c_.log.append(record);
}

void StepRun::journal_item(const char* key, const json& value) { c_.log.append({{key, value}}); }

size_t StepRun::resume(const std::string& input, const char* key, std::string_view what, std::string_view items,
                       const std::function<bool(const json&)>& keep) {
  if (!unfinished(input)) return 0;
  size_t n = 0;
  for (const json& j : c_.log.after_last(step)) {
    if (!j.contains(key)) continue;
    if (!keep(j[key])) break;
    ++n;
  }
  if (n) resumed(n, what, items);
  return n;
}

void StepRun::resumed(size_t n, std::string_view what, std::string_view items, std::string_view tail) {
  outcome = "resumed";
  c_.note("resuming the " + std::string(what) + ": " + std::to_string(n) + " " + std::string(items) + " journaled before are kept" +
          std::string(tail));
}

void StepRun::stop_if_cancelled(const std::string& what) const {
  if (c_.cancel.load()) fail(ErrorKind::Cancelled, "tune cancelled during " + what);
}

void StepRun::progress(int done, int total) const {
  const std::function<void(int, int)>* event = nullptr;
  switch (step) {
    case Step::Crossover: event = &c_.ev.crossover; break;
    case Step::Groups: event = &c_.ev.groups; break;
    case Step::Pipeline: event = &c_.ev.pipeline; break;
    case Step::Token: event = &c_.ev.token; break;
    default: break;
  }
  if (event && *event) (*event)(done, total);
}

// ---- the runner ----

void run_step(TuneContext& c, Step s, const std::string& what, StepBody body) {
  if (c.cancel.load()) fail(ErrorKind::Cancelled, "tune cancelled before the " + std::string(step_name(s)) + " step");
  if (c.ev.step_started) c.ev.step_started(s, what);
  const auto t0 = std::chrono::steady_clock::now();
  StepRun r(c, s);
  const json extra = body(c, r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json record = {{"step", step_name(s)}, {"outcome", r.outcome}, {"summary", r.summary}, {"seconds", r.seconds},
                 {"date", utc_now_iso8601()}};
  if (extra.is_object()) record.update(extra);
  if (r.outcome != "skipped" && r.outcome != "not asked") c.log.append(record);
  const StepReport& done = r;
  c.report.steps.push_back(done);
  if (c.ev.step_finished) c.ev.step_finished(done);
}

// ---- shared by the steps ----

std::string digest(std::initializer_list<std::string> parts) {
  ContentHash h;
  for (const auto& p : parts) h.add(p);
  return h.hex();
}

std::string fmt(const char* format, double v) { return format_number(format, v); }

std::string state_file_hash(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return {};
  return content_hash(read_input(p, kMaxJsonInputBytes, "tune state file"));
}

bool same_profile(Profile a, Profile b) {
  const auto by_key = [](const ProfileEntry& x, const ProfileEntry& y) { return x.key < y.key; };
  std::sort(a.entries.begin(), a.entries.end(), by_key);
  std::sort(b.entries.begin(), b.entries.end(), by_key);
  return to_json(a) == to_json(b);
}

int approved_count(const Profile& p, const std::string& arch) {
  int n = 0;
  for (const auto& e : p.entries) n += e.approval == Approval::Approved && (arch.empty() || e.key.arch == arch);
  return n;
}

bool old_ggml(engine::EngineDevice& dev) {
  return dev.kernel_source().ggml_commit.starts_with(engine_version(EngineFamily::SmallK).commit);
}

std::string ggml_version(engine::EngineDevice& dev) {
  return std::string(engine_version(old_ggml(dev) ? EngineFamily::SmallK : EngineFamily::HalveIters).name);
}

json device_json(const ProfileDevice& d) {
  return json{{"name", d.name}, {"compute_units", d.compute_units}, {"memory_mib", d.memory_mib}};
}

ProfileDevice device_from_json(const json& d) { return ProfileDevice{d.at("name"), d.at("compute_units"), d.at("memory_mib")}; }

json evidence_json(const Provenance& p) {
  return json{{"session_id", p.session_id}, {"device_name", p.device_name}, {"device_arch", p.device_arch},
              {"engine", p.engine}, {"kernel", p.kernel}};
}

Provenance evidence_from_json(const json& e) {
  Provenance p;
  p.session_id = e.at("session_id");
  p.device_name = e.at("device_name");
  p.device_arch = e.at("device_arch");
  p.engine = e.at("engine");
  p.kernel = e.at("kernel");
  return p;
}

BenchTest tg_test(const TuneOptions& o) {
  if (o.bench)
    for (const BenchTest& t : engine::parse_bench_tests(o.bench->tests))
      if (t.n_gen > 0) return t;
  return engine::parse_bench_tests("tg128").front();
}

}  // namespace temper::tune::detail
