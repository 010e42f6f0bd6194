#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QRegularExpression>
#include <QAbstractSpinBox>
#include <QWheelEvent>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QUndoStack>
#include <QVBoxLayout>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <new>

#include "fs_path.h"
#include "approval_panel.h"
#include "comparison_view.h"
#include "distribution_view.h"
#include "export_dialog.h"
#include "heatmap_widget.h"
#include "model_panel.h"
#include "occupancy_view.h"
#include "roofline_view.h"
#include "sweep_panel.h"
#include "exports.h"
#include "tune_panel.h"
#include "tune_view.h"
#include "temper/error.h"
#include "temper/input.h"

// Resources of a static library are registered by hand (outside any namespace, as Qt requires).
static void initTemperResources() {
  static bool done = false;
  if (done) return;
  done = true;
  Q_INIT_RESOURCE(temper);
#if defined(TEMPER_HAS_DEMO)
  Q_INIT_RESOURCE(demo);
#endif
}

namespace temper::ui {

namespace {
const char* kDemoResource = ":/demo-session.json";
constexpr int kLayoutVersion = 1;  // 1: model and sweep docks tabbed on the left (older layouts are not restored)

// Sniffs the magic through the one input path (a FIFO or a device never blocks the window); anything
// that cannot be read is left to the session reader, whose error names the file and the problem.
bool looksLikeGguf(const QString& path) {
  try {
    const InputFile in = open_input(fsPath(path), 0, "file");
    char magic[4] = {};
    const bool gguf = ::read(in.fd, magic, 4) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
    ::close(in.fd);
    return gguf;
  } catch (const Error&) {
    return false;
  }
}

// A page that scrolls down, never sideways: its width is the tab's.
QScrollArea* scrolledPage(QWidget* page) {
  auto* s = new QScrollArea;
  s->setWidget(page);
  s->setWidgetResizable(true);
  s->setFrameShape(QFrame::NoFrame);
  s->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  return s;
}

// Spin boxes and combo boxes take the wheel only once the user has clicked or tabbed into them:
// scrolling a form over them scrolls the form and changes nothing.
class WheelGuard : public QObject {
 public:
  using QObject::QObject;
  bool eventFilter(QObject* o, QEvent* e) override {
    auto* w = qobject_cast<QWidget*>(o);
    if (e->type() != QEvent::Wheel || !w || w->hasFocus()) return false;
    if (QWidget* parent = w->parentWidget()) QApplication::sendEvent(parent, e);  // the page scrolls instead
    return true;
  }
};

// One clear line for a file that could not be opened: which file and what was wrong. Temper's own
// errors already say both; anything else (the standard library's text) is put in those words.
QString openErrorText(const QString& path, const std::exception& e) {
  const QString name = QFileInfo(path).fileName();
  QString why = QString::fromStdString(e.what());
  if (const auto* fe = dynamic_cast<const std::filesystem::filesystem_error*>(&e))
    why = QString::fromStdString(fe->code().message());
  else if (dynamic_cast<const std::bad_alloc*>(&e))
    why = QStringLiteral("too large to open (out of memory)");
  else if (!dynamic_cast<const Error*>(&e))
    why = QStringLiteral("unexpected error: ") + why;
  return why.contains(name) ? why : path + QStringLiteral(": ") + why;
}

// What a user reads first when a file does not open: a plain sentence about the file, naming it; the
// reader's precise line (openErrorText) is its detail.
QString plainOpenError(const QString& path, const std::exception& e, const QString& detail) {
  const QString name = QFileInfo(path).fileName();
  const QFileInfo info(path);
  const auto* te = dynamic_cast<const Error*>(&e);
  const QString what = QString::fromStdString(e.what());
  if (!info.exists() && !info.isSymLink()) return QStringLiteral("%1 does not exist (any more): it may have been moved or deleted.").arg(name);
  if (info.isDir()) return QStringLiteral("%1 is a folder: open a GGUF model, a session, a tuning profile or a tune journal in it.").arg(name);
  if (!info.isFile()) return QStringLiteral("%1 is not a regular file (a pipe or a device, FIFO): Temper opens files only.").arg(name);
  if (dynamic_cast<const std::bad_alloc*>(&e)) return QStringLiteral("%1 is too large to open.").arg(name);
  if (!info.isReadable()) return QStringLiteral("Temper may not read %1: its permissions do not allow it.").arg(name);
  if (info.size() == 0) return QStringLiteral("%1 is empty: it holds no model, session, profile or journal.").arg(name);
  if (te && te->kind() == ErrorKind::Io) return QStringLiteral("%1 could not be read from the disk.").arg(name);
  if (looksLikeGguf(path)) {
    // The reader names the byte where the header stopped making sense: at the end, the file is cut short.
    const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("byte (\\d+)")).match(what);
    const bool at_end = m.hasMatch() && m.captured(1).toLongLong() + 4096 >= info.size();
    if (at_end || what.contains(QStringLiteral("expected at most")) || what.contains(QStringLiteral("end of file")))
      return QStringLiteral("This GGUF file is cut short: %1 ends before its own header says it does, as a download that "
                            "stopped early would (%2 bytes on disk).").arg(name).arg(info.size());
    return QStringLiteral("This GGUF file is damaged: %1's header holds a value no GGUF writer makes.").arg(name);
  }
  if (what.contains(QStringLiteral("byte 0: magic")) || detail.contains(QStringLiteral("not JSON")) || detail.contains(QStringLiteral("not valid JSON")) ||
      what.contains(QStringLiteral("parse error")) || what.contains(QStringLiteral("invalid JSON")))
    return QStringLiteral("%1 is not a file Temper reads: not a GGUF model, and not a session, profile or journal "
                          "(those are JSON).").arg(name);
  if (what.contains(QStringLiteral("newer")))
    return QStringLiteral("%1 was written by a newer Temper: update Temper to open it.").arg(name);
  return QStringLiteral("%1 is not a session, profile or journal this Temper can read: one of its fields is not what it expects.").arg(name);
}

// A file's JSON object when it is one (a profile or a session), else null; never throws.
nlohmann::json jsonOf(const QString& path) {
  try {
    return read_json_input(fsPath(path), "file");
  } catch (const std::exception&) {
    return nullptr;
  }
}
}  // namespace

MainWindow::MainWindow(std::vector<std::unique_ptr<Backend>> backends, QWidget* parent)
    : QMainWindow(parent), doc_(new SessionDocument(this)) {
  initTemperResources();
  setObjectName(QStringLiteral("MainWindow"));
  setAcceptDrops(true);
  model_panel_ = new ModelPanel(doc_);
  sweep_panel_ = new SweepPanel(doc_, std::move(backends));
  sweep_panel_->setJournalDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) + QStringLiteral("/journals"));
  heatmap_ = new HeatmapWidget(doc_);
  roofline_ = new RooflineView(doc_);
  occupancy_ = new OccupancyView(doc_);
  distribution_ = new DistributionView(doc_);
  approval_ = new ApprovalPanel(doc_);
  tune_ = new TunePanel(doc_);
  tune_->setArch(sweep_panel_->firstArch());

  // Central: which session this is, then the views.
  header_ = new QLabel;
  header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  header_->setWordWrap(true);  // a long device name must not widen the central area
  metric_ = new QComboBox;
  for (HeatMetric m : kHeatMetrics) metric_->addItem(metricName(m), int(m));
  connect(metric_, &QComboBox::currentIndexChanged, this,
          [this] { heatmap_->setMetric(HeatMetric(metric_->currentData().toInt())); });
  auto* heatPage = new QWidget;
  {
    auto* l = new QVBoxLayout(heatPage);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(QStringLiteral("Colour by:")));
    row->addWidget(metric_);
    row->addStretch();
    l->addLayout(row);
    l->addWidget(heatmap_, 1);
  }
  tabs_ = new QTabWidget;
  tabs_->addTab(heatPage, QStringLiteral("Heatmap"));
  tabs_->addTab(roofline_, QStringLiteral("Roofline"));
  tabs_->addTab(occupancy_, QStringLiteral("Occupancy"));
  tabs_->addTab(distribution_, QStringLiteral("Samples"));
  tabs_->addTab(approval_, QStringLiteral("Approval"));
  // The tune pages are one column as wide as the tab: they scroll down, never sideways.
  tabs_->addTab(scrolledPage(tune_), QStringLiteral("Tune && bench"));
  tune_view_ = new TuneView;
  tabs_->addTab(scrolledPage(tune_view_), QStringLiteral("Tune result"));
  tune_compare_ = new TuneComparison;
  tabs_->addTab(scrolledPage(tune_compare_), QStringLiteral("Compare tunes"));
  auto* central = new QWidget;
  auto* cl = new QVBoxLayout(central);
  cl->addWidget(header_);
  cl->addWidget(tabs_, 1);
  setCentralWidget(central);

  auto* modelDock = new QDockWidget(QStringLiteral("Model"), this);
  modelDock->setObjectName(QStringLiteral("ModelDock"));
  modelDock->setWidget(model_panel_);
  addDockWidget(Qt::LeftDockWidgetArea, modelDock);
  // The sweep set-up shares the left side with the model (a tab each): the views in the centre get
  // the window's width, not what two docks leave of it.
  auto* sweepDock = new QDockWidget(QStringLiteral("Sweep"), this);
  sweepDock->setObjectName(QStringLiteral("SweepDock"));
  sweepDock->setWidget(sweep_panel_);
  addDockWidget(Qt::LeftDockWidgetArea, sweepDock);
  tabifyDockWidget(modelDock, sweepDock);
  modelDock->raise();

  status_ = new QLabel;
  progress_ = new QProgressBar;
  progress_->setMaximumWidth(220);
  progress_->hide();
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  prompts_.question = [this](const QString& title, const QString& text, QMessageBox::StandardButtons buttons) {
    return interactive_ ? QMessageBox::question(this, title, text, buttons) : QMessageBox::Cancel;
  };
  prompts_.saveFile = [this](const QString& title, const QString& suggested, const QString& filter) {
    return interactive_ ? QFileDialog::getSaveFileName(this, title, suggested, filter) : QString();
  };
  sweep_panel_->setConfirmReplace([this] { return confirmDiscard(); });
  buildMenus();
  auto* viewMenu = menuBar()->findChild<QMenu*>(QStringLiteral("ViewMenu"));
  if (viewMenu) {
    viewMenu->addAction(modelDock->toggleViewAction());
    viewMenu->addAction(sweepDock->toggleViewAction());
  }

  connect(doc_, &SessionDocument::sessionChanged, this, &MainWindow::updateTitle);
  connect(doc_, &SessionDocument::sessionChanged, this, [this, modelDock] {
    QTimer::singleShot(0, this, [this, modelDock] {
      if (isVisible() && modelDock->width() < std::min(model_panel_->naturalWidth(), width() / 2)) applyDefaultDockSizes();
    });
  });
  connect(doc_, &SessionDocument::dirtyChanged, this, &MainWindow::updateTitle);
  connect(doc_, &SessionDocument::resultsChanged, this, &MainWindow::updateTitle);
  connect(sweep_panel_, &SweepPanel::openSessionRequested, this, &MainWindow::openDialog);
  connect(sweep_panel_, &SweepPanel::openDemoRequested, this, [this] { openDemo(); });
  connect(sweep_panel_, &SweepPanel::progressText, this, [this](const QString& text, int done, int total) {
    status_->setText(text);
    progress_->setVisible(true);
    progress_->setRange(0, std::max(total, 0));
    progress_->setValue(done);
  });
  connect(sweep_panel_, &SweepPanel::sweepFinished, this, [this](const QString& text) {
    status_->setText(text);
    progress_->hide();
  });
  connect(approval_, &ApprovalPanel::exportRequested, this, &MainWindow::exportDialog);
  connect(tune_, &TunePanel::progressText, this, [this](const QString& text, int done, int total) {
    status_->setText(text);
    progress_->setVisible(true);
    progress_->setRange(0, std::max(total, 0));
    progress_->setValue(done);
  });
  connect(tune_, &TunePanel::showProfileRequested, this, [this](const QString& path) {
    if (path.isEmpty()) showError(QStringLiteral("No profile"), QStringLiteral("Choose a profile to show."));
    else openPath(path);
  });
  connect(tune_, &TunePanel::finished, this, [this](const QString& text) {
    status_->setText(text);
    progress_->hide();
  });
  // A finished live tune shows as any opened one: its journal (steps, replay) and the profile it installed.
  connect(tune_->runner(), &TuneRunner::tuneDone, this, [this](const QString& journal) {
    try {
      showTune(journal);
    } catch (const std::exception& e) {
      status_->setText(QStringLiteral("The tune finished, but its journal does not read: %1").arg(QString::fromStdString(e.what())));
    }
  });
  auto* guard = new WheelGuard(this);
  for (QAbstractSpinBox* spin : findChildren<QAbstractSpinBox*>()) {
    spin->setFocusPolicy(Qt::StrongFocus);
    spin->installEventFilter(guard);
  }
  for (QComboBox* combo : findChildren<QComboBox*>()) {
    combo->setFocusPolicy(Qt::StrongFocus);
    combo->installEventFilter(guard);
  }

  QSettings st;
  resize(1400, 860);
  restoreGeometry(st.value(QStringLiteral("window/geometry")).toByteArray());
  default_layout_ = !restoreState(st.value(QStringLiteral("window/state")).toByteArray(), kLayoutVersion);
  tabs_->setCurrentIndex(st.value(QStringLiteral("window/tab"), 0).toInt());
  metric_->setCurrentIndex(st.value(QStringLiteral("view/metric"), 0).toInt());
  updateTitle();
  status_->setText(sweep_panel_->hasDevices() ? QStringLiteral("Ready") : QStringLiteral("No GPU found: sessions open read-only"));
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  QAction* open = file->addAction(QStringLiteral("&Open…"), this, &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  QAction* demo = file->addAction(QStringLiteral("Open &demo session"), this, [this] { openDemo(); });
  demo->setEnabled(hasDemo());
  file->addAction(QStringLiteral("Compare with &tune…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Compare with tune"),
                                                      QSettings().value(QStringLiteral("open/dir")).toString(),
                                                      QStringLiteral("Profiles and tune journals (*.json *.journal);;All files (*)"));
    if (!path.isEmpty()) compareTuneWith(path);
  });
  file->addAction(QStringLiteral("&Compare with session…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Compare with session"),
                                                      QSettings().value(QStringLiteral("open/dir")).toString(),
                                                      QStringLiteral("Sessions (*.json);;All files (*)"));
    if (!path.isEmpty()) compareWith(path);
  });
  recent_menu_ = file->addMenu(QStringLiteral("Open &recent"));
  rebuildRecentMenu();
  file->addSeparator();
  QAction* save = file->addAction(QStringLiteral("&Save session"), this, [this] { this->save(false); });
  save->setShortcut(QKeySequence::Save);
  QAction* saveAs = file->addAction(QStringLiteral("Save session &as…"), this, [this] { this->save(true); });
  saveAs->setShortcut(QKeySequence::SaveAs);
  file->addAction(QStringLiteral("Save a&pprovals as profile…"), this, [this] { saveApprovals(); })
      ->setToolTip(QStringLiteral("The approvals and notes as a Temper profile, to load again or export later"));
  file->addAction(QStringLiteral("&Load approvals from profile…"), this, &MainWindow::loadApprovalsDialog);
  QAction* exp = file->addAction(QStringLiteral("&Export…"), this, &MainWindow::exportDialog);
  exp->setShortcut(QKeySequence(QStringLiteral("Ctrl+E")));
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* edit = menuBar()->addMenu(QStringLiteral("&Edit"));
  QAction* undo = doc_->undoStack()->createUndoAction(this, QStringLiteral("&Undo"));
  undo->setShortcut(QKeySequence::Undo);
  QAction* redo = doc_->undoStack()->createRedoAction(this, QStringLiteral("&Redo"));
  redo->setShortcut(QKeySequence::Redo);
  edit->addAction(undo);
  edit->addAction(redo);

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  view->setObjectName(QStringLiteral("ViewMenu"));
  const char* tabs[] = {"&Heatmap", "&Roofline", "&Occupancy", "&Samples", "&Approval", "&Tune && bench", "Tune r&esult", "&Compare tunes"};
  for (int i = 0; i < int(std::size(tabs)); ++i) {
    QAction* a = view->addAction(QString::fromUtf8(tabs[i]), this, [this, i] { tabs_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)));
  }
  view->addSeparator();

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  QAction* docs = help->addAction(QStringLiteral("&Documentation"), this, [this] { showHelp(QStringLiteral("gui.md")); });
  docs->setShortcut(QKeySequence::HelpContents);
  help->addAction(QStringLiteral("&About Temper"), this, &MainWindow::showAbout);
  help->addAction(QStringLiteral("About &Qt"), qApp, &QApplication::aboutQt);
}

QString MainWindow::headerText() const {
  if (doc_->hasSession()) {
    const Session& s = doc_->session();
    QString t = QStringLiteral("<b>%1</b> · %2").arg(qstr(s.model.file_name).toHtmlEscaped(), doc_->provenanceText().toHtmlEscaped());
    if (doc_->isReadOnly()) t += QStringLiteral(" · read-only");
    if (s.status != "complete") t += QStringLiteral(" · %1").arg(qstr(s.status));
    return t;
  }
  if (doc_->model()) return QStringLiteral("<b>%1</b> · not swept yet").arg(QString::fromStdString(doc_->model()->path.filename().string()).toHtmlEscaped());
  return QStringLiteral("No model or session open");
}

void MainWindow::updateTitle() {
  header_->setText(headerText());
  QString t = QStringLiteral("Temper");
  if (doc_->hasSession()) {
    const QString name = doc_->path().isEmpty() ? qstr(doc_->session().model.file_name) : QFileInfo(doc_->path()).fileName();
    t = QStringLiteral("%1%2 — %3 — Temper").arg(name, doc_->isDirty() ? QStringLiteral(" *") : QString(), doc_->provenanceText());
  } else if (doc_->model()) {
    t = QStringLiteral("%1 — Temper").arg(QString::fromStdString(doc_->model()->path.filename().string()));
  }
  setWindowTitle(t);
}

QString MainWindow::statusText() const { return status_->text(); }

void MainWindow::showError(const QString& title, const QString& text, const QString& detail) {
  last_error_detail_ = detail;
  status_->setText(title + QStringLiteral(": ") + text);
  status_->setToolTip(detail);
  if (!interactive_) return;
  QMessageBox box(QMessageBox::Critical, title, text, QMessageBox::Ok, this);
  if (!detail.isEmpty()) box.setDetailedText(detail);  // one click away ("Show Details…")
  box.exec();
}

bool MainWindow::confirmDiscard() {
  const bool results = doc_->hasUnsavedResults() && doc_->hasSession(), approvals = doc_->hasUnsavedApprovals();
  if (!results && !approvals) return true;
  const QString what = results && approvals ? QStringLiteral("The sweep results and the approvals are")
                       : results            ? QStringLiteral("The sweep results are")
                                            : QStringLiteral("The approvals are");
  const auto answer = prompts_.question(QStringLiteral("Unsaved changes"),
                                        what + QStringLiteral(" not saved. Save them first?") +
                                            (approvals ? QStringLiteral(" (approvals are saved as a Temper profile)") : QString()),
                                        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Save) return (!results || save(false)) && (!approvals || saveApprovals());
  return answer == QMessageBox::Discard;
}

namespace {
// "<dir>/llama3-8b-q4_k_m-sm_90.temper-profile.json": beside the session, else in `fallback`.
QString approvalsPath(const SessionDocument& doc, const QString& fallback) {
  const QString dir = doc.path().isEmpty() ? fallback : QFileInfo(doc.path()).absolutePath();
  return QDir(dir).filePath(fileStem(doc) + QStringLiteral(".temper-profile.json"));
}
}  // namespace

bool MainWindow::saveApprovals() {
  if (!doc_->hasSession()) {
    showError(QStringLiteral("Nothing to save"), QStringLiteral("Open a session first: approvals belong to its winners."));
    return false;
  }
  const QString path = prompts_.saveFile(QStringLiteral("Save approvals as profile"),
                                         approvalsPath(*doc_, QSettings().value(QStringLiteral("open/dir")).toString()),
                                         QStringLiteral("Temper profiles (*.json)"));
  if (path.isEmpty()) return false;
  try {
    doc_->saveApprovals(path);
    status_->setText(QStringLiteral("Saved the approvals to %1").arg(path));
    return true;
  } catch (const std::exception& e) {
    showError(QStringLiteral("Cannot save the approvals"), QString::fromStdString(e.what()));
    return false;
  }
}

void MainWindow::loadApprovalsDialog() {
  const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Load approvals from profile"),
                                                    doc_->hasSession() ? QFileInfo(approvalsPath(*doc_, QString())).absolutePath() : QString(),
                                                    QStringLiteral("Temper profiles (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  try {
    const int n = doc_->loadApprovals(path);
    status_->setText(QStringLiteral("Took the approvals of %1 entries from %2 (Edit → Undo takes them back)").arg(n).arg(path));
  } catch (const std::exception& e) {
    showError(QStringLiteral("Cannot load approvals from %1").arg(QFileInfo(path).fileName()), QString::fromStdString(e.what()));
  }
}

bool MainWindow::openPath(const QString& path, QString* error) {
  if (sweep_panel_->runner()->isRunning()) {
    const QString msg = QStringLiteral("A sweep is running: cancel it before opening another file.");
    if (error) *error = msg;
    showError(QStringLiteral("Cannot open"), msg);
    return false;
  }
  if (!confirmDiscard()) return false;
  try {
    const nlohmann::json j = looksLikeGguf(path) || looks_like_tune_journal(path) ? nlohmann::json() : jsonOf(path);
    if (path.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive) || looksLikeGguf(path)) {
      doc_->setModel(open_model(fsPath(path)));
    } else if (looks_like_tune_journal(path) ||
               (j.is_object() && !j.contains("results") && (j.contains("entries") || is_kernel_anvil_json(j)))) {
      showTune(path);
    } else {
      // Without the GPU that recorded it, nothing could add to a session: it opens read-only.
      doc_->openSession(path, !sweep_panel_->hasDevices());
    }
    addRecent(path);
    status_->setText(QStringLiteral("Opened %1").arg(path));
    return true;
  } catch (const std::exception& e) {
    const QString detail = openErrorText(path, e);
    const QString msg = plainOpenError(path, e, detail);
    if (error) *error = msg;
    showError(QStringLiteral("Cannot open %1").arg(QFileInfo(path).fileName()), msg, detail);
    return false;
  }
}

void MainWindow::showTune(const QString& path) {
  TuneRecord t = looks_like_tune_journal(path) ? read_tune_journal(path) : read_tune_profile(path);
  // The engine sweep behind a journal opens as the session too: its heatmap and roofline per shape.
  if (!t.session_path.isEmpty() && !doc_->hasUnsavedResults()) {
    try {
      doc_->openSession(t.session_path, true);
    } catch (const std::exception&) {  // the tune stands without it
    }
  }
  tune_view_->setTune(std::move(t));
  tabs_->setCurrentWidget(tune_view_->parentWidget()->parentWidget());
}

bool MainWindow::compareTuneWith(const QString& path, QString* error) {
  try {
    if (!tune_view_->hasTune()) fail(ErrorKind::BadInput, "open a tune first (a profile or a tune journal), then compare another with it");
    const TuneRecord other = looks_like_tune_journal(path) ? read_tune_journal(path) : read_tune_profile(path);
    tune_compare_->setTunes(tune_view_->tune(), other);
    tabs_->setCurrentWidget(tune_compare_->parentWidget()->parentWidget());
    status_->setText(QStringLiteral("Comparing the tune with %1").arg(path));
    return true;
  } catch (const std::exception& e) {
    const QString detail = openErrorText(path, e);
    const QString msg = plainOpenError(path, e, detail);
    if (error) *error = msg;
    showError(QStringLiteral("Cannot compare with %1").arg(QFileInfo(path).fileName()), msg, detail);
    return false;
  }
}

bool MainWindow::hasDemo() {
  initTemperResources();
  return QFile::exists(QString::fromLatin1(kDemoResource)); }

bool MainWindow::openDemo(QString* error) {
  QFile f(QString::fromLatin1(kDemoResource));
  if (!f.open(QIODevice::ReadOnly)) {
    const QString msg = QStringLiteral("This build has no demo session (resources/demo-session.json was absent when it was built).");
    if (error) *error = msg;
    showError(QStringLiteral("No demo session"), msg);
    return false;
  }
  if (!confirmDiscard()) return false;
  try {
    doc_->openSessionFromJson(f.readAll(), QStringLiteral("demo session"), true);
    // The product's main result first: a real tune recorded on an H200, beside one on an H100.
    QFile h200(QStringLiteral(":/demo-tune-h200.json")), h100(QStringLiteral(":/demo-tune-h100.json"));
    if (h200.open(QIODevice::ReadOnly) && h100.open(QIODevice::ReadOnly)) {
      tune_view_->setTune(read_tune_profile_json(h200.readAll(), QStringLiteral("demo tune on an NVIDIA H200")));
      tune_compare_->setTunes(tune_view_->tune(), read_tune_profile_json(h100.readAll(), QStringLiteral("demo tune on an NVIDIA H100")));
    }
    status_->setText(QStringLiteral("Demo session: %1").arg(doc_->provenanceText()));
    return true;
  } catch (const std::exception& e) {
    const QString msg = openErrorText(QStringLiteral("demo session"), e);
    if (error) *error = msg;
    showError(QStringLiteral("Cannot open the demo session"), msg);
    return false;
  }
}

bool MainWindow::compareWith(const QString& path, QString* error) {
  try {
    if (!doc_->hasSession()) fail(ErrorKind::BadInput, "open a session first, then compare another with it");
    const Session other = read_session(path.toStdString());
    const QString here = doc_->path().isEmpty() ? QStringLiteral("this session") : QFileInfo(doc_->path()).fileName();
    if (!comparison_window_) {
      comparison_window_ = new QDialog(this);
      comparison_window_->setWindowTitle(QStringLiteral("Compare sessions — Temper"));
      comparison_ = new ComparisonView;
      auto* l = new QVBoxLayout(comparison_window_);
      l->addWidget(comparison_);
      comparison_window_->resize(1100, 640);
    }
    comparison_->setSessions(doc_->session(), here, other, QFileInfo(path).fileName());
    if (interactive_) {
      comparison_window_->show();
      comparison_window_->raise();
    }
    status_->setText(QStringLiteral("Comparing with %1").arg(path));
    return true;
  } catch (const std::exception& e) {
    const QString msg = QString::fromStdString(e.what());
    if (error) *error = msg;
    showError(QStringLiteral("Cannot compare with %1").arg(QFileInfo(path).fileName()), msg);
    return false;
  }
}

void MainWindow::offerDemoIfFirstLaunch() {
  QSettings st;
  if (st.value(QStringLiteral("firstLaunchDone"), false).toBool()) return;
  st.setValue(QStringLiteral("firstLaunchDone"), true);
  if (sweep_panel_->hasDevices() || !hasDemo() || !interactive_ || doc_->hasSession()) return;
  if (QMessageBox::question(this, QStringLiteral("No GPU found"),
                            QStringLiteral("This machine has no HIP or CUDA device. Open the demo session, recorded on an "
                                           "NVIDIA H100, to explore Temper?")) == QMessageBox::Yes)
    openDemo();
}

void MainWindow::openDialog() {
  const QString dir = QSettings().value(QStringLiteral("open/dir")).toString();
  const QString path = QFileDialog::getOpenFileName(this, QStringLiteral("Open model, session or tune"), dir,
                                                    QStringLiteral("Models, sessions and tunes (*.gguf *.json *.journal);;GGUF models (*.gguf);;"
                                                                   "Sessions and profiles (*.json);;Tune journals (*.journal);;All files (*)"));
  if (path.isEmpty()) return;
  QSettings().setValue(QStringLiteral("open/dir"), QFileInfo(path).absolutePath());
  openPath(path);
}

bool MainWindow::save(bool as) {
  if (!doc_->hasSession()) {
    showError(QStringLiteral("Nothing to save"), QStringLiteral("Run a sweep or open a session first."));
    return false;
  }
  QString path = doc_->path();
  if (as || path.isEmpty() || doc_->isReadOnly()) {
    const QString suggested = QFileInfo(qstr(doc_->session().model.file_name)).completeBaseName() + QStringLiteral(".temper-session.json");
    path = prompts_.saveFile(QStringLiteral("Save session"),
                             QDir(QSettings().value(QStringLiteral("open/dir"), QDir::homePath()).toString()).filePath(suggested),
                             QStringLiteral("Sessions (*.json)"));
    if (path.isEmpty()) return false;
  }
  try {
    doc_->saveSession(path);
    addRecent(path);
    status_->setText(QStringLiteral("Saved %1").arg(path));
    updateTitle();
    return true;
  } catch (const std::exception& e) {
    showError(QStringLiteral("Cannot save"), QString::fromStdString(e.what()));
    return false;
  }
}

void MainWindow::exportDialog() {
  if (!doc_->hasSession()) {
    showError(QStringLiteral("Nothing to export"), QStringLiteral("Run a sweep or open a session first."));
    return;
  }
  ExportDialog d(doc_, {heatmap_, roofline_, model_panel_->proxy()}, this);
  d.exec();
}

void MainWindow::showAbout() {
  const BuildIdentity& b = this_build();
  QStringList backends;
#if defined(TEMPER_WITH_HIP)
  backends << QStringLiteral("HIP (%1)").arg(qstr(b.hip_archs));
#endif
#if defined(TEMPER_WITH_CUDA)
  backends << QStringLiteral("CUDA (sm %1)").arg(qstr(b.cuda_archs));
#endif
  if (backends.isEmpty()) backends << QStringLiteral("none (sessions open read-only)");
  QMessageBox::about(this, QStringLiteral("About Temper"),
                     QStringLiteral("<h3>Temper %1</h3><p>Profile and tune llama.cpp's quantized GEMV kernel (mmvq).</p>"
                                    "<table><tr><td>commit</td><td>%2</td></tr><tr><td>compiler</td><td>%3 (%4)</td></tr>"
                                    "<tr><td>GPU backends</td><td>%5</td></tr><tr><td>compiled gfx targets</td><td>%6</td></tr>"
                                    "<tr><td>kernel set</td><td>%7</td></tr><tr><td>Qt</td><td>%8 (built with %9)</td></tr></table>")
                         .arg(QStringLiteral(TEMPER_VERSION), qstr(b.git_commit), qstr(b.compiler), qstr(b.build_type),
                              backends.join(QStringLiteral(", ")),
                              b.hip_archs.empty() ? QStringLiteral("none") : qstr(b.hip_archs), qstr(b.kernel_set),
                              QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR)));
}

QStringList MainWindow::helpDocs() {
  initTemperResources();
  return QDir(QStringLiteral(":/docs")).entryList({QStringLiteral("*.md")});
}

void MainWindow::showHelp(const QString& doc) {
  QDialog d(this);
  d.setWindowTitle(QStringLiteral("Temper documentation"));
  auto* list = new QListWidget;
  auto* browser = new QTextBrowser;
  list->addItems(helpDocs());
  // Links between docs ("docs/cli.md", "llama-cpp.md#...") open inside the browser; others outside.
  browser->setOpenLinks(false);
  connect(browser, &QTextBrowser::anchorClicked, list, [list](const QUrl& url) {
    const QString name = QFileInfo(url.path()).fileName();
    if (url.isRelative() && name.endsWith(QStringLiteral(".md"))) {
      const auto hits = list->findItems(name, Qt::MatchExactly);
      if (!hits.isEmpty()) list->setCurrentItem(hits.front());
    } else {
      QDesktopServices::openUrl(url);
    }
  });
  connect(list, &QListWidget::currentTextChanged, browser, [browser](const QString& name) {
    QFile f(QStringLiteral(":/docs/") + name);
    if (f.open(QIODevice::ReadOnly)) browser->setMarkdown(QString::fromUtf8(f.readAll()));
  });
  auto* split = new QSplitter;
  split->addWidget(list);
  split->addWidget(browser);
  split->setStretchFactor(1, 1);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(box, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  auto* l = new QVBoxLayout(&d);
  l->addWidget(split, 1);
  l->addWidget(box);
  const auto hits = list->findItems(doc, Qt::MatchExactly);
  list->setCurrentRow(hits.isEmpty() ? 0 : list->row(hits.front()));
  d.resize(980, 720);
  d.exec();
}

void MainWindow::addRecent(const QString& path) {
  QSettings st;
  QStringList r = st.value(QStringLiteral("recentFiles")).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  r.removeAll(abs);
  r.prepend(abs);
  while (r.size() > 10) r.removeLast();
  st.setValue(QStringLiteral("recentFiles"), r);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  if (!recent_menu_) return;
  recent_menu_->clear();
  const QStringList r = QSettings().value(QStringLiteral("recentFiles")).toStringList();
  for (const QString& p : r) recent_menu_->addAction(QFileInfo(p).fileName(), this, [this, p] { openPath(p); })->setToolTip(p);
  recent_menu_->setEnabled(!r.isEmpty());
}

void MainWindow::applyDefaultDockSizes() {
  // Room for the shape table's ten columns with nothing cut (at most half the window); the views take the rest.
  if (auto* model = findChild<QDockWidget*>(QStringLiteral("ModelDock")))
    resizeDocks({model}, {std::min(std::max(model_panel_->naturalWidth(), width() / 3), width() / 2)}, Qt::Horizontal);
}

void MainWindow::showEvent(QShowEvent* e) {
  QMainWindow::showEvent(e);
  if (!default_layout_) return;
  default_layout_ = false;
  QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
}

QStringList MainWindow::saveScreenshots(const QString& dir) {
  QDir().mkpath(dir);
  applyDefaultDockSizes();
  QApplication::processEvents();
  QStringList written;
  auto shoot = [&](QWidget* w, const QString& name) {
    QApplication::processEvents();
    const QString path = QDir(dir).filePath(name);
    if (w->grab().save(path, "PNG")) written << path;
  };
  const char* names[] = {"heatmap", "roofline", "occupancy", "samples", "approval", "tune-and-bench", "tune-result", "tune-comparison"};
  for (int i = 0; i < tabs_->count() && i < int(std::size(names)); ++i) {
    tabs_->setCurrentIndex(i);
    shoot(this, QStringLiteral("main-%1.png").arg(QString::fromLatin1(names[i])));
  }
  tabs_->setCurrentIndex(0);
  return written;
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (tune_->runner()->isRunning()) {
    if (interactive_ && QMessageBox::question(this, QStringLiteral("Tune running"),
                                              QStringLiteral("A tune or bench is running. Cancel it and quit? (The journal "
                                                             "keeps what was done; Tune goes on from there.)")) != QMessageBox::Yes) {
      e->ignore();
      return;
    }
    tune_->runner()->cancel();
    tune_->runner()->wait();
  }
  if (sweep_panel_->runner()->isRunning()) {
    if (interactive_ && QMessageBox::question(this, QStringLiteral("Sweep running"),
                                              QStringLiteral("A sweep is running. Cancel it and quit?")) != QMessageBox::Yes) {
      e->ignore();
      return;
    }
    sweep_panel_->runner()->cancel();
    sweep_panel_->runner()->wait();
  }
  if (!confirmDiscard()) {
    e->ignore();
    return;
  }
  QSettings st;
  st.setValue(QStringLiteral("window/geometry"), saveGeometry());
  st.setValue(QStringLiteral("window/state"), saveState(kLayoutVersion));
  st.setValue(QStringLiteral("window/tab"), tabs_->currentIndex());
  st.setValue(QStringLiteral("view/metric"), metric_->currentIndex());
  sweep_panel_->saveSettings();
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) openPath(urls.front().toLocalFile());
}

}  // namespace temper::ui
