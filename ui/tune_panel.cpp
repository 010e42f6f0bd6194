#include "tune_panel.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFont>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <sstream>

#include "fs_path.h"
#include "sweep_panel.h"
#include "exports.h"
#include "tune_view.h"
#include "temper/error.h"
#include "temper/verify.h"

namespace temper::ui {

namespace {

// A path edit with a Choose… button beside it.
QWidget* pathRow(QLineEdit* edit, QWidget* parent, bool folder, const QString& title) {
  auto* row = new QWidget;
  auto* l = new QHBoxLayout(row);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(edit, 1);
  auto* choose = new QPushButton(QStringLiteral("Choose…"));
  l->addWidget(choose);
  QObject::connect(choose, &QPushButton::clicked, parent, [edit, parent, folder, title] {
    const QString p = folder ? QFileDialog::getExistingDirectory(parent, title, edit->text())
                             : QFileDialog::getOpenFileName(parent, title, edit->text());
    if (!p.isEmpty()) edit->setText(p);
  });
  return row;
}
}  // namespace

TunePanel::TunePanel(SessionDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc), runner_(new TuneRunner(this)) {
  engine_kind_ = new QComboBox;
  engine_kind_->addItem(QStringLiteral("llama.cpp / ggml folder"));
  engine_kind_->addItem(QStringLiteral("Ready temper-probe"));
  engine_path_ = new QLineEdit;
  engine_check_ = new QLabel;
  engine_check_->setWordWrap(true);
  patch_ = new QCheckBox(QStringLiteral("Patch the folder in place first (then rebuild llama.cpp)"));
  arch_ = new QLineEdit;
  arch_->setPlaceholderText(QStringLiteral("sm_90, gfx90a"));
  ncols_ = new QLineEdit(QStringLiteral("1,2,4,8"));
  llama_bench_ = new QLineEdit;
  llama_bench_->setPlaceholderText(QStringLiteral("llama-bench built from the patched tree (optional)"));
  stock_bench_ = new QLineEdit;
  stock_bench_->setPlaceholderText(QStringLiteral("an unpatched llama-bench (optional)"));
  tests_ = new QLineEdit(QString::fromLatin1(engine::kDefaultBenchTests.data(), qsizetype(engine::kDefaultBenchTests.size())));
  rounds_ = new QSpinBox;
  rounds_->setRange(1, 100);
  rounds_->setValue(3);
  repetitions_ = new QSpinBox;
  repetitions_->setRange(1, 100);
  repetitions_->setValue(5);
  output_ = new QLineEdit;
  try {
    output_->setPlaceholderText(QString::fromStdString(engine::default_engine_profile().string()));
  } catch (const Error&) {
  }
  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Engine:"), engine_kind_);
  form->addRow(QString(), pathRow(engine_path_, this, true, QStringLiteral("Engine")));
  form->addRow(QString(), engine_check_);
  form->addRow(QString(), patch_);
  form->addRow(QStringLiteral("Arch:"), arch_);
  form->addRow(QStringLiteral("Batch widths:"), ncols_);
  form->addRow(QStringLiteral("llama-bench:"), pathRow(llama_bench_, this, false, QStringLiteral("llama-bench")));
  form->addRow(QStringLiteral("Stock llama-bench:"), pathRow(stock_bench_, this, false, QStringLiteral("Stock llama-bench")));
  auto* benchRow = new QHBoxLayout;
  benchRow->addWidget(tests_, 1);
  benchRow->addWidget(new QLabel(QStringLiteral("rounds")));
  benchRow->addWidget(rounds_);
  benchRow->addWidget(new QLabel(QStringLiteral("repetitions")));
  benchRow->addWidget(repetitions_);
  form->addRow(QStringLiteral("Bench tests:"), benchRow);
  QWidget* profileRow = pathRow(output_, this, false, QStringLiteral("Profile"));
  auto* showProfile = new QPushButton(QStringLiteral("Show"));
  showProfile->setObjectName(QStringLiteral("showProfile"));
  showProfile->setToolTip(QStringLiteral("Open this profile's tune in the Tune result tab"));
  profileRow->layout()->addWidget(showProfile);
  connect(showProfile, &QPushButton::clicked, this, [this] { Q_EMIT showProfileRequested(profilePath()); });
  form->addRow(QStringLiteral("Profile:"), profileRow);
  connect(engine_kind_, &QComboBox::currentIndexChanged, this, [this](int i) {
    patch_->setEnabled(i == 0);
    engine_check_->setText(i == 0 ? engineCheckLine(engine_path_->text()) : QString());
  });
  connect(engine_path_, &QLineEdit::textChanged, this, [this](const QString& p) {
    if (engine_kind_->currentIndex() == 0) engine_check_->setText(engineCheckLine(p));
  });

  tune_ = new QPushButton(QStringLiteral("Tune"));
  tune_->setToolTip(QStringLiteral("check, patch, build, sweep, approve, install, replay and bench (temper tune)"));
  bench_only_ = new QPushButton(QStringLiteral("Bench only"));
  bench_only_->setToolTip(QStringLiteral("llama-bench with and without the profile as it is (temper engine bench)"));
  cancel_ = new QPushButton(QStringLiteral("Cancel"));
  cancel_->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(tune_);
  buttons->addWidget(bench_only_);
  buttons->addWidget(cancel_);
  buttons->addStretch();
  connect(tune_, &QPushButton::clicked, this, [this] { startTune(); });
  connect(bench_only_, &QPushButton::clicked, this, [this] { startBench(); });
  connect(cancel_, &QPushButton::clicked, runner_, &TuneRunner::cancel);

  steps_ = new QTableWidget(int(std::size(tune::kSteps)), 4);
  steps_->setHorizontalHeaderLabels({QStringLiteral("Step"), QStringLiteral("Outcome"), QStringLiteral("Time"), QStringLiteral("Summary")});
  steps_->verticalHeader()->hide();
  steps_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  steps_->horizontalHeader()->setStretchLastSection(true);
  for (int c = 0; c < 3; ++c) steps_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  for (tune::Step s : tune::kSteps) steps_->setItem(int(s), 0, new QTableWidgetItem(QString::fromLatin1(tune::step_name(s).data())));
  token_head_ = new QLabel(QStringLiteral("Where a token's GEMV time goes: after the replay step."));
  token_head_->setWordWrap(true);
  token_head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  token_ = replayBreakdownTable();
  connect(runner_, &TuneRunner::replayReady, this, &TunePanel::showReplay);
  crossover_head_ = new QLabel(QStringLiteral("mmvq or mmq per type and batch width: after the crossover step (batch widths above 1)."));
  crossover_head_->setWordWrap(true);
  crossover_head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  crossover_ = new QTableWidget(0, 0);
  crossover_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  crossover_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  crossover_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  crossover_->setMinimumHeight(70);
  connect(runner_, &TuneRunner::crossoverReady, this, &TunePanel::showCrossover);
  groups_head_ = new QLabel(QStringLiteral("Same-input groups (q, k, v as one launch): after the group step (batch widths 1..4)."));
  groups_head_->setWordWrap(true);
  groups_head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  groups_ = new QTableWidget(0, 8);
  groups_->setHorizontalHeaderLabels({QStringLiteral("ncols"), QStringLiteral("runs/token"), QStringLiteral("config"),
                                      QStringLiteral("group launches"), QStringLiteral("off µs"), QStringLiteral("config µs"),
                                      QStringLiteral("gain [CI]"), QStringLiteral("installed")});
  groups_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  groups_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  groups_->verticalHeader()->setVisible(false);
  groups_->setMinimumHeight(70);
  connect(runner_, &TuneRunner::groupsReady, this, &TunePanel::showGroups);
  pipeline_ = new QLabel(QStringLiteral("Pipelined launches (one column): after the pipeline step."));
  pipeline_->setWordWrap(true);
  pipeline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  connect(runner_, &TuneRunner::pipelineReady, this, &TunePanel::showPipeline);
  progress_ = new QProgressBar;
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  bench_ = new BenchModel(this);
  bench_view_ = new QTableView;
  bench_view_->setModel(bench_);
  bench_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  bench_view_->setSelectionMode(QAbstractItemView::SingleSelection);
  bench_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  bench_view_->setMinimumHeight(90);
  bench_head_ = new QLabel(QStringLiteral("No bench yet: give llama-bench and Tune, or Bench only."));
  bench_head_->setWordWrap(true);
  bench_head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Given its chart at construction: QChartView() makes a default chart that setChart() would
  // release without deleting (LeakSanitizer found it in every window).
  chart_ = new QChartView(new QChart);
  chart_->setRenderHint(QPainter::Antialiasing);
  chart_->setMinimumSize(320, 280);
  addSaveImageAction(chart_, QStringLiteral("bench-samples.png"));
  connect(bench_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& i) { showSamples(i.row()); });
  connect(bench_, &QAbstractItemModel::modelReset, this, [this] {
    if (bench_->rowCount() > 0) bench_view_->selectRow(0);
    showSamples(bench_->rowCount() > 0 ? 0 : -1);
  });

  // One column, top to bottom, as wide as the tab (the tab scrolls down, never sideways): what to
  // run, how it goes, every step, the bench with its samples, then what the replays found. Each
  // table is as tall as its rows, so nothing draws over another whatever a status line says.
  steps_->horizontalHeader()->setSectionResizeMode(3, QHeaderView::Stretch);
  for (QTableView* t : std::initializer_list<QTableView*>{steps_, bench_view_, token_, crossover_, groups_}) {
    t->setMinimumHeight(0);
    fitToPage(t);
  }
  crossover_->verticalHeader()->setVisible(true);  // its rows are named there
  auto* l = new QVBoxLayout(this);
  l->addLayout(form);
  l->addLayout(buttons);
  l->addWidget(progress_);
  l->addWidget(status_);
  l->addWidget(steps_);
  l->addWidget(bench_head_);
  l->addWidget(bench_view_);
  l->addWidget(chart_);
  l->addWidget(token_head_);
  l->addWidget(token_);
  l->addWidget(crossover_head_);
  l->addWidget(crossover_);
  l->addWidget(groups_head_);
  l->addWidget(groups_);
  l->addWidget(pipeline_);
  l->addStretch(1);

  connect(runner_, &TuneRunner::stepStarted, this, [this](int step, const QString& what) {
    running_step_ = step;
    steps_->setItem(step, 1, new QTableWidgetItem(QStringLiteral("running…")));
    steps_->setItem(step, 3, new QTableWidgetItem(what));
    progress_->setRange(0, 0);
    status_->setText(QStringLiteral("%1: %2").arg(QString::fromLatin1(tune::step_name(tune::Step(step)).data()), what));
    Q_EMIT progressText(status_->text(), 0, 0);
  });
  connect(runner_, &TuneRunner::stepFinished, this, [this](int step, const QString& outcome, const QString& summary, double s) {
    running_step_ = -1;
    steps_->setItem(step, 1, new QTableWidgetItem(outcome));
    steps_->setItem(step, 2, new QTableWidgetItem(QStringLiteral("%1 s").arg(s, 0, 'f', 1)));
    steps_->setItem(step, 3, new QTableWidgetItem(summary));
    steps_->item(step, 3)->setToolTip(summary);
  });
  connect(runner_, &TuneRunner::progress, this, [this](int done, int total, const QString& text, double eta) {
    progress_->setRange(0, std::max(total, 0));
    progress_->setValue(done);
    const QString line = eta > 0 ? QStringLiteral("%1 (ETA %2 s)").arg(text).arg(int(eta + 0.5)) : text;
    progress_->setFormat(QStringLiteral("%v/%m"));
    status_->setText(line);
    Q_EMIT progressText(line, done, total);
  });
  connect(runner_, &TuneRunner::note, this, [this](const QString& text) { status_->setText(QStringLiteral("Note: ") + text); });
  connect(runner_, &TuneRunner::benchReady, this, [this](const BenchRecord& r) {
    bench_->setRecord(r);
    bench_head_->setText(QStringLiteral("llama-bench on %1 (%2): stock build %3, profile build %4; the engine said: %5")
                             .arg(QString::fromStdString(r.device), QString::fromStdString(r.model),
                                  QString::fromStdString(r.stock.build_commit), QString::fromStdString(r.profiled.build_commit),
                                  QString::fromStdString(r.engine_line)));
  });
  connect(runner_, &TuneRunner::predictionReady, this, [this](int tokens, double predicted, double low, double high, double measured) {
    QString line = QStringLiteral("tg%1: predicted ×%2 [%3, %4] by the token probe (whole tokens in the engine's graph)")
                       .arg(tokens)
                       .arg(predicted, 0, 'f', 3)
                       .arg(low, 0, 'f', 3)
                       .arg(high, 0, 'f', 3);
    if (measured > 0) line += QStringLiteral(", measured ×%1 by llama-bench").arg(measured, 0, 'f', 3);
    bench_head_->setText(line + QStringLiteral("\n") + bench_head_->text());
  });
  connect(runner_, &TuneRunner::finished, this, [this](const QString& summary) {
    setRunning(false);
    progress_->setRange(0, 1);
    progress_->setValue(1);
    status_->setText(summary);
    Q_EMIT finished(summary);
  });
  connect(runner_, &TuneRunner::failed, this, [this](const QString& message, bool cancelled) {
    setRunning(false);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    const QString text = cancelled ? QStringLiteral("Cancelled: %1").arg(message) : message;
    status_->setText(text);
    // The step that was running says how it ended, not "running…" for ever.
    if (running_step_ >= 0) {
      steps_->setItem(running_step_, 1, new QTableWidgetItem(cancelled ? QStringLiteral("cancelled") : QStringLiteral("failed")));
      steps_->setItem(running_step_, 3, new QTableWidgetItem(message));
      steps_->item(running_step_, 3)->setToolTip(message);
      running_step_ = -1;
    }
    Q_EMIT finished(text);
    if (!cancelled && interactive_) QMessageBox::warning(this, QStringLiteral("Tune"), message);
  });
}

void TunePanel::setModelPath(const QString& path) { model_ = path; }
QString TunePanel::modelPath() const {
  if (!model_.isEmpty()) return model_;
  return doc_->model() ? QString::fromStdString(doc_->model()->path.string()) : QString();
}
void TunePanel::setEngineSource(const QString& dir) {
  engine_kind_->setCurrentIndex(0);
  engine_path_->setText(dir);
}
void TunePanel::setProbe(const QString& path) {
  engine_kind_->setCurrentIndex(1);
  engine_path_->setText(path);
}
void TunePanel::setArch(const QString& arch) { arch_->setText(arch); }
void TunePanel::setLlamaBench(const QString& path, const QString& stock) {
  llama_bench_->setText(path);
  stock_bench_->setText(stock);
}
void TunePanel::setTests(const QString& tests, int rounds, int repetitions) {
  tests_->setText(tests);
  rounds_->setValue(rounds);
  repetitions_->setValue(repetitions);
}
void TunePanel::setNcols(const QString& list) { ncols_->setText(list); }
void TunePanel::setOutput(const QString& profile) { output_->setText(profile); }
QString TunePanel::profilePath() const { return output_->text().isEmpty() ? output_->placeholderText() : output_->text(); }
void TunePanel::setPatch(bool on) { patch_->setChecked(on); }
QChart* TunePanel::samplesChart() const { return chart_->chart(); }
QString TunePanel::tokenTimeHead() const { return token_head_->text(); }

void TunePanel::showReplay(const QByteArray& replay_json) {
  showReplayBreakdown(token_, token_head_, QJsonDocument::fromJson(replay_json).object());
}
QString TunePanel::groupsHead() const { return groups_head_->text(); }

void TunePanel::showGroups(const QByteArray& groups_json) {
  const QJsonArray rows = QJsonDocument::fromJson(groups_json).array();
  groups_->setRowCount(int(rows.size()));
  auto pct = [](double speedup) {
    const double g = (speedup - 1) * 100;
    return QStringLiteral("%1%2 %").arg(g >= 0 ? QStringLiteral("+") : QString()).arg(g, 0, 'f', 1);
  };
  int installed = 0;
  for (int i = 0; i < int(rows.size()); ++i) {
    const QJsonObject g = rows[i].toObject();
    const bool approved = g.value(QStringLiteral("approved")).toBool();
    installed += approved;
    const QJsonValue config = g.value(QStringLiteral("config"));
    const QStringList cells = {
        QString::number(g.value(QStringLiteral("ncols")).toInt()),
        QString::number(g.value(QStringLiteral("runs_per_token")).toInt()),
        config.isNull() ? QStringLiteral("-") : config.toString(),
        QString::number(g.value(QStringLiteral("group_launches")).toInteger()),
        QString::number(g.value(QStringLiteral("off_us")).toDouble(), 'f', 1),
        config.isNull() ? QStringLiteral("-") : QString::number(g.value(QStringLiteral("group_us")).toDouble(), 'f', 1),
        config.isNull() ? QStringLiteral("-")
                        : QStringLiteral("%1 [%2, %3]")
                              .arg(pct(g.value(QStringLiteral("speedup")).toDouble()), pct(g.value(QStringLiteral("speedup_low")).toDouble()),
                                   pct(g.value(QStringLiteral("speedup_high")).toDouble())),
        approved ? QStringLiteral("yes") : QStringLiteral("no")};
    for (int c = 0; c < int(cells.size()); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (approved) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
      }
      item->setToolTip(g.value(QStringLiteral("why")).toString());
      groups_->setItem(i, c, item);
    }
  }
  groups_head_->setText(rows.isEmpty() ? QStringLiteral("Same-input groups (q, k, v as one launch): nothing measured.")
                                       : QStringLiteral("Same-input groups (q, k, v as one launch; whole-token replays, groups off vs "
                                                        "the best of 9 configs): installed at %1 of %2 batch widths.")
                                             .arg(installed)
                                             .arg(rows.size()));
}

QString TunePanel::pipelineText() const { return pipeline_->text(); }

void TunePanel::showPipeline(const QByteArray& pipeline_json) {
  const QJsonObject d = QJsonDocument::fromJson(pipeline_json).object();
  auto pct = [](double speedup) { return (speedup >= 1 ? QStringLiteral("+") : QString()) + QString::number((speedup - 1) * 100, 'f', 1) + " %"; };
  const bool approved = d.value(QStringLiteral("approved")).toBool();
  const QString test = d.value(QStringLiteral("test")).toString();
  const QString bench = test.isEmpty() ? QStringLiteral("not measured by llama-bench")
                                       : QStringLiteral("llama-bench %1 %2 [%3, %4]")
                                             .arg(test, pct(d.value(QStringLiteral("speedup")).toDouble()),
                                                  pct(d.value(QStringLiteral("speedup_low")).toDouble()),
                                                  pct(d.value(QStringLiteral("speedup_high")).toDouble()));
  pipeline_->setText(QStringLiteral("Pipelined launches (one column; the profile without vs with them): %1, %2 (the replayed GEMVs "
                                    "alone %3), %4 launches a token; %5.")
                         .arg(approved ? QStringLiteral("<b>installed</b>") : QStringLiteral("not installed"), bench,
                              pct(d.value(QStringLiteral("replay_speedup")).toDouble()),
                              QString::number(d.value(QStringLiteral("pipelined_launches")).toInteger()),
                              d.value(QStringLiteral("why")).toString().toHtmlEscaped()));
}

void TunePanel::showCrossover(const QByteArray& crossover_json) {
  const QJsonArray cells = QJsonDocument::fromJson(crossover_json).array();
  QStringList rows;
  QList<int> widths;
  for (const QJsonValue& v : cells) {
    const QJsonObject c = v.toObject();
    const QString row = c.value(QStringLiteral("type")).toString() + QLatin1Char(' ') + c.value(QStringLiteral("launch")).toString();
    if (!rows.contains(row)) rows << row;
    if (const int n = c.value(QStringLiteral("ncols")).toInt(); !widths.contains(n)) widths << n;
  }
  std::sort(widths.begin(), widths.end());
  crossover_->clear();
  crossover_->setRowCount(int(rows.size()));
  crossover_->setColumnCount(int(widths.size()));
  crossover_->setVerticalHeaderLabels(rows);
  QStringList headers;
  for (int n : widths) headers << QStringLiteral("ncols %1").arg(n);
  crossover_->setHorizontalHeaderLabels(headers);
  int changed = 0;
  for (const QJsonValue& v : cells) {
    const QJsonObject c = v.toObject();
    const int row = int(rows.indexOf(c.value(QStringLiteral("type")).toString() + QLatin1Char(' ') + c.value(QStringLiteral("launch")).toString()));
    const int column = int(widths.indexOf(c.value(QStringLiteral("ncols")).toInt()));
    const QString path = c.value(QStringLiteral("path")).toString(), tried = c.value(QStringLiteral("other_path")).toString();
    const double gain = (c.value(QStringLiteral("speedup")).toDouble() - 1) * 100;
    const bool approved = c.value(QStringLiteral("approved")).toBool();
    const QString gain_text = QStringLiteral("%1%2 %").arg(gain >= 0 ? QStringLiteral("+") : QString()).arg(gain, 0, 'f', 1);
    auto* item = new QTableWidgetItem(approved ? path + QLatin1Char(' ') + gain_text : path);
    if (approved) {  // the engine leaves ggml's pick here
      QFont f = item->font();
      f.setBold(true);
      item->setFont(f);
      ++changed;
    }
    QString tip = QStringLiteral("ggml picks %1: %2 µs per token; %3: %4 µs (speedup %5 [%6, %7])")
                      .arg(c.value(QStringLiteral("stock_path")).toString())
                      .arg(c.value(QStringLiteral("stock_us")).toDouble(), 0, 'f', 1)
                      .arg(tried)
                      .arg(c.value(QStringLiteral("path_us")).toDouble(), 0, 'f', 1)
                      .arg(c.value(QStringLiteral("speedup")).toDouble(), 0, 'f', 3)
                      .arg(c.value(QStringLiteral("speedup_low")).toDouble(), 0, 'f', 3)
                      .arg(c.value(QStringLiteral("speedup_high")).toDouble(), 0, 'f', 3);
    if (c.value(QStringLiteral("record")).toString() == QStringLiteral("pending"))
      tip += QStringLiteral("; %1 %2 is recorded pending: not significant").arg(tried, gain_text);
    item->setToolTip(tip);
    crossover_->setItem(row, column, item);
  }
  crossover_head_->setText(cells.isEmpty()
                               ? QStringLiteral("mmvq or mmq per type and batch width: nothing measured.")
                               : QStringLiteral("mmvq or mmq per type and batch width (the path the engine runs with the profile; "
                                                "in bold with its gain where it leaves ggml's own pick): %1 of %2 changed.")
                                     .arg(changed)
                                     .arg(cells.size()));
}

QString TunePanel::statusText() const { return status_->text(); }

engine::BenchOptions TunePanel::benchOptions() const {
  engine::BenchOptions b;
  b.llama_bench = fsPath(llama_bench_->text());
  b.stock_bench = fsPath(stock_bench_->text());
  b.tests = tests_->text().toStdString();
  b.rounds = rounds_->value();
  b.repetitions = repetitions_->value();
  b.model = fsPath(modelPath());
  b.profile = output_->text().isEmpty() ? engine::default_engine_profile() : fsPath(output_->text());
  return b;
}

tune::TuneOptions TunePanel::tuneOptions() const {
  tune::TuneOptions o;
  o.model = fsPath(modelPath());
  if (o.model.empty()) temper::fail(ErrorKind::BadInput, "open a GGUF model first (File → Open)");
  if (engine_path_->text().isEmpty()) temper::fail(ErrorKind::BadInput, "choose the engine: a llama.cpp / ggml folder or a ready temper-probe");
  if (engine_kind_->currentIndex() == 0) {
    o.engine_src = fsPath(engine_path_->text());
    if (arch_->text().isEmpty()) temper::fail(ErrorKind::BadInput, "give the arch to build the engine for (sm_90, gfx90a)");
    o.build = engine::build_options(arch_->text().toStdString());
    o.patch = patch_->isChecked();
  } else {
    o.probe = fsPath(engine_path_->text());
  }
  o.ncols = parse_ncols_list(ncols_->text().toStdString());
  o.output = fsPath(output_->text());
  if (!llama_bench_->text().isEmpty()) o.bench = benchOptions();
  return o;
}

bool TunePanel::startTune() {
  try {
    tune::TuneOptions o = tuneOptions();
    for (tune::Step s : tune::kSteps)
      for (int c = 1; c < 4; ++c) steps_->setItem(int(s), c, new QTableWidgetItem);
    setRunning(true);
    runner_->startTune(std::move(o));
    return true;
  } catch (const std::exception& e) {
    fail(QString::fromStdString(e.what()));
    return false;
  }
}

bool TunePanel::startBench() {
  try {
    if (llama_bench_->text().isEmpty()) temper::fail(ErrorKind::BadInput, "give the llama-bench to run (built from the patched tree)");
    if (modelPath().isEmpty()) temper::fail(ErrorKind::BadInput, "open a GGUF model first (File → Open)");
    engine::BenchOptions b = benchOptions();
    setRunning(true);
    runner_->startBench(std::move(b));
    return true;
  } catch (const std::exception& e) {
    fail(QString::fromStdString(e.what()));
    return false;
  }
}

void TunePanel::fail(const QString& text) {
  setRunning(false);
  status_->setText(text);
  if (interactive_) QMessageBox::warning(this, QStringLiteral("Tune"), text);
}

void TunePanel::setRunning(bool on) {
  tune_->setEnabled(!on);
  bench_only_->setEnabled(!on);
  cancel_->setEnabled(on);
}

// The selected test's samples, run by run in the order they were made: stock and profile apart, so
// drift across runs and the gap between the arms are both visible.
void TunePanel::showSamples(int row) {
  auto* chart = new QChart;
  chart->setBackgroundRoundness(0);
  const BenchRecord& r = bench_->record();
  if (row < 0 || size_t(row) >= r.tests.size()) {
    chart->setTitle(QStringLiteral("Samples: no bench yet"));
  } else {
    const BenchTest& t = r.tests[size_t(row)];
    chart->setTitle(QStringLiteral("%1: tokens/s per sample, run by run (speedup %2)").arg(QString::fromStdString(t.name)).arg(t.speedup, 0, 'f', 3));
    auto* ax = new QValueAxis;
    ax->setTitleText(QStringLiteral("run, in the order made (odd: stock, even: profile)"));
    ax->setTickType(QValueAxis::TicksDynamic);
    ax->setTickAnchor(1);
    ax->setTickInterval(1);
    ax->setLabelFormat(QStringLiteral("%d"));
    auto* ay = new QValueAxis;
    ay->setTitleText(QStringLiteral("tokens/s"));
    chart->addAxis(ax, Qt::AlignBottom);
    chart->addAxis(ay, Qt::AlignLeft);
    double lo = 1e300, hi = 0;
    int runs = 0;
    for (const auto& [name, profiled] : {std::pair{"stock", false}, {"profile", true}}) {
      auto* s = new QScatterSeries;
      s->setName(QString::fromLatin1(name));
      s->setMarkerSize(8);
      const auto& arm = profiled ? t.profiled_runs : t.stock_runs;
      for (size_t round = 0; round < arm.size(); ++round)
        for (size_t i = 0; i < arm[round].size(); ++i) {
          // Each round: the stock run at 2·round + 1, the profile run at 2·round + 2, samples spread across it.
          const double x = 2.0 * double(round) + (profiled ? 2 : 1) + 0.6 * (double(i) + 0.5) / double(arm[round].size()) - 0.3;
          s->append(x, arm[round][i]);
          lo = std::min(lo, arm[round][i]), hi = std::max(hi, arm[round][i]);
        }
      runs = std::max(runs, int(arm.size()));
      chart->addSeries(s);
      s->attachAxis(ax);
      s->attachAxis(ay);
    }
    ax->setRange(0.5, 2.0 * runs + 0.5);
    if (hi > 0) ay->setRange(lo * 0.99, hi * 1.01);
  }
  QChart* previous = chart_->chart();
  chart_->setChart(chart);
  delete previous;
}

}  // namespace temper::ui
