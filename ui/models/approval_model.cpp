#include "models/approval_model.h"

namespace temper::ui {

ApprovalModel::ApprovalModel(SessionDocument* doc, QObject* parent) : QAbstractTableModel(parent), doc_(doc) {
  auto reset = [this] {
    beginResetModel();
    endResetModel();
  };
  connect(doc, &SessionDocument::sessionChanged, this, [this, reset] {
    reset();
    rows_ = rowCount();
  });
  // An edit (or its undo) changes values, not rows: the view keeps its selection and scroll.
  connect(doc, &SessionDocument::profileChanged, this, [this, reset] {
    if (rowCount() == rows_) {
      if (rows_ > 0) Q_EMIT dataChanged(index(0, 0), index(rows_ - 1, ColumnCount - 1));
    } else {
      reset();
      rows_ = rowCount();
    }
  });
}

int ApprovalModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(doc_->profile().entries.size());
}
int ApprovalModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

const ProfileEntry* ApprovalModel::entryAt(int row) const {
  const auto& v = doc_->profile().entries;
  return row >= 0 && size_t(row) < v.size() ? &v[size_t(row)] : nullptr;
}

QVariant ApprovalModel::data(const QModelIndex& index, int role) const {
  const ProfileEntry* e = entryAt(index.row());
  if (!e) return {};
  const int col = index.column();
  if (role == Qt::CheckStateRole && col == Approve)
    return e->approval == Approval::Approved   ? Qt::Checked
           : e->approval == Approval::Rejected ? Qt::Unchecked
                                               : Qt::PartiallyChecked;
  if (role == Qt::ToolTipRole && e->provenance) {
    const auto& p = *e->provenance;
    return QStringLiteral("default %1 µs (CI %2 – %3)\ntuned %4 µs (CI %5 – %6)\n%7 calls/token")
        .arg(p.default_us, 0, 'f', 2).arg(p.default_ci_low, 0, 'f', 2).arg(p.default_ci_high, 0, 'f', 2)
        .arg(p.tuned_us, 0, 'f', 2).arg(p.tuned_ci_low, 0, 'f', 2).arg(p.tuned_ci_high, 0, 'f', 2)
        .arg(p.calls_per_token);
  }
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (col) {
    case Approve: return qstr(approval_name(e->approval));
    case Shape: return QStringLiteral("%1 %2").arg(qstr(e->key.arch), shapeText(e->key));
    case Ncols: return e->key.ncols;
    case Default: return configText(e->default_config);
    case Tuned: return configText(e->config) + (e->is_small_k ? QStringLiteral(" (small-K)") : QString());
    case Speedup:
      if (!e->provenance) return QStringLiteral("—");
      return QStringLiteral("%1× (%2 – %3)").arg(e->provenance->speedup, 0, 'f', 3)
          .arg(e->provenance->speedup_low, 0, 'f', 3).arg(e->provenance->speedup_high, 0, 'f', 3);
    case Significant: return is_significant(*e) ? QStringLiteral("yes") : QStringLiteral("no");
    case Note: return qstr(e->note);
  }
  return {};
}

bool ApprovalModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  const ProfileEntry* e = entryAt(index.row());
  if (!e) return false;
  const ProfileKey key = e->key;
  bool ok = false;
  if (index.column() == Approve && role == Qt::CheckStateRole) {
    const auto state = Qt::CheckState(value.toInt());
    doc_->setApproval(key, state == Qt::Checked ? Approval::Approved
                           : state == Qt::Unchecked ? Approval::Rejected : Approval::Pending);
    ok = true;
  } else if (index.column() == Note && role == Qt::EditRole) {
    doc_->setNote(key, value.toString());
    ok = true;
  }
  return ok;
}

Qt::ItemFlags ApprovalModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.column() == Approve) f |= Qt::ItemIsUserCheckable;
  if (index.column() == Note) f |= Qt::ItemIsEditable;
  return f;
}

QVariant ApprovalModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  static const char* names[] = {"approval", "shape", "ncols", "default", "tuned", "speedup (95% CI)", "significant", "note"};
  return section >= 0 && section < ColumnCount ? QString::fromUtf8(names[section]) : QVariant();
}

}  // namespace temper::ui
