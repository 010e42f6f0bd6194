#pragma once
// Two sessions of one model side by side — typically a Temper-kernel sweep and an engine sweep:
// per (shape, ncols) each one's default µs and best µs with its config (columns headed by each
// session's name and kernel), the change of the best time from the first to the second (Δ), whether
// the winners agree, and each one's GEMV-share estimate. The numbers are core's comparison (`temper session
// --compare` prints the same); the view only lays them out.
#include <QWidget>

#include "temper/sweep.h"

class QLabel;
class QTableWidget;

namespace temper::ui {

class ComparisonView : public QWidget {
  Q_OBJECT
 public:
  enum Column { Shape, Ncols, DefaultA, BestA, VerdictA, DefaultB, BestB, VerdictB, DeltaBest, Agree, ColumnCount };

  explicit ComparisonView(QWidget* parent = nullptr);
  // Error(BadInput) when they are not sweeps of one model (core's model_mismatch) or share no
  // verdict; the view keeps what it showed.
  void setSessions(const Session& a, const QString& name_a, const Session& b, const QString& name_b);
  const SessionComparison& comparison() const { return comparison_; }
  QTableWidget* table() const { return table_; }
  QString summaryText() const;   // the header: names, kernels, agreement, spreads
  QString estimateText() const;  // the GEMV-share estimate both ways

 private:
  SessionComparison comparison_;
  QLabel* summary_;
  QTableWidget* table_;
  QLabel* estimate_;
};

}  // namespace temper::ui
