#include "temper/fileio.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "temper/error.h"

namespace temper {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::filesystem::path temp_sibling(const std::filesystem::path& path) {
  std::random_device rd;
  std::ostringstream name;
  name << "." << path.filename().string() << ".tmp-" << std::hex << rd() << rd();
  return path.parent_path() / name.str();
}

void write_all(int fd, std::string_view data, const std::filesystem::path& tmp) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(ErrorKind::Io, "cannot write " + tmp.string() + ": " + errno_text());
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  const auto tmp = temp_sibling(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(ErrorKind::Io, "cannot create " + tmp.string() + ": " + errno_text());
  try {
    write_all(fd, content, tmp);
    if (::fsync(fd) != 0) fail(ErrorKind::Io, "cannot sync " + tmp.string() + ": " + errno_text());
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

void write_file_atomic(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  std::ostringstream out;
  write(out);
  write_file_atomic(path, out.view());
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
