#include "tune_runner.h"

#include "temper/error.h"

namespace temper::ui {

TuneRunner::TuneRunner(QObject* parent) : QObject(parent) {}

TuneRunner::~TuneRunner() {
  cancel();
  wait();
}

void TuneRunner::cancel() { cancel_ = true; }

void TuneRunner::wait() {
  if (!thread_) return;
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
}

void TuneRunner::run(std::function<QString()> work) {
  if (running_) fail(ErrorKind::BadInput, "a tune or bench is already running");
  wait();
  cancel_ = false;
  running_ = true;
  auto post = [this](auto fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); };
  thread_ = QThread::create([this, post, work = std::move(work)] {
    try {
      const QString summary = work();
      post([this, summary] {
        running_ = false;
        Q_EMIT finished(summary);
      });
    } catch (const std::exception& e) {
      const QString msg = QString::fromStdString(e.what());
      const auto* err = dynamic_cast<const Error*>(&e);
      const bool cancelled = err && err->kind() == ErrorKind::Cancelled;
      post([this, msg, cancelled] {
        running_ = false;
        Q_EMIT failed(msg, cancelled);
      });
    }
  });
  connect(thread_, &QThread::finished, this, [this] {
    if (thread_ && thread_->isFinished()) {
      thread_->deleteLater();
      thread_ = nullptr;
    }
  });
  thread_->start();
}

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

void TuneRunner::startTune(tune::TuneOptions o) {
  auto post = [this](auto fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); };
  o.cancel = &cancel_;
  run([this, post, o = std::move(o)] {
    tune::TuneEvents ev;
    ev.step_started = [&](tune::Step s, const std::string& what) {
      post([this, s, what = qs(what)] { Q_EMIT stepStarted(int(s), what); });
    };
    ev.step_finished = [&](const tune::StepReport& r) {
      post([this, r, outcome = qs(r.outcome), summary = qs(r.summary)] {
        Q_EMIT stepFinished(int(r.step), outcome, summary, r.seconds);
      });
    };
    ev.note = [&](const std::string& text) { post([this, text = qs(text)] { Q_EMIT note(text); }); };
    ev.build = [&](const engine::BuildStep& s) {
      const double eta = s.done > 0 ? s.elapsed_s / s.done * (s.total - s.done) : 0;
      post([this, s, eta] { Q_EMIT progress(s.done, s.total, QStringLiteral("engine build steps"), eta); });
    };
    ev.sweep = [&](const Progress& p) {
      post([this, p, text = qs(p.current)] { Q_EMIT progress(int(p.done), int(p.total), text, p.eta_s); });
    };
    ev.replay = [&](int done, int total) { post([this, done, total] { Q_EMIT progress(done, total, QStringLiteral("replay runs"), 0); }); };
    ev.groups = [&](int done, int total) {
      post([this, done, total] { Q_EMIT progress(done, total, QStringLiteral("group replays"), 0); });
    };
    ev.pipeline = [&](int done, int total) {
      post([this, done, total] { Q_EMIT progress(done, total, QStringLiteral("pipeline replays"), 0); });
    };
    ev.crossover = [&](int done, int total) {
      post([this, done, total] { Q_EMIT progress(done, total, QStringLiteral("crossover replays"), 0); });
    };
    ev.bench = [&](const engine::BenchProgress& p) {
      post([this, p, text = qs(p.current)] { Q_EMIT progress(p.done, p.total, text, p.eta_s); });
    };
    const tune::TuneReport r = tune::run_tune(o, ev);
    if (!r.crossover.empty())
      post([this, j = QByteArray::fromStdString(tune::crossover_json(r.crossover).dump())] { Q_EMIT crossoverReady(j); });
    if (!r.groups.empty())
      post([this, j = QByteArray::fromStdString(tune::groups_json(r.groups).dump())] { Q_EMIT groupsReady(j); });
    if (r.pipeline)
      post([this, j = QByteArray::fromStdString(tune::pipeline_json(*r.pipeline).dump())] { Q_EMIT pipelineReady(j); });
    if (r.replay) post([this, j = QByteArray::fromStdString(r.replay->dump())] { Q_EMIT replayReady(j); });
    if (r.bench) post([this, b = *r.bench] { Q_EMIT benchReady(b); });
    if (const auto& p = r.token_prediction)
      post([this, p = *p] { Q_EMIT predictionReady(p.tokens, p.speedup, p.low, p.high, p.bench_speedup); });
    post([this, journal = qs(r.journal.string())] { Q_EMIT tuneDone(journal); });
    return QStringLiteral("Tuned: the profile is %1").arg(qs(r.profile.string()));
  });
}

void TuneRunner::startBench(engine::BenchOptions o, bool record) {
  auto post = [this](auto fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); };
  o.cancel = &cancel_;
  run([this, post, o = std::move(o), record] {
    engine::BenchEvents ev;
    ev.progress = [&](const engine::BenchProgress& p) {
      post([this, p, text = qs(p.current)] { Q_EMIT progress(p.done, p.total, text, p.eta_s); });
    };
    const engine::BenchResult r = engine::run_bench(o, ev);
    for (const auto& n : r.notes) post([this, text = qs(n)] { Q_EMIT note(text); });
    if (record) {
      Profile p = load_profile(o.profile);
      add_bench_record(p, r.record);
      save_profile(p, o.profile);
    }
    post([this, b = r.record] { Q_EMIT benchReady(b); });
    return record ? QStringLiteral("Bench recorded in %1").arg(qs(o.profile.string())) : QStringLiteral("Bench done");
  });
}

}  // namespace temper::ui
