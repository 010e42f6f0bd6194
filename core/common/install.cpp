#include "temper/install.h"

namespace temper {

std::optional<std::filesystem::path> installed_data_dir() {
  namespace fs = std::filesystem;
  static const std::optional<fs::path> dir = []() -> std::optional<fs::path> {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    // TEMPER_DATA_FROM_BIN: the install's datadir relative to its bindir ("../share/temper").
    const fs::path data = (exe.parent_path() / TEMPER_DATA_FROM_BIN).lexically_normal();
    if (!fs::is_directory(data, ec)) return std::nullopt;
    return data;
  }();
  return dir;
}

}  // namespace temper
