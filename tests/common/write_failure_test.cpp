// write_file_atomic under injected failures: a full disk (a tiny tmpfs, where mounting is allowed),
// the file-size limit (RLIMIT_FSIZE → EFBIG), a rename that cannot happen, a missing directory and a
// writer that throws. Each time: Error(Io) (or the writer's error), the previous file intact, and no
// temporary sibling left behind.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "temper/error.h"
#include "temper/fileio.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

class WriteFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("temper-write-failure-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Names in the directory, so a leftover temporary sibling shows up.
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }
  void expect_io_error(const fs::path& path, std::string_view content, const std::string& needle) {
    try {
      write_file_atomic(path, content);
      ADD_FAILURE() << "write of " << content.size() << " bytes to " << path << " succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Io) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  fs::path dir_;
  bool mounted_ = false;
};

TEST_F(WriteFailure, FullDiskKeepsThePreviousFile) {
  // 64 KiB of tmpfs: the old file fits, the new one cannot.
  if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << "); needs CAP_SYS_ADMIN";
  mounted_ = true;
  const fs::path path = dir_ / "profile.json";
  write_file_atomic(path, "previous");
  expect_io_error(path, std::string(1 << 20, 'x'), "No space left on device");
  EXPECT_EQ(read_file(path), "previous");
  EXPECT_EQ(names(), std::set<std::string>{"profile.json"});
  // The space came back: a write that fits still works.
  write_file_atomic(path, std::string(16 << 10, 'y'));
  EXPECT_EQ(read_file(path).size(), size_t(16 << 10));
  EXPECT_EQ(names(), std::set<std::string>{"profile.json"});
}

TEST_F(WriteFailure, FileSizeLimitKeepsThePreviousFile) {
  const fs::path path = dir_ / "session.json";
  write_file_atomic(path, "previous");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of a signal
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  try {
    write_file_atomic(path, std::string(64 << 10, 'x'));
    ADD_FAILURE() << "write past RLIMIT_FSIZE succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos) << e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(read_file(path), "previous");
  EXPECT_EQ(names(), std::set<std::string>{"session.json"});
}

TEST_F(WriteFailure, FailedRenameRemovesTheTemporaryFile) {
  // The target is a non-empty directory: rename(2) refuses, after the temp file was written.
  const fs::path path = dir_ / "out.h";
  fs::create_directories(path / "inside");
  expect_io_error(path, "content", "cannot rename");
  EXPECT_TRUE(fs::is_directory(path / "inside"));
  EXPECT_EQ(names(), std::set<std::string>{"out.h"});
}

TEST_F(WriteFailure, MissingDirectoryCreatesNothing) {
  expect_io_error(dir_ / "no" / "such" / "dir" / "x.json", "content", "cannot create");
  EXPECT_TRUE(names().empty());
}

TEST_F(WriteFailure, ThrowingWriterKeepsThePreviousFile) {
  const fs::path path = dir_ / "export.csv";
  write_file_atomic(path, "previous");
  EXPECT_THROW(write_file_atomic(path,
                                 [](std::ostream& out) {
                                   out << "half a file";
                                   throw std::runtime_error("writer failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(read_file(path), "previous");
  EXPECT_EQ(names(), std::set<std::string>{"export.csv"});
}

}  // namespace
}  // namespace temper
