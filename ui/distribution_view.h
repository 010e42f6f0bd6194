#pragma once
// A closer look at the timings of the selected shape and ncols: per verified config a box of its
// samples (whiskers min–max, box p10–p90, the median, its 95% CI as a bar), fastest first, default and
// winner marked; below, the selected config's samples in the order they were taken (drift of clocks
// or heat shows as a slope). Painted by hand, like the heatmap; clicking a row selects its config.
#include <QWidget>
#include <vector>

#include "session_doc.h"

namespace temper::ui {

struct DistributionRow {
  Config config;
  const Result* result = nullptr;  // into the document's session, status Ok
  bool is_default = false, is_winner = false;
};
// The verified results of the selection's shape and ncols, fastest median first.
std::vector<DistributionRow> distributionRows(const Session& s, const Selection& sel);

class DistributionView : public QWidget {
  Q_OBJECT
 public:
  explicit DistributionView(SessionDocument* doc, QWidget* parent = nullptr);
  const std::vector<DistributionRow>& rows() const { return rows_; }
  QRect rowRect(int row) const;     // one row of boxes
  QRect traceRect() const;          // the sample-order plot
  // The config whose samples the order plot shows: the selected one, else the winner, else the fastest.
  const DistributionRow* traced() const;
  QString traceText() const;        // what the order plot says ("not recorded" for older sessions)
  void paintView(QPainter& p, QSize size) const;
  QSize sizeHint() const override { return {720, 560}; }

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* e) override;

 private:
  struct Layout {
    QRect labels, boxes, trace;
    int row_h = 0;
  };
  Layout layout(QSize size) const;
  void rebuild();

  SessionDocument* doc_;
  std::vector<DistributionRow> rows_;
};

}  // namespace temper::ui
