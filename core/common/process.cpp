#include "temper/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

// Spawns argv with stdout and stderr into a new pipe; returns the pid and the pipe's read end.
pid_t spawn(const std::vector<std::string>& argv, const ProcessOptions& o, int* read_end) {
  if (argv.empty() || argv[0].empty()) fail(ErrorKind::Internal, "run_process: no program");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail(ErrorKind::Io, std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  if (o.with_stderr) posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  else posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Default SIGPIPE in the child whatever Temper ignores: a cancelled reader ends its writers.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGDEF;
  if (o.own_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  std::vector<std::string> args = argv, env = child_environment(o.env);
  const std::vector<char*> arg_ptrs = pointers(args), env_ptrs = pointers(env);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0].c_str(), &actions, &attr, arg_ptrs.data(), env_ptrs.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    fail(ErrorKind::Io, "cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  *read_end = fds[0];
  return pid;
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
  int fd = -1;
  pid_t pid = -1;
  try {
    pid = spawn(argv, o, &fd);
  } catch (...) {
    if (log >= 0) ::close(log);
    throw;
  }
  std::string pending;
  bool cancelled = false;
  char buf[4096];
  for (;;) {
    if (o.cancel && o.cancel->load()) {
      cancelled = true;
      ::kill(o.own_group ? -pid : pid, SIGTERM);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // every writer has closed its end
    if (log >= 0) write_all(log, buf, static_cast<size_t>(n));
    if (o.capture) o.capture->append(buf, static_cast<size_t>(n));
    if (!o.on_line) continue;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) o.on_line(pending.substr(0, nl));
  }
  if (!cancelled && o.on_line && !pending.empty()) o.on_line(pending);
  ::close(fd);  // writers still running die of SIGPIPE at their next line
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (log >= 0) {
    if (cancelled) write_all(log, "cancelled\n", 10);
    ::close(log);
  }
  return cancelled ? kCancelled : exit_status(status);
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
