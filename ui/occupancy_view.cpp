#include "occupancy_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "tune_view.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/kernel_cache.h"
#include "temper/quant/reference.h"

namespace temper::ui {
namespace {
constexpr int kColumns = 10;
constexpr int kAgprColumn = 3, kBlocksColumn = 6, kLimiterColumn = 9;
}  // namespace

OccupancyView::OccupancyView(SessionDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  codeobj_dir_ = QString::fromStdString(default_codeobj_dir().string());
  target_ = new QComboBox;
  // Its longest entry would otherwise set the tab's minimum width and squeeze the model dock.
  target_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  target_->setMinimumContentsLength(24);
  target_->addItem(QStringLiteral("recording device (runtime attributes)"), QString());
  std::set<std::string> arches;
  for (const auto& g : gpu_database())
    if (g.is_amd() && arches.insert(g.arch).second)
      target_->addItem(QStringLiteral("%1 · %2 (static, code objects)").arg(qstr(g.arch), qstr(g.names.front())), qstr(g.arch));
  auto* dirButton = new QPushButton(QStringLiteral("Code objects…"));
  dirButton->setToolTip(QStringLiteral("Directory with the per-arch code objects of a HIP build (codeobj/)"));
  note_ = new QLabel;
  note_->setWordWrap(true);
  cancelCompile_ = new QPushButton(QStringLiteral("Cancel"));
  cancelCompile_->setToolTip(QStringLiteral("Stop compiling code objects"));
  cancelCompile_->hide();
  table_ = new QTableWidget;
  table_->setColumnCount(kColumns);
  setVocabulary(false);
  fitColumnsToView(table_);  // in a narrow tab a header gives way, a number never
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(QStringLiteral("Target:")));
  top->addWidget(target_, 1);
  top->addWidget(dirButton);
  auto* lay = new QVBoxLayout(this);
  lay->addLayout(top);
  auto* noteRow = new QHBoxLayout;
  noteRow->addWidget(note_, 1);
  noteRow->addWidget(cancelCompile_);
  lay->addLayout(noteRow);
  lay->addWidget(table_, 1);
  compileTick_ = new QTimer(this);
  compileTick_->setInterval(1000);
  connect(compileTick_, &QTimer::timeout, this, &OccupancyView::showCompileProgress);
  connect(target_, &QComboBox::currentIndexChanged, this, &OccupancyView::rebuild);
  connect(cancelCompile_, &QPushButton::clicked, this, [this] { compileCancel_ = true; });
  connect(dirButton, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, QStringLiteral("Code object directory"), codeobj_dir_);
    if (!d.isEmpty()) setCodeObjectDir(d);
  });
  connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
    const QVariant v = table_->item(row, 0)->data(Qt::UserRole);
    Selection s = doc_->selection();
    s.config = Config{v.toPoint().x(), v.toPoint().y()};
    doc_->select(s);
  });
  connect(doc, &SessionDocument::sessionChanged, this, &OccupancyView::rebuild);
  connect(doc, &SessionDocument::resultsChanged, this, &OccupancyView::rebuild);
  connect(doc, &SessionDocument::selectionChanged, this, &OccupancyView::rebuild);
  rebuild();
}

OccupancyView::~OccupancyView() { stopCompile(); }

void OccupancyView::stopCompile() {
  if (!compiler_) return;
  compileCancel_ = true;
  compiler_->wait();
  delete compiler_;
  compiler_ = nullptr;
}

void OccupancyView::compileOnDemand(const std::string& arch, GgmlType type, int ncols) {
  const std::string key = arch + "/" + std::to_string(static_cast<uint32_t>(type)) + "/" + std::to_string(ncols);
  if (compiled_.count(key) || compiler_ || !kernel_type_supported(type)) return;
  const GpuSpec* g = find_gpu(arch);
  if (!g) return;
  compileCancel_ = false;
  compileKey_ = key;
  compileWhat_ = QStringLiteral("%1 code objects for %2 ncols %3").arg(qstr(arch), qstr(type_name(type))).arg(ncols);
  compileNote_ = QStringLiteral("Compiling %1…").arg(compileWhat_);
  compileProgress_ = CompileProgress{};
  sinceProgress_.start();
  compileTick_->start();
  cancelCompile_->show();
  auto post = [this](auto fn) { QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection); };
  const GpuSpec spec = *g;
  compiler_ = QThread::create([this, post, arch, type, ncols, key, spec] {
    std::vector<ConfigOccupancy> found;
    QString error;
    try {
      KernelCache cache(KernelToolchain::Hip, arch, KernelArtifact::CodeObject);
      const KernelPair pair{type, ncols};
      const auto paths = cache.ensure(std::span(&pair, 1), [&](const CompileProgress& p) {
        post([this, p] {
          compileProgress_ = p;
          sinceProgress_.restart();
          showCompileProgress();
        });
      }, &compileCancel_);
      found = static_mmvq_occupancy(spec, load_code_objects(paths.at(0)));
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    post([this, arch, key, found = std::move(found), error] {
      compiler_->wait();
      delete compiler_;
      compiler_ = nullptr;
      compileTick_->stop();
      cancelCompile_->hide();
      compiled_.insert(key);  // also after a failure: the note says why, no endless retries
      auto& all = cache_[arch];
      all.insert(all.end(), found.begin(), found.end());
      compileNote_ = error.isEmpty() ? QString() : QStringLiteral("Could not compile code objects: %1").arg(error);
      rebuild();
    });
  });
  compiler_->start();
}

void OccupancyView::showCompileProgress() {
  if (!compiler_) return;
  CompileProgress p = compileProgress_;  // as the CLI prints it, moved on by the time since it came
  const double since = double(sinceProgress_.elapsed()) / 1000;
  p.elapsed_s += since;
  if (p.eta_s > 0) p.eta_s = std::max(1.0, p.eta_s - since);
  compileNote_ = QStringLiteral("Compiling %1: %2").arg(compileWhat_, qstr(compile_progress_text(p)));
  note_->setText(compileNote_);
}

void OccupancyView::setTarget(const QString& arch) {
  const int i = target_->findData(arch);
  if (i >= 0) target_->setCurrentIndex(i);
}

void OccupancyView::setCodeObjectDir(const QString& dir) {
  codeobj_dir_ = dir;
  compiled_.clear();
  cache_.clear();
  load_errors_.clear();
  rebuild();
}

const std::vector<ConfigOccupancy>& OccupancyView::staticFor(const std::string& arch) {
  auto it = cache_.find(arch);
  if (it != cache_.end()) return it->second;
  std::vector<ConfigOccupancy> v;
  try {
    const GpuSpec* g = find_gpu(arch);
    const auto objects = load_code_objects_for(codeobj_dir_.toStdString(), arch);
    if (g) v = static_mmvq_occupancy(*g, objects);
  } catch (const Error& e) {
    load_errors_[arch] = QString::fromStdString(e.what());
  }
  return cache_[arch] = std::move(v);
}

QString OccupancyView::noteText() const { return note_->text(); }

void OccupancyView::setVocabulary(bool nvidia) {
  // Short headers, so every column fits the tab at the default window size; the tooltips say more.
  struct Column {
    const char *cuda, *amd, *tip;
  };
  static const Column columns[] = {
      {"config", "config", "nwarps × rows_per_block; the default and the winner are marked"},
      {"threads", "threads", "threads per block"},
      {"registers", "VGPR / SGPR", "registers per thread (AMD: vector / scalar registers)"},
      {"", "AGPR", "accumulation registers per lane (CDNA's matrix registers; counted in the VGPRs on CDNA2/3, "
                   "where they share one file; 0 on GCN and RDNA)"},
      {"shared B", "LDS B", "static shared memory (AMD: LDS) per block, bytes"},
      {"local B", "scratch B", "local memory (AMD: scratch) per thread, bytes"},
      {"blocks/SM", "blocks/CU", "resident blocks per SM (AMD: per compute unit)"},
      {"warps/SM", "waves/SIMD", "resident warps per SM of its maximum (AMD: waves per SIMD)"},
      {"occupancy", "occupancy", "resident warps (waves) of the maximum"},
      {"limiter", "limiter", "the resource that caps the resident blocks"}};
  for (int c = 0; c < kColumns; ++c) {
    auto* item = new QTableWidgetItem(QString::fromUtf8(nvidia ? columns[c].cuda : columns[c].amd));
    item->setToolTip(QString::fromUtf8(columns[c].tip));
    table_->setHorizontalHeaderItem(c, item);
  }
  table_->setColumnHidden(kAgprColumn, nvidia);
}

namespace {
// The limiting resource as the vendor names it.
QString limiterText(OccupancyLimiter l, bool nvidia) {
  if (!nvidia) return qstr(limiter_name(l));
  switch (l) {
    case OccupancyLimiter::Waves: return QStringLiteral("warps per SM");
    case OccupancyLimiter::Blocks: return QStringLiteral("blocks per SM");
    case OccupancyLimiter::Registers: return QStringLiteral("registers");
    case OccupancyLimiter::Lds: return QStringLiteral("shared memory");
    default: return qstr(limiter_name(l));
  }
}
}  // namespace

void OccupancyView::fillRow(int row, Config c, const QString& mark, const KernelResources& k, const Occupancy& o,
                            const GpuSpec& g) {
  const bool nv = g.is_nvidia();
  auto set = [&](int col, const QString& text) {
    auto* item = new QTableWidgetItem(text);
    if (col > 0 && col < kLimiterColumn) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);  // numbers; the limiter is words
    table_->setItem(row, col, item);
  };
  set(0, mark.isEmpty() ? configText(c) : QStringLiteral("%1 · %2").arg(configText(c), mark));
  table_->item(row, 0)->setData(Qt::UserRole, QPoint(c.nwarps, c.rows_per_block));
  if (!mark.isEmpty()) {
    QFont f = table_->font();
    f.setBold(true);
    table_->item(row, 0)->setFont(f);
  }
  set(1, QString::number(o.threads_per_block));
  set(2, nv ? QString::number(k.vgprs) : QStringLiteral("%1 / %2").arg(k.vgprs).arg(k.sgprs));
  set(kAgprColumn, nv ? QString() : QString::number(k.agprs));
  set(4, QString::number(k.lds_bytes));
  set(5, QString::number(k.scratch_bytes));
  set(kBlocksColumn, QString::number(o.blocks_per_cu));
  // CUDA counts warps per SM (its sub-partitions together); AMD waves per SIMD.
  const int per = nv ? std::max(1, g.simds_per_cu) : 1;
  set(7, QStringLiteral("%1 / %2").arg(o.waves_per_simd * per, 0, 'f', nv ? 0 : 1).arg(o.max_waves_per_simd * per));
  set(8, QStringLiteral("%1%").arg(100 * o.occupancy, 0, 'f', 0));
  set(kLimiterColumn, limiterText(o.limiter, nv) + (o.why.empty() ? QString() : QStringLiteral(": ") + qstr(o.why)));
}

// Blocks count per CU, per WGP on RDNA (docs/occupancy.md), per SM on NVIDIA.
void OccupancyView::setUnitHeader(const GpuSpec& g) {
  table_->horizontalHeaderItem(kBlocksColumn)->setText(QStringLiteral("blocks/%1").arg(qstr(occupancy_unit(g).name)));
}

void OccupancyView::rebuild() {
  table_->setRowCount(0);
  const Selection& sel = doc_->selection();
  const QString arch = target_->currentData().toString();
  if (!sel.valid()) {
    note_->setText(QStringLiteral("Select a shape to see the occupancy of its configs."));
    return;
  }
  const QString what = QStringLiteral("%1 at ncols %2").arg(shapeText(sel)).arg(sel.ncols);
  // Marks as the CLI prints them: the engine's default and the sweep's winner at this shape.
  const Verdict* verdict = doc_->hasSession() ? find_verdict(doc_->session(), group_key(doc_->device(), sel, sel.ncols)) : nullptr;
  auto markOf = [&](Config c) {
    if (!verdict) return QString();
    if (verdict->is_winner() && verdict->config == c) return QStringLiteral("★ winner");
    return verdict->default_config == c ? QStringLiteral("default") : QString();
  };
  if (!quant::quant_supported(sel.type)) {
    note_->setText(QStringLiteral("%1 has no mmvq kernel: llama.cpp does not run it through mmvq, so there is nothing to tune "
                                  "and no occupancy to show.").arg(qstr(type_name(sel.type))));
    return;
  }
  if (arch.isEmpty()) {
    const SessionDevice* d = doc_->currentDevice();
    if (!d) {
      note_->setText(QStringLiteral("No recording device: open a session, or pick an AMD target for static occupancy."));
      return;
    }
    const GpuSpec* g = device_spec(*d);
    setVocabulary(g ? g->is_nvidia() : d->info.arch.rfind("sm_", 0) == 0);
    if (g && !g->is_nvidia()) setUnitHeader(*g);
    std::set<Config> seen;
    std::vector<const Result*> rows;
    QStringList missing;  // configs of this shape the table cannot show, and why
    for (const auto& r : doc_->session().results) {
      if (r.group() != group_key(d->info.index, sel, sel.ncols)) continue;
      if (r.kernel && g && seen.insert(r.config).second) rows.push_back(&r);
      else if (!r.kernel && r.status == ResultStatus::Invalid)
        missing << QStringLiteral("%1 (never launched: %2)").arg(configText(r.config), qstr(r.failure).toHtmlEscaped());
      else if (!r.kernel)
        missing << QStringLiteral("%1 (%2, no kernel attributes recorded)").arg(configText(r.config), qstr(result_status_name(r.status)));
    }
    for (const auto& e : d->plan.excluded)
      if (e.shape() == sel.shape() && e.ncols == sel.ncols && !seen.count(e.config) &&
          std::none_of(missing.begin(), missing.end(), [&](const QString& m) { return m.startsWith(configText(e.config) + QLatin1Char(' ')); }))
        missing << QStringLiteral("%1 (excluded by the plan: %2)").arg(configText(e.config), qstr(e.reason).toHtmlEscaped());
    std::sort(rows.begin(), rows.end(), [](const Result* a, const Result* b) { return a->config < b->config; });
    for (const Result* rp : rows) {
      const Result& r = *rp;
      const KernelResources k = resources_from_attributes(*r.kernel, d->info.warp_size);
      const Occupancy o = occupancy_from_attributes(*g, *r.kernel, r.config, d->info.warp_size);
      const int row = table_->rowCount();
      table_->insertRow(row);
      fillRow(row, r.config, markOf(r.config), k, o, *g);
    }
    QString note = !g ? QStringLiteral("%1 is not in the GPU spec database: occupancy rules unknown.").arg(qstr(d->info.name))
                   : seen.empty() ? QStringLiteral("The session recorded no kernel attributes for %1 on %2.").arg(what, qstr(d->info.name))
                                  : QStringLiteral("%1 on %2 (%3), from the runtime's kernel attributes.").arg(what, qstr(d->info.name), qstr(d->info.arch));
    if (!missing.isEmpty()) note += QStringLiteral(" Not shown: %1.").arg(missing.join(QStringLiteral("; ")));
    note_->setText(note);
  } else {
    setVocabulary(false);
    if (const GpuSpec* g = find_gpu(arch.toStdString())) setUnitHeader(*g);
    // Only the stock config is known for a target nobody measured: the engine's table for that arch.
    const std::string engine = doc_->hasSession() && !doc_->session().grid.engine.empty() ? doc_->session().grid.engine
                                                                                          : std::string(defaults::known_engines().front());
    auto stockMark = [&](Config c) {
      try {
        const std::string a = arch.toStdString();
        return defaults::default_config(engine, a, sel.type, sel.ncols, sel.k, defaults::engine_warp_size(a)) == c
                   ? QStringLiteral("default") : QString();
      } catch (const Error&) {
        return QString();
      }
    };
    const auto& all = staticFor(arch.toStdString());
    for (const auto& c : all) {
      if (c.instance.type != sel.type || c.instance.ncols != sel.ncols) continue;
      const int row = table_->rowCount();
      table_->insertRow(row);
      fillRow(row, c.instance.config, stockMark(c.instance.config), c.resources, c.occupancy, *find_gpu(arch.toStdString()));
    }
    const auto err = load_errors_.find(arch.toStdString());
    // Not built for this arch: compiled on demand (only with the build's own code object directory).
    const bool default_dir = codeobj_dir_ == QString::fromStdString(default_codeobj_dir().string());
    if (table_->rowCount() == 0 && err == load_errors_.end() && default_dir)
      compileOnDemand(arch.toStdString(), sel.type, sel.ncols);
    const std::string key = arch.toStdString() + "/" + std::to_string(static_cast<uint32_t>(sel.type)) + "/" +
                            std::to_string(sel.ncols);
    if (compiler_ || (!compileNote_.isEmpty() && compileKey_ == key))
      note_->setText(compileNote_);
    else if (err != load_errors_.end())
      note_->setText(QStringLiteral("Could not read code objects: %1").arg(err->second));
    else if (all.empty())
      note_->setText(QStringLiteral("No code objects for %1 in %2. Build with TEMPER_HIP=ON and this arch in "
                                    "TEMPER_HIP_ARCHS, or choose a directory.").arg(arch, codeobj_dir_));
    else
      note_->setText(QStringLiteral("%1 on %2: static, from the compiled code objects (every K of this type shares the kernel).")
                         .arg(what, arch));
  }
  // Mark the selected config's row.
  for (int r = 0; r < table_->rowCount(); ++r) {
    const QPoint p = table_->item(r, 0)->data(Qt::UserRole).toPoint();
    if (sel.config && Config{p.x(), p.y()} == *sel.config) table_->selectRow(r);
  }
}

}  // namespace temper::ui
