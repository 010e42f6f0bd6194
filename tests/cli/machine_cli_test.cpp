// Issue 32, end to end: the real binary where it touches what is not its own — outputs that are
// FIFOs, devices, read-only files or one of the inputs; `engine build --arch` with shell
// metacharacters; `engine check|patch` on hostile trees; names that are not UTF-8 under --json.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "temper/content_hash.h"
#include "fixtures/fixtures.h"
#include "support/device_node.h"
#include "support/upstream_tree.h"
#include "temper/fileio.h"
#include "support/shell_run.h"
#include "support/test_dir.h"

namespace temper {
namespace {

namespace fs = std::filesystem;
namespace fx = fixtures;

using Result = test::ShellResult;

class Cli32 : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_test_dir("temper-cli32"); }
  void TearDown() override { test::remove_test_dir(dir_); }

  // A shell script run in the test's folder, $T being temper; a time limit makes a hang a failure.
  Result sh(const std::string& script) const {
    write_file_atomic(dir_ / "run.sh", script + "\n");
    return test::run_shell("cd '" + dir_.string() + "' && T='" + std::string(TEMPER_BIN) + "' timeout 60 sh run.sh",
                           dir_ / "stderr");
  }
  Result temper(const std::string& args) const { return sh("\"$T\" " + args); }

  void expect_refused(const Result& r, const std::string& fragment, int code = 2) const {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }

  bool is_fifo(const std::string& name) const {
    struct stat st{};
    return ::lstat((dir_ / name).c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  }

  // A fake-backend session and its Temper profile; v1.json: an arch-level profile (schema 1) whose
  // entries approve and reject address without a device.
  void make_session_and_profile() const {
    ASSERT_EQ(temper("sweep --backend fake --shape q4_K:4096:4096 --ncols 1 --no-confirm -o s.json").code, 0);
    ASSERT_EQ(temper("profile export s.json --format temper --approve all -o p.json").code, 0);
    fs::copy_file(fs::path(TEMPER_SOURCE_DIR) / "tests/profile/fixtures/profile.json", dir_ / "v1.json");
  }

  fs::path dir_;
};

// (3) `--arch 'sm_90;touch X;#'` ran `touch X`: now exit 2 naming the known archs, and nothing runs.
TEST_F(Cli32, ArchWithShellMetacharactersRunsNothing) {
  fs::create_directories(dir_ / "tree");
  // Single-quoted: the test's own shell passes them to temper as they are.
  for (const char* arch : {"sm_90;touch X;#", "sm_90 $(touch X)", "`touch X`", "gfx90a|touch X", "sm_999"}) {
    const Result r = temper(std::string("engine build tree --arch '") + arch + "' --cache cache");
    expect_refused(r, "not an arch ggml builds for (expected one of sm_50");
    expect_refused(temper(std::string("sweep --shape q4_0:64:256 --engine-src tree --arch '") + arch + "'"),
                   "not an arch ggml builds for");
  }
  EXPECT_FALSE(fs::exists(dir_ / "X"));
  EXPECT_FALSE(fs::exists(dir_ / "cache"));
}

// (4) Outputs replaced FIFOs with regular files (exit 0): now a FIFO's reader gets the bytes, and
// without a reader the write is refused at once; the node stays a FIFO either way.
TEST_F(Cli32, FifoOutputsAreWrittenIntoOrRefused) {
  make_session_and_profile();
  fs::copy_file(fx::path(fx::Fixture::MiniLlama), dir_ / "m.gguf");
  ASSERT_EQ(::mkfifo((dir_ / "out").c_str(), 0600), 0);
  for (const std::string cmd : {"profile export s.json --format header -o out", "roofline s.json --svg out",
                                 "dequant m.gguf blk.0.attn_q.weight -o out", "profile approve v1.json --type q6_K --n 4096 --k 14336 --ncols 2 -o out",
                                 "profile merge p.json p.json -o out"}) {
    const Result r = temper(cmd);
    expect_refused(r, "out is a FIFO with no reader");
    EXPECT_LT(r.seconds, 5) << cmd;
    EXPECT_TRUE(is_fifo("out")) << cmd;
  }
  // With a reader on the other end (tried again until the reader has opened its end).
  const Result r = sh("cat out > got &\n"
                      "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do\n"
                      "  \"$T\" profile export s.json --format header -o out 2>/dev/null && break; sleep 0.2\n"
                      "done; rc=$?; wait; exit $rc");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(read_file(dir_ / "got").find("constexpr"), std::string::npos);
  EXPECT_TRUE(is_fifo("out"));
  // A sweep's session into a FIFO: its journal goes beside the default session file instead.
  const Result sweep = sh("cat out > got-session & sleep 0.3; \"$T\" sweep --backend fake --shape q4_0:64:256 --quick --no-confirm -o out; rc=$?; wait; exit $rc");
  EXPECT_EQ(sweep.code, 0) << sweep.err;
  EXPECT_NE(read_file(dir_ / "got-session").find("\"results\""), std::string::npos);
  EXPECT_TRUE(is_fifo("out"));
  EXPECT_FALSE(fs::exists(dir_ / "out.journal"));
}

// (4) /dev/full and /dev/null: written into (an I/O error for a full device), never replaced.
// (As root they are made in the test's folder: a regression must not replace the machine's own.)
TEST_F(Cli32, DeviceOutputsAreNeverReplaced) {
  const fs::path null = test::device_node("null", dir_), full = test::device_node("full", dir_);
  if (null.empty() || full.empty()) GTEST_SKIP() << "SKIPPED: cannot make device nodes here";
  make_session_and_profile();
  struct stat before{}, after{};
  ASSERT_EQ(::stat(full.c_str(), &before), 0);
  expect_refused(temper("profile export s.json --format header -o " + full.string()),
                 "cannot write " + full.string() + ": No space left on device", 6);
  EXPECT_EQ(temper("profile export s.json --format header -o " + null.string()).code, 0);
  for (const fs::path& node : {null, full}) {
    ASSERT_EQ(::stat(node.c_str(), &after), 0);
    EXPECT_TRUE(S_ISCHR(after.st_mode)) << node;
  }
  EXPECT_EQ(before.st_rdev, after.st_rdev);
  // -o /dev/stdout tried to create /dev/.stdout.tmp-*: the export arrives on stdout.
  const Result r = temper("profile export s.json --format header -o " + test::stdout_path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("constexpr"), std::string::npos) << r.out;
}

// (4) A 0444 output was overwritten silently: refused unless --force.
TEST_F(Cli32, ReadOnlyOutputsNeedForce) {
  make_session_and_profile();
  write_file_atomic(dir_ / "ro.h", "keep me\n");
  ASSERT_EQ(::chmod((dir_ / "ro.h").c_str(), 0444), 0);
  expect_refused(temper("profile export s.json --format header -o ro.h"), "ro.h is read-only: not replacing it (--force replaces it)");
  EXPECT_EQ(read_file(dir_ / "ro.h"), "keep me\n");
  // In place too, and before a sweep starts rather than after it ends.
  ASSERT_EQ(::chmod((dir_ / "v1.json").c_str(), 0444), 0);
  expect_refused(temper("profile reject v1.json --type q6_K --n 4096 --k 14336 --ncols 2"), "v1.json is read-only");
  write_file_atomic(dir_ / "ro.json", "{}\n");
  ASSERT_EQ(::chmod((dir_ / "ro.json").c_str(), 0444), 0);
  const Result sweep = temper("sweep --backend fake --shape q4_0:64:256 --quick --no-confirm -o ro.json");
  expect_refused(sweep, "ro.json is read-only");
  EXPECT_FALSE(fs::exists(dir_ / "ro.json.journal"));
  EXPECT_EQ(temper("profile export s.json --format header -o ro.h --force").code, 0);
  EXPECT_NE(read_file(dir_ / "ro.h"), "keep me\n");
}

// (5) `profile merge A B -o A` replaced its input: refused, however A is spelled.
TEST_F(Cli32, MergeRefusesAnOutputThatIsAnInput) {
  make_session_and_profile();
  // The fake winner may not be expressible in kernel-anvil's format: an empty file is input enough here.
  ASSERT_EQ(temper("profile export s.json --format kernel-anvil --approve all --allow-empty -o anvil.json").code, 0);
  const std::string anvil = read_file(dir_ / "anvil.json");
  fs::create_symlink("anvil.json", dir_ / "link.json");
  fs::create_hard_link(dir_ / "anvil.json", dir_ / "hard.json");
  for (const char* out : {"anvil.json", "./anvil.json", "link.json", "hard.json"})
    expect_refused(temper(std::string("profile merge anvil.json p.json --arch sm_90 -o ") + out), "is the input");
  EXPECT_EQ(read_file(dir_ / "anvil.json"), anvil);
  EXPECT_EQ(temper("profile merge anvil.json p.json --arch sm_90 -o merged.json").code, 0);
}

// (8) --json with an output name that is not UTF-8: exit 1 after the file was written.
TEST_F(Cli32, OutputNamesThatAreNotUtf8WorkWithJson) {
  make_session_and_profile();
  fs::copy_file(fx::path(fx::Fixture::MiniLlama), dir_ / "m.gguf");
  for (const auto& [cmd, key] : std::vector<std::pair<std::string, std::string>>{
           {"profile export s.json --format temper --json -o 'o\xff.json'", "output"},
           {"profile merge p.json p.json --json -o 'o\xff.json'", "output"},
           {"dequant m.gguf blk.0.attn_q.weight --json -o 'o\xff.json'", "output"},
           {"sweep --backend fake --shape q4_0:64:256 --quick --no-confirm --json -o 'o\xff.json'", "session_file"}}) {
    fs::remove(dir_ / "o\xff.json");
    const Result r = temper(cmd);
    ASSERT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)[key].get<std::string>(), "o\\xff.json") << cmd;
    EXPECT_TRUE(fs::exists(dir_ / "o\xff.json")) << cmd;
  }
}

// (6) mmvq.cu as a FIFO hung `engine check|patch`; /dev/zero and a 2 GB file were read whole.
TEST_F(Cli32, HostileMmvqIsRefusedWithinASecond) {
  const fs::path cuda = dir_ / "tree/src/ggml-cuda";
  fs::create_directories(cuda);
  ASSERT_EQ(::mkfifo((cuda / "mmvq.cu").c_str(), 0600), 0);
  for (const char* cmd : {"engine check tree", "engine patch tree --kernel-set ci", "engine patch tree --undo"}) {
    const Result r = temper(cmd);
    expect_refused(r, "mmvq.cu: not a regular file (a FIFO)");
    EXPECT_LT(r.seconds, 1.0) << cmd;
  }
  fs::remove(cuda / "mmvq.cu");
  fs::create_symlink("/dev/zero", cuda / "mmvq.cu");
  Result r = temper("engine check tree");
  expect_refused(r, "leads to /dev/zero (a symbolic link), outside");
  EXPECT_LT(r.seconds, 1.0);
  fs::remove(cuda / "mmvq.cu");
  {
    FILE* f = std::fopen((cuda / "mmvq.cu").c_str(), "w");
    ASSERT_TRUE(f);
    ASSERT_EQ(::ftruncate(::fileno(f), off_t{2} << 30), 0);
    std::fclose(f);
  }
  r = temper("engine patch tree");
  expect_refused(r, "2147483648 bytes, more than the 4 MiB");
  EXPECT_LT(r.seconds, 1.0);
  // CRLF is named.
  write_file_atomic(cuda / "mmvq.cu", "// a\r\n// b\r\n");
  r = temper("engine check tree");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("Windows (CRLF) line endings"), std::string::npos) << r.out;
}

// (8) `engine check` on a hand-patched mmvq.cu suggested `--undo`, which then failed.
TEST_F(Cli32, CheckSuggestsOnlyAnUndoThatWorks) {
  const fs::path cuda = dir_ / "tree/src/ggml-cuda";
  fs::create_directories(cuda);
  write_file_atomic(cuda / "mmvq.cu", "// temper-hook v2: patched by Temper (temper engine patch); restore with `...`\n// by hand\n");
  const Result r = temper("engine check tree");
  EXPECT_EQ(r.out.find("--undo)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot restore it: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("git checkout -- src/ggml-cuda/mmvq.cu"), std::string::npos) << r.out;
  const Result j = temper("engine check tree --json");
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_FALSE(doc["undoable"].get<bool>());
  EXPECT_NE(doc["undo_problem"].get<std::string>().find("not patched by Temper"), std::string::npos);
  expect_refused(temper("engine patch tree --undo"), "not patched by Temper; nothing to undo");
}

// (2) `engine patch --undo` deleted whatever the manifest listed, `../` and absolute paths included.
TEST_F(Cli32, UndoWithATamperedManifestRemovesNothing) {
  const fs::path cuda = dir_ / "tree/src/ggml-cuda";
  fs::create_directories(cuda / ".temper-hook");
  const std::string patched = "// temper-hook v2: patched by Temper (temper engine patch); restore with `...`\n// hooked\n";
  write_file_atomic(cuda / "mmvq.cu", patched);
  write_file_atomic(cuda / ".temper-hook/mmvq.cu.orig", "// original\n");
  write_file_atomic(dir_ / "victim.txt", "the user's\n");
  write_file_atomic(dir_ / "victim2.txt", "the user's too\n");
  // The manifest as Temper wrote it before hashes were kept, with two names a shared tree could add.
  write_file_atomic(cuda / ".temper-hook/manifest.txt", "set=ci\nmmvq=" + content_hash(patched) +
                                                           "\n../../../victim.txt\n" + (dir_ / "victim2.txt").string() + "\n");
  expect_refused(temper("engine patch tree --undo"), "not a file the hook writes");
  EXPECT_EQ(read_file(dir_ / "victim.txt"), "the user's\n");
  EXPECT_EQ(read_file(dir_ / "victim2.txt"), "the user's too\n");
  EXPECT_EQ(read_file(cuda / "mmvq.cu"), patched);
}

// (8) A symlinked mmvq.cu was patched through to the file outside the tree. Needs an upstream tree.
TEST_F(Cli32, AnMmvqLinkLeavingTheTreeIsRefused) {
  std::string why;
  const fs::path tree = test::upstream_tree("ggml-d99724f", &why);
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const fs::path source = tree / "src" / "ggml-cuda" / "mmvq.cu";
  fs::create_directories(dir_ / "tree/src/ggml-cuda");
  write_file_atomic(dir_ / "elsewhere-mmvq.cu", read_file(source));
  fs::create_symlink(dir_ / "elsewhere-mmvq.cu", dir_ / "tree/src/ggml-cuda/mmvq.cu");
  expect_refused(temper("engine patch tree --kernel-set ci"), "leads to " + (dir_ / "elsewhere-mmvq.cu").string());
  EXPECT_EQ(read_file(dir_ / "elsewhere-mmvq.cu"), read_file(source));
  EXPECT_FALSE(fs::exists(dir_ / "tree/src/ggml-cuda/temper-mmvq.cuh"));
}

// (8) Two concurrent `engine patch` runs both reported success. Needs an upstream tree.
TEST_F(Cli32, ConcurrentPatchesOfOneTreeAreSerialised) {
  std::string why;
  const fs::path tree = test::upstream_tree("ggml-d99724f", &why);
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const fs::path source = tree / "src" / "ggml-cuda";
  fs::create_directories(dir_ / "tree/src");
  fs::copy(source, dir_ / "tree/src/ggml-cuda", fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "tree")) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  const Result r = sh("\"$T\" engine patch tree --kernel-set ci > a.out 2> a.err & \"$T\" engine patch tree --kernel-set ci > b.out 2> b.err &\n"
                      "wait; cat a.err b.err >&2; cat a.out b.out | grep -c '^patched'");
  EXPECT_EQ(r.out, "1\n") << r.err;
  EXPECT_NE(r.err.find("already patched"), std::string::npos) << r.err;
  EXPECT_EQ(temper("engine patch tree --undo").code, 0);
}

}  // namespace
}  // namespace temper
