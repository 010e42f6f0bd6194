// `temper engine bench` (issue 28): llama-bench's output read back, the engine's line, and the whole
// command against the stand-in llama-bench (tests/engine/fake_llama_bench.cpp), whose profile arm is
// exactly 10 % faster with ±0.4 % noise.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_run.h"
#include "fixtures/fixtures.h"
#include "temper/engine_bench.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/format.h"
#include "temper/stats.h"

using namespace temper;
namespace fs = std::filesystem;
namespace {

test::CliRun temper(const std::vector<std::string>& args, const test::Env& env = {}, bool split = false) {
  return test::run_temper(args, env, split);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BenchTests, NamesBecomeLlamaBenchArguments) {
  const auto t = engine::parse_bench_tests("tg128,pp2,pp8");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].args, (std::vector<std::string>{"-p", "0", "-n", "128"}));
  EXPECT_EQ(t[0].n_gen, 128);
  // Batch width W: a 128-token prompt in W-token micro-batches, every one through mmvq at W.
  EXPECT_EQ(t[1].args, (std::vector<std::string>{"-p", "128", "-n", "0", "-ub", "2"}));
  EXPECT_EQ(t[2].n_ubatch, 8);
  EXPECT_NE(error_of([] { engine::parse_bench_tests("pp16"); }).find("bench test 'pp16': a profile changes only mmvq launches"), std::string::npos);
  EXPECT_NE(error_of([] { engine::parse_bench_tests("tg128,tg128"); }).find("given twice"), std::string::npos);
  EXPECT_NE(error_of([] { engine::parse_bench_tests("decode"); }).find("expected tgN"), std::string::npos);
}

constexpr const char* kRow =
    R"({"build_commit": "abc1234", "build_number": 7, "gpu_info": "NVIDIA H100 80GB HBM3", "model_filename": "m.gguf",
        "model_type": "llama 8B Q4_K - Medium", "n_prompt": 0, "n_gen": 128, "n_ubatch": 512,
        "samples_ns": [ 1280000000, 1000000000 ], "samples_ts": [ 100.0, 128.0 ]})";

TEST(BenchJson, ArrayLinesAndNanosecondsOnly) {
  const auto rows = engine::parse_llama_bench_json(std::string("[\n") + kRow + "\n]\n", "x");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].build_commit, "abc1234");
  EXPECT_EQ(rows[0].build_number, 7);
  EXPECT_EQ(rows[0].samples_ts, (std::vector<double>{100.0, 128.0}));
  // -o jsonl: an object a line.
  std::string one_line = kRow;
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  EXPECT_EQ(engine::parse_llama_bench_json(one_line + "\n" + one_line + "\n", "x").size(), 2u);
  // Without samples_ts, tokens/s from samples_ns as llama-bench derives it: 1e9 × tokens / ns.
  std::string ns_only = one_line;
  ns_only.replace(ns_only.find(", \"samples_ts\""), ns_only.find('}') - ns_only.find(", \"samples_ts\""), "");
  EXPECT_EQ(engine::parse_llama_bench_json(ns_only, "x")[0].samples_ts, (std::vector<double>{100.0, 128.0}));
  EXPECT_NE(error_of([] { engine::parse_llama_bench_json("", "run"); }).find("run: no result"), std::string::npos);
  EXPECT_NE(error_of([] { engine::parse_llama_bench_json("{\"n_prompt\": 0}", "run"); }).find("run: \"n_gen\": expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { engine::parse_llama_bench_json("| model | t/s |", "run"); }).find("not llama-bench's JSON"),
            std::string::npos);
}

TEST(BenchEngineLine, FoundAndRead) {
  const std::string line =
      "temper: profile /p.json: 6 entries for sm_90 (device 0); ignored 4 for other archs, 1 with a config not compiled in, 0 malformed, 2 not approved";
  const std::string err = "llama_model_loader: x\n" + line + "\nllama_perf: y\n";
  EXPECT_EQ(engine::find_engine_line(err), line);
  EXPECT_EQ(engine::engine_line_arch(line), "sm_90");
  EXPECT_EQ(engine::engine_line_entries(line), 6);
  // Hook v3's line, as the H100 printed it: the device's own entries plus the arch's.
  const std::string v3 =
      "temper: profile /x/engine-profile.json: 21 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 2 for sm_90; ignored 0 for "
      "other archs, 0 for other devices, 0 for launches this hook lacks, 0 with a config not compiled in, 0 malformed, 1 not approved";
  EXPECT_EQ(engine::engine_line_arch(v3), "sm_90");
  EXPECT_EQ(engine::engine_line_entries(v3), 23);
  EXPECT_EQ(engine::find_engine_line("no hook here\n"), "");
  EXPECT_EQ(engine::engine_line_entries("temper: profile /p.json ignored: cannot open it; mmvq runs stock"), -1);
}

TEST(BenchSequence, ArmsAlternateAndTakeTurnsGoingFirst) {
  const auto seq = engine::bench_sequence(2, 3);
  ASSERT_EQ(seq.size(), 12u);
  for (size_t i = 0; i < seq.size(); ++i) {
    const bool odd_round = i >= 6;
    EXPECT_EQ(seq[i].profiled, (i % 2 == 1) != odd_round) << i;
    EXPECT_EQ(seq[i].round, int(i / 6));
    EXPECT_EQ(seq[i].test, int(i / 2 % 3));
  }
}

// ---- The command against the stand-in ----

struct BenchDir {
  fs::path dir = fs::temp_directory_path() / ("temper-bench-" + std::to_string(::getpid()));
  fs::path profile = dir / "profile.json", log = dir / "invocations.log";
  BenchDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(TEMPER_SOURCE_DIR "/tests/profile/fixtures/profile.json", profile);
  }
  ~BenchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::vector<std::string> args(std::vector<std::string> more = {}) const {
    std::vector<std::string> a = {"engine", "bench", fixtures::path(fixtures::Fixture::MiniLlama).string(), "--llama-bench",
                                  FAKE_LLAMA_BENCH, "--profile", profile.string()};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  test::Env env(test::Env more = {}) const {
    more.emplace_back("FAKE_LLAMA_BENCH_LOG", log.string());
    return more;
  }
};

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(EngineBenchCli, ProfileArmTenPercentFasterWithACiThatHoldsIt) {
  const BenchDir d;
  const test::CliRun r = temper(d.args({"--rounds", "3", "--json"}), d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tests"].size(), 4u);
  const auto& tg = j["tests"][0];
  EXPECT_EQ(tg["name"], "tg128");
  const double s = tg["speedup"], lo = tg["speedup_low"], hi = tg["speedup_high"];
  EXPECT_GE(s, 1.08);
  EXPECT_LE(s, 1.12);
  EXPECT_LE(lo, 1.10);
  EXPECT_GE(hi, 1.10);
  EXPECT_LT(hi - lo, 0.02);  // ±0.4 % noise over 15 samples an arm: a tight interval
  for (const auto& t : j["tests"]) {
    EXPECT_EQ(t["stock_runs"].size(), 3u);
    EXPECT_EQ(t["profiled_runs"].size(), 3u);
    EXPECT_EQ(t["stock_runs"][0].size(), 5u);  // llama-bench's own repetitions, each kept
    EXPECT_NEAR(t["speedup"].get<double>(), 1.10, 0.01) << t["name"];
  }
  EXPECT_EQ(j["tests"][3]["n_ubatch"], 8);
  EXPECT_EQ(j["device"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["arch"], "sm_90");
  EXPECT_EQ(j["stock"]["build_commit"], "0d1e2f3");
  EXPECT_NE(j["engine_line"].get<std::string>().find("entries for NVIDIA H100 80GB HBM3 (sm_90, device 0)"), std::string::npos);
  EXPECT_TRUE(j["recorded"]);
  // The arms alternate run by run (3 rounds × 4 tests × 2 arms): stock first in rounds 1 and 3, the
  // profile first in round 2.
  const auto calls = lines_of(d.log);
  ASSERT_EQ(calls.size(), 24u);
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool profile_first = i / 8 == 1;
    EXPECT_EQ(calls[i].rfind((i % 2 == 1) != profile_first ? "profile " : "stock ", 0), 0u) << i << ": " << calls[i];
  }
  EXPECT_NE(calls[2].find("-p 128 -n 0 -ub 2 -r 5 -o json"), std::string::npos) << calls[2];
  // Progress on stderr, a line a run.
  EXPECT_NE(r.output.find("bench: run 24/24 (round 3/3 · pp8 · profile), ETA"), std::string::npos) << r.output;
  // Recorded in the profile, which stays valid and round-trips.
  const Profile p = load_profile(d.profile);
  ASSERT_EQ(p.benches.size(), 1u);
  EXPECT_TRUE(validate_profile(p).empty());
  EXPECT_EQ(p.benches[0].tests[0].stock_runs, j["tests"][0]["stock_runs"].get<std::vector<std::vector<double>>>());
  EXPECT_EQ(current_bench(p, "sm_90"), &p.benches[0]);
}

TEST(EngineBenchCli, MissingOrNotExecutableIsExitTwoWithOneLine) {
  const BenchDir d;
  std::vector<std::string> a = d.args();
  a[4] = "/nonexistent/llama-bench";
  test::CliRun r = temper(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output, "temper engine: llama-bench /nonexistent/llama-bench: no such file\n");
  a[4] = d.profile.string();  // a file, not executable
  r = temper(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.output, "temper engine: llama-bench " + d.profile.string() + ": not an executable file\n");
  EXPECT_FALSE(fs::exists(d.log));  // nothing ran
}

TEST(EngineBenchCli, UnpatchedBinaryFailingRunAndMissingModel) {
  const BenchDir d;
  test::CliRun r = temper(d.args({"--tests", "tg128", "--rounds", "1"}), d.env({{"FAKE_LLAMA_BENCH_UNPATCHED", "1"}}));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("printed no `temper: profile` line: it is not built from a tree with Temper's hook"), std::string::npos)
      << r.output;
  r = temper(d.args({"--tests", "tg128", "--rounds", "1"}), d.env({{"FAKE_LLAMA_BENCH_FAIL", "1"}}));
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("llama-bench (round 1/1 · tg128 · stock) exited with status 1: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("failed to load model"), std::string::npos) << r.output;
  std::vector<std::string> a = d.args();
  a[2] = (d.dir / "missing.gguf").string();
  r = temper(a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("missing.gguf"), std::string::npos) << r.output;
  EXPECT_EQ(load_profile(d.profile).benches.size(), 0u);  // nothing recorded on failure
}

TEST(EngineBenchCli, StockBuildApartMarkdownAndCsv) {
  const BenchDir d;
  // An unpatched stock build of another commit, as a user keeps one next to the patched build.
  const fs::path stock = d.dir / "stock-llama-bench";
  write_file_atomic(stock, std::string("#!/bin/sh\nFAKE_LLAMA_BENCH_UNPATCHED=1 FAKE_LLAMA_BENCH_COMMIT=5a5a5a5 exec '") +
                               FAKE_LLAMA_BENCH + "' \"$@\"\n");
  ::chmod(stock.c_str(), 0755);
  test::CliRun r = temper(d.args({"--stock-bench", stock.string(), "--tests", "tg128,pp4", "--rounds", "2", "--md", "--no-record"}),
                          d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.out.find("- stock: `" + stock.string() + "` (build 5a5a5a5, 4242)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- profile: `" + fs::path(FAKE_LLAMA_BENCH).lexically_normal().string() + "` (build 0d1e2f3, 4242)"),
            std::string::npos) << r.out;
  // compare-llama-bench's columns, the micro-batch size shown because it differs between rows.
  EXPECT_NE(r.out.find("| GPU                   | Model           | Microbatch size | Test  | t/s stock | t/s profile | Speedup | 95 % CI "),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|:----------------------|:----------------|----------------:|:------|----------:|"), std::string::npos) << r.out;
  // Its display rules: "NVIDIA " is not a stripped prefix; " - Medium" becomes "_M".
  EXPECT_NE(r.out.find("| NVIDIA H100 80GB HBM3 | llama 8B Q4_K_M |             512 | tg128 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|               4 | pp128 |"), std::string::npos) << r.out;
  EXPECT_EQ(load_profile(d.profile).benches.size(), 0u);  // --no-record
  r = temper(d.args({"--tests", "pp2", "--rounds", "2", "--repetitions", "3", "--csv", "--no-record"}), d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  std::istringstream csv(r.out);
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "test,llama_bench_test,n_ubatch,arm,round,repetition,tokens_per_s");
  int rows = 0, profile_rows = 0;
  for (std::string l; std::getline(csv, l); ++rows) profile_rows += l.find(",profile,") != std::string::npos;
  EXPECT_EQ(rows, 2 * 2 * 3);
  EXPECT_EQ(profile_rows, 6);
}

TEST(EngineBenchCli, ProfileWithoutApprovedEntriesRunsStockAndSaysSo) {
  const BenchDir d;
  Profile p = load_profile(d.profile);
  for (auto& e : p.entries) e.approval = Approval::Pending, e.decided_at.clear();
  save_profile(p, d.profile);
  const test::CliRun r = temper(d.args({"--tests", "tg128", "--rounds", "2", "--json"}), d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("note: the engine found no entry of this profile it can use on sm_90"), std::string::npos) << r.output;
  EXPECT_NEAR(nlohmann::json::parse(r.out)["tests"][0]["speedup"].get<double>(), 1.0, 0.01);
}

// Ctrl-C: the running llama-bench is stopped, nothing is recorded, exit 7.
TEST(EngineBenchCli, InterruptStopsTheRunAndRecordsNothing) {
  const BenchDir d;
  const fs::path out = d.dir / "out.txt";
  const pid_t pid = test::spawn_temper(d.args({"--tests", "tg128", "--rounds", "3"}),
                                       d.env({{"FAKE_LLAMA_BENCH_SLEEP_MS", "400"}}), out, out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (lines_of(d.log).size() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, SIGINT);
  EXPECT_EQ(test::wait_code(pid), 7) << test::slurp(out);
  EXPECT_NE(test::slurp(out).find("bench cancelled (Ctrl-C); nothing was recorded"), std::string::npos) << test::slurp(out);
  EXPECT_LT(lines_of(d.log).size(), 6u);
  EXPECT_EQ(load_profile(d.profile).benches.size(), 0u);
}


// ---- A hostile llama-bench (issue 51): every output bounded and validated, never a crash ----

TEST(BenchHostile, EmptyArrayHugeCountsAndLongLinesAreOneLine) {
  // "[]": no result (it crashed on rows.front() of none).
  EXPECT_NE(error_of([] { engine::parse_llama_bench_json("[]", "run"); }).find("run: no result"), std::string::npos);
  EXPECT_NE(error_of([] { engine::parse_llama_bench_json("[]\n", "run"); }).find("run: no result"), std::string::npos);
  // A 40,000-character engine line (std::regex overflowed the stack on it) and counts past int.
  const std::string tail = " (sm_90, device 0), 2 for sm_90; ignored 0";
  const std::string long_name = "temper: profile /p.json: 6 entries for " + std::string(40000, 'x') + tail;
  EXPECT_EQ(engine::engine_line_entries(long_name), 8);
  EXPECT_EQ(engine::engine_line_arch(long_name), "sm_90");
  EXPECT_EQ(engine::find_engine_line("a\n" + long_name + "\n"), "");  // longer than the hook writes: not its line
  EXPECT_EQ(engine::engine_line_entries("temper: profile /p.json: 99999999999999999999 entries for sm_90 (device 0); x"), -1);
  EXPECT_EQ(engine::engine_line_entries("temper: profile /p.json: 6 entries for G (sm_90, device 0), 99999999999999 for sm_90;"), -1);
  const std::string parens = "temper: profile /p.json: 1 entries for " + std::string(20000, '(') + " (" + std::string(20000, ' ');
  EXPECT_EQ(engine::engine_line_entries(parens), -1);
}

TEST(BenchHostile, SamplesBoundedAndFinite) {
  const auto row = [](const std::string& samples) {
    return std::string(R"([{"gpu_info": "G", "n_prompt": 0, "n_gen": 128, )") + samples + "}]";
  };
  std::string many = "\"samples_ts\": [1";
  for (int i = 0; i < 20000; ++i) many += ",1";
  EXPECT_NE(error_of([&] { engine::parse_llama_bench_json(row(many + "]"), "run"); }).find("20001 samples (at most 10000"),
            std::string::npos);
  // An infinite speed (tokens/s from a sample of 1e-320 ns) or one past any GPU is no measurement.
  EXPECT_NE(error_of([&] { engine::parse_llama_bench_json(row("\"samples_ns\": [1e-320]"), "run"); }).find("tokens/s (expected"),
            std::string::npos);
  EXPECT_NE(error_of([&] { engine::parse_llama_bench_json(row("\"samples_ts\": [1e300]"), "run"); }).find("tokens/s (expected"),
            std::string::npos);
  EXPECT_NE(error_of([&] { engine::parse_llama_bench_json(std::string(17 << 20, ' '), "run"); }).find("bytes of output (at most"),
            std::string::npos);
  const std::string long_name = R"([{"gpu_info": ")" + std::string(5000, 'g') + R"(", "n_prompt": 0, "n_gen": 1, "samples_ts": [1]}])";
  EXPECT_NE(error_of([&] { engine::parse_llama_bench_json(long_name, "run"); }).find("\"gpu_info\": 5000 characters"), std::string::npos);
}

TEST(BenchHostile, TerminalTextEscapesControls) {
  EXPECT_EQ(terminal_text("a\x1b[2Jb\n\tc\x7f"), "a\\x1b[2Jb\n\tc\\x7f");
  EXPECT_EQ(terminal_text("csi \xc2\x9b" "31m é"), "csi \\xc2\\x9b31m é");
}

// The whole command against the stand-in playing each hostile llama-bench: exit 2 or 4 with one line,
// fast, nothing recorded.
TEST(BenchHostile, CommandSurvivesEveryHostileStandIn) {
  const BenchDir d;
  const fs::path out = d.dir / "stdout.json";
  const auto run = [&](const test::Env& env, std::vector<std::string> more = {}) {
    more.insert(more.end(), {"--tests", "tg128", "--rounds", "1"});
    return temper(d.args(more), d.env(env));
  };
  std::ofstream(out) << "[]";
  test::CliRun r = run({{"FAKE_LLAMA_BENCH_STDOUT", out.string()}});
  EXPECT_EQ(r.code, 2) << r.output;  // was SIGSEGV
  EXPECT_NE(r.output.find("no result"), std::string::npos) << r.output;
  // A 40,000-character line on stderr: ignored, so the profile arm "printed no line" (was a stack overflow).
  r = run({{"FAKE_LLAMA_BENCH_UNPATCHED", "1"}, {"FAKE_LLAMA_BENCH_STDERR", "temper: profile " + std::string(40000, 'x')}});
  EXPECT_EQ(r.code, 2) << r.output.substr(0, 300);
  EXPECT_NE(r.output.find("printed no `temper: profile` line"), std::string::npos) << r.output.substr(0, 300);
  // An entry count past int (was "internal error: stoi"); the stock arm apart, so only the profile arm reads it.
  r = run({{"FAKE_LLAMA_BENCH_UNPATCHED", "1"},
           {"FAKE_LLAMA_BENCH_STDERR", "temper: profile /p: 99999999999999999999 entries for sm_90 (device 0); x"}},
          {"--stock-bench", FAKE_LLAMA_BENCH});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("the engine did not use the profile"), std::string::npos) << r.output;
  // A million samples for -r 5.
  r = run({{"FAKE_LLAMA_BENCH_SAMPLES", "20000"}});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("samples (at most 10000"), std::string::npos) << r.output;
  r = run({{"FAKE_LLAMA_BENCH_SAMPLES", "6"}});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("6 samples for -r 5"), std::string::npos) << r.output;
  // Output without end: stopped at the bound, not held in memory.
  auto t0 = std::chrono::steady_clock::now();
  r = run({{"FAKE_LLAMA_BENCH_FLOOD", std::to_string(1L << 30)}});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("printed more than 16 MiB and was stopped"), std::string::npos) << r.output;
  // A run past --bench-timeout is stopped.
  t0 = std::chrono::steady_clock::now();
  r = run({{"FAKE_LLAMA_BENCH_SLEEP_MS", "20000"}}, {"--bench-timeout", "1"});
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("ran longer than 1 s and was stopped"), std::string::npos) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // A child left holding stdout open after llama-bench ended: Temper does not wait for it.
  t0 = std::chrono::steady_clock::now();
  r = run({{"FAKE_LLAMA_BENCH_LINGER_MS", "60000"}});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  // Escape sequences in the GPU's name never reach the terminal.
  r = run({{"FAKE_LLAMA_BENCH_GPU", "GPU\\u001b]0;owned\\u0007\\u001b[2J"}});  // as JSON escapes them
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GPU\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << r.output;
  EXPECT_EQ(load_profile(d.profile).benches.size(), 2u);  // the two good runs recorded, none of the others
}

// A bench resumed on another GPU than its journaled runs starts again instead of refusing for ever.
TEST(BenchHostile, ResumedOnAnotherGpuStartsAgain) {
  const BenchDir d;
  engine::BenchOptions o;
  o.llama_bench = FAKE_LLAMA_BENCH;
  o.model = fixtures::path(fixtures::Fixture::MiniLlama);
  o.profile = d.profile;
  o.tests = "tg128";
  o.rounds = 2;
  o.repetitions = 2;
  engine::LlamaBenchRow row;
  row.gpu_info = "NVIDIA A100-SXM4-80GB";
  row.n_gen = 128;
  row.samples_ts = {90, 91};
  std::vector<std::string> restarts;
  engine::BenchEvents ev;
  ev.restarted = [&](const std::string& why) { restarts.push_back(why); };
  ::setenv("FAKE_LLAMA_BENCH_LOG", d.log.string().c_str(), 1);
  const engine::BenchResult r = engine::run_bench(o, ev, {{0, row, ""}});
  ::unsetenv("FAKE_LLAMA_BENCH_LOG");
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_NE(restarts[0].find("ran on NVIDIA A100-SXM4-80GB, llama-bench now runs on NVIDIA H100 80GB HBM3"), std::string::npos)
      << restarts[0];
  EXPECT_EQ(r.record.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(lines_of(d.log).size(), 5u);  // the one that told, then all 4 again
  EXPECT_NEAR(r.record.tests[0].speedup, 1.10, 0.01);
}

// ---- The statistics ----

TEST(BenchStats, BootstrapRatioOfMediansKnownAnswers) {
  // b exactly 1.1 × a, sample by sample: every replicate's ratio lies near 1.1.
  const std::vector<std::vector<double>> a = {{100, 101, 99, 100.5}, {99.5, 100.2, 100.1}};
  std::vector<std::vector<double>> b = a;
  for (auto& g : b)
    for (double& x : g) x *= 1.1;
  const RatioCi r = bootstrap_median_ratio(a, b);
  EXPECT_NEAR(r.ratio, 1.1, 1e-12);
  EXPECT_LE(r.low, 1.1);
  EXPECT_GE(r.high, 1.1);
  EXPECT_GT(r.low, 1.08);
  EXPECT_LT(r.high, 1.12);
  // Deterministic for a seed; a ratio of one side with itself is 1.
  EXPECT_EQ(bootstrap_median_ratio(a, b).low, r.low);
  EXPECT_DOUBLE_EQ(bootstrap_median_ratio(a, a).ratio, 1.0);
  // A round that disagrees widens the interval: within-run noise alone would give [1.025, 1.025]
  // here. (pp2 on the H100, by hand: two rounds +2.5 %, the third -0.4 %.)
  const std::vector<std::vector<double>> stock = {{100, 100, 100}, {100, 100, 100}, {100, 100, 100}};
  const std::vector<std::vector<double>> drifting = {{102.5, 102.5, 102.5}, {102.5, 102.5, 102.5}, {99.6, 99.6, 99.6}};
  const RatioCi d = bootstrap_median_ratio(stock, drifting);
  EXPECT_NEAR(d.ratio, 1.025, 1e-12);
  EXPECT_LT(d.low, 1.0);
  EXPECT_GE(d.high, 1.025);
  EXPECT_NE(error_of([&] { bootstrap_median_ratio({}, b); }).find("no sample on side a"), std::string::npos);
  EXPECT_NE(error_of([&] { bootstrap_median_ratio(a, {{1.0, std::nan("")}}); }).find("not finite"), std::string::npos);
}

}  // namespace
