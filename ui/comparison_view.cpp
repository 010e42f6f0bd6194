#include "comparison_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "session_doc.h"
#include "temper/error.h"

namespace temper::ui {

namespace {
QString usCell(double us, Config c) { return QStringLiteral("%1 (%2)").arg(us, 0, 'f', 2).arg(configText(c)); }

// "+1.26 (+7.3 %)": how much B's best time differs from A's.
QString deltaCell(double a, double b) {
  if (a <= 0 || b <= 0) return QStringLiteral("—");
  return QStringLiteral("%1%2 (%3%4 %)").arg(b >= a ? QStringLiteral("+") : QString()).arg(b - a, 0, 'f', 2)
      .arg(b >= a ? QStringLiteral("+") : QString()).arg(100 * (b / a - 1), 0, 'f', 1);
}

QString verdictCell(const SessionComparison::Side& s) {
  if (s.verdict == kVerdictWinner) return s.confirmed ? QStringLiteral("winner, confirmed") : QStringLiteral("winner, not re-measured");
  return qstr(s.verdict);
}

QString estimateLine(const QString& name, const std::string& kernel, const std::vector<Estimate>& estimates) {
  QStringList parts;
  for (const Estimate& e : estimates) {
    if (e.shapes_measured == 0 || e.default_tokens_per_s <= 0) continue;
    parts << QStringLiteral("%1 µs → %2 µs per token, %3 → %4 tokens/s (%5%6 %)%7")
                 .arg(e.default_us_per_token, 0, 'f', 1)
                 .arg(e.tuned_us_per_token, 0, 'f', 1)
                 .arg(e.default_tokens_per_s, 0, 'f', 1)
                 .arg(e.tuned_tokens_per_s, 0, 'f', 1)
                 .arg(e.tuned_tokens_per_s >= e.default_tokens_per_s ? QStringLiteral("+") : QString())
                 .arg(100.0 * (e.tuned_tokens_per_s / e.default_tokens_per_s - 1.0), 0, 'f', 1)
                 .arg(estimates.size() > 1 ? QStringLiteral(" (device %1)").arg(e.device) : QString());
  }
  if (parts.isEmpty()) parts << QStringLiteral("no shape has a verified default at ncols 1");
  return QStringLiteral("<b>%1</b> (%2): %3").arg(name.toHtmlEscaped(), qstr(kernel).toHtmlEscaped(), parts.join(QStringLiteral("; ")));
}
}  // namespace

ComparisonView::ComparisonView(QWidget* parent) : QWidget(parent) {
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, ColumnCount);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  estimate_ = new QLabel;
  estimate_->setWordWrap(true);
  estimate_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* l = new QVBoxLayout(this);
  l->addWidget(summary_);
  l->addWidget(table_, 1);
  l->addWidget(new QLabel(QStringLiteral("GEMV share of decode, default → all winners (each session's own estimate):")));
  l->addWidget(estimate_);
}

void ComparisonView::setSessions(const Session& a, const QString& name_a, const Session& b, const QString& name_b) {
  if (const std::string why = model_mismatch(a, b); !why.empty())
    fail(ErrorKind::BadInput, name_a.toStdString() + " and " + name_b.toStdString() + " are not sweeps of one model (" + why +
                                  "): nothing to compare");
  SessionComparison c = compare_sessions(a, b);
  if (c.rows.empty())
    fail(ErrorKind::BadInput, name_a.toStdString() + " and " + name_b.toStdString() +
                                  " have no (shape, ncols) with a verdict in both: nothing to compare");
  comparison_ = std::move(c);

  const QString ka = qstr(comparison_.kernel_a), kb = qstr(comparison_.kernel_b);
  // Each side by its session's name (two runs of one kernel are told apart) and its kernel.
  const QString a_head = QStringLiteral("A: %1 (%2)").arg(name_a, ka), b_head = QStringLiteral("B: %1 (%2)").arg(name_b, kb);
  table_->setHorizontalHeaderLabels({QStringLiteral("Shape"), QStringLiteral("ncols"),
                                     QStringLiteral("%1\ndefault µs").arg(a_head), QStringLiteral("%1\nbest µs").arg(a_head),
                                     QStringLiteral("%1\nverdict").arg(a_head), QStringLiteral("%1\ndefault µs").arg(b_head),
                                     QStringLiteral("%1\nbest µs").arg(b_head), QStringLiteral("%1\nverdict").arg(b_head),
                                     QStringLiteral("Δ best µs\nB − A"), QStringLiteral("Winners agree")});
  table_->setRowCount(int(comparison_.rows.size()));
  int row = 0;
  for (const auto& r : comparison_.rows) {
    const QString cells[ColumnCount] = {
        shapeText(r) + (a.devices.size() > 1 ? QStringLiteral(" · device %1").arg(r.device) : QString()),
        QString::number(r.ncols),
        usCell(r.a.default_us, r.a.default_config),
        usCell(r.a.best_us, r.a.config),
        verdictCell(r.a),
        usCell(r.b.default_us, r.b.default_config),
        usCell(r.b.best_us, r.b.config),
        verdictCell(r.b),
        deltaCell(r.a.best_us, r.b.best_us),
        r.agree ? QStringLiteral("yes") : QStringLiteral("no")};
    for (int col = 0; col < ColumnCount; ++col) {
      auto* item = new QTableWidgetItem(cells[col]);
      if (col == Agree && !r.agree) item->setForeground(QColor(180, 40, 40));
      if (col != Shape && col != Agree && col != VerdictA && col != VerdictB) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(row, col, item);
    }
    ++row;
  }

  QString s = QStringLiteral("<b>%1</b> (%2) beside <b>%3</b> (%4) · %5")
                  .arg(name_a.toHtmlEscaped(), ka.toHtmlEscaped(), name_b.toHtmlEscaped(), kb.toHtmlEscaped(),
                       qstr(a.model.file_name).toHtmlEscaped());
  s += QStringLiteral("<br>winners agree in %1 of %2 (shape, ncols)").arg(comparison_.winners_agree).arg(comparison_.winners_compared);
  if (comparison_.medians_compared > 0)
    s += QStringLiteral("; medians of %1 configs timed in both differ by %2 % (median), %3 % (max)")
             .arg(comparison_.medians_compared)
             .arg(100 * comparison_.spread_median, 0, 'f', 1)
             .arg(100 * comparison_.spread_max, 0, 'f', 1);
  if (ka != kb) s += QStringLiteral("<br>The kernels differ: this compares the two kernels, not two runs of one.");
  summary_->setText(s);
  estimate_->setText(estimateLine(name_a, comparison_.kernel_a, comparison_.estimates_a) + QStringLiteral("<br>") +
                     estimateLine(name_b, comparison_.kernel_b, comparison_.estimates_b));
}

QString ComparisonView::summaryText() const { return summary_->text(); }
QString ComparisonView::estimateText() const { return estimate_->text(); }

}  // namespace temper::ui
