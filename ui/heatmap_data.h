#pragma once
// The heatmap's data, separate from its painting so tests can check it: one cell per
// (nwarps, rows_per_block) of one shape at one ncols, the value of the chosen metric, the marks
// (default, winner) and the colour scale.
#include <QColor>
#include <QString>
#include <optional>
#include <vector>

#include "session_doc.h"

namespace temper::ui {

enum class HeatMetric { TokensPerS, Microseconds, GBs, PercentOfCopyBw, Speedup };
inline constexpr HeatMetric kHeatMetrics[] = {HeatMetric::TokensPerS, HeatMetric::Microseconds, HeatMetric::GBs,
                                              HeatMetric::PercentOfCopyBw, HeatMetric::Speedup};
QString metricName(HeatMetric m);     // "shape tokens/s", "µs", ...
bool higherIsBetter(HeatMetric m);

enum class CellState { Empty, Ok, Failed, Invalid, Error };

struct HeatCell {
  Config config;
  CellState state = CellState::Empty;  // Empty: not in the plan or not measured yet
  std::optional<double> value;          // the metric, for Ok cells
  bool is_default = false, is_winner = false;
  const Result* result = nullptr;       // into the document's session
};

// The least spread the colour scale shows, as a fraction of the best value: cells closer than this
// (timing noise is about 1 %) keep nearby colours instead of stretching over the whole scale.
inline constexpr double kMinScaleSpread = 0.05;

struct HeatGrid {
  std::vector<int> nwarps, rows;  // row axis (nwarps) and column axis (rows_per_block), ascending
  std::vector<HeatCell> cells;    // nwarps.size() × rows.size(), row-major
  double min = 0, max = 0;        // over Ok cells
  // The values at the colour scale's ends: [min, max] widened to kMinScaleSpread; for speedup,
  // symmetric in log around 1.0 (the default), so slower reads as one hue and faster as the other.
  double scale_lo = 0, scale_hi = 0;
  bool not_swept = false;         // the sweep planned nothing at this ncols for this device
  bool empty() const { return nwarps.empty() || rows.empty(); }
  HeatCell* at(int row, int col) { return &cells[size_t(row) * rows.size() + size_t(col)]; }
  const HeatCell* at(int row, int col) const { return &cells[size_t(row) * rows.size() + size_t(col)]; }
  const HeatCell* find(Config c) const;
};

// Axes: the device plan's grid plus every config with a result (defaults outside the grid included).
HeatGrid buildHeatGrid(const Session& s, const Selection& sel, HeatMetric metric);
double metricValue(const Session& s, const Result& r, HeatMetric metric);

// Position in [0, 1] of `v` on the grid's colour scale: worst end 0, best end 1 (speedup: 0.5 is 1.0).
double goodness(const HeatGrid& g, double v, HeatMetric metric);
// A perceptually ordered scale (dark blue → green → yellow); 1 = best.
QColor heatColor(double goodness);
// Speedup's diverging scale: brown (slower than the default) → light grey (1.0) → teal (faster).
QColor divergingColor(double goodness);
// The colour of a value on the grid's scale for the metric.
QColor cellColor(const HeatGrid& g, double v, HeatMetric metric);
// What the scale shows: "cells span 1.6 %; the scale spans 5 %, so differences under it stay pale".
QString spreadText(const HeatGrid& g, HeatMetric metric);
// Perceived brightness 0..1 (Rec. 601 luma): the scale rises in it; cell text picks black or white by it.
double luma(const QColor& c);
QString formatValue(double v, HeatMetric m);
// The hover text: median, p10/p90, CI, occupancy, verification.
QString cellTooltip(const Session& s, const HeatCell& c);

}  // namespace temper::ui
