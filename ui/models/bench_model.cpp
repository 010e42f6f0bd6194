#include "models/bench_model.h"

namespace temper::ui {

BenchModel::BenchModel(QObject* parent) : QAbstractTableModel(parent) {}

void BenchModel::setRecord(const BenchRecord& r) {
  beginResetModel();
  record_ = r;
  endResetModel();
}

int BenchModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(record_.tests.size()); }
int BenchModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

namespace {
size_t sample_count(const std::vector<std::vector<double>>& runs) {
  size_t n = 0;
  for (const auto& r : runs) n += r.size();
  return n;
}
}  // namespace

QVariant BenchModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || size_t(index.row()) >= record_.tests.size()) return {};
  const BenchTest& t = record_.tests[size_t(index.row())];
  if (role == Qt::TextAlignmentRole && index.column() >= Stock) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ToolTipRole) return QStringLiteral("llama-bench %1").arg(QString::fromStdString([&] {
    std::string a;
    for (const auto& s : t.args) a += " " + s;
    return a;
  }()));
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Test: return QString::fromStdString(t.name);
    case LlamaTest:
      return t.n_gen > 0 ? QStringLiteral("tg%1").arg(t.n_gen) : QStringLiteral("pp%1, micro-batch %2").arg(t.n_prompt).arg(t.n_ubatch);
    case Stock: return QString::number(t.stock_ts, 'f', 2);
    case Profile: return QString::number(t.profiled_ts, 'f', 2);
    case Speedup: return QString::number(t.speedup, 'f', 3);
    case Ci: return QStringLiteral("%1 – %2").arg(t.speedup_low, 0, 'f', 3).arg(t.speedup_high, 0, 'f', 3);
    case Samples: return QStringLiteral("%1 / %2").arg(sample_count(t.stock_runs)).arg(sample_count(t.profiled_runs));
  }
  return {};
}

QVariant BenchModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Test: return QStringLiteral("Test");
    case LlamaTest: return QStringLiteral("llama-bench");
    case Stock: return QStringLiteral("t/s stock");
    case Profile: return QStringLiteral("t/s profile");
    case Speedup: return QStringLiteral("Speedup");
    case Ci: return QStringLiteral("95 % CI");
    case Samples: return QStringLiteral("Samples (stock / profile)");
  }
  return {};
}

}  // namespace temper::ui
