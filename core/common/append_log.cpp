#include "temper/append_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"

namespace temper {
namespace {

void write_all(int fd, std::string_view data, const std::filesystem::path& path, const std::string& kind) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(ErrorKind::Io, "cannot append to " + kind + " " + path.string() + ": " + errno_text());
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void sync(int fd, const std::filesystem::path& path, const std::string& kind) {
  if (::fsync(fd) != 0) fail(ErrorKind::Io, "cannot sync " + kind + " " + path.string() + ": " + errno_text());
}

// One writer per log: an exclusive lock for as long as it is open. Closes `fd` when refusing.
void lock(int fd, const std::filesystem::path& path, std::string_view kind, std::string_view owner) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  const int e = errno;
  ::close(fd);
  if (e == EWOULDBLOCK)
    fail(ErrorKind::BadInput, std::string(kind) + " " + path_text(path) + " is in use by another " + std::string(owner) +
                                  " (let it finish, or stop it first)");
  fail(ErrorKind::Io, "cannot lock " + std::string(kind) + " " + path_text(path) + ": " + std::strerror(e));
}

int open_locked(const std::filesystem::path& path, int flags, std::string_view kind, std::string_view owner) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::Io, "cannot open " + std::string(kind) + " " + path.string() + ": " + errno_text());
  lock(fd, path, kind, owner);
  return fd;
}

}  // namespace

AppendLog::AppendLog(std::filesystem::path path, int fd, std::string kind)
    : path_(std::move(path)), fd_(fd), kind_(std::move(kind)) {}

AppendLog::AppendLog(AppendLog&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), kind_(std::move(o.kind_)) {
  o.fd_ = -1;
}

AppendLog::~AppendLog() {
  if (fd_ >= 0) ::close(fd_);
}

AppendLog AppendLog::create(const std::filesystem::path& path, std::string_view first_line, std::string_view kind,
                            std::string_view owner, const WriteOptions& options) {
  ignore_file_size_signal();
  // Appended to and read back on resume: only a regular file can be a log.
  if (written_in_place(path))
    fail(ErrorKind::BadInput, std::string(kind) + " " + path_text(path) + " is not a regular file (a FIFO or a device); give a file path");
  // Never replace a log another writer still holds.
  if (const int old = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); old >= 0) {
    lock(old, path, kind, owner);
    ::close(old);
  }
  write_file_atomic(path, first_line, options);
  return AppendLog(path, open_locked(path, O_WRONLY | O_APPEND, kind, owner), std::string(kind));
}

AppendLog AppendLog::reopen(const std::filesystem::path& path, size_t valid_bytes, bool missing_newline,
                            std::string_view kind, std::string_view owner) {
  ignore_file_size_signal();
  AppendLog log(path, open_locked(path, O_WRONLY, kind, owner), std::string(kind));
  const int fd = log.fd_;
  // Cut a torn last line off, so new lines start clean.
  if (::ftruncate(fd, static_cast<off_t>(valid_bytes)) != 0)
    fail(ErrorKind::Io, "cannot truncate " + log.kind_ + " " + path.string() + ": " + errno_text());
  if (::lseek(fd, 0, SEEK_END) < 0) fail(ErrorKind::Io, "cannot seek " + log.kind_ + " " + path.string() + ": " + errno_text());
  if (missing_newline) write_all(fd, "\n", path, log.kind_);
  sync(fd, path, log.kind_);
  // From here on, appends.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_APPEND) != 0)
    fail(ErrorKind::Io, "cannot set append mode on " + log.kind_ + " " + path.string() + ": " + errno_text());
  return log;
}

void AppendLog::append(std::string_view line) {
  std::lock_guard guard(mutex_);
  // One write per line: a kill -9 leaves at most this line torn, never an earlier one.
  write_all(fd_, line, path_, kind_);
  sync(fd_, path_, kind_);
}

LogLines split_log(std::string_view text, const std::string& name, std::string_view kind,
                   const std::function<bool(std::string_view)>& good) {
  LogLines out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    const bool last = nl == std::string_view::npos || nl + 1 == text.size();
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    if (!good(text.substr(pos, end - pos))) {
      const std::string where = name + ":" + std::to_string(line_no);
      if (line_no == 1) fail(ErrorKind::BadInput, where + ": not a " + std::string(kind) + " (the first line is not its header)");
      if (!last) fail(ErrorKind::BadInput, where + ": garbled " + std::string(kind) + " line (only the last line may be torn by a crash)");
      out.dropped_last_line = true;  // torn by a crash
      break;
    }
    ++out.good_lines;
    out.valid_bytes = nl == std::string_view::npos ? text.size() : nl + 1;
    out.missing_newline = nl == std::string_view::npos;
    pos = end + 1;
  }
  if (line_no == 0) fail(ErrorKind::BadInput, name + ": empty " + std::string(kind) + " (no header line)");
  return out;
}

}  // namespace temper
