// Selection linking: shape table ↔ document ↔ heatmap ↔ roofline ↔ occupancy, both ways.
#include <QItemSelectionModel>
#include <QTableView>
#include <QTableWidget>
#include <QTest>
#include <cmath>

#include "heatmap_widget.h"
#include "main_window.h"
#include "model_panel.h"
#include "occupancy_view.h"
#include "roofline_view.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestLinking : public QObject {
  Q_OBJECT
  std::unique_ptr<MainWindow> w;
  QTemporaryDir dir;

  const Shape* currentRowShape() {
    auto* panel = w->modelPanel();
    const QModelIndex cur = panel->view()->currentIndex();
    return panel->model()->shapeAt(panel->proxy()->mapToSource(cur).row());
  }

 private Q_SLOTS:
  void init() {
    w = std::make_unique<MainWindow>(std::vector<std::unique_ptr<Backend>>{});
    w->setInteractive(false);
    const QString path = dir.filePath(QStringLiteral("sample.json"));
    save_session(uitest::sampleSession(), path.toStdString());
    QString error;
    QVERIFY2(w->openPath(path, &error), qPrintable(error));
  }
  void cleanup() { w.reset(); }

  void opensOnLargestShape() {
    const Selection& s = w->document()->selection();
    QCOMPARE(s.type, GgmlType::Q4_K);  // the largest share of decode bytes
    QCOMPARE(currentRowShape()->type, GgmlType::Q4_K);
    QCOMPARE(w->heatmap()->grid().cells.size(), size_t(12));
  }

  void tableSelectsEverywhere() {
    auto* panel = w->modelPanel();
    const int row = panel->model()->rowOf(GgmlType::Q6_K, 4096, 14336);
    const QModelIndex idx = panel->proxy()->mapFromSource(panel->model()->index(row, 0));
    panel->view()->selectionModel()->setCurrentIndex(idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QCOMPARE(w->document()->selection().type, GgmlType::Q6_K);
    QCOMPARE(w->document()->selection().n, 4096);
    // The heatmap now shows q6_K: three measured configs, default 4×1, no winner.
    const HeatGrid& g = w->heatmap()->grid();
    QVERIFY(g.find({4, 1})->is_default);
    for (const auto& c : g.cells) QVERIFY(!c.is_winner);
    // The roofline rings q6_K's three points.
    QCOMPARE(w->roofline()->selectedSeries()->count(), 3);
  }

  void documentSelectsTableRow() {
    Selection s = w->document()->selection();
    s.type = GgmlType::Q6_K, s.n = 4096, s.k = 14336;
    w->document()->select(s);
    QCOMPARE(currentRowShape()->type, GgmlType::Q6_K);
    s.type = GgmlType::Q4_K, s.n = 14336, s.k = 4096;
    w->document()->select(s);
    QCOMPARE(currentRowShape()->type, GgmlType::Q4_K);
  }

  void rooflinePointSelects() {
    auto* r = w->roofline();
    // Series 2 holds the winners: q4_K's 2×1 only.
    QCOMPARE(r->pointSeries().size(), size_t(3));
    QCOMPARE(r->pointSeries()[2].results.size(), size_t(1));
    QCOMPARE(r->pointSeries()[1].results.size(), size_t(2));  // the two defaults
    // Select q6_K's default from the roofline: table, heatmap and the ring follow.
    const auto& defaults = r->pointSeries()[1].results;
    const int i = defaults[0].type == GgmlType::Q6_K ? 0 : 1;
    r->selectPoint(1, i);
    const Selection& s = w->document()->selection();
    QCOMPARE(s.type, GgmlType::Q6_K);
    QCOMPARE(*s.config, (Config{4, 1}));
    QCOMPARE(currentRowShape()->type, GgmlType::Q6_K);
    QCOMPARE(r->selectedSeries()->count(), 1);  // one config selected: one ring
    // Clicking the heatmap cell of another config moves the ring.
    auto* h = w->heatmap();
    h->resize(900, 600);
    const HeatGrid& g = h->grid();
    for (int a = 0; a < int(g.nwarps.size()); ++a)
      for (int b = 0; b < int(g.rows.size()); ++b)
        if (g.at(a, b)->config == Config{2, 1}) QTest::mouseClick(h, Qt::LeftButton, {}, h->cellRect(a, b).center());
    QCOMPARE(*w->document()->selection().config, (Config{2, 1}));
    const QPointF ring = r->selectedSeries()->at(0);
    bool found = false;
    for (const auto& p : r->pointSeries()[0].results)
      if (p.type == GgmlType::Q6_K && p.config == Config{2, 1}) found = qFuzzyCompare(std::log10(p.intensity), ring.x());  // log axes
    QVERIFY(found);
  }

  void occupancyFollowsSelection() {
    Selection s = w->document()->selection();
    s.type = GgmlType::Q4_K, s.n = 14336, s.k = 4096, s.ncols = 1;
    s.config.reset();
    w->document()->select(s);
    // The sample records kernel attributes for q4_K 2×1 only (40 registers, 512 B shared), on a device
    // of arch sm_90 that the spec database matches: one row, that config's, from those attributes.
    auto* t = w->occupancy()->table();
    QCOMPARE(t->rowCount(), 1);
    QCOMPARE(t->item(0, 0)->data(Qt::UserRole).toPoint(), QPoint(2, 1));
    QCOMPARE(t->item(0, 2)->text(), QStringLiteral("40"));
    QCOMPARE(t->item(0, 4)->text(), QStringLiteral("512"));
    QVERIFY2(t->isColumnHidden(3), "CUDA has no AGPRs: their column is hidden");
    // Static AMD targets: without code objects the view says so instead of showing nothing.
    w->occupancy()->setCodeObjectDir(dir.filePath(QStringLiteral("no-such-dir")));
    w->occupancy()->setTarget(QStringLiteral("gfx90a"));
    QCOMPARE(t->rowCount(), 0);
  }
};
TEMPER_UI_TEST(TestLinking);
#include "linking_test.moc"
