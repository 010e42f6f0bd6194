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
  for (auto& it : items_) {
    it.box = new QCheckBox(it.label);
    it.box->setChecked(true);
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
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  lay->addWidget(log_, 1);
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
void ExportDialog::setAllChecked(bool on) {
  for (auto& it : items_) it.box->setChecked(on);
}

QString ExportDialog::fileFor(int item) const {
  return QDir(dir_->text()).filePath(fileStem(*doc_) + items_[size_t(item)].suffix);
}

QString ExportDialog::exportChecked() {
  QStringList log;
  if (dir_->text().trimmed().isEmpty()) {
    log_->setPlainText(QStringLiteral("Choose the folder to export into first."));
    return log_->toPlainText();
  }
  QSettings().setValue(QStringLiteral("export/dir"), dir_->text());
  for (int i = 0; i < itemCount(); ++i) {
    if (!items_[size_t(i)].box->isChecked()) continue;
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
      log << QStringLiteral("wrote %1").arg(path);
      if (!extra.trimmed().isEmpty()) log << QStringLiteral("  ") + extra.trimmed().replace(QLatin1Char('\n'), QStringLiteral("\n  "));
    } catch (const std::exception& e) {
      log << QStringLiteral("FAILED %1: %2").arg(items_[size_t(i)].label, QString::fromStdString(e.what()));
    }
  }
  const QString text = log.join(QLatin1Char('\n'));
  log_->setPlainText(text);
  return text;
}

}  // namespace temper::ui
