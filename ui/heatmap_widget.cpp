#include "heatmap_widget.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "exports.h"

namespace temper::ui {

HeatmapWidget::HeatmapWidget(SessionDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  setMouseTracking(true);
  setMinimumSize(360, 240);
  addSaveImageAction(this, QStringLiteral("heatmap.png"));
  connect(doc, &SessionDocument::sessionChanged, this, &HeatmapWidget::rebuild);
  connect(doc, &SessionDocument::resultsChanged, this, &HeatmapWidget::rebuild);
  connect(doc, &SessionDocument::selectionChanged, this, &HeatmapWidget::rebuild);
  rebuild();
}

void HeatmapWidget::setMetric(HeatMetric m) {
  metric_ = m;
  rebuild();
}

void HeatmapWidget::rebuild() {
  grid_ = doc_->hasSession() ? buildHeatGrid(doc_->session(), doc_->selection(), metric_) : HeatGrid{};
  update();
}

HeatmapWidget::Layout HeatmapWidget::layout(QSize size) const {
  Layout l;
  const QFontMetrics fm(font());
  const int left = fm.horizontalAdvance(QStringLiteral("nwarps 16")) + 16;
  const int top = fm.height() * 2 + 12, bottom = fm.height() * 3 + 20;
  const int legend_w = fm.horizontalAdvance(QStringLiteral("00000.0")) + 40;
  if (grid_.empty()) return l;
  const int w = std::max(1, size.width() - left - legend_w - 16);
  const int h = std::max(1, size.height() - top - bottom);
  l.cell_w = w / int(grid_.rows.size());
  l.cell_h = h / int(grid_.nwarps.size());
  l.grid = QRect(left, top, l.cell_w * int(grid_.rows.size()), l.cell_h * int(grid_.nwarps.size()));
  l.legend = QRect(l.grid.right() + 20, top, 16, l.grid.height());
  return l;
}

QRect HeatmapWidget::cellRect(int row, int col) const {
  const Layout l = layout(size());
  return QRect(l.grid.left() + col * l.cell_w, l.grid.top() + row * l.cell_h, l.cell_w, l.cell_h);
}

std::optional<Config> HeatmapWidget::configAt(QPoint p) const {
  if (grid_.empty()) return std::nullopt;
  const Layout l = layout(size());
  if (!l.grid.contains(p) || l.cell_w <= 0 || l.cell_h <= 0) return std::nullopt;
  const int col = (p.x() - l.grid.left()) / l.cell_w, row = (p.y() - l.grid.top()) / l.cell_h;
  if (row >= int(grid_.nwarps.size()) || col >= int(grid_.rows.size())) return std::nullopt;
  return grid_.at(row, col)->config;
}

void HeatmapWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paintHeatmap(p, size());
}

void HeatmapWidget::paintHeatmap(QPainter& p, QSize size) const {
  const QPalette& pal = palette();
  p.fillRect(QRect(QPoint(0, 0), size), pal.window());
  p.setPen(pal.color(QPalette::WindowText));
  const QFontMetrics fm(font());
  p.setFont(font());
  const Selection& sel = doc_->selection();
  if (grid_.empty()) {
    QString text = doc_->hasSession() ? QStringLiteral("Select a shape to see its configs")
                                      : QStringLiteral("Open a session or run a sweep to see the heatmap");
    if (grid_.not_swept) {
      QStringList swept;
      for (int n : sweptNcols(*doc_)) swept << QString::number(n);
      text = QStringLiteral("ncols %1 was not swept (this session measured ncols %2)").arg(sel.ncols).arg(swept.join(QStringLiteral(", ")));
    }
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap, text);
    return;
  }
  const Layout l = layout(size);
  p.drawText(QRect(0, 4, size.width(), fm.height()), Qt::AlignHCenter,
             QStringLiteral("%1 · ncols %2 · %3").arg(shapeText(sel)).arg(sel.ncols).arg(metricName(metric_)));
  p.drawText(QRect(0, 4 + fm.height(), size.width(), fm.height()), Qt::AlignHCenter,
             QStringLiteral("■ outline: default   ★ winner   hatched: failed / invalid"));
  QFont bold = font();
  bold.setBold(true);
  for (size_t i = 0; i < grid_.nwarps.size(); ++i) {
    for (size_t j = 0; j < grid_.rows.size(); ++j) {
      const HeatCell& c = *grid_.at(int(i), int(j));
      const QRect r(l.grid.left() + int(j) * l.cell_w, l.grid.top() + int(i) * l.cell_h, l.cell_w, l.cell_h);
      QColor fill = pal.color(QPalette::Base);
      QString text;
      if (c.state == CellState::Ok && c.value) {
        fill = cellColor(grid_, *c.value, metric_);
        text = formatValue(*c.value, metric_);
      }
      p.fillRect(r.adjusted(1, 1, -1, -1), fill);
      if (c.state == CellState::Failed || c.state == CellState::Invalid || c.state == CellState::Error) {
        p.fillRect(r.adjusted(1, 1, -1, -1), QBrush(pal.color(QPalette::Mid), Qt::BDiagPattern));
        text = c.state == CellState::Failed ? QStringLiteral("failed") : c.state == CellState::Invalid ? QStringLiteral("invalid") : QStringLiteral("error");
      }
      const bool dark = luma(fill) < 0.5;
      p.setPen(c.state == CellState::Ok ? (dark ? Qt::white : Qt::black) : pal.color(QPalette::Text));
      p.setFont(c.is_winner ? bold : font());
      p.drawText(r, Qt::AlignCenter, c.is_winner ? QStringLiteral("★ ") + text : text);
      if (c.is_default) {
        p.setPen(QPen(pal.color(QPalette::Text), 3));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r.adjusted(3, 3, -3, -3));
      }
      if (sel.config && *sel.config == c.config && !property("exporting").toBool()) {  // an exported image shows no selection
        p.setPen(QPen(pal.color(QPalette::Highlight), 3, Qt::DashLine));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r.adjusted(6, 6, -6, -6));
      }
    }
  }
  // Axes.
  p.setFont(font());
  p.setPen(pal.color(QPalette::WindowText));
  for (size_t i = 0; i < grid_.nwarps.size(); ++i)
    p.drawText(QRect(0, l.grid.top() + int(i) * l.cell_h, l.grid.left() - 8, l.cell_h), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("nwarps %1").arg(grid_.nwarps[i]));
  for (size_t j = 0; j < grid_.rows.size(); ++j)
    p.drawText(QRect(l.grid.left() + int(j) * l.cell_w, l.grid.bottom() + 4, l.cell_w, fm.height()), Qt::AlignHCenter,
               QString::number(grid_.rows[j]));
  p.drawText(QRect(l.grid.left(), l.grid.bottom() + 6 + fm.height(), l.grid.width(), fm.height()), Qt::AlignHCenter,
             QStringLiteral("rows_per_block"));
  // Legend: best end at the top, labelled with the scale's ends (not only the cells' range).
  const bool diverging = metric_ == HeatMetric::Speedup;
  for (int y = 0; y < l.legend.height(); ++y) {
    const double t = 1.0 - double(y) / std::max(1, l.legend.height() - 1);
    p.fillRect(QRect(l.legend.left(), l.legend.top() + y, l.legend.width(), 1), diverging ? divergingColor(t) : heatColor(t));
  }
  p.setPen(pal.color(QPalette::WindowText));
  p.drawRect(l.legend);
  const bool up = higherIsBetter(metric_);
  p.drawText(QPoint(l.legend.right() + 4, l.legend.top() + fm.ascent()), formatValue(up ? grid_.scale_hi : grid_.scale_lo, metric_));
  p.drawText(QPoint(l.legend.right() + 4, l.legend.bottom()), formatValue(up ? grid_.scale_lo : grid_.scale_hi, metric_));
  if (diverging)
    p.drawText(QPoint(l.legend.right() + 4, l.legend.center().y() + fm.ascent() / 2), QStringLiteral("1.000"));
  p.drawText(QRect(0, l.grid.bottom() + 8 + 2 * fm.height(), size.width(), fm.height()), Qt::AlignHCenter,
             spreadText(grid_, metric_));
}

bool HeatmapWidget::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const auto c = configAt(he->pos());
    const HeatCell* cell = c ? grid_.find(*c) : nullptr;
    if (cell && doc_->hasSession())
      QToolTip::showText(he->globalPos(), cellTooltip(doc_->session(), *cell), this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

void HeatmapWidget::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;  // the right button opens the menu, selecting nothing
  const auto c = configAt(e->pos());
  if (!c) return;
  Selection s = doc_->selection();
  s.config = *c;
  doc_->select(s);
}

}  // namespace temper::ui
