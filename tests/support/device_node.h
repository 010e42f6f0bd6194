// Device nodes for tests that check Temper never replaces one with a file. Such a test must not put
// the machine's own nodes at risk: run as root, a regression would replace /dev/null or /dev/stdout
// for every process on it (as the code before issue 32 did). As root the test gets the same device
// (its major and minor numbers) made in its own folder, and /proc/self/fd/1 for its stdout; as a
// user, the nodes in /dev, which a user cannot replace.
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace temper::test {

// /dev/<name> or, as root, the same character device made in `dir`; empty when neither works.
inline std::filesystem::path device_node(const std::string& name, const std::filesystem::path& dir) {
  const std::filesystem::path system = "/dev/" + name;
  struct stat st{};
  if (::stat(system.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return {};
  if (::geteuid() != 0) return system;
  const std::filesystem::path own = dir / name;
  if (::mknod(own.c_str(), S_IFCHR | 0666, st.st_rdev) != 0) return {};
  return own;
}

// The process's stdout as a path: /dev/stdout, or as root /proc/self/fd/1 (which cannot be replaced).
inline std::string stdout_path() { return ::geteuid() == 0 ? "/proc/self/fd/1" : "/dev/stdout"; }

}  // namespace temper::test
