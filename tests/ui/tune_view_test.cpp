// The tune view (issue 49): a profile `temper tune` wrote on an H200 opens from the command line's
// path, File > Open, drag and drop, recent files and the Tune & bench tab's Profile field, and a new user
// reads from it alone how much faster llama-bench ran, how sure that is, which launches gained most
// and what was left out and why; a tune journal adds each step's outcome and the replay's breakdown;
// two tunes line up side by side with their differences highlighted; the demo carries the H200 tune.
// Also: the mouse wheel over an unfocused spin box or combo box scrolls the form and changes nothing,
// and a failed tune marks the step that failed, its status text clear of the steps.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDropEvent>
#include <QFile>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMimeData>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <QWheelEvent>
#include <functional>

#include "fixtures/fixtures.h"
#include "main_window.h"
#include "models/bench_model.h"
#include "tune_panel.h"
#include "tune_view.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

namespace {
const QString kH200 = QStringLiteral(TEMPER_SOURCE_DIR "/bench/profiles/h200-llama3-qwen3-pipelined.json");
const QString kH100 = QStringLiteral(TEMPER_SOURCE_DIR "/bench/profiles/h100-llama3-qwen3-groups.json");

QStringList column(const QTableWidget* t, int c) {
  QStringList out;
  for (int r = 0; r < t->rowCount(); ++r) out << (t->item(r, c) ? t->item(r, c)->text() : QString());
  return out;
}
bool anyContains(const QStringList& cells, const QString& text) {
  return std::any_of(cells.begin(), cells.end(), [&](const QString& c) { return c.contains(text); });
}
}  // namespace

class TestTuneView : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aProfileOpensTheTuneViewAndAnswersAtAGlance() {
    MainWindow w({});
    w.setInteractive(false);
    QString error;
    QVERIFY2(w.openPath(kH200, &error), qPrintable(error));  // was refused: "a tuning profile, not a sweep session"
    const TuneView* v = w.tuneView();
    QVERIFY(v->hasTune());
    QCOMPARE(w.tabs()->currentWidget()->findChild<TuneView*>(), v);
    // How much faster, how sure: llama-bench's tg128 per model with its CI, in words.
    const QString head = v->headline();
    QVERIFY2(head.contains(QStringLiteral("llama3-8b-q4_k_m.gguf tg128: 1.173× as fast with the profile</b> (95 % CI 1.161 – 1.182")),
             qPrintable(head));
    QVERIFY(head.contains(QStringLiteral("qwen3-30b-a3b-q4_k_m.gguf tg128: 1.158×")));
    QVERIFY(head.contains(QStringLiteral("267.7 → 314.1 tokens/s, 3 runs × 5 repetitions per arm")));
    // Which launches gained most; what was left out.
    QVERIFY2(head.contains(QStringLiteral("Gained most")), qPrintable(head));
    QVERIFY2(head.contains(QStringLiteral("Left out: nothing")), qPrintable(head));
    // The bench table with its CI column, one record at a time; the engine's own line.
    QCOMPARE(v->benchModel()->rowCount(), 1);
    QCOMPARE(v->benchModel()->index(0, BenchModel::Ci).data().toString(), QStringLiteral("1.161 – 1.182"));
    QCOMPARE(v->benchPicker()->count(), 2);
    QVERIFY(v->engineLine().contains(QStringLiteral("temper: profile")));
    // The steps' decisions: groups and pipelining on their whole-token evidence, never as one shape's.
    const QStringList steps = column(v->decisions(), 0), evidence = column(v->decisions(), 2);
    QVERIFY(steps.contains(QStringLiteral("groups")) && steps.contains(QStringLiteral("pipeline")));
    QVERIFY2(anyContains(evidence, QStringLiteral("llama-bench tg128, the profile without vs with them: ×1.0")), qPrintable(evidence.join('\n')));
    QVERIFY(anyContains(evidence, QStringLiteral("whole-token replay, groups off vs on")));
    // Where a token's GEMV time goes, per launch kind; the sweep's gains per launch kind.
    const QStringList kinds = column(v->tokenTime(), 0);
    QVERIFY2(kinds.contains(QStringLiteral("mul_mat (plain)")) && kinds.contains(QStringLiteral("mul_mat_id")) &&
                 kinds.contains(QStringLiteral("mul_mat_id_glu")),
             qPrintable(kinds.join(", ")));
    QVERIFY(!kinds.contains(QStringLiteral("mul_mat_pipelined")));  // a whole-token gain, not a launch's
    QVERIFY(anyContains(column(v->heatmap(), 1), QStringLiteral("q4_K 768x2048 experts 8/128")));
    // NVIDIA's words.
    QVERIFY2(v->title().contains(QStringLiteral("NVIDIA H200 (132 SMs)")), qPrintable(v->title()));
  }

  // Drag and drop and File > Open recent open a profile as the command line does.
  void aProfileOpensByDropAndFromRecentFiles() {
    {
      MainWindow w({});
      w.setInteractive(false);
      QMimeData mime;
      mime.setUrls({QUrl::fromLocalFile(kH200)});
      QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
      static_cast<QObject&>(w).event(&drop);  // as the window gets it (sendEvent wants a drag under way)
      QVERIFY2(w.tuneView()->hasTune(), qPrintable(w.statusText()));
    }
    MainWindow w({});
    w.setInteractive(false);
    QMenu* recent = nullptr;
    for (QMenu* m : w.findChildren<QMenu*>())
      if (m->title() == QStringLiteral("Open &recent")) recent = m;
    QVERIFY(recent && !recent->actions().isEmpty());
    QCOMPARE(recent->actions().front()->toolTip(), kH200);
    recent->actions().front()->trigger();
    QVERIFY2(w.tuneView()->hasTune(), qPrintable(w.statusText()));
  }

  void leftOutEntriesSayWhy() {
    MainWindow w({});
    w.setInteractive(false);
    QVERIFY(w.openPath(kH100));
    const QString head = w.tuneView()->headline();
    QVERIFY2(head.contains(QStringLiteral("Left out: 2 entries and 1 path choices")), qPrintable(head));
    const QStringList evidence = column(w.tuneView()->decisions(), 2);
    QVERIFY2(anyContains(evidence, QStringLiteral("reaches 1.000")) || anyContains(evidence, QStringLiteral("below the 3 %")),
             qPrintable(evidence.join('\n')));
  }

  void aJournalAddsItsStepsAndTheReplay() {
    QTemporaryDir dir;
    const QString profile = dir.filePath(QStringLiteral("engine-profile.json"));
    QVERIFY(QFile::copy(kH200, profile));
    const QString journal = dir.filePath(QStringLiteral("tune.journal"));
    QFile f(journal);
    QVERIFY(f.open(QIODevice::WriteOnly));
    auto line = [&](const QJsonObject& o) { f.write(QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n"); };
    const QJsonObject share{{"kind", "mul_mat"}, {"type", "q4_K"}, {"n", 14336}, {"k", 4096}, {"launches_per_token", 64},
                            {"stock_us", 900.5}, {"profiled_us", 800.25}, {"ideal_us", 700}, {"percent_of_copy_bandwidth", 78},
                            {"overhead_us_per_launch", 3.1}};
    const QJsonObject replay{{"copy_bandwidth_gbs", 4000}, {"breakdown", QJsonArray{share}}};
    line({{"engine", "/llama.cpp"}, {"journal", "temper-tune-journal"}, {"journal_version", 1}, {"model", "/m.gguf"}});
    line({{"step", "sweep"}, {"outcome", "done"}, {"summary", "7 shapes, 300 configs verified and timed"}, {"seconds", 612.5},
          {"session", "/gone.json"}});
    line({{"step", "install"}, {"outcome", "done"}, {"summary", "installed"}, {"seconds", 0.1}, {"profile", profile}});
    line({{"step", "replay"}, {"outcome", "done"}, {"summary", "GEMV time per token"}, {"seconds", 30}, {"result", replay}});
    const QJsonArray stock{QJsonArray{6000.0}, QJsonArray{6006.0}, QJsonArray{5994.0}}, tuned{QJsonArray{5000.0}, QJsonArray{5005.0}, QJsonArray{4995.0}};
    line({{"step", "token"}, {"outcome", "done"}, {"summary", "0 launch families measured by the token"}, {"seconds", 20},
          {"prediction", QJsonObject{{"tokens", 128}, {"stock", stock}, {"profile", tuned}, {"greedy_steps", 128},
                                     {"greedy_identical", true}, {"finite", true}}}});
    line({{"step", "bench"}, {"outcome", "started"}});
    f.close();
    MainWindow w({});
    w.setInteractive(false);
    QString error;
    QVERIFY2(w.openPath(journal, &error), qPrintable(error));
    const TuneView* v = w.tuneView();
    QCOMPARE(v->tune().profile.entries.size(), size_t(24));
    const QStringList steps = column(v->decisions(), 0);
    QVERIFY2(steps.mid(0, 3) == (QStringList{QStringLiteral("sweep"), QStringLiteral("install"), QStringLiteral("replay")}), qPrintable(steps.join(", ")));
    QCOMPARE(v->decisions()->item(0, 2)->text(), QStringLiteral("done, 612.5 s"));
    QVERIFY(v->tune().session_path.isEmpty());  // the session it names is gone
    QCOMPARE(v->replayTime()->rowCount(), 1);
    QVERIFY(!v->replayTime()->isHidden());
    QCOMPARE(v->replayTime()->item(0, 4)->text(), QStringLiteral("700.0"));  // at copy bandwidth
    // The token step's prediction leads beside llama-bench's.
    QVERIFY2(v->headline().contains(QStringLiteral("tg128 1.200×")), qPrintable(v->headline()));
    // A journal that is not one says so.
    QFile bad(dir.filePath(QStringLiteral("bad.journal")));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{\"journal\": \"temper-tune-journal\", \"journal_version\": 1}\nnot json\n{}\n");
    bad.close();
    QVERIFY(!w.openPath(bad.fileName(), &error));
    QVERIFY2(w.lastErrorDetail().contains(QStringLiteral("line 2: not a JSON object")), qPrintable(w.lastErrorDetail()));
  }

  void twoTunesSideBySide() {
    MainWindow w({});
    w.setInteractive(false);
    QVERIFY(w.openPath(kH200));
    QString error;
    QVERIFY2(w.compareTuneWith(kH100, &error), qPrintable(error));
    const TuneComparison* c = w.tuneComparison();
    QVERIFY(c->hasTunes());
    QVERIFY2(c->summaryText().contains(QStringLiteral("NVIDIA H200 (132 SMs)")) && c->summaryText().contains(QStringLiteral("NVIDIA H100 80GB HBM3 (132 SMs)")),
             qPrintable(c->summaryText()));
    // The bench tests aligned by model and test; llama3's tg128 differs beyond both CIs (1.173 [1.161, 1.182]
    // on the H200, 1.113 [1.098, 1.137] on the H100): highlighted; pp8 only B has.
    const QTableWidget* b = c->bench();
    int llama_tg = -1, pp8 = -1;
    for (int r = 0; r < b->rowCount(); ++r) {
      if (b->item(r, 0)->text() == QStringLiteral("llama3-8b-q4_k_m tg128")) llama_tg = r;
      if (b->item(r, 0)->text().endsWith(QStringLiteral(" pp8"))) pp8 = r;
    }
    QVERIFY(llama_tg >= 0 && pp8 >= 0);
    QCOMPARE(b->item(llama_tg, TuneComparison::SpeedupA)->text(), QStringLiteral("1.173\n[1.161, 1.182]"));
    QCOMPARE(b->item(llama_tg, TuneComparison::SpeedupB)->text(), QStringLiteral("1.113\n[1.098, 1.137]"));
    QCOMPARE(b->item(llama_tg, TuneComparison::Change)->text(), QStringLiteral("-0.061"));
    QVERIFY(b->item(llama_tg, 0)->data(Qt::UserRole).toBool());
    QCOMPARE(b->item(pp8, TuneComparison::Change)->text(), QStringLiteral("only B"));
    QVERIFY(!b->item(pp8, 0)->data(Qt::UserRole).toBool());
    // Entries by shape (two GPUs): some the same config, some changed, each side's own.
    QVERIFY(c->entries()->rowCount() > 20);
    QVERIFY(c->highlightedRows(c->entries()) > 0 && c->highlightedRows(c->entries()) < c->entries()->rowCount());
    QVERIFY(c->launches()->rowCount() >= 3);
    // Without a tune open there is nothing to compare with, said plainly.
    MainWindow fresh({});
    fresh.setInteractive(false);
    QVERIFY(!fresh.compareTuneWith(kH100, &error));
    QVERIFY2(fresh.lastErrorDetail().contains(QStringLiteral("open a tune first")), qPrintable(fresh.lastErrorDetail()));
  }

  void theDemoShowsARealH200Tune() {
    MainWindow w({});
    w.setInteractive(false);
    if (!MainWindow::hasDemo()) QSKIP("this build has no resources/demo-session.json");
    QVERIFY(w.openDemo());
    QVERIFY(w.tuneView()->hasTune());
    QVERIFY(w.tuneView()->tune().name.contains(QStringLiteral("H200")));
    QVERIFY(w.tuneView()->headline().contains(QStringLiteral("1.173×")));
    QVERIFY(w.tuneComparison()->hasTunes());
  }

  // Issue 49 item 1: picking a profile in the Tune & bench tab's Profile field showed nothing; its
  // "Show" opens that tune in the tune view.
  void theProfileFieldShowsItsTune() {
    MainWindow w({});
    w.setInteractive(false);
    w.tunePanel()->setOutput(kH200);
    auto* show = w.tunePanel()->findChild<QPushButton*>(QStringLiteral("showProfile"));
    QVERIFY(show);
    show->click();
    QVERIFY(w.tuneView()->hasTune());
    QVERIFY2(w.tuneView()->title().contains(QStringLiteral("NVIDIA H200")), qPrintable(w.tuneView()->title()));
    QCOMPARE(w.tabs()->currentWidget()->findChild<TuneView*>(), w.tuneView());
    // A profile not written yet says so.
    QTemporaryDir dir;
    w.tunePanel()->setOutput(dir.filePath(QStringLiteral("not-yet.json")));
    show->click();
    QVERIFY2(w.statusText().contains(QStringLiteral("not-yet.json")), qPrintable(w.statusText()));
  }

  // Issue 49 item 3: scrolling a form over a spin box or combo box it did not click scrolls the form:
  // the tune's rounds and repetitions, the sweep's time cap, every such field of the window.
  void wheelOverAnUnfocusedSpinBoxChangesNothing() {
    MainWindow w({});
    w.setInteractive(false);
    const QList<QAbstractSpinBox*> spins = w.findChildren<QAbstractSpinBox*>();
    const QList<QComboBox*> combos = w.findChildren<QComboBox*>();
    QVERIFY(w.tunePanel()->findChildren<QSpinBox*>().size() >= 2 && spins.size() > 2 && !combos.isEmpty());
    // Each turn alone (up then down would land where it started): nothing changes.
    auto unchangedByWheel = [](QWidget* x, const std::function<QString()>& value) {
      const QString before = value();
      for (const int delta : {120, -120}) {
        QWheelEvent e(QPointF(5, 5), x->mapToGlobal(QPointF(5, 5)), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
        QApplication::sendEvent(x, &e);
        if (value() != before) return false;
      }
      return true;
    };
    for (QAbstractSpinBox* spin : spins) {
      QVERIFY(!spin->hasFocus());
      QVERIFY2(unchangedByWheel(spin, [spin] { return spin->text(); }), qPrintable(spin->parentWidget()->metaObject()->className()));
      QCOMPARE(spin->focusPolicy(), Qt::StrongFocus);
    }
    for (QComboBox* combo : combos)
      QVERIFY2(unchangedByWheel(combo, [combo] { return combo->currentText(); }), qPrintable(combo->currentText()));
  }

  // Issue 49 item 2: a tune that fails marks its step "failed" (it stayed "running…").
  void aFailedTuneMarksTheStepThatFailed() {
    QTemporaryDir dir;
    qputenv("XDG_CACHE_HOME", dir.filePath(QStringLiteral("cache")).toUtf8());
    const QString model = dir.filePath(QStringLiteral("small-llama.gguf"));
    fixtures::writer(fixtures::Fixture::SmallLlama).write(model.toStdString());
    MainWindow w({});
    w.setInteractive(false);
    TunePanel& panel = *w.tunePanel();
    panel.setInteractive(false);
    panel.setModelPath(model);
    // A probe that exists (a missing one is refused before any step) but fails when the step runs it.
    const QString probe = dir.filePath(QStringLiteral("failing-probe"));
    {
      QFile f(probe);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("#!/bin/sh\necho 'not a temper-probe' >&2\nexit 3\n");
    }
    QVERIFY(QFile::setPermissions(probe, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    panel.setProbe(probe);
    panel.setNcols(QStringLiteral("1"));
    panel.setOutput(dir.filePath(QStringLiteral("p.json")));
    QSignalSpy done(&panel, &TunePanel::finished);
    QVERIFY(panel.startTune());
    QVERIFY(done.wait(60000));
    qunsetenv("XDG_CACHE_HOME");
    QStringList outcomes;
    for (int r = 0; r < panel.steps()->rowCount(); ++r) outcomes << (panel.steps()->item(r, 1) ? panel.steps()->item(r, 1)->text() : QString());
    QVERIFY2(!outcomes.contains(QStringLiteral("running…")), qPrintable(outcomes.join(", ")));
    QVERIFY2(outcomes.contains(QStringLiteral("failed")), qPrintable(outcomes.join(", ")));
    // The failure's status text and the progress bar stay above the steps, not over them.
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.tabs()->setCurrentWidget(panel.parentWidget()->parentWidget());
    QTest::qWait(50);
    QApplication::processEvents();
    QList<QWidget*> shown;
    for (int i = 0; i < panel.layout()->count(); ++i)
      if (QWidget* x = panel.layout()->itemAt(i)->widget(); x && x->isVisible()) shown << x;
    for (int i = 0; i < shown.size(); ++i)
      for (int j = i + 1; j < shown.size(); ++j)
        QVERIFY2(!shown[i]->geometry().intersects(shown[j]->geometry()),
                 qPrintable(QString::fromLatin1(shown[i]->metaObject()->className()) + QStringLiteral(" over ") +
                            QString::fromLatin1(shown[j]->metaObject()->className())));
  }
};
TEMPER_UI_TEST(TestTuneView);
#include "tune_view_test.moc"
