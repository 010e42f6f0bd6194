// Exports: every file is written whole (temporary sibling + rename), replaces the previous file,
// leaves nothing behind, and a failed export leaves the old file untouched.
#include <QDir>
#include <QImage>
#include <QTest>

#include "export_dialog.h"
#include "exports.h"
#include "heatmap_widget.h"
#include "main_window.h"
#include "model_panel.h"
#include "roofline_view.h"
#include "temper/error.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestExports : public QObject {
  Q_OBJECT
  static QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
  }

 private Q_SLOTS:
  void csvReplacesAtomically() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("results.csv"));
    {
      QFile old(path);
      QVERIFY(old.open(QIODevice::WriteOnly));
      old.write("old contents\n");
    }
    const Session s = uitest::sampleSession();
    exportResultsCsv(s, path);
    const QByteArray csv = readAll(path);
    QVERIFY(!csv.contains("old contents"));
    QCOMPARE(csv.count('\n'), qsizetype(s.results.size() + 1));  // header + one row per result
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{QStringLiteral("results.csv")});
  }

  void failedExportKeepsOldFile() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("missing/results.csv"));
    bool threw = false;
    try {
      exportResultsCsv(uitest::sampleSession(), path);
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::Io;
    }
    QVERIFY(threw);
    QVERIFY(!QFile::exists(path));
    // A read-only directory: the existing file stays as it was.
    const QString ro = dir.filePath(QStringLiteral("ro"));
    QVERIFY(QDir().mkpath(ro));
    const QString kept = ro + QStringLiteral("/shapes.csv");
    {
      QFile f(kept);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("keep me\n");
    }
    QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
    if (QFileInfo(ro).isWritable()) QSKIP("running as root: directory permissions do not stop writes");
    try {
      exportResultsCsv(uitest::sampleSession(), kept);
      QFAIL("writing into a read-only directory succeeded");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::Io);
    }
    QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    QCOMPARE(readAll(kept), QByteArray("keep me\n"));
  }

  void tableCsvQuotes() {
    SessionDocument doc;
    ShapeTableModel m(&doc);
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(uitest::sampleSession()).dump()), QStringLiteral("sample"), true);
    const QString csv = tableCsv(m);
    const QStringList lines = csv.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QVERIFY(lines[0].startsWith(QStringLiteral("type,N,K,calls/token")));
    QVERIFY(lines[1].startsWith(QStringLiteral("q4_K,14336,4096,64,2113.9,")));
  }

  void imagesAndDialog() {
    QTemporaryDir dir;
    MainWindow w({});
    w.setInteractive(false);
    const QString session = dir.filePath(QStringLiteral("s.json"));
    save_session(uitest::sampleSession(), session.toStdString());
    QVERIFY(w.openPath(session));
    w.resize(1200, 800);
    w.heatmap()->resize(800, 500);
    const QString png = dir.filePath(QStringLiteral("h.png")), svg = dir.filePath(QStringLiteral("h.svg"));
    exportImage(*w.heatmap(), png);
    exportImage(*w.heatmap(), svg);
    const QImage img(png);
    QCOMPARE(img.size(), w.heatmap()->size() * w.heatmap()->devicePixelRatio());
    QVERIFY(readAll(svg).contains("<svg"));
    // The dialog writes all ten files into one directory and reports each.
    ExportDialog d(w.document(), {w.heatmap(), w.roofline(), w.modelPanel()->proxy()});
    const QString out = dir.filePath(QStringLiteral("out"));
    QVERIFY(QDir().mkpath(out));
    d.setDirectory(out);
    const QString log = d.exportChecked();
    QVERIFY2(!log.contains(QStringLiteral("FAILED")), qPrintable(log));
    QCOMPARE(QDir(out).entryList(QDir::Files | QDir::Hidden).size(), d.itemCount());
    QVERIFY(d.fileFor(0).endsWith(QStringLiteral("llama-3-8b.Q4_K_M-sm_90.temper-profile.json")));
    QVERIFY(readAll(d.fileFor(6)).contains("<svg"));  // roofline SVG
    QVERIFY(readAll(d.fileFor(9)).contains("calc_nwarps_sm_90"));  // the ggml table
  }
};
TEMPER_UI_TEST(TestExports);
#include "exports_test.moc"
