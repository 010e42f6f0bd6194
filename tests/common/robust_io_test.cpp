// Issue 19: the one input-opening path (regular files only, bounded, clear kinds of error), JSON
// that nlohmann would accept but is not what anyone meant, and atomic writes that keep
// permissions, write through links, survive a file-size limit and clean up after killed writers.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "support/test_dir.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

class RobustIo : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_test_dir("temper-robust-io"); }
  void TearDown() override { test::remove_test_dir(dir_); }
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }
  fs::path dir_;
};

ErrorKind kind_of(const std::function<void()>& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  return ErrorKind::Internal;
}

TEST_F(RobustIo, OnlyRegularFilesOfBoundedSizeAreRead) {
  std::string msg;
  EXPECT_EQ(kind_of([&] { read_input(dir_ / "missing.json", kMaxJsonInputBytes, "session"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("cannot open " + (dir_ / "missing.json").string() + " (session): No such file"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { read_input(dir_, kMaxJsonInputBytes, "session"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("not a regular file (a directory)"), std::string::npos) << msg;
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(kind_of([&] { read_input(dir_ / "fifo", kMaxJsonInputBytes, "session"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("not a regular file (a FIFO)"), std::string::npos) << msg;
  EXPECT_EQ(kind_of([&] { read_input("/dev/zero", kMaxJsonInputBytes, "session"); }, &msg), ErrorKind::BadInput);
  write_file_atomic(dir_ / "big", std::string(2048, 'x'));
  EXPECT_EQ(kind_of([&] { read_input(dir_ / "big", 1024, "profile"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("2048 bytes, more than the 1024 bytes a profile may have"), std::string::npos) << msg;
  EXPECT_EQ(read_input(dir_ / "big", 4096, "profile"), std::string(2048, 'x'));
}

TEST(JsonInput, OutOfRangeNumbersAndDuplicateKeysAreBadInput) {
  std::string msg;
  EXPECT_EQ(kind_of([&] { parse_json_input("[1e999]", "a.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("a.json: not usable JSON: a number out of range (number overflow parsing '1e999')"), std::string::npos)
      << msg;
  EXPECT_EQ(kind_of([&] { parse_json_input("{\"n\": " + std::string(5000, '7') + "}", "b.json"); }), ErrorKind::BadInput);
  EXPECT_EQ(kind_of([&] { parse_json_input("{\"a\": 1,, }", "c.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("c.json: not valid JSON (byte"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << "the library's tag is no message: " << msg;
  EXPECT_EQ(kind_of([&] { parse_json_input(R"({"x": {"k": 1, "y": [{"k": 2, "k": 3}]}})", "d.json"); }, &msg), ErrorKind::BadInput);
  EXPECT_NE(msg.find("d.json: duplicate key \"k\""), std::string::npos) << msg;
  // The same key in sibling objects is fine.
  const auto j = parse_json_input(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}, {"k": 4}]})", "e.json");
  EXPECT_EQ(j["c"][1]["k"], 4);
}

TEST(PathText, InvalidUtf8IsEscaped) {
  EXPECT_EQ(path_text("model-é.gguf"), "model-é.gguf");
  EXPECT_EQ(path_text("m\xff\xfe.gguf"), "m\\xff\\xfe.gguf");
  EXPECT_EQ(path_text("a\xc3"), "a\\xc3");  // truncated sequence
}

TEST_F(RobustIo, OutputNamingAnInputIsRefused) {
  write_file_atomic(dir_ / "m.gguf", "model");
  fs::create_symlink("m.gguf", dir_ / "link.gguf");
  fs::create_hard_link(dir_ / "m.gguf", dir_ / "hard.gguf");
  std::string msg;
  for (const fs::path& out : {dir_ / "m.gguf", dir_ / "link.gguf", dir_ / "hard.gguf", dir_ / "." / "m.gguf"}) {
    EXPECT_EQ(kind_of([&] { refuse_overwriting_inputs(out, {dir_ / "m.gguf"}); }, &msg), ErrorKind::BadInput) << out;
    EXPECT_NE(msg.find("is the input"), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(refuse_overwriting_inputs(dir_ / "other.f32", {dir_ / "m.gguf"}));
  EXPECT_NO_THROW(refuse_overwriting_inputs(dir_ / "other.f32", {fs::path()}));
}

// (10) Overwriting used to leave 0644 behind; a link was replaced by a plain file.
TEST_F(RobustIo, OverwriteKeepsPermissionsAndWritesThroughLinks) {
  const fs::path secret = dir_ / "secret.json";
  write_file_atomic(secret, "old");
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  write_file_atomic(secret, "new");
  struct stat st{};
  ASSERT_EQ(::stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  fs::create_symlink("secret.json", dir_ / "link.json");
  write_file_atomic(dir_ / "link.json", [](std::ostream& out) { out << "through"; });
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_EQ(read_file(secret), "through");
  ASSERT_EQ(::stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(names(), (std::set<std::string>{"link.json", "secret.json"}));
}

// Issue 51 (13): a dangling link was replaced by a plain file; its target is written, the link stays.
TEST_F(RobustIo, ADanglingLinkIsWrittenThrough) {
  fs::create_symlink("target.json", dir_ / "dangling.json");
  write_file_atomic(dir_ / "dangling.json", "through");
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling.json"));
  EXPECT_EQ(read_file(dir_ / "target.json"), "through");
  fs::create_symlink("dangling.json", dir_ / "chain.json");  // a link to a link
  write_file_atomic(dir_ / "chain.json", "again");
  EXPECT_TRUE(fs::is_symlink(dir_ / "chain.json"));
  EXPECT_EQ(read_file(dir_ / "target.json"), "again");
  fs::create_symlink("loop.json", dir_ / "loop.json");
  std::string what;
  EXPECT_EQ(kind_of([&] { write_file_atomic(dir_ / "loop.json", "x"); }, &what), ErrorKind::Io);  // a loop: one line, nothing written
  EXPECT_NE(what.find("loop.json: Too many levels of symbolic links"), std::string::npos) << what;
}

// Issue 51 (2): cache folders are the user's own, made private; never a fixed folder under /tmp.
TEST_F(RobustIo, CacheFoldersArePrivateAndTheUsersOwn) {
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  ::setenv("XDG_CACHE_HOME", (dir_ / "xdg").c_str(), 1);
  EXPECT_EQ(user_cache_dir("engine"), dir_ / "xdg" / "temper" / "engine");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", dir_.c_str(), 1);
  EXPECT_EQ(user_cache_dir("tune"), dir_ / ".cache" / "temper" / "tune");
  ::unsetenv("HOME");
  std::string what;
  EXPECT_EQ(kind_of([&] { user_cache_dir("engine"); }, &what), ErrorKind::BadInput);
  EXPECT_NE(what.find("neither XDG_CACHE_HOME nor HOME is set"), std::string::npos) << what;
  if (home) ::setenv("HOME", saved_home.c_str(), 1);

  const fs::path made = dir_ / "a" / "b" / "c";
  ensure_private_dir(made);
  for (const fs::path& p : {dir_ / "a", dir_ / "a" / "b", made}) {
    struct stat st{};
    ASSERT_EQ(::lstat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << p;
  }
  ensure_private_dir(made);  // again: nothing to do
  ASSERT_EQ(::chmod(made.c_str(), 0777), 0);
  EXPECT_EQ(kind_of([&] { ensure_private_dir(made); }, &what), ErrorKind::BadInput);
  EXPECT_NE(what.find(made.string() + " can be written by other users"), std::string::npos) << what;
  fs::create_directory_symlink(made, dir_ / "link");
  EXPECT_EQ(kind_of([&] { ensure_private_dir(dir_ / "link"); }, &what), ErrorKind::BadInput);
  EXPECT_NE(what.find("is a symbolic link"), std::string::npos) << what;
  write_file_atomic(dir_ / "file", "x");
  EXPECT_EQ(kind_of([&] { ensure_private_dir(dir_ / "file"); }, &what), ErrorKind::BadInput);
  EXPECT_NE(what.find("is a file, not a folder"), std::string::npos) << what;
  // Another user's folder (root's /, when the tests do not run as root).
  if (::geteuid() != 0) {
    EXPECT_EQ(kind_of([&] { ensure_private_dir("/"); }, &what), ErrorKind::BadInput);
    EXPECT_NE(what.find("belongs to user id 0, not to you"), std::string::npos) << what;
  }
}

// (11) Temporaries of killed writers stayed forever; only stale ones of our own pattern go.
TEST_F(RobustIo, StaleTemporariesOfOurOwnNamingAreRemoved) {
  const fs::path out = dir_ / "out.f32";
  write_file_atomic(dir_ / ".out.f32.tmp-deadbeef", "killed writer");
  write_file_atomic(dir_ / ".out.f32.tmp-cafe", "live writer");
  write_file_atomic(dir_ / ".out.f32.tmp-notours", "someone else's");
  write_file_atomic(dir_ / ".other.tmp-deadbeef", "another file's");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (const char* n : {".out.f32.tmp-deadbeef", ".out.f32.tmp-notours", ".other.tmp-deadbeef"})
    fs::last_write_time(dir_ / n, old);
  write_file_atomic(out, "fresh");
  EXPECT_EQ(names(), (std::set<std::string>{".other.tmp-deadbeef", ".out.f32.tmp-cafe", ".out.f32.tmp-notours", "out.f32"}));
}

// (5) Under a file-size limit the writer died of SIGXFSZ (exit 153) and left its temporary file.
TEST_F(RobustIo, FileSizeLimitIsAnIoErrorNotASignal) {
  const fs::path path = dir_ / "big.f32";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_DFL);
    rlimit small{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &small);
    try {
      write_file_atomic(path, [](std::ostream& out) { out << std::string(64 << 10, 'x'); });
    } catch (const Error& e) {
      ::_exit(e.exit_code());
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 6);
  EXPECT_TRUE(names().empty());
}

// (6) dequant held its whole output in memory (1 GB output: 1.2 GB resident): a streamed write of
// 128 MiB must not grow the process by anything like that.
TEST_F(RobustIo, StreamedWritesAreNotHeldInMemory) {
  const fs::path path = dir_ / "big.f32";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rusage before{};
    ::getrusage(RUSAGE_SELF, &before);
    const std::string chunk(1 << 20, 'x');
    try {
      write_file_atomic(path, [&](std::ostream& out) {
        for (int i = 0; i < 128; ++i) out.write(chunk.data(), std::streamsize(chunk.size()));
      });
    } catch (const Error& e) {
      ::_exit(e.exit_code());
    }
    rusage after{};
    ::getrusage(RUSAGE_SELF, &after);
    ::_exit(after.ru_maxrss - before.ru_maxrss > 32 * 1024 ? 100 : 0);  // KiB: grew by more than 32 MiB
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "100: the output was held in memory";
  EXPECT_EQ(fs::file_size(path), uint64_t{128} << 20);
}

}  // namespace
}  // namespace temper
