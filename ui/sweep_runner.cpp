#include "sweep_runner.h"

#include <QDir>
#include <chrono>
#include <QPointer>
#include <algorithm>

#include "temper/engine_device.h"
#include "temper/error.h"

namespace temper::ui {

SweepRunner::SweepRunner(QObject* parent) : QObject(parent) {}

SweepRunner::~SweepRunner() {
  cancel();
  wait();
}

void SweepRunner::cancel() { cancel_ = true; }

void SweepRunner::wait() {
  if (!thread_) return;
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
}

void SweepRunner::start(SweepSetup setup, DeviceFactory open_devices, const QString& journal_dir) {
  if (running_) fail(ErrorKind::BadInput, "a sweep is already running");
  wait();  // the last one's thread may not be cleaned up yet
  cancel_ = false;
  running_ = true;
  // Signals leave the worker through queued invocations on this object (GUI thread).
  auto post = [this](auto fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); };
  thread_ = QThread::create([this, post, setup = std::move(setup), open_devices = std::move(open_devices), journal_dir]() mutable {
    try {
      auto owned = open_devices();
      if (owned.empty()) fail(ErrorKind::NoDevice, "no device to run the sweep on");
      std::vector<Device*> devices;
      for (auto& d : owned) devices.push_back(d.get());
      // The engine's own kernel: the session says so (path, commit, hook version).
      if (const auto* e = dynamic_cast<const engine::EngineDevice*>(devices.front())) setup.kernel_source = e->kernel_source();
      Session session = new_session(setup, devices);
      const double eta = estimated_seconds(session);
      post([this, session, eta] { Q_EMIT planned(session, eta); });
      // Kernels the build lacks are compiled first (only this plan's (type, ncols), for each
      // device's arch; cached), shown through the same progress signal; Cancel stops them.
      for (size_t i = 0; i < devices.size() && i < session.devices.size(); ++i) {
        std::vector<KernelPair> pairs;
        for (const PlanItem& item : session.devices[i].plan.items)
          if (const KernelPair kp{item.type, item.ncols}; std::find(pairs.begin(), pairs.end(), kp) == pairs.end())
            pairs.push_back(kp);
        const QString arch = QString::fromStdString(devices[i]->info().arch);
        devices[i]->prepare_kernels(pairs, [&](const CompileProgress& c) {
          const QString text = QStringLiteral("compiling %1 kernels: %2").arg(arch, QString::fromStdString(compile_progress_text(c)));
          post([this, c, text] { Q_EMIT progress(qulonglong(c.done), qulonglong(c.total), text, c.eta_s); });
        }, &cancel_);
      }
      std::optional<Journal> journal;
      if (!journal_dir.isEmpty() && QDir().mkpath(journal_dir))
        journal.emplace(Journal::create((journal_dir + QStringLiteral("/")).toStdString() + session.id + ".journal", session));
      // Called under the runner's lock, so reading session.results here is safe.
      size_t seen = session.results.size();
      auto on_progress = [&](const Progress& p) {
        std::vector<Result> fresh(session.results.begin() + std::ptrdiff_t(seen), session.results.end());
        seen = session.results.size();
        const QString current = QString::fromStdString(p.current);
        post([this, fresh = std::move(fresh), p, current] {
          if (!fresh.empty()) Q_EMIT resultsArrived(fresh);
          Q_EMIT progress(p.done, p.total, current, p.eta_s);
        });
      };
      run_session(session, devices, journal ? &*journal : nullptr, on_progress, cancel_);
      post([this, session = std::move(session)] {
        running_ = false;
        Q_EMIT finished(session);
      });
    } catch (const std::exception& e) {
      const QString msg = QString::fromStdString(e.what());
      post([this, msg] {
        running_ = false;
        Q_EMIT failed(msg);
      });
    }
  });
  // The worker's last queued signal is followed by this: the thread object goes once it is done.
  connect(thread_, &QThread::finished, this, [this] {
    if (thread_ && thread_->isFinished()) {
      thread_->deleteLater();
      thread_ = nullptr;
    }
  });
  thread_->start();
}

}  // namespace temper::ui

namespace temper::ui {

void SweepRunner::startEngine(SweepSetup setup, EngineRequest request, const QString& journal_dir) {
  auto post = [this](auto fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); };
  start(std::move(setup), [this, post, request = std::move(request)]() mutable {
    engine::ProbeOptions probe;
    if (!request.probe.empty()) {
      probe.probe = request.probe;
    } else {
      request.build.cancel = &cancel_;
      const auto t0 = std::chrono::steady_clock::now();
      const engine::BuildResult built = engine::build(request.source, request.build, [&](const engine::BuildStep& s) {
        const double eta = s.done > 0 ? s.elapsed_s / s.done * (s.total - s.done) : 0;
        const QString log = QString::fromStdString(s.log.string());
        post([this, s, eta, log] { Q_EMIT buildProgress(s.done, s.total, eta, log); });
      });
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const QString text = built.cached
                               ? QStringLiteral("Engine build cached (%1): %2").arg(QString::fromStdString(built.hash),
                                                                                    QString::fromStdString(built.probe.string()))
                               : QStringLiteral("Engine built in %1 s: %2 (log: %3)")
                                     .arg(int(secs + 0.5))
                                     .arg(QString::fromStdString(built.probe.string()), QString::fromStdString(built.log.string()));
      post([this, text] { Q_EMIT engineReady(text); });
      probe = engine::probe_options(request.source, built);
    }
    std::vector<std::unique_ptr<Device>> v;
    v.push_back(std::make_unique<engine::EngineDevice>(std::move(probe)));
    return v;
  }, journal_dir);
}

}  // namespace temper::ui
