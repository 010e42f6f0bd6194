#pragma once
// The unique-shape table: one row per shape of the model or session, with its share of decode bytes
// and, once swept, the default and best times at the selected ncols and the shape's status.
#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include "session_doc.h"

namespace temper::ui {

class ShapeTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Type, N, K, CallsPerToken, MBPerToken, PercentBytes, DefaultUs, BestUs, Speedup, Status, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;  // numbers for numeric columns

  explicit ShapeTableModel(SessionDocument* doc, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  const Shape* shapeAt(int row) const;
  int rowOf(GgmlType type, int64_t n, int64_t k) const;
  // "not swept", "swept", "failed verification", "approved"
  QString status(const Shape& s) const;

 private:
  SessionDocument* doc_;
  uint64_t total_bytes_ = 0;
  void reload();
};

// Sorts numerically and filters on a text that matches the type name or "N×K".
class ShapeFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  // Words separated by spaces; every word must match the type, "NxK" or the status.
  void setFilterText(const QString& text);

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  QString text_;
};

}  // namespace temper::ui
