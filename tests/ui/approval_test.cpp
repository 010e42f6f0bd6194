// Approval → profile: preselection of significant winners, approve / reject per row, the live
// predicted tokens/s, and the exported profile holding exactly what was approved.
#include <QTest>

#include "approval_panel.h"
#include "exports.h"
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
