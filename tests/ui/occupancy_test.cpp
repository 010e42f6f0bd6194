// The occupancy view on RDNA3 (issue 31): the target list offers gfx1100-gfx1103, and a target the
// build has no code objects for is compiled on demand with the installed hipcc and shown: the grid's
// configs, static, wave32, blocks per WGP. Issue 50: it offers MI300X, Strix Point / Halo and RDNA4 too,
// compiles gfx942 with clang-19 showing a count and an ETA while it runs, and shows CDNA's AGPRs.
#include <QComboBox>
#include <QTemporaryDir>
#include <fstream>
#include <QHeaderView>
#include <QTableWidget>
#include <QTest>

#include "main_window.h"
#include "occupancy_view.h"
#include "temper/kernel_cache.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestOccupancyRdna3 : public QObject {
  Q_OBJECT
  std::unique_ptr<MainWindow> w;
  QTemporaryDir dir;

 private Q_SLOTS:
  void init() {
    w = std::make_unique<MainWindow>(std::vector<std::unique_ptr<Backend>>{});
    w->setInteractive(false);
    const QString path = dir.filePath(QStringLiteral("sample.json"));
    save_session(uitest::sampleSession(), path.toStdString());
    QString error;
    QVERIFY2(w->openPath(path, &error), qPrintable(error));
    Selection s = w->document()->selection();
    s.type = GgmlType::Q4_K, s.n = 14336, s.k = 4096, s.ncols = 1;
    s.config.reset();
    w->document()->select(s);
  }
  void cleanup() { w.reset(); }

  void offersRdna3Targets() {
    const QComboBox* targets = w->occupancy()->targets();
    for (const char* arch : {"gfx1100", "gfx1101", "gfx1102", "gfx1103"}) {
      const int i = targets->findData(QString::fromLatin1(arch));
      QVERIFY2(i >= 0, arch);
      QVERIFY2(targets->itemText(i).contains(QStringLiteral("static")), qPrintable(targets->itemText(i)));
    }
    QVERIFY(targets->itemText(targets->findData(QStringLiteral("gfx1103"))).contains(QStringLiteral("780M")));
  }

  void showsGfx1103() {
    if (!kernel_compiler(KernelToolchain::Hip)) QSKIP("no hipcc: nothing to compile gfx1103's code objects with");
    w->occupancy()->setTarget(QStringLiteral("gfx1103"));
    QTableWidget* t = w->occupancy()->table();
    // From the kernel cache when the CLI test filled it, else compiled now (seconds, minutes when loaded).
    // The grid's 27 configs at ncols 1 that launch with 32-wide waves (docs/kernels.md, "The grid").
    QTRY_COMPARE_WITH_TIMEOUT(t->rowCount(), 27, 500000);
    QCOMPARE(t->horizontalHeaderItem(6)->text(), QStringLiteral("blocks/WGP"));
    QCOMPARE(t->horizontalHeaderItem(3)->text(), QStringLiteral("AGPR"));
    QVERIFY(!t->isColumnHidden(3));
    for (int r = 0; r < t->rowCount(); ++r) {
      const QString registers = t->item(r, 2)->text();  // "28 v / 30 s"
      QVERIFY2(registers.section(QLatin1Char(' '), 0, 0).toInt() > 0, qPrintable(registers));
      QVERIFY2(t->item(r, 7)->text().endsWith(QStringLiteral(" / 16")), qPrintable(t->item(r, 7)->text()));
      QCOMPARE(t->item(r, 3)->text(), QStringLiteral("0"));  // RDNA has no AGPRs
    }
    // nwarps 32 is 1024 threads: 32 wave32 waves.
    QCOMPARE(t->item(t->rowCount() - 1, 1)->text(), QStringLiteral("1024"));
  }

  void offersNewerTargets() {
    const QComboBox* targets = w->occupancy()->targets();
    for (const char* arch : {"gfx942", "gfx1150", "gfx1151", "gfx1200", "gfx1201"})
      QVERIFY2(targets->findData(QString::fromLatin1(arch)) >= 0, arch);
    QVERIFY(targets->itemText(targets->findData(QStringLiteral("gfx1151"))).contains(QStringLiteral("8060S")));
  }

  // gfx942 from an empty cache: "0/1 kernels compiled, ... about N s left" while clang-19 runs (the ETA
  // from the cache's last time per unit until the unit is done), then the 24 wave64 configs with AGPRs.
  void compilesGfx942WithCountAndEta() {
    if (!kernel_newer_clang()) QSKIP("no clang-19: nothing to compile gfx942's code objects with");
    QTemporaryDir cache;
    const QByteArray saved = qgetenv("TEMPER_KERNEL_CACHE");
    qputenv("TEMPER_KERNEL_CACHE", cache.path().toLocal8Bit());
    std::ofstream(cache.filePath(QStringLiteral("unit-seconds")).toStdString()) << "40\n";
    w->occupancy()->setTarget(QStringLiteral("gfx942"));
    QTRY_VERIFY2_WITH_TIMEOUT(w->occupancy()->noteText().contains(QStringLiteral("0/1 kernels compiled")),
                              qPrintable(w->occupancy()->noteText()), 20000);
    QVERIFY2(w->occupancy()->noteText().contains(QStringLiteral(" s left")), qPrintable(w->occupancy()->noteText()));
    QTableWidget* t = w->occupancy()->table();
    QTRY_COMPARE_WITH_TIMEOUT(t->rowCount(), 24, 500000);
    qputenv("TEMPER_KERNEL_CACHE", saved);
    QVERIFY2(w->occupancy()->noteText().contains(QStringLiteral("static")), qPrintable(w->occupancy()->noteText()));
    QCOMPARE(t->horizontalHeaderItem(3)->text(), QStringLiteral("AGPR"));
    QVERIFY(!t->isColumnHidden(3));
    QCOMPARE(t->horizontalHeaderItem(6)->text(), QStringLiteral("blocks/CU"));
    for (int r = 0; r < t->rowCount(); ++r) {
      bool number = false;
      QVERIFY(t->item(r, 3)->text().toInt(&number) >= 0 && number);
      QVERIFY2(t->item(r, 7)->text().endsWith(QStringLiteral(" / 8")), qPrintable(t->item(r, 7)->text()));
    }
  }
};
TEMPER_UI_TEST(TestOccupancyRdna3);
#include "occupancy_test.moc"
