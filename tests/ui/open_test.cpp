// Without a GPU: the sweep panel says why, sessions open read-only with the recording device and
// date on screen, bad files give a readable error (never a crash), and a GGUF model shows its shapes.
#include <sys/stat.h>

#include <QElapsedTimer>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSettings>
#include <QPushButton>
#include <QTableView>
#include <QTest>

#include "fixtures/fixtures.h"
#include "main_window.h"
#include "temper/fake_backend.h"
#include "temper/gguf.h"
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

  // Issue 49 item 9: the GUI leads with a plain sentence about the file; the reader's precise line
  // (what the CLI prints) is the detail, one click away.
  void badFilesLeadWithAPlainSentence() {
    QTemporaryDir dir;
    MainWindow w({});
    w.setInteractive(false);
    auto write = [&](const QString& name, const QByteArray& bytes) {
      QFile f(dir.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(name));
      f.write(bytes);
      return dir.filePath(name);
    };
    const QString cut = write(QStringLiteral("cut.gguf"), QByteArray::fromStdString(fixtures::bytes(fixtures::Fixture::MiniLlama)).left(555));
    const QString empty = write(QStringLiteral("empty.gguf"), QByteArray());
    const QString text = write(QStringLiteral("notes.json"), "these are my notes");
    struct Case {
      QString path, sentence, detail;
    };
    const Case cases[] = {
        {cut, QStringLiteral("This GGUF file is cut short: cut.gguf ends before its own header says it does"), QStringLiteral("byte ")},
        {empty, QStringLiteral("empty.gguf is empty"), QStringLiteral("empty.gguf")},
        {text, QStringLiteral("notes.json is not a file Temper reads"), QStringLiteral("notes.json")},
    };
    for (const Case& c : cases) {
      QString error;
      QVERIFY2(!w.openPath(c.path, &error), qPrintable(c.path));
      QVERIFY2(error.startsWith(c.sentence), qPrintable(error));
      QVERIFY2(!error.contains(QStringLiteral("byte ")), qPrintable(error));  // the technical line is the detail
      QVERIFY2(w.lastErrorDetail().contains(c.detail), qPrintable(w.lastErrorDetail()));
      QVERIFY2(w.statusText().contains(error), qPrintable(w.statusText()));
    }
  }

  // Each hostile or mistaken file is one line naming the file and what was wrong, in the error and in
  // the status line; nothing hangs (a FIFO), nothing shows a library's raw text.
  void wrongFilesSayWhichFileAndWhy() {
    QTemporaryDir dir;
    MainWindow w({});
    w.setInteractive(false);
    const std::string session_path = dir.filePath(QStringLiteral("s.json")).toStdString();
    save_session(uitest::sampleSession(), session_path);
    auto write = [&](const QString& name, const QByteArray& bytes) {
      QFile f(dir.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(name));
      f.write(bytes);
      return dir.filePath(name);
    };
    const QString huge = write(QStringLiteral("huge.json"), R"({"schema_version": 1e999})");
    const QString fifo = dir.filePath(QStringLiteral("pipe.json"));
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
    struct Case {
      QString path, why;
    };
    const Case cases[] = {{huge, QStringLiteral("a number out of range")},
                          {fifo, QStringLiteral("FIFO")},
                          {dir.path(), QStringLiteral("directory")},
                          {dir.filePath(QStringLiteral("absent.json")), QStringLiteral("No such file")}};
    for (const Case& c : cases) {
      QString error;
      QElapsedTimer t;
      t.start();
      QVERIFY2(!w.openPath(c.path, &error), qPrintable(c.path));
      QVERIFY2(t.elapsed() < 5000, qPrintable(c.path));
      // A plain sentence naming the file; the precise why in its detail.
      const QString detail = w.lastErrorDetail();
      QVERIFY2(error.contains(QFileInfo(c.path).fileName()), qPrintable(error));
      QVERIFY2(detail.contains(QFileInfo(c.path).fileName()), qPrintable(detail));
      QVERIFY2(detail.contains(c.why, Qt::CaseInsensitive), qPrintable(detail));
      QVERIFY2(!detail.contains(QStringLiteral("missing field")) && !detail.contains(QStringLiteral("json.exception")),
               qPrintable(detail));
      QVERIFY2(w.statusText().contains(error), qPrintable(w.statusText()));
    }
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

  // At the default window size the shape table shows all ten columns (MB/token, %, µs, status
  // included) inside the dock: no column behind a horizontal scroll bar, none squeezed to nothing.
  void modelDockShowsEveryColumnAtTheDefaultSize() {
    QSettings().remove(QStringLiteral("window"));  // the default layout, not one a test saved
    QTemporaryDir dir;
    const QString session = dir.filePath(QStringLiteral("s.json"));
    save_session(uitest::sampleSession(), session.toStdString());
    const QString model = QString::fromStdString(fixtures::path(fixtures::Fixture::Llama3_8B_Q4_K_M).string());
    for (const QString& path : {model, session}) {
      MainWindow w({});
      w.setInteractive(false);
      QString error;
      QVERIFY2(w.openPath(path, &error), qPrintable(error));
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      QTest::qWait(100);  // the default dock sizes are applied once the window is shown
      QCOMPARE(w.size(), QSize(1400, 860));
      const QTableView* v = w.modelPanel()->view();
      const QHeaderView* h = v->horizontalHeader();
      QVERIFY2(h->length() <= v->viewport()->width(),
               qPrintable(QStringLiteral("%1 px of columns in a %2 px table").arg(h->length()).arg(v->viewport()->width())));
      QVERIFY(!v->horizontalScrollBar()->isVisible());
      const int digits = v->fontMetrics().horizontalAdvance(QStringLiteral("000"));
      for (int c = 0; c < h->count(); ++c) {
        QVERIFY(!h->isSectionHidden(c));
        QVERIFY2(h->sectionSize(c) >= digits, qPrintable(QStringLiteral("column %1 is %2 px").arg(c).arg(h->sectionSize(c))));
        // Numbers are never cut ("143…" for 14336): only the status text may wrap.
        for (int r = 0; c != ShapeTableModel::Status && r < v->model()->rowCount(); ++r) {
          const QModelIndex i = v->model()->index(r, c);
          QVERIFY2(h->sectionSize(c) >= v->sizeHintForIndex(i).width(),
                   qPrintable(QStringLiteral("\"%1\" cut to %2 px").arg(i.data().toString()).arg(h->sectionSize(c))));
        }
      }
    }
  }

  // A model of f16 weights only used to sweep to "complete, 0 results" with no hint: the shape table
  // and the sweep panel say there is nothing to tune, and the sweep cannot start.
  void aModelWithNothingToTuneSaysSo() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("f16.gguf"));
    GgufWriter g;
    g.add("general.architecture", GgufWriter::Value::string("llama"));
    g.add_sparse_tensor("blk.0.attn_q.weight", GgmlType::F16, {64, 64});
    g.add_sparse_tensor("output.weight", GgmlType::F16, {64, 128});
    g.write(path.toStdString());
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(std::make_unique<FakeBackend>());
    MainWindow w(std::move(backends));
    w.setInteractive(false);
    QString error;
    QVERIFY2(w.openPath(path, &error), qPrintable(error));
    QVERIFY(w.sweepPanel()->hasDevices());
    const auto* m = w.modelPanel()->model();
    QVERIFY(m->rowCount() > 0);
    for (int r = 0; r < m->rowCount(); ++r)
      QCOMPARE(m->index(r, ShapeTableModel::Status).data().toString(), QStringLiteral("no mmvq kernel"));
    QVERIFY(!w.sweepPanel()->startButton()->isEnabled());
    bool said = false;
    for (const QLabel* l : w.sweepPanel()->findChildren<QLabel*>())
      said = said || l->text().contains(QStringLiteral("Nothing to sweep: no shape of this model has an mmvq kernel"));
    QVERIFY(said);
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
