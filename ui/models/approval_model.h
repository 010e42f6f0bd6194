#pragma once
// Proposed winners of the session (the profile's entries) with their approval: a check box per row
// (checked approved, unchecked rejected, partly checked pending) and an editable note.
#include <QAbstractTableModel>

#include "session_doc.h"

namespace temper::ui {

class ApprovalModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Approve, Shape, Ncols, Default, Tuned, Speedup, Significant, Note, ColumnCount };
  explicit ApprovalModel(SessionDocument* doc, QObject* parent = nullptr);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  const ProfileEntry* entryAt(int row) const;

 private:
  SessionDocument* doc_;
  int rows_ = 0;  // rows shown: an edit that keeps their number only changes values
};

}  // namespace temper::ui
