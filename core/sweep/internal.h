#pragma once
// Shared inside core/sweep only.
#include <optional>
#include <span>

#include "temper/sweep.h"

namespace temper::detail {

// A-priori wall time of one result (verification, warm-up, timing).
double item_seconds(const PlanItem& item, const SweepOptions& options, double bandwidth_gbs);

// The verdict one (device, shape, ncols) group's results give on their own (select_verdicts' rule);
// nullopt when nothing in it was launched.
std::optional<Verdict> group_verdict(std::span<const Result* const> group);
// A winner the interleaved re-measure `c` (of this winner; nullptr: none) did not confirm becomes
// "default stays" with the reason in `note`; a confirmed one is marked `confirmed`.
void apply_confirmation(Verdict& w, const Confirmation* c);

}  // namespace temper::detail
