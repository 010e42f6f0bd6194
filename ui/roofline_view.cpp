#include "roofline_view.h"

#include <QChart>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QToolTip>
#include <cmath>

namespace temper::ui {

namespace {
double gops(const RooflinePoint& p) { return p.ops_per_s / 1e9; }
}  // namespace

RooflineView::RooflineView(SessionDocument* doc, QWidget* parent) : QChartView(parent), doc_(doc) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(360, 240);
  connect(doc, &SessionDocument::sessionChanged, this, &RooflineView::rebuild);
  connect(doc, &SessionDocument::resultsChanged, this, &RooflineView::rebuild);
  connect(doc, &SessionDocument::selectionChanged, this, &RooflineView::updateSelection);
  rebuild();
}

// QChartView::setChart releases the previous chart without deleting it: each rebuild leaked one.
void RooflineView::showChart(QChart* chart) {
  QChart* previous = this->chart();
  setChart(chart);
  if (previous != chart) delete previous;
}

void RooflineView::rebuild() {
  auto* chart = new QChart;
  const bool dark = palette().color(QPalette::Window).lightnessF() < 0.5;
  chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  chart->setBackgroundRoundness(0);
  points_.clear();
  selected_ = nullptr;
  auto* ax = new QLogValueAxis;
  ax->setTitleText(QStringLiteral("arithmetic intensity (ops / byte)"));
  ax->setLabelFormat(QStringLiteral("%g"));
  ax->setBase(2);  // GEMV intensities span ~2–60 ops/byte: powers of two give readable ticks
  auto* ay = new QLogValueAxis;
  ay->setTitleText(QStringLiteral("achieved Gop/s"));
  ay->setLabelFormat(QStringLiteral("%.0f"));
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);

  const SessionDevice* d = doc_->currentDevice();
  if (!d) {
    chart->setTitle(QStringLiteral("Roofline: open a session or run a sweep"));
    showChart(chart);
    return;
  }
  chart->setTitle(QStringLiteral("Roofline · %1").arg(qstr(d->info.name)));
  const char* names[] = {"other configs", "default config", "winner"};
  const QColor colors[] = {QColor(120, 140, 170), QColor(230, 120, 20), QColor(30, 170, 60)};
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (int i = 0; i < 3; ++i) {
    auto* s = new QScatterSeries;
    s->setName(QString::fromUtf8(names[i]));
    s->setColor(colors[i]);
    s->setBorderColor(colors[i].darker(130));
    s->setMarkerSize(i == 0 ? 6 : 10);
    if (i == 1) s->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    points_.push_back({s, {}});
  }
  const Session& ses = doc_->session();
  Roofline roof;
  try {
    roof = build_roofline(ses, d->info.index);
  } catch (const std::exception& e) {
    chart->setTitle(QStringLiteral("Roofline: %1").arg(QString::fromStdString(e.what())));
    showChart(chart);
    return;
  }
  for (const auto& pt : roof.points) {
    const Verdict* w = find_verdict(ses, group_key(d->info.index, pt, pt.ncols));
    const int kind = w && w->is_winner() && w->config == pt.config ? 2 : pt.is_default ? 1 : 0;
    const double x = pt.intensity, y = gops(pt);
    if (x <= 0 || y <= 0) continue;
    points_[size_t(kind)].series->append(x, y);
    points_[size_t(kind)].results.push_back(pt);
    xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  }
  if (xmax <= 0) xmin = 1, xmax = 10, ymin = 1, ymax = 10;
  xmin /= 2, xmax *= 2;
  // Ceilings: bandwidths sloped (ops/s = bytes/s × ops/byte), compute peaks flat.
  const QColor ceilingColors[] = {QColor(200, 50, 50), QColor(150, 60, 200), QColor(60, 120, 220), QColor(120, 120, 120)};
  int ci = 0;
  for (const auto& c : roof.ceilings) {
    auto* l = new QLineSeries;
    const bool bw = c.kind == RooflineCeiling::Kind::Bandwidth;
    l->setName(bw ? QStringLiteral("%1: %2 GB/s").arg(qstr(c.label)).arg(c.value / 1e9, 0, 'f', 0)
                  : QStringLiteral("%1: %2 TOPS").arg(qstr(c.label)).arg(c.value / 1e12, 0, 'f', 0));
    const double y0 = bw ? c.value * xmin / 1e9 : c.value / 1e9, y1 = bw ? c.value * xmax / 1e9 : c.value / 1e9;
    l->append(xmin, y0);
    l->append(xmax, y1);
    l->setPen(QPen(ceilingColors[ci++ % 4], c.in_roof ? 2.5 : 1.5, c.measured ? Qt::SolidLine : Qt::DashLine));
    chart->addSeries(l);
    l->attachAxis(ax);
    l->attachAxis(ay);
    ymax = std::max(ymax, std::max(y0, y1));
  }
  for (size_t i = 0; i < points_.size(); ++i) {
    auto* s = points_[i].series;
    chart->addSeries(s);
    s->setColor(colors[i]);
    s->setBorderColor(colors[i].darker(130));
    s->attachAxis(ax);
    s->attachAxis(ay);
    connect(s, &QScatterSeries::clicked, this, [this, i, s](const QPointF& p) {
      const auto pts = s->points();
      for (int j = 0; j < pts.size(); ++j)
        if (pts[j] == p) return selectPoint(int(i), j);
    });
    connect(s, &QScatterSeries::hovered, this, [this, i](const QPointF& p, bool state) { hover(int(i), p, state); });
  }
  selected_ = new QScatterSeries;
  selected_->setName(QStringLiteral("selected shape"));
  chart->addSeries(selected_);
  // Styled after addSeries: the chart theme restyles series as they are added.
  selected_->setMarkerSize(18);
  selected_->setBrush(Qt::NoBrush);
  selected_->setPen(QPen(palette().color(QPalette::Highlight), 2.5));
  selected_->attachAxis(ax);
  selected_->attachAxis(ay);
  ax->setRange(xmin, xmax);
  ay->setRange(std::max(ymin / 3, 1e-3), ymax * 3);
  chart->legend()->setAlignment(Qt::AlignRight);
  showChart(chart);
  updateSelection();
}

void RooflineView::updateSelection() {
  if (!selected_) return;
  selected_->clear();
  const Selection& sel = doc_->selection();
  for (const auto& ps : points_)
    for (const auto& r : ps.results)
      if (r.shape() == sel.shape() && r.ncols == sel.ncols &&
          (!sel.config || *sel.config == r.config))
        selected_->append(r.intensity, gops(r));
}

void RooflineView::selectPoint(int series, int index) {
  if (series < 0 || size_t(series) >= points_.size()) return;
  const auto& v = points_[size_t(series)].results;
  if (index < 0 || size_t(index) >= v.size()) return;
  const RooflinePoint& r = v[size_t(index)];
  Selection s = doc_->selection();
  s.type = r.type, s.n = r.n, s.k = r.k, s.ncols = r.ncols, s.config = r.config;
  doc_->select(s);
}

void RooflineView::hover(int series, const QPointF& p, bool state) {
  if (!state) return QToolTip::hideText();
  const auto pts = points_[size_t(series)].series->points();
  for (int j = 0; j < pts.size(); ++j) {
    if (pts[j] != p) continue;
    const RooflinePoint& r = points_[size_t(series)].results[size_t(j)];
    QToolTip::showText(QCursor::pos(),
                       QStringLiteral("%1\n%2 µs · %3 GB/s\n%4 ops/byte · %5 Gop/s · %6% of roof")
                           .arg(qstr(r.label())).arg(r.median_us, 0, 'f', 2)
                           .arg(r.median_us > 0 ? r.bytes / (r.median_us * 1e3) : 0, 0, 'f', 0)
                           .arg(r.intensity, 0, 'f', 2).arg(gops(r), 0, 'f', 0).arg(r.percent_of_roof, 0, 'f', 1),
                       this);
    return;
  }
}

}  // namespace temper::ui
