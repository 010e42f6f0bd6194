// Model-level estimate of the GEMV share of decode (DESIGN.md, "Rules of measurement").
#include "temper/estimate.h"

#include "temper/error.h"

namespace temper {
namespace {

const Result* verified(const Session& s, int device, const ShapeKey& sh, Config config) {
  const Result* r = find_result(s, group_key(device, sh, 1), config);
  return r && r->status == ResultStatus::Ok ? r : nullptr;
}

// The default config the plan recorded for a shape at ncols 1.
std::optional<Config> planned_default(const SessionDevice& d, const Shape& sh) {
  for (const auto& it : d.plan.items)
    if (it.is_default && it.ncols == 1 && it.shape() == sh.shape()) return it.config;
  return std::nullopt;
}

}  // namespace

double tokens_per_s(double us_per_token) { return us_per_token > 0 ? 1e6 / us_per_token : 0.0; }

std::optional<Verdict> unfused_verdict(const Session& s, const Verdict& pair) {
  if (!launch_is_unfused(pair.launch) || pair.verdict == kVerdictNoDefault) return std::nullopt;
  const Verdict* fused = find_verdict(s, group_key(pair.device, with_launch(pair, fused_kind(pair.launch)), pair.ncols));
  if (!fused || fused->verdict == kVerdictNoDefault) return std::nullopt;
  const double fused_best = fused->is_winner() ? fused->best_us : fused->default_us;
  if (!(pair.best_us < fused_best) || !(pair.best_ci_high < fused->default_ci_low)) return std::nullopt;
  Verdict v = pair;
  v.verdict = std::string(kVerdictWinner);
  v.default_config = fused->default_config;
  v.default_us = fused->default_us;
  v.default_ci_low = fused->default_ci_low;
  v.default_ci_high = fused->default_ci_high;
  v.speedup = v.default_us / v.best_us;
  v.speedup_low = v.default_ci_low / v.best_ci_high;
  v.speedup_high = v.default_ci_high / v.best_ci_low;
  v.note = "the unfused pair against the engine's fused launch (" + config_text(fused->default_config) + " stock)";
  return v;
}

Estimate estimate_decode(const Session& session, int device, const ConfigChoice& tuned) {
  const SessionDevice* d = find_device(session, device);
  if (!d) fail(ErrorKind::BadInput, "session " + session.id + " has no device " + std::to_string(device));
  Estimate e;
  e.device = device;
  e.bandwidth_gbs = d->copy_bandwidth_gbs;
  for (const Shape& sh : session.shapes) {
    ++e.shapes_total;
    e.bytes_per_token += double(sh.bytes_per_token);
    EstimateShape es;
    static_cast<ShapeKey&>(es) = sh;
    es.calls_per_token = sh.calls_per_token;
    es.bytes_per_token = sh.bytes_per_token;
    const std::optional<Config> def = planned_default(*d, sh);
    const Result* base = def ? verified(session, device, sh, *def) : nullptr;
    if (base) {
      es.measured = true;
      es.default_config = es.tuned_config = *def;
      es.default_us = es.tuned_us = base->time_us.median;
      if (tuned) {
        // A fused gate/up the hook runs as its unfused pair costs the pair's time.
        const ShapeKey pair = with_launch(sh, unfused_kind(sh.launch));
        const std::optional<Config> pair_choice = launch_is_fused(sh.launch) ? tuned(pair) : std::nullopt;
        const Result* pr = pair_choice ? verified(session, device, pair, *pair_choice) : nullptr;
        if (pr) {
          es.tuned_config = *pair_choice;
          es.tuned_us = pr->time_us.median;
          es.tuned_unfused = true;
        } else if (const std::optional<Config> choice = tuned(sh)) {
          if (const Result* r = verified(session, device, sh, *choice)) {
            es.tuned_config = *choice;
            es.tuned_us = r->time_us.median;
          }
        }
      }
      ++e.shapes_measured;
      e.default_us_per_token += double(sh.calls_per_token) * es.default_us;
      e.tuned_us_per_token += double(sh.calls_per_token) * es.tuned_us;
    }
    e.shapes.push_back(es);
  }
  for (auto& es : e.shapes)
    if (es.measured && e.default_us_per_token > 0)
      es.share = double(es.calls_per_token) * es.default_us / e.default_us_per_token;
  e.default_tokens_per_s = tokens_per_s(e.default_us_per_token);
  e.tuned_tokens_per_s = tokens_per_s(e.tuned_us_per_token);
  // Tokens/s if every weight byte of a token streamed at the measured copy bandwidth.
  e.ceiling_tokens_per_s =
      e.bandwidth_gbs > 0 && e.bytes_per_token > 0 ? e.bandwidth_gbs * 1e9 / e.bytes_per_token : 0.0;
  return e;
}

std::vector<Estimate> estimate_decode(const Session& session) {
  std::vector<Estimate> out;
  for (const auto& d : session.devices) {
    const int device = d.info.index;
    out.push_back(estimate_decode(session, device, [&](const ShapeKey& shape) -> std::optional<Config> {
      const Verdict* w = find_verdict(session, group_key(device, shape, 1));
      if (w && launch_is_unfused(shape.launch)) {
        if (const std::optional<Verdict> v = unfused_verdict(session, *w)) return v->config;
        return std::nullopt;
      }
      if (w && w->is_winner()) return w->config;
      return std::nullopt;
    }));
  }
  return out;
}

}  // namespace temper
