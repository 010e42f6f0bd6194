#include "session_doc.h"

#include <QFile>
#include <QFileInfo>
#include <QUndoStack>
#include <set>

#include "temper/error.h"
#include "temper/estimate.h"
#include "temper/input.h"
#include "temper/sweep.h"

namespace temper::ui {

QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }
QString configText(Config c) { return qstr(config_text(c, "×")); }
QString shapeText(const ShapeKey& shape) { return qstr(shape_text(shape, "×")); }

const Shape* findShape(const std::vector<Shape>& shapes, const ShapeKey& key) {
  for (const auto& s : shapes)
    if (s.shape() == key) return &s;
  return nullptr;
}

// One change of the approvals: the entries before and after (a profile is small).
class ProfileEdit : public QUndoCommand {
 public:
  ProfileEdit(SessionDocument* doc, const QString& what, std::vector<ProfileEntry> before, std::vector<ProfileEntry> after)
      : QUndoCommand(what), doc_(doc), before_(std::move(before)), after_(std::move(after)) {}
  void undo() override { apply(before_); }
  void redo() override { apply(after_); }

 private:
  void apply(const std::vector<ProfileEntry>& entries) {
    doc_->profile_.entries = entries;
    Q_EMIT doc_->profileChanged();
  }
  SessionDocument* doc_;
  std::vector<ProfileEntry> before_, after_;
};

QString fileStem(const SessionDocument& doc) {
  if (!doc.hasSession()) return QStringLiteral("temper");
  QString stem = QFileInfo(qstr(doc.session().model.file_name)).completeBaseName();
  if (stem.isEmpty()) stem = QStringLiteral("session");
  if (const SessionDevice* d = doc.currentDevice()) stem += QLatin1Char('-') + qstr(d->info.arch);
  return stem;
}

std::vector<int> sweptNcols(const SessionDocument& doc) {
  std::set<int> n;
  if (const SessionDevice* d = doc.currentDevice()) {
    for (const auto& it : d->plan.items) n.insert(it.ncols);
    for (const auto& r : doc.session().results)
      if (r.device == d->info.index) n.insert(r.ncols);
  }
  if (n.empty())
    for (int i = 1; i <= 8; ++i) n.insert(i);
  return {n.begin(), n.end()};
}

QString tokensPerSecondText(const SessionDocument& doc) {
  const Estimate w = doc.winnersEstimate();
  if (w.shapes_measured == 0) return {};
  const Estimate a = doc.approvedEstimate();
  QString t = QStringLiteral("default %1 · approved %2 · all winners %3 tokens/s")
                  .arg(w.default_tokens_per_s, 0, 'f', 1).arg(a.tuned_tokens_per_s, 0, 'f', 1).arg(w.tuned_tokens_per_s, 0, 'f', 1);
  if (w.shapes_measured < w.shapes_total) t += QStringLiteral(" (%1 of %2 shapes measured)").arg(w.shapes_measured).arg(w.shapes_total);
  return t;
}

SessionDocument::SessionDocument(QObject* parent) : QObject(parent), undo_(new QUndoStack(this)) {
  connect(undo_, &QUndoStack::cleanChanged, this, [this] { Q_EMIT dirtyChanged(isDirty()); });
}

bool SessionDocument::hasUnsavedApprovals() const { return !undo_->isClean(); }

void SessionDocument::editProfile(const QString& what, const std::vector<ProfileEntry>& after) {
  const auto same = [](const ProfileEntry& a, const ProfileEntry& b) {
    return a.key == b.key && a.approval == b.approval && a.note == b.note && a.config == b.config;
  };
  const auto& before = profile_.entries;
  if (before.size() == after.size() && std::equal(before.begin(), before.end(), after.begin(), same)) return;
  undo_->push(new ProfileEdit(this, what, before, after));
}

const std::vector<Shape>& SessionDocument::shapes() const {
  static const std::vector<Shape> none;
  if (session_ && !session_->shapes.empty()) return session_->shapes;
  if (model_) return model_->shapes;
  return none;
}

const SessionDevice* SessionDocument::currentDevice() const {
  return session_ ? find_device(*session_, selection_.device) : nullptr;
}

QString SessionDocument::provenanceText() const {
  if (!session_) return {};
  const SessionDevice* d = currentDevice();
  QString when = qstr(session_->created);
  when.replace(QLatin1Char('T'), QLatin1Char(' '));
  if (when.endsWith(QLatin1Char('Z'))) when = when.left(when.size() - 1) + QStringLiteral(" UTC");
  QString dev = d ? qstr(d->info.name) : QStringLiteral("no device");
  if (d && d->info.api == "fake") dev += QStringLiteral(" (simulated timings, not a measurement)");
  // Which kernel was timed: Temper's own, or the engine's through temper-probe.
  const QString kernel = session_->kernel_source.is_engine()
                             ? QStringLiteral("llama.cpp's own kernel (%1)").arg(qstr(kernel_label(session_->kernel_source)))
                             : QStringLiteral("Temper's kernel");
  return QStringLiteral("%1 · %2 · recorded %3").arg(dev, kernel, when);
}

void SessionDocument::openSession(const QString& path, bool read_only) {
  adopt(read_session(std::filesystem::path(QFile::encodeName(path).toStdString())), path, read_only);
}

void SessionDocument::openSessionFromJson(const QByteArray& json, const QString& label, bool read_only) {
  const nlohmann::json j = parse_json_input(std::string_view(json.constData(), size_t(json.size())), label.toStdString());
  adopt(read_session(j, label.toStdString()), QString(), read_only);
}

void SessionDocument::adopt(Session s, const QString& path, bool read_only) {
  session_ = std::move(s);
  path_ = path;
  read_only_ = read_only;
  selection_ = {};
  if (!session_->devices.empty()) selection_.device = session_->devices.front().info.index;
  rebuildProfile();
  selectDefault();
  setDirty(false);
  Q_EMIT sessionChanged();
  Q_EMIT selectionChanged();
}

void SessionDocument::setModel(Model model) {
  model_ = std::move(model);
  if (session_ && session_->status != "running") {
    session_.reset();  // a new model starts a new document
    path_.clear();
    undo_->clear();
    profile_ = {};
  }
  selection_ = {};
  selectDefault();
  setDirty(false);
  Q_EMIT sessionChanged();
  Q_EMIT selectionChanged();
}

void SessionDocument::saveSession(const QString& path) {
  if (!session_) fail(ErrorKind::BadInput, "there is no session to save");
  save_session(*session_, path.toStdString());
  path_ = path;
  setDirty(false);
}

void SessionDocument::close() {
  session_.reset();
  model_.reset();
  undo_->clear();
  profile_ = {};
  path_.clear();
  selection_ = {};
  setDirty(false);
  Q_EMIT sessionChanged();
  Q_EMIT selectionChanged();
}

void SessionDocument::beginSweep(Session planned) {
  session_ = std::move(planned);
  path_.clear();
  read_only_ = false;
  undo_->clear();
  profile_ = {};
  const Selection keep = selection_;
  selection_.device = session_->devices.empty() ? 0 : session_->devices.front().info.index;
  if (keep.valid()) {
    selection_ = keep;
    selection_.device = session_->devices.empty() ? 0 : session_->devices.front().info.index;
  } else {
    selectDefault();
  }
  setDirty(true);
  Q_EMIT sessionChanged();
  Q_EMIT selectionChanged();
}

void SessionDocument::appendResults(const std::vector<Result>& results) {
  if (!session_ || results.empty()) return;
  session_->results.insert(session_->results.end(), results.begin(), results.end());
  session_->verdicts = select_verdicts(*session_);
  setDirty(true);
  Q_EMIT resultsChanged();
}

void SessionDocument::finishSweep(Session final_session) {
  session_ = std::move(final_session);
  rebuildProfile();
  setDirty(true);
  Q_EMIT resultsChanged();
  Q_EMIT profileChanged();
}

void SessionDocument::rebuildProfile() {
  undo_->clear();  // a new profile: nothing to undo, nothing unsaved
  profile_ = {};
  if (!session_ || session_->verdicts.empty()) return;
  profile_ = profile_from_session(*session_);
  approve_significant(profile_);  // significant winners come preselected; the user decides
  Q_EMIT profileChanged();
}

void SessionDocument::setApproval(const ProfileKey& key, Approval a) {
  const ProfileEntry* e = find_entry(profile_, key);
  if (!e) fail(ErrorKind::BadInput, "no proposed winner for " + key_text(key));
  if (e->approval == a) return;
  Profile after = profile_;
  set_approval(after, key, a, e->note);
  editProfile(QStringLiteral("%1 %2").arg(qstr(approval_name(a)), qstr(key_text(key))), after.entries);
}

void SessionDocument::setNote(const ProfileKey& key, const QString& note) {
  if (!find_entry(profile_, key)) fail(ErrorKind::BadInput, "no proposed winner for " + key_text(key));
  Profile after = profile_;
  find_entry(after, key)->note = note.toStdString();
  editProfile(QStringLiteral("note on %1").arg(qstr(key_text(key))), after.entries);
}

int SessionDocument::approveSignificant() {
  Profile after = profile_;
  const int n = approve_significant(after);
  editProfile(QStringLiteral("approve all significant"), after.entries);
  return n;
}

void SessionDocument::saveApprovals(const QString& path) {
  if (!session_) fail(ErrorKind::BadInput, "there is no session whose approvals could be saved");
  save_profile(profile_, QFile::encodeName(path).toStdString());
  undo_->setClean();
}

int SessionDocument::loadApprovals(const QString& path) {
  if (!session_) fail(ErrorKind::BadInput, "open a session first, then load approvals for it");
  const Profile saved = load_profile(QFile::encodeName(path).toStdString());
  Profile after = profile_;
  int matched = 0;
  for (auto& e : after.entries)
    if (const ProfileEntry* s = find_entry(saved, e.key); s && s->config == e.config) {
      e.approval = s->approval, e.decided_at = s->decided_at, e.note = s->note;
      ++matched;
    }
  editProfile(QStringLiteral("load approvals from %1").arg(QFileInfo(path).fileName()), after.entries);
  return matched;
}

Estimate SessionDocument::approvedEstimate() const {
  if (!session_ || !currentDevice()) return {};
  return estimate_with_profile(*session_, selection_.device, profile_);
}

Estimate SessionDocument::winnersEstimate() const {
  if (!session_ || !currentDevice()) return {};
  for (Estimate& e : estimate_decode(*session_))  // core's: the same figure the CLI prints
    if (e.device == selection_.device) return e;
  return {};
}

void SessionDocument::select(const Selection& s) {
  if (s == selection_) return;
  selection_ = s;
  Q_EMIT selectionChanged();
}

void SessionDocument::selectDefault() {
  // The shape with the largest share of decode bytes, at ncols 1: where tuning matters most.
  const auto& sh = shapes();
  const Shape* best = nullptr;
  for (const auto& s : sh)
    if (!best || s.bytes_per_token > best->bytes_per_token) best = &s;
  if (!best) return;
  selection_.type = best->type;
  selection_.n = int(best->n);
  selection_.k = int(best->k);
  selection_.ncols = 1;
  selection_.config.reset();
}

void SessionDocument::setDirty(bool d) {
  if (d == dirty_) return;
  dirty_ = d;
  Q_EMIT dirtyChanged(d);
}

}  // namespace temper::ui
