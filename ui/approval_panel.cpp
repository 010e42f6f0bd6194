#include "approval_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "tune_view.h"

namespace temper::ui {

ApprovalPanel::ApprovalPanel(SessionDocument* doc, QWidget* parent)
    : QWidget(parent), doc_(doc), model_(new ApprovalModel(doc, this)) {
  view_ = new QTableView;
  view_->setModel(model_);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  fitColumnsToView(view_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  prediction_ = new QLabel;
  prediction_->setWordWrap(true);
  auto* significant = new QPushButton(QStringLiteral("Approve all significant"));
  significant->setToolTip(QStringLiteral("Winners whose CI lies below the default's and that are at least 3% faster"));
  auto* exportButton = new QPushButton(QStringLiteral("Export…"));
  connect(significant, &QPushButton::clicked, doc, [doc] { doc->approveSignificant(); });
  connect(exportButton, &QPushButton::clicked, this, &ApprovalPanel::exportRequested);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(significant);
  buttons->addStretch();
  buttons->addWidget(exportButton);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(prediction_);
  lay->addWidget(view_, 1);
  lay->addLayout(buttons);
  auto refresh = [this] { prediction_->setText(predictionText()); };
  connect(doc, &SessionDocument::profileChanged, this, refresh);
  connect(doc, &SessionDocument::sessionChanged, this, refresh);
  connect(doc, &SessionDocument::resultsChanged, this, refresh);
  connect(doc, &SessionDocument::selectionChanged, this, refresh);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& i) {
    const ProfileEntry* e = model_->entryAt(i.row());
    if (!e) return;
    Selection s = doc_->selection();
    s.type = e->key.type, s.n = e->key.n, s.k = e->key.k, s.ncols = e->key.ncols, s.config = e->config;
    doc_->select(s);
  });
  refresh();
}

QString ApprovalPanel::predictionText() const {
  if (!doc_->hasSession()) return QStringLiteral("No session.");
  if (doc_->profile().entries.empty())
    return QStringLiteral("No config beats the default beyond its confidence interval: nothing to approve.");
  const Estimate e = doc_->approvedEstimate();
  int approved = 0;
  for (const auto& x : doc_->profile().entries) approved += x.approval == Approval::Approved;
  const double gain = e.default_tokens_per_s > 0 ? 100.0 * (e.tuned_tokens_per_s / e.default_tokens_per_s - 1) : 0;
  QString t = QStringLiteral("<b>Predicted tokens/s</b> (%1, ncols 1): %2 (approved %3%4 % over default) · %5 of %6 winners approved")
                  .arg(qstr(e.label).toHtmlEscaped(), tokensPerSecondText(*doc_).toHtmlEscaped())
                  .arg(gain >= 0 ? QStringLiteral("+") : QString()).arg(gain, 0, 'f', 1)
                  .arg(approved).arg(doc_->profile().entries.size());
  // What the per-(type, ncols) formats actually carry of the approvals.
  if (const SessionDevice* d = doc_->currentDevice(); d && approved > 0) {
    QStringList carried;
    for (const char* format : {"ggml-table", "kernel-anvil"}) {
      try {
        const Estimate x = estimate_exported(doc_->session(), d->info.index, doc_->profile(), format);
        carried << QStringLiteral("%1 %2").arg(QString::fromLatin1(format)).arg(x.tuned_tokens_per_s, 0, 'f', 1);
      } catch (const std::exception&) {  // a format that cannot hold this profile: its export says why
      }
    }
    if (!carried.isEmpty())
      t += QStringLiteral("<br>as exported (what the file makes the engine run): %1 tokens/s; the Temper profile and the "
                          "C++ header carry every approval").arg(carried.join(QStringLiteral(" · ")));
  }
  return t;
}

}  // namespace temper::ui
