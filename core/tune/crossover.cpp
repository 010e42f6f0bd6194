// Tune's crossover: mmvq or mmq per (type, launch kind, batch width), measured in the engine.
#include "temper/crossover.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "temper/error.h"
#include "temper/format.h"
#include "temper/keys.h"
#include "temper/stats.h"

namespace temper::tune {
using nlohmann::json;

namespace {
MatPath other(MatPath p) { return p == MatPath::Mmq ? MatPath::Mmvq : MatPath::Mmq; }
Launch path_launch(Launch l) { return launch_has_ids(l) ? Launch::MulMatId : Launch::MulMat; }
}  // namespace

std::string gain_text(double speedup) { return (speedup >= 1 ? "+" : "") + format_number("%.1f", (speedup - 1) * 100) + " %"; }

std::vector<PathTarget> path_targets(const LaunchPlan& plan) {
  std::vector<PathTarget> out;
  for (const PlannedLaunch& l : plan.launches)
    if (const PathTarget t{l.type, path_launch(l.launch)}; std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

CrossoverCell decide_path(const PathTarget& target, int ncols, MatPath stock_path, const std::vector<double>& stock_us,
                          const std::vector<double>& path_us, double min_path_gain) {
  if (stock_us.empty() || path_us.empty()) fail(ErrorKind::BadInput, "crossover: an arm without samples");
  CrossoverCell c;
  c.target = target;
  c.ncols = ncols;
  c.stock_path = stock_path;
  c.other_path = other(stock_path);
  const SampleStats s = summarize(stock_us), p = summarize(path_us);
  c.stock_us = s.median, c.stock_ci_low = s.ci_low, c.stock_ci_high = s.ci_high;
  c.path_us = p.median, c.path_ci_low = p.ci_low, c.path_ci_high = p.ci_high;
  c.speedup = s.median / p.median;
  c.speedup_low = s.ci_low / p.ci_high;  // conservative, as the replay's
  c.speedup_high = s.ci_high / p.ci_low;
  if (c.speedup > 1)
    c.record = c.speedup_low > 1 && c.speedup >= 1 + min_path_gain ? Approval::Approved : Approval::Pending;
  return c;
}

std::vector<PathTarget> targets_to_try(const std::vector<PathTarget>& targets, const StockPath& stock_path, int ncols) {
  std::vector<PathTarget> out;
  for (const PathTarget& t : targets)
    if (!(t.launch == Launch::MulMatId && stock_path(t, ncols) == MatPath::Mmq)) out.push_back(t);  // the cap only goes down
  return out;
}

WidthSamples measure_width(int ncols, const std::vector<PathTarget>& targets, const StockPath& stock_path, int rounds,
                           const PathReplay& replay, const std::function<void()>& replay_done) {
  WidthSamples w;
  w.ncols = ncols;
  w.targets = targets_to_try(targets, stock_path, ncols);
  for (const PathTarget& t : w.targets) w.stock_paths.push_back(stock_path(t, ncols));
  w.tried.resize(w.targets.size());
  if (w.targets.empty()) return w;
  auto run = [&](int arm) {  // -1: stock
    std::vector<engine::ReplayOptions::ForcedPath> forced;
    if (arm >= 0) forced.push_back({w.targets[size_t(arm)].type, w.targets[size_t(arm)].launch, other(w.stock_paths[size_t(arm)])});
    const std::vector<double> us = replay(ncols, forced);
    auto& into = arm < 0 ? w.stock : w.tried[size_t(arm)];
    into.insert(into.end(), us.begin(), us.end());
    if (replay_done) replay_done();
  };
  const int arms = int(w.targets.size());
  for (int round = 0; round < rounds; ++round)
    for (int i = 0; i <= arms; ++i) run(round % 2 == 0 ? i - 1 : arms - 1 - i);
  return w;
}

std::vector<CrossoverCell> decide_width(const WidthSamples& w, double min_path_gain) {
  std::vector<CrossoverCell> out;
  for (size_t i = 0; i < w.targets.size(); ++i)
    out.push_back(decide_path(w.targets[i], w.ncols, w.stock_paths[i], w.stock, w.tried[i], min_path_gain));
  return out;
}

json to_json(const WidthSamples& w) {
  json targets = json::array();
  for (size_t i = 0; i < w.targets.size(); ++i)
    targets.push_back({{"type", type_name(w.targets[i].type)}, {"launch", launch_name(w.targets[i].launch)},
                       {"stock_path", mat_path_name(w.stock_paths[i])}, {"samples", w.tried[i]}});
  return {{"ncols", w.ncols}, {"stock", w.stock}, {"targets", targets}};
}

WidthSamples width_samples_from_json(const json& j) {
  WidthSamples w;
  try {
    w.ncols = j.at("ncols").get<int>();
    w.stock = j.at("stock").get<std::vector<double>>();
    for (const json& t : j.at("targets")) {
      const auto type = parse_type(t.at("type").get<std::string>());
      const auto launch = parse_launch(t.at("launch").get<std::string>());
      const auto stock = parse_mat_path(t.at("stock_path").get<std::string>());
      if (!type || !launch || !stock) fail(ErrorKind::BadInput, "tune journal: a crossover target that is not a type, launch and path");
      w.targets.push_back({*type, *launch});
      w.stock_paths.push_back(*stock);
      w.tried.push_back(t.at("samples").get<std::vector<double>>());
    }
  } catch (const json::exception& e) {
    fail(ErrorKind::BadInput, std::string("tune journal: a crossover width that does not read: ") + e.what());
  }
  return w;
}

std::vector<PathChoice> path_choices(const std::vector<CrossoverCell>& cells, const std::string& arch,
                                     const ProfileDevice& device, const PathEvidence& evidence, const std::string& when) {
  std::vector<PathChoice> out;
  for (const CrossoverCell& c : cells) {
    if (!c.record) continue;
    PathChoice p;
    p.arch = arch;
    p.device = device;
    p.type = c.target.type;
    p.launch = c.target.launch;
    p.ncols = c.ncols;
    p.path = c.other_path;
    p.stock_path = c.stock_path;
    p.approval = *c.record;
    if (p.approval == Approval::Approved) p.decided_at = when;
    PathEvidence e = evidence;
    e.stock_us = c.stock_us, e.stock_ci_low = c.stock_ci_low, e.stock_ci_high = c.stock_ci_high;
    e.path_us = c.path_us, e.path_ci_low = c.path_ci_low, e.path_ci_high = c.path_ci_high;
    e.speedup = c.speedup, e.speedup_low = c.speedup_low, e.speedup_high = c.speedup_high;
    p.evidence = std::move(e);
    out.push_back(std::move(p));
  }
  return out;
}

namespace {
// "q4_K mul_mat ncols 8: mmq (approved on llama.gguf, +35.0 %)"
std::string record_text(const PathChoice& r) {
  std::string t = std::string(type_name(r.type)) + " " + std::string(launch_name(r.launch)) + " ncols " + std::to_string(r.ncols) + ": " +
                  std::string(mat_path_name(r.path)) + " (approved on " + (r.evidence ? r.evidence->model : std::string("?"));
  if (r.evidence) t += ", " + gain_text(r.evidence->speedup);
  return t + ")";
}
}  // namespace

bool another_models_choice(const PathChoice& r, const std::string& model) {
  return r.approval == Approval::Approved && r.evidence && r.evidence->model != model;
}

std::vector<std::string> install_paths(Profile& p, const std::vector<CrossoverCell>& cells, const std::string& arch,
                                       const ProfileDevice& device, std::vector<PathChoice> choices, const std::string& model) {
  // Path choices are per type, not per model: an approved record another model's tune made stays
  // unless this measurement decides the cell (the other path approved, or beyond noise slower).
  // A difference within noise here says nothing against a clear win there. This model's own
  // records are always replaced.
  std::vector<std::string> notes;
  std::erase_if(p.paths, [&](const PathChoice& r) {
    if (r.arch != arch || !(r.device == device)) return false;
    return std::any_of(cells.begin(), cells.end(), [&](const CrossoverCell& c) {
      if (!(c.target.type == r.type && c.target.launch == r.launch && c.ncols == r.ncols)) return false;
      if (!another_models_choice(r, model)) return true;
      if (c.record == Approval::Approved) return true;  // the same path wins here too: this model's record replaces it
      if (c.speedup_high < 1) {
        notes.push_back(record_text(r) + " is slower on " + model + " beyond noise (" + gain_text(c.speedup) +
                        "); one choice serves every model on this device (ggml's question has no shape): dropped, " +
                        std::string(mat_path_name(c.stock_path)) + " again");
        return true;
      }
      notes.push_back(record_text(r) + " kept: within noise on " + model + " (" + gain_text(c.speedup) + ")");
      return false;
    });
  });
  for (PathChoice& c : choices)
    if (std::none_of(p.paths.begin(), p.paths.end(), [&](const PathChoice& r) { return r.key() == c.key(); }))
      p.paths.push_back(std::move(c));
  std::sort(p.paths.begin(), p.paths.end(), [](const PathChoice& a, const PathChoice& b) { return a.key() < b.key(); });
  return notes;
}

std::vector<std::string> unmeasured_paths(const Profile& p, const std::vector<PathTarget>& targets,
                                          const std::vector<int>& measured_widths, const std::string& arch,
                                          const ProfileDevice& device, const std::string& model) {
  std::vector<std::string> notes;
  for (const PathChoice& r : p.paths) {
    if (r.arch != arch || !(r.device == device || r.device.name.empty()) || !another_models_choice(r, model)) continue;
    if (std::find(targets.begin(), targets.end(), PathTarget{r.type, r.launch}) == targets.end()) continue;
    if (std::find(measured_widths.begin(), measured_widths.end(), r.ncols) != measured_widths.end()) continue;
    notes.push_back(record_text(r) + " applies to " + model + " too, not measured on it: add " + std::to_string(r.ncols) +
                    " to --ncols to measure it");
  }
  return notes;
}

json crossover_json(const std::vector<CrossoverCell>& cells) {
  json out = json::array();
  for (const CrossoverCell& c : cells)
    out.push_back({{"type", type_name(c.target.type)}, {"launch", launch_name(c.target.launch)}, {"ncols", c.ncols},
                   {"stock_path", mat_path_name(c.stock_path)}, {"other_path", mat_path_name(c.other_path)},
                   {"stock_us", c.stock_us}, {"stock_ci_low", c.stock_ci_low}, {"stock_ci_high", c.stock_ci_high},
                   {"path_us", c.path_us}, {"path_ci_low", c.path_ci_low}, {"path_ci_high", c.path_ci_high},
                   {"speedup", c.speedup}, {"speedup_low", c.speedup_low}, {"speedup_high", c.speedup_high},
                   {"path", mat_path_name(c.chosen())}, {"approved", c.record == Approval::Approved},
                   {"record", c.record ? json(approval_name(*c.record)) : json(nullptr)}});
  return out;
}

std::string crossover_text(const std::vector<CrossoverCell>& cells) {
  // (type, launch) in first-seen order, widths ascending within each.
  std::vector<PathTarget> order;
  std::map<std::pair<GgmlType, Launch>, std::vector<const CrossoverCell*>> by;
  for (const CrossoverCell& c : cells) {
    if (std::find(order.begin(), order.end(), c.target) == order.end()) order.push_back(c.target);
    by[{c.target.type, c.target.launch}].push_back(&c);
  }
  std::ostringstream o;
  for (const PathTarget& t : order) {
    auto& row = by[{t.type, t.launch}];
    std::stable_sort(row.begin(), row.end(), [](const CrossoverCell* a, const CrossoverCell* b) { return a->ncols < b->ncols; });
    o << type_name(t.type) << "  " << launch_name(t.launch) << "  ncols";
    for (size_t i = 0; i < row.size(); ++i) {
      const CrossoverCell& c = *row[i];
      o << (i ? ", " : " ") << c.ncols << " " << mat_path_name(c.chosen());
      if (c.record == Approval::Approved) o << " (" << gain_text(c.speedup) << ")";
      else if (c.record) o << " (" << mat_path_name(c.other_path) << " " << gain_text(c.speedup) << ", not significant)";
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace temper::tune
