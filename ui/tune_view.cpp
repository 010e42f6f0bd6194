#include "tune_view.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFont>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "fs_path.h"
#include "models/bench_model.h"
#include "session_doc.h"
#include "temper/error.h"
#include "temper/input.h"
#include "temper/tune.h"

namespace temper::ui {

namespace {

QString ci3(double v, double lo, double hi) {
  return QStringLiteral("%1 [%2, %3]").arg(v, 0, 'f', 3).arg(lo, 0, 'f', 3).arg(hi, 0, 'f', 3);
}

QTableWidgetItem* textItem(const QString& text, const QString& tip = {}) {
  auto* item = new QTableWidgetItem(text);
  if (!tip.isEmpty()) item->setToolTip(tip);
  return item;
}
QTableWidgetItem* numberItem(double v, int decimals) {
  auto* item = new QTableWidgetItem(QString::number(v, 'f', decimals));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}
void setBold(QTableWidgetItem* item) {
  QFont f = item->font();
  f.setBold(true);
  item->setFont(f);
}

// A head line over a table: wraps, selectable.
QLabel* headLabel(const QString& text = {}) {
  auto* l = new QLabel(text);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

QString launchWords(Launch l) {
  switch (l) {
    case Launch::MulMat: return QStringLiteral("mul_mat (plain)");
    default: return qstr(launch_name(l));
  }
}

// The shape of an entry without its arch and device: "q4_K 14336x4096", "group q4_K:4096,… k 4096".
QString entryShape(const ProfileKey& k) {
  if (launch_is_group(k.launch)) return QStringLiteral("%1 k %2").arg(qstr(members_text(k.members))).arg(k.k);
  QString s = qstr(shape_text(plain_shape(k)));
  if (launch_has_ids(k.launch)) s += QStringLiteral(" experts %1/%2").arg(k.used).arg(k.experts);
  return s;
}

// A light background from white (no gain) to green (≥ 25 %) or red (a loss).
QColor gainColor(double speedup) {
  const double t = std::clamp((speedup - 1) / 0.25, -1.0, 1.0);
  if (t >= 0) return QColor::fromRgbF(float(1 - 0.55 * t), float(1 - 0.15 * t), float(1 - 0.55 * t));
  return QColor::fromRgbF(1.0f, float(1 + 0.45 * t), float(1 + 0.45 * t));
}

}  // namespace

// Rows sized to their wrapped text, the height to all rows (the page scrolls, not the table).
static void fitRows(QTableView* t) {
  t->resizeRowsToContents();
  int h = (t->horizontalHeader()->isHidden() ? 0 : t->horizontalHeader()->sizeHint().height()) + 2 * t->frameWidth();
  const int rows = t->model() ? t->model()->rowCount() : 0;
  for (int r = 0; r < rows; ++r) h += t->rowHeight(r);
  t->setFixedHeight(std::max(h, t->horizontalHeader()->sizeHint().height() + 2 * t->frameWidth() + 4));
}

// `fit(t)` now and again after the model changes, once for any number of changes in one pass of
// the event loop (a table fills cell by cell); `queued` names the table property that marks a pending fit.
// Returns the queuing function, for other signals that call for a refit.
static std::function<void()> refitOnModelChanges(QTableView* t, const char* queued, void (*fit)(QTableView*)) {
  auto refit = [t, queued, fit] {
    if (t->property(queued).toBool()) return;
    t->setProperty(queued, true);
    QMetaObject::invokeMethod(
        t,
        [t, queued, fit] {
          t->setProperty(queued, false);
          fit(t);
        },
        Qt::QueuedConnection);
  };
  if (QAbstractItemModel* m = t->model()) {
    QObject::connect(m, &QAbstractItemModel::modelReset, t, refit);
    QObject::connect(m, &QAbstractItemModel::rowsInserted, t, refit);
    QObject::connect(m, &QAbstractItemModel::rowsRemoved, t, refit);
    QObject::connect(m, &QAbstractItemModel::dataChanged, t, refit);
    QObject::connect(m, &QAbstractItemModel::layoutChanged, t, refit);
    QObject::connect(m, &QAbstractItemModel::headerDataChanged, t, refit);
  }
  fit(t);
  return refit;
}

void fitToPage(QTableView* t) {
  t->verticalHeader()->setVisible(false);
  t->setWordWrap(true);
  t->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  t->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  t->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);  // its width is the page's, never its contents'
  QObject::connect(t->horizontalHeader(), &QHeaderView::sectionResized, t, refitOnModelChanges(t, "refitQueued", fitRows));
}

static void fitColumns(QTableView* t) {
  QHeaderView* h = t->horizontalHeader();
  const int n = h->count();
  std::vector<int> cells(size_t(n), 0), want(size_t(n), 0);
  int total = 0, slack = 0;
  for (int c = 0; c < n; ++c) {
    if (t->isColumnHidden(c)) continue;
    cells[size_t(c)] = std::max(0, static_cast<const QAbstractItemView*>(t)->sizeHintForColumn(c));
    want[size_t(c)] = std::max(cells[size_t(c)], h->sectionSizeHint(c));
    total += want[size_t(c)];
    slack += want[size_t(c)] - cells[size_t(c)];
  }
  const int over = std::min(std::max(0, total - t->viewport()->width()), slack);
  for (int c = 0; c < n; ++c) {
    const int give = slack > 0 ? int(std::ceil(double(want[size_t(c)] - cells[size_t(c)]) * over / slack)) : 0;
    if (!t->isColumnHidden(c)) h->resizeSection(c, want[size_t(c)] - give);
  }
}

void fitColumnsToView(QTableView* t) {
  struct OnResize : QObject {
    QTableView* table;
    OnResize(QTableView* t) : QObject(t), table(t) {}
    bool eventFilter(QObject*, QEvent* e) override {
      if (e->type() == QEvent::Resize) fitColumns(table);
      return false;
    }
  };
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  t->horizontalHeader()->setMinimumSectionSize(8);
  t->viewport()->installEventFilter(new OnResize(t));
  refitOnModelChanges(t, "columnsQueued", fitColumns);
}

QTableWidget* pageTable(int columns, const QStringList& headers) {
  auto* t = new QTableWidget(0, columns);
  t->setHorizontalHeaderLabels(headers);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  t->horizontalHeader()->setStretchLastSection(true);
  fitToPage(t);
  return t;
}

// ---- Reading ----

TuneRecord read_tune_profile(const QString& path) {
  TuneRecord t;
  t.profile = load_profile(fsPath(path));
  t.name = QFileInfo(path).fileName();
  t.profile_path = path;
  return t;
}

TuneRecord read_tune_profile_json(const QByteArray& bytes, const QString& name) {
  const nlohmann::json j = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
  if (j.is_discarded()) fail(ErrorKind::BadInput, name.toStdString() + ": not JSON");
  TuneRecord t;
  t.profile = profile_from_json(j, name.toStdString());
  t.name = name;
  return t;
}

bool looks_like_tune_journal(const QString& path) {
  try {
    const InputFile in = open_input(fsPath(path), 0, "file");
    char head[4096] = {};  // the header line: {"engine": "<path>", "journal": "temper-tune-journal", ...}
    const ssize_t n = ::read(in.fd, head, sizeof head);
    ::close(in.fd);
    const QByteArray first = QByteArray(head, int(std::max<ssize_t>(n, 0))).split('\n').front();
    return first.startsWith('{') && first.contains("\"temper-tune-journal\"");
  } catch (const Error&) {
    return false;
  }
}

TuneRecord read_tune_journal(const QString& path) {
  using nlohmann::json;
  const std::string where = path.toStdString();
  const std::string text = read_input(fsPath(path), kMaxJournalInputBytes, "tune journal");
  std::vector<json> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    if (end > at) {
      json j = json::parse(text.substr(at, end - at), nullptr, false);
      // A line cut short by an interrupted run is the last one: what came before stands.
      if (j.is_discarded() || !j.is_object()) {
        if (end == text.size() && !lines.empty()) break;
        fail(ErrorKind::BadInput, where + ": line " + std::to_string(lines.size() + 1) + ": not a JSON object");
      }
      lines.push_back(std::move(j));
    }
    at = end + 1;
  }
  if (lines.empty() || lines.front().value("journal", "") != "temper-tune-journal")
    fail(ErrorKind::BadInput, where + ": line 1: expected a temper tune journal's header ({\"journal\": \"temper-tune-journal\", ...})");
  TuneRecord t;
  t.name = QFileInfo(path).fileName();
  t.journal_path = path;
  std::map<std::string, const json*> last;
  for (size_t i = 1; i < lines.size(); ++i)
    if (lines[i].contains("step") && lines[i].value("outcome", "") != "started") last[lines[i].value("step", "")] = &lines[i];
  auto str = [](const json& j, const char* key) { return j.contains(key) && j[key].is_string() ? QString::fromStdString(j[key].get<std::string>()) : QString(); };
  for (tune::Step s : tune::kSteps) {
    const auto it = last.find(std::string(tune::step_name(s)));
    if (it == last.end()) continue;
    const json& r = *it->second;
    t.steps.push_back({qstr(tune::step_name(s)), str(r, "outcome"), str(r, "summary"),
                       r.contains("seconds") && r["seconds"].is_number() ? r["seconds"].get<double>() : 0.0});
    if (s == tune::Step::Install) t.profile_path = str(r, "profile");
    if (s == tune::Step::Sweep) t.session_path = str(r, "session");
    if (s == tune::Step::Replay && r.contains("result") && r["result"].is_object())
      t.replay_json = QByteArray::fromStdString(r["result"].dump());
    if (s == tune::Step::Token && r.contains("prediction")) {
      try {
        const tune::TokenPrediction p = tune::token_prediction_from_json(r["prediction"]);
        t.predicted_tokens = p.tokens, t.predicted = p.speedup, t.predicted_low = p.low, t.predicted_high = p.high;
      } catch (const Error& e) {
        fail(ErrorKind::BadInput, where + ": the token step's prediction: " + e.what());
      }
    }
  }
  std::error_code ec;
  if (!t.session_path.isEmpty() && !std::filesystem::exists(fsPath(t.session_path), ec)) t.session_path.clear();
  if (!t.profile_path.isEmpty() && std::filesystem::exists(fsPath(t.profile_path), ec)) t.profile = load_profile(fsPath(t.profile_path));
  else t.profile_path.clear();
  return t;
}

TunePlace tune_place(const Profile& p) {
  TunePlace place;
  for (const auto& e : p.entries)
    if (e.approval == Approval::Approved && !e.key.arch.empty()) {
      place.arch = e.key.arch, place.device = e.key.device;
      break;
    }
  if (place.arch.empty() && !p.entries.empty()) place.arch = p.entries.front().key.arch, place.device = p.entries.front().key.device;
  return place;
}

QTableWidget* replayBreakdownTable() {
  auto* t = pageTable(7, {QStringLiteral("Launch"), QStringLiteral("Per token"), QStringLiteral("Stock µs"), QStringLiteral("Profile µs"),
                          QStringLiteral("Copy BW µs"), QStringLiteral("% of BW"), QStringLiteral("µs/launch over")});
  t->horizontalHeaderItem(4)->setToolTip(QStringLiteral("the launches' weight bytes at the measured copy bandwidth: the floor"));
  t->horizontalHeaderItem(5)->setToolTip(QStringLiteral("stock's share of the copy bandwidth"));
  t->horizontalHeaderItem(6)->setToolTip(QStringLiteral("stock µs beyond the bytes' time, per launch: ramp, tail and launch cost"));
  t->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  t->horizontalHeader()->setStretchLastSection(false);
  return t;
}

void showReplayBreakdown(QTableWidget* token, QLabel* head, const QJsonObject& r) {
  const QJsonArray shares = r.value(QStringLiteral("breakdown")).toArray();
  token->setRowCount(0);
  double stock = 0, profiled = 0, ideal = 0;
  for (const QJsonValue& v : shares) {  // largest stock time first, as the replay orders them
    const QJsonObject s = v.toObject();
    QString launch = QStringLiteral("%1 %2 %3×%4").arg(s.value(QStringLiteral("kind")).toString(), s.value(QStringLiteral("type")).toString())
                         .arg(s.value(QStringLiteral("n")).toInteger()).arg(s.value(QStringLiteral("k")).toInteger());
    if (s.value(QStringLiteral("experts")).toInteger() > 0)
      launch += QStringLiteral(" (%1 of %2 experts)").arg(s.value(QStringLiteral("experts_used")).toInteger()).arg(s.value(QStringLiteral("experts")).toInteger());
    const int row = token->rowCount();
    token->insertRow(row);
    token->setItem(row, 0, new QTableWidgetItem(launch));
    token->setItem(row, 1, numberItem(double(s.value(QStringLiteral("launches_per_token")).toInteger()), 0));
    token->setItem(row, 2, numberItem(s.value(QStringLiteral("stock_us")).toDouble(), 1));
    token->setItem(row, 3, numberItem(s.value(QStringLiteral("profiled_us")).toDouble(), 1));
    token->setItem(row, 4, numberItem(s.value(QStringLiteral("ideal_us")).toDouble(), 1));
    token->setItem(row, 5, numberItem(s.value(QStringLiteral("percent_of_copy_bandwidth")).toDouble(), 0));
    token->setItem(row, 6, numberItem(s.value(QStringLiteral("overhead_us_per_launch")).toDouble(), 2));
    stock += s.value(QStringLiteral("stock_us")).toDouble();
    profiled += s.value(QStringLiteral("profiled_us")).toDouble();
    ideal += s.value(QStringLiteral("ideal_us")).toDouble();
  }
  if (shares.isEmpty()) {
    head->setText(QStringLiteral("Where a token's GEMV time goes: this replay has no per-launch breakdown."));
    return;
  }
  // Percent of copy bandwidth: the bytes' time over the time taken (100 % = the launches read at copy speed).
  head->setText(QStringLiteral("Where a token's GEMV time goes (each launch shape's launches of a token timed on their own, in the "
                               "engine): %1 µs stock, %2 µs with the profile; their bytes take %3 µs at the measured copy bandwidth "
                               "(%4 GB/s), so stock reaches %5 % of it and the profile %6 %.")
                    .arg(stock, 0, 'f', 1).arg(profiled, 0, 'f', 1).arg(ideal, 0, 'f', 1)
                    .arg(r.value(QStringLiteral("copy_bandwidth_gbs")).toDouble(), 0, 'f', 0)
                    .arg(stock > 0 ? 100 * ideal / stock : 0, 0, 'f', 0).arg(profiled > 0 ? 100 * ideal / profiled : 0, 0, 'f', 0));
}

// ---- The view ----

TuneView::TuneView(QWidget* parent) : QWidget(parent) {
  title_ = headLabel(QStringLiteral("<h3>No tune open</h3>Open a profile that <code>temper tune</code> wrote (File → Open), its "
                                    "tune journal, or run one in the Tune &amp; bench tab."));
  title_->setTextFormat(Qt::RichText);
  headline_ = headLabel();
  headline_->setTextFormat(Qt::RichText);
  bench_pick_ = new QComboBox;
  bench_pick_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bench_ = new BenchModel(this);
  bench_view_ = new QTableView;
  bench_view_->setModel(bench_);
  bench_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  bench_view_->horizontalHeader()->setStretchLastSection(true);
  fitToPage(bench_view_);
  engine_line_ = headLabel();
  decisions_head_ = headLabel();
  decisions_ = pageTable(4, {QStringLiteral("Step"), QStringLiteral("What it decided"), QStringLiteral("Evidence"), QStringLiteral("In the profile")});
  decisions_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  decisions_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
  decisions_->horizontalHeader()->setStretchLastSection(false);
  token_head_ = headLabel();
  token_ = pageTable(7, {QStringLiteral("Launch kind"), QStringLiteral("Approved"), QStringLiteral("Per token"),
                         QStringLiteral("Stock µs"), QStringLiteral("Profile µs"), QStringLiteral("Saved µs"), QStringLiteral("Share")});
  token_->horizontalHeaderItem(1)->setToolTip(QStringLiteral("entries of this launch kind approved, of those measured"));
  token_->horizontalHeaderItem(2)->setToolTip(QStringLiteral("launches of this kind one decode token makes"));
  token_->horizontalHeaderItem(6)->setToolTip(QStringLiteral("this kind's share of the µs the profile saves a token"));
  token_->horizontalHeaderItem(0)->setToolTip(QStringLiteral("the engine's launch kind"));
  token_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  token_->horizontalHeader()->setStretchLastSection(false);
  replay_head_ = headLabel();
  replay_ = replayBreakdownTable();
  heatmap_head_ = headLabel();
  heatmap_ = pageTable(2, {QStringLiteral("Launch kind"), QStringLiteral("Shape")});

  auto* l = new QVBoxLayout(this);
  l->addWidget(title_);
  l->addWidget(headline_);
  auto* benchHead = headLabel(QStringLiteral("<b>llama-bench with and without the profile</b>"));
  l->addWidget(benchHead);
  l->addWidget(bench_pick_, 0, Qt::AlignLeft);
  l->addWidget(bench_view_);
  l->addWidget(engine_line_);
  l->addWidget(decisions_head_);
  l->addWidget(decisions_);
  l->addWidget(token_head_);
  l->addWidget(token_);
  l->addWidget(replay_head_);
  l->addWidget(replay_);
  l->addWidget(heatmap_head_);
  l->addWidget(heatmap_);
  l->addStretch(1);
  connect(bench_pick_, &QComboBox::currentIndexChanged, this, &TuneView::showBench);
  for (QWidget* w : std::initializer_list<QWidget*>{headline_, bench_pick_, bench_view_, engine_line_, decisions_head_, decisions_,
                                                    token_head_, token_, replay_head_, replay_, heatmap_head_, heatmap_})
    w->hide();
}

QList<QTableView*> TuneView::tables() const { return {bench_view_, decisions_, token_, replay_, heatmap_}; }
QString TuneView::title() const { return title_->text(); }
QString TuneView::headline() const { return headline_->text(); }
QString TuneView::engineLine() const { return engine_line_->text(); }

void TuneView::setTune(TuneRecord tune) {
  tune_ = std::move(tune);
  has_tune_ = true;
  const Profile& p = tune_.profile;
  const TunePlace place = tune_place(p);
  title_->setText(QStringLiteral("<h3>Tune: %1</h3>%2 on %3 · %4 entries · %5")
                      .arg(tune_.name.toHtmlEscaped(), qstr(p.model.empty() ? std::string("no model recorded") : p.model).toHtmlEscaped(),
                           qstr(place.device.any() ? place.arch : device_text(place.device, place.arch)).toHtmlEscaped())
                      .arg(p.entries.size())
                      .arg(p.created.empty() ? QStringLiteral("no date recorded") : QStringLiteral("created ") + qstr(p.created)));

  // The answer first: llama-bench's gain per model with its CI, the launches that gained most, what was left out.
  QStringList lines;
  for (const BenchRecord& b : p.benches) {
    const bool current = b.profile_fingerprint == approved_fingerprint(p, b.arch);
    for (const BenchTest& t : b.tests) {
      const bool sure = t.speedup_low > 1 || t.speedup_high < 1;
      lines << QStringLiteral("<b>%1 %2: %3× %4 with the profile</b> (95 % CI %5 – %6%7; %8 → %9 tokens/s, %10 runs × %11 repetitions per arm)%12")
                   .arg(qstr(b.model).toHtmlEscaped(), qstr(t.name))
                   .arg(t.speedup, 0, 'f', 3)
                   .arg(t.speedup >= 1 ? QStringLiteral("as fast") : QStringLiteral("as fast (slower)"))
                   .arg(t.speedup_low, 0, 'f', 3)
                   .arg(t.speedup_high, 0, 'f', 3)
                   .arg(sure ? QString() : QStringLiteral(": reaches 1.000, not a sure difference"))
                   .arg(t.stock_ts, 0, 'f', 1)
                   .arg(t.profiled_ts, 0, 'f', 1)
                   .arg(b.rounds)
                   .arg(b.repetitions)
                   .arg(current ? QString() : QStringLiteral(" — <i>recorded for an older state of this profile</i>"));
    }
  }
  if (tune_.predicted > 0)
    lines << QStringLiteral("Predicted by whole tokens in the engine's graph (tune's token step): tg%1 %2× (95 % CI %3 – %4)")
                 .arg(tune_.predicted_tokens)
                 .arg(tune_.predicted, 0, 'f', 3)
                 .arg(tune_.predicted_low, 0, 'f', 3)
                 .arg(tune_.predicted_high, 0, 'f', 3);
  if (p.benches.empty())
    lines << QStringLiteral("<b>No llama-bench record</b>: the gains below are the sweep's per launch; give Tune a llama-bench for the "
                            "whole model's tokens/s.");
  // Gained most: per-launch entries by µs saved per token.
  std::vector<const ProfileEntry*> gained;
  for (const auto& e : p.entries)
    if (e.approval == Approval::Approved && e.provenance && whole_token_evidence(e).empty() && e.key.ncols == 1) gained.push_back(&e);
  auto saved = [](const ProfileEntry* e) { return (e->provenance->default_us - e->provenance->tuned_us) * double(e->provenance->calls_per_token); };
  std::sort(gained.begin(), gained.end(), [&](const ProfileEntry* a, const ProfileEntry* b) { return saved(a) > saved(b); });
  QStringList most;
  for (size_t i = 0; i < gained.size() && i < 3; ++i)
    most << QStringLiteral("%1 %2 (%3 µs a token, ×%4)")
                .arg(qstr(launch_name(gained[i]->key.launch)), entryShape(gained[i]->key).toHtmlEscaped())
                .arg(saved(gained[i]), 0, 'f', 1)
                .arg(gained[i]->provenance->speedup, 0, 'f', 3);
  if (!most.isEmpty()) lines << QStringLiteral("Gained most (one launch kind at one batch width, the sweep): ") + most.join(QStringLiteral("; "));
  int left = 0;
  for (const auto& e : p.entries) left += e.approval != Approval::Approved;
  int paths_left = 0;
  for (const auto& c : p.paths) paths_left += c.approval != Approval::Approved;
  lines << (left + paths_left == 0 ? QStringLiteral("Left out: nothing; every measured gain is in the profile.")
                                   : QStringLiteral("Left out: %1 entries and %2 path choices (why: Steps and decisions below).").arg(left).arg(paths_left));
  headline_->setText(lines.join(QStringLiteral("<br>")));

  bench_pick_->blockSignals(true);
  bench_pick_->clear();
  for (const BenchRecord& b : p.benches)
    bench_pick_->addItem(QStringLiteral("%1 on %2, %3").arg(qstr(b.model), qstr(b.device), qstr(b.date)));
  bench_pick_->blockSignals(false);
  bench_pick_->setVisible(p.benches.size() > 1);
  showBench(p.benches.empty() ? -1 : 0);
  fillDecisions();
  fillTokenTime();
  fillHeatmap();
  for (QWidget* w : std::initializer_list<QWidget*>{headline_, decisions_head_, decisions_, token_head_, token_, heatmap_head_, heatmap_})
    w->show();
  const bool replay = !tune_.replay_json.isEmpty();
  replay_head_->setVisible(replay);
  replay_->setVisible(replay);
  if (replay) {
    showReplayBreakdown(replay_, replay_head_, QJsonDocument::fromJson(tune_.replay_json).object());
    fitRows(replay_);
  }
}

void TuneView::showBench(int record) {
  const std::vector<BenchRecord>& benches = tune_.profile.benches;
  const bool any = record >= 0 && size_t(record) < benches.size();
  bench_->setRecord(any ? benches[size_t(record)] : BenchRecord{});
  bench_view_->setVisible(any);
  engine_line_->setVisible(has_tune_);
  if (!any) {
    engine_line_->setText(QStringLiteral("No llama-bench record in this profile (temper engine bench, or Tune with a llama-bench, adds one)."));
    return;
  }
  const BenchRecord& b = benches[size_t(record)];
  engine_line_->setText(QStringLiteral("Stock build %1 (%2), profile build %3 (%4); the engine said: %5")
                            .arg(qstr(b.stock.build_commit)).arg(b.stock.build_number)
                            .arg(qstr(b.profiled.build_commit)).arg(b.profiled.build_number)
                            .arg(qstr(b.engine_line.empty() ? std::string("(nothing)") : b.engine_line)));
  fitRows(bench_view_);
}

void TuneView::fillDecisions() {
  const Profile& p = tune_.profile;
  QTableWidget* t = decisions_;
  t->setRowCount(0);
  auto row = [&](const QString& step, const QString& what, const QString& evidence, const QString& in, bool installed) {
    const int r = t->rowCount();
    t->insertRow(r);
    QTableWidgetItem* items[] = {textItem(step), textItem(what), textItem(evidence), textItem(in)};
    for (int c = 0; c < 4; ++c) {
      if (installed && c == 3) setBold(items[c]);
      if (!installed) items[c]->setForeground(QColor(120, 120, 120));
      t->setItem(r, c, items[c]);
    }
  };
  // The journal's steps, as the run reported them.
  for (const TuneRecord::Step& s : tune_.steps)
    row(s.name, s.summary, QStringLiteral("%1, %2 s").arg(s.outcome).arg(s.seconds, 0, 'f', 1), QString(), true);
  // The decisions the profile holds.
  int launch_entries = 0, launch_approved = 0;
  double best = 0;
  QString best_text;
  std::map<int, std::vector<const ProfileEntry*>> groups;
  std::vector<const ProfileEntry*> pipelined, left;
  for (const auto& e : p.entries) {
    if (launch_is_group(e.key.launch)) {
      groups[e.key.ncols].push_back(&e);
      continue;
    }
    if (launch_is_pipelined(e.key.launch)) {
      pipelined.push_back(&e);
      continue;
    }
    ++launch_entries;
    if (e.approval != Approval::Approved) {
      left.push_back(&e);
      continue;
    }
    ++launch_approved;
    if (e.provenance && e.provenance->speedup > best)
      best = e.provenance->speedup, best_text = QStringLiteral("%1 %2 ncols %3").arg(qstr(launch_name(e.key.launch)), entryShape(e.key)).arg(e.key.ncols);
  }
  row(QStringLiteral("sweep, approve"),
      QStringLiteral("%1 of %2 launch configs approved (a launch shape at a batch width each, nwarps × rows_per_block)").arg(launch_approved).arg(launch_entries),
      best > 0 ? QStringLiteral("per launch, the engine's own kernel; best ×%1 at %2").arg(best, 0, 'f', 3).arg(best_text) : QStringLiteral("-"),
      QStringLiteral("%1 approved").arg(launch_approved), launch_approved > 0);
  for (const PathChoice& c : p.paths) {
    const bool on = c.approval == Approval::Approved;
    QString evidence = QStringLiteral("not measured");
    if (c.evidence)
      evidence = QStringLiteral("whole-token replay at ncols %1: ×%2").arg(c.ncols).arg(ci3(c.evidence->speedup, c.evidence->speedup_low, c.evidence->speedup_high));
    row(QStringLiteral("crossover"),
        QStringLiteral("%1 %2 at ncols %3: %4 instead of ggml's %5").arg(qstr(type_name(c.type)), qstr(launch_name(c.launch))).arg(c.ncols)
            .arg(qstr(mat_path_name(c.path)), qstr(mat_path_name(c.stock_path))),
        evidence, on ? QStringLiteral("yes") : QStringLiteral("left out: %1").arg(qstr(approval_name(c.approval))), on);
  }
  for (const auto& [ncols, entries] : groups) {
    int on = 0;
    QStringList members;
    for (const ProfileEntry* e : entries) on += e->approval == Approval::Approved, members << qstr(members_text(e->key.members));
    const ProfileEntry* first = entries.front();
    const QString evidence = first->provenance ? QStringLiteral("whole-token replay, groups off vs on: ×%1")
                                                     .arg(ci3(first->provenance->speedup, first->provenance->speedup_low, first->provenance->speedup_high))
                                               : QStringLiteral("not measured");
    row(QStringLiteral("groups"),
        QStringLiteral("%1 same-input groups at ncols %2 (one launch for q, k, v …): %3").arg(entries.size()).arg(ncols).arg(members.join(QStringLiteral("; "))),
        evidence, on ? QStringLiteral("%1 installed").arg(on) : QStringLiteral("left out"), on > 0);
  }
  if (!pipelined.empty()) {
    int on = 0;
    for (const ProfileEntry* e : pipelined) on += e->approval == Approval::Approved;
    const ProfileEntry* first = pipelined.front();
    const QString evidence = first->provenance ? QStringLiteral("%1, the profile without vs with them: ×%2")
                                                     .arg(qstr(first->provenance->engine),
                                                          ci3(first->provenance->speedup, first->provenance->speedup_low, first->provenance->speedup_high))
                                               : QStringLiteral("not measured");
    row(QStringLiteral("pipeline"),
        QStringLiteral("%1 one-column launches pipelined (the next kernel starts early, rows prefetched)").arg(pipelined.size()), evidence,
        on ? QStringLiteral("%1 installed").arg(on) : QStringLiteral("left out"), on > 0);
  }
  for (const ProfileEntry* e : left)
    row(QStringLiteral("approve"),
        QStringLiteral("%1 %2 ncols %3 stays at the default %4 (measured %5)").arg(qstr(launch_name(e->key.launch)), entryShape(e->key)).arg(e->key.ncols)
            .arg(qstr(config_text(e->default_config)), qstr(config_text(e->config))),
        qstr(left_out_reason(*e)), QStringLiteral("left out"), false);
  decisions_head_->setText(QStringLiteral("<b>Steps and decisions</b>%1: what each step chose, on what evidence, and what was left out and why.")
                               .arg(tune_.steps.empty() ? QStringLiteral(" (from the profile; open the tune journal for each step's time)") : QString()));
  fitRows(t);
}

void TuneView::fillTokenTime() {
  const Profile& p = tune_.profile;
  const TunePlace place = tune_place(p);
  const std::vector<LaunchKindTime> kinds = token_time_by_launch(p, place.arch, place.device);
  QTableWidget* t = token_;
  t->setRowCount(int(kinds.size()));
  double stock = 0, profiled = 0, saved = 0;
  for (const auto& k : kinds) stock += k.stock_us, profiled += k.profile_us, saved += std::max(0.0, k.saved_us());
  for (int r = 0; r < int(kinds.size()); ++r) {
    const LaunchKindTime& k = kinds[size_t(r)];
    t->setItem(r, 0, textItem(launchWords(k.launch)));
    t->setItem(r, 1, textItem(QStringLiteral("%1 of %2").arg(k.approved).arg(k.entries)));
    t->setItem(r, 2, numberItem(double(k.launches_per_token), 0));
    t->setItem(r, 3, numberItem(k.stock_us, 1));
    t->setItem(r, 4, numberItem(k.profile_us, 1));
    t->setItem(r, 5, numberItem(k.saved_us(), 1));
    t->setItem(r, 6, numberItem(saved > 0 ? 100 * std::max(0.0, k.saved_us()) / saved : 0, 0));
    t->item(r, 6)->setText(t->item(r, 6)->text() + QStringLiteral(" %"));
  }
  token_head_->setText(kinds.empty() ? QStringLiteral("<b>Where one token's GEMV time goes</b>: no per-launch measurement at one column in this profile.")
                                     : QStringLiteral("<b>Where one token's GEMV time goes</b>, per launch kind (the sweep's medians at one column times "
                                                      "calls per token; the launches it measured): %1 µs stock, %2 µs with the profile, "
                                                      "%3 µs saved (%4 %). Groups and pipelining act on whole tokens, on top (Steps and decisions).")
                                           .arg(stock, 0, 'f', 1).arg(profiled, 0, 'f', 1).arg(stock - profiled, 0, 'f', 1)
                                           .arg(stock > 0 ? 100 * (stock - profiled) / stock : 0, 0, 'f', 1));
  fitRows(t);
}

void TuneView::fillHeatmap() {
  const Profile& p = tune_.profile;
  std::set<int> widths;
  std::map<std::pair<Launch, QString>, std::map<int, const ProfileEntry*>> rows;
  for (const auto& e : p.entries) {
    if (!e.provenance) continue;
    widths.insert(e.key.ncols);
    rows[{e.key.launch, entryShape(e.key)}][e.key.ncols] = &e;
  }
  QStringList headers = {QStringLiteral("Launch kind"), QStringLiteral("Shape")};
  for (int n : widths) headers << QStringLiteral("ncols %1").arg(n);
  heatmap_->clear();
  heatmap_->setColumnCount(int(headers.size()));
  heatmap_->setHorizontalHeaderLabels(headers);
  heatmap_->setRowCount(int(rows.size()));
  heatmap_->horizontalHeader()->setStretchLastSection(false);
  heatmap_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  int r = 0;
  for (const auto& [key, cells] : rows) {
    heatmap_->setItem(r, 0, textItem(launchWords(key.first)));
    heatmap_->setItem(r, 1, textItem(key.second));
    int c = 2;
    for (int n : widths) {
      const auto it = cells.find(n);
      if (it == cells.end()) {
        heatmap_->setItem(r, c++, textItem(QString()));
        continue;
      }
      const ProfileEntry& e = *it->second;
      const Provenance& pv = *e.provenance;
      const bool whole = !whole_token_evidence(e).empty();
      auto* item = textItem(QStringLiteral("×%1%2").arg(pv.speedup, 0, 'f', 3).arg(whole ? QStringLiteral(" token") : QString()),
                            QStringLiteral("%1 vs default %2: ×%3%4; %5")
                                .arg(qstr(config_text(e.config)), qstr(config_text(e.default_config)))
                                .arg(ci3(pv.speedup, pv.speedup_low, pv.speedup_high))
                                .arg(whole ? QStringLiteral(" (whole token, %1)").arg(qstr(whole_token_evidence(e))) : QString())
                                .arg(e.approval == Approval::Approved ? QStringLiteral("approved") : qstr(left_out_reason(e))));
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      item->setBackground(gainColor(pv.speedup));
      item->setForeground(QColor(20, 20, 20));
      if (e.approval != Approval::Approved) {
        QFont f = item->font();
        f.setItalic(true);
        item->setFont(f);
        item->setForeground(QColor(110, 110, 110));
      }
      heatmap_->setItem(r, c++, item);
    }
    ++r;
  }
  heatmap_head_->setText(QStringLiteral("<b>The engine sweep's gains per launch kind</b> (speedup over ggml's default config per shape "
                                        "and batch width; greener is faster; italics: left out; \"token\": a whole-token gain)."));
  fitRows(heatmap_);
}

// ---- Two tunes side by side ----

TuneComparison::TuneComparison(QWidget* parent) : QWidget(parent) {
  summary_ = headLabel(QStringLiteral("<h3>No comparison</h3>Open a tune, then File → Compare with tune… for a second one "
                                      "(another GPU, another model, or the same after an update)."));
  summary_->setTextFormat(Qt::RichText);
  // Narrow columns (two lines a cell where needed): the two sides fit the tab at 1280×720 beside the docks.
  bench_ = pageTable(BenchColumns, {QStringLiteral("Model, test"), QStringLiteral("A t/s stock → profile"), QStringLiteral("A speedup"),
                                    QStringLiteral("B t/s stock → profile"), QStringLiteral("B speedup"), QStringLiteral("B − A")});
  bench_->horizontalHeader()->setSectionResizeMode(Test, QHeaderView::Stretch);
  bench_->horizontalHeader()->setStretchLastSection(false);
  launches_ = pageTable(5, {QStringLiteral("Launch kind"), QStringLiteral("A µs stock → profile"), QStringLiteral("A saved"),
                            QStringLiteral("B µs stock → profile"), QStringLiteral("B saved")});
  launches_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  launches_->horizontalHeader()->setStretchLastSection(false);
  entries_head_ = headLabel();
  entries_ = pageTable(5, {QStringLiteral("Launch, shape"), QStringLiteral("ncols"), QStringLiteral("A config (speedup)"),
                           QStringLiteral("B config (speedup)"), QStringLiteral("Difference")});
  entries_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  entries_->horizontalHeader()->setStretchLastSection(false);
  auto* l = new QVBoxLayout(this);
  l->addWidget(summary_);
  l->addWidget(headLabel(QStringLiteral("<b>llama-bench</b> (highlighted: the speedups' CIs do not overlap)")));
  l->addWidget(bench_);
  l->addWidget(headLabel(QStringLiteral("<b>One token's GEMV time per launch kind</b> (the sweep's medians at one column; highlighted: "
                                        "a saving that differs by more than a tenth)")));
  l->addWidget(launches_);
  l->addWidget(entries_head_);
  l->addWidget(entries_);
  l->addStretch(1);
}

QList<QTableView*> TuneComparison::tables() const { return {bench_, launches_, entries_}; }
QString TuneComparison::summaryText() const { return summary_->text(); }

int TuneComparison::highlightedRows(const QTableWidget* t) const {
  int n = 0;
  for (int r = 0; r < t->rowCount(); ++r)
    if (t->item(r, 0) && t->item(r, 0)->data(Qt::UserRole).toBool()) ++n;
  return n;
}

namespace {
void highlightRow(QTableWidget* t, int r, bool better) {
  for (int c = 0; c < t->columnCount(); ++c) {
    QTableWidgetItem* item = t->item(r, c);
    if (!item) t->setItem(r, c, item = new QTableWidgetItem);
    item->setBackground(better ? QColor(205, 240, 205) : QColor(250, 215, 205));
    item->setForeground(QColor(20, 20, 20));
  }
  setBold(t->item(r, t->columnCount() - 1));
  t->item(r, 0)->setData(Qt::UserRole, true);
}
QString sideText(const TuneRecord& t) {
  const TunePlace place = tune_place(t.profile);
  return QStringLiteral("%1 (%2 on %3)").arg(t.name.toHtmlEscaped(), qstr(t.profile.model.empty() ? std::string("no model recorded") : t.profile.model).toHtmlEscaped(),
                                             qstr(place.device.any() ? place.arch : device_text(place.device, place.arch)).toHtmlEscaped());
}
QString modelStem(const std::string& model) {
  QString m = qstr(model);
  if (m.endsWith(QStringLiteral(".gguf"))) m.chop(5);
  return m;
}
}  // namespace

void TuneComparison::setTunes(const TuneRecord& a, const TuneRecord& b) {
  has_tunes_ = true;
  summary_->setText(QStringLiteral("<h3>Two tunes side by side</h3>A: %1<br>B: %2").arg(sideText(a), sideText(b)));

  // llama-bench: a row per (model, test) either side has.
  using TestKey = std::pair<std::string, std::string>;
  std::map<TestKey, std::pair<const BenchTest*, const BenchTest*>> tests;
  std::vector<TestKey> order;
  for (int side = 0; side < 2; ++side)
    for (const BenchRecord& r : (side ? b : a).profile.benches)
      for (const BenchTest& t : r.tests) {
        const TestKey key{r.model, t.name};
        if (!tests.count(key)) order.push_back(key);
        (side ? tests[key].second : tests[key].first) = &t;
      }
  bench_->setRowCount(int(order.size()));
  for (int r = 0; r < int(order.size()); ++r) {
    const auto& [ta, tb] = tests[order[size_t(r)]];
    bench_->setItem(r, Test, textItem(QStringLiteral("%1 %2").arg(modelStem(order[size_t(r)].first), qstr(order[size_t(r)].second))));
    auto side = [&](const BenchTest* t, int rate, int speedup) {
      if (!t) {
        for (int c : {rate, speedup}) bench_->setItem(r, c, textItem(QStringLiteral("-")));
        return;
      }
      bench_->setItem(r, rate, textItem(QStringLiteral("%1 → %2").arg(t->stock_ts, 0, 'f', 1).arg(t->profiled_ts, 0, 'f', 1)));
      bench_->setItem(r, speedup, textItem(QStringLiteral("%1\n[%2, %3]").arg(t->speedup, 0, 'f', 3).arg(t->speedup_low, 0, 'f', 3).arg(t->speedup_high, 0, 'f', 3)));
    };
    side(ta, RateA, SpeedupA);
    side(tb, RateB, SpeedupB);
    bench_->setItem(r, Change, ta && tb ? numberItem(tb->speedup - ta->speedup, 3) : textItem(QStringLiteral("only %1").arg(ta ? 'A' : 'B')));
    if (ta && tb && (tb->speedup_low > ta->speedup_high || tb->speedup_high < ta->speedup_low))
      highlightRow(bench_, r, tb->speedup > ta->speedup);
  }
  fitRows(bench_);

  // Launch kinds: each side's token time at one column.
  const TunePlace pa = tune_place(a.profile), pb = tune_place(b.profile);
  const auto ka = token_time_by_launch(a.profile, pa.arch, pa.device), kb = token_time_by_launch(b.profile, pb.arch, pb.device);
  std::vector<Launch> kinds;
  for (const auto* side : {&ka, &kb})
    for (const auto& k : *side)
      if (std::find(kinds.begin(), kinds.end(), k.launch) == kinds.end()) kinds.push_back(k.launch);
  launches_->setRowCount(int(kinds.size()));
  for (int r = 0; r < int(kinds.size()); ++r) {
    launches_->setItem(r, 0, textItem(launchWords(kinds[size_t(r)])));
    const LaunchKindTime* x[2] = {nullptr, nullptr};
    for (int side = 0; side < 2; ++side)
      for (const auto& k : side ? kb : ka)
        if (k.launch == kinds[size_t(r)]) x[side] = &k;
    for (int side = 0; side < 2; ++side) {
      const int column = 1 + 2 * side;
      if (!x[side]) {
        launches_->setItem(r, column, textItem(QStringLiteral("-")));
        launches_->setItem(r, column + 1, textItem(QStringLiteral("-")));
        continue;
      }
      launches_->setItem(r, column, textItem(QStringLiteral("%1 → %2").arg(x[side]->stock_us, 0, 'f', 1).arg(x[side]->profile_us, 0, 'f', 1)));
      launches_->setItem(r, column + 1, numberItem(x[side]->saved_us(), 1));
    }
    if (x[0] && x[1]) {
      const double sa = x[0]->saved_us(), sb = x[1]->saved_us();
      if (std::abs(sb - sa) > 0.1 * std::max(std::abs(sa), std::abs(sb)) && std::abs(sb - sa) > 0.5) highlightRow(launches_, r, sb > sa);
    }
  }
  fitRows(launches_);

  // Entries: core's diff, by shape when the two were measured on different GPUs.
  const ProfileDiff d = diff_profiles(a.profile, b.profile);
  entries_->setRowCount(0);
  for (const DiffLine& line : d.lines) {
    const int r = entries_->rowCount();
    entries_->insertRow(r);
    auto side = [](const std::optional<ProfileEntry>& e) {
      if (!e) return QStringLiteral("-");
      QString t = qstr(config_text(e->config));
      if (e->provenance) t += QStringLiteral(" (×%1)").arg(e->provenance->speedup, 0, 'f', 3);
      if (e->approval != Approval::Approved) t += QStringLiteral(" ") + qstr(approval_name(e->approval));
      return t;
    };
    entries_->setItem(r, 0, textItem(QStringLiteral("%1 %2").arg(qstr(launch_name(line.key.launch)), entryShape(line.key))));
    entries_->setItem(r, 1, numberItem(line.key.ncols, 0));
    entries_->setItem(r, 2, textItem(side(line.a)));
    entries_->setItem(r, 3, textItem(side(line.b)));
    QString what = qstr(diff_kind_name(line.kind));
    if (line.speedup_change) what += QStringLiteral(" %1%2").arg(*line.speedup_change >= 0 ? QStringLiteral("+") : QString()).arg(*line.speedup_change, 0, 'f', 3);
    entries_->setItem(r, 4, textItem(what));
    if (line.kind != DiffKind::Same) highlightRow(entries_, r, line.kind != DiffKind::Removed && line.speedup_change.value_or(0) >= 0);
  }
  entries_head_->setText(QStringLiteral("<b>Entries</b> (%1; highlighted: added, removed or changed): %2 the same, %3 changed, %4 only in A, %5 only in B")
                             .arg(d.by_arch ? QStringLiteral("by arch and shape")
                                            : QStringLiteral("by shape: %1 vs %2").arg(qstr(d.arch_a).toHtmlEscaped(), qstr(d.arch_b).toHtmlEscaped()))
                             .arg(d.count(DiffKind::Same)).arg(d.count(DiffKind::Changed)).arg(d.count(DiffKind::Removed)).arg(d.count(DiffKind::Added)));
  fitRows(entries_);
}

}  // namespace temper::ui
