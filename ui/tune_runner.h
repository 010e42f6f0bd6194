#pragma once
// Runs core's tune (or its bench step alone) on a worker thread: the steps' events and every kind
// of progress become queued signals, Cancel goes through core's cancellation flag. The GUI thread
// never waits on the engine, the GPU or llama-bench.
#include <QByteArray>
#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>

#include "temper/engine_bench.h"
#include "temper/tune.h"

namespace temper::ui {

class TuneRunner : public QObject {
  Q_OBJECT
 public:
  explicit TuneRunner(QObject* parent = nullptr);
  ~TuneRunner() override;  // cancels and joins

  void startTune(tune::TuneOptions options);
  // `temper engine bench`: the record is added to the profile unless `record` is false.
  void startBench(engine::BenchOptions options, bool record = true);
  void cancel();
  bool isRunning() const { return running_; }
  void wait();  // blocks until the worker is gone (tests, shutdown)

 Q_SIGNALS:
  void stepStarted(int step, const QString& what);  // step: int(tune::Step)
  void stepFinished(int step, const QString& outcome, const QString& summary, double seconds);
  // Progress inside the running step: done of total, a line, the ETA (0 when unknown).
  void progress(int done, int total, const QString& text, double eta_s);
  void note(const QString& text);
  void benchReady(const temper::BenchRecord& record);
  void replayReady(const QByteArray& replay_json);  // the replay step's numbers (docs/json.md, engine replay)
  void crossoverReady(const QByteArray& crossover_json);  // the crossover's cells (docs/json.md, tune "crossover")
  void groupsReady(const QByteArray& groups_json);  // the group step's decisions (docs/json.md, tune "groups")
  void pipelineReady(const QByteArray& pipeline_json);  // the pipeline step's decision (docs/json.md, tune "pipeline")
  // The token step's predicted tg speedup (95 % CI) and llama-bench's measured one (0: not measured).
  void predictionReady(int tokens, double predicted, double low, double high, double measured);
  void finished(const QString& summary);  // tune or bench done
  void tuneDone(const QString& journal);  // a tune finished: its journal (which names the profile it installed)
  void failed(const QString& message, bool cancelled);

 private:
  void run(std::function<QString()> work);

  QThread* thread_ = nullptr;
  std::atomic<bool> cancel_{false};
  bool running_ = false;  // GUI thread only
};

}  // namespace temper::ui
