// Tune's engine steps: check and patch the tree, build the hooked engine and its probe, sweep in it.
#include <algorithm>

#include "steps.h"

#include "temper/content_hash.h"
#include "temper/engine.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/plan.h"

namespace temper::tune::detail {
namespace fs = std::filesystem;

namespace {

std::string sweep_summary(const Session& s) {
  int winners = 0, confirmed = 0;
  for (const Verdict& v : s.verdicts) winners += v.is_winner(), confirmed += v.is_winner() && v.confirmed;
  size_t measured = 0;
  for (const auto& [status, n] : status_counts(s))
    if (status == "ok") measured = size_t(n);
  return std::to_string(s.shapes.size()) + " shapes, " + std::to_string(measured) + " configs verified and timed, " +
         std::to_string(winners) + " winners (" + std::to_string(confirmed) + " confirmed by an interleaved re-measure)";
}

}  // namespace

json check_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  if (o.engine_src.empty()) return r.not_asked("a ready probe: " + path_text(o.probe));
  const engine::CheckReport ch = engine::check(o.engine_src);
  const std::string tree = std::string(engine::tree_kind_name(ch.tree.kind)) + " tree at " + path_text(ch.tree.root) +
                           " (ggml commit " + (ch.tree.commit.empty() ? "unknown" : ch.tree.commit.substr(0, 12)) + ")";
  if (ch.state == engine::HookState::Patched) {
    r.summary = tree + ", patched with hook v" + std::to_string(ch.patched_version);
    if (ch.patched_version < engine::kHookVersion && !o.patch)
      c.note("the tree carries hook v" + std::to_string(ch.patched_version) + ", older than this Temper's v" +
             std::to_string(engine::kHookVersion) +
             ": your llama.cpp ignores what it lacks (mmvq/mmq path choices, the larger grid); --patch upgrades it");
  } else if (ch.applies) r.summary = tree + ", the hook applies";
  else fail(ErrorKind::BadInput, tree + ": the hook does not apply: " + ch.problem);
  return {{"commit", ch.tree.commit}, {"patched", ch.state == engine::HookState::Patched}};
}

json patch_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  if (!o.patch) return r.not_asked("not asked (--patch patches the tree; your llama-bench must come from a patched build)");
  const engine::CheckReport ch = engine::check(o.engine_src);
  if (ch.state == engine::HookState::Patched && ch.patched_version >= engine::kHookVersion)
    return r.skipped("already patched (hook v" + std::to_string(ch.patched_version) + ")");
  std::string upgraded;
  if (ch.state == engine::HookState::Patched) {  // an older hook: restored byte for byte, then this one
    if (!ch.undoable)
      fail(ErrorKind::BadInput, ch.tree.mmvq.string() + " carries hook v" + std::to_string(ch.patched_version) +
                                    " and cannot be restored to upgrade it: " + ch.undo_problem);
    engine::undo(o.engine_src);
    upgraded = " (upgraded from hook v" + std::to_string(ch.patched_version) + ")";
  }
  engine::patch(o.engine_src, o.build.set);
  r.summary = "patched" + upgraded + " " + path_text(ch.tree.mmvq) + " (hook v" + std::to_string(engine::kHookVersion) +
              "); re-configure and rebuild llama.cpp so your llama-bench carries it";
  c.note("the tree is patched now: re-run cmake's configure step and rebuild llama.cpp before benchmarking with it");
  return {};
}

json build_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  if (o.engine_src.empty()) {
    c.probe.probe = o.probe;
    c.probe_id = content_hash(read_input(o.probe, kMaxProbeBytes, "temper-probe"));
    return r.not_asked("a ready probe: " + path_text(o.probe));
  }
  engine::BuildOptions b = o.build;
  b.cancel = &c.cancel;
  const engine::BuildResult built = engine::build(o.engine_src, b, c.ev.build);
  c.probe = engine::probe_options(o.engine_src, built);
  c.probe_id = built.hash + " " + engine::probe_hash();
  if (built.cached) r.outcome = "skipped";
  r.summary = std::string(built.cached ? "cached" : "built") + " engine " + built.hash + " for " + b.arch + " (kernel set " +
              b.set.name + "): " + path_text(built.probe);
  return {{"hash", built.hash}, {"probe", path_text(built.probe)}};
}

PlanGrid sweep_grid(const TuneOptions& o) {
  PlanGrid g = full_grid(std::string(known_engines().front()));
  g.ncols = o.ncols;
  validate_grid(g);
  return g;
}

json sweep_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  const json sweep_inputs = {{"probe", c.probe_id}, {"model", c.identity.header_hash}, {"size", c.identity.size_bytes},
                             {"ncols", c.grid.ncols}, {"engine", c.grid.engine}, {"time_cap", o.sweep.time_cap_s},
                             {"back_to_back", o.sweep.launches_per_sample}, {"confirm", o.sweep.confirm},
                             {"confirm_time", o.sweep.confirm_time_s}, {"ci_target", o.sweep.ci_target},
                             {"seed", o.sweep.seed}};
  const std::string input = digest({"sweep 1", sweep_inputs.dump()});
  std::error_code ec;
  if (r.unchanged(input) && fs::exists(report.session, ec)) {
    // The session is trusted only as the step wrote it (records before "session_hash": its model).
    const std::string wrote = r.last()->value("session_hash", "");
    std::optional<Session> kept;
    try {
      if (wrote.empty() || wrote == state_file_hash(report.session)) kept = read_session(report.session);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::BadInput) throw;
    }
    if (kept && kept->model.header_hash == c.identity.header_hash) {
      c.session = std::move(*kept);
      return r.skipped("unchanged engine and model: " + sweep_summary(c.session));
    }
    c.note(path_text(report.session) + " is not the session this tune's sweep wrote (changed, or another model's): the sweep runs again");
  }
  // The sweep journals its results in a file of its own: a run killed mid-sweep resumes from it.
  const fs::path journal_path = report.state_dir / "sweep.journal";
  std::optional<Journal> journal;
  size_t journaled = 0;
  Device* devices[] = {&c.engine_device()};
  if (r.unfinished(input) && fs::exists(journal_path, ec)) {
    const JournalContents contents = read_journal(journal_path);
    c.session = resume_session(contents);
    journal.emplace(Journal::reopen(journal_path, contents));
    journaled = c.session.results.size();
    r.resumed(journaled, "sweep", "results", ", not measured again");
  } else {
    SweepSetup setup;
    setup.shapes = sweep_shapes(c.file, c.grid.ncols);  // as the engine launches them (plain, fused gate/up, MUL_MAT_ID)
    setup.model = c.identity;
    setup.grid = c.grid;
    setup.options = o.sweep;
    setup.kernel_source = c.engine_device().kernel_source();
    c.session = new_session(setup, devices);
    size_t planned = 0;
    for (const auto& d : c.session.devices) planned += d.plan.items.size();
    if (planned == 0) fail(ErrorKind::BadInput, "nothing to measure: no shape of " + c.identity.file_name + " has an mmvq kernel");
    fs::remove(journal_path, ec);
    journal.emplace(Journal::create(journal_path, c.session));
    r.start(input, {{"journal", path_text(journal_path)}});
  }
  std::vector<KernelPair> pairs;
  for (const PlanItem& item : c.session.devices.front().plan.items)
    if (const KernelPair p{item.type, item.ncols}; std::find(pairs.begin(), pairs.end(), p) == pairs.end()) pairs.push_back(p);
  devices[0]->prepare_kernels(pairs, {}, &c.cancel);
  run_session(c.session, devices, &*journal, c.ev.sweep ? c.ev.sweep : ProgressFn{}, c.cancel);
  if (c.session.status == "cancelled")
    fail(ErrorKind::Cancelled, "tune cancelled during the sweep; what was measured is journaled (" + journal_path.string() +
                                   "): run the same command again to go on");
  if (c.session.status == "failed")
    fail(ErrorKind::GpuFault, "the sweep stopped: " + c.session.devices.front().error + " (journal kept: " +
                                  journal_path.string() + ")");
  save_session(c.session, report.session);
  journal.reset();
  fs::remove(journal_path, ec);
  r.summary = sweep_summary(c.session) + (journaled ? " (" + std::to_string(journaled) + " from before the interruption)" : "");
  return {{"input", input}, {"session", path_text(report.session)}, {"session_hash", state_file_hash(report.session)},
          {"resumed_results", journaled}};
}

}  // namespace temper::tune::detail
