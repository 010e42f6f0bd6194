// `temper sweep`: measure every config of a model's shapes (or of given shapes) on one or more
// devices, journaled as it goes, and end with winners and the model-level estimate.
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli.h"
#include "compile_progress.h"
#include "temper/engine_device.h"
#include "temper/error.h"
#include "temper/fake_backend.h"
#include "temper/gpu_backend.h"
#include "temper/input.h"
#include "temper/gguf.h"
#include "temper/model.h"
#include "temper/plan.h"
#include "temper/sweep.h"
#include "temper/verify.h"

namespace temper::cli {
namespace cmd_sweep {  // own namespace: the commands are compiled together (unity build)
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler stores to it");
extern "C" void temper_sweep_on_sigint(int) {
  g_cancel.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once (the journal is safe)
}

int parse_int(std::string_view s, std::string_view what, int lo, int hi) { return int(parse_integer(s, what, lo, hi)); }

// The launch kind after a shape: /KIND, and /KIND:EXPERTS:USED for the MUL_MAT_ID kinds.
void parse_launch_suffix(Shape& s, const std::string& text, std::string_view suffix) {
  const size_t colon = suffix.find(':');
  const std::string kind(suffix.substr(0, colon));
  const auto launch = parse_launch(kind);
  if (!launch)
    fail(ErrorKind::BadInput, "--shape '" + text + "': unknown launch kind '" + kind + "' (expected " +
                                  std::string(launch_names()) + ")");
  if (*launch == Launch::MulMatGroup)
    fail(ErrorKind::BadInput, "--shape '" + text + "': a same-input group is not one GEMV to sweep; `temper tune` measures groups "
                                                   "in the engine's replay (docs/engine.md)");
  if (launch_is_pipelined(*launch))
    fail(ErrorKind::BadInput, "--shape '" + text + "': a pipelined launch pays in the kernels around it; `temper tune` "
                                                   "measures it with llama-bench (docs/llama-cpp.md)");
  s.launch = *launch;
  if (!launch_has_ids(s.launch)) {
    if (colon != std::string_view::npos) fail(ErrorKind::BadInput, "--shape '" + text + "': only MUL_MAT_ID kinds take :EXPERTS:USED");
    return;
  }
  const size_t colon2 = colon == std::string_view::npos ? colon : suffix.find(':', colon + 1);
  if (colon2 == std::string_view::npos)
    fail(ErrorKind::BadInput, "--shape '" + text + "': " + kind + " needs :EXPERTS:USED, e.g. /" + kind + ":128:8");
  s.experts = parse_int(suffix.substr(colon + 1, colon2 - colon - 1), "--shape experts", 1, 1 << 16);
  s.used = parse_int(suffix.substr(colon2 + 1), "--shape experts used", 1, s.experts);
}

// TYPE:N:K[:CALLS][/KIND[:EXPERTS:USED]], e.g. q4_K:4096:14336 (N rows, K values per row; CALLS per
// token, default 1; KIND a launch kind, default mul_mat).
Shape parse_shape(const std::string& full) {
  const size_t slash = full.find('/');
  const std::string text = full.substr(0, slash);
  const size_t a = text.find(':'), b = a == std::string::npos ? a : text.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos)
    fail(ErrorKind::BadInput, "--shape '" + text + "': expected TYPE:N:K[:CALLS], e.g. q4_K:4096:14336");
  const size_t c = text.find(':', b + 1);
  const auto type = parse_type(std::string_view(text).substr(0, a));
  if (!type) fail(ErrorKind::BadInput, "--shape '" + text + "': unknown type '" + text.substr(0, a) + "'");
  Shape s;
  s.type = *type;
  s.n = parse_int(std::string_view(text).substr(a + 1, b - a - 1), "--shape rows N", 1, 1 << 24);
  s.k = parse_int(std::string_view(text).substr(b + 1, c == std::string::npos ? c : c - b - 1),
                  "--shape row length K", 1, 1 << 24);
  s.calls_per_token =
      c == std::string::npos ? 1 : parse_int(std::string_view(text).substr(c + 1), "--shape calls per token", 1, 1 << 20);
  const auto row = row_bytes(s.type, uint64_t(s.k));
  if (!row)
    fail(ErrorKind::BadInput, "--shape '" + text + "': K = " + std::to_string(s.k) + " is not a multiple of " +
                                  std::string(type_name(s.type)) + "'s block of " +
                                  std::to_string(type_info(s.type).block_size));
  if (slash != std::string::npos) parse_launch_suffix(s, full, std::string_view(full).substr(slash + 1));
  s.bytes_per_token = *row * uint64_t(s.n) * uint64_t(s.calls_per_token) * uint64_t(s.gemvs());
  s.tensors = {"--shape " + full};
  return s;
}

struct OpenDevices {
  gpu::DeviceList list;
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> ptrs;
};

OpenDevices open_devices(const std::string& backend, const std::string& which) {
  OpenDevices d;
  std::vector<std::unique_ptr<Backend>> backends;
  if (backend == "fake") {
    int count = 1;
    if (const char* n = std::getenv("TEMPER_FAKE_DEVICES")) count = parse_int(n, "TEMPER_FAKE_DEVICES", 1, 64);
    backends.push_back(std::make_unique<FakeBackend>(fake_options_from_env(), count));
  } else if (backend == "gpu") {
    backends = gpu_backends();
  } else {
    fail(ErrorKind::BadInput, "--backend '" + backend + "': expected gpu (default) or fake (tests and demos)");
  }
  d.list = gpu::list_devices(std::move(backends));
  if (which == "all") {
    if (d.list.devices.empty()) fail(ErrorKind::NoDevice, d.list.why_none);
    for (size_t i = 0; i < d.list.devices.size(); ++i) d.owned.push_back(gpu::open_device(d.list, int(i)));
  } else {
    d.owned.push_back(gpu::open_device(d.list, gpu::parse_device_number(which)));
  }
  for (auto& o : d.owned) d.ptrs.push_back(o.get());
  return d;
}

// The engine's own kernel through temper-probe: one device. `--probe PATH` gives the probe; a build
// from an engine source tree (--engine-src) only has to fill in the same options with provenance.
OpenDevices open_engine(const engine::ProbeOptions& options) {
  OpenDevices d;
  d.owned.push_back(std::make_unique<engine::EngineDevice>(options));
  d.ptrs.push_back(d.owned.back().get());
  // The probe's log is kept only when the probe fails (and the error names it), so it is not named here.
  std::fprintf(stderr, "engine kernel via %s (%s, %s)\n", options.probe.c_str(), d.owned.back()->info().name.c_str(),
               d.owned.back()->info().arch.c_str());
  return d;
}

// The devices a journal was planned on, reopened in its order.
OpenDevices reopen_devices(const Session& header) {
  const std::string api = header.devices.empty() ? "" : header.devices.front().info.api;
  if (header.kernel_source.is_engine()) {
    engine::ProbeOptions o;
    o.probe = header.kernel_source.probe_path;
    o.source_path = header.kernel_source.source_path;
    o.ggml_commit = header.kernel_source.ggml_commit;
    o.hook_version = header.kernel_source.hook_version;
    OpenDevices d = open_engine(o);
    if (header.devices.size() != 1 || d.ptrs[0]->info().name != header.devices[0].info.name)
      fail(ErrorKind::NoDevice, "the journal's device (" + (header.devices.empty() ? std::string("none") : header.devices[0].info.name) +
                                    ") is not the one temper-probe " + o.probe.string() + " serves (" +
                                    d.ptrs[0]->info().name + ")");
    return d;
  }
  OpenDevices d = open_devices(api == "fake" ? "fake" : "gpu", "all");
  std::vector<Device*> ordered;
  for (const auto& sd : header.devices) {
    Device* match = nullptr;
    for (Device* dev : d.ptrs)
      if (dev->info().api == sd.info.api && dev->info().index == sd.info.index) match = dev;
    if (!match)
      fail(ErrorKind::NoDevice, "the journal's device " + std::to_string(sd.info.index) + " (" + sd.info.name + ", " +
                                    sd.info.api + ") is not present on this machine");
    ordered.push_back(match);
  }
  d.ptrs = ordered;
  return d;
}

std::string duration_text(double s) {
  char buf[32];
  if (s < 100) std::snprintf(buf, sizeof buf, "%.0f s", std::ceil(s));
  else if (s < 6000) std::snprintf(buf, sizeof buf, "%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60));
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

// Progress on stderr: a bar redrawn in place on a terminal, one plain line per result otherwise.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool bar) : bar_(bar) {}
  void operator()(const Progress& p) {
    if (bar_) {
      constexpr int kWidth = 24;
      const int filled = p.total ? int(kWidth * p.done / p.total) : 0;
      std::string current = p.current.substr(0, 60);
      std::fprintf(stderr, "\r\033[K[%s%s] %zu/%zu  ETA %s  %s", std::string(size_t(filled), '#').c_str(),
                   std::string(size_t(kWidth - filled), '.').c_str(), p.done, p.total, duration_text(p.eta_s).c_str(),
                   current.c_str());
      std::fflush(stderr);
      dirty_ = true;
    } else if (p.done != last_done_) {
      std::fprintf(stderr, "[%zu/%zu] device %d: %s (ETA %s)\n", p.done, p.total, p.device, p.current.c_str(),
                   duration_text(p.eta_s).c_str());
    }
    last_done_ = p.done;
  }
  void finish() {
    if (dirty_) std::fprintf(stderr, "\n");
    dirty_ = false;
  }

 private:
  bool bar_;
  bool dirty_ = false;
  size_t last_done_ = size_t(-1);
};

fs::path default_output(const Session& s) {
  std::string stem = s.model.synthetic() ? "sweep" : fs::path(s.model.file_name).stem().string();
  return fs::path(stem + "." + s.id + ".session.json");
}

struct Options {
  std::string model, resume, output, journal, device = "0", backend = "gpu", engine, types, ncols;
  std::vector<std::string> shapes;
  std::vector<int> nwarps, rows_per_block;
  double time_cap_s = 0, confirm_time_s = 0;  // 0: the default
  int back_to_back = 0;                       // 0: the default
  uint64_t seed = 0;                          // 0: random
  bool quick = false, json = false, no_confirm = false, force = false;
  EngineProbeArgs probe;
};

int run_sweep(const Options& o, const CLI::App& app) {
  const bool json = o.json;
  const auto& shapes_given = o.shapes;
  auto given = [&](const char* name) { return app.count(name) > 0; };

  Session session;
  OpenDevices devices;
  fs::path journal_path;
  std::optional<Journal> journal;

  if (!o.resume.empty()) {
    // Everything comes from the journal: only output options may be given with it.
    for (auto opt : {"--device", "--ncols", "--nwarps", "--rows-per-block", "--types", "--shape", "--engine",
                     "--backend", "--time-cap", "--seed", "--quick", "--journal", "--no-confirm", "--confirm-time",
                     "--back-to-back", "--probe", "--engine-src", "--arch", "--kernel-set"})
      if (given(opt))
        fail(ErrorKind::BadInput, std::string(opt) + " cannot be combined with --resume (the journal holds the plan)");
    if (!o.model.empty()) fail(ErrorKind::BadInput, "--resume takes no model file (the journal names it)");
    journal_path = o.resume;
    const JournalContents contents = read_journal(journal_path);
    session = resume_session(contents);
    devices = reopen_devices(session);
    if (contents.dropped_last_line)
      std::fprintf(stderr, "temper sweep: the journal's last line was torn (a crash); that result is measured again\n");
    std::fprintf(stderr, "resuming %s: %zu results already measured\n", session.id.c_str(), session.results.size());
    journal.emplace(Journal::reopen(journal_path, contents));
  } else {
    SweepSetup setup;
    if (!o.model.empty() && !shapes_given.empty())
      fail(ErrorKind::BadInput, "give either a model file or --shape, not both");
    setup.grid = o.quick ? quick_grid(o.engine) : full_grid(o.engine);
    if (!o.ncols.empty()) setup.grid.ncols = parse_ncols_list(o.ncols);
    if (!o.model.empty()) {
      const GgufFile file = GgufFile::open(o.model);
      const Model model = describe_model(file);
      // The engine's kernel is swept as the engine launches it (fused gate/up, MUL_MAT_ID over the
      // experts a token uses); Temper's own kernel runs plain GEMVs, one per weight matrix.
      setup.shapes = o.probe.given() ? sweep_shapes(file, setup.grid.ncols) : model.shapes;
      setup.model = model_identity(model);
    } else if (!shapes_given.empty()) {
      for (const auto& s : shapes_given) setup.shapes.push_back(parse_shape(s));
      setup.model = {std::string(kSyntheticShape), 0, "", ""};
    } else {
      fail(ErrorKind::BadInput, "nothing to sweep: give MODEL.gguf or --shape TYPE:N:K (see temper help sweep)");
    }
    if (!o.types.empty()) {
      const auto types = parse_type_list(o.types);
      std::erase_if(setup.shapes, [&](const Shape& s) {
        return std::find(types.begin(), types.end(), s.type) == types.end();
      });
      if (setup.shapes.empty()) fail(ErrorKind::BadInput, "--types " + o.types + " leaves no shape to sweep");
    }
    if (!o.nwarps.empty()) setup.grid.nwarps = o.nwarps;
    if (!o.rows_per_block.empty()) setup.grid.rows_per_block = o.rows_per_block;
    validate_grid(setup.grid);
    if (o.time_cap_s > 0) setup.options.time_cap_s = o.time_cap_s;
    if (o.back_to_back > 0) setup.options.launches_per_sample = o.back_to_back;
    setup.options.confirm = !o.no_confirm;
    if (o.confirm_time_s > 0) {
      if (!setup.options.confirm) fail(ErrorKind::BadInput, "--confirm-time has no effect with --no-confirm");
      setup.options.confirm_time_s = o.confirm_time_s;
    }
    if (o.seed) setup.options.seed = o.seed;
    if (o.probe.given()) {
      for (auto opt : {"--backend", "--device"})
        if (given(opt)) fail(ErrorKind::BadInput, std::string(opt) + " cannot be combined with --probe (the probe serves one device)");
      devices = open_engine(engine_probe_options(o.probe));
      setup.kernel_source = static_cast<engine::EngineDevice&>(*devices.owned.front()).kernel_source();
    } else {
      devices = open_devices(o.backend, o.device);
    }
    session = new_session(setup, devices.ptrs);
    for (const auto& d : session.devices)
      for (const auto& note : d.plan.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  }

  const fs::path output = !o.output.empty() ? fs::path(o.output)
                          : !o.resume.empty() && journal_path.extension() == ".journal"
                              ? journal_path.parent_path() / journal_path.stem()
                              : default_output(session);
  const fs::path model_path = o.model.empty() ? fs::path() : fs::path(o.model);
  refuse_overwriting_inputs(output, {model_path, !o.resume.empty() ? journal_path : fs::path()});
  check_output(output, {o.force});  // refused now, not after the sweep
  if (!journal) {
    // Beside the session file, unless that is a FIFO or a device: then beside the default one.
    journal_path = !o.journal.empty()          ? fs::path(o.journal)
                   : written_in_place(output) ? fs::path(default_output(session).string() + ".journal")
                                              : fs::path(output.string() + ".journal");
    refuse_overwriting_inputs(journal_path, {model_path, output}, "--journal");
    journal.emplace(Journal::create(journal_path, session, {o.force}));
  }

  size_t planned = 0, excluded = 0;
  for (const auto& d : session.devices) planned += d.plan.items.size(), excluded += d.plan.excluded.size();
  // A model with nothing mmvq runs (all f16, say) used to "complete" with 0 results and exit 0.
  if (planned == 0 && session.results.empty()) {
    std::string why;
    std::set<std::string> reasons;
    for (const auto& d : session.devices)
      for (const auto& s : d.plan.skipped_shapes) reasons.insert(s.reason);
    for (const auto& r : reasons) why += (why.empty() ? "" : "; ") + r;
    journal.reset();
    std::error_code ec;
    fs::remove(journal_path, ec);
    fail(ErrorKind::BadInput, "nothing to measure: no shape of " + session.model.file_name + " has an mmvq kernel" +
                                  (why.empty() ? std::string() : " (" + why + ")"));
  }
  std::fprintf(stderr, "sweeping %zu shapes on %zu device(s): %zu results to measure (%zu configs excluded), about %s\n",
               session.shapes.size(), session.devices.size(), planned - std::min(planned, session.results.size()),
               excluded, duration_text(estimated_seconds(session)).c_str());
  std::fprintf(stderr, "journal: %s (Ctrl-C stops; `temper sweep --resume %s` continues)\n", journal_path.c_str(),
               journal_path.c_str());

  g_cancel = false;
  const auto previous = std::signal(SIGINT, temper_sweep_on_sigint);
  // Kernels the build lacks are compiled now, before any timing: only this plan's (type, ncols),
  // for each device's arch (cached, so a second sweep starts at once).
  for (size_t i = 0; i < session.devices.size() && i < devices.ptrs.size(); ++i) {
    std::vector<KernelPair> pairs;
    for (const PlanItem& item : session.devices[i].plan.items)
      if (const KernelPair p{item.type, item.ncols}; std::find(pairs.begin(), pairs.end(), p) == pairs.end())
        pairs.push_back(p);
    const DeviceInfo& info = devices.ptrs[i]->info();
    CompileProgressPrinter compile_printer(info.arch + " kernels for device " + std::to_string(info.index));
    try {
      devices.ptrs[i]->prepare_kernels(pairs, std::ref(compile_printer), &g_cancel);
    } catch (const Error& e) {
      std::signal(SIGINT, previous);
      if (e.kind() == ErrorKind::Cancelled)
        std::fprintf(stderr, "temper sweep: cancelled while compiling kernels; `temper sweep --resume %s` continues\n",
                     journal_path.c_str());
      throw;
    }
  }
  ProgressPrinter printer(!json && ::isatty(1) && ::isatty(2));
  run_session(session, devices.ptrs, &*journal, [&](const Progress& p) { printer(p); }, g_cancel);
  std::signal(SIGINT, previous);
  printer.finish();

  save_session(session, output, {o.force});
  if (session.status == "complete") {
    journal.reset();
    std::error_code ec;
    fs::remove(journal_path, ec);  // everything is in the session now
  }
  if (json) {
    nlohmann::json j = summary_json(session);
    j["session_file"] = path_text(output);
    if (session.status != "complete") j["journal"] = path_text(journal_path);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << format_summary(session) << "\nsession saved to " << output.string() << "\n";
  }
  if (session.status == "cancelled") {
    std::fprintf(stderr, "temper sweep: cancelled; results so far are in %s; continue with `temper sweep --resume %s`\n",
                 output.c_str(), journal_path.c_str());
    return int(ErrorKind::Cancelled);
  }
  if (session.status == "failed") {
    std::string why;
    for (const auto& d : session.devices)
      if (!d.error.empty()) why = d.error;
    std::fprintf(stderr, "temper sweep: stopped early: %s (results so far kept in %s)\n", why.c_str(), output.c_str());
    return int(ErrorKind::GpuFault);
  }
  return 0;
}

Action define_sweep(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("MODEL", o->model, "a GGUF file (or give --shape)");
  add_output(app, o->output, "session file (default MODEL.ID.session.json in the current directory)");
  add_force(app, o->force);
  app.add_option("--device", o->device,
                 "device number as `temper devices` lists them (default 0); `all` runs one worker per GPU in "
                 "parallel, results tagged with their device")
      ->type_name("N|all")
      ->check(CLI::Validator(
          [](std::string& t) { return t == "all" ? std::string() : integer_in(0, 1 << 20)(t); }, ""));
  app.add_option("--shape", o->shapes,
                 "TYPE:N:K[:CALLS][/KIND[:EXPERTS:USED]], repeatable or comma-separated: N rows of K values, CALLS per "
                 "token (default 1); KIND a launch kind of the engine (mul_mat_glu, mul_mat_id:128:8, ...; default mul_mat)")
      ->delimiter(',')
      ->type_name("SHAPE");
  add_ncols(app, o->ncols)->description("batch widths, e.g. 1,2,4,8 or 1-8 (default 1,2,4,8; --quick: 1)");
  app.add_option("--nwarps", o->nwarps, "powers of two up to 32 (default 1,2,4,8,16,32; --quick: 1,2,4,8)")
      ->delimiter(',')
      ->type_name("LIST")
      ->check(integer_in(1, 64));
  app.add_option("--rows-per-block", o->rows_per_block, "powers of two up to 16 (default 1,2,4,8,16; --quick: 1,2)")
      ->delimiter(',')
      ->type_name("LIST")
      ->check(integer_in(1, 64));
  add_types(app, o->types)->description("only shapes of these types, e.g. q4_K,q6_K");
  app.add_flag("--quick", o->quick, "ncols 1 and a coarse grid");
  add_engine(app, o->engine)->description(
      "the engine version modelled: its default tables are the baseline and its kernel variant runs "
      "(docs/kernels.md)");
  add_engine_probe(app, o->probe);
  app.get_option("--probe")->description(
      "time the engine's own mmvq through temper-probe (built against a hooked ggml, docs/engine.md) instead of "
      "Temper's kernel; the baseline is the engine's own stock config, and the session records kernel source "
      "\"engine\"");
  app.add_option("--time-cap", o->time_cap_s, "longest timing per result (default 0.3)")->check(seconds_up_to(3600));
  app.add_option("--back-to-back", o->back_to_back,
                 "launches per timed sample, back to back inside one event pair, as decode runs them (default 8); "
                 "1 puts an event pair around every launch")
      ->check(integer_in(1, 64));
  app.add_option("--seed", o->seed, "inputs' seed (default: random, recorded in the session)")
      ->check(integer_in(1, UINT64_MAX));
  app.add_flag("--no-confirm", o->no_confirm, "declare winners from the main pass alone (no interleaved re-measure)");
  app.add_option("--confirm-time", o->confirm_time_s, "longest interleaved re-measure per winner (default 0.2)")
      ->check(seconds_up_to(3600));
  app.add_option("--journal", o->journal,
                 "where results are appended as they land (default OUTPUT.journal); kept when the sweep stops "
                 "early, removed once the session is saved")
      ->type_name("FILE");
  app.add_option("--resume", o->resume, "continue an interrupted sweep (same devices); nothing is measured twice")
      ->type_name("JOURNAL");
  add_json(app, o->json)->description("print a JSON summary on stdout (winners, estimates, counts, file names)");
  app.add_option("--backend", o->backend,
                 "gpu (default), or fake for tests and demos: a simulated device (host memory, CPU reference "
                 "results, synthetic timings; sessions say api \"fake\"). Knobs in the environment: "
                 "TEMPER_FAKE_DEVICES, TEMPER_FAKE_SLEEP_US, TEMPER_FAKE_WRONG, TEMPER_FAKE_LOSE_AFTER, "
                 "TEMPER_FAKE_ARCH, TEMPER_FAKE_SEED")
      ->check(one_of({"gpu", "fake"}));
  return [o, &app] { return run_sweep(*o, app); };
}

const Registrar reg{
    {"sweep", "measure every launch config of a model's GEMV shapes; pick winners; estimate tokens/s",
     "For every distinct GEMV shape of the model (or each --shape: N rows of K values, e.g.\n"
     "q4_K:4096:14336; CALLS per token for the estimate, default 1), every ncols and every config (nwarps x rows_per_block) of the grid: verify the\n"
     "kernel against the CPU reference (a failing config is recorded, never timed), then time it with\n"
     "device events until the median's 95% CI is within 1% (or --time-cap). Weights rotate through\n"
     "copies larger than twice the last-level cache, as in real decode. A config wins only when its CI\n"
     "lies wholly below the default config's, and only if an interleaved re-measure confirms it: the\n"
     "candidate and the default are timed again in alternating batches (default first, then candidate\n"
     "first, ...) so both see the same device state; otherwise the default stays, with the reason.\n"
     "Ends with a table per shape and the model-level\n"
     "estimate (GEMV share of decode tokens/s, default -> tuned, and the bandwidth ceiling).\n\n"
     "Progress goes to stderr (a bar on a terminal, plain lines otherwise). Ctrl-C stops within a second,\n"
     "saves what was measured and keeps the journal. Exit codes: 0 complete, 2 bad input, 3 no device,\n"
     "4 a device stopped early (its reason is in the session), 6 I/O, 7 interrupted.",
     define_sweep}};

}  // namespace
}  // namespace cmd_sweep
}  // namespace temper::cli
