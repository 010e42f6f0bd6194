// Tune & bench in the GUI (issue 28): one action runs core's tune on the worker (the fake probe for
// the engine, the stand-in llama-bench), every step's outcome lands in the steps table, the bench
// panel shows llama-bench's numbers per test and the arms' samples run by run; "Bench only" re-runs
// llama-bench on the installed profile; Cancel stops a running bench and nothing is recorded.
#include <QChart>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

#include "fixtures/fixtures.h"
#include "main_window.h"
#include "tune_panel.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

namespace {

struct Setup {
  QTemporaryDir dir;
  QString model = dir.filePath(QStringLiteral("small-llama.gguf"));
  QString profile = dir.filePath(QStringLiteral("engine-profile.json"));
  Setup() {
    fixtures::writer(fixtures::Fixture::SmallLlama).write(model.toStdString());
    qputenv("XDG_CACHE_HOME", dir.filePath(QStringLiteral("cache")).toUtf8());
  }
  ~Setup() { qunsetenv("XDG_CACHE_HOME"); }
  std::unique_ptr<TunePanel> panel(SessionDocument& doc) const {
    auto p = std::make_unique<TunePanel>(&doc);
    p->setInteractive(false);
    p->setModelPath(model);
    p->setProbe(QStringLiteral(FAKE_PROBE));
    p->setNcols(QStringLiteral("1"));
    p->setLlamaBench(QStringLiteral(FAKE_LLAMA_BENCH));
    p->setTests(QStringLiteral("tg128,pp4"), 2, 3);
    p->setOutput(profile);
    return p;
  }
};

QString cell(const QTableWidget* t, int row, int column) {
  const QTableWidgetItem* i = t->item(row, column);
  return i ? i->text() : QString();
}
QString cell(const QTableWidget* t, tune::Step s, int column) { return cell(t, int(s), column); }

}  // namespace

class TestTune : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void tuneIsOneActionWithProgressPerStep() {
    const Setup s;
    SessionDocument doc;
    auto panel = s.panel(doc);
    QSignalSpy started(panel->runner(), &TuneRunner::stepStarted);
    QSignalSpy done(panel.get(), &TunePanel::finished);
    QSignalSpy replayed(panel->runner(), &TuneRunner::replayReady);
    QVERIFY(panel->startTune());
    QVERIFY(!panel->startTune());  // one at a time
    QVERIFY(done.wait(120000));
    QVERIFY2(done.front().front().toString().startsWith(QStringLiteral("Tuned: the profile is ")), qPrintable(done.front().front().toString()));
    QCOMPARE(started.count(), int(std::size(tune::kSteps)));
    for (tune::Step st : {tune::Step::Sweep, tune::Step::Approve, tune::Step::Install, tune::Step::Replay, tune::Step::Bench})
      QCOMPARE(cell(panel->steps(), st, 1), QStringLiteral("done"));
    QCOMPARE(cell(panel->steps(), tune::Step::Build, 1), QStringLiteral("not asked"));
    QVERIFY2(cell(panel->steps(), tune::Step::Replay, 3).startsWith(QStringLiteral("GEMV time per token")),
             qPrintable(cell(panel->steps(), tune::Step::Replay, 3)));
    QVERIFY(cell(panel->steps(), tune::Step::Sweep, 2).endsWith(QStringLiteral(" s")));
    // Where a token's time goes: a row per launch shape of the replay's breakdown, as it gave them.
    QCOMPARE(replayed.count(), 1);
    const QJsonArray shares = QJsonDocument::fromJson(replayed.front().front().toByteArray()).object().value(QStringLiteral("breakdown")).toArray();
    QVERIFY(!shares.isEmpty());
    QCOMPARE(panel->tokenTime()->rowCount(), int(shares.size()));
    double stock = 0;
    for (int row = 0; row < int(shares.size()); ++row) {
      const QJsonObject share = shares[row].toObject();
      QVERIFY(cell(panel->tokenTime(), row, 0).startsWith(share.value(QStringLiteral("kind")).toString() + QLatin1Char(' ') +
                                                          share.value(QStringLiteral("type")).toString()));
      QCOMPARE(cell(panel->tokenTime(), row, 2), QString::number(share.value(QStringLiteral("stock_us")).toDouble(), 'f', 1));
      stock += share.value(QStringLiteral("stock_us")).toDouble();
    }
    QVERIFY2(panel->tokenTimeHead().contains(QStringLiteral("%1 µs stock").arg(stock, 0, 'f', 1)), qPrintable(panel->tokenTimeHead()));
    // The bench panel: a row per test, the stand-in's 10 % (× 1.08 at tg128: the pipeline step's entries,
    // which the stand-in runs faster), and every sample of both arms in the chart.
    BenchModel* m = panel->benchModel();
    QCOMPARE(m->rowCount(), 2);
    QCOMPARE(m->data(m->index(0, BenchModel::Test)).toString(), QStringLiteral("tg128"));
    QCOMPARE(m->data(m->index(1, BenchModel::LlamaTest)).toString(), QStringLiteral("pp128, micro-batch 4"));
    QCOMPARE(m->data(m->index(0, BenchModel::Speedup)).toString(), QStringLiteral("1.188"));
    QVERIFY2(panel->pipelineText().contains(QStringLiteral("<b>installed</b>, llama-bench tg128 +8.0 %")), qPrintable(panel->pipelineText()));
    QCOMPARE(m->data(m->index(0, BenchModel::Samples)).toString(), QStringLiteral("6 / 6"));
    const auto series = panel->samplesChart()->series();
    QCOMPARE(series.size(), 2);
    QCOMPARE(static_cast<QScatterSeries*>(series[0])->count(), 6);
    QCOMPARE(series[1]->name(), QStringLiteral("profile"));
    QCOMPARE(load_profile(s.profile.toStdString()).benches.size(), size_t(1));

    // Bench only: llama-bench again on the profile as it is.
    done.clear();
    QVERIFY(panel->startBench());
    QVERIFY(done.wait(60000));
    QVERIFY2(done.front().front().toString().startsWith(QStringLiteral("Bench recorded in ")), qPrintable(done.front().front().toString()));
    QCOMPARE(m->rowCount(), 2);
  }

  void cancelStopsTheBenchAndRecordsNothing() {
    const Setup s;
    SessionDocument doc;
    auto panel = s.panel(doc);
    // A profile to bench: the fixture's (it has an approved sm_90 entry).
    std::filesystem::copy_file(TEMPER_SOURCE_DIR "/tests/profile/fixtures/profile.json", s.profile.toStdString());
    qputenv("FAKE_LLAMA_BENCH_SLEEP_MS", "300");
    QSignalSpy progress(panel->runner(), &TuneRunner::progress);
    QSignalSpy done(panel.get(), &TunePanel::finished);
    QVERIFY(panel->startBench());
    QVERIFY(progress.wait(30000));
    panel->cancelButton()->click();
    QVERIFY(done.wait(30000));
    qunsetenv("FAKE_LLAMA_BENCH_SLEEP_MS");
    QVERIFY2(panel->statusText().startsWith(QStringLiteral("Cancelled: ")), qPrintable(panel->statusText()));
    QCOMPARE(load_profile(s.profile.toStdString()).benches.size(), size_t(0));
    QCOMPARE(panel->benchModel()->rowCount(), 0);
  }

  void missingInputsAreSaidNotRun() {
    SessionDocument doc;
    TunePanel panel(&doc);
    panel.setInteractive(false);
    QVERIFY(!panel.startTune());
    QCOMPARE(panel.statusText(), QStringLiteral("open a GGUF model first (File → Open)"));
    panel.setModelPath(QStringLiteral("/models/m.gguf"));
    QVERIFY(!panel.startBench());
    QCOMPARE(panel.statusText(), QStringLiteral("give the llama-bench to run (built from the patched tree)"));
  }

  // The same-input groups table from tune's group step: a row per width, the installed one in bold.
  void groupsTableShowsTheDecisionPerWidth() {
    auto samples = [](double center) {
      std::vector<double> v;
      for (int i = 0; i < 45; ++i) v.push_back(center + 0.5 * (double(i % 9) - 4) / 4);
      return v;
    };
    std::vector<tune::GroupDecision> decisions;
    for (int n : {1, 2}) {
      tune::GroupWidthSamples w;
      w.ncols = n;
      w.expected_runs = 32;
      w.off = samples(1000);
      for (const auto& g : tune::group_grid()) {
        w.tried.push_back(samples(n == 1 && g == engine::GroupSetting{4, 2} ? 950 : 1001));
        w.group_launches.push_back(32);
        w.agrees.push_back(true);
      }
      decisions.push_back(tune::decide_groups(w));
    }
    SessionDocument doc;
    TunePanel panel(&doc);
    panel.showGroups(QByteArray::fromStdString(tune::groups_json(decisions).dump()));
    QTableWidget* t = panel.groups();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(cell(t, 0, 0), QStringLiteral("1"));
    QCOMPARE(cell(t, 0, 1), QStringLiteral("32"));
    QCOMPARE(cell(t, 0, 2), QStringLiteral("4:2"));
    QCOMPARE(cell(t, 0, 3), QStringLiteral("32"));
    QCOMPARE(cell(t, 0, 7), QStringLiteral("yes"));
    QVERIFY(t->item(0, 2)->font().bold());
    QVERIFY2(cell(t, 0, 6).startsWith(QStringLiteral("+5.3 %")), qPrintable(cell(t, 0, 6)));
    QCOMPARE(cell(t, 1, 7), QStringLiteral("no"));
    QVERIFY(!t->item(1, 2)->font().bold());
    QVERIFY2(t->item(1, 2)->toolTip().contains(QStringLiteral("does not beat groups off")), qPrintable(t->item(1, 2)->toolTip()));
    QVERIFY2(panel.groupsHead().contains(QStringLiteral("installed at 1 of 2 batch widths")), qPrintable(panel.groupsHead()));
  }

  // The pipeline step's line from tune's report: installed or not, the gain with its CI, the
  // launches a token, why; and that the replay sees the GEMVs only.
  void pipelineLineSaysWhetherItWasInstalledAndWhy() {
    auto samples = [](double center) {
      std::vector<double> v;
      for (int i = 0; i < 20; ++i) v.push_back(center + 0.1 * (i % 5));
      return v;
    };
    SessionDocument doc;
    TunePanel panel(&doc);
    tune::PipelineSamples s;
    s.replay_off = samples(1000);
    s.replay_on = samples(1010);  // the GEMVs alone a little slower, the whole token faster
    s.pipelined_launches = 225;
    s.identical = true;
    s.test = "tg128";
    s.bench_off = {samples(260), samples(260), samples(260)};
    s.bench_on = {samples(286), samples(286), samples(286)};
    panel.showPipeline(QByteArray::fromStdString(tune::pipeline_json(tune::decide_pipeline(s)).dump()));
    QVERIFY2(panel.pipelineText().contains(QStringLiteral("<b>installed</b>, llama-bench tg128 +10.0 %")), qPrintable(panel.pipelineText()));
    QVERIFY2(panel.pipelineText().contains(QStringLiteral("the replayed GEMVs alone -1.0 %")), qPrintable(panel.pipelineText()));
    QVERIFY2(panel.pipelineText().contains(QStringLiteral("225 launches a token")), qPrintable(panel.pipelineText()));
    s.identical = false;
    s.test.clear();
    s.bench_off.clear();
    s.bench_on.clear();
    panel.showPipeline(QByteArray::fromStdString(tune::pipeline_json(tune::decide_pipeline(s)).dump()));
    QVERIFY2(panel.pipelineText().contains(QStringLiteral("not installed, not measured by llama-bench")), qPrintable(panel.pipelineText()));
    QVERIFY2(panel.pipelineText().contains(QStringLiteral("an output differs")), qPrintable(panel.pipelineText()));
  }

  // The crossover table from tune's report: a row per (type, launch), a column per measured width;
  // the path the engine runs, its gain in bold where it leaves ggml's pick, stock cells plain.
  void crossoverTableShowsThePathPerWidth() {
    auto samples = [](double center, double spread) {
      std::vector<double> v;
      for (int i = 0; i < 45; ++i) v.push_back(center + spread * (double(i % 9) - 4) / 4);
      return v;
    };
    const tune::PathTarget q4k{GgmlType::Q4_K, Launch::MulMat}, q6k{GgmlType::Q6_K, Launch::MulMatId};
    std::vector<tune::CrossoverCell> cells;
    for (int n : {2, 4, 8})
      cells.push_back(tune::decide_path(q4k, n, MatPath::Mmvq, samples(1000, 0.5), samples(n == 8 ? 1000 / 1.031 : 1010, 0.5)));
    cells.push_back(tune::decide_path(q6k, 4, MatPath::Mmvq, samples(1000, 0.2), samples(1000 / 1.006, 0.2)));
    SessionDocument doc;
    TunePanel panel(&doc);
    panel.showCrossover(QByteArray::fromStdString(tune::crossover_json(cells).dump()));
    QTableWidget* t = panel.crossover();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(t->columnCount(), 3);
    QCOMPARE(t->verticalHeaderItem(0)->text(), QStringLiteral("q4_K mul_mat"));
    QCOMPARE(t->verticalHeaderItem(1)->text(), QStringLiteral("q6_K mul_mat_id"));
    QCOMPARE(t->horizontalHeaderItem(2)->text(), QStringLiteral("ncols 8"));
    QCOMPARE(cell(t, 0, 0), QStringLiteral("mmvq"));
    QCOMPARE(cell(t, 0, 1), QStringLiteral("mmvq"));
    QCOMPARE(cell(t, 0, 2), QStringLiteral("mmq +3.1 %"));
    QVERIFY(t->item(0, 2)->font().bold());
    QVERIFY(!t->item(0, 0)->font().bold());
    QCOMPARE(cell(t, 1, 1), QStringLiteral("mmvq"));  // a pending winner: the engine stays on ggml's pick
    QVERIFY2(t->item(1, 1)->toolTip().contains(QStringLiteral("mmq +0.6 % is recorded pending")), qPrintable(t->item(1, 1)->toolTip()));
    QCOMPARE(cell(t, 1, 0), QString());  // not measured at that width
    QVERIFY2(t->item(0, 2)->toolTip().startsWith(QStringLiteral("ggml picks mmvq: 1000.0 µs per token; mmq: 969.9 µs")),
             qPrintable(t->item(0, 2)->toolTip()));
  }

  void mainWindowHasTheTab() {
    MainWindow w({});
    w.setInteractive(false);
    QStringList tabs;
    for (int i = 0; i < w.tabs()->count(); ++i) tabs << w.tabs()->tabText(i);
    QCOMPARE(tabs.mid(tabs.size() - 3), (QStringList{QStringLiteral("Tune && bench"), QStringLiteral("Tune result"), QStringLiteral("Compare tunes")}));
    QVERIFY(w.tunePanel() != nullptr);
  }
};

TEMPER_UI_TEST(TestTune);
#include "tune_test.moc"
