// temper-gui: the desktop face of Temper. Options:
//   temper-gui [FILE]              open a GGUF model, a session, a tuning profile or a tune journal
//   temper-gui --demo              open the embedded demo session (recorded on an H100)
//   --fake-device                  add the fake device (simulated timings) to the device picker
//   --screenshot DIR               save PNGs of the main views into DIR and quit (scripts/screenshots)
//   --first-paint                  print the ms from start to the first painted frame and quit (bench)
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QIcon>
#include <QTimer>
#include <cstdio>
#include <string_view>

#include "heatmap_widget.h"
#include "main_window.h"
#include "temper/error.h"
#include "temper/fake_backend.h"

namespace {

// Reports the first paint of the window's heatmap (the last view to appear) and quits.
class FirstPaint : public QObject {
 public:
  explicit FirstPaint(QElapsedTimer t) : timer_(t) {}
  bool eventFilter(QObject* o, QEvent* e) override {
    if (e->type() == QEvent::Paint && !done_) {
      done_ = true;
      // The paint event is delivered before pixels reach the screen: finish this frame first.
      QTimer::singleShot(0, [this] {
        std::printf("first paint: %lld ms\n", static_cast<long long>(timer_.elapsed()));
        std::fflush(stdout);
        QCoreApplication::quit();
      });
    }
    return QObject::eventFilter(o, e);
  }

 private:
  QElapsedTimer timer_;
  bool done_ = false;
};

// --help and --version print and exit before any window, so they work without a display.
bool asksForHelpOrVersion(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "--help-all" || a == "-?" || a == "-v" || a == "--version") return true;
  }
  return false;
}

void setIdentity() {
  QCoreApplication::setApplicationName(QStringLiteral("temper-gui"));
  QCoreApplication::setOrganizationName(QStringLiteral("Temper"));
  QCoreApplication::setApplicationVersion(QStringLiteral(TEMPER_VERSION));
}

}  // namespace

int main(int argc, char** argv) {
  QElapsedTimer started;
  started.start();
  QCommandLineParser cli;
  cli.setApplicationDescription(QStringLiteral("Temper: profile and tune quantized GEMV (mmvq) kernels for LLM decode"));
  cli.addHelpOption();
  cli.addVersionOption();
  cli.addPositionalArgument(QStringLiteral("file"), QStringLiteral("A GGUF model, a Temper session, a tuning profile (.json) or a tune journal to open"));
  const QCommandLineOption demo(QStringLiteral("demo"), QStringLiteral("Open the embedded demo session (read-only)"));
  const QCommandLineOption fake(QStringLiteral("fake-device"), QStringLiteral("Offer the fake device (simulated timings, for trying the sweep UI)"));
  const QCommandLineOption shots(QStringLiteral("screenshot"), QStringLiteral("Save PNGs of the main views into DIR and quit"), QStringLiteral("DIR"));
  const QCommandLineOption paint(QStringLiteral("first-paint"), QStringLiteral("Print the time to the first painted frame and quit"));
  cli.addOptions({demo, fake, shots, paint});
  if (asksForHelpOrVersion(argc, argv)) {
    QCoreApplication core(argc, argv);  // no display needed
    setIdentity();
    cli.process(core);  // prints and exits
    return 0;
  }

  QApplication app(argc, argv);
  setIdentity();
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/temper.svg")));
  QGuiApplication::setDesktopFileName(QStringLiteral(TEMPER_APP_ID));
  cli.process(app);
  if (cli.positionalArguments().size() > 1) {
    std::fprintf(stderr, "temper-gui: one file at a time\n");
    return int(temper::ErrorKind::BadInput);
  }

  std::vector<std::unique_ptr<temper::Backend>> backends;
  try {
    backends = temper::gpu_backends();
  } catch (const std::exception& e) {  // a broken GPU stack: the window opens without its devices
    std::fprintf(stderr, "temper-gui: no GPU backend: %s\n", e.what());
  }
  if (cli.isSet(fake)) backends.push_back(std::make_unique<temper::FakeBackend>(temper::fake_options_from_env()));
  temper::ui::MainWindow window(std::move(backends));
  const bool batch = cli.isSet(shots) || cli.isSet(paint);
  window.setInteractive(!batch);
  const QString file = cli.positionalArguments().isEmpty() ? QString() : cli.positionalArguments().front();
  auto open_start_file = [&](QString* error) {
    if (cli.isSet(demo)) return window.openDemo(error);
    return file.isEmpty() || window.openPath(file, error);
  };

  if (batch) {  // screenshots and timings need the file open before the first frame
    QString error;
    if (!open_start_file(&error)) {
      std::fprintf(stderr, "temper-gui: %s\n", error.toLocal8Bit().constData());
      return int(temper::ErrorKind::BadInput);
    }
  }
  FirstPaint first_paint(started);
  if (cli.isSet(paint)) window.heatmap()->installEventFilter(&first_paint);
  window.show();
  if (cli.isSet(shots)) {
    const QString dir = cli.value(shots);
    QTimer::singleShot(300, &window, [&window, dir] {
      const QStringList files = window.saveScreenshots(dir);
      for (const auto& f : files) std::printf("wrote %s\n", f.toLocal8Bit().constData());
      QCoreApplication::exit(files.isEmpty() ? int(temper::ErrorKind::Io) : 0);
    });
  } else if (!batch) {
    // The file opens once the window is up: an error is one dialog over it and stays in its status
    // line, never text before any window.
    QTimer::singleShot(0, &window, [&window, &open_start_file, &cli, &demo, file] {
      if (open_start_file(nullptr) && file.isEmpty() && !cli.isSet(demo)) window.offerDemoIfFirstLaunch();
    });
  }
  return app.exec();
}
