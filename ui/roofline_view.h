#pragma once
// Roofline (QtCharts, log-log) of core's build_roofline: every verified result of the current device
// as a point (x = ops/byte, y = Gop/s), default / winner / other configs as separate series, the
// bandwidth ceilings sloped and the compute peaks flat. Clicking a point
// selects its shape, ncols and config; the document's selection is ringed.
#include <QChartView>
#include <QScatterSeries>
#include <vector>

#include "session_doc.h"
#include "temper/roofline.h"

namespace temper::ui {

class RooflineView : public QChartView {
  Q_OBJECT
 public:
  explicit RooflineView(SessionDocument* doc, QWidget* parent = nullptr);
  // The points behind each point series (same order as the series' points), for tests.
  struct SeriesResults {
    QScatterSeries* series = nullptr;
    std::vector<RooflinePoint> results;
  };
  const std::vector<SeriesResults>& pointSeries() const { return points_; }
  QScatterSeries* selectedSeries() const { return selected_; }
  // Selects the result shown at `index` of point series `series` (what a click does).
  void selectPoint(int series, int index);

 private:
  void showChart(QChart* chart);
  void rebuild();
  void updateSelection();
  void hover(int series, const QPointF& p, bool state);

  SessionDocument* doc_;
  std::vector<SeriesResults> points_;
  QScatterSeries* selected_ = nullptr;
};

}  // namespace temper::ui
