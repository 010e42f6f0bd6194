#include "heatmap_data.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace temper::ui {

QString metricName(HeatMetric m) {
  switch (m) {
    case HeatMetric::TokensPerS: return QStringLiteral("shape tokens/s");
    case HeatMetric::Microseconds: return QStringLiteral("µs per call");
    case HeatMetric::GBs: return QStringLiteral("GB/s");
    case HeatMetric::PercentOfCopyBw: return QStringLiteral("% of copy bandwidth");
    case HeatMetric::Speedup: return QStringLiteral("speedup vs default");
  }
  return {};
}

bool higherIsBetter(HeatMetric m) { return m != HeatMetric::Microseconds; }

const HeatCell* HeatGrid::find(Config c) const {
  for (const auto& cell : cells)
    if (cell.config == c) return &cell;
  return nullptr;
}

double metricValue(const Session& s, const Result& r, HeatMetric metric) {
  const double us = r.time_us.median;
  switch (metric) {
    case HeatMetric::TokensPerS: {
      // Tokens per second this shape alone allows: ncols tokens per call, calls_per_token calls each.
      const Shape* sh = findShape(s.shapes, r);
      const double calls = sh && sh->calls_per_token > 0 ? double(sh->calls_per_token) : 1.0;
      return us > 0 ? 1e6 * r.ncols / (calls * us) : 0;
    }
    case HeatMetric::Microseconds: return us;
    case HeatMetric::GBs: return r.gbs;
    case HeatMetric::PercentOfCopyBw: {
      const SessionDevice* d = find_device(s, r.device);
      return d && d->copy_bandwidth_gbs > 0 ? 100.0 * r.gbs / d->copy_bandwidth_gbs : 0;
    }
    case HeatMetric::Speedup: {
      const Verdict* w = find_verdict(s, r);
      const Result* def = w ? find_result(s, r, w->default_config) : nullptr;
      return def && def->status == ResultStatus::Ok && us > 0 ? def->time_us.median / us : 0;
    }
  }
  return 0;
}

namespace {
// The scale's ends (see HeatGrid::scale_lo).
void setScale(HeatGrid& g, HeatMetric metric) {
  if (metric == HeatMetric::Speedup) {
    const double half = std::max({std::abs(std::log(std::max(g.min, 1e-9))), std::abs(std::log(std::max(g.max, 1e-9))),
                                  std::log(1 + kMinScaleSpread)});
    g.scale_lo = std::exp(-half), g.scale_hi = std::exp(half);
    return;
  }
  g.scale_lo = g.min, g.scale_hi = g.max;
  const double least = kMinScaleSpread * std::max(std::abs(g.min), std::abs(g.max));
  if (g.max - g.min >= least) return;
  if (higherIsBetter(metric)) g.scale_lo = g.max - least;  // the best cell keeps the best colour
  else g.scale_hi = g.min + least;
}
}  // namespace

HeatGrid buildHeatGrid(const Session& s, const Selection& sel, HeatMetric metric) {
  HeatGrid g;
  if (!sel.valid()) return g;
  std::set<int> nw, rows;
  if (const SessionDevice* d = find_device(s, sel.device)) {
    // A batch width the sweep never planned has no grid to show, only that it was not swept.
    const bool planned = std::any_of(d->plan.items.begin(), d->plan.items.end(), [&](const PlanItem& it) { return it.ncols == sel.ncols; }) ||
                         std::any_of(s.results.begin(), s.results.end(), [&](const Result& r) { return r.device == sel.device && r.ncols == sel.ncols; });
    if (!planned) {
      g.not_swept = true;
      return g;
    }
    nw.insert(d->plan.grid.nwarps.begin(), d->plan.grid.nwarps.end());
    rows.insert(d->plan.grid.rows_per_block.begin(), d->plan.grid.rows_per_block.end());
  } else {
    nw.insert(s.grid.nwarps.begin(), s.grid.nwarps.end());
    rows.insert(s.grid.rows_per_block.begin(), s.grid.rows_per_block.end());
  }
  std::vector<const Result*> mine;
  for (const auto& r : s.results)
    if (r.group() == sel.group()) {
      mine.push_back(&r);
      nw.insert(r.config.nwarps);
      rows.insert(r.config.rows_per_block);
    }
  g.nwarps.assign(nw.begin(), nw.end());
  g.rows.assign(rows.begin(), rows.end());
  g.cells.resize(g.nwarps.size() * g.rows.size());
  for (size_t i = 0; i < g.nwarps.size(); ++i)
    for (size_t j = 0; j < g.rows.size(); ++j) g.at(int(i), int(j))->config = {g.nwarps[i], g.rows[j]};

  const Verdict* w = find_verdict(s, sel);
  bool first = true;
  for (const Result* r : mine) {
    const auto i = std::find(g.nwarps.begin(), g.nwarps.end(), r->config.nwarps) - g.nwarps.begin();
    const auto j = std::find(g.rows.begin(), g.rows.end(), r->config.rows_per_block) - g.rows.begin();
    HeatCell& c = *g.at(int(i), int(j));
    c.result = r;
    c.is_default = r->is_default;
    switch (r->status) {
      case ResultStatus::Ok: c.state = CellState::Ok; break;
      case ResultStatus::Failed: c.state = CellState::Failed; break;
      case ResultStatus::Invalid: c.state = CellState::Invalid; break;
      case ResultStatus::Error: c.state = CellState::Error; break;
    }
    if (c.state == CellState::Ok) {
      const double v = metricValue(s, *r, metric);
      c.value = v;
      g.min = first ? v : std::min(g.min, v);
      g.max = first ? v : std::max(g.max, v);
      first = false;
    }
  }
  if (w) {
    for (auto& c : g.cells) {
      if (c.config == w->default_config) c.is_default = true;
      if (w->is_winner() && c.config == w->config) c.is_winner = true;
    }
  }
  setScale(g, metric);
  // Excluded configs (never launched) show as invalid even before their result rows exist.
  if (const SessionDevice* d = find_device(s, sel.device))
    for (const auto& e : d->plan.excluded)
      if (e.shape() == sel.shape() && e.ncols == sel.ncols)
        for (auto& c : g.cells)
          if (c.config == e.config && c.state == CellState::Empty) c.state = CellState::Invalid;
  return g;
}

double goodness(const HeatGrid& g, double v, HeatMetric metric) {
  if (metric == HeatMetric::Speedup) {
    const double half = std::log(g.scale_hi);
    return half > 0 && v > 0 ? 0.5 + 0.5 * std::clamp(std::log(v) / half, -1.0, 1.0) : 0.5;
  }
  if (g.scale_hi <= g.scale_lo) return 1.0;
  const double t = std::clamp((v - g.scale_lo) / (g.scale_hi - g.scale_lo), 0.0, 1.0);
  return higherIsBetter(metric) ? t : 1.0 - t;
}

namespace {
QColor blend(const QColor* stops, int n, double t) {
  t = std::clamp(t, 0.0, 1.0) * (n - 1);
  const int i = std::min(int(t), n - 2);
  const double f = t - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f), float(a.greenF() + (b.greenF() - a.greenF()) * f),
                          float(a.blueF() + (b.blueF() - a.blueF()) * f));
}
}  // namespace

QColor divergingColor(double t) {
  // ColorBrewer's BrBG: readable with the common colour-vision deficiencies; neutral at the middle.
  static const QColor stops[] = {QColor(140, 81, 10), QColor(216, 179, 101), QColor(245, 245, 245), QColor(90, 180, 172),
                                 QColor(1, 102, 94)};
  return blend(stops, 5, t);
}

QColor cellColor(const HeatGrid& g, double v, HeatMetric metric) {
  const double t = goodness(g, v, metric);
  return metric == HeatMetric::Speedup ? divergingColor(t) : heatColor(t);
}

QString spreadText(const HeatGrid& g, HeatMetric metric) {
  if (g.max <= 0) return {};
  if (metric == HeatMetric::Speedup)
    return QStringLiteral("cells %1× – %2×; the scale is centred on 1.000 (the default) and spans ±%3 %")
        .arg(g.min, 0, 'f', 3).arg(g.max, 0, 'f', 3).arg(100 * (g.scale_hi - 1), 0, 'f', 1);
  const double cells = 100 * (g.max - g.min) / std::max(std::abs(g.max), std::abs(g.min));
  const double scale = 100 * (g.scale_hi - g.scale_lo) / std::max(std::abs(g.scale_hi), std::abs(g.scale_lo));
  QString t = QStringLiteral("cells span %1 %").arg(cells, 0, 'f', 1);
  if (scale > cells + 0.05) t += QStringLiteral("; the scale spans %1 %, so smaller differences stay pale").arg(scale, 0, 'f', 0);
  return t;
}

QColor heatColor(double t) {
  // Five stops of a viridis-like scale: ordered in lightness, readable for colour-blind users.
  static const QColor stops[] = {QColor(68, 1, 84), QColor(59, 82, 139), QColor(33, 145, 140), QColor(94, 201, 98),
                                 QColor(253, 231, 37)};
  return blend(stops, 5, t);
}

double luma(const QColor& c) { return 0.299 * c.redF() + 0.587 * c.greenF() + 0.114 * c.blueF(); }

QString formatValue(double v, HeatMetric m) {
  switch (m) {
    case HeatMetric::Speedup: return QString::number(v, 'f', 3);
    case HeatMetric::PercentOfCopyBw: return QString::number(v, 'f', 1);
    default: return v >= 100 ? QString::number(v, 'f', 0) : QString::number(v, 'f', v >= 10 ? 1 : 2);
  }
}

QString cellTooltip(const Session& s, const HeatCell& c) {
  QString t = QStringLiteral("<b>nwarps %1, rows_per_block %2</b>").arg(c.config.nwarps).arg(c.config.rows_per_block);
  if (c.is_default) t += QStringLiteral(" · default");
  const Result* r = c.result;
  if (c.is_winner) {
    t += QStringLiteral(" · winner");
    // Whether the sweep's interleaved re-measure against the default confirmed it.
    if (const Verdict* w = r ? find_verdict(s, *r) : nullptr)
      t += w->confirmed ? QStringLiteral(" (confirmed)") : QStringLiteral(" (not re-measured)");
  }
  if (!r) return t + (c.state == CellState::Invalid ? QStringLiteral("<br>excluded by the plan") : QStringLiteral("<br>not measured"));
  if (r->status != ResultStatus::Ok)
    return t + QStringLiteral("<br>%1: %2").arg(qstr(result_status_name(r->status)), qstr(r->failure).toHtmlEscaped());
  const auto& st = r->time_us;
  t += QStringLiteral("<br>median %1 µs (n=%2)<br>p10 %3 · p90 %4 µs<br>95% CI %5 – %6 µs")
           .arg(st.median, 0, 'f', 2).arg(st.n).arg(st.p10, 0, 'f', 2).arg(st.p90, 0, 'f', 2)
           .arg(st.ci_low, 0, 'f', 2).arg(st.ci_high, 0, 'f', 2);
  t += QStringLiteral("<br>%1 GB/s").arg(r->gbs, 0, 'f', 0);
  if (const SessionDevice* d = find_device(s, r->device); d && d->copy_bandwidth_gbs > 0)
    t += QStringLiteral(" (%1% of copy)").arg(100.0 * r->gbs / d->copy_bandwidth_gbs, 0, 'f', 1);
  // In the device's vendor's words: NVIDIA counts warps per SM sub-partition, AMD waves per SIMD.
  const SessionDevice* dev = find_device(s, r->device);
  const bool nvidia = dev && dev->info.arch.rfind("sm_", 0) == 0;
  if (auto occ = result_occupancy(s, *r))
    t += QStringLiteral("<br>occupancy %1 %2 of %3 (%4-limited), %5 regs")
             .arg(occ->waves_per_simd, 0, 'f', 1)
             .arg(nvidia ? QStringLiteral("warps per SM sub-partition") : QStringLiteral("waves/SIMD"))
             .arg(occ->max_waves_per_simd)
             .arg(nvidia && occ->limiter == OccupancyLimiter::Waves ? QStringLiteral("warps")
                  : nvidia && occ->limiter == OccupancyLimiter::Lds  ? QStringLiteral("shared-memory")
                                                                      : qstr(limiter_name(occ->limiter)))
             .arg(r->kernel->registers);
  else
    t += QStringLiteral("<br>occupancy: not recorded");
  t += QStringLiteral("<br>verification: max |err| %1 (%2% of tolerance)")
           .arg(r->max_abs_error, 0, 'g', 3).arg(100.0 * r->worst_error_ratio, 0, 'f', 1);
  return t;
}

}  // namespace temper::ui
