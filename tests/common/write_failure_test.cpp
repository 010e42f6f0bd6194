// write_file_atomic under injected failures: the space running out mid-write and coming back, the
// file-size limit (RLIMIT_FSIZE → EFBIG, which works on any filesystem and for any user, unlike a
// tmpfs mount), a directory as the target, a missing directory and a writer that throws. Each
// time: Error(Io) (or the writer's error), the previous file intact, and no temporary sibling left.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "temper/error.h"
#include "temper/fileio.h"
#include "support/test_dir.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

class WriteFailure : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_test_dir("temper-write-failure"); }
  void TearDown() override { test::remove_test_dir(dir_); }
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
};

// Files may grow to `bytes` while it lives (a disk of that size, as far as this process can tell);
// a write past it fails with EFBIG instead of raising SIGXFSZ.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) : old_handler_(std::signal(SIGXFSZ, SIG_IGN)) {
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old_), 0);
    rlimit small = old_;
    small.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0) << std::strerror(errno);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int);
};

TEST_F(WriteFailure, FullDiskKeepsThePreviousFile) {
  // Room for 64 KiB: the old file fits, the new one runs out of room part-way through.
  const fs::path path = dir_ / "profile.json";
  const FileSizeLimit room(64 << 10);
  write_file_atomic(path, "previous");
  expect_io_error(path, std::string(1 << 20, 'x'), "cannot write");
  EXPECT_EQ(read_file(path), "previous");
  EXPECT_EQ(names(), std::set<std::string>{"profile.json"});
  // A write that fits still works: the failed one left nothing behind that takes room or a name.
  write_file_atomic(path, std::string(16 << 10, 'y'));
  EXPECT_EQ(read_file(path).size(), size_t(16 << 10));
  EXPECT_EQ(names(), std::set<std::string>{"profile.json"});
}

TEST_F(WriteFailure, FileSizeLimitKeepsThePreviousFile) {
  const fs::path path = dir_ / "session.json";
  write_file_atomic(path, "previous");
  {
    const FileSizeLimit limit(4096);
    expect_io_error(path, std::string(64 << 10, 'x'), "cannot write");
  }
  EXPECT_EQ(read_file(path), "previous");
  EXPECT_EQ(names(), std::set<std::string>{"session.json"});
}

TEST_F(WriteFailure, ADirectoryTargetIsRefusedBeforeAnythingIsWritten) {
  // rename(2) would refuse only after the temporary was written; the directory is refused first.
  const fs::path path = dir_ / "out.h";
  fs::create_directories(path / "inside");
  try {
    write_file_atomic(path, "content");
    ADD_FAILURE() << "wrote over a directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("out.h is a directory"), std::string::npos) << e.what();
  }
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
