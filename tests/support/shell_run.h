#pragma once
// Runs a shell command line as a CLI test does: its stdout captured, its stderr through `err_file`
// (left in place: some tests look at the folder it is in), its exit code (-1 when it did not exit)
// and its wall time.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "temper/fileio.h"

namespace temper::test {

// std::system(command): its exit status, or -1 when it did not exit.
inline int system_status(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct ShellResult {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

inline ShellResult run_shell(const std::string& command, const std::filesystem::path& err_file) {
  const std::string cmd = command + " 2>'" + err_file.string() + "'";
  ShellResult r;
  const auto start = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_file);
  return r;
}

}  // namespace temper::test
