// `temper tune`: the steps in order, each skipped while its input is unchanged, in one journal.
#include "temper/tune.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "temper/append_log.h"
#include "temper/content_hash.h"
#include "temper/defaults.h"
#include "temper/engine.h"
#include "temper/engine_device.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/fileio.h"
#include "temper/gguf.h"
#include "temper/input.h"
#include "temper/model.h"
#include "temper/plan.h"
#include "temper/groups.h"
#include "temper/pipeline.h"
#include "temper/token.h"
#include "temper/token_probe.h"

namespace temper::tune {
namespace fs = std::filesystem;
using nlohmann::json;

std::string_view step_name(Step s) {
  switch (s) {
    case Step::Check: return "check";
    case Step::Patch: return "patch";
    case Step::Build: return "build";
    case Step::Sweep: return "sweep";
    case Step::Approve: return "approve";
    case Step::Install: return "install";
    case Step::Crossover: return "crossover";
    case Step::Groups: return "groups";
    case Step::Pipeline: return "pipeline";
    case Step::Replay: return "replay";
    case Step::Token: return "token";
    case Step::Bench: return "bench";
  }
  return "?";
}

namespace {

constexpr std::string_view kMagic = "temper-tune-journal";
constexpr int kVersion = 1;
constexpr std::string_view kKind = "tune journal", kOwner = "temper tune";
constexpr uint64_t kMaxProbeBytes = uint64_t{4} << 30;  // a probe with every kernel of the full set is far smaller

// A path as text for journals and messages (bytes that are not UTF-8 as \xNN: JSON takes only UTF-8).
std::string absolute_text(const fs::path& p) { return p.empty() ? std::string() : path_text(fs::absolute(p).lexically_normal()); }

std::string digest(std::initializer_list<std::string> parts) {
  ContentHash h;
  for (const auto& p : parts) h.add(p);
  return h.hex();
}

std::string fmt(const char* format, double v) { return format_number(format, v); }

// The tune journal: a header naming the model and the engine, then one JSON object a line — a
// step's record ({"step", "input", "outcome", "summary", "seconds", ...}), or a bench run.
class TuneLog {
 public:
  TuneLog(const fs::path& path, const json& header) : log_(open(path, header)) {}

  // The last record of `step` (nullptr when there is none).
  const json* last(Step step) const {
    for (auto it = records_.rbegin(); it != records_.rend(); ++it)
      if (it->value("step", "") == step_name(step)) return &*it;
    return nullptr;
  }
  // The records after the last one of `step` (e.g. the bench runs after "started").
  std::vector<json> after_last(Step step) const {
    std::vector<json> out;
    for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
      if (it->value("step", "") == step_name(step)) break;
      out.insert(out.begin(), *it);
    }
    return out;
  }
  void append(const json& record) {
    log_.append(record.dump() + "\n");
    records_.push_back(record);
  }

 private:
  AppendLog open(const fs::path& path, const json& header) {
    const std::string first = header.dump() + "\n";
    std::error_code ec;
    if (!fs::exists(path, ec)) return AppendLog::create(path, first, kKind, kOwner);
    const std::string text = read_input(path, kMaxJournalInputBytes, kKind);
    std::vector<json> lines;
    const LogLines read = split_log(text, path_text(path), kKind, [&](std::string_view line) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return false;
      lines.push_back(std::move(j));
      return true;
    });
    // Another engine or model under the same name (or a newer Temper's journal): start afresh.
    if (lines.front() != header) return AppendLog::create(path, first, kKind, kOwner);
    records_.assign(lines.begin() + 1, lines.end());
    return AppendLog::reopen(path, read.valid_bytes, read.missing_newline, kKind, kOwner);
  }

  std::vector<json> records_;  // declared first: open() fills it before log_ is made
  AppendLog log_;
};

// A step's last record has this input and outcome; "done" also matches a step that finished after
// resuming ("resumed"): its result is as complete.
bool same_input(const json* record, const std::string& input, std::string_view outcome = "done") {
  if (!record || record->value("input", "") != input) return false;
  const std::string was = record->value("outcome", "");
  return was == outcome || (outcome == "done" && was == "resumed");
}

std::string sweep_summary(const Session& s) {
  int winners = 0, confirmed = 0;
  for (const Verdict& v : s.verdicts) winners += v.is_winner(), confirmed += v.is_winner() && v.confirmed;
  size_t measured = 0;
  for (const auto& [status, n] : status_counts(s))
    if (status == "ok") measured = size_t(n);
  return std::to_string(s.shapes.size()) + " shapes, " + std::to_string(measured) + " configs verified and timed, " +
         std::to_string(winners) + " winners (" + std::to_string(confirmed) + " confirmed by an interleaved re-measure)";
}

// The arch of the sweep's (one) device.
std::string session_arch(const Session& s) { return s.devices.empty() ? std::string() : s.devices.front().info.arch; }

int approved_count(const Profile& p, const std::string& arch) {
  int n = 0;
  for (const auto& e : p.entries) n += e.approval == Approval::Approved && (arch.empty() || e.key.arch == arch);
  return n;
}

std::string replay_summary(const json& r) {
  return "GEMV time per token " + fmt("%.1f", r["stock"]["median_us"].get<double>()) + " µs stock, " +
         fmt("%.1f", r["profiled"]["median_us"].get<double>()) + " µs with the profile: speedup " +
         fmt("%.3f", r["speedup"].get<double>()) + " [" + fmt("%.3f", r["speedup_low"].get<double>()) + ", " +
         fmt("%.3f", r["speedup_high"].get<double>()) + "], predicted " + fmt("%.3f", r["predicted_speedup"].get<double>()) +
         "; " + std::to_string(r["profiled"]["tuned_launches"].get<int64_t>()) + " of " +
         std::to_string(r["profiled"]["mmvq_launches"].get<int64_t>()) + " mmvq launches tuned";
}

std::string crossover_summary(const std::vector<CrossoverCell>& cells) {
  int approved = 0, pending = 0;
  std::set<int> widths;
  for (const CrossoverCell& c : cells) {
    approved += c.record == Approval::Approved;
    pending += c.record == Approval::Pending;
    widths.insert(c.ncols);
  }
  std::string w;
  for (int n : widths) w += (w.empty() ? "" : ", ") + std::to_string(n);
  return std::to_string(cells.size()) + " (type, launch, batch width) measured at ncols " + (w.empty() ? "-" : w) + ": " +
         std::to_string(approved) + " path choices approved, " + std::to_string(pending) + " pending (not significant)";
}

std::string bench_summary(const BenchRecord& b) {
  std::string s;
  for (const auto& t : b.tests)
    s += (s.empty() ? "" : "; ") + t.name + " " + fmt("%.3f", t.speedup) + " [" + fmt("%.3f", t.speedup_low) + ", " +
         fmt("%.3f", t.speedup_high) + "]";
  return "llama-bench speedup " + s;
}

json row_json(const engine::LlamaBenchRow& r) {
  return {{"build_commit", r.build_commit}, {"build_number", r.build_number}, {"gpu_info", r.gpu_info},
          {"model_filename", r.model_filename}, {"model_type", r.model_type}, {"n_prompt", r.n_prompt},
          {"n_gen", r.n_gen}, {"n_ubatch", r.n_ubatch}, {"samples_ts", r.samples_ts}};
}

// An exclusive lock on a state folder (flock on its "tune.lock"), held while the tune runs.
class StateLock {
 public:
  explicit StateLock(const fs::path& dir) {
    const fs::path path = dir / "tune.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) fail(ErrorKind::Io, "cannot open " + path_text(path) + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fail(ErrorKind::BadInput, "another temper tune of this model and engine is running (its state folder " +
                                    path_text(dir) + " is locked): wait for it to end, or stop it");
    }
  }
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;
  ~StateLock() { ::close(fd_); }

 private:
  int fd_ = -1;
};

// Tune reads the profile back and rewrites it in place several times: it must be a regular file (or
// a new path) in a folder that takes a file; anything else is refused before the first step.
void check_profile_output(const fs::path& profile) {
  struct stat st{};
  if (::stat(profile.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(ErrorKind::BadInput, path_text(profile) + " is " + node_kind(st.st_mode) +
                                  ": tune's profile must be a regular file (it is read back and merged as tune goes)");
  std::error_code ec;
  if (const fs::path dir = profile.parent_path(); !dir.empty()) fs::create_directories(dir, ec);
  check_output(profile);
}

// The same profile content, whatever order its entries are in (a file read back lists them its own way).
bool same_profile(Profile a, Profile b) {
  const auto by_key = [](const ProfileEntry& x, const ProfileEntry& y) { return x.key < y.key; };
  std::sort(a.entries.begin(), a.entries.end(), by_key);
  std::sort(b.entries.begin(), b.entries.end(), by_key);
  return to_json(a) == to_json(b);
}

// A state file's content, as a journal record keeps it: the step is skipped only while the file is
// the one that step wrote (another model's file copied there is measured again, not trusted).
std::string state_file_hash(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return {};
  return content_hash(read_input(p, kMaxJsonInputBytes, "tune state file"));
}

}  // namespace

fs::path state_dir(const TuneOptions& o) {
  return user_cache_dir("tune") / digest({absolute_text(o.model), absolute_text(o.engine_src.empty() ? o.probe : o.engine_src)});
}

Profile install_profile(const Profile& current, const Profile& tuned, const Session& session) {
  std::set<ProfileKey> measured;
  for (const Verdict& v : session.verdicts)
    if (const SessionDevice* d = find_device(session, v.device))
      measured.insert(ProfileKey(d->info.arch, v, v.ncols, profile_device(d->info)));
  Profile p = current;
  std::erase_if(p.entries, [&](const ProfileEntry& e) { return measured.count(e.key) || find_entry(tuned, e.key); });
  p.entries.insert(p.entries.end(), tuned.entries.begin(), tuned.entries.end());
  std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
  for (const auto& s : tuned.sessions)
    if (std::find(p.sessions.begin(), p.sessions.end(), s) == p.sessions.end()) p.sessions.push_back(s);
  // "model" is informative: the names of the models whose entries the file holds, once each.
  std::vector<std::string> models;
  std::stringstream names(p.model);
  for (std::string m; std::getline(names, m, ',');)
    if (const size_t b = m.find_first_not_of(' '); b != std::string::npos) models.push_back(m.substr(b));
  if (std::find(models.begin(), models.end(), tuned.model) == models.end()) models.push_back(tuned.model);
  p.model.clear();
  for (const auto& m : models) p.model += (p.model.empty() ? "" : ", ") + m;
  p.source = std::string(kSourceTemper);
  return p;
}

namespace {

TuneReport run_steps(const TuneOptions& o, const TuneEvents& ev) {
  if (o.model.empty()) fail(ErrorKind::BadInput, "expected a model file (MODEL.gguf)");
  if (o.engine_src.empty() == o.probe.empty())
    fail(ErrorKind::BadInput, "expected --engine-src DIR (a ggml / llama.cpp tree) or --probe PATH (a ready temper-probe), one of them");
  if (o.patch && o.engine_src.empty()) fail(ErrorKind::BadInput, "--patch needs --engine-src DIR (the tree to patch)");
  if (!o.probe.empty()) ::close(open_input(o.probe, kMaxProbeBytes, "temper-probe").fd);  // a FIFO or a device: refused now
  if (o.bench) {  // before the long steps, not after them
    engine::check_bench_binaries(*o.bench);
    engine::parse_bench_tests(o.bench->tests);
  }
  const std::atomic<bool> never{false};
  const std::atomic<bool>& cancel = o.cancel ? *o.cancel : never;
  auto check_cancel = [&](Step s) {
    if (cancel.load()) fail(ErrorKind::Cancelled, "tune cancelled before the " + std::string(step_name(s)) + " step");
  };
  const GgufFile file = GgufFile::open(o.model);
  const ModelIdentity identity = model_identity(describe_model(file));

  TuneReport report;
  report.state_dir = state_dir(o);
  std::error_code ec;
  ensure_private_dir(report.state_dir.parent_path());
  ensure_private_dir(report.state_dir);
  // One tune per (model, engine) at a time: the second is refused at once, in one line.
  const StateLock state_lock(report.state_dir);
  report.journal = report.state_dir / "tune.journal";
  report.session = report.state_dir / "sweep.session.json";
  report.profile = o.output.empty() ? engine::default_engine_profile() : o.output;
  check_profile_output(report.profile);
  TuneLog log(report.journal, json{{"journal", kMagic}, {"journal_version", kVersion}, {"model", absolute_text(o.model)},
                                   {"engine", absolute_text(o.engine_src.empty() ? o.probe : o.engine_src)}});
  auto note = [&](const std::string& text) {
    report.notes.push_back(text);
    if (ev.note) ev.note(text);
  };

  // Runs one step: its start and end events, its timing and its journal record (none when it did
  // nothing). `body` fills the report and returns the record's own fields (its input, results).
  auto run_step = [&](Step s, const std::string& what, const std::function<json(StepReport&)>& body) {
    check_cancel(s);
    if (ev.step_started) ev.step_started(s, what);
    const auto t0 = std::chrono::steady_clock::now();
    StepReport r;
    r.step = s;
    r.outcome = "done";
    json extra = body(r);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    json record = {{"step", step_name(s)}, {"outcome", r.outcome}, {"summary", r.summary}, {"seconds", r.seconds},
                   {"date", utc_now_iso8601()}};
    if (extra.is_object()) record.update(extra);
    if (r.outcome != "skipped" && r.outcome != "not asked") log.append(record);
    report.steps.push_back(r);
    if (ev.step_finished) ev.step_finished(r);
  };

  // ---- check, patch, build: the engine's probe and what identifies it ----
  engine::ProbeOptions probe;
  std::string probe_id;
  engine::KernelSet set = o.build.set;
  run_step(Step::Check, "the engine tree", [&](StepReport& r) -> json {
    if (o.engine_src.empty()) {
      r.outcome = "not asked";
      r.summary = "a ready probe: " + path_text(o.probe);
      return {};
    }
    const engine::CheckReport c = engine::check(o.engine_src);
    const std::string tree = std::string(engine::tree_kind_name(c.tree.kind)) + " tree at " + path_text(c.tree.root) +
                             " (ggml commit " + (c.tree.commit.empty() ? "unknown" : c.tree.commit.substr(0, 12)) + ")";
    if (c.state == engine::HookState::Patched) {
      r.summary = tree + ", patched with hook v" + std::to_string(c.patched_version);
      if (c.patched_version < engine::kHookVersion && !o.patch)
        note("the tree carries hook v" + std::to_string(c.patched_version) + ", older than this Temper's v" + std::to_string(engine::kHookVersion) +
             ": your llama.cpp ignores what it lacks (mmvq/mmq path choices, the larger grid); --patch upgrades it");
    } else if (c.applies) r.summary = tree + ", the hook applies";
    else fail(ErrorKind::BadInput, tree + ": the hook does not apply: " + c.problem);
    return {{"commit", c.tree.commit}, {"patched", c.state == engine::HookState::Patched}};
  });
  run_step(Step::Patch, "the tree in place", [&](StepReport& r) -> json {
    if (!o.patch) {
      r.outcome = "not asked";
      r.summary = "not asked (--patch patches the tree; your llama-bench must come from a patched build)";
      return {};
    }
    const engine::CheckReport c = engine::check(o.engine_src);
    if (c.state == engine::HookState::Patched && c.patched_version >= engine::kHookVersion) {
      r.outcome = "skipped";
      r.summary = "already patched (hook v" + std::to_string(c.patched_version) + ")";
      return {};
    }
    std::string upgraded;
    if (c.state == engine::HookState::Patched) {  // an older hook: restored byte for byte, then this one
      if (!c.undoable)
        fail(ErrorKind::BadInput, c.tree.mmvq.string() + " carries hook v" + std::to_string(c.patched_version) +
                                      " and cannot be restored to upgrade it: " + c.undo_problem);
      engine::undo(o.engine_src);
      upgraded = " (upgraded from hook v" + std::to_string(c.patched_version) + ")";
    }
    engine::patch(o.engine_src, set);
    r.summary = "patched" + upgraded + " " + path_text(c.tree.mmvq) + " (hook v" + std::to_string(engine::kHookVersion) +
                "); re-configure and rebuild llama.cpp so your llama-bench carries it";
    note("the tree is patched now: re-run cmake's configure step and rebuild llama.cpp before benchmarking with it");
    return {};
  });
  run_step(Step::Build, "the hooked engine and temper-probe", [&](StepReport& r) -> json {
    if (o.engine_src.empty()) {
      r.outcome = "not asked";
      r.summary = "a ready probe: " + path_text(o.probe);
      probe.probe = o.probe;
      probe_id = content_hash(read_input(o.probe, kMaxProbeBytes, "temper-probe"));
      return {};
    }
    engine::BuildOptions b = o.build;
    b.cancel = &cancel;
    const engine::BuildResult built = engine::build(o.engine_src, b, ev.build);
    probe = engine::probe_options(o.engine_src, built);
    probe_id = built.hash + " " + engine::probe_hash();
    if (built.cached) r.outcome = "skipped";
    r.summary = std::string(built.cached ? "cached" : "built") + " engine " + built.hash + " for " + b.arch + " (kernel set " +
                b.set.name + "): " + path_text(built.probe);
    return {{"hash", built.hash}, {"probe", path_text(built.probe)}};
  });

  // The engine device, started once for the sweep and the replay, only when one of them runs.
  std::unique_ptr<engine::EngineDevice> device;
  auto engine_device = [&]() -> engine::EngineDevice& {
    if (!device) device = std::make_unique<engine::EngineDevice>(probe);
    return *device;
  };

  // ---- sweep ----
  const PlanGrid grid = [&] {
    PlanGrid g = full_grid(std::string(known_engines().front()));
    g.ncols = o.ncols;
    validate_grid(g);
    return g;
  }();
  const json sweep_inputs = {{"probe", probe_id}, {"model", identity.header_hash}, {"size", identity.size_bytes},
                             {"ncols", grid.ncols}, {"engine", grid.engine}, {"time_cap", o.sweep.time_cap_s},
                             {"back_to_back", o.sweep.launches_per_sample}, {"confirm", o.sweep.confirm},
                             {"confirm_time", o.sweep.confirm_time_s}, {"ci_target", o.sweep.ci_target},
                             {"seed", o.sweep.seed}};
  const std::string sweep_input = digest({"sweep 1", sweep_inputs.dump()});
  Session session;
  run_step(Step::Sweep, "every launch config of the model's launches in the engine", [&](StepReport& r) -> json {
    const json* last = log.last(Step::Sweep);
    if (same_input(last, sweep_input) && fs::exists(report.session, ec)) {
      // The session is trusted only as the step wrote it (records before "session_hash": its model).
      const std::string wrote = last->value("session_hash", "");
      std::optional<Session> kept;
      try {
        if (wrote.empty() || wrote == state_file_hash(report.session)) kept = read_session(report.session);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::BadInput) throw;
      }
      if (kept && kept->model.header_hash == identity.header_hash) {
        session = std::move(*kept);
        r.outcome = "skipped";
        r.summary = "unchanged engine and model: " + sweep_summary(session);
        return {};
      }
      note(path_text(report.session) + " is not the session this tune's sweep wrote (changed, or another model's): the sweep runs again");
    }
    const fs::path journal_path = report.state_dir / "sweep.journal";
    std::optional<Journal> journal;
    size_t journaled = 0;
    Device* devices[] = {&engine_device()};
    if (same_input(last, sweep_input, "started") && fs::exists(journal_path, ec)) {
      const JournalContents contents = read_journal(journal_path);
      session = resume_session(contents);
      journal.emplace(Journal::reopen(journal_path, contents));
      journaled = session.results.size();
      r.outcome = "resumed";
      note("resuming the sweep: " + std::to_string(journaled) + " results journaled before are kept, not measured again");
    } else {
      SweepSetup setup;
      setup.shapes = sweep_shapes(file, grid.ncols);  // as the engine launches them (plain, fused gate/up, MUL_MAT_ID)
      setup.model = identity;
      setup.grid = grid;
      setup.options = o.sweep;
      setup.kernel_source = engine_device().kernel_source();
      session = new_session(setup, devices);
      size_t planned = 0;
      for (const auto& d : session.devices) planned += d.plan.items.size();
      if (planned == 0) fail(ErrorKind::BadInput, "nothing to measure: no shape of " + identity.file_name + " has an mmvq kernel");
      fs::remove(journal_path, ec);
      journal.emplace(Journal::create(journal_path, session));
      log.append({{"step", step_name(Step::Sweep)}, {"input", sweep_input}, {"outcome", "started"},
                  {"journal", path_text(journal_path)}, {"date", utc_now_iso8601()}});
    }
    std::vector<KernelPair> pairs;
    for (const PlanItem& item : session.devices.front().plan.items)
      if (const KernelPair p{item.type, item.ncols}; std::find(pairs.begin(), pairs.end(), p) == pairs.end()) pairs.push_back(p);
    devices[0]->prepare_kernels(pairs, {}, &cancel);
    run_session(session, devices, &*journal, ev.sweep ? ev.sweep : ProgressFn{}, cancel);
    if (session.status == "cancelled")
      fail(ErrorKind::Cancelled, "tune cancelled during the sweep; what was measured is journaled (" + journal_path.string() +
                                     "): run the same command again to go on");
    if (session.status == "failed")
      fail(ErrorKind::GpuFault, "the sweep stopped: " + session.devices.front().error + " (journal kept: " +
                                    journal_path.string() + ")");
    save_session(session, report.session);
    journal.reset();
    fs::remove(journal_path, ec);
    r.summary = sweep_summary(session) + (journaled ? " (" + std::to_string(journaled) + " from before the interruption)" : "");
    return {{"input", sweep_input}, {"session", path_text(report.session)}, {"session_hash", state_file_hash(report.session)},
            {"resumed_results", journaled}};
  });
  const std::string arch = session_arch(session);

  // ---- approve ----
  const fs::path tuned_path = report.state_dir / "profile.json";
  const std::string approve_input = digest({"approve 1", content_hash(read_file(report.session)),
                                            o.approve_all ? "all" : "significant", fmt("%.6f", o.min_speedup)});
  Profile tuned;
  run_step(Step::Approve, std::string("winners by policy (") + (o.approve_all ? "all" : "significant") + ")", [&](StepReport& r) -> json {
    const json* last = log.last(Step::Approve);
    if (same_input(last, approve_input) && !last->value("output_hash", "").empty() &&
        last->value("output_hash", "") == state_file_hash(tuned_path)) {
      tuned = load_profile(tuned_path);
      r.outcome = "skipped";
    } else {
      // Made again from the session whenever the file is not the one this step wrote.
      tuned = profile_from_session(session);
      if (o.approve_all) approve_all(tuned);
      else approve_significant(tuned, o.min_speedup);
      save_profile(tuned, tuned_path);
    }
    const int approved = approved_count(tuned, arch);
    r.summary = std::to_string(tuned.entries.size()) + " winners, " + std::to_string(approved) + " approved" +
                (o.approve_all ? std::string(" (all)") : " (CI-separated and at least " + fmt("%.0f", o.min_speedup * 100) + " % faster)");
    if (approved == 0) note("no winner was approved: the engine runs stock with this profile");
    return {{"input", approve_input}, {"output_hash", state_file_hash(tuned_path)}};
  });

  // ---- install ----
  // The profile file is shared (other tunes, other models write it meanwhile): every write re-reads it
  // under its lock and applies only this tune's changes (update_profile). `read_back`: the file as this
  // tune last read or wrote it; `as_found`: as it was before this tune, `mine`: that with this tune's
  // changes alone (the replay takes them back out when the profile changes any result).
  Profile read_back, as_found, mine;
  std::optional<std::string> as_found_bytes;
  bool installed_now = false, others_wrote = false;
  auto write_installed = [&] {
    mine = rebase_profile(read_back, report.installed, mine);
    const Profile wrote = update_profile(report.profile, read_back, report.installed);
    others_wrote = others_wrote || !same_profile(wrote, report.installed);
    report.installed = read_back = wrote;
    installed_now = true;
  };
  run_step(Step::Install, "the profile where the engine reads it", [&](StepReport& r) -> json {
    std::optional<Profile> current;
    if (fs::exists(report.profile, ec)) {
      current = load_profile(report.profile);
      as_found_bytes = read_input(report.profile, kMaxProfileBytes, "profile");
    }
    read_back = as_found = mine = current.value_or(Profile{});
    Profile merged = current ? install_profile(*current, tuned, session) : tuned;
    // What the token step took back stays taken back while the sweep's choice is the one it measured
    // (the token step measures it again whenever its input changes).
    if (current) {
      for (ProfileEntry& e : merged.entries)
        if (const ProfileEntry* was = find_entry(*current, e.key);
            was && token_rejected(*was) && e.approval == Approval::Approved && was->config == e.config)
          e.approval = was->approval, e.note = was->note, e.decided_at = was->decided_at;
      // And what it put in (a fused gate/up instead of its unfused pair) stays while the pair is taken back.
      for (const ProfileEntry& was : current->entries) {
        ProfileKey pair = was.key;
        pair.launch = unfused_kind(was.key.launch);
        const ProfileEntry* taken_back = find_entry(merged, pair);
        if (token_added(was) && !find_entry(merged, was.key) && taken_back && token_rejected(*taken_back)) merged.entries.push_back(was);
      }
      std::sort(merged.entries.begin(), merged.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
    }
    int kept = 0;
    for (const auto& e : merged.entries) kept += !find_entry(tuned, e.key);
    report.installed = current.value_or(Profile{});
    if (current && to_json(merged) == to_json(*current)) {
      r.outcome = "skipped";
      r.summary = path_text(report.profile) + " holds this profile already";
    } else {
      merged.created = utc_now_iso8601();
      merged.tool_version = TEMPER_VERSION;
      report.installed = std::move(merged);
      write_installed();
      r.summary = "wrote " + path_text(report.profile);
    }
    merged = report.installed;
    r.summary += ": " + std::to_string(approved_count(merged, arch)) + " approved entries for " + arch +
                 (kept ? ", " + std::to_string(kept) + " entries of other shapes or arches kept" : std::string());
    report.installed = std::move(merged);
    return {{"profile", path_text(report.profile)}};
  });

  // The crossover and the group step journal each batch width they finish under `key` ("crossover_width",
  // "group_width"): after an unfinished start of the same input, those widths are kept (said once).
  auto resumed_widths = [&](Step s, const std::string& input, const char* key, const std::string& what, StepReport& r) {
    std::vector<json> out;
    if (!same_input(log.last(s), input, "started")) return out;
    for (const json& j : log.after_last(s))
      if (j.contains(key)) out.push_back(j[key]);
    if (!out.empty()) {
      r.outcome = "resumed";
      note("resuming the " + what + ": " + std::to_string(out.size()) + " batch widths journaled before are kept");
    }
    return out;
  };
  // The device a step's records were made for, as its journal record keeps it.
  auto device_json = [](const ProfileDevice& d) {
    return json{{"name", d.name}, {"compute_units", d.compute_units}, {"memory_mib", d.memory_mib}};
  };
  auto device_from_json = [](const json& d) { return ProfileDevice{d.at("name"), d.at("compute_units"), d.at("memory_mib")}; };
  // The evidence a step's entries carry, as its journal record keeps it.
  auto evidence_json = [](const Provenance& p) {
    return json{{"session_id", p.session_id}, {"device_name", p.device_name}, {"device_arch", p.device_arch},
                {"engine", p.engine}, {"kernel", p.kernel}};
  };
  auto evidence_from_json = [](const json& e) {
    Provenance p;
    p.session_id = e.at("session_id");
    p.device_name = e.at("device_name");
    p.device_arch = e.at("device_arch");
    p.engine = e.at("engine");
    p.kernel = e.at("kernel");
    return p;
  };

  // ---- crossover: mmvq or mmq at each batch width above 1 ----
  // ggml 7180759 decides MUL_MAT's path inline, where the hook cannot reach: only the MoE cap moves.
  auto old_ggml = [](engine::EngineDevice& dev) { return dev.kernel_source().ggml_commit.rfind("7180759", 0) == 0; };
  auto movable_targets = [&](engine::EngineDevice& dev, const engine::ReplayPlan& plan) {
    std::vector<PathTarget> targets = path_targets(plan.launches);
    if (old_ggml(dev)) std::erase_if(targets, [](const PathTarget& t) { return t.launch == Launch::MulMat; });
    return targets;
  };
  std::vector<int> widths;
  for (int n : o.ncols)
    if (n >= 2) widths.push_back(n);
  // The input: what the engine launches, bar the paths this step writes and the group and pipeline
  // steps' entries (which come after it).
  auto without_groups = [](Profile p) {
    std::erase_if(p.entries, [](const ProfileEntry& e) { return launch_is_group(e.key.launch) || launch_is_pipelined(e.key.launch); });
    return p;
  };
  Profile entries_only = without_groups(without_token(report.installed));
  entries_only.paths.clear();
  const std::string crossover_input =
      digest({"crossover 1", probe_id, approved_fingerprint(entries_only, arch), identity.header_hash, json(widths).dump(),
              std::to_string(o.replay_tokens), std::to_string(o.replay_rounds), fmt("%.6f", o.min_path_gain)});
  run_step(Step::Crossover, "mmvq or mmq per type at batch widths 2..8, in the engine", [&](StepReport& r) -> json {
    const json* last = log.last(Step::Crossover);
    if (widths.empty()) {
      r.outcome = "not asked";
      r.summary = "no batch width above 1 in --ncols";
      return {};
    }
    auto decide_all = [&](const std::vector<WidthSamples>& done) {
      std::vector<CrossoverCell> cells;
      for (const WidthSamples& w : done)
        for (CrossoverCell& c : decide_width(w, o.min_path_gain)) cells.push_back(std::move(c));
      return cells;
    };
    auto read_widths = [](const json& list) {
      std::vector<WidthSamples> out;
      for (const json& w : list) out.push_back(width_samples_from_json(w));
      return out;
    };
    // The records of these decisions go into the installed profile (measured keys replaced).
    auto record = [&](const ProfileDevice& on, const PathEvidence& evidence, const std::string& when) {
      Profile before = report.installed;
      for (const std::string& line : install_paths(report.installed, report.crossover, arch, on,
                                                   path_choices(report.crossover, arch, on, evidence, when), evidence.model))
        note("crossover: " + line);
      if (to_json(report.installed) == to_json(before)) return false;
      write_installed();
      return true;
    };
    // Unchanged input: the journaled decisions, put back into the profile if it lost them.
    if (same_input(last, crossover_input)) {
      report.crossover = decide_all(read_widths(last->at("widths")));
      r.outcome = "skipped";
      r.summary = "unchanged engine and profile: " + crossover_summary(report.crossover);
      const json& e = last->at("evidence");
      const PathEvidence evidence{e.at("source"), e.at("device_name"), e.at("device_arch"), e.at("kernel"), e.at("model")};
      if (record(device_from_json(last->at("device")), evidence, last->at("decided_at")))
        r.summary += "; recorded again in " + path_text(report.profile);
      return {};
    }
    std::vector<WidthSamples> done;
    for (const json& w : resumed_widths(Step::Crossover, crossover_input, "crossover_width", "crossover", r))
      done.push_back(width_samples_from_json(w));
    if (done.empty())
      log.append({{"step", step_name(Step::Crossover)}, {"input", crossover_input}, {"outcome", "started"}, {"date", utc_now_iso8601()}});
    engine::EngineDevice& dev = engine_device();
    const engine::ReplayPlan plan = engine::plan_replay(file);
    const std::vector<PathTarget> targets = movable_targets(dev, plan);
    const std::string engine_version = old_ggml(dev) ? "ggml-7180759" : "ggml-d99724f";
    const StockPath stock = [&](const PathTarget& t, int n) {
      return defaults::stock_uses_mmvq(engine_version, arch, t.type, t.launch == Launch::MulMatId, n) ? MatPath::Mmvq : MatPath::Mmq;
    };
    // The model's token goes up once (a MoE model's experts are many GB) and is replayed for every
    // width and arm; the arms alternate in measure_width.
    std::unique_ptr<engine::TokenReplayer> token;
    const PathReplay replay = [&](int n, const std::vector<engine::ReplayOptions::ForcedPath>& forced) {
      if (cancel.load())
        fail(ErrorKind::Cancelled, "tune cancelled during the crossover; the batch widths measured are journaled: run the same command again to go on");
      if (!token) token = std::make_unique<engine::TokenReplayer>(dev, file, plan, 1);
      return token->run(token->plan_text(fs::absolute(report.profile), n, forced), o.replay_tokens).token_us;
    };
    auto measured = [&](int n) { return std::any_of(done.begin(), done.end(), [&](const WidthSamples& w) { return w.ncols == n; }); };
    int runs = 0, total = 0;
    for (int n : widths) {  // replays in all, and those of the widths journaled before
      const size_t tried = targets_to_try(targets, stock, n).size();
      total += tried ? o.replay_rounds * (1 + int(tried)) : 0;
      if (measured(n)) runs = total;
    }
    if (done.empty() && !widths.empty()) {
      try {
        engine::TokenReplayer::check(dev, widths.front(), {});
      } catch (const Error& e) {
        // An engine that cannot replay wider tokens or force a path (a probe before protocol 4):
        // tune goes on with ggml's own choice, said once.
        if (e.kind() != ErrorKind::BadInput) throw;
        r.outcome = "not asked";
        r.summary = std::string("this engine cannot replay at batch widths above 1: ") + e.what();
        note("no crossover: " + std::string(e.what()));
        return {};
      }
    }
    for (int n : widths) {
      if (measured(n)) continue;
      WidthSamples w = measure_width(n, targets, stock, o.replay_rounds, replay, [&] {
        if (ev.crossover) ev.crossover(++runs, total);
      });
      log.append({{"crossover_width", to_json(w)}});
      done.push_back(std::move(w));
    }
    std::sort(done.begin(), done.end(), [](const WidthSamples& a, const WidthSamples& b) { return a.ncols < b.ncols; });
    report.crossover = decide_all(done);
    PathEvidence evidence;
    evidence.source = "tune " + report.state_dir.filename().string();
    evidence.device_name = dev.info().name;
    evidence.device_arch = arch;
    evidence.kernel = kernel_label(dev.kernel_source());
    evidence.model = identity.file_name;
    const ProfileDevice on = profile_device(dev.info());
    const std::string when = utc_now_iso8601();
    record(on, evidence, when);
    r.summary = crossover_summary(report.crossover) + "; recorded in " + path_text(report.profile);
    json widths_json = json::array();
    for (const WidthSamples& w : done) widths_json.push_back(to_json(w));
    return {{"input", crossover_input}, {"widths", widths_json}, {"decided_at", when},
            {"device", device_json(on)},
            {"evidence", {{"source", evidence.source}, {"device_name", evidence.device_name}, {"device_arch", evidence.device_arch},
                          {"kernel", evidence.kernel}, {"model", evidence.model}}}};
  });

  // Another model's approved path choices reach this model too, at widths this tune did not measure.
  if (std::any_of(report.installed.paths.begin(), report.installed.paths.end(), [&](const PathChoice& r) {
        return r.arch == arch && another_models_choice(r, identity.file_name);
      })) {
    engine::EngineDevice& dev = engine_device();
    const std::vector<PathTarget> targets = movable_targets(dev, engine::plan_replay(file));
    std::vector<int> measured;
    for (const CrossoverCell& c : report.crossover) measured.push_back(c.ncols);
    for (const std::string& line : unmeasured_paths(report.installed, targets, measured, arch, profile_device(dev.info()), identity.file_name))
      note("crossover: " + line);
  }

  // ---- groups: same-input runs (q, k, v) as one launch, at each batch width 1..4 ----
  std::vector<int> group_widths;
  for (int n : o.ncols)
    if (n >= 1 && n <= kGroupMaxNcols) group_widths.push_back(n);
  const std::string groups_input =
      digest({"groups 1", probe_id, approved_fingerprint(without_groups(without_token(report.installed)), arch), identity.header_hash,
              json(group_widths).dump(), std::to_string(o.replay_tokens), std::to_string(o.replay_rounds),
              fmt("%.6f", o.min_group_gain)});
  run_step(Step::Groups, "same-input groups (q, k, v as one launch) at batch widths 1..4, in the engine", [&](StepReport& r) -> json {
    const json* last = log.last(Step::Groups);
    std::map<int, LaunchPlan> plans;  // the plan at each width: its runs and their kinds
    int runs_total = 0;
    for (int n : group_widths) runs_total += (plans[n] = plan_launches(file, n)).group_runs_per_token();
    if (group_widths.empty() || runs_total == 0) {
      r.outcome = "not asked";
      r.summary = group_widths.empty() ? "no batch width 1..4 in --ncols" : "the model has no same-input runs to group";
      return {};
    }
    auto decide_all = [&](const std::vector<GroupWidthSamples>& done) {
      std::vector<GroupDecision> out;
      for (const GroupWidthSamples& w : done) out.push_back(decide_groups(w, o.min_group_gain));
      return out;
    };
    auto summary = [&] {
      int approved = 0;
      for (const GroupDecision& d : report.groups) approved += d.approved;
      std::string s = std::to_string(report.groups.size()) + " batch widths measured, " + std::to_string(approved) + " with groups approved";
      for (const GroupDecision& d : report.groups)
        if (d.approved) s += "; ncols " + std::to_string(d.ncols) + " " + d.best.text() + " ×" + fmt("%.3f", d.speedup);
      return s;
    };
    auto record = [&](const ProfileDevice& on, const Provenance& evidence, const std::string& when) {
      std::vector<ProfileEntry> entries;
      for (const GroupDecision& d : report.groups)
        for (ProfileEntry& e : group_entries(d, plans.at(d.ncols), arch, on, evidence, when)) entries.push_back(std::move(e));
      Profile before = report.installed;
      install_groups(report.installed, group_keys(report.groups, plans, arch, on), entries);
      if (to_json(report.installed) == to_json(before)) return false;
      write_installed();
      return true;
    };
    if (same_input(last, groups_input)) {
      std::vector<GroupWidthSamples> done;
      for (const json& w : last->at("widths")) done.push_back(group_samples_from_json(w));
      report.groups = decide_all(done);
      r.outcome = "skipped";
      r.summary = "unchanged engine and profile: " + summary();
      if (record(device_from_json(last->at("device")), evidence_from_json(last->at("evidence")), last->at("decided_at")))
        r.summary += "; recorded again in " + path_text(report.profile);
      return {};
    }
    std::vector<GroupWidthSamples> done;
    for (const json& w : resumed_widths(Step::Groups, groups_input, "group_width", "group step", r))
      done.push_back(group_samples_from_json(w));
    engine::EngineDevice& dev = engine_device();
    if (done.empty()) {
      try {
        engine::TokenReplayer::check(dev, 1, {}, engine::GroupSetting::off());
      } catch (const Error& e) {
        // A probe before protocol 5 (or an engine without groups): tune goes on without them, said once.
        if (e.kind() != ErrorKind::BadInput) throw;
        r.outcome = "not asked";
        r.summary = std::string("this engine cannot run same-input groups: ") + e.what();
        note("no group step: " + std::string(e.what()));
        return {};
      }
      // A hook whose ggml-cuda.cu was not patched for groups launches none: nothing to measure.
      const auto hooks = dev.hello().find("group_hooks");
      if (hooks != dev.hello().end() && (std::atoi(hooks->second.c_str()) & 1) == 0) {
        r.outcome = "not asked";
        r.summary = "the engine's hook launches no same-input groups (group_hooks=" + hooks->second +
                    ": ggml-cuda.cu not patched for them; see temper engine check)";
        note("no group step: " + r.summary);
        return {};
      }
      log.append({{"step", step_name(Step::Groups)}, {"input", groups_input}, {"outcome", "started"}, {"date", utc_now_iso8601()}});
    }
    const engine::ReplayPlan plan = engine::plan_replay(file);
    std::unique_ptr<engine::TokenReplayer> token;
    const fs::path profile_path = fs::absolute(report.profile);
    auto text = [&](int n, const engine::GroupSetting& g) {
      if (cancel.load())
        fail(ErrorKind::Cancelled, "tune cancelled during the group step; the batch widths measured are journaled: run the same command again to go on");
      if (!token) token = std::make_unique<engine::TokenReplayer>(dev, file, plan, 1);
      return token->plan_text(profile_path, n, {}, nullptr, g);
    };
    const GroupReplay replay = [&](int n, const engine::GroupSetting& g) {
      const std::string t = text(n, g);
      const engine::ReplayTokens rt = token->run(t, o.replay_tokens);
      return GroupRun{rt.token_us, rt.group_launches};
    };
    const GroupAgree agree = [&](int n, const engine::GroupSetting& g) {
      const std::vector<float> off = token->outputs(text(n, engine::GroupSetting::off()), n);
      const std::vector<float> on = token->outputs(text(n, g), n);
      return engine::compare_replay_outputs(plan, n, off, on).empty();
    };
    auto measured = [&](int n) { return std::any_of(done.begin(), done.end(), [&](const GroupWidthSamples& w) { return w.ncols == n; }); };
    const int per_width = o.replay_rounds * (1 + int(group_grid().size()));
    int runs = 0, total = 0;
    for (int n : group_widths) {
      if (plans.at(n).group_runs_per_token() == 0) continue;
      total += per_width;
      if (measured(n)) runs = total;
    }
    for (int n : group_widths) {
      if (measured(n) || plans.at(n).group_runs_per_token() == 0) continue;
      GroupWidthSamples w = measure_groups(n, plans.at(n).group_runs_per_token(), o.replay_rounds, replay, agree, [&] {
        if (ev.groups) ev.groups(++runs, total);
      });
      log.append({{"group_width", to_json(w)}});
      done.push_back(std::move(w));
    }
    std::sort(done.begin(), done.end(), [](const GroupWidthSamples& a, const GroupWidthSamples& b) { return a.ncols < b.ncols; });
    report.groups = decide_all(done);
    Provenance evidence;
    evidence.session_id = "tune " + report.state_dir.filename().string();
    evidence.device_name = dev.info().name;
    evidence.device_arch = arch;
    evidence.engine = "replay";
    evidence.kernel = kernel_label(dev.kernel_source());
    const ProfileDevice on = profile_device(dev.info());
    const std::string when = utc_now_iso8601();
    record(on, evidence, when);
    r.summary = summary() + "; recorded in " + path_text(report.profile);
    json widths_json = json::array();
    for (const GroupWidthSamples& w : done) widths_json.push_back(to_json(w));
    return {{"input", groups_input}, {"widths", widths_json}, {"decided_at", when},
            {"device", device_json(on)},
            {"evidence", evidence_json(evidence)}};
  });
  // ---- replay ----
  // The replay measures the profile's configs (the pipeline step after it measures pipelining).
  const std::string replay_input = digest({"replay 2", probe_id, approved_fingerprint(without_pipelined(without_token(report.installed)), arch), identity.header_hash,
                                           std::to_string(o.replay_tokens), std::to_string(o.replay_rounds)});
  run_step(Step::Replay, "one decode token's GEMVs in the engine, stock vs the profile", [&](StepReport& r) -> json {
    const json* last = log.last(Step::Replay);
    if (same_input(last, replay_input) && last->contains("result")) {
      report.replay = (*last)["result"];
      r.outcome = "skipped";
      r.summary = "unchanged engine and profile: " + replay_summary(*report.replay);
      return {};
    }
    if (approved_count(report.installed, arch) == 0) {
      r.outcome = "not asked";
      r.summary = "nothing to replay: no approved entry for " + arch;
      return {};
    }
    const engine::ReplayPlan plan = engine::plan_replay(file);
    engine::ReplayOptions ro;
    ro.profile = fs::absolute(report.state_dir / "replay-profile.json");
    save_profile(without_pipelined(without_token(report.installed)), ro.profile);
    ro.tokens = o.replay_tokens;
    ro.rounds = o.replay_rounds;
    const engine::ReplayReport rr = engine::run_replay(engine_device(), file, plan, ro, ev.replay);
    if (!rr.differences.empty()) {  // the profile changes what the engine computes: never left installed
      const engine::ReplayDifference& d = rr.differences.front();
      std::string undone = path_text(report.profile) + " held this profile before this run and is left as it is: do not run with it";
      if (installed_now) {  // this tune's changes taken back out; what other tunes wrote meanwhile stays
        // Nobody else wrote: the file as it was, byte for byte; else this tune's changes undone in theirs.
        const Profile now = others_wrote ? update_profile(report.profile, read_back, rebase_profile(mine, as_found, read_back))
                                         : update_profile(report.profile, read_back, as_found, as_found_bytes);
        undone = !fs::exists(report.profile, ec)              ? path_text(report.profile) + " is removed"
                 : same_profile(now, as_found)                 ? "the previous profile is back in " + path_text(report.profile)
                                                              : "this tune's changes are taken back out of " +
                                                                    path_text(report.profile) + " (other tunes' entries stay)";
      }
      fail(ErrorKind::Verification, "the replay found " + std::to_string(rr.differences.size()) +
                                        " launches whose output differs with the profile (first: launch " + std::to_string(d.index) +
                                        ", " + d.role + ", max |stock - profile| " + fmt("%g", d.max_abs_difference) + "); " + undone);
    }
    report.replay = engine::replay_report_json(rr);
    // The sweep's entries predict per launch; the group step measured whole tokens: its ratio at
    // one column multiplies in.
    if (const double ratio = group_ratio_at_one_column(report.groups); ratio != 1 && rr.predicted_speedup > 0) {
      (*report.replay)["predicted_speedup"] = rr.predicted_speedup * ratio;
      (*report.replay)["predicted_group_ratio"] = ratio;
      note("the replay's prediction multiplies in the group step's measured ×" + fmt("%.3f", ratio) + " (same-input groups at one column)");
    }
    r.summary = replay_summary(*report.replay);
    return {{"input", replay_input}, {"result", *report.replay}};
  });
  // ---- pipeline: every one-column launch pipelined at the config it runs; llama-bench decides ----
  // llama-bench decides (the replay cannot see the rest of the token): its first tg test, else tg128.
  // The token step predicts the same test.
  const BenchTest tg_test = [&] {
    if (o.bench)
      for (const BenchTest& t : engine::parse_bench_tests(o.bench->tests))
        if (t.n_gen > 0) return t;
    return engine::parse_bench_tests("tg128").front();
  }();
  const std::string pipeline_test = tg_test.name;
  const std::string pipeline_input =
      digest({"pipeline 2", probe_id, approved_fingerprint(without_pipelined(without_token(report.installed)), arch), identity.header_hash,
              std::to_string(o.replay_tokens), std::to_string(o.replay_rounds), fmt("%.6f", o.min_pipeline_gain),
              o.bench ? file_identity(o.bench->llama_bench) + " " + pipeline_test + " " + std::to_string(o.bench->rounds) + " " +
                            std::to_string(o.bench->repetitions) + " " + json(o.bench->extra_args).dump()
                      : std::string("-")});
  run_step(Step::Pipeline,
           "every one-column launch pipelined (the next kernel launches early, rows prefetched to L2): outputs in the replay, "
           "llama-bench decides",
           [&](StepReport& r) -> json {
    const json* last = log.last(Step::Pipeline);
    if (std::find(o.ncols.begin(), o.ncols.end(), 1) == o.ncols.end()) {
      r.outcome = "not asked";
      r.summary = "no batch width 1 in --ncols (pipelined launches are decode's)";
      return {};
    }
    if (!o.bench) {
      r.outcome = "not asked";
      r.summary = "needs --llama-bench: pipelining pays in the kernels between the GEMVs, which the replay does not run";
      return {};
    }
    const engine::ReplayPlan plan = engine::plan_replay(file);
    // The entries go in as the decision says; an unapproved decision removes this model's older ones.
    auto record = [&](const std::vector<ProfileEntry>& candidates, const PipelineDecision& d, const Provenance& evidence,
                      const std::string& when) {
      Profile before = report.installed;
      install_pipelined(report.installed, candidates, d.approved ? pipeline_entries(candidates, plan.launches, d, evidence, when)
                                                                 : std::vector<ProfileEntry>{});
      // The candidates are the replay's choices' (without_token); a launch a token step took back runs
      // pipelined at the engine's config, as that step left it.
      align_pipelined(report.installed, arch);
      if (to_json(report.installed) == to_json(before)) return false;
      write_installed();
      return true;
    };
    if (same_input(last, pipeline_input)) {
      const PipelineDecision d = decide_pipeline(pipeline_samples_from_json(last->at("samples")), o.min_pipeline_gain);
      report.pipeline = d;
      r.outcome = "skipped";
      r.summary = "unchanged engine and profile: " + pipeline_text(d);
      const ProfileDevice on = device_from_json(last->at("device"));
      const std::vector<ProfileEntry> candidates =
          pipeline_candidates(plan.launches, without_pipelined(without_token(report.installed)), arch, on, last->at("engine_version"));
      if (record(candidates, d, evidence_from_json(last->at("evidence")), last->at("decided_at")))
        r.summary += "; recorded again in " + path_text(report.profile);
      return {};
    }
    engine::EngineDevice& dev = engine_device();
    // A hook that compiled no pipelined launch (HIP, a ggml without the dependent-launch wait, a probe
    // before protocol 6) or reads no pipelined entries (before hook v7): nothing to measure, said once.
    const auto bits = dev.hello().find("pipeline_bits");
    std::string why_not;
    if (dev.protocol() < 6 || bits == dev.hello().end() || std::atoi(bits->second.c_str()) == 0)
      why_not = "the engine's hook compiles no pipelined launches (an AMD build, a ggml whose mmvq does not wait for its "
                "predecessor, or a probe before protocol 6; see temper engine check)";
    else if (const std::string& v = dev.kernel_source().hook_version;
             !v.empty() && std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) && std::stoi(v) < 7)
      why_not = "the engine's hook (v" + v + ") reads no pipelined entries: patch it with this Temper";
    if (!why_not.empty()) {
      r.outcome = "not asked";
      r.summary = why_not;
      note("no pipeline step: " + why_not);
      return {};
    }
    const std::string engine_version = old_ggml(dev) ? "ggml-7180759" : "ggml-d99724f";
    const ProfileDevice on = profile_device(dev.info());
    const std::string device_name = dev.info().name, kernel = kernel_label(dev.kernel_source());
    const Profile off_profile = without_pipelined(without_token(report.installed));
    const std::vector<ProfileEntry> candidates = pipeline_candidates(plan.launches, off_profile, arch, on, engine_version);
    // The on arm's profile: every candidate approved, with placeholder times (the step's own file; the
    // installed one stays as it is until the decision).
    Profile on_profile = off_profile;
    PipelineDecision trial;
    trial.approved = true;
    trial.off_us = trial.off_ci_low = trial.off_ci_high = trial.on_us = trial.on_ci_low = trial.on_ci_high = 1;
    Provenance trial_evidence;
    trial_evidence.device_arch = arch;
    install_pipelined(on_profile, candidates, pipeline_entries(candidates, plan.launches, trial, trial_evidence, utc_now_iso8601()));
    const fs::path off_path = fs::absolute(report.state_dir / "pipeline-off.json"), on_path = fs::absolute(report.state_dir / "pipeline-on.json");
    save_profile(off_profile, off_path);
    save_profile(on_profile, on_path);
    PipelineSamples samples;
    {  // the replay: identical outputs, and the GEMVs' own time (its weights freed before llama-bench runs)
      engine::TokenReplayer token(dev, file, plan, 1);
      const PipelineReplay replay = [&](bool pipelined) {
        if (cancel.load()) fail(ErrorKind::Cancelled, "tune cancelled during the pipeline step; run the same command again to go on");
        const engine::ReplayTokens t = token.run(token.plan_text(pipelined ? on_path : off_path, 1, {}, nullptr, std::nullopt,
                                                                 pipelined ? std::nullopt : std::optional<bool>(false)),
                                                 o.replay_tokens);
        return PipelineRun{t.token_us, t.pipelined_launches};
      };
      const auto identical = [&] {
        const std::vector<float> a = token.outputs(token.plan_text(off_path, 1, {}, nullptr, std::nullopt, false), 1);
        const std::vector<float> b = token.outputs(token.plan_text(on_path, 1, {}, nullptr), 1);
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
      };
      int runs = 0;
      samples = measure_pipeline(o.replay_rounds, replay, identical, [&] {
        if (ev.pipeline) ev.pipeline(++runs, 2 * o.replay_rounds);
      });
    }
    // llama-bench: the profile without its pipelined entries against with them, the GPU to itself.
    if (samples.identical && samples.pipelined_launches > 0) {
      device.reset();
      engine::BenchOptions b = *o.bench;
      b.model = o.model;
      b.profile = on_path;
      b.stock_profile = off_path;
      b.tests = pipeline_test;
      b.cancel = &cancel;
      engine::BenchEvents be;
      be.progress = ev.bench;
      const engine::BenchResult br = engine::run_bench(b, be);
      samples.test = pipeline_test;
      samples.bench_off = br.record.tests.front().stock_runs;
      samples.bench_on = br.record.tests.front().profiled_runs;
    }
    const PipelineDecision d = decide_pipeline(samples, o.min_pipeline_gain);
    report.pipeline = d;
    Provenance evidence;
    evidence.session_id = "tune " + report.state_dir.filename().string();
    evidence.device_name = device_name;
    evidence.device_arch = arch;
    evidence.engine = "llama-bench " + pipeline_test;
    evidence.kernel = kernel;
    const std::string when = utc_now_iso8601();
    record(candidates, d, evidence, when);
    r.summary = pipeline_text(d) + "; recorded in " + path_text(report.profile);
    return {{"input", pipeline_input}, {"samples", to_json(samples)}, {"decided_at", when}, {"device", device_json(on)},
            {"engine_version", engine_version}, {"evidence", evidence_json(evidence)}};
  });
  // ---- token: the heaviest launch families decided by whole decode tokens in the engine's graph ----
  // The bench's tg test is what the prediction measures (its N tokens a window).
  const int predict_tokens = int(tg_test.n_gen);
  const std::string token_settings =
      json{{"rounds", o.token_rounds}, {"tokens", o.token_tokens}, {"families", o.token_families}, {"greedy", o.token_greedy},
           {"min_gain", fmt("%.6f", o.min_token_gain)}, {"predict", predict_tokens}}.dump();
  run_step(Step::Token, "the heaviest launch families confirmed or changed by whole tokens in the engine's graph; the tg prediction",
           [&](StepReport& r) -> json {
    if (std::find(o.ncols.begin(), o.ncols.end(), 1) == o.ncols.end()) {
      r.outcome = "not asked";
      r.summary = "no batch width 1 in --ncols (decode's tokens are one column)";
      return {};
    }
    // The probe: a ready one, else built from the llama.cpp tree against llama-bench's libraries.
    fs::path token_exe = o.token_probe;
    std::string token_probe_id;
    if (token_exe.empty()) {
      std::string why_not;
      if (!o.bench) why_not = "needs --llama-bench (the token probe links that build's libraries) or --token-probe";
      else if (o.engine_src.empty())
        why_not = "a ready temper-probe and no --token-probe: the token probe is built from a llama.cpp --engine-src";
      else if (!fs::is_regular_file(o.engine_src / "include" / "llama.h", ec))
        why_not = "the engine tree is not a llama.cpp tree (no include/llama.h): nothing decodes a token";
      if (!why_not.empty()) {
        r.outcome = "not asked";
        r.summary = why_not;
        return {};
      }
      engine::TokenProbeBuild b;
      b.llama_tree = o.engine_src;
      b.lib_dir = fs::absolute(o.bench->llama_bench).parent_path();
      b.out_dir = report.state_dir / "token-probe";
      b.cancel = &cancel;
      // A build the probe cannot link (static) or a llama.h it does not compile against (an older or
      // forked API): tune goes on without the step, said once.
      try {
        const engine::TokenProbeBuilt built = engine::build_token_probe(b);
        token_exe = built.exe;
        token_probe_id = built.hash;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::BadInput && e.kind() != ErrorKind::Io) throw;
        r.outcome = "not asked";
        r.summary = std::string("no token probe: ") + e.what();
        note(r.summary);
        return {};
      }
    } else {
      token_probe_id = content_hash(read_input(token_exe, kMaxProbeBytes, "token probe"));
    }
    device.reset();  // the token probe runs the engine itself: the GPU to itself
    // The sweep's best fused gate/up where the profile runs the unfused pair: one more option there.
    std::vector<ProfileEntry> fused;
    {
      Session fused_only = session;
      std::erase_if(fused_only.verdicts, [](const Verdict& v) { return launch_is_unfused(v.launch) || v.ncols != 1; });
      for (ProfileEntry& e : profile_from_session(fused_only).entries)
        if (e.key.launch == Launch::MulMatGlu || e.key.launch == Launch::MulMatIdGlu) fused.push_back(std::move(e));
    }
    const std::string input = digest({"token 2", token_probe_id, approved_fingerprint(without_token(report.installed), arch),
                                      identity.header_hash, token_settings});
    const json* last = log.last(Step::Token);
    // Skipped while the input (the replay's choices, the probe, the model, the settings) is the same.
    auto replay_decisions = [&](const json& record) {
      Profile p = without_token(report.installed);
      for (const json& c : record.at("coordinates")) {
        const TokenCoordinate tc = token_coordinate_from_json(c);
        report.token.push_back(tc);
        p = with_token_option(p, arch, tc.kind, tc.options[size_t(tc.chosen)], tc.why, fused);
      }
      if (record.contains("prediction")) report.token_prediction = token_prediction_from_json(record.at("prediction"));
      if (to_json(p) == to_json(report.installed)) return false;
      report.installed = std::move(p);
      write_installed();
      return true;
    };
    if (same_input(last, input)) {
      r.outcome = "skipped";
      const bool again = replay_decisions(*last);
      r.summary = "unchanged engine and profile: " + token_text(report.token, report.token_prediction ? &*report.token_prediction : nullptr) +
                  (again ? "; recorded again in " + path_text(report.profile) : "");
      return {};
    }
    // Coordinates journaled by an unfinished run of the same input are kept.
    std::vector<TokenCoordinate> done;
    if (same_input(last, input, "started")) {
      for (const json& j : log.after_last(Step::Token))
        if (j.contains("token_coordinate")) done.push_back(token_coordinate_from_json(j["token_coordinate"]));
      if (!done.empty()) {
        r.outcome = "resumed";
        note("resuming the token step: " + std::to_string(done.size()) + " launch families journaled before are kept");
      }
    }
    if (done.empty())
      log.append({{"step", step_name(Step::Token)}, {"input", input}, {"outcome", "started"}, {"date", utc_now_iso8601()}});
    const fs::path work = report.state_dir / "token";
    fs::create_directories(work);
    int probe_runs = 0, windows_before = 0, windows_total = 0;
    auto run_probe = [&](const std::vector<Profile>& arms, int tokens, int greedy) {
      engine::TokenPlan plan;
      for (size_t i = 0; i < arms.size(); ++i) {
        const fs::path arm = fs::absolute(work / ("arm-" + std::to_string(i) + ".json"));
        save_profile(arms[i], arm);
        plan.arms.push_back(arm);
      }
      plan.tokens = tokens;
      plan.rounds = o.token_rounds;
      plan.greedy = greedy;
      plan.seed = uint32_t(++probe_runs);
      engine::TokenProbeOptions po;
      po.exe = token_exe;
      po.model = fs::absolute(o.model);
      po.work = work;
      po.timeout_s = o.token_timeout_s;
      po.cancel = &cancel;
      if (ev.token) po.progress = [&](int done, int) { ev.token(windows_before + done, windows_total); };
      engine::TokenRun run = engine::run_token_probe(po, plan);
      windows_before += int(run.windows.size());
      return run;
    };
    auto per_round = [&](const engine::TokenRun& run, int arm) {
      std::vector<std::vector<double>> rounds(size_t(o.token_rounds));
      for (const engine::TokenWindow& w : run.windows)
        if (w.arm == arm) rounds[size_t(w.round)].push_back(w.us_per_token);
      return rounds;
    };
    // An engine whose hook cannot switch profiles answers the first run with hook 0: not asked, said once.
    const auto no_switch = [&](const engine::TokenRun& run) {
      if (run.hook_version != 0) return false;
      r.outcome = "not asked";
      r.summary = "the engine's hook cannot switch profiles while it runs (no temper_mmvq_load_profile: an engine patched before "
                  "hook v4 or not patched): patch it with this Temper and rebuild";
      note("no token step: " + r.summary);
      return true;
    };
    // Decided anew from the replay's choices: an earlier token step's changes do not carry over.
    Profile working = without_token(report.installed);
    for (const TokenCoordinate& c : done) working = with_token_option(working, arch, c.kind, c.options[size_t(c.chosen)], c.why, fused);
    std::vector<ShapeKey> model_shapes;
    for (const PlannedLaunch& l : plan_launches(file, 1).launches) model_shapes.push_back(l.shape());
    std::vector<TokenCoordinate> todo;
    for (TokenCoordinate& c : token_coordinates(working, arch, o.token_families, model_shapes, fused))
      if (std::none_of(done.begin(), done.end(), [&](const TokenCoordinate& d) { return d.kind == c.kind; })) todo.push_back(std::move(c));
    // Progress over the whole step: every family's windows, then the prediction's.
    windows_total = 2 * o.token_rounds;
    for (const TokenCoordinate& c : todo) windows_total += int(c.options.size()) * o.token_rounds;
    for (TokenCoordinate c : todo) {
      std::vector<Profile> arms;
      for (const std::string& option : c.options)
        arms.push_back(with_token_option(working, arch, c.kind, option, option == "fused" ? "the fused gate/up is faster per token"
                                                                                          : "the engine's own config is faster per token",
                                         fused));
      const engine::TokenRun run = run_probe(arms, o.token_tokens, 0);
      if (no_switch(run)) return {};
      for (size_t i = 0; i < c.options.size(); ++i) c.samples.push_back(per_round(run, int(i)));
      decide_coordinate(c, o.min_token_gain);
      working = with_token_option(working, arch, c.kind, c.options[size_t(c.chosen)], c.why, fused);
      log.append({{"token_coordinate", to_json(c)}});
      done.push_back(std::move(c));
    }
    // The prediction: stock (no entries) against the final profile, tg N as the bench runs it, then greedy.
    const engine::TokenRun run = run_probe({Profile{}, working}, predict_tokens, o.token_greedy);
    if (no_switch(run)) return {};
    TokenPrediction pred;
    pred.tokens = predict_tokens;
    pred.stock = per_round(run, 0);
    pred.profile = per_round(run, 1);
    pred.greedy_steps = o.token_greedy;
    if (o.token_greedy > 0) {
      const engine::TokenGreedy* g[2] = {nullptr, nullptr};
      for (const engine::TokenGreedy& x : run.greedy) g[x.arm] = &x;
      pred.greedy_identical = g[0] && g[1] && g[0]->tokens == g[1]->tokens;
      pred.finite = g[0] && g[1] && g[0]->finite && g[1]->finite;
      if (!pred.greedy_identical) note("token step: greedy decoding with the profile chose other tokens than stock in " +
                                       std::to_string(o.token_greedy) + " steps (log: " + path_text(work / "token-probe.log") + ")");
      if (!pred.finite) note("token step: logits that are not finite in greedy decoding (log: " + path_text(work / "token-probe.log") + ")");
    }
    summarize_prediction(pred);
    report.token = done;
    report.token_prediction = pred;
    // Only now the profile changes: a failure above installs nothing.
    if (to_json(working) != to_json(report.installed)) {
      report.installed = working;
      write_installed();
    }
    json coordinates = json::array();
    for (const TokenCoordinate& c : done) coordinates.push_back(to_json(c));
    for (const TokenCoordinate& c : done)
      if (c.chosen != 0) note("token step: " + c.kind + " runs " + c.options[size_t(c.chosen)] + ", not the replay's choice: " + c.why);
    r.summary = token_text(done, &pred);
    return {{"input", input}, {"coordinates", coordinates}, {"prediction", to_json(pred)}};
  });

  const std::string fingerprint = approved_fingerprint(report.installed, arch);

  device.reset();  // the probe is done: llama-bench gets the GPU to itself

  // ---- bench ----
  run_step(Step::Bench, "llama-bench with and without the profile", [&](StepReport& r) -> json {
    if (!o.bench) {
      r.outcome = "not asked";
      r.summary = "not asked (--llama-bench PATH runs it)";
      return {};
    }
    engine::BenchOptions b = *o.bench;
    b.model = o.model;
    b.profile = report.profile;
    b.cancel = &cancel;
    // "bench 2": the arms take turns going first since 2026-11-28, so a journal of the older order
    // (index by index) is not resumed.
    const std::string input =
        digest({"bench 2", file_identity(b.llama_bench), file_identity(b.stock_bench), identity.header_hash, fingerprint,
                b.tests, std::to_string(b.rounds), std::to_string(b.repetitions), json(b.extra_args).dump()});
    // A bench killed before: its journaled runs are taken as they are, the rest is run.
    std::vector<engine::BenchRunDone> done;
    if (same_input(log.last(Step::Bench), input, "started")) {
      for (const json& j : log.after_last(Step::Bench)) {
        if (!j.contains("bench_run") || j["bench_run"].value("index", -1) != int(done.size())) break;
        const json& run = j["bench_run"];
        engine::LlamaBenchRow row = engine::parse_llama_bench_json("[" + run["row"].dump() + "]", "tune journal " + path_text(report.journal)).front();
        done.push_back({int(done.size()), row, run.value("engine_line", "")});
      }
      if (!done.empty()) {
        r.outcome = "resumed";
        note("resuming the bench: " + std::to_string(done.size()) + " llama-bench runs journaled before are kept");
      }
    }
    if (done.empty())
      log.append({{"step", step_name(Step::Bench)}, {"input", input}, {"outcome", "started"}, {"date", utc_now_iso8601()}});
    engine::BenchEvents be;
    be.progress = ev.bench;
    be.run_done = [&](const engine::BenchRunDone& d) {
      log.append({{"bench_run", {{"index", d.index}, {"row", row_json(d.row)}, {"engine_line", d.engine_line}}}});
    };
    be.restarted = [&](const std::string& why) {  // the runs journaled before no longer count
      note(why);
      log.append({{"step", step_name(Step::Bench)}, {"input", input}, {"outcome", "started"}, {"date", utc_now_iso8601()}});
    };
    engine::BenchResult result = engine::run_bench(b, be, done);
    for (const auto& n : result.notes) note(n);
    add_bench_record(report.installed, result.record);
    write_installed();
    report.bench = result.record;
    r.summary = bench_summary(result.record) + "; recorded in " + path_text(report.profile);
    if (report.token_prediction)
      for (const BenchTest& t : result.record.tests)
        if (t.n_prompt == 0 && t.n_gen == report.token_prediction->tokens) {
          report.token_prediction->bench_speedup = t.speedup;
          r.summary += "; the token probe predicted " + fmt("%.3f", report.token_prediction->speedup);
          break;
        }
    return {{"input", input}};
  });
  return report;
}

}  // namespace

TuneReport run_tune(const TuneOptions& o, const TuneEvents& ev) {
  // A journal record that does not read (damaged, or edited by hand) is one line naming the folder
  // whose removal starts the tune afresh.
  std::string what;
  try {
    return run_steps(o, ev);
  } catch (const nlohmann::json::exception& e) {
    what = "tune journal: a record that does not read: " + std::string(e.what());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput || std::string_view(e.what()).find("tune journal") == std::string_view::npos) throw;
    what = e.what();
  }
  fail(ErrorKind::BadInput, what + " (the tune's state folder " + path_text(state_dir(o)) +
                                " is damaged: delete it to start this tune afresh)");
}

}  // namespace temper::tune
