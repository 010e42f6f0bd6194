#pragma once
// What the export dialog writes. Every file goes through temper::write_file_atomic (temporary sibling,
// fsync, rename): a failed export leaves the previous file as it was. Errors are temper::Error.
#include <QSize>
#include <QString>
#include <Qt>

#include "session_doc.h"

class QAbstractItemModel;
class QWidget;

namespace temper::ui {

enum class ProfileFormat { Temper, KernelAnvil, Header, GgmlTable };
std::string_view formatName(ProfileFormat f);  // core's name: "temper", "kernel-anvil", ...
// The profile's approved entries for the current device's arch; returns what happened to each entry.
// A file that would carry no config is refused (Error(BadInput), nothing written).
ExportReport exportProfile(const SessionDocument& doc, ProfileFormat format, const QString& path);
// Why a profile export in `format` cannot be made from the document now (nothing it can carry, no
// winners, ...), or "" when it can: the dialog leaves such an item unticked and says why.
QString profileExportProblem(const SessionDocument& doc, ProfileFormat format);
// "as exported, the engine runs 352.4 tokens/s (default 338.6, approved 353.9; ...)": the estimate of
// what a file of `format` makes the engine launch on the current device; "" without a measurement.
QString exportedEstimateText(const SessionDocument& doc, ProfileFormat format);
// Every result of the session, one row each (core's CSV).
void exportResultsCsv(const Session& s, const QString& path);
// A column's full name for CSV headers, where a model's header shows a shorter label (the shape
// table in a narrow dock); models without it give their display text.
constexpr int kColumnNameRole = Qt::UserRole + 100;
// Any table model as CSV, display text, header first (RFC 4180 quoting).
QString tableCsv(const QAbstractItemModel& model);
void exportTableCsv(const QAbstractItemModel& model, const QString& path);
// A view as an image: `.svg` as vector graphics (QSvgGenerator), anything else as PNG. A chart is
// drawn at least kChartImageSize (a hidden tab's 640×480 would cut its legend); a view that draws a
// selection (the heatmap's box) draws none in the image.
inline constexpr QSize kChartImageSize{1400, 900};
void exportImage(QWidget& widget, const QString& path);
// "Save image…" in `view`'s context menu: asks where (PNG, or SVG by the name) and writes it.
void addSaveImageAction(QWidget* view, const QString& suggested_name);

}  // namespace temper::ui
