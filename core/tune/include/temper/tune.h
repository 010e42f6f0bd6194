#pragma once
// `temper tune`: the whole job in one command (docs/llama-cpp.md). check → (patch) → engine build →
// engine sweep → approve → install the profile where the engine looks (or -o) → mmvq-or-mmq
// crossover at batch widths 2..8 → same-input groups → decode replay → pipelined launches (llama-bench
// decides) → the token step (the heaviest launch families confirmed or changed by whole decode tokens in
// the engine's graph, and the tg speedup predicted; temper/token.h) → llama-bench with and without the
// profile. One journal in
// a state folder per (model, engine): every step records its input's digest and is skipped while
// that input is unchanged (an updated llama.cpp tree builds a new engine, so it re-sweeps; a re-run
// on the same tree only re-benches); the sweep keeps its own journal there, so a tune killed
// mid-sweep resumes without re-measuring anything (the crossover and the bench journal as they go).
// Each step calls the library entry point its own command uses (engine::check/patch/build,
// new_session/run_session, profile_from_session + approval, run_replay, run_bench).
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/engine_bench.h"
#include "temper/crossover.h"
#include "temper/groups.h"
#include "temper/pipeline.h"
#include "temper/token.h"
#include "temper/engine_build.h"
#include "temper/profile.h"
#include "temper/sweep.h"

namespace temper::tune {

enum class Step { Check, Patch, Build, Sweep, Approve, Install, Crossover, Groups, Replay, Pipeline, Token, Bench };
inline constexpr Step kSteps[] = {Step::Check,  Step::Patch,  Step::Build,    Step::Sweep, Step::Approve, Step::Install,
                                  Step::Crossover, Step::Groups, Step::Replay, Step::Pipeline, Step::Token, Step::Bench};
// "check", "patch", "build", "sweep", "approve", "install", "crossover", "groups", "replay", "pipeline", "token", "bench"
std::string_view step_name(Step s);

struct TuneOptions {
  std::filesystem::path model;
  // The engine: a ggml / llama.cpp tree (checked, patched when `patch`, built for build.arch), or a
  // ready temper-probe (no check, patch or build: CI, or an engine built before).
  std::filesystem::path engine_src, probe;
  engine::BuildOptions build;  // arch, kernel set, jobs, cache root (cancel is set by tune)
  bool patch = false;
  std::vector<int> ncols = {1, 2, 4, 8};
  SweepOptions sweep;                   // seed 0: a fresh random one
  bool approve_all = false;             // else "approve significant"
  double min_speedup = kDefaultMinSpeedup;
  std::filesystem::path output;         // empty: engine::default_engine_profile()
  // The decode replay and the crossover's replays (each batch width of `ncols` above 1).
  int replay_tokens = 40, replay_rounds = 5;
  double min_path_gain = kDefaultMinPathGain;  // the crossover approves a path at least this much faster
  // The group step approves a same-input group config whose CI lower bound beats groups off by this.
  double min_group_gain = kDefaultMinGroupGain;
  // The pipeline step approves pipelining every one-column launch when its CI lower bound beats off by this.
  double min_pipeline_gain = kDefaultMinPipelineGain;
  // The token step: a ready token probe (CI, or one built before); empty: built from engine_src (a
  // llama.cpp tree) against the libraries beside bench's llama-bench. No probe that can be had: not asked.
  std::filesystem::path token_probe;
  int token_rounds = 5;       // interleaved rounds per coordinate and for the prediction
  int token_tokens = 64;      // tokens per window while deciding (the prediction uses the bench's tg N)
  int token_families = 4;     // the heaviest launch families measured by the token
  int token_greedy = 128;     // greedy steps, stock and the final profile (0: none)
  double min_token_gain = kDefaultMinTokenGain;
  double token_timeout_s = 900;  // per probe run
  // llama-bench; its model and profile are tune's. Absent: no bench step.
  std::optional<engine::BenchOptions> bench;
  const std::atomic<bool>* cancel = nullptr;  // set: the running step stops, Error(Cancelled); run again to go on
};

// The state folder of a (model, engine) pair: $XDG_CACHE_HOME/temper/tune/<16 hex> (~/.cache/...).
std::filesystem::path state_dir(const TuneOptions& o);

struct StepReport {
  Step step = Step::Check;
  std::string outcome;  // "done", "skipped" (input unchanged), "resumed", "not asked"
  std::string summary;  // one line
  double seconds = 0;
};

struct TuneEvents {
  std::function<void(Step, const std::string&)> step_started;
  std::function<void(const StepReport&)> step_finished;
  std::function<void(const std::string&)> note;
  std::function<void(const engine::BuildStep&)> build;
  std::function<void(const Progress&)> sweep;
  std::function<void(int, int)> replay;
  std::function<void(int, int)> crossover;  // replay runs done of total
  std::function<void(int, int)> groups;     // the group step's replay runs done of total
  std::function<void(int, int)> pipeline;   // the pipeline step's replay runs done of total
  std::function<void(const engine::BenchProgress&)> bench;
  std::function<void(int, int)> token;      // the token step's windows done of total (per probe run)
};

struct TuneReport {
  std::vector<StepReport> steps;
  std::filesystem::path state_dir, journal, session, profile;
  Profile installed;                     // the profile at `profile` when tune ended
  std::vector<CrossoverCell> crossover;  // every measured (type, launch, ncols), as the step decided
  std::vector<GroupDecision> groups;     // the group step's decision per batch width 1..4 measured
  std::optional<PipelineDecision> pipeline;  // the pipeline step's, when it measured
  std::optional<nlohmann::json> replay;  // the replay's numbers (what `engine replay --json` prints)
  std::vector<TokenCoordinate> token;     // the token step's coordinates, as decided
  std::optional<TokenPrediction> token_prediction;  // stock vs the final profile by the token probe
  std::optional<BenchRecord> bench;
  std::vector<std::string> notes;
};

// Error(BadInput) for bad options, an engine tree the hook does not apply to, a model with nothing
// mmvq runs; Error(Cancelled) when `cancel` stopped it (the journal keeps what was done); the
// steps' own errors otherwise.
TuneReport run_tune(const TuneOptions& options, const TuneEvents& events = {});

// The install step's rule: `tuned` replaces, for the arches it was measured on, every entry of
// `current` whose (type, N, K, ncols) the session measured; every other entry of `current` (other
// models' shapes, other arches) and its bench records stay.
Profile install_profile(const Profile& current, const Profile& tuned, const Session& session);

}  // namespace temper::tune
