// The shape table and approval models against the sample session: values, statuses, sorting,
// filtering, and Qt's own model consistency checks.
#include <QAbstractItemModelTester>
#include <QTest>

#include "exports.h"
#include "models/approval_model.h"
#include "models/shape_table_model.h"
#include "ui_test_util.h"

using namespace temper;
using namespace temper::ui;

class TestModels : public QObject {
  Q_OBJECT
  static QString cell(const QAbstractItemModel& m, int row, int col) { return m.index(row, col).data().toString(); }

 private Q_SLOTS:
  void emptyDocument() {
    SessionDocument doc;
    ShapeTableModel m(&doc);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(m.columnCount(), int(ShapeTableModel::ColumnCount));
    QCOMPARE(m.headerData(ShapeTableModel::Speedup, Qt::Horizontal).toString(), QStringLiteral("speedup"));
    QCOMPARE(m.headerData(ShapeTableModel::Speedup, Qt::Horizontal, kColumnNameRole).toString(), QStringLiteral("speedup ± CI"));
  }

  void shapeTableValues() {
    SessionDocument doc;
    ShapeTableModel m(&doc);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QByteArray json = QByteArray::fromStdString(to_json(uitest::sampleSession()).dump());
    doc.openSessionFromJson(json, QStringLiteral("sample"), true);
    QCOMPARE(m.rowCount(), 2);
    const int q4 = m.rowOf(GgmlType::Q4_K, 14336, 4096), q6 = m.rowOf(GgmlType::Q6_K, 4096, 14336);
    QVERIFY(q4 >= 0 && q6 >= 0 && q4 != q6);
    QCOMPARE(cell(m, q4, ShapeTableModel::Type), QStringLiteral("q4_K"));
    QCOMPARE(cell(m, q4, ShapeTableModel::N), QStringLiteral("14336"));
    QCOMPARE(cell(m, q4, ShapeTableModel::K), QStringLiteral("4096"));
    QCOMPARE(cell(m, q4, ShapeTableModel::CallsPerToken), QStringLiteral("64"));
    // 64 calls × 14336 rows × 4096/256 blocks × 144 bytes = 2113.9 MB per token.
    QCOMPARE(cell(m, q4, ShapeTableModel::MBPerToken), QStringLiteral("2113.9"));
    const double q4_bytes = 64.0 * 14336 * 4096 / 256 * 144, q6_bytes = 32.0 * 4096 * 14336 / 256 * 210;
    QCOMPARE(cell(m, q4, ShapeTableModel::PercentBytes), QString::number(100 * q4_bytes / (q4_bytes + q6_bytes), 'f', 1));
    QCOMPARE(cell(m, q4, ShapeTableModel::DefaultUs), QStringLiteral("100.00"));
    QCOMPARE(cell(m, q4, ShapeTableModel::BestUs), QStringLiteral("90.00"));
    QVERIFY(cell(m, q4, ShapeTableModel::Speedup).startsWith(QStringLiteral("1.111×")));
    // q6_K: {2,1} is faster on the median but its CI overlaps the default's: the default stays.
    QCOMPARE(cell(m, q6, ShapeTableModel::BestUs), QStringLiteral("150.00"));
    QVERIFY(cell(m, q6, ShapeTableModel::Speedup).startsWith(QStringLiteral("1.000×")));
    // The significant q4_K winner comes preselected; q6_K is swept; rejecting shows the failed config.
    QCOMPARE(cell(m, q4, ShapeTableModel::Status), QStringLiteral("approved"));
    QCOMPARE(cell(m, q6, ShapeTableModel::Status), QStringLiteral("swept"));
    doc.setApproval(doc.profile().entries.front().key, Approval::Rejected);
    QCOMPARE(cell(m, q4, ShapeTableModel::Status), QStringLiteral("failed verification"));
    // Times follow the selected ncols: nothing was measured at ncols 2.
    Selection s = doc.selection();
    s.ncols = 2;
    doc.select(s);
    QCOMPARE(cell(m, q4, ShapeTableModel::DefaultUs), QString());
  }

  void sortAndFilter() {
    SessionDocument doc;
    ShapeTableModel m(&doc);
    ShapeFilterProxy proxy;
    proxy.setSourceModel(&m);
    proxy.setSortRole(ShapeTableModel::SortRole);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(uitest::sampleSession()).dump()), QStringLiteral("sample"), true);
    proxy.sort(ShapeTableModel::MBPerToken, Qt::AscendingOrder);
    QCOMPARE(cell(proxy, 0, ShapeTableModel::Type), QStringLiteral("q6_K"));  // 1541 MB < 2114 MB
    proxy.sort(ShapeTableModel::MBPerToken, Qt::DescendingOrder);
    QCOMPARE(cell(proxy, 0, ShapeTableModel::Type), QStringLiteral("q4_K"));
    proxy.sort(ShapeTableModel::DefaultUs, Qt::AscendingOrder);  // numeric, not text: 100 < 150
    QCOMPARE(cell(proxy, 0, ShapeTableModel::DefaultUs), QStringLiteral("100.00"));
    proxy.setFilterText(QStringLiteral("q6"));
    QCOMPARE(proxy.rowCount(), 1);
    QCOMPARE(cell(proxy, 0, ShapeTableModel::Type), QStringLiteral("q6_K"));
    proxy.setFilterText(QStringLiteral("14336x4096"));
    QCOMPARE(proxy.rowCount(), 1);
    QCOMPARE(cell(proxy, 0, ShapeTableModel::Type), QStringLiteral("q4_K"));
    proxy.setFilterText(QStringLiteral("q4_K q6_K"));  // every word must match
    QCOMPARE(proxy.rowCount(), 0);
    proxy.setFilterText(QString());
    QCOMPARE(proxy.rowCount(), 2);
  }

  void approvalModel() {
    SessionDocument doc;
    ApprovalModel m(&doc);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    doc.openSessionFromJson(QByteArray::fromStdString(to_json(uitest::sampleSession()).dump()), QStringLiteral("sample"), true);
    QCOMPARE(m.rowCount(), 1);  // one winner: q4_K {2,1}
    QCOMPARE(cell(m, 0, ApprovalModel::Tuned), QStringLiteral("2×1"));
    QCOMPARE(cell(m, 0, ApprovalModel::Default), QStringLiteral("4×1"));
    QCOMPARE(cell(m, 0, ApprovalModel::Significant), QStringLiteral("yes"));
    QCOMPARE(m.index(0, ApprovalModel::Approve).data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QVERIFY(m.flags(m.index(0, ApprovalModel::Note)) & Qt::ItemIsEditable);
    QVERIFY(m.setData(m.index(0, ApprovalModel::Note), QStringLiteral("checked on two boots")));
    QCOMPARE(doc.profile().entries.front().note, std::string("checked on two boots"));
  }
};
TEMPER_UI_TEST(TestModels);
#include "models_test.moc"
