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
// On any failure the previous file (if any) is untouched and an Error(Io) is thrown. A symbolic
// link is written through (its target replaced, the link kept); an existing target keeps its
// permissions; temporaries of `path` left by killed writers (older than 10 minutes) are removed.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Same, for content produced by a writer callback into a stream (large exports), streamed to the
// file as it is produced (never held whole in memory).
void write_file_atomic(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

// A file-size limit (RLIMIT_FSIZE) makes writes fail with EFBIG, reported as Error(Io), instead
// of SIGXFSZ killing the process with a temporary file left behind. Writers call it; idempotent,
// and it leaves a handler someone else installed alone.
void ignore_file_size_signal();

// Reads a whole file; Error(Io) naming the path on failure.
std::string read_file(const std::filesystem::path& path);

}  // namespace temper
