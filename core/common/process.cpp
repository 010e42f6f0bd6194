#include "temper/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "temper/error.h"

extern char** environ;

namespace temper {
namespace {

// The parent's environment with `overrides` ("NAME=value") replacing or adding their names.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env = overrides;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || o.compare(0, name.size() + 1, std::string(name) + "=") == 0;
    if (!replaced) env.emplace_back(entry);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full log disk must not stop the build it records
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// argv[0] as execve takes it: itself when it holds a '/', else the first executable file of that name
// in a directory of PATH, as posix_spawnp finds it. Looked up before fork (nothing between fork and
// exec may allocate); empty, with `error` set, when there is none.
std::string program_path(const std::string& name, int* error) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string_view dirs = path && *path ? path : "/bin:/usr/bin";
  *error = ENOENT;
  for (size_t from = 0; from <= dirs.size();) {
    const size_t to = std::min(dirs.find(':', from), dirs.size());
    const std::string dir(dirs.substr(from, to - from));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      *error = EACCES;
    }
    from = to + 1;
  }
  return {};
}

// `fd` as descriptor `target` of the program to be exec'd (dup2 onto itself would leave it close-on-exec).
bool place(int fd, int target) {
  return fd == target ? ::fcntl(fd, F_SETFD, 0) == 0 : ::dup2(fd, target) == target;
}

[[noreturn]] void exit_reporting_errno(int report) {
  const int e = errno;
  [[maybe_unused]] const ssize_t n = ::write(report, &e, sizeof e);
  ::_exit(127);
}

// The child between fork and exec: async-signal-safe calls only (Temper has other threads, the GUI's
// workers). `err` < 0: stderr to /dev/null. A failure's errno goes to `report` (closed by exec).
[[noreturn]] void exec_child(const char* path, char* const* args, char* const* env, int out, int err, int report,
                             const ProcessOptions& o, pid_t parent) {
  if (o.own_group) ::setpgid(0, 0);
  if (o.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // Temper died before the prctl: nobody waits for this run
  }
  // Default SIGPIPE and SIGINT whatever Temper ignores (a cancelled reader ends its writers), and no
  // signal blocked whatever the forking thread blocks (a cancel's SIGTERM must arrive).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGPIPE, SIGINT}) ::sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (err < 0) err = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_in < 0 || err < 0 || !place(out, 1) || !place(err, 2) || !place(null_in, 0)) exit_reporting_errno(report);
  ::execve(path, args, env);
  exit_reporting_errno(report);
}

struct Child {
  pid_t pid = -1;
  int out = -1;  // the read end of stdout's pipe (stderr's too unless read apart)
  int err = -1;  // the read end of stderr's own pipe, or -1
};

Child spawn(const std::vector<std::string>& argv, const ProcessOptions& o) {
  if (argv.empty() || argv[0].empty()) fail(ErrorKind::Internal, "run_process: no program");
  int not_found = 0;
  const std::string path = program_path(argv[0], &not_found);
  if (path.empty()) fail(ErrorKind::Io, "cannot run " + argv[0] + ": " + std::strerror(not_found));
  std::vector<std::string> args = argv, env = child_environment(o.env);
  const std::vector<char*> arg_ptrs = pointers(args), env_ptrs = pointers(env);
  std::vector<int> opened;
  const auto open_pipe = [&](int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      const int e = errno;
      for (int fd : opened) ::close(fd);
      fail(ErrorKind::Io, std::string("cannot create a pipe: ") + std::strerror(e));
    }
    opened.insert(opened.end(), {fds[0], fds[1]});
  };
  int out[2], err[2] = {-1, -1}, report[2];
  open_pipe(out);
  if (o.capture_stderr) open_pipe(err);
  open_pipe(report);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_child(path.c_str(), arg_ptrs.data(), env_ptrs.data(), out[1], o.capture_stderr ? err[1] : o.with_stderr ? out[1] : -1,
               report[1], o, parent);
  const int fork_errno = errno;
  for (int fd : {out[1], err[1], report[1]})
    if (fd >= 0) ::close(fd);
  int exec_errno = 0;
  ssize_t got = 0;
  if (pid > 0)
    while ((got = ::read(report[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
  ::close(report[0]);
  if (pid < 0 || got == ssize_t(sizeof exec_errno)) {
    if (pid > 0)
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
    for (int fd : {out[0], err[0]})
      if (fd >= 0) ::close(fd);
    fail(ErrorKind::Io, "cannot run " + argv[0] + ": " + std::strerror(pid < 0 ? fork_errno : exec_errno));
  }
  return {pid, out[0], err[0]};
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return status;
}

// A program sent SIGTERM, reaped; with o.kill_after, SIGKILLed (its group with own_group) when it has
// not ended by then. What is left of its group is killed too: nothing of a cancelled run goes on.
int reap_cancelled(pid_t pid, const ProcessOptions& o) {
  if (o.kill_after.count() <= 0) return wait_for(pid);
  const auto deadline = std::chrono::steady_clock::now() + o.kill_after;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (o.own_group) ::kill(-pid, SIGKILL);
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(o.own_group ? -pid : pid, SIGKILL);
  return wait_for(pid);
}

int exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

int run_process(const std::vector<std::string>& argv, const ProcessOptions& o) {
  int log = -1;
  if (!o.log.empty()) {
    log = ::open(o.log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (o.truncate_log ? O_TRUNC : O_APPEND), 0644);
    if (log < 0) fail(ErrorKind::Io, "cannot open log " + o.log.string() + ": " + std::strerror(errno));
    const std::string head = "$ " + command_text(argv) + "\n";
    write_all(log, head.data(), head.size());
  }
  Child child;
  try {
    child = spawn(argv, o);
  } catch (...) {
    if (log >= 0) ::close(log);
    throw;
  }
  std::string pending;
  bool cancelled = false;
  int stopped = 0;  // kTimedOut or kOutputTooLarge: killed here
  const auto stop = [&](int why) {
    stopped = why;
    ::kill(o.own_group ? -child.pid : child.pid, SIGKILL);
  };
  // Whether a capture may take n more bytes (else the program is stopped).
  const auto room = [&](const std::string* into, ssize_t n) {
    return o.max_capture == 0 || !into || into->size() + size_t(n) <= o.max_capture;
  };
  const auto started = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> leader_ended;
  char buf[4096];
  pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};  // poll skips a negative fd
  while (!stopped && (fds[0].fd >= 0 || fds[1].fd >= 0)) {
    if (o.cancel && o.cancel->load()) {
      cancelled = true;
      ::kill(o.own_group ? -child.pid : child.pid, SIGTERM);
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (o.timeout.count() > 0 && now - started > o.timeout) {
      stop(kTimedOut);
      break;
    }
    if (o.own_group && !leader_ended) {  // ended, not reaped yet (WNOWAIT): its pid stays its group's
      siginfo_t info{};
      if (::waitid(P_PID, id_t(child.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == child.pid)
        leader_ended = now;
    }
    if (leader_ended && now - *leader_ended > std::chrono::seconds(1)) {
      ::kill(-child.pid, SIGKILL);  // what it left behind holding its output
      break;
    }
    const int ready = ::poll(fds, 2, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    for (pollfd& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // every writer has closed its end
        ::close(p.fd);
        p.fd = -1;
        continue;
      }
      if (!room(&p == &fds[1] ? o.capture_stderr : o.capture, n)) {
        stop(kOutputTooLarge);
        break;
      }
      if (&p == &fds[1]) {
        o.capture_stderr->append(buf, static_cast<size_t>(n));
        continue;
      }
      if (log >= 0) write_all(log, buf, static_cast<size_t>(n));
      if (o.capture) o.capture->append(buf, static_cast<size_t>(n));
      if (!o.on_line) continue;
      pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) o.on_line(pending.substr(0, nl));
    }
  }
  if (!cancelled && !stopped && o.on_line && !pending.empty()) o.on_line(pending);
  for (const pollfd& p : fds)  // writers still running die of SIGPIPE at their next line
    if (p.fd >= 0) ::close(p.fd);
  const int status = cancelled ? reap_cancelled(child.pid, o) : wait_for(child.pid);
  if (log >= 0) {
    if (cancelled) write_all(log, "cancelled\n", 10);
    if (stopped) write_all(log, "stopped\n", 8);
    ::close(log);
  }
  return cancelled ? kCancelled : stopped ? stopped : exit_status(status);
}

std::optional<std::string> process_output(const std::vector<std::string>& argv, bool with_stderr) {
  std::string out;
  ProcessOptions o;
  o.capture = &out;
  o.with_stderr = with_stderr;
  try {
    run_process(argv, o);
  } catch (const Error&) {
    return std::nullopt;
  }
  return out;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace temper
