#pragma once
// Sweep panel: device picker (every HIP/CUDA device with its spec-database name, or a "no GPU found"
// state that says why and offers a session instead), grid editor (nwarps, rows_per_block, ncols,
// engine, shapes subset), start / cancel. The sweep runs in SweepRunner; results land in the document.
#include <QWidget>
#include <memory>
#include <vector>

#include "session_doc.h"
#include "sweep_runner.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QPushButton;
class QStackedWidget;

namespace temper::ui {

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  // `backends`: where devices come from (the GPU backends, plus a fake one when asked for).
  SweepPanel(SessionDocument* doc, std::vector<std::unique_ptr<Backend>> backends, QWidget* parent = nullptr);
  ~SweepPanel() override;
  bool hasDevices() const { return !devices_.empty(); }
  QSize sizeHint() const override { return {320, 600}; }
  SweepRunner* runner() const { return runner_; }
  QPushButton* startButton() const { return start_; }
  QPushButton* cancelButton() const { return cancel_; }
  // The grid as edited (validated by core when the sweep starts).
  PlanGrid grid() const;
  void setGrid(const PlanGrid& g);
  void saveSettings() const;
  void setJournalDir(const QString& dir) { journal_dir_ = dir; }
  // The inputs' seed, to repeat a sweep exactly (`temper sweep --seed`); 0: a fresh one per sweep.
  void setSeed(uint64_t seed) { seed_ = seed; }
  // Starts a sweep of the checked shapes on the picked device; false (with a dialog) when it cannot.
  bool startSweep();

 Q_SIGNALS:
  void openSessionRequested();
  void openDemoRequested();
  void progressText(const QString& text, int done, int total);
  void sweepFinished(const QString& summary);

 private:
  struct DeviceEntry {
    Backend* backend;
    DeviceInfo info;
  };
  void refreshShapes();
  void setRunning(bool running);

  SessionDocument* doc_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<DeviceEntry> devices_;
  SweepRunner* runner_;
  QStackedWidget* stack_;
  QComboBox* device_;
  QLabel* device_note_;
  std::vector<QCheckBox*> nwarps_, rows_, ncols_;
  QComboBox* engine_;
  QDoubleSpinBox* time_cap_;
  QListWidget* shapes_;
  QPushButton* start_;
  QPushButton* cancel_;
  QString journal_dir_;
  uint64_t seed_ = 0;
};

}  // namespace temper::ui
