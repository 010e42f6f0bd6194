#include "model_panel.h"

#include <QEvent>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QComboBox>
#include <QScrollBar>
#include <QStyle>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <vector>

namespace temper::ui {

ModelPanel::ModelPanel(SessionDocument* doc, QWidget* parent)
    : QWidget(parent), doc_(doc), model_(new ShapeTableModel(doc, this)), proxy_(new ShapeFilterProxy(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(ShapeTableModel::SortRole);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(QStringLiteral("Filter: type, N×K or status (e.g. q4_K 4096)"));
  filter_->setClearButtonEnabled(true);
  ncols_ = new QComboBox;  // the batch widths the session swept (1-8 before a sweep)
  ncols_->setToolTip(QStringLiteral("Batch width the times, status, heatmap and occupancy refer to (those the sweep measured)"));
  view_ = new QTableView;
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(ShapeTableModel::PercentBytes, Qt::DescendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  // Widths are set by fitColumns(): all ten columns in the dock's width, never behind a scroll bar.
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->horizontalHeader()->setMinimumSectionSize(8);
  view_->viewport()->installEventFilter(this);
  auto* row = new QHBoxLayout;
  row->addWidget(filter_, 1);
  row->addWidget(ncols_);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(summary_);
  lay->addLayout(row);
  lay->addWidget(view_, 1);

  connect(filter_, &QLineEdit::textChanged, proxy_, &ShapeFilterProxy::setFilterText);
  connect(ncols_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i < 0) return;
    Selection s = doc_->selection();
    s.ncols = ncols_->itemData(i).toInt();
    s.config.reset();
    doc_->select(s);
  });
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& cur) {
    if (syncing_ || !cur.isValid()) return;
    const Shape* sh = model_->shapeAt(proxy_->mapToSource(cur).row());
    if (!sh) return;
    Selection s = doc_->selection();
    if (s.shape() == sh->shape()) return;
    s.type = sh->type, s.n = int(sh->n), s.k = int(sh->k);
    s.config.reset();
    doc_->select(s);
  });
  connect(proxy_, &QAbstractItemModel::modelReset, this, &ModelPanel::fitColumns);
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, &ModelPanel::fitColumns);
  connect(proxy_, &QAbstractItemModel::dataChanged, this, &ModelPanel::fitColumns);
  connect(proxy_, &QAbstractItemModel::rowsInserted, this, &ModelPanel::fitColumns);
  connect(view_->horizontalHeader(), &QHeaderView::sortIndicatorChanged, this, &ModelPanel::fitColumns);
  connect(doc, &SessionDocument::sessionChanged, this, &ModelPanel::refreshSummary);
  connect(doc, &SessionDocument::resultsChanged, this, &ModelPanel::refreshSummary);
  connect(doc, &SessionDocument::profileChanged, this, &ModelPanel::refreshSummary);
  connect(doc, &SessionDocument::sessionChanged, this, &ModelPanel::refreshNcols);
  connect(doc, &SessionDocument::resultsChanged, this, &ModelPanel::refreshNcols);
  connect(doc, &SessionDocument::selectionChanged, this, &ModelPanel::followSelection);
  refreshSummary();
  refreshNcols();
  followSelection();
}

QString ModelPanel::summary() const {
  if (doc_->hasSession()) {
    const Session& s = doc_->session();
    QString t = QStringLiteral("<b>%1</b> (%2)<br>%3<br>session %4 · %5 · %6 results")
                    .arg(qstr(s.model.file_name).toHtmlEscaped(), qstr(s.model.architecture), doc_->provenanceText().toHtmlEscaped(),
                         qstr(s.id), qstr(s.status))
                    .arg(s.results.size());
    if (doc_->isReadOnly()) t += QStringLiteral(" · <i>read-only</i>");
    const Estimate w = doc_->winnersEstimate();
    if (w.shapes_measured > 0)
      t += QStringLiteral("<br>tokens/s, GEMV share of decode (estimate): %1").arg(tokensPerSecondText(*doc_)) +
           QStringLiteral(" · bandwidth ceiling %1").arg(w.ceiling_tokens_per_s, 0, 'f', 1);
    return t;
  }
  if (const auto& m = doc_->model()) {
    QStringList mix;
    for (const auto& q : m->quant_mix) mix << QStringLiteral("%1 %2 MB").arg(qstr(type_name(q.type))).arg(double(q.bytes) / 1e6, 0, 'f', 0);
    return QStringLiteral("<b>%1</b> (%2%3)<br>%4 layers · %5 M parameters · %6 MB/token · %7 shapes<br>%8")
        .arg(QString::fromStdString(m->path.filename().string()).toHtmlEscaped(), qstr(m->architecture),
             m->experts ? QStringLiteral(", %1 of %2 experts").arg(m->experts_used).arg(m->experts) : QString())
        .arg(m->layers).arg(double(m->parameters) / 1e6, 0, 'f', 0).arg(double(m->bytes_per_token) / 1e6, 0, 'f', 0)
        .arg(m->shapes.size()).arg(mix.join(QStringLiteral(" · ")));
  }
  return QStringLiteral("Open a GGUF model or a session (File → Open, or drop a file here).");
}

void ModelPanel::refreshSummary() { summary_->setText(summary()); }

bool ModelPanel::eventFilter(QObject* o, QEvent* e) {
  if (o == view_->viewport() && e->type() == QEvent::Resize) fitColumns();
  return QWidget::eventFilter(o, e);
}

// Each column at its natural width (contents and header) when all fit. Otherwise headers give way
// first (elided; their tooltips have the full name) and cells never do, except the last column's
// text (status), which wraps between words; only a dock too narrow even for that shrinks every
// column in proportion. A user's drag still resizes.
std::vector<int> ModelPanel::naturalColumnWidths() const {
  const QHeaderView* h = view_->horizontalHeader();
  const int margin = h->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, h);
  const int mark = h->style()->pixelMetric(QStyle::PM_HeaderMarkSize, nullptr, h);
  std::vector<int> natural;
  for (int c = 0; c < proxy_->columnCount(); ++c) {
    int cells = 0;
    for (int r = 0; r < proxy_->rowCount(); ++r)
      cells = std::max(cells, view_->sizeHintForIndex(proxy_->index(r, c)).width() + 1);  // + the grid line
    // The header's own hint reserves the sort arrow in every section; only the sorted one shows it.
    const QString label = proxy_->headerData(c, Qt::Horizontal).toString();
    const int header = h->fontMetrics().horizontalAdvance(label) + 2 * margin + 8 +
                       (h->isSortIndicatorShown() && h->sortIndicatorSection() == c ? mark + margin : 0);
    natural.push_back(std::max(cells, header));
  }
  return natural;
}

int ModelPanel::naturalWidth() const {
  int columns = 0;
  for (int w : naturalColumnWidths()) columns += w;
  const QMargins m = layout()->contentsMargins();
  return columns + 2 * view_->frameWidth() + view_->verticalScrollBar()->sizeHint().width() + m.left() + m.right();
}

void ModelPanel::fitColumns() {
  QHeaderView* h = view_->horizontalHeader();
  const int n = h->count(), room = view_->viewport()->width();
  if (n == 0 || room <= 0) return;
  const int few_chars = QFontMetrics(view_->font()).horizontalAdvance(QStringLiteral("000…")) + 8;
  const std::vector<int> natural = naturalColumnWidths();
  std::vector<int> floor(static_cast<size_t>(n)), small(static_cast<size_t>(n));
  int total = 0, floors = 0, smalls = 0;
  for (int c = 0; c < n; ++c) {
    int cells = 0, words = 0;  // the widest cell; the widest word (the last column wraps at spaces)
    for (int r = 0; r < proxy_->rowCount(); ++r) {
      const QModelIndex idx = proxy_->index(r, c);
      cells = std::max(cells, view_->sizeHintForIndex(idx).width() + 1);
      for (const QString& word : idx.data().toString().split(QLatin1Char(' ')))
        words = std::max(words, view_->fontMetrics().horizontalAdvance(word) + 12);
    }
    const size_t i = size_t(c);
    small[i] = std::min(natural[i], few_chars);
    floor[i] = c == n - 1 ? std::min(natural[i], std::max(words, small[i])) : std::max(cells, small[i]);
    total += natural[i], floors += floor[i], smalls += small[i];
  }
  if (floors > room) {  // the last column's words give way first, then everything
    floors -= floor[size_t(n - 1)] - small[size_t(n - 1)];
    floor[size_t(n - 1)] = small[size_t(n - 1)];
  }
  if (floors > room) floor = small, floors = smalls;
  for (int c = 0; c < n; ++c) {
    const size_t i = size_t(c);
    int w = natural[i];
    if (total > room && floors < room)
      w = floor[i] + int(int64_t(w - floor[i]) * (room - floors) / std::max(1, total - floors));
    h->resizeSection(c, w);
  }
}

void ModelPanel::refreshNcols() {
  const QSignalBlocker block(ncols_);
  ncols_->clear();
  for (int n : sweptNcols(*doc_)) ncols_->addItem(QStringLiteral("ncols %1").arg(n), n);
  ncols_->setCurrentIndex(ncols_->findData(doc_->selection().ncols));
}

void ModelPanel::followSelection() {
  const Selection& s = doc_->selection();
  if (ncols_->currentData().toInt() != s.ncols) {
    const QSignalBlocker block(ncols_);
    ncols_->setCurrentIndex(ncols_->findData(s.ncols));
  }
  const int row = model_->rowOf(s.type, s.n, s.k);
  if (row < 0) return;
  const QModelIndex idx = proxy_->mapFromSource(model_->index(row, 0));
  if (!idx.isValid() || view_->currentIndex().row() == idx.row()) return;
  syncing_ = true;
  view_->selectionModel()->setCurrentIndex(idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->scrollTo(idx);
  syncing_ = false;
}

}  // namespace temper::ui
