// The sweep through the engine device (fake probe): the engine's stock config is the baseline,
// results are verified against Temper's exact reference, winners are confirmed, the session says
// kernel source "engine"; through the CLI: --probe, its errors, and resume after a kill.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "cli_run.h"
#include "temper/defaults.h"
#include "fake_probe_options.h"
#include "temper/engine_device.h"
#include "temper/profile.h"
#include "temper/sweep.h"

using namespace temper;
namespace fs = std::filesystem;

namespace {

Shape shape(GgmlType t, int n, int k) {
  return {{t, n, k}, 1, *row_bytes(t, uint64_t(k)) * uint64_t(n), {}};
}

// q4_0 128x256: the fake engine has a faster config (N a multiple of 128); q4_K 192x512: none.
SweepSetup small_setup(const engine::EngineDevice& dev) {
  SweepSetup setup;
  setup.shapes = {shape(GgmlType::Q4_0, 128, 256), shape(GgmlType::Q4_K, 192, 512)};
  setup.model = {std::string(kSyntheticShape), 0, "", ""};
  setup.grid = {{1, 2}, {1, 2, 4, 8}, {1, 2}, "ggml-d99724f", false};
  setup.options.time_cap_s = 0.02;
  setup.options.confirm_time_s = 0.05;
  setup.options.seed = 3;
  setup.kernel_source = dev.kernel_source();
  return setup;
}

Session sweep(engine::EngineDevice& dev, const SweepSetup& setup) {
  Device* devices[] = {&dev};
  Session s = new_session(setup, devices);
  CancelFlag never{false};
  run_session(s, devices, nullptr, {}, never);
  return s;
}

// The engine's launch kinds, swept as it launches them: the fused gate/up and MUL_MAT_ID over the
// experts a token uses, verified against the CPU reference of the whole launch (the GLU of both
// products; each used expert's own output), winners found and exported with their kind.
TEST(EngineSweep, FusedAndExpertLaunchesAreVerifiedAndTunedAsTheirKind) {
  engine::EngineDevice dev(test::fake_probe());
  ASSERT_TRUE(dev.runs_launch(Launch::MulMatGlu));
  SweepSetup setup = small_setup(dev);
  Shape glu = shape(GgmlType::Q4_K, 256, 512);
  glu.launch = Launch::MulMatGlu;
  Shape gate_up = shape(GgmlType::Q4_0, 128, 256);
  gate_up.launch = Launch::MulMatIdGlu;
  gate_up.experts = 16;
  gate_up.used = 4;
  Shape down = shape(GgmlType::Q8_0, 256, 128);
  down.launch = Launch::MulMatId;
  down.experts = 16;
  down.used = 4;
  setup.shapes = {glu, gate_up, down};
  const Session s = sweep(dev, setup);
  ASSERT_EQ(s.status, "complete");
  size_t ok = 0;
  for (const Result& r : s.results) {
    EXPECT_EQ(r.status, ResultStatus::Ok) << group_text(r) << ": " << r.failure;
    EXPECT_EQ(r.ncols, 1) << "fused and ids kinds run at one token only";
    ok += r.status == ResultStatus::Ok;
  }
  EXPECT_EQ(ok, s.devices.at(0).plan.items.size());  // every planned config, at ncols 1 only
  EXPECT_EQ(ok, 3u * 9);                              // the 4 x 2 grid and the stock config, per kind
  // Each kind has a verdict of its own; the fake engine's faster config wins where N is a multiple of 128.
  for (const Shape& sh : setup.shapes) {
    const Verdict* w = find_verdict(s, group_key(0, sh, 1));
    ASSERT_TRUE(w) << shape_text(sh);
    EXPECT_TRUE(w->is_winner()) << shape_text(sh) << ": " << w->verdict;
  }
  Profile p = profile_from_session(s);
  ASSERT_EQ(p.entries.size(), 3u);
  EXPECT_TRUE(validate_profile(p).empty());
  const Profile back = profile_from_json(to_json(p), "round trip");
  for (size_t i = 0; i < p.entries.size(); ++i) EXPECT_EQ(back.entries[i].key, p.entries[i].key);
  EXPECT_TRUE(std::any_of(back.entries.begin(), back.entries.end(),
                          [](const ProfileEntry& e) { return e.key.launch == Launch::MulMatIdGlu && e.key.used == 4; }));
}

// Each fused gate/up is swept beside its unfused pair (the hook's alternative), and the profile takes
// the faster of the two against the engine's fused stock: the fake engine's pair wins where N is a
// multiple of 256, loses at 384.
TEST(EngineSweep, TheUnfusedPairReplacesTheFusedEntryOnlyWhereItIsFaster) {
  engine::EngineDevice dev(test::fake_probe());
  SweepSetup setup = small_setup(dev);
  setup.shapes.clear();
  for (int n : {256, 384}) {
    Shape glu = shape(GgmlType::Q4_K, n, 512);
    glu.launch = Launch::MulMatGlu;
    glu.calls_per_token = 32;
    Shape pair = glu;
    pair.launch = Launch::MulMatGluUnfused;
    pair.calls_per_token = 0;
    setup.shapes.push_back(glu);
    setup.shapes.push_back(pair);
  }
  const Session s = sweep(dev, setup);
  ASSERT_EQ(s.status, "complete");
  for (const Result& r : s.results) EXPECT_EQ(r.status, ResultStatus::Ok) << group_text(r) << ": " << r.failure;
  const Profile p = profile_from_session(s);
  auto entry = [&](int n) -> const ProfileEntry* {
    for (const auto& e : p.entries)
      if (e.key.n == n) return &e;
    return nullptr;
  };
  ASSERT_TRUE(entry(256) && entry(384));
  EXPECT_EQ(entry(256)->key.launch, Launch::MulMatGluUnfused);
  EXPECT_EQ(entry(384)->key.launch, Launch::MulMatGlu);
  // The pair's entry is measured against what the engine runs without it: the fused stock.
  const Verdict* fused = find_verdict(s, group_key(0, with_launch(entry(256)->key, Launch::MulMatGlu), 1));
  ASSERT_TRUE(fused);
  EXPECT_EQ(entry(256)->default_config, fused->default_config);
  EXPECT_DOUBLE_EQ(entry(256)->provenance->default_us, fused->default_us);
  EXPECT_EQ(entry(256)->provenance->calls_per_token, 32);
  EXPECT_TRUE(validate_profile(p).empty());
  // The session's estimate counts the pair's time for the fused launches of N = 256.
  for (const auto& es : s.estimates.at(0).shapes)
    if (es.launch == Launch::MulMatGlu) EXPECT_EQ(es.tuned_unfused, es.n == 256) << shape_text(es);
}

// A probe of protocol 2 runs plain launches only: the other kinds are skipped with the reason.
TEST(EngineSweep, AnOlderProbeSkipsTheKindsItCannotLaunch) {
  setenv("FAKE_PROBE_PROTOCOL", "2", 1);
  engine::EngineDevice dev(test::fake_probe());
  unsetenv("FAKE_PROBE_PROTOCOL");
  EXPECT_FALSE(dev.runs_launch(Launch::MulMatGlu));
  SweepSetup setup = small_setup(dev);
  Shape glu = shape(GgmlType::Q4_K, 256, 512);
  glu.launch = Launch::MulMatGlu;
  setup.shapes.push_back(glu);
  const Session s = sweep(dev, setup);
  const auto& skipped = s.devices.at(0).plan.skipped_shapes;
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].launch, Launch::MulMatGlu);
  EXPECT_NE(skipped[0].reason.find("plain GEMVs only"), std::string::npos) << skipped[0].reason;
}

TEST(EngineSweep, StockBaselineVerifiedWinnersConfirmed) {
  engine::EngineDevice dev(test::fake_probe());
  const Session s = sweep(dev, small_setup(dev));
  ASSERT_EQ(s.status, "complete");
  EXPECT_TRUE(s.kernel_source.is_engine());
  EXPECT_EQ(s.kernel_source.hook_version, "fake-1");
  EXPECT_EQ(s.devices.at(0).info.api, "engine-cuda");
  for (const Result& r : s.results) EXPECT_EQ(r.status, ResultStatus::Ok) << r.failure;
  // The baseline is what the engine launches (the probe's StockConfig).
  for (const PlanItem& it : s.devices[0].plan.items) {
    if (!it.is_default) continue;
    EXPECT_EQ(it.config, *dev.stock_config(it.type, it.ncols, it.k));
  }
  ASSERT_EQ(s.verdicts.size(), 4u);
  for (const Verdict& w : s.verdicts) {
    const Config stock = *dev.stock_config(w.type, w.ncols, w.k);
    EXPECT_EQ(w.default_config, stock);
    if (w.n == 128) {
      const Config fast{stock.nwarps >= 8 ? stock.nwarps / 2 : stock.nwarps * 2, stock.rows_per_block == 1 ? 2 : 1};
      EXPECT_TRUE(w.is_winner()) << w.verdict << " " << w.note;
      EXPECT_TRUE(w.confirmed);
      EXPECT_EQ(w.config, fast);
      EXPECT_NEAR(w.speedup, 1 / 0.9, 0.05);
    } else {
      EXPECT_EQ(w.verdict, kVerdictDefaultStays);
    }
  }
  EXPECT_EQ(s.confirmations.size(), 2u);
  EXPECT_TRUE(s.devices[0].plan.notes.empty());  // the fake engine follows d99724f's table
  // The kernel source survives a save and a load.
  const fs::path file = fs::temp_directory_path() / ("temper-engine-sweep-" + std::to_string(::getpid()) + ".json");
  save_session(s, file);
  const Session back = load_session(file);
  EXPECT_EQ(back.kernel_source, s.kernel_source);
  fs::remove(file);
  // Profiles made from it say which kernel their numbers come from, through a JSON round trip.
  const Profile p = profile_from_json(to_json(profile_from_session(s)), "profile");
  ASSERT_EQ(p.entries.size(), 2u);
  for (const ProfileEntry& e : p.entries) EXPECT_EQ(e.provenance->kernel, "engine ggml unknown hook fake-1");
  nlohmann::json old = to_json(p);
  old["entries"][0]["provenance"].erase("kernel");  // profiles from before the engine bridge
  EXPECT_EQ(profile_from_json(old, "old").entries[0].provenance->kernel, "temper");
}

TEST(EngineSweep, EngineStockDifferentFromTheTableIsNoted) {
  ::setenv("FAKE_PROBE_STOCK", "2x1", 1);
  engine::EngineDevice dev(test::fake_probe());
  ::unsetenv("FAKE_PROBE_STOCK");
  SweepSetup setup = small_setup(dev);
  setup.shapes.resize(1);
  setup.grid.ncols = {1};
  Device* devices[] = {&dev};
  const Session s = new_session(setup, devices);
  const Plan& plan = s.devices[0].plan;
  ASSERT_EQ(plan.notes.size(), 1u);
  const Config table = defaults::default_config("ggml-d99724f", "sm_90", GgmlType::Q4_0, 1, 256);
  EXPECT_EQ(plan.notes[0], "q4_0 128x256 ncols 1: the engine launches 2x1, Temper's ggml-d99724f table says " +
                               std::to_string(table.nwarps) + "x" + std::to_string(table.rows_per_block));
  ASSERT_FALSE(plan.items.empty());
  EXPECT_TRUE(plan.items[0].is_default);
  EXPECT_EQ(plan.items[0].config, (Config{2, 1}));
  // Notes are part of the session file.
  const Session back = session_from_json(to_json(s), "mem");
  EXPECT_EQ(back.devices[0].plan.notes, plan.notes);
}

TEST(EngineSweep, SessionsWithoutKernelSourceAreTemperKernel) {
  SweepSetup setup;
  setup.shapes = {shape(GgmlType::Q4_0, 64, 256)};
  setup.model = {std::string(kSyntheticShape), 0, "", ""};
  setup.grid = quick_grid("ggml-7180759");
  Session s;
  s.grid = setup.grid;
  nlohmann::json j = to_json(s);
  EXPECT_EQ(j["kernel_source"]["kind"], "temper");
  j.erase("kernel_source");  // as sessions before the engine bridge were written
  const Session old = session_from_json(j, "old.json");
  EXPECT_FALSE(old.kernel_source.is_engine());
  EXPECT_EQ(old.kernel_source.engine, "ggml-7180759");
  j["kernel_source"] = {{"kind", "llama"}};
  try {
    session_from_json(j, "bad.json");
    ADD_FAILURE() << "kind llama accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "bad.json.kernel_source.kind: expected \"temper\" or \"engine\", found \"llama\"");
  }
}

using test::CliRun;
CliRun temper(const std::vector<std::string>& args, const test::Env& env = {}) { return test::run_temper(args, env); }

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("temper-engine-" + std::to_string(::getpid()) + "-" + name);
}

const std::vector<std::string> kSweep = {"sweep", "--probe", FAKE_PROBE, "--shape", "q4_0:128:256,q4_K:192:512",
                                         "--ncols", "1,2", "--nwarps", "1,2,4,8", "--rows-per-block", "1,2",
                                         "--seed", "5", "--time-cap", "0.02", "--engine", "ggml-d99724f"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(EngineSweepCli, ProbeSweepWritesAnEngineSession) {
  const fs::path out = temp_file("cli.json");
  const CliRun r = temper(with(kSweep, {"-o", out.string()}));
  ASSERT_EQ(r.code, 0) << r.output;
  const Session s = load_session(out);
  EXPECT_EQ(s.status, "complete");
  EXPECT_TRUE(s.kernel_source.is_engine());
  EXPECT_EQ(s.kernel_source.probe_path, fs::absolute(FAKE_PROBE).lexically_normal().string());
  int winners = 0;
  for (const Verdict& w : s.verdicts) winners += w.is_winner() && w.confirmed;
  EXPECT_EQ(winners, 2);
  const CliRun shown = temper({"session", out.string()});
  EXPECT_EQ(shown.code, 0) << shown.output;
  EXPECT_NE(shown.output.find("kernel: engine: "), std::string::npos) << shown.output;
  fs::remove(out);
}

TEST(EngineSweepCli, EngineAndTemperKernelSessionsCompare) {
  const fs::path engine = temp_file("cmp-engine.json"), temper_kernel = temp_file("cmp-temper.json");
  ASSERT_EQ(temper(with(kSweep, {"-o", engine.string()})).code, 0);
  std::vector<std::string> fake_args = kSweep;
  fake_args[1] = "--backend", fake_args[2] = "fake";
  const CliRun t = temper(with(fake_args, {"-o", temper_kernel.string()}));
  ASSERT_EQ(t.code, 0) << t.output;
  const CliRun r = temper({"session", engine.string(), "--compare", temper_kernel.string()});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("kernels differ: the first timed engine ggml unknown hook fake-1, the second temper"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("winners: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("winners: 0 of 0"), std::string::npos) << r.output;  // the same shapes, compared
  fs::remove(engine);
  fs::remove(temper_kernel);
}

TEST(EngineSweepCli, ProbeErrorsAreOneLineWithTheirExitCode) {
  CliRun r = temper({"sweep", "--probe", "/nonexistent/temper-probe", "--shape", "q4_0:128:256"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("temper-probe /nonexistent/temper-probe: no such file"), std::string::npos) << r.output;
  r = temper({"sweep", "--probe", FAKE_PROBE, "--backend", "fake", "--shape", "q4_0:128:256"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--backend cannot be combined with --probe"), std::string::npos) << r.output;
  // A probe that crashes during timing: the device stops, the session says why, exit 4.
  const fs::path out = temp_file("crash.json");
  r = temper(with(kSweep, {"-o", out.string()}), {{"FAKE_PROBE_CRASH_ON", "Time:5"}});
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("killed by signal 6"), std::string::npos) << r.output;
  const Session s = load_session(out);
  EXPECT_EQ(s.status, "failed");
  EXPECT_NE(s.devices[0].error.find("fake probe: crashing"), std::string::npos) << s.devices[0].error;
  fs::remove(out);
  std::error_code ec;
  fs::remove(out.string() + ".journal", ec);
}

TEST(EngineSweepCli, ResumeAfterKillFinishesTheEngineSweep) {
  const fs::path out = temp_file("resume.json"), journal = out.string() + ".journal";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("FAKE_PROBE_SLEEP_US", "3000", 1);
    FILE* null = std::fopen("/dev/null", "w");
    if (null) ::dup2(::fileno(null), 1), ::dup2(::fileno(null), 2);
    std::vector<std::string> args = with(kSweep, {"-o", out.string()});
    std::vector<char*> argv{const_cast<char*>(TEMPER_EXE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(TEMPER_EXE, argv.data());
    ::_exit(127);
  }
  // Kill it once a few results are journaled (the header is the first line).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto lines = [&] {
    std::ifstream in(journal);
    int n = 0;
    for (std::string l; std::getline(in, l);) ++n;
    return n;
  };
  while (lines() < 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep ended before it was killed";
  const JournalContents before = read_journal(journal);
  EXPECT_TRUE(before.header.kernel_source.is_engine());
  const CliRun r = temper({"sweep", "--resume", journal.string()});
  ASSERT_EQ(r.code, 0) << r.output;
  const Session s = load_session(out);
  EXPECT_EQ(s.status, "complete");
  EXPECT_TRUE(s.kernel_source.is_engine());
  size_t planned = s.devices[0].plan.items.size();
  EXPECT_EQ(s.results.size(), planned);
  EXPECT_GE(s.results.size(), before.results.size());
  fs::remove(out);
}

// `temper bench-gemv --probe P --kernel-only --csv F`: upstream's kernel-only times in the format
// bench/fidelity.sh compares (one row per config timed; the fake's known answers).
TEST(EngineBenchCli, KernelOnlyCsvHasEveryConfigWithTheFakesTimes) {
  const fs::path csv = temp_file("kernel.csv");
  const CliRun r = temper({"bench-gemv", "--probe", FAKE_PROBE, "--kernel-only", "--types", "q4_0,q6_K", "--n", "64",
                           "--k", "256", "--count", "3", "--warmup", "1", "--back-to-back", "1", "--engine",
                           "ggml-d99724f", "--csv", csv.string()});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("kernel: the engine's mul_mat_vec_q alone"), std::string::npos) << r.output;
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "type,n,k,ncols,nwarps,rows_per_block,us");
  std::map<std::string, int> per_type;
  std::map<std::string, double> stock_us;
  for (; std::getline(in, line);) {
    char type[16];
    int n = 0, k = 0, ncols = 0, w = 0, rows = 0;
    double us = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%15[^,],%d,%d,%d,%d,%d,%lf", type, &n, &k, &ncols, &w, &rows, &us), 7) << line;
    EXPECT_EQ(n, 64);
    EXPECT_EQ(k, 256);
    EXPECT_EQ(ncols, 1);
    ++per_type[type];
    const GgmlType t = std::string(type) == "q4_0" ? GgmlType::Q4_0 : GgmlType::Q6_K;
    if (defaults::default_config("ggml-d99724f", "sm_90", t, 1, 256, 32) == Config{w, rows}) stock_us[type] = us;
  }
  // ncols 1: the 27 configs of the grid that launch there (6 nwarps × 5 rows less (16, 16), (32, 8)
  // and (32, 16), over 48 KiB of shared memory), each timed; the stock one at (bytes at 1000 GB/s), exactly.
  EXPECT_EQ(per_type["q4_0"], 27);
  EXPECT_EQ(per_type["q6_K"], 27);
  EXPECT_NEAR(stock_us["q4_0"], gemv_bytes(GgmlType::Q4_0, 64, 256, 1) / 1e6, 1e-4);
  EXPECT_NEAR(stock_us["q6_K"], gemv_bytes(GgmlType::Q6_K, 64, 256, 1) / 1e6, 1e-4);
  fs::remove(csv);
}

TEST(EngineBenchCli, KernelOnlyOnAProtocolOneProbeSaysRebuild) {
  const CliRun r = temper({"bench-gemv", "--probe", FAKE_PROBE, "--kernel-only", "--types", "q4_0", "--n", "64", "--k", "256"},
                          {{"FAKE_PROBE_PROTOCOL", "1"}});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("which has no kernel-only timing (protocol 2); rebuild it with `temper engine build`"),
            std::string::npos)
      << r.output;
}

}  // namespace
