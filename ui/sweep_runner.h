#pragma once
// Runs core's sweep on a worker thread: plans (copy bandwidth included) and measures there, turns
// the progress callback into queued signals (with the results that landed since the last call),
// and cancels through core's cancellation flag. The GUI thread never waits on the GPU.
#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "temper/engine_build.h"
#include "temper/sweep.h"

namespace temper::ui {

using DeviceFactory = std::function<std::vector<std::unique_ptr<Device>>()>;

// An engine sweep's device: a ready temper-probe, or the ggml tree to build one from first.
struct EngineRequest {
  std::filesystem::path probe;   // set: use it as it is
  std::filesystem::path source;  // else: core's engine build of this tree (cached), then its probe
  engine::BuildOptions build;    // arch, platform, kernel set (cancel is the runner's)
};

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  explicit SweepRunner(QObject* parent = nullptr);
  ~SweepRunner() override;  // cancels and joins a running sweep

  // Opens the devices, plans and runs on a worker thread. `journal_dir` empty: no journal.
  void start(SweepSetup setup, DeviceFactory devices, const QString& journal_dir = {});
  // The same through the engine's own kernel: on the worker, the engine build first (with
  // buildProgress; Cancel stops it), then the sweep through the probe; the session records the
  // engine as its kernel source. A failed build ends in failed() with core's message (the
  // compiler's first error and the log's path).
  void startEngine(SweepSetup setup, EngineRequest request, const QString& journal_dir = {});
  void cancel();
  bool isRunning() const { return running_; }
  // Blocks until the worker is gone (tests and shutdown).
  void wait();

 Q_SIGNALS:
  void planned(const temper::Session& session, double eta_s);
  void progress(qulonglong done, qulonglong total, const QString& current, double eta_s);
  void resultsArrived(const std::vector<temper::Result>& results);
  void finished(const temper::Session& session);  // complete, cancelled or failed (per device)
  void failed(const QString& message);            // nothing to keep: planning or opening failed
  // The engine build: steps done of total (0/0 while configuring), ETA, the log being written.
  void buildProgress(int done, int total, double eta_s, const QString& log);
  // The probe is ready: "cached" (no build needed) or built, where, in how long.
  void engineReady(const QString& text);

 private:
  QThread* thread_ = nullptr;
  std::atomic<bool> cancel_{false};
  bool running_ = false;  // GUI thread only: false once finished/failed is emitted
};

}  // namespace temper::ui
