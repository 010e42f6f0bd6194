// The sweep on a worker thread with the fake device: results arrive live while the GUI thread
// stays free, cancel takes effect within a second, and a finished sweep lands in the document.
#include <QElapsedTimer>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include "heatmap_widget.h"
#include "sweep_panel.h"
#include "sweep_runner.h"
#include "temper/fake_backend.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

namespace {
Shape smallShape(GgmlType type, int n, int k) {
  Shape s;
  s.type = type, s.n = n, s.k = k, s.calls_per_token = 2;
  s.bytes_per_token = *row_bytes(type, uint64_t(k)) * uint64_t(n) * 2;
  s.tensors = {"blk.*.test"};
  return s;
}
SweepSetup smallSetup() {
  SweepSetup setup;
  setup.shapes = {smallShape(GgmlType::Q4_0, 512, 1024), smallShape(GgmlType::Q8_0, 256, 2048)};
  setup.model = {std::string(kSyntheticShape), 0, "", ""};
  setup.grid = quick_grid(std::string(known_engines().front()));
  setup.options.min_samples = 8;
  setup.options.time_cap_s = 0.05;
  setup.options.launches_per_sample = 1;  // the slow fake kernel below: a batch stays short
  setup.options.seed = 7;
  return setup;
}
}  // namespace

class TestSweep : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void cancelWithinASecond() {
    SweepRunner runner;
    QSignalSpy planned(&runner, &SweepRunner::planned);
    QSignalSpy progress(&runner, &SweepRunner::progress);
    QSignalSpy finished(&runner, &SweepRunner::finished);
    FakeDeviceOptions slow;
    slow.sleep_per_launch_us = 4000;  // a slow kernel: the whole sweep would take many seconds
    runner.start(smallSetup(), [slow] {
      std::vector<std::unique_ptr<Device>> v;
      v.push_back(std::make_unique<FakeDevice>(slow));
      return v;
    });
    QVERIFY(runner.isRunning());
    QVERIFY(progress.wait(20000));  // the first result landed; the event loop kept running meanwhile
    QCOMPARE(planned.count(), 1);
    QElapsedTimer t;
    t.start();
    runner.cancel();
    QVERIFY(finished.wait(5000));
    const qint64 ms = t.elapsed();
    QVERIFY2(ms < 1000, qPrintable(QStringLiteral("cancel took %1 ms").arg(ms)));
    const Session s = finished.front().front().value<Session>();
    QCOMPARE(s.status, std::string("cancelled"));
    size_t planned_items = 0;
    for (const auto& d : s.devices) planned_items += d.plan.items.size();
    QVERIFY(s.results.size() < planned_items);
    QVERIFY(!runner.isRunning());
  }

  void panelRunsIntoTheDocument() {
    SessionDocument doc;
    Model m;
    m.path = "synthetic.gguf";
    m.architecture = "llama";
    m.shapes = smallSetup().shapes;
    doc.setModel(m);
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(std::make_unique<FakeBackend>());
    SweepPanel panel(&doc, std::move(backends));
    QVERIFY(panel.hasDevices());
    panel.setGrid(smallSetup().grid);
    QVERIFY(panel.startButton()->isEnabled());
    QSignalSpy live(&doc, &SessionDocument::resultsChanged);
    QSignalSpy done(&panel, &SweepPanel::sweepFinished);
    QVERIFY(panel.startSweep());
    QVERIFY(panel.cancelButton()->isEnabled());
    QVERIFY(done.wait(60000));
    QVERIFY2(done.front().front().toString().contains(QStringLiteral("complete")), qPrintable(done.front().front().toString()));
    QVERIFY(live.count() >= 2);  // results arrived while it ran, then the final record
    const Session& s = doc.session();
    QCOMPARE(s.status, std::string("complete"));
    QCOMPARE(s.results.size(), s.devices.front().plan.items.size());
    QVERIFY(doc.isDirty());  // unsaved results: closing will prompt
    QVERIFY(!s.estimates.empty());
    HeatmapWidget h(&doc);
    QVERIFY(!h.grid().empty());
    int ok = 0;
    for (const auto& c : h.grid().cells) ok += c.state == CellState::Ok;
    QVERIFY(ok >= 4);
    QVERIFY(panel.startButton()->isEnabled());
    QVERIFY(!panel.cancelButton()->isEnabled());
  }
};
TEMPER_UI_TEST(TestSweep);
#include "sweep_test.moc"
