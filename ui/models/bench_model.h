#pragma once
// A llama-bench record (temper engine bench) as a table: a row per test with both arms' median
// tokens/s, the speedup and its 95 % CI, and how many samples each arm has; the samples themselves
// for the chart beside it.
#include <QAbstractTableModel>

#include "temper/profile.h"

namespace temper::ui {

class BenchModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Test, LlamaTest, Stock, Profile, Speedup, Ci, Samples, ColumnCount };
  explicit BenchModel(QObject* parent = nullptr);
  void setRecord(const BenchRecord& r);
  const BenchRecord& record() const { return record_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  BenchRecord record_;
};

}  // namespace temper::ui
