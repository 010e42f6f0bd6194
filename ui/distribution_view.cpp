#include "distribution_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

#include "exports.h"

namespace temper::ui {

std::vector<DistributionRow> distributionRows(const Session& s, const Selection& sel) {
  std::vector<DistributionRow> rows;
  if (!sel.valid()) return rows;
  const Verdict* w = find_verdict(s, sel);
  for (const Result& r : s.results) {
    if (r.group() != sel.group() || r.status != ResultStatus::Ok || r.time_us.n == 0) continue;
    rows.push_back({r.config, &r, r.is_default || (w && w->default_config == r.config),
                    w && w->is_winner() && w->config == r.config});
  }
  std::sort(rows.begin(), rows.end(), [](const DistributionRow& a, const DistributionRow& b) {
    return a.result->time_us.median < b.result->time_us.median;
  });
  return rows;
}

DistributionView::DistributionView(SessionDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  setMinimumSize(360, 240);
  addSaveImageAction(this, QStringLiteral("samples.png"));
  connect(doc, &SessionDocument::sessionChanged, this, &DistributionView::rebuild);
  connect(doc, &SessionDocument::resultsChanged, this, &DistributionView::rebuild);
  connect(doc, &SessionDocument::selectionChanged, this, &DistributionView::rebuild);
  rebuild();
}

void DistributionView::rebuild() {
  rows_ = doc_->hasSession() ? distributionRows(doc_->session(), doc_->selection()) : std::vector<DistributionRow>{};
  update();
}

namespace {
QString rowLabel(const DistributionRow& r) {
  return configText(r.config) + (r.is_winner ? QStringLiteral(" ★ winner") : r.is_default ? QStringLiteral(" default") : QString());
}
}  // namespace

DistributionView::Layout DistributionView::layout(QSize size) const {
  Layout l;
  const QFontMetrics fm(font());
  const int top = fm.height() * 2 + 10;
  int label_w = fm.horizontalAdvance(QStringLiteral("16×8 ★ winner")) + 12;
  for (const auto& r : rows_) label_w = std::max(label_w, fm.horizontalAdvance(rowLabel(r)) + 12);
  const int trace_h = std::max(140, size.height() * 3 / 10);
  const int boxes_h = std::max(40, size.height() - top - trace_h - 3 * fm.height() - 24);
  l.row_h = rows_.empty() ? 0 : std::clamp(boxes_h / int(rows_.size()), 8, 26);
  const int right = fm.horizontalAdvance(QStringLiteral("median 00000.00 µs ±00.00")) + 16;
  l.labels = QRect(4, top, label_w, l.row_h * int(rows_.size()));
  l.boxes = QRect(label_w + 8, top, std::max(40, size.width() - label_w - right - 16), l.labels.height());
  l.trace = QRect(l.boxes.left(), l.boxes.bottom() + 3 * fm.height() + 12, l.boxes.width(),
                  std::max(60, size.height() - l.boxes.bottom() - 4 * fm.height() - 20));
  return l;
}

QRect DistributionView::rowRect(int row) const {
  const Layout l = layout(size());
  return QRect(l.labels.left(), l.boxes.top() + row * l.row_h, l.boxes.right() - l.labels.left(), l.row_h);
}

QRect DistributionView::traceRect() const { return layout(size()).trace; }

const DistributionRow* DistributionView::traced() const {
  if (rows_.empty()) return nullptr;
  const Selection& sel = doc_->selection();
  for (const auto& r : rows_)
    if (sel.config && r.config == *sel.config) return &r;
  for (const auto& r : rows_)
    if (r.is_winner) return &r;
  return &rows_.front();
}

QString DistributionView::traceText() const {
  const DistributionRow* r = traced();
  if (!r) return {};
  const auto& t = r->result->trace_us;
  if (t.size() < 2)
    return QStringLiteral("Sample order of %1: not recorded in this session (sessions recorded by this Temper keep it)")
        .arg(configText(r->config));
  const double drift = t.front() > 0 ? 100.0 * (t.back() / t.front() - 1) : 0;
  return QStringLiteral("Sample order of %1: %2 samples as %3 run medians, first → last %4%5 %")
      .arg(configText(r->config)).arg(r->result->time_us.n).arg(t.size())
      .arg(drift >= 0 ? QStringLiteral("+") : QString()).arg(drift, 0, 'f', 1);
}

void DistributionView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paintView(p, size());
}

void DistributionView::paintView(QPainter& p, QSize size) const {
  const QPalette& pal = palette();
  p.fillRect(QRect(QPoint(0, 0), size), pal.window());
  p.setFont(font());
  p.setPen(pal.color(QPalette::WindowText));
  const QFontMetrics fm(font());
  const Selection& sel = doc_->selection();
  if (rows_.empty()) {
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap,
               doc_->hasSession() ? QStringLiteral("No verified timing for %1 at ncols %2").arg(shapeText(sel)).arg(sel.ncols)
                                  : QStringLiteral("Open a session to see the distribution of its timings"));
    return;
  }
  p.setRenderHint(QPainter::Antialiasing);
  const Layout l = layout(size);
  p.drawText(QRect(0, 4, size.width(), fm.height()), Qt::AlignHCenter,
             QStringLiteral("%1 · ncols %2 · µs per call, fastest first").arg(shapeText(sel)).arg(sel.ncols));
  p.drawText(QRect(0, 4 + fm.height(), size.width(), fm.height()), Qt::AlignHCenter,
             QStringLiteral("whiskers min – max · box p10 – p90 · line median · dark bar its 95% CI"));
  // The scale covers the configs that compete (within kFocus of the fastest median, and the default
  // and the winner), so their boxes are wide enough to compare; slower ones keep their row and
  // median and end in an arrow at the edge, as do whiskers beyond it.
  constexpr double kFocus = 1.15;
  double lo = 1e300, hi = 0;
  const double fastest = rows_.front().result->time_us.median;
  for (const auto& r : rows_) {
    const SampleStats& s = r.result->time_us;
    if (s.median > kFocus * fastest && !r.is_default && !r.is_winner) continue;
    lo = std::min(lo, s.min);
    hi = std::max(hi, std::min(s.max, s.p90 + 3 * (s.p90 - s.p10)));
  }
  const double pad = std::max((hi - lo) * 0.05, 1e-3 * std::max(hi, 1e-9));
  lo = std::max(0.0, lo - pad), hi += pad;
  auto x = [&](double v) { return l.boxes.left() + (std::clamp(v, lo, hi) - lo) / (hi - lo) * l.boxes.width(); };
  const QColor box = pal.color(QPalette::Highlight).lighter(150), ci = pal.color(QPalette::Highlight).darker(130);
  for (int i = 0; i < int(rows_.size()); ++i) {
    const DistributionRow& r = rows_[size_t(i)];
    const SampleStats& s = r.result->time_us;
    const QRect row(l.boxes.left(), l.boxes.top() + i * l.row_h, l.boxes.width(), l.row_h);
    const bool selected = sel.config && *sel.config == r.config;
    if (selected) p.fillRect(QRect(0, row.top(), size.width(), row.height()), pal.color(QPalette::AlternateBase));
    QFont f = font();
    f.setBold(r.is_winner || r.is_default);
    p.setFont(f);
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRect(l.labels.left(), row.top(), l.labels.width() - 8, row.height()), Qt::AlignRight | Qt::AlignVCenter, rowLabel(r));
    p.setFont(font());
    const double cy = row.center().y() + 0.5, h = std::max(3.0, row.height() * 0.6);
    if (s.p10 <= hi) p.drawLine(QPointF(x(s.min), cy), QPointF(x(s.max), cy));
    if (s.max > hi) p.drawText(QRectF(x(hi) - 10, row.top(), 10, row.height()), Qt::AlignCenter, QStringLiteral("▸"));
    if (s.p10 > hi) {  // off the scale: slower than the configs that compete
      p.setPen(pal.color(QPalette::WindowText));
      p.drawText(QRect(l.boxes.left(), row.top(), l.boxes.width() - 14, row.height()), Qt::AlignRight | Qt::AlignVCenter,
                 QStringLiteral("slower, off the scale"));
    } else {
      p.fillRect(QRectF(x(s.p10), cy - h / 2, std::max(1.0, x(s.p90) - x(s.p10)), h), box);
      p.fillRect(QRectF(x(s.ci_low), cy - h / 4, std::max(2.0, x(s.ci_high) - x(s.ci_low)), h / 2), ci);
      p.setPen(QPen(pal.color(QPalette::WindowText), 2));
      p.drawLine(QPointF(x(s.median), cy - h / 2), QPointF(x(s.median), cy + h / 2));
    }
    p.setPen(pal.color(QPalette::WindowText));
    p.drawText(QRect(l.boxes.right() + 8, row.top(), size.width() - l.boxes.right() - 8, row.height()), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("median %1 µs ±%2").arg(s.median, 0, 'f', 2).arg((s.ci_high - s.ci_low) / 2, 0, 'f', 2));
  }
  // The µs axis under the boxes.
  p.drawLine(l.boxes.left(), l.boxes.bottom() + 2, l.boxes.right(), l.boxes.bottom() + 2);
  for (int t = 0; t <= 4; ++t) {
    const double v = lo + (hi - lo) * t / 4;
    const int px = int(x(v));
    p.drawLine(px, l.boxes.bottom() + 2, px, l.boxes.bottom() + 6);
    p.drawText(QRect(px - 40, l.boxes.bottom() + 6, 80, fm.height()), Qt::AlignHCenter, QString::number(v, 'f', v < 100 ? 2 : 1));
  }
  p.drawText(QRect(l.boxes.left(), l.boxes.bottom() + 6 + fm.height(), l.boxes.width(), fm.height()), Qt::AlignHCenter,
             QStringLiteral("µs per call"));
  // The selected config's samples in order.
  const DistributionRow* tr = traced();
  p.drawText(QRect(0, l.trace.top() - fm.height() - 4, size.width(), fm.height()), Qt::AlignHCenter, traceText());
  const auto& t = tr->result->trace_us;
  if (t.size() < 2) return;
  p.setPen(pal.color(QPalette::Mid));
  p.drawRect(l.trace);
  double tlo = *std::min_element(t.begin(), t.end()), thi = *std::max_element(t.begin(), t.end());
  tlo = std::min(tlo, tr->result->time_us.ci_low), thi = std::max(thi, tr->result->time_us.ci_high);
  const double tpad = std::max((thi - tlo) * 0.1, 1e-3 * thi);
  tlo -= tpad, thi += tpad;
  auto ty = [&](double v) { return l.trace.bottom() - (v - tlo) / (thi - tlo) * l.trace.height(); };
  auto tx = [&](size_t i) { return l.trace.left() + double(i) / double(t.size() - 1) * l.trace.width(); };
  const SampleStats& s = tr->result->time_us;
  p.fillRect(QRectF(l.trace.left(), ty(s.ci_high), l.trace.width(), std::max(1.0, ty(s.ci_low) - ty(s.ci_high))), box);
  p.setPen(QPen(pal.color(QPalette::WindowText), 1, Qt::DashLine));
  p.drawLine(QPointF(l.trace.left(), ty(s.median)), QPointF(l.trace.right(), ty(s.median)));
  QPainterPath path;
  for (size_t i = 0; i < t.size(); ++i) i == 0 ? path.moveTo(tx(i), ty(t[i])) : path.lineTo(tx(i), ty(t[i]));
  p.setPen(QPen(ci, 2));
  p.drawPath(path);
  p.setPen(pal.color(QPalette::WindowText));
  p.drawText(QRect(l.trace.left() - l.labels.width() - 8, l.trace.top(), l.labels.width(), fm.height()), Qt::AlignRight,
             QString::number(thi, 'f', 2));
  p.drawText(QRect(l.trace.left() - l.labels.width() - 8, l.trace.bottom() - fm.height(), l.labels.width(), fm.height()),
             Qt::AlignRight, QString::number(tlo, 'f', 2));
  p.drawText(QRect(l.trace.left(), l.trace.bottom() + 2, l.trace.width(), fm.height()), Qt::AlignLeft, QStringLiteral("first"));
  p.drawText(QRect(l.trace.left(), l.trace.bottom() + 2, l.trace.width(), fm.height()), Qt::AlignRight, QStringLiteral("last"));
}

void DistributionView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  for (int i = 0; i < int(rows_.size()); ++i)
    if (rowRect(i).contains(e->pos())) {
      Selection s = doc_->selection();
      s.config = rows_[size_t(i)].config;
      doc_->select(s);
      return;
    }
}

}  // namespace temper::ui
