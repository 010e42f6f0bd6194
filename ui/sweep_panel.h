#pragma once
// Sweep panel: device picker (every HIP/CUDA device with its spec-database name, or a "no GPU found"
// state that says why and offers a session instead), grid editor (nwarps, rows_per_block, ncols,
// engine, shapes subset), the kernel to time (Temper's, or the engine's own: built from a ggml /
// llama.cpp folder, or a ready temper-probe), start / cancel. The sweep (and the one-time engine
// build) runs in SweepRunner; results land in the document.
#include <QWidget>
#include <functional>
#include <memory>
#include <vector>

#include "session_doc.h"
#include "sweep_runner.h"
#include "temper/gpu_backend.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QStackedWidget;

namespace temper::ui {

// Which kernel a sweep times.
enum class KernelChoice { Temper, EngineSource, EngineProbe };

// One line about an engine source folder, from core's check: the kind of tree, its ggml commit,
// whether the hook applies (or why not). `ok` says whether an engine can be built from it.
QString engineCheckLine(const QString& dir, bool* ok = nullptr);

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  // `backends`: where devices come from (the GPU backends, plus a fake one when asked for).
  SweepPanel(SessionDocument* doc, std::vector<std::unique_ptr<Backend>> backends, QWidget* parent = nullptr);
  ~SweepPanel() override;
  bool hasDevices() const { return !devices_.devices.empty(); }
  // The first device's arch ("sm_90"), what an engine build targets by default; empty without one.
  QString firstArch() const;
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

  KernelChoice kernelChoice() const;
  void setKernelChoice(KernelChoice k);
  // The engine source folder (checked at once; the line shows the result) and the ready probe.
  QString engineSource() const;
  void setEngineSource(const QString& dir);
  QString engineCheckText() const;
  QString probePath() const;
  void setProbePath(const QString& path);
  // The engine build's progress, its "cached" line, or the build's error (first error, log path).
  QString engineStatusText() const;
  // Dialogs (errors, prompts) are suppressed; errors stay in the status line (tests).
  void setInteractive(bool on) { interactive_ = on; }
  // Asked before a new sweep replaces the document (the window's save-or-discard prompt).
  void setConfirmReplace(std::function<bool()> confirm) { confirm_replace_ = std::move(confirm); }

 Q_SIGNALS:
  void openSessionRequested();
  void openDemoRequested();
  void progressText(const QString& text, int done, int total);
  void sweepFinished(const QString& summary);

 private:
  void refreshShapes();
  void setRunning(bool running);
  void updateKernelRows();
  void setEngineStatus(const QString& text);
  void showError(const QString& title, const QString& text);

  SessionDocument* doc_;
  gpu::DeviceList devices_;  // the same list, in the same order, as the CLI's --device N counts
  SweepRunner* runner_;
  QStackedWidget* stack_;
  QComboBox* device_;
  QLabel* device_note_;
  std::vector<QCheckBox*> nwarps_, rows_, ncols_;
  QComboBox* engine_;
  QComboBox* kernel_;
  QFormLayout* form_;
  QWidget* engine_row_;
  QLineEdit* engine_src_;
  QLabel* engine_check_;
  QWidget* probe_row_;
  QLineEdit* probe_;
  QLabel* engine_status_;
  bool interactive_ = true;
  std::function<bool()> confirm_replace_;
  QDoubleSpinBox* time_cap_;
  QListWidget* shapes_;
  QPushButton* start_;
  QPushButton* cancel_;
  QString journal_dir_;
  uint64_t seed_ = 0;
};

}  // namespace temper::ui
