#include "exports.h"

#include <QAbstractItemModel>
#include <QBuffer>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <QAction>
#include <QChart>
#include <QChartView>
#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QGraphicsLayout>
#include <QMessageBox>
#include <QResizeEvent>
#include <QSettings>
#include <QWidget>
#include <functional>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/ggml_table.h"

namespace temper::ui {

namespace {
void write(const QString& path, std::string_view bytes) { write_file_atomic(path.toStdString(), bytes); }
}  // namespace

namespace {
Export profileExport(const SessionDocument& doc, ProfileFormat format) {
  const Profile& p = doc.profile();
  if (p.entries.empty()) fail(ErrorKind::BadInput, "the session has no proposed winners to export");
  ExportOptions o;
  if (const SessionDevice* d = doc.currentDevice()) o.arch = d->info.arch;
  return format == ProfileFormat::Temper        ? export_temper(p)
         : format == ProfileFormat::KernelAnvil ? export_kernel_anvil(p, o)
         : format == ProfileFormat::GgmlTable   ? export_ggml_table(p, o, doc.hasSession() ? &doc.session() : nullptr)
                                                : export_header(p, o);
}
}  // namespace

ExportReport exportProfile(const SessionDocument& doc, ProfileFormat format, const QString& path) {
  const Export e = profileExport(doc, format);
  // A file that would make the engine run nothing but its defaults is not written.
  if (const std::string why = empty_export_reason(e); !why.empty())
    fail(ErrorKind::BadInput, QFileInfo(path).fileName().toStdString() + " not written: " + why);
  write(path, e.content);
  return e.report;
}

QString profileExportProblem(const SessionDocument& doc, ProfileFormat format) {
  try {
    return qstr(empty_export_reason(profileExport(doc, format)));
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
}

std::string_view formatName(ProfileFormat f) {
  switch (f) {
    case ProfileFormat::Temper: return "temper";
    case ProfileFormat::KernelAnvil: return "kernel-anvil";
    case ProfileFormat::Header: return "header";
    case ProfileFormat::GgmlTable: return "ggml-table";
  }
  return "temper";
}

QString exportedEstimateText(const SessionDocument& doc, ProfileFormat format) {
  const SessionDevice* d = doc.currentDevice();
  if (!d) return {};
  const Estimate e = estimate_exported(doc.session(), d->info.index, doc.profile(), formatName(format));
  if (e.shapes_measured == 0) return {};
  return QStringLiteral("as exported, the engine runs %1 tokens/s (default %2, approved %3; %4)")
      .arg(e.tuned_tokens_per_s, 0, 'f', 1).arg(e.default_tokens_per_s, 0, 'f', 1)
      .arg(doc.approvedEstimate().tuned_tokens_per_s, 0, 'f', 1).arg(qstr(e.label));
}

void exportResultsCsv(const Session& s, const QString& path) { write(path, export_csv(s).content); }

QString tableCsv(const QAbstractItemModel& model) {
  auto cell = [](QString t) {
    if (t.contains(QLatin1Char(',')) || t.contains(QLatin1Char('"')) || t.contains(QLatin1Char('\n')))
      t = QLatin1Char('"') + t.replace(QStringLiteral("\""), QStringLiteral("\"\"")) + QLatin1Char('"');
    return t;
  };
  QString out;
  QStringList row;
  for (int c = 0; c < model.columnCount(); ++c) {
    const QVariant name = model.headerData(c, Qt::Horizontal, kColumnNameRole);
    row << cell((name.isValid() ? name : model.headerData(c, Qt::Horizontal)).toString());
  }
  out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < model.rowCount(); ++r) {
    row.clear();
    for (int c = 0; c < model.columnCount(); ++c) row << cell(model.index(r, c).data().toString());
    out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

void exportTableCsv(const QAbstractItemModel& model, const QString& path) {
  const QByteArray bytes = tableCsv(model).toUtf8();
  write(path, std::string_view(bytes.constData(), size_t(bytes.size())));
}

void exportImage(QWidget& widget, const QString& path) {
  // A chart laid out at the image's size, then restored (the view may be a hidden tab's).
  auto* view = qobject_cast<QChartView*>(&widget);
  const QSize shown = widget.size();
  const bool resize = view && (shown.width() < kChartImageSize.width() || shown.height() < kChartImageSize.height());
  auto layOut = [&](QSize size) {
    widget.resize(size);
    QResizeEvent e(size, widget.size());
    QCoreApplication::sendEvent(&widget, &e);
    if (view->chart()->layout()) view->chart()->layout()->activate();
  };
  if (resize) layOut(kChartImageSize.expandedTo(shown));
  widget.setProperty("exporting", true);
  struct Restore {
    std::function<void()> fn;
    ~Restore() { fn(); }
  } restore{[&] {
    widget.setProperty("exporting", false);
    if (resize) layOut(shown);
  }};
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setSize(widget.size());
    svg.setViewBox(QRect(QPoint(0, 0), widget.size()));
    svg.setTitle(widget.windowTitle());
    svg.setDescription(QStringLiteral("Temper"));
    QPainter p(&svg);
    widget.render(&p);
    p.end();
  } else {
    const QImage image = widget.grab().toImage();
    if (image.isNull() || !image.save(&buffer, "PNG"))
      fail(ErrorKind::Io, path.toStdString() + ": could not encode the image as PNG");
  }
  write(path, std::string_view(bytes.constData(), size_t(bytes.size())));
}

void addSaveImageAction(QWidget* view, const QString& suggested_name) {
  auto* save = new QAction(QStringLiteral("Save image…"), view);
  QObject::connect(save, &QAction::triggered, view, [view, suggested_name] {
    const QString path = QFileDialog::getSaveFileName(view, QStringLiteral("Save image"),
                                                      QDir(QSettings().value(QStringLiteral("export/dir")).toString()).filePath(suggested_name),
                                                      QStringLiteral("PNG image (*.png);;SVG image (*.svg)"));
    if (path.isEmpty()) return;
    try {
      exportImage(*view, path);
    } catch (const std::exception& e) {
      QMessageBox::warning(view, QStringLiteral("Save image"),
                           QStringLiteral("The image could not be saved: %1").arg(QString::fromStdString(e.what())));
    }
  });
  view->addAction(save);
  if (view->contextMenuPolicy() == Qt::DefaultContextMenu) view->setContextMenuPolicy(Qt::ActionsContextMenu);
}

}  // namespace temper::ui
