#pragma once
// The document the window shows: one session (opened, or growing under a running sweep), the model
// it was planned from, the approvals being made, and the selection every view follows. Views read
// it and call select(); they never talk to each other, so linking is one signal.
#include <QObject>
#include <QString>
#include <optional>

class QUndoStack;

#include "temper/gpus.h"
#include "temper/model.h"
#include "temper/occupancy.h"
#include "temper/profile.h"
#include "temper/session.h"

namespace temper::ui {

// What the user is looking at: one shape at one ncols on one device, optionally one config.
struct Selection : GroupKey {
  std::optional<Config> config;
  bool valid() const { return n > 0 && k > 0; }
  bool same_shape(const Selection& o) const { return shape() == o.shape(); }
  bool operator==(const Selection&) const = default;
};

class SessionDocument : public QObject {
  Q_OBJECT
 public:
  explicit SessionDocument(QObject* parent = nullptr);

  bool hasSession() const { return session_.has_value(); }
  const Session& session() const { return *session_; }
  const std::optional<Model>& model() const { return model_; }
  const Profile& profile() const { return profile_; }
  const QString& path() const { return path_; }
  // Anything unsaved: sweep results (saved with the session) or approvals (saved as a profile).
  bool isDirty() const { return hasUnsavedResults() || hasUnsavedApprovals(); }
  bool hasUnsavedResults() const { return dirty_; }
  bool hasUnsavedApprovals() const;
  // Approvals and notes are edits: each one is a step of this stack (undo / redo); its clean state
  // is the last saved (or opened) approvals.
  QUndoStack* undoStack() const { return undo_; }
  // No GPU runs here that could add to it (opened file, or a machine without the recording device).
  bool isReadOnly() const { return read_only_; }
  const Selection& selection() const { return selection_; }
  // Shapes shown in the shape table: the session's, or the model's before any sweep.
  const std::vector<Shape>& shapes() const;
  int device() const { return selection_.device; }
  const SessionDevice* currentDevice() const;
  // "NVIDIA H100 80GB HBM3 · recorded 2026-11-23 14:02 UTC" (empty without a session).
  QString provenanceText() const;

  // Throws temper::Error (the caller shows it).
  void openSession(const QString& path, bool read_only);
  void openSessionFromJson(const QByteArray& json, const QString& label, bool read_only);
  void setModel(Model model);
  void saveSession(const QString& path);
  void close();

  // A running sweep: the planned session first, then results as they land, then the final record.
  void beginSweep(Session planned);
  void appendResults(const std::vector<Result>& results);
  void finishSweep(Session final_session);

  // Approvals (core's policy and estimate; the document only keeps the profile and says it changed).
  // Each change is one undoable step; one that changes nothing is no step.
  void setApproval(const ProfileKey& key, Approval a);
  void setNote(const ProfileKey& key, const QString& note);
  int approveSignificant();
  // The approvals and notes as a Temper profile (atomic); they count as saved afterwards.
  void saveApprovals(const QString& path);
  // Takes the approvals and notes of a saved profile's entries that this session proposes too (one
  // undoable step); returns how many entries matched. Throws temper::Error.
  int loadApprovals(const QString& path);
  // The tokens/s figures, each under one name everywhere (current device, ncols 1, estimates of
  // the GEMV share of decode): default configs, the approved ones, every winner.
  Estimate approvedEstimate() const;  // default vs approved configs
  Estimate winnersEstimate() const;   // default vs all winners

  void select(const Selection& s);

 Q_SIGNALS:
  void sessionChanged();   // a different session (or none): everything reloads
  void resultsChanged();   // results, winners or estimates grew or changed
  void profileChanged();
  void selectionChanged();
  void dirtyChanged(bool dirty);

 private:
  friend class ProfileEdit;
  void adopt(Session s, const QString& path, bool read_only);
  void rebuildProfile();
  void editProfile(const QString& what, const std::vector<ProfileEntry>& after);
  void setDirty(bool d);
  void selectDefault();

  std::optional<Session> session_;
  std::optional<Model> model_;
  Profile profile_;
  QString path_;
  bool dirty_ = false, read_only_ = false;
  Selection selection_;
  QUndoStack* undo_;
};

// Shape of the session (calls and bytes per token), nullptr when absent.
const Shape* findShape(const std::vector<Shape>& shapes, const ShapeKey& key);

// The batch widths the current device swept (its plan and its results); 1..8 before any sweep.
std::vector<int> sweptNcols(const SessionDocument& doc);
// The decode estimates under their one name each, everywhere: "default 338.6 · approved 353.9 ·
// all winners 357.0 tokens/s" (current device, ncols 1, GEMV share of decode); "" without any.
QString tokensPerSecondText(const SessionDocument& doc);

// The stem of the files made from a session: its model's name and the current device's arch
// ("llama3-8b-q4_k_m-sm_90"); "temper" without a session.
QString fileStem(const SessionDocument& doc);

QString qstr(std::string_view s);
QString configText(Config c);  // "4×1"
QString shapeText(const ShapeKey& shape);  // "q4_K 14336×4096"

}  // namespace temper::ui
