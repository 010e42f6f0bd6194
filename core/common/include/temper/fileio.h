#pragma once
// Whole-file I/O that never leaves a half-written file behind.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace temper {

// Writes `content` to a temporary sibling of `path`, fsyncs it and renames it over `path`.
// On any failure the previous file (if any) is untouched and an Error(Io) is thrown.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Same, for content produced by a writer callback into a stream (large exports).
void write_file_atomic(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

// Reads a whole file; Error(Io) naming the path on failure.
std::string read_file(const std::filesystem::path& path);

}  // namespace temper
