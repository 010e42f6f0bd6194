#pragma once
// Whole-file I/O that never leaves a half-written file behind.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace temper {

struct WriteOptions {
  bool force = false;  // replace a read-only file (--force)
};

// Writes `content` to a temporary sibling of `path`, fsyncs it and renames it over `path`.
// On any failure the previous file (if any) is untouched and an Error(Io) is thrown. A symbolic
// link is written through (its target replaced, the link kept); an existing target keeps its
// permissions; temporaries of `path` left by killed writers (older than 10 minutes) are removed.
// Only a regular file or a new path is replaced: a read-only file is refused (Error(BadInput))
// unless options.force; a FIFO, a character device (/dev/null, /dev/full, a terminal) or an open
// descriptor (/dev/stdout, /dev/fd/N) is written into directly, never replaced (a FIFO without a
// reader is refused at once); a directory, a block device or a socket is refused.
void write_file_atomic(const std::filesystem::path& path, std::string_view content, const WriteOptions& options = {});

// Same, for content produced by a writer callback into a stream (large exports), streamed to the
// file as it is produced (never held whole in memory).
void write_file_atomic(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write,
                       const WriteOptions& options = {});

// The checks write_file_atomic makes before writing, alone, and that the output's folder exists
// and is writable: commands call it before long work, so an output that will be refused is
// refused at once.
void check_output(const std::filesystem::path& path, const WriteOptions& options = {});

// Whether writing `path` goes into an existing node (a FIFO, a device, a descriptor path) instead
// of replacing a file: then nothing can be put beside it (a sweep's journal goes elsewhere).
bool written_in_place(const std::filesystem::path& path);

// What a stat mode that is not a regular file is, for messages: "a FIFO", "a directory", ...
const char* node_kind(unsigned mode);

// A file-size limit (RLIMIT_FSIZE) makes writes fail with EFBIG, reported as Error(Io), instead
// of SIGXFSZ killing the process with a temporary file left behind. Writers call it; idempotent,
// and it leaves a handler someone else installed alone.
void ignore_file_size_signal();

// The user's own cache folder NAME ("engine", "kernels", "tune"): $XDG_CACHE_HOME/temper/NAME, else
// ~/.cache/temper/NAME; Error(BadInput) when neither variable is set (never a shared folder like /tmp,
// where another user could plant what Temper runs).
std::filesystem::path user_cache_dir(std::string_view name);

// Creates `dir` and its missing parents private to the user (0700), then checks that `dir` is a
// folder, not a symbolic link, owned by this user and writable by nobody else: Error(BadInput)
// naming it otherwise. Called before anything in a cache folder is run, loaded or written.
void ensure_private_dir(const std::filesystem::path& dir);

// Reads a whole file; Error(Io) naming the path on failure.
std::string read_file(const std::filesystem::path& path);

}  // namespace temper
