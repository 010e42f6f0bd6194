#pragma once
// Roofline (QtCharts, log-log) of core's build_roofline: every verified result of the current device
// as a point (x = ops/byte, y = op/s), default / winner / other configs as separate series, the
// bandwidth ceilings sloped and the compute peaks flat, SI-labelled ticks. Zoom: drag a rectangle,
// the wheel or +/-; pan: drag with the right or middle button, or the arrow keys; double-click or 0
// shows everything again. Hover a point for its numbers; clicking one selects its shape, ncols and
// config; the document's selection is ringed.
#include <QChartView>
#include <QScatterSeries>
#include <optional>
#include <vector>

#include "session_doc.h"
#include "temper/roofline.h"

class QRubberBand;

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
  // Where a result is drawn, in the view's coordinates.
  QPoint positionOf(const RooflinePoint& p) const;
  // The point within a few pixels of `pos` (series, index), and its hover text ("" for none).
  std::optional<std::pair<int, int>> pointAt(QPoint pos) const;
  QString tooltipAt(QPoint pos) const;
  // Zoom by `factor` (> 1: in) about `pos`; shows everything again.
  void zoomAt(QPoint pos, double factor);
  void resetZoom();
  // The visible ranges in data units: ops/byte and op/s.
  QRectF visibleRange() const;

 protected:
  bool viewportEvent(QEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void keyPressEvent(QKeyEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

 private:
  void placeLegend();  // beside the plot in a wide view, under it in a narrow one
  void showChart(QChart* chart);
  void rebuild();
  void updateSelection();

  SessionDocument* doc_;
  std::vector<SeriesResults> points_;
  QScatterSeries* selected_ = nullptr;
  QRubberBand* band_ = nullptr;
  QPoint press_, last_;
  Qt::MouseButton dragging_ = Qt::NoButton;
};

// "200 G", "1.5 T": a value with an SI prefix (k M G T P E), at most three significant digits.
QString siText(double v);

}  // namespace temper::ui
