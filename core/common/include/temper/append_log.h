#pragma once
// An append-only file of lines, the shape of every Temper journal (the sweep's, tune's): a first
// line written atomically (a log is never seen without it), then one line per record, each written
// with one write() and fsync'd before append() returns, so a kill -9 tears at most the last line.
// An exclusive lock (flock) is held for as long as the log is open: a second writer is refused.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "temper/fileio.h"

namespace temper {

class AppendLog {
 public:
  // `kind` names the file in messages ("journal"), `owner` the program that holds it ("temper sweep").
  // Error(BadInput) when `path` is a FIFO or a device; `options` as for write_file_atomic.
  static AppendLog create(const std::filesystem::path& path, std::string_view first_line, std::string_view kind,
                          std::string_view owner, const WriteOptions& options = {});
  // An existing log, cut after its last good line (`valid_bytes`); a newline is added when that
  // line lacks one.
  static AppendLog reopen(const std::filesystem::path& path, size_t valid_bytes, bool missing_newline,
                          std::string_view kind, std::string_view owner);
  AppendLog(AppendLog&& o) noexcept;
  AppendLog& operator=(AppendLog&&) = delete;
  ~AppendLog();
  void append(std::string_view line);  // thread-safe; `line` ends with '\n'
  const std::filesystem::path& path() const { return path_; }

 private:
  AppendLog(std::filesystem::path path, int fd, std::string kind);
  std::filesystem::path path_;
  int fd_ = -1;
  std::string kind_;
  std::mutex mutex_;
};

// A log's text as lines for a reader that tolerates a kill: `good` judges (and may keep) each
// line; every line but the last must be good (else Error(BadInput) "NAME:LINE: garbled <kind>
// line ..."), a last line that is not is dropped as torn; the first must be good (else "NAME:1: not
// a <kind> ..."); an empty text is Error(BadInput) too.
struct LogLines {
  size_t good_lines = 0;
  bool dropped_last_line = false;
  bool missing_newline = false;  // the last good line lacks its '\n'
  size_t valid_bytes = 0;        // bytes up to and including the last good line
};
LogLines split_log(std::string_view text, const std::string& name, std::string_view kind,
                   const std::function<bool(std::string_view line)>& good);

}  // namespace temper
