// temper_render_icon SVG SIZE OUT.png: the application icon as a PNG of one size, for the
// hicolor theme of an install (built from the one SVG, so the sizes never drift from it).
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgRenderer>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const int size = argc == 4 ? std::atoi(argv[2]) : 0;
  if (size < 8 || size > 1024) {
    std::fprintf(stderr, "usage: temper_render_icon SVG SIZE(8..1024) OUT.png\n");
    return 2;
  }
  QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
  if (!svg.isValid()) {
    std::fprintf(stderr, "temper_render_icon: %s: not a readable SVG\n", argv[1]);
    return 2;
  }
  QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  svg.render(&painter);
  painter.end();
  QSaveFile out(QString::fromLocal8Bit(argv[3]));  // written aside, renamed on commit
  if (!out.open(QIODevice::WriteOnly) || !image.save(&out, "PNG") || !out.commit()) {
    std::fprintf(stderr, "temper_render_icon: cannot write %s\n", argv[3]);
    return 6;
  }
  return 0;
}
