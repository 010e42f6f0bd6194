// Issue 19, end to end: the real binary against hostile inputs (FIFOs, devices, huge or sparse
// files, out-of-range numbers, duplicate keys, non-UTF-8 names, unknown ggml types) and against
// outputs that name an input. Each must end in one clear line and the documented exit code; no
// input is ever overwritten.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "fixtures/fixtures.h"
#include "temper/fileio.h"
#include "temper/gguf.h"
#include "support/shell_run.h"
#include "support/test_dir.h"

namespace temper {
namespace {

namespace fs = std::filesystem;
namespace fx = fixtures;

using Result = test::ShellResult;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_test_dir("temper-robust"); }
  void TearDown() override { test::remove_test_dir(dir_); }

  // Runs temper with a time limit (a hang is a failure, not a stuck test).
  Result temper(const std::string& args) const {
    return test::run_shell("cd '" + dir_.string() + "' && timeout 60 " + std::string(TEMPER_BIN) + " " + args, dir_ / "stderr");
  }

  // A bad-input refusal: exit 2, one line naming `fragment`, never an internal error.
  void expect_refused(const Result& r, const std::string& fragment, int code = 2) const {
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }

  fs::path copy_fixture(fx::Fixture f, const std::string& name) const {
    const fs::path p = dir_ / name;
    fs::copy_file(fx::path(f), p);
    return p;
  }

  // A quick fake-backend session of one small shape.
  fs::path make_session(const std::string& name) const {
    const Result r = temper("sweep --backend fake --shape q4_0:64:256 --quick --no-confirm -o " + name);
    EXPECT_EQ(r.code, 0) << r.err;
    return dir_ / name;
  }

  fs::path dir_;
};

// (2) A FIFO given as JSON used to hang every reader; the GGUF reader already refused it.
TEST_F(Cli, FifoIsRefusedAtOnce) {
  ASSERT_EQ(::mkfifo((dir_ / "f.json").c_str(), 0600), 0);
  expect_refused(temper("session f.json"), "f.json: not a regular file (a FIFO)");
  expect_refused(temper("profile show f.json"), "not a regular file (a FIFO)");
  expect_refused(temper("roofline f.json"), "not a regular file (a FIFO)");
  ASSERT_EQ(::mkfifo((dir_ / "f.journal").c_str(), 0600), 0);
  expect_refused(temper("sweep --resume f.journal"), "not a regular file (a FIFO)");
}

// (7) /dev/zero, a directory and a 2 GB sparse file used to be read (~1 GB) before failing.
TEST_F(Cli, DevicesDirectoriesAndHugeFilesAreRefusedUnread) {
  expect_refused(temper("session /dev/zero"), "/dev/zero: not a regular file (a character device)");
  fs::create_directories(dir_ / "d.json");
  expect_refused(temper("session d.json"), "d.json: not a regular file (a directory)");
  {
    FILE* f = std::fopen((dir_ / "sparse.json").c_str(), "w");
    ASSERT_TRUE(f);
    ASSERT_EQ(::ftruncate(::fileno(f), off_t{2} << 30), 0);
    std::fclose(f);
  }
  expect_refused(temper("session sparse.json"), "sparse.json: 2147483648 bytes, more than the 64 MiB a session may have");
  expect_refused(temper("profile show sparse.json"), "more than the 16 MiB a profile may have");
}

// (3) 1e999 and a 5000-digit integer were "internal error: [json.exception.out_of_range.406]".
TEST_F(Cli, NumbersOutOfRangeAreBadInputNamingTheFile) {
  const std::string fixtures = TEMPER_CLI_FIXTURES;
  expect_refused(temper("session " + fixtures + "/number_overflow.json"), "number_overflow.json: not usable JSON");
  expect_refused(temper("profile show " + fixtures + "/long_integer.json"), "long_integer.json: not usable JSON");
}

// (13) Duplicate keys: nlohmann kept the last one silently.
TEST_F(Cli, DuplicateKeysAreRejected) {
  expect_refused(temper(std::string("session ") + TEMPER_CLI_FIXTURES + "/duplicate_key.json"),
                 "duplicate_key.json: duplicate key \"id\"");
}

// (15) "cannot open" was exit 2 for inspect and 6 for the others: it is bad input everywhere.
TEST_F(Cli, AMissingInputIsExit2ForEveryCommand) {
  for (const char* cmd : {"inspect nope.gguf", "dequant nope.gguf t -o out.f32", "sweep nope.gguf --backend fake",
                          "session nope.json", "profile show nope.json", "roofline nope.json", "sweep --resume nope.journal"})
    expect_refused(temper(cmd), "cannot open");
}

// (8) -o naming an input destroyed it with exit 0.
TEST_F(Cli, OutputsNeverOverwriteAnInput) {
  const fs::path model = copy_fixture(fx::Fixture::MiniLlama, "m.gguf");
  const std::string model_bytes = read_file(model);
  expect_refused(temper("dequant m.gguf blk.0.attn_q.weight -o m.gguf"), "-o m.gguf is the input m.gguf");
  expect_refused(temper("sweep m.gguf --backend fake --quick -o m.gguf"), "is the input");
  expect_refused(temper("sweep m.gguf --backend fake --quick --journal m.gguf"), "--journal m.gguf is the input");
  fs::create_symlink("m.gguf", dir_ / "link.gguf");
  expect_refused(temper("dequant m.gguf blk.0.attn_q.weight -o link.gguf"), "is the input");
  EXPECT_EQ(read_file(model), model_bytes);

  const fs::path session = make_session("s.json");
  const std::string session_bytes = read_file(session);
  expect_refused(temper("profile export s.json --format header -o s.json"), "is the input");
  expect_refused(temper("profile export s.json --format temper -o ./s.json"), "is the input");
  expect_refused(temper("roofline s.json --svg s.json"), "--svg s.json is the input");
  EXPECT_EQ(read_file(session), session_bytes);
  // A different output still works.
  EXPECT_EQ(temper("profile export s.json --format csv -o p.csv").code, 0);
  // (16) An export carrying nothing is refused, nothing written (issue 30), unless --allow-empty.
  const Result empty = temper("profile export s.json --format kernel-anvil --approve none -o anvil.json");
  EXPECT_EQ(empty.code, 2) << empty.err;
  EXPECT_NE(empty.err.find("anvil.json not written: it carries no config"), std::string::npos) << empty.err;
  EXPECT_FALSE(fs::exists(dir_ / "anvil.json"));
  const Result allowed = temper("profile export s.json --format kernel-anvil --approve none --allow-empty -o anvil.json");
  EXPECT_EQ(allowed.code, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("warning: anvil.json: it carries no config"), std::string::npos) << allowed.err;
}

// (4) A model whose file name is not valid UTF-8 made sweep fail with an internal error.
TEST_F(Cli, ModelNameNotValidUtf8Sweeps) {
  copy_fixture(fx::Fixture::MiniLlama, "m\xff\xfe.gguf");
  const Result r = temper("sweep 'm\xff\xfe.gguf' --backend fake --quick --no-confirm -o s.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(read_file(dir_ / "s.json").find("m\\\\xff\\\\xfe.gguf"), std::string::npos);
  EXPECT_EQ(temper("session s.json").code, 0);
}

// (6) A large dequant was silent (and held its output in memory): it now says how far it is.
TEST_F(Cli, LargeDequantReportsProgress) {
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  w.add_sparse_tensor("big", GgmlType::F16, {4096, 4096});
  w.add_sparse_tensor("small", GgmlType::F16, {64, 4});
  w.write(dir_ / "big.gguf");
  Result r = temper("dequant big.gguf big -o big.f32");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("dequant: 50% (32 of 64 MiB)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dequant: 100% (64 of 64 MiB)"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(dir_ / "big.f32"), uint64_t{64} << 20);
  r = temper("dequant big.gguf small -o small.f32");
  ASSERT_EQ(r.code, 0) << r.err;
  // (16) dims in words, since inspect lists them in ggml's order (64 x 4)
  EXPECT_NE(r.out.find("small (f16, 4 rows of 64 values)"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("dequant:"), std::string::npos) << r.err;  // small outputs stay quiet
}

// (1) A tensor of a type newer than this Temper: listed, left out, the rest of the file usable.
TEST_F(Cli, UnknownTensorTypeIsListedAndTheModelStillSweeps) {
  std::string image = fx::bytes(fx::Fixture::MiniLlama);
  const GgufFile parsed = GgufFile::from_bytes(image, "x");  // find_tensor points into it: keep it
  const TensorInfo* t = parsed.find_tensor("blk.1.attn_k.weight");
  ASSERT_TRUE(t);
  const uint32_t newer = 77;
  std::memcpy(image.data() + t->info_offset + 8 + t->name.size() + 4 + 8 * t->n_dims, &newer, 4);
  write_file_atomic(dir_ / "newer.gguf", image);
  Result r = temper("inspect newer.gguf --tensors");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 tensor of ggml type id 77 (not supported by this Temper) left out: blk.1.attn_k.weight"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("type id 77: not supported by this Temper"), std::string::npos) << r.out;
  r = temper("sweep newer.gguf --backend fake --quick --no-confirm -o s.json");
  EXPECT_EQ(r.code, 0) << r.err;
}

// (16) A tiny model said "0.00 B parameters"; float32 metadata printed as 9.999999747378752e-06.
TEST_F(Cli, InspectPrintsSmallCountsAndFloatsReadably) {
  copy_fixture(fx::Fixture::MiniLlama, "m.gguf");
  const Result r = temper("inspect m.gguf --metadata");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("0.00 B parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layer_norm_rms_epsilon"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 1e-05"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("9.99999974"), std::string::npos) << r.out;
}

// (16) A model of f16 tensors only swept to "complete, 0 results" with exit 0.
TEST_F(Cli, NothingToMeasureIsSaidAndIsNotSuccess) {
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  w.add_sparse_tensor("blk.0.attn_q.weight", GgmlType::F16, {64, 64});
  w.add_sparse_tensor("output.weight", GgmlType::F16, {64, 128});
  w.write(dir_ / "f16.gguf");
  const Result r = temper("sweep f16.gguf --backend fake --quick -o s.json");
  expect_refused(r, "nothing to measure: no shape of f16.gguf has an mmvq kernel");
  EXPECT_FALSE(fs::exists(dir_ / "s.json"));
  EXPECT_FALSE(fs::exists(dir_ / "s.json.journal"));
}

// (16) Sessions of two different models compared as "0 of 0 agree; median 0.00 %".
TEST_F(Cli, CompareWithNothingInCommonSaysSo) {
  make_session("a.json");
  ASSERT_EQ(temper("sweep --backend fake --shape q8_0:64:512 --quick --no-confirm -o b.json").code, 0);
  expect_refused(temper("session a.json --compare b.json"), "a.json and b.json have no shapes in common");
  EXPECT_EQ(temper("session a.json --compare a.json").code, 0);
}

// (6) Under a file-size limit dequant said "writing row … failed" about a hidden temporary: now an
// I/O error (exit 6) naming the output, with nothing half-written left behind.
TEST_F(Cli, DequantUnderAFileSizeLimitIsAnIoErrorNamingTheOutput) {
  GgufWriter w;
  w.add("general.architecture", GgufWriter::Value::string("llama"));
  w.add_sparse_tensor("big", GgmlType::F16, {4096, 1024});  // 16 MiB of f32 out
  w.write(dir_ / "big.gguf");
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit limited = old;
  limited.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  const Result r = temper("dequant big.gguf big -o big.f32");
  ::setrlimit(RLIMIT_FSIZE, &old);
  expect_refused(r, "cannot write big.f32: File too large", 6);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_TRUE(e.path().filename() == "big.gguf" || e.path().filename() == "stderr") << e.path();
}

// (13) `profile export` wrote what `profile validate` rejects, and a session winner with no result
// behind it went into the C++ header.
TEST_F(Cli, ExportRefusesWhatValidateRejects) {
  ASSERT_EQ(temper("sweep --backend fake --shape q4_K:4096:4096 --ncols 1 --no-confirm -o s.json").code, 0);
  ASSERT_EQ(temper("profile export s.json --format temper -o p.json").code, 0);
  nlohmann::json p = nlohmann::json::parse(read_file(dir_ / "p.json"));
  ASSERT_FALSE(p["entries"].empty());
  p["entries"][0]["arch"] = "rtx4090";
  write_file_atomic(dir_ / "bad-profile.json", p.dump());
  EXPECT_EQ(temper("profile validate bad-profile.json").code, 2);
  expect_refused(temper("profile export bad-profile.json --format header -o h.h"), "unknown arch \"rtx4090\"");

  nlohmann::json s = nlohmann::json::parse(read_file(make_session("q.json")));
  ASSERT_FALSE(s["winners"].empty());
  for (const auto& r : s["results"])
    ASSERT_NE(r["config"], (nlohmann::json{{"nwarps", 8}, {"rows_per_block", 4}}));
  s["winners"][0]["config"] = {{"nwarps", 8}, {"rows_per_block", 4}};
  write_file_atomic(dir_ / "bad-session.json", s.dump());
  expect_refused(temper("profile export bad-session.json --format header -o h.h"), "winners[0].config: no ok result behind 8x4");
  EXPECT_FALSE(fs::exists(dir_ / "h.h"));
}

}  // namespace
}  // namespace temper
