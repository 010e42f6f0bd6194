#pragma once
// Model panel: the model (or session) summary and the unique-shape table with sort and filter.
// Selecting a row selects that shape everywhere; a selection made elsewhere selects the row.
#include <QWidget>
#include <vector>

#include "models/shape_table_model.h"

class QLabel;
class QLineEdit;
class QComboBox;
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
  // Each column's width with nothing elided (its widest cell, its header with the sort arrow where
  // shown), and the panel's width that shows them all.
  std::vector<int> naturalColumnWidths() const;
  int naturalWidth() const;
  QSize sizeHint() const override { return {naturalWidth(), 600}; }

 protected:
  bool eventFilter(QObject* o, QEvent* e) override;

 private:
  void fitColumns();
  void refreshSummary();
  void followSelection();
  void refreshNcols();

  SessionDocument* doc_;
  ShapeTableModel* model_;
  ShapeFilterProxy* proxy_;
  QLabel* summary_;
  QLineEdit* filter_;
  QComboBox* ncols_;
  QTableView* view_;
  bool syncing_ = false;
};

}  // namespace temper::ui
