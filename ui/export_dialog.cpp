#include "export_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

#include "exports.h"
#include "temper/error.h"

namespace temper::ui {

namespace {
enum ItemId { ProfileTemper, ProfileAnvil, ProfileHeader, HeatmapPng, HeatmapSvg, RooflinePng, RooflineSvg, ResultsCsv, ShapesCsv, ProfileGgmlTable };
}

ExportDialog::ExportDialog(SessionDocument* doc, ExportTargets targets, QWidget* parent)
    : QDialog(parent), doc_(doc), targets_(targets) {
  setWindowTitle(QStringLiteral("Export"));
  items_ = {{QStringLiteral("Profile: Temper JSON"), QStringLiteral(".temper-profile.json")},
            {QStringLiteral("Profile: kernel-anvil JSON"), QStringLiteral(".kernel-anvil.json")},
            {QStringLiteral("Profile: C++ header"), QStringLiteral(".mmvq-profile.h")},
            {QStringLiteral("Heatmap: PNG"), QStringLiteral("-heatmap.png")},
            {QStringLiteral("Heatmap: SVG"), QStringLiteral("-heatmap.svg")},
            {QStringLiteral("Roofline: PNG"), QStringLiteral("-roofline.png")},
            {QStringLiteral("Roofline: SVG"), QStringLiteral("-roofline.svg")},
            {QStringLiteral("Results table: CSV"), QStringLiteral("-results.csv")},
            {QStringLiteral("Shape table: CSV"), QStringLiteral("-shapes.csv")},
            {QStringLiteral("Profile: ggml table for a llama.cpp pull request"), QStringLiteral(".mmvq-table.h")}};
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(new QLabel(QStringLiteral("Profiles hold the approved entries for the current device's arch.")));
  // A profile format that cannot carry anything here (kernel-anvil with configs it cannot express) is
  // left unticked, with the reason beside it: a default export never fails.
  const std::pair<int, ProfileFormat> profiles[] = {{ProfileTemper, ProfileFormat::Temper}, {ProfileAnvil, ProfileFormat::KernelAnvil},
                                                    {ProfileHeader, ProfileFormat::Header}, {ProfileGgmlTable, ProfileFormat::GgmlTable}};
  for (int i = 0; i < int(items_.size()); ++i) {
    Item& it = items_[size_t(i)];
    QString problem;
    for (const auto& [item, format] : profiles)
      if (item == i) problem = profileExportProblem(*doc, format);
    it.box = new QCheckBox(problem.isEmpty() ? it.label : QStringLiteral("%1 — not applicable: %2").arg(it.label, problem));
    it.box->setToolTip(problem);
    it.box->setChecked(problem.isEmpty());
    lay->addWidget(it.box);
  }
  // The folder the user chose last, else the session's own; never a silent default like home.
  QString dir = QSettings().value(QStringLiteral("export/dir")).toString();
  if (dir.isEmpty() || !QFileInfo(dir).isDir()) dir = doc->path().isEmpty() ? QString() : QFileInfo(doc->path()).absolutePath();
  dir_ = new QLineEdit(dir);
  dir_->setPlaceholderText(QStringLiteral("Choose the folder to export into"));
  auto* browse = new QPushButton(QStringLiteral("Browse…"));
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, QStringLiteral("Export to"), dir_->text());
    if (!d.isEmpty()) dir_->setText(d);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(QStringLiteral("Directory:")));
  row->addWidget(dir_, 1);
  row->addWidget(browse);
  lay->addLayout(row);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(summary_);
  // Each export's full report (every merged or dropped entry) one click away.
  details_button_ = new QPushButton(QStringLiteral("Show details"));
  details_button_->setCheckable(true);
  details_button_->hide();
  lay->addWidget(details_button_, 0, Qt::AlignLeft);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->hide();
  lay->addWidget(log_, 1);
  connect(details_button_, &QPushButton::toggled, log_, [this](bool on) {
    log_->setVisible(on);
    details_button_->setText(on ? QStringLiteral("Hide details") : QStringLiteral("Show details"));
  });
  auto* box = new QDialogButtonBox(QDialogButtonBox::Close);
  auto* go = box->addButton(QStringLiteral("Export"), QDialogButtonBox::ActionRole);
  connect(go, &QPushButton::clicked, this, [this] { exportChecked(); });
  go->setEnabled(!dir_->text().isEmpty());
  connect(dir_, &QLineEdit::textChanged, go, [go](const QString& d) { go->setEnabled(!d.trimmed().isEmpty()); });
  connect(box, &QDialogButtonBox::rejected, this, &QDialog::reject);
  lay->addWidget(box);
  resize(560, 520);
}

void ExportDialog::setDirectory(const QString& dir) { dir_->setText(dir); }
QString ExportDialog::directory() const { return dir_->text(); }
bool ExportDialog::isChecked(int item) const { return items_[size_t(item)].box->isChecked(); }
void ExportDialog::setChecked(int item, bool on) { items_[size_t(item)].box->setChecked(on); }
void ExportDialog::setAllChecked(bool on) {
  for (auto& it : items_) it.box->setChecked(on);
}

QString ExportDialog::fileFor(int item) const {
  return QDir(dir_->text()).filePath(fileStem(*doc_) + items_[size_t(item)].suffix);
}

QString ExportDialog::summaryText() const { return summary_->text(); }

QString ExportDialog::exportChecked() {
  QStringList log, summary;
  int written = 0, tried = 0;
  if (dir_->text().trimmed().isEmpty()) {
    summary_->setText(QStringLiteral("Choose the folder to export into first."));
    return summary_->text();
  }
  QSettings().setValue(QStringLiteral("export/dir"), dir_->text());
  for (int i = 0; i < itemCount(); ++i) {
    if (!items_[size_t(i)].box->isChecked()) continue;
    ++tried;
    const QString path = fileFor(i);
    try {
      if (!doc_->hasSession()) fail(ErrorKind::BadInput, "no session is open");
      QString extra;
      auto profile = [&](ProfileFormat f) {
        extra = qstr(exportProfile(*doc_, f, path).text());
        if (f != ProfileFormat::Temper) extra += exportedEstimateText(*doc_, f);
      };
      switch (ItemId(i)) {
        case ProfileTemper: profile(ProfileFormat::Temper); break;
        case ProfileAnvil: profile(ProfileFormat::KernelAnvil); break;
        case ProfileHeader: profile(ProfileFormat::Header); break;
        case ProfileGgmlTable: profile(ProfileFormat::GgmlTable); break;
        case HeatmapPng:
        case HeatmapSvg:
          if (!targets_.heatmap) fail(ErrorKind::Internal, "no heatmap view");
          exportImage(*targets_.heatmap, path);
          break;
        case RooflinePng:
        case RooflineSvg:
          if (!targets_.roofline) fail(ErrorKind::Internal, "no roofline view");
          exportImage(*targets_.roofline, path);
          break;
        case ResultsCsv: exportResultsCsv(doc_->session(), path); break;
        case ShapesCsv:
          if (!targets_.shapes) fail(ErrorKind::Internal, "no shape table");
          exportTableCsv(*targets_.shapes, path);
          break;
      }
      ++written;
      log << QStringLiteral("wrote %1").arg(path);
      if (!extra.trimmed().isEmpty()) log << QStringLiteral("  ") + extra.trimmed().replace(QLatin1Char('\n'), QStringLiteral("\n  "));
      // The summary: one line per file, with the report's own summary line (its last) for a profile.
      const QStringList lines = extra.trimmed().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
      summary << QStringLiteral("✓ %1: %2%3").arg(items_[size_t(i)].label, QFileInfo(path).fileName(),
                                                  lines.isEmpty() ? QString() : QStringLiteral(" — ") + lines.last().trimmed());
    } catch (const std::exception& e) {
      log << QStringLiteral("FAILED %1: %2").arg(items_[size_t(i)].label, QString::fromStdString(e.what()));
      summary << QStringLiteral("✗ %1 was not written: %2").arg(items_[size_t(i)].label, QString::fromStdString(e.what()));
    }
  }
  summary.prepend(QStringLiteral("Wrote %1 of %2 files into %3.").arg(written).arg(tried).arg(dir_->text()));
  summary_->setText(summary.join(QLatin1Char('\n')));
  log_->setPlainText(log.join(QLatin1Char('\n')));
  details_button_->setVisible(!log.isEmpty());
  return summary_->text() + QStringLiteral("\n\n") + log_->toPlainText();
}

}  // namespace temper::ui
