#pragma once
// Model panel: the model (or session) summary and the unique-shape table with sort and filter.
// Selecting a row selects that shape everywhere; a selection made elsewhere selects the row.
#include <QWidget>

#include "models/shape_table_model.h"

class QLabel;
class QLineEdit;
class QSpinBox;
class QTableView;

namespace temper::ui {

class ModelPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ModelPanel(SessionDocument* doc, QWidget* parent = nullptr);
  QTableView* view() const { return view_; }
  ShapeTableModel* model() const { return model_; }
  ShapeFilterProxy* proxy() const { return proxy_; }
  QString summary() const;
  QSize sizeHint() const override { return {560, 600}; }  // the shape table's ten columns

 protected:
  bool eventFilter(QObject* o, QEvent* e) override;

 private:
  void fitColumns();
  void refreshSummary();
  void followSelection();

  SessionDocument* doc_;
  ShapeTableModel* model_;
  ShapeFilterProxy* proxy_;
  QLabel* summary_;
  QLineEdit* filter_;
  QSpinBox* ncols_;
  QTableView* view_;
  bool syncing_ = false;
};

}  // namespace temper::ui
