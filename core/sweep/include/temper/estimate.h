#pragma once
// Model-level estimate of the GEMV share of decode (issue 7): per device, time per token =
// Σ_shapes calls_per_token × median time at ncols 1, for the default configs and for tuned ones;
// the bandwidth ceiling is measured copy bandwidth / bytes per token. Always labelled an estimate:
// attention, norms, sampling and launch gaps of a real decode step are not in it.
#include <functional>
#include <optional>
#include <vector>

#include "temper/session.h"

namespace temper {

// The config to count for a shape at ncols 1, or nullopt for "the default". Used by profiles to
// estimate an approval set; the session's own estimate chooses the winners.
using ConfigChoice = std::function<std::optional<Config>(const ShapeKey& shape)>;

// One device's estimate. A shape counts when a verified default result at ncols 1 exists; a chosen
// config without a verified result falls back to the default (never a guess).
Estimate estimate_decode(const Session& session, int device, const ConfigChoice& tuned);
// Every device of the session, tuned = its winners (verdict "winner") at ncols 1.
std::vector<Estimate> estimate_decode(const Session& session);

// 1e6 / us_per_token; 0 for a non-positive time.
double tokens_per_s(double us_per_token);

// An unfused pair's verdict (launch kind mul_mat_glu_unfused / mul_mat_id_glu_unfused) restated
// against what the engine runs without a profile, its fused launch: default = the fused launch's
// stock, best = the pair at its best config. A winner only when that beats the fused launch at its
// own best and its CI lies below the fused stock's; nullopt when the pair is no winner (or the
// fused launch was not measured).
std::optional<Verdict> unfused_verdict(const Session& s, const Verdict& pair);

}  // namespace temper
