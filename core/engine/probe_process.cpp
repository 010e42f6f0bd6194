// The probe child process: spawn without a shell, framed requests with a deadline, clean death.
#include "probe_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "temper/error.h"
#include "temper/fileio.h"

extern char** environ;

namespace temper::engine {
namespace {

namespace fs = std::filesystem;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A probe's stderr log when none is given: in the engine cache (never the user's temp directory),
// removed when the probe ends well; kept, and named in the error, when it failed. TEMPER_PROBE_LOG_DIR
// names a directory where every log is kept (bench scripts read what the engine printed).
const char* kept_log_dir() {
  const char* d = std::getenv("TEMPER_PROBE_LOG_DIR");
  return d && *d ? d : nullptr;
}

fs::path default_log() {
  static std::atomic<int> counter{0};
  fs::path dir;
  if (const char* kept = kept_log_dir()) {
    dir = kept;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(ErrorKind::Io, "temper-probe log directory " + dir.string() + ": " + ec.message());
  } else {
    dir = user_cache_dir("engine") / "logs";
    ensure_private_dir(dir);
  }
  return dir / ("probe-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".log");
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

ProbeProcess::ProbeProcess(const fs::path& exe, const std::vector<std::string>& args, fs::path log, double timeout_s)
    : exe_(exe), own_log_(log.empty() && !kept_log_dir()), timeout_s_(timeout_s) {
  std::error_code ec;
  if (!fs::exists(exe_, ec)) fail(ErrorKind::BadInput, "temper-probe " + exe_.string() + ": no such file");
  if (fs::is_directory(exe_, ec) || ::access(exe_.c_str(), X_OK) != 0)
    fail(ErrorKind::BadInput, "temper-probe " + exe_.string() + ": not an executable file");
  log_ = log.empty() ? default_log() : std::move(log);

  const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) fail(ErrorKind::Io, "temper-probe log " + log_.string() + ": " + std::strerror(errno));
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    ::close(log_fd);
    if (own_log_) fs::remove(log_, ec);
    fail(ErrorKind::Io, std::string("temper-probe: socketpair: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
  // The probe gets default signal handling whatever Temper ignores (SIGPIPE, SIGINT from the GUI).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // Its own process group: Ctrl-C on Temper's terminal reaches Temper only; Temper ends the probe.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> argv_s{exe_.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, exe_.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  ::close(log_fd);
  if (rc != 0) {
    ::close(sv[0]);
    pid_ = -1;
    if (own_log_) fs::remove(log_, ec);
    fail(ErrorKind::GpuFault, "temper-probe " + exe_.string() + ": cannot start: " + std::strerror(rc));
  }
  fd_ = sv[0];
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

ProbeProcess::~ProbeProcess() {
  if (pid_ > 0 && !reaped_) {
    if (dead_reason_.empty()) {
      uint8_t quit[8];
      put_u32(quit, uint32_t(probe::Op::Quit));
      put_u32(quit + 4, 0);
      (void)::send(fd_, quit, sizeof quit, MSG_NOSIGNAL);
      for (int i = 0; i < 100 && !reaped_; ++i) {  // up to 1 s to leave on its own
        if (::waitpid(pid_, &wait_status_, WNOHANG) == pid_) reaped_ = true;
        else std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &wait_status_, 0);
      reaped_ = true;
    }
  }
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  if (own_log_ && !keep_log_) fs::remove(log_, ec);
}

std::string ProbeProcess::stderr_context() const {
  keep_log_ = true;  // an error names the log: it stays
  std::string tail;
  std::ifstream in(log_, std::ios::binary);
  if (in) {
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    const std::streamoff from = size > 4096 ? size - 4096 : 0;
    in.seekg(from);
    tail.assign(size_t(size - from), '\0');
    in.read(tail.data(), std::streamsize(tail.size()));
  }
  // The last few non-empty lines, joined.
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < tail.size()) {
    size_t nl = tail.find('\n', pos);
    if (nl == std::string::npos) nl = tail.size();
    std::string line = tail.substr(pos, nl - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) lines.push_back(line);
    pos = nl + 1;
  }
  constexpr size_t kLines = 4;
  std::string out;
  for (size_t i = lines.size() > kLines ? lines.size() - kLines : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return (out.empty() ? std::string("; no stderr output") : "; last stderr: " + out) + "; log: " + log_.string();
}

std::string ProbeProcess::exit_text() {
  if (!reaped_) {
    // A closed pipe usually means the process is ending: give it a moment to be reaped.
    for (int i = 0; i < 100 && !reaped_; ++i) {
      if (::waitpid(pid_, &wait_status_, WNOHANG) == pid_) reaped_ = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!reaped_) return "closed its output";
  if (WIFSIGNALED(wait_status_)) {
    const int sig = WTERMSIG(wait_status_);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
}

void ProbeProcess::die(const std::string& why) {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &wait_status_, 0);
    reaped_ = true;
  }
  dead_reason_ = "temper-probe " + exe_.string() + ": " + why + stderr_context();
  fail(ErrorKind::GpuFault, dead_reason_);
}

void ProbeProcess::send_all(const uint8_t* data, size_t size, double deadline, const std::string& what) {
  while (size > 0) {
    const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n, size -= size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) die(exit_text() + " before taking the " + what + " request");
    const double left = deadline - now_s();
    if (left <= 0) die("did not take the " + what + " request within " + seconds(timeout_s_) + " (killed)");
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, int(left * 1000) + 1);
  }
}

void ProbeProcess::recv_all(uint8_t* data, size_t size, double deadline, const std::string& what) {
  while (size > 0) {
    const ssize_t n = ::recv(fd_, data, size, 0);
    if (n > 0) {
      data += n, size -= size_t(n);
      continue;
    }
    if (n == 0) die(exit_text() + " during " + what);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) die(exit_text() + " during " + what + " (" + std::strerror(errno) + ")");
    const double left = deadline - now_s();
    if (left <= 0) die("did not answer " + what + " within " + seconds(timeout_s_) + " (killed)");
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, int(left * 1000) + 1);
  }
}

ProbeAnswer ProbeProcess::request(uint32_t op, const std::vector<uint8_t>& payload, const std::string& what) {
  if (!dead_reason_.empty()) fail(ErrorKind::GpuFault, dead_reason_);
  const double deadline = now_s() + timeout_s_;
  uint8_t head[8];
  put_u32(head, op);
  put_u32(head + 4, uint32_t(payload.size()));
  if (payload.size() > UINT32_MAX) fail(ErrorKind::BadInput, what + ": request larger than 4 GiB");
  send_all(head, sizeof head, deadline, what);
  send_all(payload.data(), payload.size(), deadline, what);
  recv_all(head, sizeof head, deadline, what);
  ProbeAnswer a;
  a.status = int32_t(get_u32(head));
  a.payload.resize(get_u32(head + 4));
  recv_all(a.payload.data(), a.payload.size(), deadline, what);
  return a;
}

}  // namespace temper::engine
