// The sweep on a worker thread with the fake device: results arrive live while the GUI thread
// stays free, cancel takes effect within a second, and a finished sweep lands in the document.
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "fixtures/fixtures.h"
#include "heatmap_widget.h"
#include "sweep_panel.h"
#include "sweep_runner.h"
#include "temper/fake_backend.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;
using temper::ui::uitest::smallShape;

namespace {
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

  // One front door: the same model, grid, time cap and seed on the fake device give the same saved
  // session from `temper sweep` and from the GUI's sweep panel, byte for byte once the session id
  // and the clock (created, finished) are set aside.
  void cliAndGuiSaveTheSameSession() {
    const QString model = QString::fromStdString(fixtures::path(fixtures::Fixture::MiniLlama).string());
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString cli_path = dir.filePath(QStringLiteral("cli.session.json"));
    const QString gui_path = dir.filePath(QStringLiteral("gui.session.json"));
    QProcess cli;
    cli.setProcessChannelMode(QProcess::MergedChannels);
    cli.start(QStringLiteral(TEMPER_EXE),
              {QStringLiteral("sweep"), model, QStringLiteral("--backend"), QStringLiteral("fake"), QStringLiteral("--ncols"),
               QStringLiteral("1,2"), QStringLiteral("--nwarps"), QStringLiteral("1,2"), QStringLiteral("--rows-per-block"),
               QStringLiteral("1,2"), QStringLiteral("--seed"),
               QStringLiteral("7"), QStringLiteral("-o"), cli_path});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAll().constData());

    SessionDocument doc;
    doc.setModel(open_model(model.toStdString()));
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(std::make_unique<FakeBackend>());
    SweepPanel panel(&doc, std::move(backends));
    PlanGrid grid = full_grid(std::string(known_engines().front()));
    grid.ncols = {1, 2};
    grid.nwarps = {1, 2};
    grid.rows_per_block = {1, 2};
    panel.setGrid(grid);
    panel.setSeed(7);
    QSignalSpy done(&panel, &SweepPanel::sweepFinished);
    QVERIFY(panel.startSweep());
    QVERIFY(done.wait(120000));
    doc.saveSession(gui_path);

    auto normalised = [](const QString& path) {
      QFile f(path);
      if (!f.open(QIODevice::ReadOnly)) return std::string("cannot read ") + path.toStdString();
      const QByteArray bytes = f.readAll();
      nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end());
      std::string text(bytes.constData(), size_t(bytes.size()));
      // Set the id and the clock aside where they stand, so the rest is compared byte for byte.
      using Mark = std::pair<const char*, const char*>;
      for (const auto& [field, mark] : {Mark{"id", "ID"}, Mark{"created", "TIME"}, Mark{"finished", "TIME"}}) {
        const std::string value = j.at(field).get<std::string>();
        for (size_t at = text.find(value); !value.empty() && at != std::string::npos; at = text.find(value, at))
          text.replace(at, value.size(), mark);
      }
      return text;
    };
    const std::string a = normalised(cli_path), b = normalised(gui_path);
    QVERIFY(a.size() > 1000);
    if (a != b) {
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      QFAIL(qPrintable(QStringLiteral("sessions differ at byte %1: CLI \"%2\" vs GUI \"%3\"")
                           .arg(i)
                           .arg(QString::fromStdString(a.substr(i > 80 ? i - 80 : 0, 160)))
                           .arg(QString::fromStdString(b.substr(i > 80 ? i - 80 : 0, 160)))));
    }
  }
};
TEMPER_UI_TEST(TestSweep);
#include "sweep_test.moc"
