#pragma once
// A folder of its own for each test: <tmp>/<prefix>-<pid>-<the running test's name>, created empty
// (a leftover of an earlier run is removed first), and its removal at the end, which gives write
// permission back first (tests take it away to make writes fail) and never throws.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace temper::test {

inline std::filesystem::path fresh_test_dir(const std::string& prefix) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    (prefix + "-" + std::to_string(::getpid()) + "-" +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void remove_test_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(dir, ec);
}

}  // namespace temper::test
