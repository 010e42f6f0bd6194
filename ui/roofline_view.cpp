#include "roofline_view.h"

#include <QCategoryAxis>
#include <QChart>
#include <QKeyEvent>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QMenu>
#include <QMouseEvent>
#include <QRubberBand>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "exports.h"

namespace temper::ui {

// Both axes are logarithmic: the series hold log10 of ops/byte and of op/s on linear axes whose
// ticks (categories) are labelled in the data's units, so a tick reads "200 G", never "200000".
namespace {
double lg(double v) { return std::log10(v); }

QString trimmed(double v) {
  QString t = QString::number(v, 'f', v < 10 ? 2 : v < 100 ? 1 : 0);
  if (t.contains(QLatin1Char('.'))) {
    while (t.endsWith(QLatin1Char('0'))) t.chop(1);
    if (t.endsWith(QLatin1Char('.'))) t.chop(1);
  }
  return t;
}

// Ticks of [lo, hi] (log10 units): powers of two for intensities; for rates 1-2-5 per decade while
// the axis spans a few decades, decades beyond that.
void setTicks(QCategoryAxis* axis, bool powers_of_two) {
  for (const QString& l : axis->categoriesLabels()) axis->remove(l);
  const double lo = axis->min(), hi = axis->max();
  std::vector<double> ticks;
  if (powers_of_two) {
    const double step = (hi - lo) / std::log10(2.0) > 12 ? 2 : 1;
    for (double e = std::floor(lo / std::log10(2.0)); e * std::log10(2.0) <= hi; e += step) ticks.push_back(std::pow(2.0, e));
  } else {
    const double span = hi - lo;
    const std::vector<double> mantissas = span <= 3 ? std::vector<double>{1, 2, 5} : std::vector<double>{1};
    const int step = span > 8 ? 2 : 1;
    for (int e = int(std::floor(lo)); e <= int(std::ceil(hi)); e += step)
      for (double m : mantissas) ticks.push_back(m * std::pow(10.0, e));
  }
  axis->setStartValue(lo);
  double last = lo;
  for (double t : ticks) {
    const double at = lg(t);
    if (at <= last || at > hi) continue;
    axis->append(powers_of_two ? trimmed(t) : siText(t), at);
    last = at;
  }
}

QCategoryAxis* logAxis(const QString& title, bool powers_of_two) {
  auto* a = new QCategoryAxis;
  a->setTitleText(title);
  a->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  QObject::connect(a, &QValueAxis::rangeChanged, a, [a, powers_of_two] { setTicks(a, powers_of_two); });
  return a;
}

// "int8 peak (spec) 1.98 Pop/s": integer peaks count ops, floating-point ones flops.
QString ceilingName(const RooflineCeiling& c) {
  QString label = qstr(c.label);
  label.replace(QStringLiteral(" (spec, reference)"), QStringLiteral(" (spec)"));
  if (c.kind == RooflineCeiling::Kind::Bandwidth) return QStringLiteral("%1 %2B/s").arg(label, siText(c.value));
  const bool flops = label.startsWith(QStringLiteral("fp")) || label.startsWith(QStringLiteral("bf"));
  return QStringLiteral("%1 %2%3").arg(label, siText(c.value), flops ? QStringLiteral("flop/s") : QStringLiteral("op/s"));
}

QColor ceilingColor(const RooflineCeiling& c) {
  if (c.kind == RooflineCeiling::Kind::Bandwidth) return c.measured ? QColor(200, 40, 40) : QColor(150, 90, 40);
  return c.label.rfind("int8", 0) == 0 ? QColor(130, 50, 190) : QColor(20, 140, 140);
}
}  // namespace

QString siText(double v) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 6) v /= 1000, ++i;
  return trimmed(v) + QLatin1Char(' ') + QString::fromLatin1(prefixes[i]);
}

RooflineView::RooflineView(SessionDocument* doc, QWidget* parent) : QChartView(parent), doc_(doc) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(360, 240);
  setFocusPolicy(Qt::StrongFocus);  // +/-, arrows and 0 zoom and pan
  setToolTip(QStringLiteral("Drag: zoom to a rectangle · wheel or +/-: zoom · right or middle drag, arrows: pan · "
                            "double-click or 0: everything"));
  band_ = new QRubberBand(QRubberBand::Rectangle, viewport());
  // Right-drag pans: its menu ("Save image…") opens on a right click that did not move.
  setContextMenuPolicy(Qt::PreventContextMenu);
  addSaveImageAction(this, QStringLiteral("roofline.png"));
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
  chart->setMargins(QMargins(4, 4, 4, 4));
  points_.clear();
  selected_ = nullptr;
  auto* ax = logAxis(QStringLiteral("arithmetic intensity (ops / byte)"), true);
  auto* ay = logAxis(QStringLiteral("achieved op/s (G = 10⁹, T = 10¹²)"), false);
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);

  const SessionDevice* d = doc_->currentDevice();
  if (!d) {
    chart->setTitle(QStringLiteral("Roofline: open a session or run a sweep"));
    ax->setRange(0, 2), ay->setRange(11, 14);
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
    ax->setRange(0, 2), ay->setRange(11, 14);
    showChart(chart);
    return;
  }
  for (const auto& pt : roof.points) {
    const Verdict* w = find_verdict(ses, group_key(d->info.index, pt, pt.ncols));
    const int kind = w && w->is_winner() && w->config == pt.config ? 2 : pt.is_default ? 1 : 0;
    const double x = pt.intensity, y = pt.ops_per_s;
    if (x <= 0 || y <= 0) continue;
    points_[size_t(kind)].series->append(lg(x), lg(y));
    points_[size_t(kind)].results.push_back(pt);
    xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  }
  if (xmax <= 0) xmin = 1, xmax = 10, ymin = 1e11, ymax = 1e12;
  xmin /= 2, xmax *= 2;
  double roof_top = 0;
  // Ceilings: bandwidths sloped (ops/s = bytes/s × ops/byte), compute peaks flat.
  for (const auto& c : roof.ceilings) {
    auto* l = new QLineSeries;
    const bool bw = c.kind == RooflineCeiling::Kind::Bandwidth;
    l->setName(ceilingName(c));
    const double y0 = bw ? c.value * xmin : c.value, y1 = bw ? c.value * xmax : c.value;
    l->append(lg(xmin), lg(y0));
    l->append(lg(xmax), lg(y1));
    chart->addSeries(l);
    l->setPen(QPen(ceilingColor(c), c.in_roof ? 2.5 : 1.5, c.measured ? Qt::SolidLine : Qt::DashLine));
    l->attachAxis(ax);
    l->attachAxis(ay);
    // The y axis ends above the data and the bandwidth roofs over it, not at a compute peak far
    // above a GEMV's reach (the int8 peak put every point in the lower third).
    if (bw) roof_top = std::max(roof_top, y1);
  }
  const double top = std::max(ymax, std::min(roof_top, ymax * 20)) * 3;
  for (size_t i = 0; i < points_.size(); ++i) {
    auto* s = points_[i].series;
    chart->addSeries(s);
    // Styled after addSeries: the chart theme restyles series as they are added.
    s->setColor(colors[i]);
    s->setBorderColor(colors[i].darker(130));
    s->attachAxis(ax);
    s->attachAxis(ay);
  }
  // The selection ring in the text colour: no ceiling or point series uses it.
  selected_ = new QScatterSeries;
  selected_->setName(QStringLiteral("selected"));
  chart->addSeries(selected_);
  selected_->setMarkerSize(18);
  selected_->setBrush(Qt::NoBrush);
  selected_->setPen(QPen(palette().color(QPalette::WindowText), 2.5));
  selected_->attachAxis(ax);
  selected_->attachAxis(ay);
  ax->setRange(lg(xmin), lg(xmax));
  ay->setRange(lg(std::max(ymin / 3, 1.0)), lg(top));
  showChart(chart);
  connect(chart, &QChart::plotAreaChanged, this, [this] { placeLegend(); });
  placeLegend();
  updateSelection();
}

void RooflineView::updateSelection() {
  if (!selected_) return;
  selected_->clear();
  const Selection& sel = doc_->selection();
  for (const auto& ps : points_)
    for (const auto& r : ps.results)
      if (r.shape() == sel.shape() && r.ncols == sel.ncols && (!sel.config || *sel.config == r.config))
        selected_->append(lg(r.intensity), lg(r.ops_per_s));
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

QPoint RooflineView::positionOf(const RooflinePoint& p) const {
  if (points_.empty()) return {};
  const QPointF at = chart()->mapToPosition(QPointF(lg(p.intensity), lg(p.ops_per_s)), points_.front().series);
  return mapFromScene(chart()->mapToScene(at));
}

std::optional<std::pair<int, int>> RooflineView::pointAt(QPoint pos) const {
  std::optional<std::pair<int, int>> best;
  double nearest = 8 * 8;  // within 8 px
  for (size_t i = 0; i < points_.size(); ++i)
    for (size_t j = 0; j < points_[i].results.size(); ++j) {
      const QPoint d = positionOf(points_[i].results[j]) - pos;
      const double d2 = double(d.x()) * d.x() + double(d.y()) * d.y();
      if (d2 <= nearest) nearest = d2, best = std::pair(int(i), int(j));
    }
  return best;
}

QString RooflineView::tooltipAt(QPoint pos) const {
  const auto hit = pointAt(pos);
  if (!hit) return {};
  const RooflinePoint& r = points_[size_t(hit->first)].results[size_t(hit->second)];
  return QStringLiteral("%1\n%2 µs · %3B/s\n%4 ops/byte · %5op/s · %6% of roof")
      .arg(qstr(r.label())).arg(r.median_us, 0, 'f', 2)
      .arg(siText(r.median_us > 0 ? r.bytes / (r.median_us * 1e-6) : 0))
      .arg(r.intensity, 0, 'f', 2).arg(siText(r.ops_per_s)).arg(r.percent_of_roof, 0, 'f', 1);
}

QRectF RooflineView::visibleRange() const {
  const auto axes = chart()->axes();
  const auto* x = qobject_cast<QValueAxis*>(chart()->axes(Qt::Horizontal).value(0));
  const auto* y = qobject_cast<QValueAxis*>(chart()->axes(Qt::Vertical).value(0));
  if (!x || !y) return {};
  return QRectF(QPointF(std::pow(10.0, x->min()), std::pow(10.0, y->min())),
                QPointF(std::pow(10.0, x->max()), std::pow(10.0, y->max())));
}

void RooflineView::zoomAt(QPoint pos, double factor) {
  const QRectF area = chart()->plotArea();
  const QPointF c = chart()->mapFromScene(mapToScene(pos));
  if (!area.contains(c) || factor <= 0) return;
  chart()->zoomIn(QRectF(c.x() - (c.x() - area.left()) / factor, c.y() - (c.y() - area.top()) / factor,
                         area.width() / factor, area.height() / factor));
}

void RooflineView::resetZoom() { rebuild(); }

bool RooflineView::viewportEvent(QEvent* e) {
  // The chart's scene would hide a tooltip shown on hover as soon as the help event arrives.
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const QString text = tooltipAt(he->pos());
    if (text.isEmpty()) QToolTip::showText(he->globalPos(), toolTip(), this);
    else QToolTip::showText(he->globalPos(), text, this);
    return true;
  }
  return QChartView::viewportEvent(e);
}

void RooflineView::mousePressEvent(QMouseEvent* e) {
  press_ = last_ = e->pos();
  dragging_ = e->button();
  if (dragging_ == Qt::LeftButton) band_->setGeometry(QRect(press_, QSize()));
  e->accept();
}

void RooflineView::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_ == Qt::LeftButton) {
    band_->setGeometry(QRect(press_, e->pos()).normalized());
    band_->setVisible((e->pos() - press_).manhattanLength() > 6);
  } else if (dragging_ == Qt::RightButton || dragging_ == Qt::MiddleButton) {
    const QPoint d = e->pos() - last_;
    chart()->scroll(-d.x(), d.y());
  }
  last_ = e->pos();
  e->accept();
}

void RooflineView::mouseReleaseEvent(QMouseEvent* e) {
  if (dragging_ == Qt::RightButton && (e->pos() - press_).manhattanLength() <= 3) {
    dragging_ = Qt::NoButton;
    QMenu::exec(actions(), e->globalPosition().toPoint(), nullptr, this);
    e->accept();
    return;
  }
  if (dragging_ == Qt::LeftButton) {
    band_->hide();
    if ((e->pos() - press_).manhattanLength() > 6) {
      const QRectF r(chart()->mapFromScene(mapToScene(press_)), chart()->mapFromScene(mapToScene(e->pos())));
      chart()->zoomIn(r.normalized().intersected(chart()->plotArea()));
    } else if (const auto hit = pointAt(e->pos())) {
      selectPoint(hit->first, hit->second);
    }
  }
  dragging_ = Qt::NoButton;
  e->accept();
}

void RooflineView::mouseDoubleClickEvent(QMouseEvent* e) {
  resetZoom();
  e->accept();
}

void RooflineView::wheelEvent(QWheelEvent* e) {
  zoomAt(e->position().toPoint(), std::pow(1.2, e->angleDelta().y() / 120.0));
  e->accept();
}

void RooflineView::placeLegend() {
  QChart* c = chart();
  if (!c || !c->legend()) return;
  QLegend* legend = c->legend();
  legend->setAlignment(Qt::AlignRight);
  // Beside a plot of at least 400 px; in a narrower view (the default window's tab beside the docks)
  // over the plot's top left, above the bandwidth roofs where no point can be, the lines behind it faint.
  if (width() >= 900) {
    if (!legend->isAttachedToChart()) legend->attachToChart();
    legend->setBackgroundVisible(false);
    return;
  }
  if (legend->isAttachedToChart()) legend->detachFromChart();
  QColor base = palette().color(QPalette::Base);
  base.setAlpha(215);
  legend->setBrush(base);
  legend->setPen(QPen(palette().color(QPalette::Mid)));
  legend->setBackgroundVisible(true);
  // Its size hint is the attached legend's (as wide as it needs, its height the chart's): as tall as its rows here.
  const auto markers = legend->markers();
  const auto shown = std::count_if(markers.begin(), markers.end(), [](const QLegendMarker* m) { return m->isVisible(); });
  const QSizeF size(legend->effectiveSizeHint(Qt::PreferredSize).width(), double(shown) * (QFontMetrics(legend->font()).height() + 6) + 12);
  legend->setGeometry(QRectF(c->plotArea().topLeft() + QPointF(6, 6), size));
}

void RooflineView::resizeEvent(QResizeEvent* e) {
  placeLegend();
  QChartView::resizeEvent(e);
}

void RooflineView::keyPressEvent(QKeyEvent* e) {
  const QPoint centre = mapFromScene(chart()->mapToScene(chart()->plotArea().center()));
  switch (e->key()) {
    case Qt::Key_Plus: case Qt::Key_Equal: zoomAt(centre, 1.5); break;
    case Qt::Key_Minus: zoomAt(centre, 1 / 1.5); break;
    case Qt::Key_Left: chart()->scroll(-40, 0); break;
    case Qt::Key_Right: chart()->scroll(40, 0); break;
    case Qt::Key_Up: chart()->scroll(0, 40); break;
    case Qt::Key_Down: chart()->scroll(0, -40); break;
    case Qt::Key_0: case Qt::Key_Home: resetZoom(); break;
    default: QChartView::keyPressEvent(e); return;
  }
  e->accept();
}

}  // namespace temper::ui
