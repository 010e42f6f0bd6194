// `temper tune MODEL --engine-src DIR [--llama-bench PATH]`: check, patch, build, sweep, approve,
// install, replay and bench in one command, resumable, each step skipped while its input is unchanged.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cancel_on_sigint.h"
#include "cli.h"
#include "temper/engine_device.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/input.h"
#include "temper/gpu_backend.h"
#include "temper/tune.h"
#include "temper/verify.h"

namespace temper::cli {
namespace cmd_tune {  // own namespace: the commands are compiled together (unity build)
namespace {

struct Options {
  std::string model, output, ncols, approve = "significant";
  EngineProbeArgs probe;
  bool patch = false, json = false;
  int jobs = 0;
  double min_speedup = kDefaultMinSpeedup;
  double min_path_gain = tune::kDefaultMinPathGain;
  double min_group_gain = tune::kDefaultMinGroupGain;
  double min_pipeline_gain = tune::kDefaultMinPipelineGain;
  int replay_tokens = 40, replay_rounds = 5;
  std::string token_probe;
  int token_rounds = 5, token_tokens = 64, token_families = 4, token_greedy = 128;
  double min_token_gain = tune::kDefaultMinTokenGain;
  BenchArgs bench;
};

// One line per step on stderr, and the long steps' progress: redrawn in place on a terminal, a line
// per tenth of the work otherwise (logs stay short).
class StepPrinter {
 public:
  void started(tune::Step s, const std::string& what) {
    std::fprintf(stderr, "tune [%d/%zu] %s: %s\n", int(s) + 1, std::size(tune::kSteps), std::string(tune::step_name(s)).c_str(),
                 what.c_str());
  }
  void finished(const tune::StepReport& r) {
    end_line();
    std::fprintf(stderr, "      %s in %.1f s: %s\n", r.outcome.c_str(), r.seconds, r.summary.c_str());
  }
  // eta_s 0: unknown to the step; then it is the pace so far of this run of progress (same text).
  void progress(size_t done, size_t total, const std::string& text, double eta_s) {
    if (total == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (text != pace_text_ || done < pace_done_) pace_text_ = text, pace_start_ = now, pace_first_ = done;
    pace_done_ = done;
    if (eta_s <= 0 && done > pace_first_ && done < total)
      eta_s = std::chrono::duration<double>(now - pace_start_).count() / double(done - pace_first_) * double(total - done);
    const std::string eta = eta_s > 0 ? ", ETA " + format_number("%.0f", eta_s) + " s" : std::string();
    if (tty_) {
      std::fprintf(stderr, "\r\033[K      %zu/%zu%s  %s", done, total, eta.c_str(), text.substr(0, 60).c_str());
      dirty_ = true;
      return;
    }
    const size_t tenth = done * 10 / total;
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "      %zu/%zu%s (%s)\n", done, total, eta.c_str(), text.c_str());
  }
  void note(const std::string& text) {
    end_line();
    std::fprintf(stderr, "      note: %s\n", terminal_text(text).c_str());
  }

 private:
  void end_line() {
    if (dirty_) std::fprintf(stderr, "\n");
    dirty_ = false;
    last_tenth_ = size_t(-1);
  }
  bool tty_ = ::isatty(2);
  bool dirty_ = false;
  std::string pace_text_;
  size_t pace_done_ = 0, pace_first_ = 0;
  std::chrono::steady_clock::time_point pace_start_;
  size_t last_tenth_ = size_t(-1);
};

int run_tune(const Options& o) {
  tune::TuneOptions t;
  t.model = o.model;
  t.engine_src = o.probe.engine_src;
  t.probe = o.probe.probe;
  t.patch = o.patch;
  if (!o.ncols.empty()) t.ncols = parse_ncols_list(o.ncols);
  t.approve_all = o.approve == "all";
  t.min_speedup = o.min_speedup;
  t.min_path_gain = o.min_path_gain;
  t.min_group_gain = o.min_group_gain;
  t.min_pipeline_gain = o.min_pipeline_gain;
  t.output = o.output;
  t.replay_tokens = o.replay_tokens;
  t.replay_rounds = o.replay_rounds;
  t.token_probe = o.token_probe;
  t.token_rounds = o.token_rounds;
  t.token_tokens = o.token_tokens;
  t.token_families = o.token_families;
  t.token_greedy = o.token_greedy;
  t.min_token_gain = o.min_token_gain;
  if (!o.probe.engine_src.empty()) {
    std::string arch = o.probe.arch;
    if (arch.empty()) {  // this machine's first GPU, as `temper engine build` picks it
      gpu::DeviceList list = gpu::list_devices(gpu_backends());
      if (list.devices.empty())
        fail(ErrorKind::NoDevice, list.why_none + "; name the target with --arch sm_90 (NVIDIA) or --arch gfx90a (AMD)");
      arch = list.devices.front().info.arch;
    }
    t.build = engine::build_options(arch, o.probe.kernel_set);
    t.build.jobs = o.jobs;
  }
  if (!o.bench.llama_bench.empty()) {
    t.bench = bench_options(o.bench);
  } else if (!o.bench.stock_bench.empty()) {
    fail(ErrorKind::BadInput, "--stock-bench needs --llama-bench PATH (the patched build the profile arm runs)");
  }
  CancelOnSigint sigint;
  t.cancel = sigint.flag();
  StepPrinter printer;
  tune::TuneEvents ev;
  ev.step_started = [&](tune::Step s, const std::string& what) { printer.started(s, what); };
  ev.step_finished = [&](const tune::StepReport& r) { printer.finished(r); };
  ev.note = [&](const std::string& text) { printer.note(text); };
  ev.build = [&](const engine::BuildStep& s) {
    const double eta = s.done > 0 ? s.elapsed_s / s.done * (s.total - s.done) : 0;
    printer.progress(size_t(s.done), size_t(s.total), "engine build steps", eta);
  };
  ev.sweep = [&](const Progress& p) { printer.progress(p.done, p.total, p.current, p.eta_s); };
  ev.replay = [&](int done, int total) { printer.progress(size_t(done), size_t(total), "replay runs", 0); };
  ev.crossover = [&](int done, int total) { printer.progress(size_t(done), size_t(total), "crossover replays", 0); };
  ev.groups = [&](int done, int total) { printer.progress(size_t(done), size_t(total), "group replays", 0); };
  ev.pipeline = [&](int done, int total) { printer.progress(size_t(done), size_t(total), "pipeline replays", 0); };
  ev.token = [&](int done, int total) { printer.progress(size_t(done), size_t(total), "token probe windows", 0); };
  ev.bench = [&](const engine::BenchProgress& p) { printer.progress(size_t(p.done), size_t(p.total), p.current, p.eta_s); };
  tune::TuneReport r;
  try {
    r = tune::run_tune(t, ev);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled)
      std::fprintf(stderr, "temper tune: cancelled; the journal keeps what was done: run the same command again to go on\n");
    throw;
  }
  if (o.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"step", tune::step_name(s.step)}, {"outcome", s.outcome}, {"summary", s.summary}, {"seconds", s.seconds}});
    nlohmann::json j = {{"model", path_text(o.model)}, {"profile", path_text(r.profile)}, {"state_dir", path_text(r.state_dir)},
                        {"journal", path_text(r.journal)}, {"session", path_text(r.session)}, {"steps", steps},
                        {"notes", r.notes}, {"crossover", tune::crossover_json(r.crossover)},
                        {"groups", tune::groups_json(r.groups)},
                        {"pipeline", r.pipeline ? tune::pipeline_json(*r.pipeline) : nlohmann::json()},
                        {"replay", r.replay ? *r.replay : nlohmann::json()},
                        {"bench", r.bench ? to_json(*r.bench) : nlohmann::json()}};
    nlohmann::json coordinates = nlohmann::json::array();
    for (const tune::TokenCoordinate& c : r.token) coordinates.push_back(tune::to_json(c));
    j["token"] = {{"coordinates", coordinates},
                  {"prediction", r.token_prediction ? tune::to_json(*r.token_prediction) : nlohmann::json()}};
    // The tg speedup two ways: predicted by the token probe, measured by llama-bench.
    j["prediction"] = {{"token", r.token_prediction ? nlohmann::json(r.token_prediction->speedup) : nlohmann::json()},
                       {"bench", r.token_prediction && r.token_prediction->bench_speedup > 0
                                     ? nlohmann::json(r.token_prediction->bench_speedup) : nlohmann::json()}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("tune of %s\n\n| step | outcome | seconds | summary |\n|---|---|---:|---|\n", o.model.c_str());
  for (const auto& s : r.steps)
    std::printf("| %s | %s | %.1f | %s |\n", std::string(tune::step_name(s.step)).c_str(), s.outcome.c_str(), s.seconds,
                s.summary.c_str());
  if (!r.crossover.empty())
    std::printf("\nmmvq or mmq per type and batch width (the path the engine runs with the profile):\n%s",
                tune::crossover_text(r.crossover).c_str());
  if (!r.groups.empty())
    std::printf("\nsame-input groups (q, k, v as one launch) per batch width, whole-token replays:\n%s",
                tune::groups_text(r.groups).c_str());
  if (r.pipeline) std::printf("\npipelined launches (one column), whole-token replays:\n%s\n", tune::pipeline_text(*r.pipeline).c_str());
  if (!r.token.empty() || r.token_prediction) {
    std::printf("\nlaunch families decided by whole tokens in the engine's graph (token probe):\n");
    for (const tune::TokenCoordinate& c : r.token)
      std::printf("  %-15s %3d entries, %8.1f µs a token stock: %s\n", c.kind.c_str(), c.entries, c.weight_us, c.why.c_str());
  }
  if (const auto& p = r.token_prediction) {
    std::printf("  tg%d predicted x%.3f [%.3f, %.3f] (token probe: %.1f -> %.1f µs a token)", p->tokens, p->speedup, p->low, p->high,
                p->stock_us, p->profile_us);
    if (p->bench_speedup > 0) std::printf(", measured x%.3f (llama-bench)", p->bench_speedup);
    std::printf("\n");
    if (p->greedy_steps > 0)
      std::printf("  greedy decoding, %d steps: %s tokens as stock, logits %s\n", p->greedy_steps,
                  p->greedy_identical ? "the same" : "OTHER", p->finite ? "finite" : "NOT FINITE");
  }
  if (r.bench) std::printf("\n%s", terminal_text(bench_report_markdown(*r.bench)).c_str());
  std::printf("\nprofile: %s%s\nsession: %s\n", r.profile.c_str(),
              o.output.empty() ? " (where the engine looks when TEMPER_PROFILE is unset)" : "", r.session.c_str());
  return 0;
}

Action define_tune(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("MODEL", o->model, "a GGUF file")->required();
  add_engine_probe(app, o->probe);
  app.get_option("--probe")->description("a ready temper-probe instead of --engine-src (no check, patch or build)");
  app.add_flag("--patch", o->patch, "patch --engine-src in place first when it is stock (undo: temper engine patch DIR --undo)");
  app.add_option("--jobs", o->jobs, "parallel jobs of the engine build (default: the build tool's)")->check(integer_in(1, 1024));
  add_ncols(app, o->ncols)->description("batch widths to sweep, e.g. 1,2,4,8 (the default) or 1-8");
  app.add_option("--approve", o->approve, "which winners the profile approves: significant (default) or all")
      ->check(one_of({"significant", "all"}));
  add_min_speedup(app, o->min_speedup);
  const CLI::Validator fraction = fraction_up_to(1, "0.01 = 1%");
  app.add_option("--min-path-gain", o->min_path_gain,
                 "crossover: approve mmq (or mmvq) over ggml's pick when its CI is separated and it is at least this much "
                 "faster (default 0.01: 1 %)")
      ->type_name("FRACTION")
      ->check(fraction);
  app.add_option("--min-group-gain", o->min_group_gain,
                 "group step: approve a same-input group config when its CI lower bound beats groups off by this "
                 "fraction (default 0.01: 1 %)")
      ->type_name("FRACTION")
      ->check(fraction);
  app.add_option("--min-pipeline-gain", o->min_pipeline_gain,
                 "pipeline step: pipeline every one-column launch when llama-bench's CI lower bound beats pipelining off "
                 "by this fraction and every output is unchanged (default 0.005: 0.5 %)")
      ->type_name("FRACTION")
      ->check(fraction);
  add_output(app, o->output, "the profile (default: where the engine looks, ~/.config/temper/engine-profile.json)");
  app.add_option("--replay-tokens", o->replay_tokens, "decode replay: tokens per round (default 40)")->check(integer_in(1, 1 << 20));
  app.add_option("--replay-rounds", o->replay_rounds, "decode replay: rounds (default 5)")->check(integer_in(1, 1 << 20));
  app.add_option("--token-probe", o->token_probe,
                 "token step: a ready temper-token-probe (default: built from --engine-src, a llama.cpp tree, against the "
                 "libraries beside --llama-bench)");
  app.add_option("--token-rounds", o->token_rounds, "token step: interleaved rounds per decision and for the prediction (default 5; the norm's and the GLU's q8_1 coordinates three times as many)")
      ->check(integer_in(1, 1000));
  app.add_option("--token-tokens", o->token_tokens, "token step: tokens per timed window while deciding (default 64)")
      ->check(integer_in(1, 1 << 16));
  app.add_option("--token-families", o->token_families,
                 "token step: how many launch families (heaviest first) the token decides (default 4; 0: only the prediction)")
      ->check(integer_in(0, 16));
  app.add_option("--token-greedy", o->token_greedy, "token step: greedy steps compared, stock vs the profile (default 128; 0: none)")
      ->check(integer_in(0, 1 << 16));
  app.add_option("--min-token-gain", o->min_token_gain,
                 "token step: take the engine's own config (or groups off) for a launch family when its CI lower bound beats "
                 "the replay's choice by this fraction per token (default 0.005: 0.5 %)")
      ->type_name("FRACTION")
      ->check(fraction);
  add_bench_args(app, o->bench, false);
  add_json(app, o->json);
  return [o] { return run_tune(*o); };
}

const Registrar reg{
    {"tune", "the whole job in one command: check, patch, build, sweep, approve, install, replay, bench",
     "temper tune MODEL.gguf --engine-src DIR [--patch] [--llama-bench PATH] [--ncols 1,2,4,8] [-o PROFILE]\n"
     "  1 check    whether Temper's hook applies to DIR (engine check)\n"
     "  2 patch    with --patch: DIR patched in place when it is stock (engine patch)\n"
     "  3 build    the private hooked engine with temper-probe for this GPU (engine build; cached)\n"
     "  4 sweep    every launch config of the model's launches as the engine makes them (plain, fused gate/up,\n"
     "             MUL_MAT_ID) in the engine's own kernel (sweep --engine-src)\n"
     "  5 approve  winners by policy, as profile export does (--approve significant --min-speedup 0.03)\n"
     "  6 install  the profile where the engine looks when TEMPER_PROFILE is unset\n"
     "             (~/.config/temper/engine-profile.json), or -o: this model's measured shapes are replaced,\n"
     "             other entries of the file stay\n"
     "  7 crossover at each batch width of --ncols above 1: the token replayed with ggml's mmvq/mmq pick\n"
     "             and with each type's other path, rounds interleaved; a path choice is recorded where the\n"
     "             other path wins (approved: CI separated and at least --min-path-gain faster)\n"
     "  8 groups   at each batch width 1..4 of --ncols: the token replayed with same-input groups off and\n"
     "             with each of the 9 group configs (q, k, v as one launch), rounds interleaved; the best is\n"
     "             installed as one mul_mat_group entry per run kind when its CI lower bound beats off by\n"
     "             --min-group-gain, every run was grouped and every output agrees\n"
     "  9 replay   one decode token's GEMVs in the engine, stock vs the profile (engine replay); a profile\n"
     "             that changes any launch's output is taken back out and tune ends with exit 5\n"
     " 10 pipeline with batch width 1 in --ncols and --llama-bench (hook v7, NVIDIA): every one-column launch\n"
     "             pipelined at the config it runs (the next kernel launches as its blocks start; they prefetch\n"
     "             their rows to L2); the replay checks every output is bit for bit unchanged, llama-bench's\n"
     "             first tg test (the profile without vs with them) decides: installed as *_pipelined entries\n"
     "             when its CI lower bound beats off by --min-pipeline-gain\n"
     " 11 token    with batch width 1 in --ncols and a token probe (built from a llama.cpp --engine-src against\n"
     "             the libraries beside --llama-bench, or --token-probe): real decode tokens through the engine's\n"
     "             graph, the profile switched between windows in one process. The --token-families heaviest launch\n"
     "             families are each timed as tuned, at the engine's own config (groups: off) and, for a gate/up\n"
     "             run as the unfused pair, fused; --token-rounds interleaved; another option wins when its CI\n"
     "             lower bound beats the tuned by --min-token-gain. Then the norm that writes its GEMVs' q8_1\n"
     "             activations (hook v8: fewer launches, the same bits), off against on, three times the rounds:\n"
     "             an rms_norm_q8_1 entry when on wins by --min-token-gain; likewise the unfused gate/up pair's GLU\n"
     "             (hook v9, where the profile runs the pair): a glu_q8_1 entry; and the pair's two GEMVs as one\n"
     "             same-input group launch (a mul_mat_group entry of its two members).\n"
     "             Then stock vs the final profile: the predicted tg speedup, and --token-greedy steps of greedy\n"
     "             decoding compared (same tokens, finite logits)\n"
     " 12 bench    with --llama-bench: your llama-bench with and without the profile (engine bench), its tg\n"
     "             speedup beside the token step's prediction\n"
     "One journal in ~/.cache/temper/tune/<model and engine>/: each step records its input and is skipped\n"
     "while it is unchanged (an updated llama.cpp tree builds a new engine and re-sweeps; a re-run on the\n"
     "same tree only re-benches). Killed or Ctrl-C'd (exit 7), the same command goes on where it stopped:\n"
     "nothing journaled is measured again. --probe P takes a ready temper-probe instead of building one.",
     define_tune}};

}  // namespace
}  // namespace cmd_tune
}  // namespace temper::cli
