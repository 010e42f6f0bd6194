#pragma once
// Running `temper` from a test: fork/exec without a shell, the environment changed only in the
// child; the exit code and stdout + stderr (or each apart) come back. TEMPER_EXE names the binary.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace temper::test {

struct CliRun {
  int code = -1;
  std::string output;  // stderr, then stdout, as they were written
  std::string out;     // stdout alone (with split_streams)
};

using Env = std::vector<std::pair<std::string, std::string>>;

inline pid_t spawn_temper(const std::vector<std::string>& args, const Env& env, const std::filesystem::path& out,
                          const std::filesystem::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    FILE* fo = std::fopen(out.c_str(), "w");
    FILE* fe = err == out ? fo : std::fopen(err.c_str(), "w");
    if (fo) ::dup2(::fileno(fo), 1);
    if (fe) ::dup2(::fileno(fe), 2);
    std::vector<char*> argv{const_cast<char*>(TEMPER_EXE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(TEMPER_EXE, argv.data());
    ::_exit(127);
  }
  return pid;
}

inline int wait_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `split_streams`: stdout alone in `out`, stderr in `output`.
inline CliRun run_temper(const std::vector<std::string>& args, const Env& env = {}, bool split_streams = false) {
  const auto base = std::filesystem::temp_directory_path() / ("temper-cli-" + std::to_string(::getpid()));
  const std::filesystem::path out = base.string() + ".out";
  const std::filesystem::path err = split_streams ? std::filesystem::path(base.string() + ".err") : out;
  CliRun r;
  r.code = wait_code(spawn_temper(args, env, out, err));
  if (split_streams) r.out = slurp(out), r.output = slurp(err);
  else r.output = slurp(out);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return r;
}

}  // namespace temper::test
