#pragma once
// nwarps × rows_per_block heatmap of the selected shape and ncols, painted by hand (QPainter):
// cells coloured by the chosen metric with the value printed, default and winner marked, failed
// and invalid cells hatched, a tooltip per cell, a colour legend. Clicking a cell selects its config.
#include <QWidget>

#include "heatmap_data.h"

namespace temper::ui {

class HeatmapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapWidget(SessionDocument* doc, QWidget* parent = nullptr);
  void setMetric(HeatMetric m);
  HeatMetric metric() const { return metric_; }
  const HeatGrid& grid() const { return grid_; }
  // Geometry, for painting, hit tests and tests.
  QRect cellRect(int row, int col) const;
  std::optional<Config> configAt(QPoint p) const;
  // Paints into any device (the widget, a PNG, an SVG) at `size`.
  void paintHeatmap(QPainter& p, QSize size) const;
  QSize sizeHint() const override { return {720, 480}; }

 protected:
  void paintEvent(QPaintEvent*) override;
  bool event(QEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;

 private:
  struct Layout {
    QRect grid;
    int cell_w = 0, cell_h = 0;
    QRect legend;
  };
  Layout layout(QSize size) const;
  void rebuild();

  SessionDocument* doc_;
  HeatMetric metric_ = HeatMetric::TokensPerS;
  HeatGrid grid_;
};

}  // namespace temper::ui
