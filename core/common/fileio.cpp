#include "temper/fileio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <streambuf>
#include <vector>

#include "temper/error.h"
#include "temper/input.h"

namespace temper {
namespace {

void write_all(int fd, std::string_view data, const std::filesystem::path& tmp) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(ErrorKind::Io, "cannot write " + tmp.string() + ": " + errno_text());
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Our temporary siblings are ".<name>.tmp-<random hex>".
std::string temp_prefix(const std::filesystem::path& path) { return "." + path.filename().string() + ".tmp-"; }

std::filesystem::path temp_sibling(const std::filesystem::path& path) {
  std::random_device rd;
  std::ostringstream name;
  name << temp_prefix(path) << std::hex << rd() << rd();
  return path.parent_path() / name.str();
}

// A temporary sibling untouched this long belongs to a writer that was killed: a live one writes
// (or at least fsyncs and renames) far sooner.
constexpr auto kStaleTempAge = std::chrono::minutes(10);

// Removes stale temporaries of `path` left by killed writers (only names of our own pattern).
void remove_stale_temps(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = temp_prefix(path);
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (name.find_first_not_of("0123456789abcdef", prefix.size()) != std::string::npos) continue;
    std::error_code e2;
    if (!it->is_regular_file(e2) || it->is_symlink(e2)) continue;
    const auto mtime = it->last_write_time(e2);
    if (!e2 && now - mtime > kStaleTempAge) fs::remove(it->path(), e2);
  }
}

// Where writing `path` really goes: a symbolic link's target, followed link by link (a dangling
// link's target is created; the link itself stays a link).
std::filesystem::path write_target(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = path;
  for (int hops = 0; fs::is_symlink(target, ec); ++hops) {
    if (hops == 40) fail(ErrorKind::BadInput, path_text(path) + ": too many levels of symbolic links");
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) return target;
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target;
}

// A stream buffer writing straight into a file descriptor, so large outputs are never held whole.
class FdStreamBuf : public std::streambuf {
 public:
  FdStreamBuf(int fd, const std::filesystem::path& name) : fd_(fd), name_(name), buf_(size_t{1} << 20) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  void flush_all() {
    write_all(fd_, std::string_view(pbase(), static_cast<size_t>(pptr() - pbase())), name_);
    setp(buf_.data(), buf_.data() + buf_.size());
  }

 protected:
  int_type overflow(int_type c) override {
    flush_all();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    flush_all();
    return 0;
  }

 private:
  int fd_;
  const std::filesystem::path& name_;
  std::vector<char> buf_;
};

}  // namespace

void ignore_file_size_signal() {
  struct sigaction old{};
  if (::sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGXFSZ, SIG_IGN);
}

const char* node_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {

// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: an open descriptor of this process, whatever
// it is (a terminal, a pipe, a file the shell redirected to).
bool descriptor_path(const std::filesystem::path& path) {
  const std::string p = path.lexically_normal().string();
  return p == "/dev/stdout" || p == "/dev/stderr" || p.rfind("/dev/fd/", 0) == 0 || p.rfind("/proc/self/fd/", 0) == 0;
}

// What writing `path` means, decided before anything is written.
enum class WriteKind { Replace, Direct };

WriteKind write_kind(const std::filesystem::path& path, const WriteOptions& options) {
  if (descriptor_path(path)) return WriteKind::Direct;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return WriteKind::Replace;  // a new file (or a link to one)
    fail(ErrorKind::Io, "cannot write " + path_text(path) + ": " + errno_text());
  }
  if (S_ISREG(st.st_mode)) {
    if (!options.force && ((st.st_mode & 0222) == 0 || ::access(path.c_str(), W_OK) != 0))
      fail(ErrorKind::BadInput, path_text(path) + " is read-only: not replacing it (--force replaces it)");
    return WriteKind::Replace;
  }
  // Nodes are written into, never replaced by a file: a FIFO's reader or a device gets the bytes.
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return WriteKind::Direct;
  fail(ErrorKind::BadInput, path_text(path) + " is " + node_kind(st.st_mode) +
                                ": an output must be a regular file, a new path, a FIFO or a character device");
}

// Into the node itself: opened without blocking (a FIFO with no reader is refused, not waited
// for), appended to (a descriptor redirected to a file keeps what is there).
void write_direct(const std::filesystem::path& path, const std::function<void(int, const std::filesystem::path&)>& fill) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ENXIO) fail(ErrorKind::BadInput, path_text(path) + " is a FIFO with no reader: start its reader first");
  if (fd < 0) fail(ErrorKind::Io, "cannot open " + path_text(path) + ": " + errno_text());
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // A reader that goes away is an error (EPIPE) for this write, not the end of Temper.
  struct sigaction old{};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
  try {
    fill(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// The write itself: temp sibling of the real target, `fill` writes into its descriptor, then fsync,
// the target's permissions, rename.
void write_atomic_impl(const std::filesystem::path& requested, const WriteOptions& options,
                       const std::function<void(int, const std::filesystem::path&)>& fill) {
  ignore_file_size_signal();
  if (write_kind(requested, options) == WriteKind::Direct) return write_direct(requested, fill);
  const std::filesystem::path path = write_target(requested);
  remove_stale_temps(path);
  const auto tmp = temp_sibling(path);
  struct stat old{};
  const bool replacing = ::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(ErrorKind::Io, "cannot write " + path_text(requested) + ": cannot create a file in " +
                            path_text(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path()) + ": " +
                            errno_text());
  try {
    fill(fd, tmp);
    if (::fsync(fd) != 0) fail(ErrorKind::Io, "cannot sync " + tmp.string() + ": " + errno_text());
    // Overwriting keeps the target's permissions (a 0600 file stays 0600).
    if (replacing && ::fchmod(fd, old.st_mode & 07777) != 0)
      fail(ErrorKind::Io, "cannot set permissions of " + tmp.string() + ": " + errno_text());
  } catch (const Error& e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    // The temporary is gone: the message names the file the user asked for.
    std::string what = e.what();
    for (size_t at = what.find(tmp.string()); at != std::string::npos; at = what.find(tmp.string(), at))
      what.replace(at, tmp.string().size(), requested.string());
    throw Error(e.kind(), what);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail(ErrorKind::Io, "cannot close " + tmp.string() + ": " + errno_text());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    fail(ErrorKind::Io, "cannot rename " + tmp.string() + " to " + path.string() + ": " + why);
  }
  // Make the rename itself durable.
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace

bool written_in_place(const std::filesystem::path& path) {
  struct stat st{};
  return descriptor_path(path) || (::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)));
}

void check_output(const std::filesystem::path& path, const WriteOptions& options) {
  if (write_kind(path, options) == WriteKind::Direct) {
    struct stat st{};
    if (descriptor_path(path) || ::stat(path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return;
    // A FIFO: its reader must be there now, not only when the work is done. The descriptor stays
    // open until Temper exits, so that reader waits for the output instead of seeing its end now.
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENXIO) fail(ErrorKind::BadInput, path_text(path) + " is a FIFO with no reader: start its reader first");
    if (fd < 0) fail(ErrorKind::Io, "cannot open " + path_text(path) + ": " + errno_text());
    return;
  }
  // The folder the temporary sibling goes into must take it.
  const auto dir = write_target(path).parent_path();
  const auto folder = dir.empty() ? std::filesystem::path(".") : dir;
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    fail(ErrorKind::Io, "cannot write " + path_text(path) + ": " + path_text(folder) + ": " + errno_text());
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content, const WriteOptions& options) {
  write_atomic_impl(path, options, [&](int fd, const std::filesystem::path& tmp) { write_all(fd, content, tmp); });
}

void write_file_atomic(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write,
                       const WriteOptions& options) {
  write_atomic_impl(path, options, [&](int fd, const std::filesystem::path& tmp) {
    FdStreamBuf buf(fd, tmp);
    std::ostream out(&buf);
    out.exceptions(std::ios::badbit);
    write(out);
    buf.flush_all();
  });
}

std::filesystem::path user_cache_dir(std::string_view name) {
  namespace fs = std::filesystem;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "temper" / name;
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "temper" / name;
  fail(ErrorKind::BadInput, "neither XDG_CACHE_HOME nor HOME is set: Temper keeps its " + std::string(name) +
                                " cache in $XDG_CACHE_HOME/temper or ~/.cache/temper, never in a shared folder; set one of them");
}

void ensure_private_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  // Missing folders are made one by one, each private from the start.
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty() && ::access(p.c_str(), F_OK) != 0 && errno == ENOENT; p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      fail(ErrorKind::Io, "cannot create the folder " + path_text(*it) + ": " + errno_text());
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0) fail(ErrorKind::Io, "cache folder " + path_text(dir) + ": " + errno_text());
  const std::string why = S_ISLNK(st.st_mode)                  ? "is a symbolic link"
                          : S_ISREG(st.st_mode)                ? "is a file, not a folder"
                          : !S_ISDIR(st.st_mode)               ? std::string("is ") + node_kind(st.st_mode)
                          : st.st_uid != ::geteuid()           ? "belongs to user id " + std::to_string(st.st_uid) + ", not to you"
                          : (st.st_mode & (S_IWGRP | S_IWOTH)) ? "can be written by other users"
                                                               : std::string();
  if (!why.empty())
    fail(ErrorKind::BadInput, "cache folder " + path_text(dir) + " " + why +
                                  ": Temper runs and writes nothing there (remove it, or point XDG_CACHE_HOME elsewhere)");
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, "cannot open " + path.string() + ": " + errno_text());
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail(ErrorKind::Io, "cannot read " + path.string());
  return std::move(s).str();
}

}  // namespace temper
