#include "models/shape_table_model.h"

#include "exports.h"
#include "temper/quant/reference.h"

namespace temper::ui {

ShapeTableModel::ShapeTableModel(SessionDocument* doc, QObject* parent) : QAbstractTableModel(parent), doc_(doc) {
  reload();
  connect(doc, &SessionDocument::sessionChanged, this, [this] {
    beginResetModel();
    reload();
    endResetModel();
  });
  auto refresh = [this] {
    if (rowCount() > 0) Q_EMIT dataChanged(index(0, DefaultUs), index(rowCount() - 1, Status));
  };
  connect(doc, &SessionDocument::resultsChanged, this, refresh);
  connect(doc, &SessionDocument::profileChanged, this, refresh);
  // Times are per ncols: a new ncols in the selection changes the numbers.
  connect(doc, &SessionDocument::selectionChanged, this, refresh);
}

void ShapeTableModel::reload() {
  total_bytes_ = 0;
  for (const auto& s : doc_->shapes()) total_bytes_ += s.bytes_per_token;
}

int ShapeTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(doc_->shapes().size());
}
int ShapeTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

const Shape* ShapeTableModel::shapeAt(int row) const {
  const auto& v = doc_->shapes();
  return row >= 0 && size_t(row) < v.size() ? &v[size_t(row)] : nullptr;
}

int ShapeTableModel::rowOf(GgmlType type, int64_t n, int64_t k) const {
  const auto& v = doc_->shapes();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].type == type && v[i].n == n && v[i].k == k) return int(i);
  return -1;
}

QString ShapeTableModel::status(const Shape& s) const {
  if (!quant::quant_supported(s.type)) return QStringLiteral("no mmvq kernel");  // f16, f32: nothing to tune
  if (!doc_->hasSession()) return QStringLiteral("not swept");
  // At the selected ncols, like the times beside it.
  for (const auto& e : doc_->profile().entries)
    if (e.approval == Approval::Approved && e.key.shape() == s.shape() && e.key.ncols == doc_->selection().ncols)
      return QStringLiteral("approved");
  bool any = false, failed = false;
  for (const auto& r : doc_->session().results) {
    if (r.device != doc_->device() || r.shape() != s.shape()) continue;
    any = any || r.status == ResultStatus::Ok || r.status == ResultStatus::Failed;
    failed = failed || r.status == ResultStatus::Failed;
  }
  if (failed) return QStringLiteral("failed verification");
  return any ? QStringLiteral("swept") : QStringLiteral("not swept");
}

QVariant ShapeTableModel::data(const QModelIndex& index, int role) const {
  const Shape* s = shapeAt(index.row());
  if (!s || index.column() < 0 || index.column() >= ColumnCount) return {};
  if (role == Qt::TextAlignmentRole)
    return index.column() == Type || index.column() == Status ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                                              : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != SortRole && role != Qt::ToolTipRole) return {};
  const Verdict* w = doc_->hasSession() ? find_verdict(doc_->session(), group_key(doc_->device(), *s, doc_->selection().ncols))
                                       : nullptr;
  const bool num = role == SortRole;
  switch (index.column()) {
    case Type: return qstr(type_name(s->type));
    case N: return num ? QVariant(qlonglong(s->n)) : QVariant(QString::number(s->n));
    case K: return num ? QVariant(qlonglong(s->k)) : QVariant(QString::number(s->k));
    case CallsPerToken: return num ? QVariant(qlonglong(s->calls_per_token)) : QVariant(QString::number(s->calls_per_token));
    case MBPerToken: {
      const double mb = double(s->bytes_per_token) / 1e6;
      return num ? QVariant(mb) : QVariant(QString::number(mb, 'f', 1));
    }
    case PercentBytes: {
      const double p = total_bytes_ ? 100.0 * double(s->bytes_per_token) / double(total_bytes_) : 0;
      return num ? QVariant(p) : QVariant(QString::number(p, 'f', 1));
    }
    case DefaultUs:
      if (!w || w->default_us <= 0) return num ? QVariant(-1.0) : QVariant();
      return num ? QVariant(w->default_us) : QVariant(QString::number(w->default_us, 'f', 2));
    case BestUs:
      if (!w || w->best_us <= 0) return num ? QVariant(-1.0) : QVariant();
      return num ? QVariant(w->best_us) : QVariant(QString::number(w->best_us, 'f', 2));
    case Speedup:
      if (!w || w->best_us <= 0) return num ? QVariant(0.0) : QVariant();
      if (num) return w->speedup;
      if (role == Qt::ToolTipRole) {
        QString tip = QStringLiteral("%1: %2 → %3 (95% CI of the speedup %4 – %5)")
                          .arg(qstr(w->verdict), configText(w->default_config), configText(w->config))
                          .arg(w->speedup_low, 0, 'f', 3).arg(w->speedup_high, 0, 'f', 3);
        if (w->is_winner())
          tip += w->confirmed ? QStringLiteral("; confirmed by an interleaved re-measure")
                              : QStringLiteral("; not re-measured");
        if (!w->note.empty()) tip += QStringLiteral("; ") + qstr(w->note);
        return tip;
      }
      return QStringLiteral("%1× ±%2").arg(w->speedup, 0, 'f', 3).arg((w->speedup_high - w->speedup_low) / 2, 0, 'f', 3);
    case Status: return status(*s);
  }
  return {};
}

QVariant ShapeTableModel::headerData(int section, Qt::Orientation o, int role) const {
  // Short labels, so that all ten columns fit the dock; the tooltip says what each one is and the
  // CSV export keeps the full names.
  if (o != Qt::Horizontal || section < 0 || section >= ColumnCount) return QAbstractTableModel::headerData(section, o, role);
  static const char* labels[] = {"type", "N", "K", "calls", "MB/tok", "% bytes", "def. µs", "best µs", "speedup", "status"};
  static const char* names[] = {"type", "N", "K", "calls/token", "MB/token", "% of decode bytes", "default µs",
                                "best µs", "speedup ± CI", "status"};
  static const char* tips[] = {
      "ggml quantization type of the weights",
      "N: output rows (the weight matrix's rows)",
      "K: the row length (the weight matrix's columns)",
      "calls/token: GEMVs of this shape per decoded token",
      "MB/token: weight bytes this shape reads per decoded token",
      "% of decode bytes: this shape's share of the weight bytes read per token",
      "default µs: median time of the default launch config",
      "best µs: median time of the winning config",
      "speedup ± CI: default µs / best µs, with half the width of its 95% confidence interval",
      "status at the selected ncols: not swept, swept, failed verification or approved"};
  switch (role) {
    case Qt::DisplayRole: return QString::fromUtf8(labels[section]);
    case Qt::ToolTipRole: return QString::fromUtf8(tips[section]);
    case kColumnNameRole: return QString::fromUtf8(names[section]);
    default: return QAbstractTableModel::headerData(section, o, role);
  }
}

void ShapeFilterProxy::setFilterText(const QString& text) {
  text_ = text;
  invalidateFilter();
}

bool ShapeFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const {
  const QString& f = text_;
  if (f.isEmpty()) return true;
  const auto* m = sourceModel();
  const QString type = m->index(row, ShapeTableModel::Type, parent).data().toString();
  const QString nk = m->index(row, ShapeTableModel::N, parent).data().toString() + QStringLiteral("×") +
                     m->index(row, ShapeTableModel::K, parent).data().toString();
  const QString status = m->index(row, ShapeTableModel::Status, parent).data().toString();
  for (const QString& word : f.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    QString w = word;
    w.replace(QLatin1Char('x'), QStringLiteral("×"));
    if (!type.contains(word, Qt::CaseInsensitive) && !nk.contains(w) && !status.contains(word, Qt::CaseInsensitive))
      return false;
  }
  return true;
}

}  // namespace temper::ui
