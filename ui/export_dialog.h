#pragma once
// Export dialog: the approved profile (Temper JSON, kernel-anvil JSON, C++ header), the charts
// (PNG / SVG) and the tables (CSV) into one directory; reports what each export did.
#include <QDialog>
#include <vector>

#include "session_doc.h"

class QAbstractItemModel;
class QCheckBox;
class QLabel;
class QPushButton;
class QLineEdit;
class QPlainTextEdit;

namespace temper::ui {

struct ExportTargets {
  QWidget* heatmap = nullptr;
  QWidget* roofline = nullptr;
  const QAbstractItemModel* shapes = nullptr;
};

class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  ExportDialog(SessionDocument* doc, ExportTargets targets, QWidget* parent = nullptr);
  void setDirectory(const QString& dir);
  QString directory() const;
  void setAllChecked(bool on);
  // Writes every checked item; returns the summary (a line per file, shown in the dialog) and, after a
  // blank line, the full reports (behind "Show details"). Errors are listed, not thrown.
  QString exportChecked();
  QString summaryText() const;
  bool isChecked(int item) const;
  void setChecked(int item, bool on);
  // The file an item goes to, e.g. "<dir>/llama-3-8b-sm_90.temper-profile.json".
  QString fileFor(int item) const;
  int itemCount() const { return int(items_.size()); }

 private:
  struct Item {
    QString label, suffix;
    QCheckBox* box = nullptr;
  };
  SessionDocument* doc_;
  ExportTargets targets_;
  QLineEdit* dir_;
  std::vector<Item> items_;
  QPlainTextEdit* log_;
  QLabel* summary_;
  QPushButton* details_button_;
};

}  // namespace temper::ui
