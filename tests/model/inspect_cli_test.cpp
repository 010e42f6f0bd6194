// `temper inspect` end to end: the real binary on fixture files, its JSON document and its exit
// codes for damaged input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "fixtures/fixtures.h"
#include "temper/fileio.h"
#include "support/shell_run.h"

namespace temper {
namespace {

namespace fx = fixtures;

using Result = test::ShellResult;

Result run_temper(const std::string& args) {
  const auto err_file = std::filesystem::temp_directory_path() / ("temper-inspect-err-" + std::to_string(::getpid()));
  Result r = test::run_shell(std::string(TEMPER_BIN) + " " + args, err_file);
  std::filesystem::remove(err_file);
  return r;
}

TEST(InspectCli, JsonOfTheLlama3Fixture) {
  const Result r = run_temper("inspect --json --gpu h100-sxm " + fx::path(fx::Fixture::Llama3_8B_Q4_K_M).string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "temper.inspect/1");
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["bytes_per_token"].get<uint64_t>(), 4'616'331'264u);
  ASSERT_EQ(j["shapes"].size(), 7u);
  const auto& top = j["shapes"][0];
  EXPECT_EQ(top["type"], "q4_K");
  EXPECT_EQ(top["n"], 14336);
  EXPECT_EQ(top["k"], 4096);
  EXPECT_EQ(top["calls_per_token"], 64);
  EXPECT_EQ(top["bytes_per_token"].get<uint64_t>(), 64ull * 14336 * 2304);
  EXPECT_EQ(top["tensors"].size(), 64u);
  EXPECT_EQ(j["ceilings"].size(), 1u);
  EXPECT_EQ(j["ceilings"][0]["gpu"], "h100-sxm");
  uint64_t sum = 0;
  for (const auto& s : j["shapes"]) sum += s["bytes_per_token"].get<uint64_t>();
  EXPECT_EQ(sum, j["bytes_per_token"].get<uint64_t>());
}

TEST(InspectCli, TextTableAndMoeCounts) {
  const Result r = run_temper("inspect " + fx::path(fx::Fixture::Qwen3_30B_A3B).string() + " --gpu mi300x");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("qwen3moe, 48 layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("128 experts (8 used)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.0.ffn_gate_exps.weight"), std::string::npos) << r.out;
}

TEST(InspectCli, DamagedFileExitsTwoWithOneLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("temper-inspect-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto bad = dir / "cut.gguf";
  write_file_atomic(bad, fx::bytes(fx::Fixture::MiniLlama).substr(0, 1000));
  const Result r = run_temper("inspect " + bad.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find(bad.string() + ": byte "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(run_temper("inspect " + (dir / "missing.gguf").string()).code, 2);
  EXPECT_EQ(run_temper("inspect").code, 2);
  EXPECT_EQ(run_temper("inspect " + bad.string() + " --gpu no-such-gpu").code, 2);
  EXPECT_EQ(run_temper("inspect " + bad.string() + " --frobnicate").code, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace temper
