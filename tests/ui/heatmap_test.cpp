// The heatmap: cells per (nwarps, rows_per_block), metric values, default / winner / failed /
// invalid marks, the colour scale, and the widget's geometry (cell under the mouse, click selects).
#include <QPainter>
#include <QTest>
#include <set>

#include "heatmap_widget.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestHeatmap : public QObject {
  Q_OBJECT
  static Selection q4(int ncols = 1) {
    Selection s;
    s.type = GgmlType::Q4_K, s.n = 14336, s.k = 4096, s.ncols = ncols;
    return s;
  }

 private Q_SLOTS:
  void cellsAndMarks() {
    const Session s = uitest::sampleSession();
    const HeatGrid g = buildHeatGrid(s, q4(), HeatMetric::Microseconds);
    // The plan's grid (nwarps 1,2,4 × rows 1,2) plus the excluded 16×8.
    QCOMPARE(g.nwarps, (std::vector<int>{1, 2, 4, 16}));
    QCOMPARE(g.rows, (std::vector<int>{1, 2, 8}));
    QCOMPARE(g.cells.size(), size_t(12));
    const HeatCell* def = g.find({4, 1});
    const HeatCell* win = g.find({2, 1});
    QVERIFY(def && win);
    QVERIFY(def->is_default && !def->is_winner);
    QVERIFY(win->is_winner && !win->is_default);
    QCOMPARE(*def->value, 100.0);
    QCOMPARE(*win->value, 90.0);
    QCOMPARE(g.find({1, 1})->state, CellState::Failed);
    QVERIFY(!g.find({1, 1})->value);  // failed configs are never timed
    QCOMPARE(g.find({16, 8})->state, CellState::Invalid);
    QCOMPARE(g.find({1, 2})->state, CellState::Empty);
    QCOMPARE(g.at(1, 0)->config, (Config{2, 1}));  // row = nwarps index, column = rows_per_block index
    QCOMPARE(g.min, 90.0);
    QCOMPARE(g.max, 100.0);
  }

  void metrics() {
    const Session s = uitest::sampleSession();
    const HeatGrid us = buildHeatGrid(s, q4(), HeatMetric::Microseconds);
    const HeatGrid sp = buildHeatGrid(s, q4(), HeatMetric::Speedup);
    const HeatGrid tok = buildHeatGrid(s, q4(), HeatMetric::TokensPerS);
    const HeatGrid bw = buildHeatGrid(s, q4(), HeatMetric::PercentOfCopyBw);
    QCOMPARE(*sp.find({4, 1})->value, 1.0);
    QVERIFY(qAbs(*sp.find({2, 1})->value - 100.0 / 90.0) < 1e-12);
    // 64 calls per token at 90 µs each: 1e6 / 5760 tokens/s from this shape alone.
    QVERIFY(qAbs(*tok.find({2, 1})->value - 1e6 / (64 * 90.0)) < 1e-9);
    const Result* r = find_result(s, group_key(0, {GgmlType::Q4_K, 14336, 4096}, 1), {2, 1});
    QVERIFY(qAbs(*bw.find({2, 1})->value - 100 * r->gbs / 3000) < 1e-9);
    // Lower µs is better, higher speedup is better: the winner is the best cell either way.
    QCOMPARE(goodness(us, 90, HeatMetric::Microseconds), 1.0);
    QCOMPARE(goodness(us, 100, HeatMetric::Microseconds), 0.0);
    QCOMPARE(goodness(sp, *sp.find({2, 1})->value, HeatMetric::Speedup), 1.0);
    // ncols 2 was never planned: no blank grid with a 0–0 scale, but "not swept".
    const HeatGrid none = buildHeatGrid(s, q4(2), HeatMetric::Microseconds);
    QVERIFY(none.not_swept && none.empty());
    SessionDocument doc;
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(s).dump()), QStringLiteral("sample"), true);
    QCOMPARE(sweptNcols(doc), std::vector<int>{1});  // what the ncols box offers
  }

  // Scales say what spread they show: speedup diverges around 1.0 (the default); a spread below
  // kMinScaleSpread keeps nearby colours instead of stretching over the whole scale.
  void honestScales() {
    Session s = uitest::sampleSession();
    const HeatGrid sp = buildHeatGrid(s, q4(), HeatMetric::Speedup);
    QCOMPARE(goodness(sp, 1.0, HeatMetric::Speedup), 0.5);  // the default sits in the middle
    QVERIFY(goodness(sp, 0.95, HeatMetric::Speedup) < 0.5);  // slower: the other side
    QCOMPARE(cellColor(sp, 1.0, HeatMetric::Speedup), divergingColor(0.5));
    QVERIFY(qAbs(sp.scale_lo * sp.scale_hi - 1.0) < 1e-12);  // symmetric in log around 1
    QVERIFY(spreadText(sp, HeatMetric::Speedup).contains(QStringLiteral("centred on 1.000")));
    // A 1.6 % spread: the best cell keeps the best colour, the worst is not the worst colour.
    for (auto& r : s.results)
      if (r.type == GgmlType::Q4_K && r.ncols == 1 && r.config == Config{2, 1}) r.time_us.median = 98.4;
    finish_session(s);
    const HeatGrid us = buildHeatGrid(s, q4(), HeatMetric::Microseconds);
    QCOMPARE(goodness(us, 98.4, HeatMetric::Microseconds), 1.0);
    const double worst = goodness(us, 100.0, HeatMetric::Microseconds);
    QVERIFY2(worst > 0.6, qPrintable(QString::number(worst)));  // 1.6 % of a 5 % scale
    QVERIFY2(spreadText(us, HeatMetric::Microseconds).contains(QStringLiteral("cells span 1.6 %; the scale spans 5 %")),
             qPrintable(spreadText(us, HeatMetric::Microseconds)));
    // Ten per cent apart: the scale is the cells' own range.
    QCOMPARE(spreadText(buildHeatGrid(uitest::sampleSession(), q4(), HeatMetric::Microseconds), HeatMetric::Microseconds),
             QStringLiteral("cells span 10.0 %"));
  }

  void colourScale() {
    // Ordered in brightness, so the scale reads without colour vision; ends distinct.
    double last = -1;
    for (int i = 0; i <= 10; ++i) {
      const double l = luma(heatColor(i / 10.0));
      QVERIFY2(l > last, qPrintable(QStringLiteral("lightness not increasing at %1").arg(i)));
      last = l;
    }
    QCOMPARE(heatColor(-5), heatColor(0));
    QCOMPARE(heatColor(7), heatColor(1));
  }

  void tooltip() {
    const Session s = uitest::sampleSession();
    const HeatGrid g = buildHeatGrid(s, q4(), HeatMetric::Microseconds);
    const QString win = cellTooltip(s, *g.find({2, 1}));
    QVERIFY(win.contains(QStringLiteral("winner")));
    QVERIFY(win.contains(QStringLiteral("median 90.00 µs")));
    QVERIFY(win.contains(QStringLiteral("p10 89.20")));
    QVERIFY(win.contains(QStringLiteral("95% CI 89.60 – 90.40")));
    QVERIFY(win.contains(QStringLiteral("verification")));
    QVERIFY(cellTooltip(s, *g.find({1, 1})).contains(QStringLiteral("got 1.5, expected 2.5")));
    // Whether the sweep's interleaved re-measure confirmed the winner.
    QVERIFY(win.contains(QStringLiteral("winner (not re-measured)")));
    Session confirmed = s;
    Confirmation c;
    c.type = GgmlType::Q4_K, c.n = 14336, c.k = 4096, c.ncols = 1;
    c.default_config = {4, 1}, c.config = {2, 1}, c.confirmed = true;
    confirmed.confirmations = {c};
    finish_session(confirmed);
    QVERIFY(cellTooltip(confirmed, *g.find({2, 1})).contains(QStringLiteral("winner (confirmed)")));
  }

  void widgetGeometryAndClick() {
    SessionDocument doc;
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(uitest::sampleSession()).dump()), QStringLiteral("sample"), true);
    Selection sel = q4();
    doc.select(sel);
    HeatmapWidget w(&doc);
    w.setMetric(HeatMetric::Microseconds);
    w.resize(900, 600);
    const HeatGrid& g = w.grid();
    QCOMPARE(g.cells.size(), size_t(12));
    for (int i = 0; i < int(g.nwarps.size()); ++i)
      for (int j = 0; j < int(g.rows.size()); ++j) {
        const QRect r = w.cellRect(i, j);
        QVERIFY(r.width() > 20 && r.height() > 20);
        QCOMPARE(w.configAt(r.center()), std::optional<Config>(g.at(i, j)->config));
      }
    QVERIFY(!w.configAt(QPoint(1, 1)));  // the axis labels are no cell
    QTest::mouseClick(&w, Qt::LeftButton, {}, w.cellRect(1, 0).center());
    QVERIFY(doc.selection().config);
    QCOMPARE(*doc.selection().config, (Config{2, 1}));
    // Painting fills every measured cell with its metric's colour (read inside the cell, clear of
    // the text and of the default and selection outlines), over an image that starts magenta.
    QImage img(w.size(), QImage::Format_ARGB32);
    img.fill(Qt::magenta);
    {
      QPainter p(&img);
      w.paintHeatmap(p, w.size());
    }
    std::set<QRgb> colours;
    int painted = 0;
    for (int i = 0; i < int(g.nwarps.size()); ++i)
      for (int j = 0; j < int(g.rows.size()); ++j) {
        const HeatCell& c = *g.at(i, j);
        if (c.state != CellState::Ok || !c.value) continue;
        const QRgb at = img.pixel(w.cellRect(i, j).topLeft() + QPoint(10, 10));
        QCOMPARE(QColor(at).name(), heatColor(goodness(g, *c.value, HeatMetric::Microseconds)).name());
        colours.insert(at);
        ++painted;
      }
    QCOMPARE(painted, 2);            // the sample times q4_K at ncols 1 in 4×1 and 2×1 (1×1 failed)
    QCOMPARE(colours.size(), size_t(2));  // their times differ, so do their colours
    QVERIFY(img.pixel(1, 1) != QColor(Qt::magenta).rgb());  // the background is painted too
  }
};
TEMPER_UI_TEST(TestHeatmap);
#include "heatmap_test.moc"
