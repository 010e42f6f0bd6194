// Issue 32: where Temper writes into things that are not its own. Outputs replace only regular files
// (a FIFO, a device, /dev/stdout is written into, never replaced; a read-only file needs --force),
// and an output that is one of the inputs is refused.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "support/device_node.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "support/test_dir.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

class Outputs : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_test_dir("temper-outputs"); }
  void TearDown() override { test::remove_test_dir(dir_); }
  fs::path dir_;
};

std::string error_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

// (4) A FIFO output was replaced by a regular file; now its reader gets the bytes and it stays a FIFO.
TEST_F(Outputs, AFifoIsWrittenIntoNotReplaced) {
  const fs::path fifo = dir_ / "out.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No reader: refused at once, never waited for.
  ErrorKind kind{};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { write_file_atomic(fifo, "x"); }, &kind).find("out.json is a FIFO with no reader"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::BadInput);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // With a reader: the bytes go through the FIFO.
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
    ::close(fd);
  });
  std::string error;
  for (int i = 0; i < 500; ++i) {  // until the reader has opened its end
    error = error_of([&] { write_file_atomic(fifo, "through the fifo\n"); });
    if (error.find("no reader") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, "through the fifo\n");
  struct stat st{};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // no temporary left
}

// (4) Devices: null takes the bytes, full is an I/O error; neither node is touched.
TEST_F(Outputs, DevicesAreWrittenIntoNotReplaced) {
  const fs::path null = test::device_node("null", dir_), full = test::device_node("full", dir_);
  if (null.empty() || full.empty()) GTEST_SKIP() << "SKIPPED: cannot make device nodes here";
  struct stat before{}, after{};
  ASSERT_EQ(::stat(null.c_str(), &before), 0);
  EXPECT_NO_THROW(write_file_atomic(null, "discarded"));
  ErrorKind kind{};
  EXPECT_NE(error_of([&] { write_file_atomic(full, std::string(1 << 16, 'x')); }, &kind).find(full.string() + ": No space left"),
            std::string::npos);
  EXPECT_EQ(kind, ErrorKind::Io);
  for (const fs::path& node : {null, full}) {
    ASSERT_EQ(::stat(node.c_str(), &after), 0);
    EXPECT_TRUE(S_ISCHR(after.st_mode)) << node;
  }
  ASSERT_EQ(::stat(null.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_TRUE(written_in_place(null));
  EXPECT_FALSE(written_in_place(dir_ / "new.json"));
}

// (4) -o /dev/stdout tried to create /dev/.stdout.tmp-*; an open descriptor is written into.
TEST_F(Outputs, DescriptorPathsAreWrittenIntoDirectly) {
  const fs::path file = dir_ / "redirected.txt";
  write_file_atomic(file, "before\n");
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  const std::string name = "/dev/fd/" + std::to_string(fd);
  EXPECT_TRUE(written_in_place(name));
  write_file_atomic(name, "after\n");
  ::close(fd);
  EXPECT_EQ(read_file(file), "before\nafter\n");  // appended where the descriptor points, not replaced
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// (4) A 0444 output was overwritten silently: refused unless forced (and then it stays 0444).
TEST_F(Outputs, ReadOnlyFilesNeedForce) {
  const fs::path path = dir_ / "locked.json";
  write_file_atomic(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  ErrorKind kind{};
  EXPECT_NE(error_of([&] { write_file_atomic(path, "new"); }, &kind).find("locked.json is read-only: not replacing it (--force replaces it)"),
            std::string::npos);
  EXPECT_EQ(kind, ErrorKind::BadInput);
  EXPECT_NE(error_of([&] { check_output(path); }).find("read-only"), std::string::npos);
  EXPECT_EQ(read_file(path), "old");
  write_file_atomic(path, "new", {.force = true});
  EXPECT_EQ(read_file(path), "new");
  struct stat st{};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
}

TEST_F(Outputs, DirectoriesAreRefusedAndMissingFoldersFoundBeforehand) {
  ErrorKind kind{};
  EXPECT_NE(error_of([&] { write_file_atomic(dir_, "x"); }, &kind).find("is a directory"), std::string::npos);
  EXPECT_EQ(kind, ErrorKind::BadInput);
  EXPECT_NE(error_of([&] { check_output(dir_ / "no-such-folder" / "s.json"); }, &kind).find("no-such-folder: No such file or directory"),
            std::string::npos);
  EXPECT_EQ(kind, ErrorKind::Io);
  EXPECT_NO_THROW(check_output(dir_ / "new.json"));
}

// (5) Every input counts, however it is spelled: merge's list, links and hard links.
TEST_F(Outputs, AnyOfSeveralInputsIsRefusedAsTheOutput) {
  write_file_atomic(dir_ / "a.json", "a");
  write_file_atomic(dir_ / "b.json", "b");
  fs::create_symlink("b.json", dir_ / "link.json");
  fs::create_hard_link(dir_ / "b.json", dir_ / "hard.json");
  const std::vector<fs::path> inputs = {dir_ / "a.json", dir_ / "b.json"};
  for (const char* out : {"b.json", "link.json", "hard.json"})
    EXPECT_NE(error_of([&] { refuse_overwriting_inputs(dir_ / out, inputs); }).find("is the input"), std::string::npos) << out;
  EXPECT_NO_THROW(refuse_overwriting_inputs(dir_ / "merged.json", inputs));
}

}  // namespace
}  // namespace temper
