#pragma once
// A path typed or picked in the GUI as the file system spells it (QFile's local 8-bit encoding), so a
// name that is not valid UTF-8 survives.
#include <QFile>
#include <QString>
#include <filesystem>

namespace temper::ui {

inline std::filesystem::path fsPath(const QString& path) { return QFile::encodeName(path).toStdString(); }

}  // namespace temper::ui
