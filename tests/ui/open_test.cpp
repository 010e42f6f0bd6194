// Without a GPU: the sweep panel says why, sessions open read-only with the recording device and
// date on screen, bad files give a readable error (never a crash), and a GGUF model shows its shapes.
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QTest>

#include "fixtures/fixtures.h"
#include "main_window.h"
#include "model_panel.h"
#include "sweep_panel.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestOpenWithoutGpu : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void sessionOpensReadOnly() {
    QTemporaryDir dir;
    MainWindow w({});
    w.setInteractive(false);
    QVERIFY(!w.sweepPanel()->hasDevices());
    QVERIFY(!w.sweepPanel()->startButton()->isEnabled());
    const QString path = dir.filePath(QStringLiteral("sample.temper-session.json"));
    save_session(uitest::sampleSession(), path.toStdString());
    QString error;
    QVERIFY2(w.openPath(path, &error), qPrintable(error));
    QVERIFY(w.document()->isReadOnly());
    QVERIFY(!w.document()->isDirty());
    QVERIFY(!w.sweepPanel()->startButton()->isEnabled());
    // Which device recorded it, and when.
    QVERIFY(w.windowTitle().contains(QStringLiteral("Fake GPU")));
    QVERIFY(w.headerText().contains(QStringLiteral("recorded 2026-11-23 12:00:00 UTC")));
    QVERIFY(w.headerText().contains(QStringLiteral("read-only")));
    QVERIFY(w.headerText().contains(QStringLiteral("Temper's kernel")));
    QCOMPARE(w.modelPanel()->model()->rowCount(), 2);
    // An engine session says it timed llama.cpp's own kernel, and which build of it.
    Session engine = uitest::sampleSession();
    engine.kernel_source = {std::string(kKernelEngine), "", "/src/ggml", "abc1234", "1", "/x/temper-probe"};
    const QString engine_path = dir.filePath(QStringLiteral("engine.temper-session.json"));
    save_session(engine, engine_path.toStdString());
    MainWindow e({});
    e.setInteractive(false);
    QVERIFY2(e.openPath(engine_path, &error), qPrintable(error));
    QVERIFY2(e.headerText().contains(QStringLiteral("llama.cpp's own kernel (engine ggml abc1234 hook 1)")),
             qPrintable(e.headerText()));
  }

  void badFilesAreErrorsNotCrashes() {
    QTemporaryDir dir;
    MainWindow w({});
    w.setInteractive(false);
    const QString junk = dir.filePath(QStringLiteral("junk.json"));
    {
      QFile f(junk);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("{\"schema_version\": 1, \"results\": 7}");
    }
    QString error;
    QVERIFY(!w.openPath(junk, &error));
    QVERIFY2(error.contains(QStringLiteral("junk.json")), qPrintable(error));
    QVERIFY(!w.openPath(dir.filePath(QStringLiteral("absent.json")), &error));
    QVERIFY(!error.isEmpty());
    const QString gguf = dir.filePath(QStringLiteral("cut.gguf"));
    {
      QFile f(gguf);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(fixtures::bytes(fixtures::Fixture::MiniLlama)).left(100));
    }
    QVERIFY(!w.openPath(gguf, &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!w.document()->hasSession());
  }

  void modelShowsShapes() {
    MainWindow w({});
    w.setInteractive(false);
    const QString path = QString::fromStdString(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M).string());
    QString error;
    QVERIFY2(w.openPath(path, &error), qPrintable(error));
    QVERIFY(w.document()->model());
    const auto* m = w.modelPanel()->model();
    QCOMPARE(m->rowCount(), int(w.document()->model()->shapes.size()));
    QVERIFY(m->rowCount() >= 5);
    for (int r = 0; r < m->rowCount(); ++r) QCOMPARE(m->index(r, ShapeTableModel::Status).data().toString(), QStringLiteral("not swept"));
    QVERIFY(w.modelPanel()->summary().contains(QStringLiteral("llama")));
  }

  void demoWhenBuiltIn() {
    MainWindow w({});
    w.setInteractive(false);
    if (!MainWindow::hasDemo()) {
      QString error;
      QVERIFY(!w.openDemo(&error));
      QVERIFY(error.contains(QStringLiteral("no demo session")));
      QSKIP("this build has no resources/demo-session.json");
    }
    QVERIFY(w.openDemo());
    QVERIFY(w.document()->isReadOnly());
    const SessionDevice* d = w.document()->currentDevice();
    QVERIFY(d);
    QVERIFY2(d->info.api != "fake", "the demo must be a real recording, not the fake backend");
    QVERIFY(w.headerText().contains(QStringLiteral("recorded")));
    QVERIFY(!w.document()->session().results.empty());
  }
};
TEMPER_UI_TEST(TestOpenWithoutGpu);
#include "open_test.moc"
