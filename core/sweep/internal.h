#pragma once
// Shared inside core/sweep only.
#include "temper/sweep.h"

namespace temper::detail {

// A-priori wall time of one result (verification, warm-up, timing).
double item_seconds(const PlanItem& item, const SweepOptions& options, double bandwidth_gbs);

}  // namespace temper::detail
