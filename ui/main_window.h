#pragma once
// temper-gui's window: model panel and sweep panel as docks, the heatmap / roofline / occupancy /
// approval / tune & bench views as tabs, menus with the usual shortcuts, recent files, settings, export, help.
// It only wires pages together; each page reads the one SessionDocument.
#include <QMainWindow>
#include <QMessageBox>
#include <functional>
#include <memory>
#include <vector>

#include "session_doc.h"

class QComboBox;
class QDialog;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;

namespace temper::ui {

class ApprovalPanel;
class ComparisonView;
class DistributionView;
class HeatmapWidget;
class ModelPanel;
class OccupancyView;
class RooflineView;
class SweepPanel;
class TuneComparison;
class TunePanel;
class TuneView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(std::vector<std::unique_ptr<Backend>> backends, QWidget* parent = nullptr);
  ~MainWindow() override;

  SessionDocument* document() const { return doc_; }
  ModelPanel* modelPanel() const { return model_panel_; }
  SweepPanel* sweepPanel() const { return sweep_panel_; }
  HeatmapWidget* heatmap() const { return heatmap_; }
  RooflineView* roofline() const { return roofline_; }
  OccupancyView* occupancy() const { return occupancy_; }
  DistributionView* distribution() const { return distribution_; }
  ApprovalPanel* approval() const { return approval_; }
  TunePanel* tunePanel() const { return tune_; }
  // A finished tune (a profile, a tune journal, or the live tune when it ends) and two side by side.
  TuneView* tuneView() const { return tune_view_; }
  TuneComparison* tuneComparison() const { return tune_compare_; }
  // Shows the tune in `path` (a profile or a tune journal) beside the open one in the comparison tab.
  bool compareTuneWith(const QString& path, QString* error = nullptr);
  // The technical detail behind the last error's plain sentence (the dialog's "Show Details…").
  QString lastErrorDetail() const { return last_error_detail_; }
  QTabWidget* tabs() const { return tabs_; }
  QString headerText() const;
  QString statusText() const;  // the status line: what was opened, or why it could not be

  // Opens a GGUF model, a session, a tuning profile or a tune journal; errors become a dialog (or,
  // with `error`, are returned): a plain sentence first, the reader's precise line as its detail.
  bool openPath(const QString& path, QString* error = nullptr);
  bool openDemo(QString* error = nullptr);
  // Opens a second session beside the current one in the comparison window (e.g. an engine sweep
  // beside a Temper-kernel sweep of the same model); refused, with the reason, when the models differ.
  bool compareWith(const QString& path, QString* error = nullptr);
  ComparisonView* comparison() const { return comparison_; }
  static bool hasDemo();
  // The docs the Help browser carries (every docs/*.md and the README).
  static QStringList helpDocs();
  // Saves PNGs of the main views into `dir`; returns the files written.
  QStringList saveScreenshots(const QString& dir);
  // Offer the demo on a first launch without a GPU.
  void offerDemoIfFirstLaunch();
  // Dialogs (errors, prompts) are suppressed and answered "no" (tests, screenshots).
  void setInteractive(bool on) { interactive_ = on; }
  // How the window asks (a question with buttons; a file to save to): dialogs by default, answered
  // by tests. Non-interactive and unanswered: Cancel, no file.
  struct Prompts {
    std::function<QMessageBox::StandardButton(const QString& title, const QString& text, QMessageBox::StandardButtons)> question;
    std::function<QString(const QString& title, const QString& suggested, const QString& filter)> saveFile;
  };
  void setPrompts(Prompts p) { prompts_ = std::move(p); }
  // Before anything replaces the document: unsaved results or approvals are saved, discarded or
  // kept (false: the user cancelled).
  bool confirmDiscard();
  // The approvals as a Temper profile (asks where; beside the session by default).
  bool saveApprovals();

 protected:
  void closeEvent(QCloseEvent* e) override;
  void showEvent(QShowEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void buildMenus();
  void applyDefaultDockSizes();
  void openDialog();
  bool save(bool as);
  void exportDialog();
  void showAbout();
  void showHelp(const QString& doc);
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void updateTitle();
  void showError(const QString& title, const QString& text, const QString& detail = {});
  void showTune(const QString& path);  // Error when it does not read
  void loadApprovalsDialog();

  SessionDocument* doc_;
  ModelPanel* model_panel_;
  SweepPanel* sweep_panel_;
  HeatmapWidget* heatmap_;
  QComboBox* metric_;
  RooflineView* roofline_;
  OccupancyView* occupancy_;
  DistributionView* distribution_;
  ApprovalPanel* approval_;
  TunePanel* tune_;
  TuneView* tune_view_;
  TuneComparison* tune_compare_;
  QString last_error_detail_;
  QTabWidget* tabs_;
  QLabel* header_;
  QLabel* status_;
  QProgressBar* progress_;
  QMenu* recent_menu_ = nullptr;
  QDialog* comparison_window_ = nullptr;
  ComparisonView* comparison_ = nullptr;
  bool interactive_ = true;
  Prompts prompts_;
  bool default_layout_ = false;  // no saved dock layout: size the docks once shown
};

}  // namespace temper::ui
