#pragma once
// Tune's crossover step (issue 27 item 3, docs/llama-cpp.md): at each batch width 2..8 of tune's
// ncols, ggml picks mmvq or mmq per type (its should-use-mmvq tables for MUL_MAT, its batch cap
// for MUL_MAT_ID). The step replays the model's token at that width in the engine with the
// installed profile, once with ggml's own pick (stock) and once with one (type, launch kind) forced
// onto the other path, in interleaved rounds, and keeps the other path where it wins: approved when
// its CI is separated from stock and it is at least `min_path_gain` faster, pending when not
// significant; no record where stock stays.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/engine_replay.h"
#include "temper/plan.h"
#include "temper/profile.h"

namespace temper::tune {

inline constexpr double kDefaultMinPathGain = 0.01;

// One (type, launch kind) the model's token launches: plain MUL_MAT kinds (fused gate/up included:
// the engine unfuses them above one token) are Launch::MulMat, MUL_MAT_ID kinds Launch::MulMatId.
struct PathTarget {
  GgmlType type = GgmlType::Q4_0;
  Launch launch = Launch::MulMat;
  friend bool operator==(const PathTarget&, const PathTarget&) = default;
};
std::vector<PathTarget> path_targets(const LaunchPlan& plan);  // in the plan's order, once each

// One measured (type, launch, ncols): ggml's pick against the other path, per token of the replay.
struct CrossoverCell {
  PathTarget target;
  int ncols = 2;
  MatPath stock_path = MatPath::Mmvq, other_path = MatPath::Mmq;
  double stock_us = 0, stock_ci_low = 0, stock_ci_high = 0;
  double path_us = 0, path_ci_low = 0, path_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // stock / other path, conservative 95 % CI
  // The record the profile gets: nullopt when stock stays (the other path is not faster), else
  // Approved (CI separated and at least the minimum gain) or Pending.
  std::optional<Approval> record;
  MatPath chosen() const { return record == Approval::Approved ? other_path : stock_path; }
};

// The decision for one cell from the two arms' per-token samples (µs).
CrossoverCell decide_path(const PathTarget& target, int ncols, MatPath stock_path, const std::vector<double>& stock_us,
                          const std::vector<double>& path_us, double min_path_gain = kDefaultMinPathGain);

// One replay round at batch width `ncols` with the installed profile and these paths forced: the
// per-token µs of the profiled arm. In tune: engine::run_replay; in tests, a model of it.
using PathReplay = std::function<std::vector<double>(int ncols, const std::vector<engine::ReplayOptions::ForcedPath>& forced)>;

// What one batch width measured: the stock arm's samples and each tried target's.
struct WidthSamples {
  int ncols = 2;
  std::vector<double> stock;
  std::vector<PathTarget> targets;
  std::vector<MatPath> stock_paths;         // per target: ggml's pick
  std::vector<std::vector<double>> tried;   // per target: samples with the other path forced
};

// ggml's own pick for a target at a batch width.
using StockPath = std::function<MatPath(const PathTarget&, int ncols)>;
// The targets worth trying at `ncols`: all of them, except MUL_MAT_ID where ggml already runs mmq
// (the hook only lowers the cap: raising it would break the kernels compiled for ggml's own cap).
std::vector<PathTarget> targets_to_try(const std::vector<PathTarget>& targets, const StockPath& stock_path, int ncols);
// Those targets at `ncols`, `rounds` rounds of replays: the stock arm, then each target's other path;
// the order reverses every other round so drift hits every arm alike. `replay_done` after each replay.
WidthSamples measure_width(int ncols, const std::vector<PathTarget>& targets, const StockPath& stock_path, int rounds,
                           const PathReplay& replay, const std::function<void()>& replay_done = {});
std::vector<CrossoverCell> decide_width(const WidthSamples& w, double min_path_gain = kDefaultMinPathGain);

// Journal form of a width's samples (tune's journal, for resuming without measuring again).
nlohmann::json to_json(const WidthSamples& w);
WidthSamples width_samples_from_json(const nlohmann::json& j);

// The profile's records for the cells: one per cell that has a record, of (arch, device).
// `evidence` carries the provenance fields (source, device, kernel, model); numbers come from the cell.
std::vector<PathChoice> path_choices(const std::vector<CrossoverCell>& cells, const std::string& arch,
                                     const ProfileDevice& device, const PathEvidence& evidence, const std::string& when);

// The install rule for path choices: a record of `p` whose key the crossover measured (`cells` on
// (arch, device)) is replaced by `choices` (or removed where stock stays) when this measurement
// decides the cell — the other path approved, or slower beyond noise — or the record is not an
// approved one of another model (evidence.model other than `model`): such a record survives a
// difference within noise. Every other record stays. Sorted by key.
// Returns a line for each approved record of another model that this measurement dropped or kept
// within noise: ggml's mmvq/mmq question carries no shape, so one choice serves every model on the
// device, and what it gives one model it may cost another.
std::vector<std::string> install_paths(Profile& p, const std::vector<CrossoverCell>& cells, const std::string& arch,
                                       const ProfileDevice& device, std::vector<PathChoice> choices, const std::string& model);

// Whether `r` is an approved choice that another model's tune made (its evidence names another model).
bool another_models_choice(const PathChoice& r, const std::string& model);

// The approved path records of other models in `p` that the engine applies to this model on (arch,
// device) — their (type, launch) is among `targets` — at a batch width it did not measure
// (`measured_widths`): a line each, so that a prediction for this model says what it has not seen.
std::vector<std::string> unmeasured_paths(const Profile& p, const std::vector<PathTarget>& targets,
                                          const std::vector<int>& measured_widths, const std::string& arch,
                                          const ProfileDevice& device, const std::string& model);

// `temper tune --json`'s "crossover" (docs/json.md): one object per cell.
nlohmann::json crossover_json(const std::vector<CrossoverCell>& cells);
// One line per (type, launch): "q4_K  mul_mat  ncols 2 mmvq, 4 mmvq, 8 mmq (+3.1 %)"; a pending
// winner reads "8 mmvq (mmq +0.6 %, not significant)".
std::string crossover_text(const std::vector<CrossoverCell>& cells);

// A speedup as the step summaries print it: "+3.1 %", "-2.0 %" (the crossover's and the group step's).
std::string gain_text(double speedup);

}  // namespace temper::tune
