// Approval → profile: preselection of significant winners, approve / reject per row, the live
// predicted tokens/s, and the exported profile holding exactly what was approved. Approvals are
// edits: undo / redo, a modified marker, and a save-or-discard prompt before anything replaces them.
#include <QFile>
#include <QTest>
#include <QUndoStack>

#include "approval_panel.h"
#include "exports.h"
#include "main_window.h"
#include "models/approval_model.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestApproval : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void approveRejectPredict() {
    SessionDocument doc;
    ApprovalPanel panel(&doc);
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(uitest::sampleSession()).dump()), QStringLiteral("sample"), true);
    ApprovalModel* m = panel.model();
    QCOMPARE(m->rowCount(), 1);
    QCOMPARE(doc.profile().entries.front().approval, Approval::Approved);  // significant: preselected

    // Approved: the q4_K shape counts at 90 µs instead of 100 µs.
    const Estimate on = doc.approvedEstimate();
    QVERIFY(on.tuned_tokens_per_s > on.default_tokens_per_s);
    QVERIFY(qAbs(on.default_us_per_token - (64 * 100.0 + 32 * 150.0)) < 1e-6);
    QVERIFY(qAbs(on.tuned_us_per_token - (64 * 90.0 + 32 * 150.0)) < 1e-6);
    QVERIFY(panel.predictionText().contains(QString::number(on.tuned_tokens_per_s, 'f', 1)));

    // Reject through the model (what unticking the box does): back to the default everywhere.
    QVERIFY(m->setData(m->index(0, ApprovalModel::Approve), int(Qt::Unchecked), Qt::CheckStateRole));
    QCOMPARE(doc.profile().entries.front().approval, Approval::Rejected);
    const Estimate off = doc.approvedEstimate();
    QCOMPARE(off.tuned_us_per_token, off.default_us_per_token);
    QVERIFY(panel.predictionText().contains(QStringLiteral("0 of 1 winners approved")));

    // "Approve all significant" brings it back.
    QCOMPARE(doc.approveSignificant(), 1);
    QCOMPARE(doc.profile().entries.front().approval, Approval::Approved);
  }

  void undoRedoApprovals() {
    QTemporaryDir dir;
    SessionDocument doc;
    ApprovalPanel panel(&doc);
    const QByteArray json = QByteArray::fromStdString(to_json(uitest::sampleSession()).dump());
    doc.openSessionFromJson(json, QStringLiteral("sample"), true);  // read-only: approvals are edits all the same
    ApprovalModel* m = panel.model();
    const ProfileKey key = doc.profile().entries.front().key;
    QVERIFY(!doc.isDirty());
    QVERIFY(m->setData(m->index(0, ApprovalModel::Approve), int(Qt::Unchecked), Qt::CheckStateRole));
    QCOMPARE(doc.profile().entries.front().approval, Approval::Rejected);
    QVERIFY(doc.hasUnsavedApprovals() && doc.isDirty());
    QVERIFY(panel.predictionText().contains(QStringLiteral("0 of 1 winners approved")));
    QUndoStack* undo = doc.undoStack();
    QCOMPARE(undo->count(), 1);
    undo->undo();
    QCOMPARE(doc.profile().entries.front().approval, Approval::Approved);
    QVERIFY(!doc.isDirty());  // back where it was opened
    QVERIFY(panel.predictionText().contains(QStringLiteral("1 of 1 winners approved")));
    undo->redo();
    QCOMPARE(doc.profile().entries.front().approval, Approval::Rejected);
    QVERIFY(doc.isDirty());
    // What changes nothing is no step; a note is one.
    doc.setApproval(key, Approval::Rejected);
    QCOMPARE(undo->count(), 1);
    doc.setNote(key, QStringLiteral("throttles when hot"));
    QCOMPARE(undo->count(), 2);
    undo->undo();
    QCOMPARE(doc.profile().entries.front().note, std::string());
    undo->redo();
    // Saved as a profile, they are clean; loaded into a fresh document they come back (one undoable step).
    const QString path = dir.filePath(QStringLiteral("approvals.temper-profile.json"));
    doc.saveApprovals(path);
    QVERIFY(!doc.isDirty());
    SessionDocument fresh;
    fresh.openSessionFromJson(json, QStringLiteral("sample"), true);
    QCOMPARE(fresh.profile().entries.front().approval, Approval::Approved);
    QCOMPARE(fresh.loadApprovals(path), 1);
    QCOMPARE(fresh.profile().entries.front().approval, Approval::Rejected);
    QCOMPARE(fresh.profile().entries.front().note, std::string("throttles when hot"));
    QVERIFY(fresh.isDirty());
    fresh.undoStack()->undo();
    QCOMPARE(fresh.profile().entries.front().approval, Approval::Approved);
  }

  // Nothing replaces unsaved approvals without asking: Cancel keeps them, Save writes them as a
  // profile first, Discard drops them.
  void saveOrDiscardBeforeReplacing() {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("a.json")), b = dir.filePath(QStringLiteral("b.json"));
    save_session(uitest::sampleSession(), a.toStdString());
    save_session(uitest::sampleSession(), b.toStdString());
    MainWindow w({});
    w.setInteractive(false);
    QStringList asked;
    QMessageBox::StandardButton answer = QMessageBox::Cancel;
    QString saveTo;
    w.setPrompts({[&](const QString&, const QString& text, QMessageBox::StandardButtons) {
                    asked << text;
                    return answer;
                  },
                  [&](const QString&, const QString&, const QString&) { return saveTo; }});
    QVERIFY(w.openPath(a));
    QVERIFY(asked.isEmpty());  // nothing unsaved: no question
    const ProfileKey key = w.document()->profile().entries.front().key;
    w.document()->setApproval(key, Approval::Rejected);
    QVERIFY(w.windowTitle().contains(QStringLiteral("a.json *")));
    // Cancel: the document stays, with its change.
    QVERIFY(!w.openPath(b));
    QCOMPARE(asked.size(), 1);
    QVERIFY2(asked[0].contains(QStringLiteral("approvals are not saved")), qPrintable(asked[0]));
    QCOMPARE(w.document()->path(), a);
    QCOMPARE(w.document()->profile().entries.front().approval, Approval::Rejected);
    // Save, but no file chosen: still cancelled.
    answer = QMessageBox::Save;
    QVERIFY(!w.openPath(b));
    QCOMPARE(w.document()->path(), a);
    // Save to a file: the approvals are written as a profile, then the other session opens.
    saveTo = dir.filePath(QStringLiteral("kept.temper-profile.json"));
    QVERIFY(w.openPath(b));
    QCOMPARE(w.document()->path(), b);
    QCOMPARE(find_entry(load_profile(saveTo.toStdString()), key)->approval, Approval::Rejected);
    QVERIFY(!w.windowTitle().contains(QStringLiteral(" *")));
    // Discard: nothing written, the change is gone with the document; so for the demo and a close.
    w.document()->setApproval(key, Approval::Rejected);
    answer = QMessageBox::Discard;
    saveTo = dir.filePath(QStringLiteral("never.json"));
    QVERIFY(w.openPath(a));
    QVERIFY(!QFile::exists(saveTo));
    QCOMPARE(w.document()->profile().entries.front().approval, Approval::Approved);
    w.document()->setApproval(key, Approval::Rejected);
    answer = QMessageBox::Cancel;
    QVERIFY(!w.close());  // closing asks too
    QCOMPARE(asked.size(), 5);
  }

  void exportedProfileHoldsApprovals() {
    QTemporaryDir dir;
    SessionDocument doc;
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(uitest::sampleSession()).dump()), QStringLiteral("sample"), true);
    const ProfileKey key = doc.profile().entries.front().key;
    doc.setNote(key, QStringLiteral("stable across boots"));
    const QString path = dir.filePath(QStringLiteral("p.temper-profile.json"));
    exportProfile(doc, ProfileFormat::Temper, path);
    const Profile p = load_profile(path.toStdString());
    const ProfileEntry* e = find_entry(p, key);
    QVERIFY(e);
    QCOMPARE(e->approval, Approval::Approved);
    QCOMPARE(e->config, (Config{2, 1}));
    QCOMPARE(e->note, std::string("stable across boots"));
    QVERIFY(e->provenance);
    QCOMPARE(e->provenance->session_id, uitest::sampleSession().id);
    // The C++ header carries the approved config for the device's arch.
    const QString header = dir.filePath(QStringLiteral("p.h"));
    exportProfile(doc, ProfileFormat::Header, header);
    QFile f(header);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("14336"));
  }
};
TEMPER_UI_TEST(TestApproval);
#include "approval_test.moc"
