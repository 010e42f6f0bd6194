#pragma once
// Where an installed Temper keeps its run-time data.
#include <filesystem>
#include <optional>

namespace temper {

// <prefix>/share/temper when the running executable is an installed one (<prefix>/bin/temper,
// `cmake --install` or the Debian package): found from the executable's own path, so the prefix
// may be anything and may move. nullopt when the executable runs from its build tree.
std::optional<std::filesystem::path> installed_data_dir();

}  // namespace temper
