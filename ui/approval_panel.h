#pragma once
// Approval: proposed winners (significant ones preselected) with approve / reject per row, notes,
// "approve all significant", and the predicted model tokens/s, default vs approved, updated live.
#include <QWidget>

#include "models/approval_model.h"

class QLabel;
class QTableView;

namespace temper::ui {

class ApprovalPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ApprovalPanel(SessionDocument* doc, QWidget* parent = nullptr);
  ApprovalModel* model() const { return model_; }
  QString predictionText() const;

 Q_SIGNALS:
  void exportRequested();

 private:
  SessionDocument* doc_;
  ApprovalModel* model_;
  QTableView* view_;
  QLabel* prediction_;
};

}  // namespace temper::ui
