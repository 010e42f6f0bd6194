// The engine in the GUI (issue 15): the sweep panel remembers the engine source folder and says
// what core's check found there; an engine sweep through the fake temper-probe lands an engine
// session in the document; a failed engine build is shown (core's message, the log's path) and
// nothing lands; the comparison view lays out core's comparison of the demo session and an
// engine session derived from it, and refuses two different models.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

#include "comparison_view.h"
#include "main_window.h"
#include "sweep_panel.h"
#include "temper/engine.h"
#include "temper/engine_build.h"
#include "temper/engine_device.h"
#include "temper/error.h"
#include "temper/fake_backend.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;
using temper::ui::uitest::smallShape;

namespace {

Model smallModel() {
  Model m;
  m.path = "synthetic.gguf";
  m.architecture = "llama";
  m.shapes = {smallShape(GgmlType::Q4_0, 512, 1024), smallShape(GgmlType::Q4_K, 256, 2048)};
  return m;
}

PlanGrid smallGrid() {
  PlanGrid g = quick_grid(std::string(known_engines().front()));
  g.nwarps = {1, 2, 4};
  g.rows_per_block = {1, 2};
  return g;
}

std::unique_ptr<SweepPanel> panelOn(SessionDocument& doc) {
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::make_unique<FakeBackend>());  // sm_90: an engine build targets CUDA
  auto p = std::make_unique<SweepPanel>(&doc, std::move(backends));
  p->setInteractive(false);
  return p;
}

// The small model and grid, and the engine built from `tree` as the kernel to time.
std::unique_ptr<SweepPanel> enginePanelOn(SessionDocument& doc, const QString& tree) {
  doc.setModel(smallModel());
  auto p = panelOn(doc);
  p->setGrid(smallGrid());
  p->setKernelChoice(KernelChoice::EngineSource);
  p->setEngineSource(tree);
  return p;
}

// The first line of an mmvq.cu this Temper's hook patched: a build copies such a tree as it is (an
// older hook's tree is rebuilt from the original it kept).
QByteArray currentHookMarker() { return "// temper-hook v" + QByteArray::number(engine::kHookVersion) + "\n"; }

// A ggml tree as find_tree sees it: src/ggml-cuda/mmvq.cu with `mmvq` as its text.
QString makeTree(const QTemporaryDir& dir, const QString& name, const QByteArray& mmvq, const QByteArray& cmake = {}) {
  const QString root = dir.filePath(name);
  QDir().mkpath(root + QStringLiteral("/src/ggml-cuda"));
  QFile f(root + QStringLiteral("/src/ggml-cuda/mmvq.cu"));
  f.open(QIODevice::WriteOnly);
  f.write(mmvq);
  f.close();
  if (!cmake.isEmpty()) {
    QFile c(root + QStringLiteral("/CMakeLists.txt"));
    c.open(QIODevice::WriteOnly);
    c.write(cmake);
  }
  return root;
}

// Every time of a session scaled by `f` (results and interleaved re-measures), verdicts and
// estimates derived again, as a session from a kernel uniformly `f` times slower would read.
void scale(SampleStats& t, double f) {
  for (double* v : {&t.median, &t.ci_low, &t.ci_high, &t.min, &t.max, &t.p10, &t.p90}) *v *= f;
}
void scaleTimes(Session& s, double f) {
  for (auto& r : s.results) scale(r.time_us, f);
  for (auto& c : s.confirmations) scale(c.default_us, f), scale(c.candidate_us, f);
}
}  // namespace

class TestEngine : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void panelRemembersTheEngineFolder() {
    QTemporaryDir dir;
    const QString hooked = makeTree(dir, QStringLiteral("hooked"), "// temper-hook v1\n");
    const QString other = makeTree(dir, QStringLiteral("other"), "// not upstream's mmvq.cu\n");
    SessionDocument doc;
    {
      auto panel = panelOn(doc);
      panel->setKernelChoice(KernelChoice::EngineSource);
      panel->setEngineSource(other);
      QVERIFY2(panel->engineCheckText().startsWith(QStringLiteral("ggml tree, ggml commit unknown (no .git): the hook does not apply:")),
               qPrintable(panel->engineCheckText()));
      panel->setEngineSource(dir.filePath(QStringLiteral("missing")));
      QVERIFY2(panel->engineCheckText().contains(QStringLiteral("not a folder")), qPrintable(panel->engineCheckText()));
      panel->setEngineSource(hooked);
      QCOMPARE(panel->engineCheckText(), QStringLiteral("ggml tree, ggml commit unknown (no .git): mmvq.cu carries Temper's hook v1 already"));
      panel->setProbePath(QStringLiteral("/opt/probe"));
      panel->saveSettings();
    }
    auto again = panelOn(doc);
    QCOMPARE(again->kernelChoice(), KernelChoice::EngineSource);
    QCOMPARE(again->engineSource(), hooked);
    QCOMPARE(again->probePath(), QStringLiteral("/opt/probe"));
    QVERIFY(again->engineCheckText().contains(QStringLiteral("hook v1 already")));  // checked again on start-up
    again->setKernelChoice(KernelChoice::Temper);
    again->saveSettings();
  }

  void engineSweepLandsAnEngineSession() {
    SessionDocument doc;
    doc.setModel(smallModel());
    auto panel = panelOn(doc);
    panel->setGrid(smallGrid());
    panel->setKernelChoice(KernelChoice::EngineProbe);
    panel->setProbePath(QStringLiteral(FAKE_PROBE));
    QSignalSpy done(panel.get(), &SweepPanel::sweepFinished);
    QVERIFY(panel->startSweep());
    QVERIFY(done.wait(90000));
    QVERIFY2(done.front().front().toString().contains(QStringLiteral("complete")), qPrintable(done.front().front().toString()));
    const Session& s = doc.session();
    QCOMPARE(s.status, std::string("complete"));
    QCOMPARE(s.kernel_source.kind, std::string(kKernelEngine));
    QVERIFY2(s.kernel_source.probe_path.find("temper_fake_probe") != std::string::npos, s.kernel_source.probe_path.c_str());
    QVERIFY(engine::is_engine_api(s.devices.front().info.api));
    QCOMPARE(s.results.size(), s.devices.front().plan.items.size());
    QVERIFY(!s.verdicts.empty());
    QVERIFY(panel->startButton()->isEnabled());
    panel->setKernelChoice(KernelChoice::Temper);
    panel->saveSettings();
  }

  // From a source folder whose engine build is in the cache: instant, says so, and the session
  // records where the engine came from.
  void cachedEngineBuildSweepsAtOnce() {
    QTemporaryDir dir;
    const QString cache = dir.filePath(QStringLiteral("cache"));
    qputenv("XDG_CACHE_HOME", cache.toUtf8());
    const QString tree = makeTree(dir, QStringLiteral("ggml"), "// temper-hook v1\n");
    // The cache entry a finished build leaves (docs/engine.md), with the fake probe as its probe.
    const auto entry = std::filesystem::path(cache.toStdString()) / "temper" / "engine" /
                       engine::source_hash(engine::find_tree(tree.toStdString()), engine::build_options("sm_90"));
    std::filesystem::create_directories(entry / "build");
    std::filesystem::copy_file(FAKE_PROBE, entry / "build" / "temper-probe");
    QFile((QString::fromStdString((entry / "built").string()))).open(QIODevice::WriteOnly);
    QFile stamp(QString::fromStdString((entry / "probe.hash").string()));
    QVERIFY(stamp.open(QIODevice::WriteOnly));
    stamp.write(QByteArray::fromStdString(engine::probe_hash() + "\n"));
    stamp.close();

    SessionDocument doc;
    auto panel = enginePanelOn(doc, tree);
    QSignalSpy ready(panel->runner(), &SweepRunner::engineReady);
    QSignalSpy building(panel->runner(), &SweepRunner::buildProgress);
    QSignalSpy done(panel.get(), &SweepPanel::sweepFinished);
    QVERIFY(panel->startSweep());
    QVERIFY(done.wait(90000));
    qunsetenv("XDG_CACHE_HOME");
    QVERIFY2(done.front().front().toString().contains(QStringLiteral("complete")), qPrintable(done.front().front().toString()));
    QCOMPARE(ready.count(), 1);
    QCOMPARE(building.count(), 0);  // nothing was built
    QVERIFY2(ready.front().front().toString().startsWith(QStringLiteral("Engine build cached (")), qPrintable(ready.front().front().toString()));
    const Session& s = doc.session();
    QCOMPARE(s.kernel_source.kind, std::string(kKernelEngine));
    QCOMPARE(s.kernel_source.source_path, std::filesystem::absolute(tree.toStdString()).string());
    QCOMPARE(s.kernel_source.hook_version, std::to_string(engine::kHookVersion));
    QCOMPARE(s.kernel_source.probe_path, (entry / "build" / "temper-probe").string());
    panel->setKernelChoice(KernelChoice::Temper);
    panel->saveSettings();
  }

  void engineBuildErrorIsShown() {
    QTemporaryDir dir;
    qputenv("XDG_CACHE_HOME", dir.filePath(QStringLiteral("cache")).toUtf8());
    // A tree carrying this hook already (so the build skips patching) whose CMake stops with an error.
    const QString tree = makeTree(dir, QStringLiteral("broken"), currentHookMarker(),
                                  "message(FATAL_ERROR \"this ggml tree does not build\")\n");
    SessionDocument doc;
    auto panel = enginePanelOn(doc, tree);
    QSignalSpy done(panel.get(), &SweepPanel::sweepFinished);
    QVERIFY(panel->startSweep());
    QVERIFY(done.wait(90000));
    qunsetenv("XDG_CACHE_HOME");
    const QString status = panel->engineStatusText();
    QVERIFY2(done.front().front().toString().startsWith(QStringLiteral("Sweep failed: engine configure failed: CMake Error")),
             qPrintable(done.front().front().toString()));
    QVERIFY2(status.contains(QStringLiteral("(message): this ggml tree does not build (log: ")) &&
                 status.endsWith(QStringLiteral("/build.log)")),
             qPrintable(status));
    QVERIFY(!doc.hasSession());
    QVERIFY(panel->startButton()->isEnabled());
    QVERIFY(!panel->cancelButton()->isEnabled());
    panel->setKernelChoice(KernelChoice::Temper);
    panel->saveSettings();
  }

  // Cancel during the engine build: it stops at the build's next output line, nothing lands.
  void engineBuildCancels() {
    QTemporaryDir dir;
    qputenv("XDG_CACHE_HOME", dir.filePath(QStringLiteral("cache")).toUtf8());
    const QString tree = makeTree(dir, QStringLiteral("slow"), currentHookMarker(),
                                  "foreach(i RANGE 300)\n  message(STATUS \"step ${i}\")\n"
                                  "  execute_process(COMMAND sleep 0.1)\nendforeach()\n");
    SessionDocument doc;
    auto panel = enginePanelOn(doc, tree);
    QSignalSpy building(panel->runner(), &SweepRunner::buildProgress);
    QSignalSpy done(panel.get(), &SweepPanel::sweepFinished);
    QVERIFY(panel->startSweep());
    QVERIFY(building.wait(30000));
    QVERIFY2(panel->engineStatusText().startsWith(QStringLiteral("Engine build: configuring · log ")), qPrintable(panel->engineStatusText()));
    QTest::qWait(1500);  // inside the configure step's loop (30 s in all)
    QElapsedTimer t;
    t.start();
    panel->cancelButton()->click();
    QVERIFY(done.wait(10000));
    QVERIFY2(t.elapsed() < 5000, qPrintable(QStringLiteral("cancel took %1 ms").arg(t.elapsed())));
    qunsetenv("XDG_CACHE_HOME");
    QVERIFY2(panel->engineStatusText().startsWith(QStringLiteral("engine build cancelled")), qPrintable(panel->engineStatusText()));
    QVERIFY(!doc.hasSession());
    panel->setKernelChoice(KernelChoice::Temper);
    panel->saveSettings();
  }

  void comparisonRowsHoldBothSessionsNumbers() {
    if (!QFile::exists(QStringLiteral(TEMPER_DEMO_SESSION))) QSKIP("resources/demo-session.json is absent");
    const Session demo = read_session(std::string(TEMPER_DEMO_SESSION));
    // The engine's kernel, twice as slow everywhere, except that the demo's q4_K 14336x4096 ncols 1
    // winner (4x2) is three times slower again there: that winner cannot carry over.
    Session engine = demo;
    engine.kernel_source.kind = std::string(kKernelEngine);
    engine.kernel_source.ggml_commit = "d99724f";
    engine.kernel_source.hook_version = "1";
    engine.kernel_source.probe_path = "/cache/temper-probe";
    scaleTimes(engine, 2);
    for (auto& r : engine.results)
      if (r.type == GgmlType::Q4_K && r.n == 14336 && r.k == 4096 && r.ncols == 1 && r.config == Config{4, 2})
        scale(r.time_us, 3);
    finish_session(engine);

    ComparisonView view;
    view.setSessions(demo, QStringLiteral("demo"), engine, QStringLiteral("engine"));
    const SessionComparison& c = view.comparison();
    QCOMPARE(int(c.rows.size()), 28);
    QCOMPARE(view.table()->rowCount(), 28);
    QCOMPARE(c.winners_compared, 28);
    QCOMPARE(c.winners_agree, 27);
    auto cell = [&](int row, int col) { return view.table()->item(row, col)->text(); };
    // Row 0: q4_K 14336x4096 ncols 1 — the demo's winner 4x2, 18.57 -> 17.31 µs; the engine's default twice that.
    QCOMPARE(cell(0, ComparisonView::Shape), QStringLiteral("q4_K 14336×4096"));
    QCOMPARE(cell(0, ComparisonView::Ncols), QStringLiteral("1"));
    QCOMPARE(cell(0, ComparisonView::DefaultA), QStringLiteral("18.57 (4×1)"));
    QCOMPARE(cell(0, ComparisonView::BestA), QStringLiteral("17.31 (4×2)"));
    QCOMPARE(cell(0, ComparisonView::DefaultB), QStringLiteral("37.14 (4×1)"));
    QVERIFY(cell(0, ComparisonView::BestB) != QStringLiteral("34.62 (4×2)"));
    QCOMPARE(cell(0, ComparisonView::Agree), QStringLiteral("no"));
    // Row 4: q6_K 4096x14336 ncols 1 — default stays in both.
    QCOMPARE(cell(4, ComparisonView::Shape), QStringLiteral("q6_K 4096×14336"));
    QCOMPARE(cell(4, ComparisonView::DefaultA), QStringLiteral("26.98 (4×1)"));
    QCOMPARE(cell(4, ComparisonView::BestA), QStringLiteral("26.98 (4×1)"));
    QCOMPARE(cell(4, ComparisonView::DefaultB), QStringLiteral("53.96 (4×1)"));
    QCOMPARE(cell(4, ComparisonView::VerdictB), QStringLiteral("default stays"));
    QCOMPARE(cell(4, ComparisonView::Agree), QStringLiteral("yes"));
    for (const auto& r : c.rows) {
      QCOMPARE(r.b.default_us, 2 * r.a.default_us);
      if (r.agree) QCOMPARE(r.b.best_us, 2 * r.a.best_us);
    }
    // The estimate both ways: the demo's own (2953.8 -> 2817.3 µs per token), the engine's default twice it.
    QVERIFY2(view.estimateText().contains(QStringLiteral("2953.8 µs → 2817.3 µs per token, 338.6 → 354.9 tokens/s (+4.8 %)")),
             qPrintable(view.estimateText()));
    QVERIFY2(view.estimateText().contains(QStringLiteral("5907.5 µs →")), qPrintable(view.estimateText()));
    QVERIFY(view.summaryText().contains(QStringLiteral("winners agree in 27 of 28")));
    QVERIFY(view.summaryText().contains(QStringLiteral("The kernels differ")));
    // The CLI prints the same rows (core's format_comparison).
    const std::string text = format_comparison(c);
    QVERIFY2(text.find("18.57 (4x1)") != std::string::npos && text.find("37.14 (4x1)") != std::string::npos, text.c_str());

    // Another model: refused, and the view keeps what it showed.
    Session other = engine;
    other.model.file_name = "mistral-7b.gguf";
    other.model.header_hash = "fnv1a64:0000000000000001";
    try {
      view.setSessions(demo, QStringLiteral("demo"), other, QStringLiteral("other"));
      QFAIL("two models compared");
    } catch (const Error& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("not sweeps of one model (different models: llama3-8b-q4_k_m.gguf")),
               e.what());
    }
    QCOMPARE(view.table()->rowCount(), 28);

    // The window's File > Compare with session...: the engine session beside the open demo.
    QTemporaryDir dir;
    const QString engine_path = dir.filePath(QStringLiteral("engine.session.json"));
    const QString other_path = dir.filePath(QStringLiteral("other.session.json"));
    save_session(engine, engine_path.toStdString());
    save_session(other, other_path.toStdString());
    MainWindow w({});
    w.setInteractive(false);
    QString error;
    QVERIFY(!w.compareWith(engine_path, &error));  // nothing open yet
    QVERIFY2(error.contains(QStringLiteral("open a session first")), qPrintable(error));
    w.document()->openSession(QStringLiteral(TEMPER_DEMO_SESSION), true);
    QVERIFY2(w.compareWith(engine_path, &error), qPrintable(error));
    QCOMPARE(w.comparison()->table()->rowCount(), 28);
    QCOMPARE(w.comparison()->comparison().winners_agree, 27);
    QVERIFY(!w.compareWith(other_path, &error));
    QVERIFY2(error.contains(QStringLiteral("different models")), qPrintable(error));
  }
};

TEMPER_UI_TEST(TestEngine);
#include "engine_test.moc"
