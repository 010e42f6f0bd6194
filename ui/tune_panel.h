#pragma once
// Tune & bench: `temper tune` as one action (the engine folder or a ready probe, llama-bench, the
// profile's place), with every step's outcome, time and summary as it runs, and the bench panel:
// llama-bench's tokens/s with and without the profile per test, the speedup with its CI, and the
// arms' samples, run by run, in a chart. "Bench only" re-runs llama-bench on the profile as it is.
// The work runs in TuneRunner (a worker thread); Cancel stops it, the journal keeps what was done.
#include <QWidget>

#include "models/bench_model.h"
#include "session_doc.h"
#include "tune_runner.h"

class QCheckBox;
class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;
class QTableWidget;

namespace temper::ui {

class TunePanel : public QWidget {
  Q_OBJECT
 public:
  explicit TunePanel(SessionDocument* doc, QWidget* parent = nullptr);

  // The inputs (the model defaults to the document's GGUF).
  void setModelPath(const QString& path);
  QString modelPath() const;
  void setEngineSource(const QString& dir);  // a ggml / llama.cpp tree
  void setProbe(const QString& path);        // or a ready temper-probe
  void setArch(const QString& arch);         // what the engine is built for (the first GPU's, by default)
  void setLlamaBench(const QString& path, const QString& stock = {});
  void setTests(const QString& tests, int rounds, int repetitions);
  void setNcols(const QString& list);
  void setOutput(const QString& profile);    // empty: where the engine looks
  QString profilePath() const;               // the field's, or where the engine looks; "" when neither
  void setPatch(bool on);
  // Start the work; false (the reason in the status line, and a dialog when interactive) when it cannot.
  bool startTune();
  bool startBench();
  void setInteractive(bool on) { interactive_ = on; }

  TuneRunner* runner() const { return runner_; }
  QTableWidget* steps() const { return steps_; }
  // Where a token's GEMV time goes: the replay's launch shapes, stock and with the profile, against
  // their bytes at the measured copy bandwidth; its head line sums them.
  QTableWidget* tokenTime() const { return token_; }
  QString tokenTimeHead() const;
  void showReplay(const QByteArray& replay_json);
  // mmvq or mmq per type: a row per (type, launch kind), a column per batch width the crossover
  // measured; a cell is the path the engine runs with the profile, with its gain where it is not
  // ggml's own pick (those in bold; stock cells plain). From tune's "crossover" (docs/json.md).
  QTableWidget* crossover() const { return crossover_; }
  void showCrossover(const QByteArray& crossover_json);
  // Same-input groups: a row per batch width the group step measured — the plan's runs per token,
  // the best group config, its group launches per token, µs per token off and with it, the gain with
  // its CI and whether it was installed (bold). From tune's "groups" (docs/json.md).
  QTableWidget* groups() const { return groups_; }
  QString groupsHead() const;
  void showGroups(const QByteArray& groups_json);
  // Pipelined launches: one line from tune's "pipeline" — installed or not, the whole-token gain in the
  // replay with its CI, pipelined launches per token, and why (the replay sees GEMVs only).
  QString pipelineText() const;
  void showPipeline(const QByteArray& pipeline_json);
  BenchModel* benchModel() const { return bench_; }
  QChart* samplesChart() const;
  QString statusText() const;
  QPushButton* cancelButton() const { return cancel_; }

 Q_SIGNALS:
  // "Show" beside the Profile field: the tune that profile holds, in the Tune result tab.
  void showProfileRequested(const QString& path);
  void progressText(const QString& text, int done, int total);
  void finished(const QString& summary);

 private:
  tune::TuneOptions tuneOptions() const;  // Error(BadInput) when an input is missing
  engine::BenchOptions benchOptions() const;
  void showSamples(int row);
  void setRunning(bool on);
  void fail(const QString& text);

  SessionDocument* doc_;
  TuneRunner* runner_;
  QString model_;
  QComboBox* engine_kind_;
  QLineEdit* engine_path_;
  QLabel* engine_check_;
  QCheckBox* patch_;
  QLineEdit* arch_;
  QLineEdit* ncols_;
  QLineEdit* llama_bench_;
  QLineEdit* stock_bench_;
  QLineEdit* tests_;
  QSpinBox* rounds_;
  QSpinBox* repetitions_;
  QLineEdit* output_;
  QPushButton* tune_;
  QPushButton* bench_only_;
  QPushButton* cancel_;
  QTableWidget* steps_;
  QLabel* token_head_;
  QTableWidget* token_;
  QLabel* crossover_head_;
  QTableWidget* crossover_;
  QLabel* groups_head_;
  QLabel* pipeline_;
  QTableWidget* groups_;
  QProgressBar* progress_;
  QLabel* status_;
  BenchModel* bench_;
  QTableView* bench_view_;
  QLabel* bench_head_;
  QChartView* chart_;
  bool interactive_ = true;
  int running_step_ = -1;  // the step started and not finished (int(tune::Step)), -1: none
};

}  // namespace temper::ui
