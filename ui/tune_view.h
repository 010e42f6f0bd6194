#pragma once
// A finished tune at a glance: what `temper tune` left in a profile (and, when there is one, its
// journal). Top to bottom: the answer (how much faster llama-bench ran, how sure, which launches
// gained most, what was left out), the llama-bench table with its CIs and the engine's own line, the
// steps and their decisions, where one token's GEMV time goes per launch kind, and the sweep's gains
// per launch kind as a heatmap (shape × batch width). Opened from a profile, a tune journal or a
// finished live tune; everything comes from core's reading of those files.
//
// TuneComparison puts two tunes side by side (two GPUs, two models, before/after an update): the
// bench tests, the launch kinds and the entries aligned, each difference beyond the CIs highlighted.
#include <QWidget>

#include "temper/profile.h"

class QComboBox;
class QLabel;
class QJsonObject;
class QTableView;
class QTableWidget;

namespace temper::ui {

class BenchModel;

// A tune as read from disk: its profile, and what its journal adds when there is one.
struct TuneRecord {
  Profile profile;
  QString name;          // what the user opened, for titles
  QString profile_path;  // empty when the journal named none that exists
  QString journal_path;
  struct Step {
    QString name, outcome, summary;
    double seconds = 0;
  };
  std::vector<Step> steps;         // the journal's last record of each step, in tune's order
  QByteArray replay_json;          // the replay step's numbers, when it ran
  // The token step's prediction (stock / profile by whole tokens), when it ran: tg N, speedup, 95 % CI.
  int predicted_tokens = 0;
  double predicted = 0, predicted_low = 0, predicted_high = 0;
  QString session_path;            // the engine sweep's session, when it still exists
};
// Error(BadInput) naming the file and the field when it does not read.
TuneRecord read_tune_profile(const QString& path);
TuneRecord read_tune_profile_json(const QByteArray& json, const QString& name);  // an embedded one (the demo's)
TuneRecord read_tune_journal(const QString& path);
// Whether a file is a tune journal (its first line names the format), without reading all of it.
bool looks_like_tune_journal(const QString& path);

// The (arch, device) a tune was measured on: its bench record's, else its first entry's.
struct TunePlace {
  std::string arch;
  ProfileDevice device;
};
TunePlace tune_place(const Profile& p);

class TuneView : public QWidget {
  Q_OBJECT
 public:
  explicit TuneView(QWidget* parent = nullptr);
  void setTune(TuneRecord tune);
  bool hasTune() const { return has_tune_; }
  const TuneRecord& tune() const { return tune_; }

  QString title() const;        // the tune's name, model, device and date
  QString headline() const;     // the answer: bench speedup, CI, gained most, left out
  QString engineLine() const;
  QComboBox* benchPicker() const { return bench_pick_; }
  QTableView* benchTable() const { return bench_view_; }
  BenchModel* benchModel() const { return bench_; }
  QTableWidget* decisions() const { return decisions_; }
  QTableWidget* tokenTime() const { return token_; }
  QTableWidget* replayTime() const { return replay_; }
  QTableWidget* heatmap() const { return heatmap_; }
  // Every table of the view, for the legibility test.
  QList<QTableView*> tables() const;

 private:
  void showBench(int record);
  void fillDecisions();
  void fillTokenTime();
  void fillHeatmap();

  TuneRecord tune_;
  bool has_tune_ = false;
  QLabel* title_;
  QLabel* headline_;
  QComboBox* bench_pick_;
  BenchModel* bench_;
  QTableView* bench_view_;
  QLabel* engine_line_;
  QLabel* decisions_head_;
  QTableWidget* decisions_;
  QLabel* token_head_;
  QTableWidget* token_;
  QLabel* replay_head_;
  QTableWidget* replay_;
  QLabel* heatmap_head_;
  QTableWidget* heatmap_;
};

class TuneComparison : public QWidget {
  Q_OBJECT
 public:
  enum BenchColumn { Test, RateA, SpeedupA, RateB, SpeedupB, Change, BenchColumns };
  explicit TuneComparison(QWidget* parent = nullptr);
  void setTunes(const TuneRecord& a, const TuneRecord& b);
  bool hasTunes() const { return has_tunes_; }
  QString summaryText() const;
  QTableWidget* bench() const { return bench_; }
  QTableWidget* launches() const { return launches_; }
  QTableWidget* entries() const { return entries_; }
  QList<QTableView*> tables() const;
  // Rows whose difference is beyond both CIs (highlighted), per table.
  int highlightedRows(const QTableWidget* t) const;

 private:
  bool has_tunes_ = false;
  QLabel* summary_;
  QTableWidget* bench_;
  QTableWidget* launches_;
  QLabel* entries_head_;
  QTableWidget* entries_;
};

// The replay's breakdown (docs/json.md, engine replay "breakdown") in `table`, its sums in `head`:
// each launch shape's stock and profile µs per token against its bytes at the measured copy bandwidth.
void showReplayBreakdown(QTableWidget* table, QLabel* head, const QJsonObject& replay);
QTableWidget* replayBreakdownTable();  // its table: launch, per token, stock, profile, copy-bandwidth floor, ...
// A QTableWidget that shows all its rows and never scrolls sideways (the page scrolls instead).
QTableWidget* pageTable(int columns, const QStringList& headers);
// Makes `t` such a table: as wide as the page, as tall as its rows (wrapped text included), kept so
// as its contents and width change.
void fitToPage(QTableView* t);
// Every column of `t` in its width: at its header's and cells' width where that fits, else a header
// wider than its cells gives way (elided; its tooltip names it), the cells never do. Kept so as the
// view's width and its model change.
void fitColumnsToView(QTableView* t);

}  // namespace temper::ui
