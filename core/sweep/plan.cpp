// The plan: shapes × ncols × configs on one device, minus what cannot run (with the reason).
#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include "internal.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/quant/reference.h"
#include "temper/sweep.h"

namespace temper {
namespace {

constexpr std::string_view kMoeMultiTokenNote =
    "MUL_MAT_ID launches are swept at ncols 1: at more tokens the engine runs its multi-token MoE kernel, whose "
    "rows per block the hook does not tune";

bool power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

void check_axis(const std::vector<int>& values, std::string_view name, int max, bool pow2) {
  if (values.empty()) fail(ErrorKind::BadInput, std::string(name) + ": no values");
  std::set<int> seen;
  for (int v : values) {
    if (v < 1 || v > max || (pow2 && !power_of_two(v)))
      fail(ErrorKind::BadInput, std::string(name) + " value " + std::to_string(v) + " is invalid: expected " +
                                    (pow2 ? "a power of two " : "an integer ") + "from 1 to " + std::to_string(max));
    if (!seen.insert(v).second)
      fail(ErrorKind::BadInput, std::string(name) + " value " + std::to_string(v) + " is listed twice");
  }
}

// Why a shape cannot be swept at all, or nullopt.
std::optional<std::string> shape_unsupported(const Shape& s) {
  if (!quant::quant_supported(s.type))
    return "no mmvq kernel or CPU reference for " + std::string(type_name(s.type)) + " in this build";
  if (s.n < 1 || s.k < 1) return std::string("empty shape");
  if (s.n > INT_MAX || s.k > INT_MAX) return std::string("N or K exceeds 2^31 - 1");
  if (s.k % 32 != 0 || !row_bytes(s.type, uint64_t(s.k)))
    return "K = " + std::to_string(s.k) + " is not a whole number of " + std::string(type_name(s.type)) +
           " blocks and q8_1 blocks of 32";
  return std::nullopt;
}

}  // namespace

std::span<const std::string_view> known_engines() { return defaults::known_engines(); }

PlanGrid full_grid(std::string engine) { return {{1, 2, 4, 8}, grid_nwarps(), grid_rows_per_block(), std::move(engine), false}; }

PlanGrid quick_grid(std::string engine) { return {{1}, {1, 2, 4, 8}, {1, 2}, std::move(engine), true}; }

void validate_grid(const PlanGrid& grid) {
  check_axis(grid.ncols, "ncols", 8, false);
  check_axis(grid.nwarps, "nwarps", grid_nwarps().back(), true);
  check_axis(grid.rows_per_block, "rows-per-block", grid_rows_per_block().back(), true);
  const auto engines = known_engines();
  if (std::find(engines.begin(), engines.end(), grid.engine) == engines.end()) {
    std::string known;
    for (auto e : engines) known += (known.empty() ? "" : ", ") + std::string(e);
    fail(ErrorKind::BadInput, "unknown engine \"" + grid.engine + "\" (known: " + known + ")");
  }
}

Plan make_plan(std::span<const Shape> shapes, const PlanGrid& grid, const Device& device) {
  validate_grid(grid);
  const DeviceInfo& info = device.info();
  Plan plan;
  plan.grid = grid;
  plan.defaults_table = std::string(defaults::table_name(grid.engine, info));

  // Largest share of decode bytes first; a (type, n, k) listed twice is measured once.
  std::vector<const Shape*> order;
  for (const auto& s : shapes) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(),
                   [](const Shape* a, const Shape* b) { return a->bytes_per_token > b->bytes_per_token; });
  std::set<ShapeKey> seen;
  std::vector<int> ncols = grid.ncols;
  std::sort(ncols.begin(), ncols.end());

  for (const Shape* s : order) {
    if (!seen.insert(s->shape()).second) continue;
    if (auto why = shape_unsupported(*s)) {
      plan.skipped_shapes.push_back({s->shape(), *why});
      continue;
    }
    if (!device.runs_launch(s->launch)) {
      plan.skipped_shapes.push_back(
          {s->shape(), "a " + std::string(launch_name(s->launch)) + " launch: " + info.name +
                           " times plain GEMVs only (sweep the engine's kernel, --engine-src or --probe)"});
      continue;
    }
    const int k = s->k;
    try {
      (void)defaults::default_config(grid.engine, info, s->type, 1, k);
    } catch (const Error& e) {
      plan.skipped_shapes.push_back({s->shape(), e.what()});  // no mmvq kernel for the type
      continue;
    }
    for (int nc : ncols) {
      // The engine fuses gate/up only at one token, and runs MUL_MAT_ID at more than one token in
      // its multi-token MoE kernel, which has no config to tune: those kinds are swept at ncols 1.
      if (nc > 1 && s->launch != Launch::MulMat) {
        if (launch_has_ids(s->launch) && std::find(plan.notes.begin(), plan.notes.end(), kMoeMultiTokenNote) == plan.notes.end())
          plan.notes.push_back(std::string(kMoeMultiTokenNote));
        continue;
      }
      const Config table_def = defaults::default_config(grid.engine, info, s->type, nc, k);
      // The engine device knows what its engine really launches: that is the baseline.
      const Config def = device.stock_config(s->type, nc, k).value_or(table_def);
      if (def != table_def)
        plan.notes.push_back(shape_text(*s) + " ncols " + std::to_string(nc) + ": the engine launches " + std::to_string(def.nwarps) +
                             "x" + std::to_string(def.rows_per_block) + ", Temper's " + grid.engine + " table says " +
                             std::to_string(table_def.nwarps) + "x" + std::to_string(table_def.rows_per_block));
      const std::optional<Config> small_k = defaults::small_k_variant(grid.engine, info, s->type, nc, k);
      // Default first (the baseline exists as early as possible), then the small-K variant, then the grid.
      std::vector<Config> configs{def};
      if (small_k && *small_k != def) configs.push_back(*small_k);
      for (int w : grid.nwarps)
        for (int r : grid.rows_per_block)
          if (std::find(configs.begin(), configs.end(), Config{w, r}) == configs.end()) configs.push_back({w, r});
      for (const Config& c : configs) {
        const bool is_default = c == def, is_small_k = small_k && c == *small_k;
        std::string reason = defaults::config_invalid_reason(s->type, nc, c, info.warp_size);
        if (reason.empty() && !device.has_kernel(s->type, nc, c))
          reason = "no kernel for this type, ncols and config in this build for " + info.arch;
        if (!reason.empty()) {
          if (is_default) reason += " (the default config: this shape and ncols have no baseline)";
          plan.excluded.push_back({s->shape(), nc, c, reason, is_default, is_small_k});
          continue;
        }
        plan.items.push_back({s->shape(), nc, c, is_default, is_small_k});
      }
    }
  }
  return plan;
}

double detail::item_seconds(const PlanItem& item, const SweepOptions& options, double bandwidth_gbs) {
  const double bytes = gemv_bytes(item.shape(), item.ncols);
  const double bw = bandwidth_gbs > 0 ? bandwidth_gbs : 100.0;
  const double launch_us = bytes / (bw * 1e3) + 8.0;  // kernel + launch and event overhead
  const double typical_samples = std::max(options.min_samples, 200);
  const double launches = options.warmup + typical_samples * options.launches_per_sample;
  const double timing = std::min(options.time_cap_s, launches * launch_us * 1e-6);
  return timing + 0.002;  // verification: one launch, poison, download, compare
}

namespace {
// The interleaved re-measure, counted for every (shape, ncols) group: an upper bound, since only
// groups with a provisional winner are confirmed.
double confirmation_seconds(const PlanItem& item, const SweepOptions& options, double bandwidth_gbs) {
  if (!options.confirm) return 0;
  return std::min(options.confirm_time_s, 2 * detail::item_seconds(item, options, bandwidth_gbs));
}
}  // namespace

namespace {
double shape_prep_seconds(const PlanItem& item, int max_ncols) {
  // Host fill + upload of the weight copies, and the CPU reference (a few ns per weight value, spread over cores).
  const double values = double(item.n) * item.k;
  return values * max_ncols * 1e-9 + gemv_bytes(item.shape(), 1) * 4 / 5e9;
}
}  // namespace

double estimated_seconds(const Plan& plan, const SweepOptions& options, double bandwidth_gbs) {
  double total = 0;
  std::map<ShapeKey, std::pair<const PlanItem*, int>> shapes;
  std::set<std::pair<ShapeKey, int>> groups;  // shape, ncols
  for (const auto& it : plan.items) {
    total += detail::item_seconds(it, options, bandwidth_gbs);
    if (groups.insert({it.shape(), it.ncols}).second) total += confirmation_seconds(it, options, bandwidth_gbs);
    auto& entry = shapes[it.shape()];
    if (!entry.first) entry.first = &it;
    entry.second = std::max(entry.second, it.ncols);
  }
  for (const auto& [key, first] : shapes) total += shape_prep_seconds(*first.first, first.second);
  return total;
}

}  // namespace temper
