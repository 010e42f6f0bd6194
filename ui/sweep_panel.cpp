#include "sweep_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <span>

#include "temper/engine.h"
#include "temper/engine_build.h"
#include "temper/error.h"
#include "temper/quant/reference.h"
#include "temper/session.h"

namespace temper::ui {

namespace {
const std::vector<int> kNwarps = grid_nwarps();
const std::vector<int> kRows = grid_rows_per_block();
const int kNcols[] = {1, 2, 3, 4, 5, 6, 7, 8};

QString eta_text(double s) {
  if (s < 90) return QStringLiteral("%1 s").arg(int(s + 0.5));
  if (s < 5400) return QStringLiteral("%1 min").arg(int(s / 60 + 0.5));
  return QStringLiteral("%1 h").arg(s / 3600, 0, 'f', 1);
}

QWidget* checkRow(std::span<const int> values, std::vector<QCheckBox*>& boxes) {
  auto* w = new QWidget;
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  for (int v : values) {
    auto* b = new QCheckBox(QString::number(v));
    b->setProperty("value", v);
    boxes.push_back(b);
    l->addWidget(b);
  }
  l->addStretch();
  return w;
}

std::vector<int> checked(const std::vector<QCheckBox*>& boxes) {
  std::vector<int> v;
  for (auto* b : boxes)
    if (b->isChecked()) v.push_back(b->property("value").toInt());
  return v;
}

void setChecked(const std::vector<QCheckBox*>& boxes, const std::vector<int>& values) {
  for (auto* b : boxes)
    b->setChecked(std::find(values.begin(), values.end(), b->property("value").toInt()) != values.end());
}

QString list_text(const std::vector<int>& v) {
  QStringList l;
  for (int x : v) l << QString::number(x);
  return l.join(QLatin1Char(','));
}
std::vector<int> parse_list(const QString& s) {
  std::vector<int> v;
  for (const auto& p : s.split(QLatin1Char(','), Qt::SkipEmptyParts)) v.push_back(p.toInt());
  return v;
}
}  // namespace

QString engineCheckLine(const QString& dir, bool* ok) {
  if (ok) *ok = false;
  if (dir.isEmpty()) return QStringLiteral("Choose your ggml or llama.cpp folder.");
  try {
    const engine::CheckReport r = engine::check(dir.toStdString());
    const QString head = QStringLiteral("%1 tree, ggml commit %2: ")
                             .arg(qstr(engine::tree_kind_name(r.tree.kind)),
                                  r.tree.commit.empty() ? QStringLiteral("unknown (no .git)") : qstr(r.tree.commit.substr(0, 12)));
    if (r.state == engine::HookState::Patched) {
      if (ok) *ok = true;
      return head + QStringLiteral("mmvq.cu carries Temper's hook v%1 already").arg(r.patched_version);
    }
    if (r.applies) {
      if (ok) *ok = true;
      return head + QStringLiteral("the hook (v%1) applies, %2 mmvq types").arg(engine::kHookVersion).arg(r.types.size());
    }
    return head + QStringLiteral("the hook does not apply: %1").arg(qstr(r.problem));
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

SweepPanel::SweepPanel(SessionDocument* doc, std::vector<std::unique_ptr<Backend>> backends, QWidget* parent)
    : QWidget(parent), doc_(doc), devices_(gpu::list_devices(std::move(backends))), runner_(new SweepRunner(this)) {

  stack_ = new QStackedWidget;
  // No GPU: say why, offer a session.
  auto* none = new QWidget;
  {
    auto* l = new QVBoxLayout(none);
    auto* t = new QLabel(QStringLiteral("<b>No GPU found.</b><br>%1<br><br>Sweeps need a HIP or CUDA device. You can still "
                                        "open a recorded session (read-only) or the demo session recorded on an H100.")
                             .arg(qstr(devices_.why_none).toHtmlEscaped()));
    t->setWordWrap(true);
    auto* open = new QPushButton(QStringLiteral("Open session…"));
    auto* demo = new QPushButton(QStringLiteral("Open demo session"));
    connect(open, &QPushButton::clicked, this, &SweepPanel::openSessionRequested);
    connect(demo, &QPushButton::clicked, this, &SweepPanel::openDemoRequested);
    l->addWidget(t);
    l->addWidget(open);
    l->addWidget(demo);
    l->addStretch();
  }
  // Devices and grid.
  auto* editor = new QWidget;
  {
    device_ = new QComboBox;
    for (const auto& e : devices_.devices) {
      const GpuSpec* g = match_device(e.info);
      device_->addItem(QStringLiteral("%1 #%2 · %3 (%4)%5")
                           .arg(qstr(e.backend->name())).arg(e.info.index).arg(qstr(e.info.name), qstr(e.info.arch))
                           .arg(g ? QStringLiteral(" · %1").arg(qstr(g->names.front())) : QStringLiteral(" · not in database")));
    }
    device_note_ = new QLabel;
    device_note_->setWordWrap(true);
    engine_ = new QComboBox;
    for (auto e : known_engines()) engine_->addItem(qstr(e));
    time_cap_ = new QDoubleSpinBox;
    time_cap_->setRange(0.05, 10);
    time_cap_->setSingleStep(0.1);
    time_cap_->setValue(SweepOptions{}.time_cap_s);  // the CLI's default, from one place
    time_cap_->setSuffix(QStringLiteral(" s"));
    time_cap_->setToolTip(QStringLiteral("At most this long per result; timing stops earlier once the median is known to ±1%"));
    // The kernel to time: Temper's, or the engine's own (docs/engine.md).
    kernel_ = new QComboBox;
    kernel_->addItem(QStringLiteral("Temper's kernel"), int(KernelChoice::Temper));
    kernel_->addItem(QStringLiteral("Engine's, from source"), int(KernelChoice::EngineSource));
    kernel_->addItem(QStringLiteral("Engine's, temper-probe"), int(KernelChoice::EngineProbe));
    kernel_->setItemData(1, QStringLiteral("Built from your ggml / llama.cpp folder with Temper's tuning hook"), Qt::ToolTipRole);
    kernel_->setItemData(2, QStringLiteral("A temper-probe you built already (advanced)"), Qt::ToolTipRole);
    // Sized to a short text, not its longest item: the sweep dock must not squeeze the model dock.
    kernel_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    kernel_->setMinimumContentsLength(16);
    kernel_->setToolTip(QStringLiteral("Temper's own re-implementation of mmvq, or llama.cpp's own kernel built from your tree "
                                       "with Temper's tuning hook and timed through temper-probe"));
    engine_src_ = new QLineEdit;
    engine_src_->setPlaceholderText(QStringLiteral("ggml or llama.cpp folder"));
    auto* browse_src = new QPushButton(QStringLiteral("Choose…"));
    engine_check_ = new QLabel;
    engine_check_->setWordWrap(true);
    engine_row_ = new QWidget;
    {
      auto* v = new QVBoxLayout(engine_row_);
      v->setContentsMargins(0, 0, 0, 0);
      auto* h = new QHBoxLayout;
      h->addWidget(engine_src_, 1);
      h->addWidget(browse_src);
      v->addLayout(h);
      v->addWidget(engine_check_);
    }
    probe_ = new QLineEdit;
    probe_->setPlaceholderText(QStringLiteral("temper-probe executable"));
    auto* browse_probe = new QPushButton(QStringLiteral("Choose…"));
    probe_row_ = new QWidget;
    {
      auto* h = new QHBoxLayout(probe_row_);
      h->setContentsMargins(0, 0, 0, 0);
      h->addWidget(probe_, 1);
      h->addWidget(browse_probe);
    }
    engine_status_ = new QLabel;
    engine_status_->setWordWrap(true);
    engine_status_->setTextInteractionFlags(Qt::TextSelectableByMouse);  // the log's path can be copied
    connect(kernel_, &QComboBox::currentIndexChanged, this, &SweepPanel::updateKernelRows);
    connect(engine_src_, &QLineEdit::editingFinished, this, [this] { setEngineSource(engine_src_->text()); });
    connect(browse_src, &QPushButton::clicked, this, [this] {
      const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Engine source: a ggml or llama.cpp folder"),
                                                            engine_src_->text());
      if (!dir.isEmpty()) setEngineSource(dir);
    });
    connect(browse_probe, &QPushButton::clicked, this, [this] {
      const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("temper-probe"), probe_->text());
      if (!path.isEmpty()) setProbePath(path);
    });
    auto* form = form_ = new QFormLayout;
    form->addRow(QStringLiteral("Kernel"), kernel_);
    form->addRow(QStringLiteral("Engine source"), engine_row_);
    form->addRow(QStringLiteral("Probe"), probe_row_);
    form->addRow(QString(), engine_status_);
    form->addRow(QStringLiteral("Device"), device_);
    form->addRow(QString(), device_note_);
    form->addRow(QStringLiteral("nwarps"), checkRow(kNwarps, nwarps_));
    form->addRow(QStringLiteral("rows_per_block"), checkRow(kRows, rows_));
    form->addRow(QStringLiteral("ncols"), checkRow(kNcols, ncols_));
    form->addRow(QStringLiteral("Default tables"), engine_);
    form->addRow(QStringLiteral("Time cap"), time_cap_);
    shapes_ = new QListWidget;
    auto* all = new QPushButton(QStringLiteral("All shapes"));
    auto* nothing = new QPushButton(QStringLiteral("None"));
    connect(all, &QPushButton::clicked, this, [this] {
      for (int i = 0; i < shapes_->count(); ++i) shapes_->item(i)->setCheckState(Qt::Checked);
    });
    connect(nothing, &QPushButton::clicked, this, [this] {
      for (int i = 0; i < shapes_->count(); ++i) shapes_->item(i)->setCheckState(Qt::Unchecked);
    });
    start_ = new QPushButton(QStringLiteral("Start sweep"));
    cancel_ = new QPushButton(QStringLiteral("Cancel"));
    cancel_->setEnabled(false);
    connect(start_, &QPushButton::clicked, this, [this] { startSweep(); });
    connect(cancel_, &QPushButton::clicked, this, [this] {
      runner_->cancel();
      cancel_->setEnabled(false);
      Q_EMIT progressText(QStringLiteral("Cancelling…"), 0, 0);
    });
    auto* l = new QVBoxLayout(editor);
    l->addLayout(form);
    auto* sh = new QHBoxLayout;
    sh->addWidget(new QLabel(QStringLiteral("Shapes")));
    sh->addStretch();
    sh->addWidget(all);
    sh->addWidget(nothing);
    l->addLayout(sh);
    l->addWidget(shapes_, 1);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(start_);
    buttons->addWidget(cancel_);
    l->addLayout(buttons);
  }
  stack_->addWidget(none);
  stack_->addWidget(editor);
  stack_->setCurrentIndex(devices_.devices.empty() ? 0 : 1);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(stack_);

  QSettings st;
  PlanGrid g = full_grid(std::string(known_engines().front()));
  if (st.contains(QStringLiteral("sweep/nwarps"))) {
    g.nwarps = parse_list(st.value(QStringLiteral("sweep/nwarps")).toString());
    g.rows_per_block = parse_list(st.value(QStringLiteral("sweep/rows")).toString());
    g.ncols = parse_list(st.value(QStringLiteral("sweep/ncols")).toString());
    g.engine = st.value(QStringLiteral("sweep/engine"), qstr(g.engine)).toString().toStdString();
  }
  setGrid(g);
  setEngineSource(st.value(QStringLiteral("sweep/engineSource")).toString());
  setProbePath(st.value(QStringLiteral("sweep/probe")).toString());
  setKernelChoice(KernelChoice(st.value(QStringLiteral("sweep/kernel"), int(KernelChoice::Temper)).toInt()));
  updateKernelRows();

  connect(doc, &SessionDocument::sessionChanged, this, &SweepPanel::refreshShapes);
  refreshShapes();
  connect(runner_, &SweepRunner::planned, this, [this](const Session& s, double eta) {
    doc_->beginSweep(s);
    Q_EMIT progressText(QStringLiteral("Planned: %1 results, about %2").arg(s.devices.front().plan.items.size()).arg(eta_text(eta)), 0, 0);
  });
  connect(runner_, &SweepRunner::resultsArrived, doc, &SessionDocument::appendResults);
  connect(runner_, &SweepRunner::progress, this, [this](qulonglong done, qulonglong total, const QString& current, double eta) {
    Q_EMIT progressText(QStringLiteral("%1/%2 · %3 · ETA %4").arg(done).arg(total).arg(current, eta_text(eta)), int(done), int(total));
  });
  connect(runner_, &SweepRunner::finished, this, [this](const Session& s) {
    doc_->finishSweep(s);
    setRunning(false);
    QString err;
    for (const auto& d : s.devices)
      if (!d.error.empty()) err += QStringLiteral(" · %1: %2").arg(qstr(d.info.name), qstr(d.error));
    Q_EMIT sweepFinished(QStringLiteral("Sweep %1: %2 results%3").arg(qstr(s.status)).arg(s.results.size()).arg(err));
  });
  connect(runner_, &SweepRunner::buildProgress, this, [this](int done, int total, double eta, const QString& log) {
    const QString text = total == 0 ? QStringLiteral("Engine build: configuring · log %1").arg(log)
                                    : QStringLiteral("Engine build: %1/%2 steps · ETA %3 · log %4")
                                          .arg(done).arg(total).arg(done > 0 ? eta_text(eta) : QStringLiteral("?"), log);
    setEngineStatus(text);
    Q_EMIT progressText(text, done, total);
  });
  connect(runner_, &SweepRunner::engineReady, this, [this](const QString& text) {
    setEngineStatus(text);
    Q_EMIT progressText(text, 0, 0);
  });
  connect(runner_, &SweepRunner::failed, this, [this](const QString& msg) {
    setRunning(false);
    const bool build = msg.startsWith(QStringLiteral("engine "));
    if (kernelChoice() != KernelChoice::Temper) setEngineStatus(msg);
    Q_EMIT sweepFinished(QStringLiteral("Sweep failed: %1").arg(msg));
    showError(build ? QStringLiteral("Engine build failed") : QStringLiteral("Sweep failed"), msg);
  });
}

SweepPanel::~SweepPanel() {
  runner_->cancel();
  runner_->wait();  // devices belong to the backends in devices_, which go with this panel
}

PlanGrid SweepPanel::grid() const {
  PlanGrid g;
  g.nwarps = checked(nwarps_);
  g.rows_per_block = checked(rows_);
  g.ncols = checked(ncols_);
  g.engine = engine_->currentText().toStdString();
  return g;
}

void SweepPanel::setGrid(const PlanGrid& g) {
  setChecked(nwarps_, g.nwarps);
  setChecked(rows_, g.rows_per_block);
  setChecked(ncols_, g.ncols);
  const int i = engine_->findText(qstr(g.engine));
  if (i >= 0) engine_->setCurrentIndex(i);
}

void SweepPanel::saveSettings() const {
  QSettings st;
  const PlanGrid g = grid();
  st.setValue(QStringLiteral("sweep/nwarps"), list_text(g.nwarps));
  st.setValue(QStringLiteral("sweep/rows"), list_text(g.rows_per_block));
  st.setValue(QStringLiteral("sweep/ncols"), list_text(g.ncols));
  st.setValue(QStringLiteral("sweep/engine"), qstr(g.engine));
  st.setValue(QStringLiteral("sweep/kernel"), int(kernelChoice()));
  st.setValue(QStringLiteral("sweep/engineSource"), engineSource());
  st.setValue(QStringLiteral("sweep/probe"), probePath());
}

KernelChoice SweepPanel::kernelChoice() const { return KernelChoice(kernel_->currentData().toInt()); }

void SweepPanel::setKernelChoice(KernelChoice k) {
  const int i = kernel_->findData(int(k));
  kernel_->setCurrentIndex(i >= 0 ? i : 0);
}

QString SweepPanel::engineSource() const { return engine_src_->text(); }

void SweepPanel::setEngineSource(const QString& dir) {
  engine_src_->setText(dir);
  engine_check_->setText(engineCheckLine(dir));
}

QString SweepPanel::engineCheckText() const { return engine_check_->text(); }
QString SweepPanel::firstArch() const {
  return devices_.devices.empty() ? QString() : QString::fromStdString(devices_.devices.front().info.arch);
}
QString SweepPanel::probePath() const { return probe_->text(); }
void SweepPanel::setProbePath(const QString& path) { probe_->setText(path); }
QString SweepPanel::engineStatusText() const { return engine_status_->text(); }

void SweepPanel::updateKernelRows() {
  const KernelChoice k = kernelChoice();
  form_->setRowVisible(engine_row_, k == KernelChoice::EngineSource);
  form_->setRowVisible(probe_row_, k == KernelChoice::EngineProbe);
  form_->setRowVisible(engine_status_, k != KernelChoice::Temper && !engine_status_->text().isEmpty());
  // The engine's own stock config is the baseline there; the tables only pick Temper's default.
  engine_->setEnabled(k == KernelChoice::Temper);
}

void SweepPanel::setEngineStatus(const QString& text) {
  engine_status_->setText(text);
  updateKernelRows();
}

void SweepPanel::showError(const QString& title, const QString& text) {
  if (interactive_) QMessageBox::critical(this, title, text);
}

void SweepPanel::refreshShapes() {
  shapes_->clear();
  uint64_t total = 0;
  for (const auto& s : doc_->shapes()) total += s.bytes_per_token;
  bool any_sweepable = false;
  for (const auto& s : doc_->shapes()) {
    auto* item = new QListWidgetItem(QStringLiteral("%1 · %2% of decode bytes")
                                         .arg(shapeText(s))
                                         .arg(total ? 100.0 * double(s.bytes_per_token) / double(total) : 0, 0, 'f', 1));
    // A type without an mmvq kernel (f16, f32) is listed, unchecked and greyed, saying why.
    const bool sweepable = quant::quant_supported(s.type);
    any_sweepable = any_sweepable || sweepable;
    item->setCheckState(sweepable ? Qt::Checked : Qt::Unchecked);
    if (!sweepable) {
      item->setFlags(item->flags() & ~(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled));
      item->setToolTip(QStringLiteral("%1 has no mmvq kernel: nothing to tune").arg(qstr(type_name(s.type))));
    }
    shapes_->addItem(item);
  }
  const bool can = any_sweepable;
  device_note_->setText(can ? QString()
                        : doc_->shapes().empty()
                            ? QStringLiteral("Open a GGUF model (File → Open) to choose shapes.")
                            : QStringLiteral("Nothing to sweep: no shape of this model has an mmvq kernel (quantized "
                                             "types only; f16 and f32 weights use other kernels)."));
  start_->setEnabled(can && !runner_->isRunning() && hasDevices());
}

bool SweepPanel::startSweep() {
  try {
    if (!hasDevices()) fail(ErrorKind::NoDevice, devices_.why_none);
    if (runner_->isRunning()) fail(ErrorKind::BadInput, "a sweep is already running");
    if (confirm_replace_) {
      if (!confirm_replace_()) return false;
    } else if (doc_->isDirty() && doc_->hasSession() && interactive_ &&
               QMessageBox::question(this, QStringLiteral("Unsaved changes"),
                                     QStringLiteral("The current session has unsaved changes. Start a new sweep anyway?")) != QMessageBox::Yes) {
      return false;
    }
    SweepSetup setup;
    const auto& shapes = doc_->shapes();
    for (int i = 0; i < shapes_->count() && size_t(i) < shapes.size(); ++i)
      if (shapes_->item(i)->checkState() == Qt::Checked) setup.shapes.push_back(shapes[size_t(i)]);
    if (setup.shapes.empty()) fail(ErrorKind::BadInput, "no shape is checked");
    setup.grid = grid();
    validate_grid(setup.grid);
    setup.options.time_cap_s = time_cap_->value();
    setup.options.seed = seed_;
    if (const auto& m = doc_->model()) {
      setup.model = model_identity(*m);
    } else if (doc_->hasSession()) {
      setup.model = doc_->session().model;
    }
    const gpu::DeviceChoice entry = devices_.devices[size_t(device_->currentIndex())];
    const KernelChoice kernel = kernelChoice();
    if (kernel == KernelChoice::Temper) {
      saveSettings();
      runner_->start(std::move(setup), [entry] {
        std::vector<std::unique_ptr<Device>> v;
        v.push_back(entry.backend->open(entry.info.index));
        return v;
      }, journal_dir_);
      Q_EMIT progressText(QStringLiteral("Measuring copy bandwidth and planning…"), 0, 0);
    } else {
      // The engine's kernel is swept as the engine launches it: the launches (fused gate/up,
      // MUL_MAT_ID) whose matrices are among the checked shapes.
      if (const auto& m = doc_->model(); m && !m->launches.empty()) {
        std::vector<Shape> launches;
        for (const Shape& l : m->launches)
          if (std::any_of(setup.shapes.begin(), setup.shapes.end(), [&](const Shape& s) { return s.shape() == plain_shape(l); }))
            launches.push_back(l);
        setup.shapes = std::move(launches);
      }
      EngineRequest request;
      if (kernel == KernelChoice::EngineProbe) {
        if (probePath().isEmpty()) fail(ErrorKind::BadInput, "choose a temper-probe executable (or build the engine from its source)");
        request.probe = probePath().toStdString();
      } else {
        bool ok = false;
        const QString line = engineCheckLine(engineSource(), &ok);
        engine_check_->setText(line);
        if (!ok) fail(ErrorKind::BadInput, "engine source " + engineSource().toStdString() + ": " + line.toStdString());
        request.source = engineSource().toStdString();
        // Built for the picked device's arch (HIP: refused here when the hipcc is too old).
        request.build = engine::build_options(entry.info.arch);
      }
      saveSettings();
      runner_->startEngine(std::move(setup), std::move(request), journal_dir_);
      const QString text = kernel == KernelChoice::EngineSource ? QStringLiteral("Engine build: checking the cache…")
                                                                : QStringLiteral("Starting temper-probe…");
      setEngineStatus(text);
      Q_EMIT progressText(text, 0, 0);
    }
    setRunning(true);
    return true;
  } catch (const Error& e) {
    if (kernelChoice() != KernelChoice::Temper) setEngineStatus(QString::fromStdString(e.what()));
    if (interactive_) QMessageBox::warning(this, QStringLiteral("Cannot start the sweep"), QString::fromStdString(e.what()));
    return false;
  }
}

void SweepPanel::setRunning(bool running) {
  const auto& shapes = doc_->shapes();
  const bool any = std::any_of(shapes.begin(), shapes.end(), [](const Shape& s) { return quant::quant_supported(s.type); });
  start_->setEnabled(!running && any);
  cancel_->setEnabled(running);
}

}  // namespace temper::ui
