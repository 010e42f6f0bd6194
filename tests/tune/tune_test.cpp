// `temper tune` (issue 28) in CI: the fake temper-probe stands in for the engine build (--probe, so
// check, patch and build are "not asked") and the stand-in llama-bench for the user's; the sweep,
// approval, install, replay and bench are the real steps. Each step's skip rule, the resume after a
// kill -9 in the middle of the sweep (nothing journaled is measured again), an updated engine that
// re-sweeps, and the install rule that keeps other models' entries.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "engine/cli_run.h"
#include "engine/probe_protocol.h"
#include "fixtures/fixtures.h"
#include "support/upstream_tree.h"
#include "temper/engine.h"
#include "temper/engine_build.h"
#include "temper/fileio.h"
#include "temper/gguf.h"
#include "temper/groups.h"
#include "temper/plan.h"
#include "temper/sweep.h"
#include "temper/token.h"
#include "temper/tune.h"

using namespace temper;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct TuneDir {
  fs::path dir = fs::temp_directory_path() / ("temper-tune-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path model;
  fs::path profile = dir / "config" / "temper" / "engine-profile.json";  // the engine's default location
  fs::path bench_log = dir / "llama-bench.log", gemv_log = dir / "gemv.log";
  fs::path probe = FAKE_PROBE;
  explicit TuneDir(const fixtures::Options& fixture = {}, fixtures::Fixture which = fixtures::Fixture::SmallLlama)
      : model(dir / (which == fixtures::Fixture::SmallLlama ? "small-llama.gguf" : "model.gguf")) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fixtures::writer(which, fixture).write(model);
  }
  ~TuneDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // The command with small settings; `over` replaces options' values.
  std::vector<std::string> args(const std::map<std::string, std::string>& over = {}) const {
    std::map<std::string, std::string> o = {{"--probe", probe.string()}, {"--ncols", "1,2"}, {"--llama-bench", FAKE_LLAMA_BENCH},
                                            {"--tests", "tg128,pp2"}, {"--rounds", "2"}, {"--repetitions", "3"},
                                            {"--replay-tokens", "4"}, {"--replay-rounds", "2"}};
    for (const auto& [k, v] : over) o[k] = v;
    std::vector<std::string> a = {"tune", model.string(), "--json"};
    for (const auto& [k, v] : o) a.insert(a.end(), {k, v});
    return a;
  }
  test::Env env(test::Env more = {}) const {
    more.insert(more.end(), {{"XDG_CACHE_HOME", (dir / "cache").string()}, {"XDG_CONFIG_HOME", (dir / "config").string()},
                             {"FAKE_LLAMA_BENCH_LOG", bench_log.string()}, {"FAKE_PROBE_GEMV_LOG", gemv_log.string()}});
    return more;
  }
  json run(const std::map<std::string, std::string>& over = {}, test::Env env_more = {}) const {
    const test::CliRun r = test::run_temper(args(over), env(std::move(env_more)), true);
    EXPECT_EQ(r.code, 0) << r.output << r.out;
    return r.code == 0 ? json::parse(r.out) : json();
  }
  fs::path state() const {
    tune::TuneOptions o;
    o.model = model;
    o.probe = probe;
    ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
    const fs::path s = tune::state_dir(o);
    ::unsetenv("XDG_CACHE_HOME");
    return s;
  }
};

std::map<std::string, std::string> outcomes(const json& j) {
  std::map<std::string, std::string> m;
  for (const auto& s : j["steps"]) m[s["step"]] = s["outcome"];
  return m;
}

size_t line_count(const fs::path& p) {
  std::ifstream in(p);
  size_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

TEST(Tune, WholeJobThenARerunOnlyRebenches) {
  const TuneDir d;
  const json first = d.run();
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(outcomes(first), (std::map<std::string, std::string>{{"check", "not asked"}, {"patch", "not asked"},
                                                                  {"build", "not asked"}, {"sweep", "done"},
                                                                  {"approve", "done"}, {"install", "done"},
                                                                  {"crossover", "done"}, {"groups", "done"},
                                                                  {"pipeline", "done"}, {"replay", "done"}, {"token", "not asked"},
                                                                  {"bench", "done"}}));
  // Installed where the engine looks, with approved winners, the replay's and the bench's numbers.
  EXPECT_EQ(first["profile"], d.profile.string());
  const Profile p = load_profile(d.profile);
  int approved = 0;
  for (const auto& e : p.entries) approved += e.approval == Approval::Approved;
  EXPECT_GT(approved, 0);
  EXPECT_TRUE(validate_profile(p).empty());
  EXPECT_GT(first["replay"]["speedup"].get<double>(), 1.0);
  EXPECT_GT(first["replay"]["profiled"]["tuned_launches"].get<int>(), 0);
  ASSERT_EQ(p.benches.size(), 1u);

  EXPECT_EQ(current_bench(p, "sm_90"), &p.benches[0]);
  EXPECT_EQ(line_count(d.bench_log), 12u);  // the pipeline step's 2 rounds × tg128 × 2 arms, the bench's 2 rounds × 2 tests × 2 arms
  const size_t measured = line_count(d.gemv_log);
  EXPECT_GT(measured, 100u);
  const Session session = read_session(first["session"].get<std::string>());
  EXPECT_EQ(session.status, "complete");
  // The pipeline step (the fake probe runs a pipelined launch in 0.95 of its time, same outputs; the
  // stand-in llama-bench runs 8 % faster with pipelined entries): llama-bench's tg test decides, and
  // every one-column launch shape of the plan gets an approved pipelined entry, at the config the
  // profile already runs it at (else the default).
  ASSERT_TRUE(first["pipeline"].is_object()) << first.dump();
  EXPECT_TRUE(first["pipeline"]["approved"].get<bool>()) << first["pipeline"]["why"];
  EXPECT_EQ(first["pipeline"]["test"], "tg128");
  EXPECT_NEAR(first["pipeline"]["speedup"].get<double>(), 1.08, 0.01);
  EXPECT_GT(first["pipeline"]["replay_speedup"].get<double>(), 1.0);
  EXPECT_TRUE(first["pipeline"]["identical"].get<bool>());
  EXPECT_GT(first["pipeline"]["pipelined_launches"].get<int>(), 0);
  const LaunchPlan plan = plan_launches(GgufFile::open(d.model));
  std::set<ShapeKey> one_column;  // bar a fused gate/up the profile runs as the hook's unfused pair
  for (const PlannedLaunch& l : plan.launches) {
    const ProfileEntry* applied = applied_launch(p, "sm_90", ProfileDevice{"Temper fake probe (CPU reference, synthetic times)", 16, 1024}, l.shape(), 1);
    if (!applied || !launch_is_unfused(applied->key.launch)) one_column.insert(l.shape());
  }
  int pipelined = 0;
  for (const auto& e : p.entries) {
    if (!launch_is_pipelined(e.key.launch)) continue;
    ++pipelined;
    EXPECT_EQ(e.approval, Approval::Approved) << key_text(e.key);
    EXPECT_EQ(one_column.count(with_launch(e.key.shape(), unpipelined_kind(e.key.launch))), 1u) << key_text(e.key);
    const ProfileEntry* plain = applied_launch(p, "sm_90", e.key.device, with_launch(e.key.shape(), unpipelined_kind(e.key.launch)), 1);
    EXPECT_EQ(e.config, plain ? plain->config : e.default_config) << key_text(e.key);
  }
  EXPECT_EQ(pipelined, int(one_column.size()));
  EXPECT_NEAR(p.benches[0].tests[0].speedup, 1.10 * 1.08, 0.015);  // the bench step: stock against the profile, pipelined

  // Same tree, same model: every step's input is unchanged; only the bench runs again.
  const json second = d.run();
  EXPECT_EQ(outcomes(second), (std::map<std::string, std::string>{{"check", "not asked"}, {"patch", "not asked"},
                                                                   {"build", "not asked"}, {"sweep", "skipped"},
                                                                   {"approve", "skipped"}, {"install", "skipped"},
                                                                   {"crossover", "skipped"}, {"groups", "skipped"},
                                                                   {"pipeline", "skipped"}, {"replay", "skipped"},
                                                                   {"token", "not asked"}, {"bench", "done"}}));
  EXPECT_EQ(line_count(d.gemv_log), measured);  // nothing measured again
  EXPECT_EQ(line_count(d.bench_log), 20u);  // the bench again; the pipeline step skipped
  EXPECT_EQ(second["replay"], first["replay"]);  // the journaled numbers
  EXPECT_EQ(second["crossover"], first["crossover"]);
  const Profile again = load_profile(d.profile);
  EXPECT_EQ(again.entries.size(), p.entries.size());
  ASSERT_EQ(again.benches.size(), 1u);  // the new record replaced the old one (same device and model)
  EXPECT_NE(again.benches[0].date, "");
}

// An updated engine (another probe binary; with --engine-src, a changed tree hashes to a new build)
// sweeps again, and the later steps follow from the new session.
TEST(Tune, AnUpdatedEngineSweepsAgain) {
  TuneDir d;
  d.probe = d.dir / "temper-probe";
  fs::copy_file(FAKE_PROBE, d.probe);
  EXPECT_EQ(outcomes(d.run({{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"}}))["sweep"], "done");
  const size_t measured = line_count(d.gemv_log);
  std::ofstream(d.probe, std::ios::app) << "an updated engine";  // trailing bytes: another binary, the same program
  const json again = d.run({{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"}});
  EXPECT_EQ(outcomes(again)["sweep"], "done") << again.dump(1);
  EXPECT_EQ(outcomes(again)["approve"], "done");
  EXPECT_EQ(line_count(d.gemv_log), 2 * measured);  // every result measured again
}

// kill -9 in the middle of the sweep; the same command again finishes it without re-measuring any
// result the sweep journal held, and goes on through the later steps.
TEST(Tune, KilledDuringTheSweepResumesWithoutMeasuringAgain) {
  const TuneDir d;
  const fs::path out = d.dir / "first.txt";
  const pid_t pid = test::spawn_temper(d.args(), d.env({{"FAKE_PROBE_SLEEP_US", "2000"}}), out, out);
  const fs::path journal = d.state() / "sweep.journal";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line_count(journal) < 12 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  ASSERT_EQ(test::wait_code(pid), -SIGKILL) << test::slurp(out);
  const JournalContents before = read_journal(journal);
  ASSERT_GE(before.results.size(), 10u);
  EXPECT_FALSE(fs::exists(d.profile));  // killed before the install step

  // What the first run measured, and what the second will.
  fs::rename(d.gemv_log, d.dir / "gemv-first.log");
  const test::CliRun r = test::run_temper(d.args(), d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("note: resuming the sweep: " + std::to_string(before.results.size()) +
                          " results journaled before are kept, not measured again"),
            std::string::npos) << r.output;
  const json j = json::parse(r.out);
  EXPECT_EQ(outcomes(j)["sweep"], "resumed");
  EXPECT_EQ(outcomes(j)["bench"], "done");
  // No result journaled before the kill was verified (measured) again: the probe saw no Gemv of it.
  std::set<std::tuple<int, int, int, int, int, int, int>> again;
  {
    std::ifstream in(d.gemv_log);
    for (int l, t, n, k, c, w, rows; in >> l >> t >> n >> k >> c >> w >> rows;) again.insert({l, t, n, k, c, w, rows});
  }
  for (const Result& res : before.results) {
    const Config sent = res.is_default ? Config{0, 0} : res.config;  // the stock launch travels as nwarps 0
    EXPECT_FALSE(again.count({int(res.launch), int(res.type), res.n, res.k, res.ncols, sent.nwarps, sent.rows_per_block}))
        << "measured again: " << shape_text(res) << " ncols " << res.ncols << " " << config_text(res.config);
  }
  // The session holds every planned result once, the journaled ones as they were measured, and the
  // configs the plan excluded as invalid results (at ncols 1 and 2: (16, 16), (32, 8), (32, 16)).
  const Session s = read_session(j["session"].get<std::string>());
  EXPECT_EQ(s.status, "complete");
  EXPECT_GT(s.devices[0].plan.excluded.size(), 0u);
  EXPECT_EQ(s.results.size(), s.devices[0].plan.items.size() + s.devices[0].plan.excluded.size());
  for (const Result& res : before.results) {
    const Result* kept = find_result(s, res.group(), res.config);
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(kept->time_us.median, res.time_us.median);
  }
  EXPECT_FALSE(fs::exists(journal));  // folded into the session
  // A sweep finished by resuming is as complete as any: the next run skips it.
  EXPECT_EQ(outcomes(d.run())["sweep"], "skipped");
}

size_t bench_runs_journaled(const fs::path& journal) {
  std::ifstream in(journal);
  size_t n = 0;
  for (std::string l; std::getline(in, l);) n += l.rfind("{\"bench_run\"", 0) == 0;
  return n;
}

// kill -9 in the middle of the bench: the llama-bench run in flight dies with tune, and the same
// command keeps the runs the journal holds and makes only the others.
TEST(Tune, KilledDuringTheBenchKeepsItsJournaledRuns) {
  const TuneDir d;
  const fs::path out = d.dir / "first.txt", journal = d.state() / "tune.journal";
  const pid_t pid = test::spawn_temper(d.args({{"--ncols", "1"}}), d.env({{"FAKE_LLAMA_BENCH_SLEEP_MS", "1000"}}), out, out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Three runs journaled and the next one started (the stand-in logs itself as it starts; the pipeline
  // step's 2 rounds × 2 arms come first).
  while ((bench_runs_journaled(journal) < 3 || line_count(d.bench_log) <= 4 + bench_runs_journaled(journal)) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGKILL);
  ASSERT_EQ(test::wait_code(pid), -SIGKILL) << test::slurp(out);
  const size_t journaled = bench_runs_journaled(journal), invoked = line_count(d.bench_log);
  ASSERT_GE(journaled, 3u);
  // The stand-in started last (its pid ends its log line) does not outlive tune.
  std::string last;
  std::ifstream log(d.bench_log);
  for (std::string l; std::getline(log, l);) last = l;
  const pid_t child = std::atoi(last.substr(last.rfind("pid=") + 4).c_str());
  // Gone, or dead and waiting to be reaped by whatever adopted it (state Z).
  auto dead = [&] {
    if (::kill(child, 0) != 0) return true;
    const std::string stat = test::slurp("/proc/" + std::to_string(child) + "/stat");
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'Z';
  };
  bool gone = false;
  for (int i = 0; i < 30 && !gone; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(10))) gone = dead();
  EXPECT_TRUE(gone) << "llama-bench " << child << " outlived the tune that started it";

  const test::CliRun r = test::run_temper(d.args({{"--ncols", "1"}}), d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("note: resuming the bench: " + std::to_string(journaled) + " llama-bench runs journaled before are kept"),
            std::string::npos) << r.output;
  EXPECT_EQ(outcomes(json::parse(r.out))["bench"], "resumed");
  EXPECT_EQ(line_count(d.bench_log) - invoked, 8 - journaled);  // 2 rounds × 2 tests × 2 arms in all
  const Profile p = load_profile(d.profile);
  ASSERT_EQ(p.benches.size(), 1u);
  for (const BenchTest& t : p.benches[0].tests)
    for (const auto* runs : {&t.stock_runs, &t.profiled_runs})
      for (const auto& run : *runs) EXPECT_EQ(run.size(), 3u) << t.name;
}

// Ctrl-C in the middle of the sweep: exit 7, the journal kept; the same command goes on.
TEST(Tune, InterruptedSweepSaysHowToGoOn) {
  const TuneDir d;
  const fs::path out = d.dir / "first.txt";
  const pid_t pid = test::spawn_temper(d.args({{"--ncols", "1"}}), d.env({{"FAKE_PROBE_SLEEP_US", "2000"}}), out, out);
  const fs::path journal = d.state() / "sweep.journal";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line_count(journal) < 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::kill(pid, SIGINT);
  EXPECT_EQ(test::wait_code(pid), 7);
  EXPECT_NE(test::slurp(out).find("tune cancelled during the sweep; what was measured is journaled"), std::string::npos)
      << test::slurp(out);
  EXPECT_TRUE(fs::exists(journal));
  EXPECT_EQ(outcomes(d.run({{"--ncols", "1"}}))["sweep"], "resumed");
}

// A profile whose tuned launches change the engine's results (the fake's FAKE_PROBE_WRONG: a
// config that writes a wrong row) is never left installed: the replay compares every launch's
// output, and tune puts back what the file held (or removes it) and ends with exit 5.
TEST(Tune, ReplayThatFindsWrongResultsUndoesTheInstall) {
  const TuneDir d;
  fs::create_directories(d.profile.parent_path());
  fs::copy_file(TEMPER_SOURCE_DIR "/tests/profile/fixtures/profile.json", d.profile);
  const std::string before = test::slurp(d.profile);
  test::CliRun r = test::run_temper(d.args({{"--ncols", "1"}}), d.env({{"FAKE_PROBE_WRONG", "8x1"}}));
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find("launches whose output differs with the profile"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the previous profile is back in " + d.profile.string()), std::string::npos) << r.output;
  EXPECT_EQ(test::slurp(d.profile), before);
  EXPECT_FALSE(fs::exists(d.bench_log));  // no bench of a wrong profile
  fs::remove(d.profile);
  r = test::run_temper(d.args({{"--ncols", "1"}}), d.env({{"FAKE_PROBE_WRONG", "8x1"}}));
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find(d.profile.string() + " is removed"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d.profile));
}

// On a real llama.cpp tree ($TEMPER_UPSTREAM/llama.cpp, a private copy of its ggml/; skipped without
// it): check names the tree, --patch patches it, and the engine build — which needs CUDA, here made
// unreachable — fails with its one line (exit 6), leaving the tree patched as asked and restorable
// byte for byte. A second run finds it patched already.
TEST(Tune, ChecksAndPatchesAnUpstreamTreeBeforeTheBuild) {
  const test::UpstreamCopy tree("llama.cpp", {"ggml"});
  if (tree.root().empty()) GTEST_SKIP() << "SKIPPED: " << tree.why();
  const TuneDir d;
  const fs::path mmvq = tree.root() / "ggml" / "src" / "ggml-cuda" / "mmvq.cu";
  const std::string stock = test::slurp(mmvq);
  const std::vector<std::string> args = {"tune", d.model.string(), "--engine-src", tree.root().string(), "--patch",
                                         "--arch", "sm_90", "--kernel-set", "ci"};
  const test::Env no_cuda = d.env({{"CUDACXX", "/nonexistent/nvcc"}, {"PATH", "/usr/bin:/bin"}});
  test::CliRun r = test::run_temper(args, no_cuda);
  EXPECT_EQ(r.code, 6) << r.output;
  EXPECT_NE(r.output.find("tune [1/12] check: the engine tree"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("done in"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("llama.cpp tree at " + tree.root().string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("patched " + mmvq.string() + " (hook v"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("temper tune: engine configure failed"), std::string::npos) << r.output;
  EXPECT_EQ(test::slurp(mmvq).rfind("// temper-hook v", 0), 0u);
  r = test::run_temper(args, no_cuda);
  EXPECT_EQ(r.code, 6) << r.output;
  EXPECT_NE(r.output.find("skipped in"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("already patched (hook v"), std::string::npos) << r.output;
  r = test::run_temper({"engine", "patch", tree.root().string(), "--undo"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(test::slurp(mmvq), stock);
}

// A tree an older hook (v3) patched: tune says so without --patch, and with --patch upgrades it
// (restored byte for byte, then this hook), before the build. Temper's own stand-in mmvq.cu.
TEST(Tune, UpgradesATreeAnOlderHookPatched) {
  const TuneDir d;
  const fs::path tree = d.dir / "ggml", cuda = tree / "src" / "ggml-cuda";
  fs::create_directories(cuda / ".temper-hook");
  const std::string original = read_file(fs::path(TEMPER_SOURCE_DIR) / "tests/engine/fixtures/mmvq-paths.cu");
  const engine::Patch v3 = engine::make_patch(original, engine::kernel_set("ci"), 3);
  write_file_atomic(cuda / ".temper-hook/mmvq.cu.orig", original);
  std::string manifest = "set=ci\n";  // an unhashed manifest: undo regenerates v3 to check the files
  for (const auto& [name, content] : v3.files) {
    write_file_atomic(cuda / name, content);
    manifest += name + "\n";
  }
  write_file_atomic(cuda / ".temper-hook/manifest.txt", manifest);
  write_file_atomic(cuda / "mmvq.cu", v3.mmvq);
  const test::Env no_cuda = d.env({{"CUDACXX", "/nonexistent/nvcc"}, {"PATH", "/usr/bin:/bin"}});
  std::vector<std::string> args = {"tune", d.model.string(), "--engine-src", tree.string(), "--arch", "sm_90", "--kernel-set", "ci"};
  test::CliRun r = test::run_temper(args, no_cuda);
  EXPECT_EQ(r.code, 6) << r.output;  // the build needs nvcc
  EXPECT_NE(r.output.find("carries hook v3, older than this Temper's v" + std::to_string(engine::kHookVersion)), std::string::npos) << r.output;
  EXPECT_EQ(read_file(cuda / "mmvq.cu"), v3.mmvq);
  args.push_back("--patch");
  r = test::run_temper(args, no_cuda);
  EXPECT_EQ(r.code, 6) << r.output;
  EXPECT_NE(r.output.find("patched (upgraded from hook v3)"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(cuda / "mmvq.cu").rfind("// temper-hook v" + std::to_string(engine::kHookVersion), 0), 0u);
  EXPECT_EQ(engine::check(tree).patched_version, engine::kHookVersion);
  engine::undo(tree);
  EXPECT_EQ(read_file(cuda / "mmvq.cu"), original);
}

TEST(Tune, BadOptionsAreOneLine) {
  const TuneDir d;
  test::CliRun r = test::run_temper({"tune", d.model.string()}, d.env());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("expected --engine-src DIR (a ggml / llama.cpp tree) or --probe PATH"), std::string::npos) << r.output;
  r = test::run_temper({"tune", d.model.string(), "--engine-src", d.dir.string(), "--arch", "sm_90"}, d.env());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find(d.dir.string()), std::string::npos) << r.output;  // no ggml tree there
  r = test::run_temper({"tune", d.model.string(), "--probe", FAKE_PROBE, "--patch"}, d.env());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--patch needs --engine-src DIR"), std::string::npos) << r.output;
  // A missing llama-bench is refused before the sweep, not after it.
  r = test::run_temper(d.args({{"--llama-bench", "/nonexistent/llama-bench"}}), d.env());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("llama-bench /nonexistent/llama-bench: no such file"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d.gemv_log));
}

// The crossover against the fake engine (needs its protocol 4: Replay at a batch width with forced
// paths). Its cost model: mmvq costs T (1 + 0.4 (N - 1)) for the k-quants, mmq 2 T, so mmq wins
// for them from N = 4 on and mmvq stays at N = 2. On SmallLlama in k-quants every (type, launch,
// width) of the token is measured, mmq approved at 8 and not at 2, the records installed with their
// evidence as the report's cells say; a re-run skips it, a stricter --min-path-gain re-decides.
// A probe before protocol 4 cannot replay wider tokens: tune says so once and goes on with ggml's
// own pick (no path choice recorded), rather than failing.
TEST(Tune, ACrossoverAnOlderProbeCannotRunIsNotAsked) {
  const TuneDir d;
  const json out = d.run({{"--ncols", "1,2"}, {"--tests", "tg128"}, {"--rounds", "1"}, {"--replay-tokens", "4"}, {"--replay-rounds", "1"}},
                         {{"FAKE_PROBE_PROTOCOL", "3"}});
  ASSERT_TRUE(out.is_object());
  EXPECT_EQ(outcomes(out)["crossover"], "not asked");
  EXPECT_EQ(outcomes(out)["bench"], "done");
  bool said = false;
  for (const json& n : out["notes"]) said |= n.get<std::string>().find("no crossover: ") != std::string::npos &&
                                             n.get<std::string>().find("protocol 3") != std::string::npos;
  EXPECT_TRUE(said) << out["notes"].dump();
  EXPECT_TRUE(load_profile(out["profile"].get<std::string>()).paths.empty());
}

TEST(Tune, CrossoverRecordsWhereTheOtherPathWins) {
  if (probe::kProtocolVersion < 4) GTEST_SKIP() << "SKIPPED: the fake probe speaks protocol " << probe::kProtocolVersion
                                                << "; the crossover needs 4 (Replay at ncols N with forced paths)";
  fixtures::Options k_quants;
  k_quants.k_quants = true;
  const TuneDir d(k_quants);
  const std::map<std::string, std::string> small = {{"--ncols", "1,2,8"}, {"--tests", "tg128"}, {"--rounds", "1"},
                                                    {"--replay-tokens", "8"}, {"--replay-rounds", "3"}};
  const json first = d.run(small);
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(outcomes(first)["crossover"], "done");
  const json& cells = first["crossover"];
  ASSERT_TRUE(cells.is_array());
  std::set<int> widths;
  int approved = 0;
  for (const json& c : cells) {
    widths.insert(c["ncols"].get<int>());
    EXPECT_GT(c["stock_us"].get<double>(), 0);
    EXPECT_GT(c["path_us"].get<double>(), 0);
    EXPECT_NEAR(c["speedup"].get<double>(), c["stock_us"].get<double>() / c["path_us"].get<double>(), 1e-9);
    EXPECT_LE(c["speedup_low"].get<double>(), c["speedup"].get<double>());
    EXPECT_EQ(c["approved"], c["record"] == "approved");
    EXPECT_EQ(c["path"], c["approved"].get<bool>() ? c["other_path"] : c["stock_path"]);
    EXPECT_EQ(c["stock_path"], "mmvq");  // the fake is an sm_90 engine: ggml runs mmvq at every width
    approved += c["approved"].get<bool>();
  }
  EXPECT_EQ(widths, (std::set<int>{2, 8}));
  std::set<std::pair<std::string, int>> mmq;  // (type, width) where the engine now runs mmq
  for (const json& c : cells)
    if (c["path"] == "mmq") mmq.insert({c["type"].get<std::string>(), c["ncols"].get<int>()});
  EXPECT_EQ(mmq, (std::set<std::pair<std::string, int>>{{"q4_K", 8}, {"q6_K", 8}})) << cells.dump(1);
  EXPECT_EQ(approved, 2);
  // The installed profile holds a record for every cell that has one, with the cell's numbers.
  const Profile p = load_profile(d.profile);
  EXPECT_TRUE(validate_profile(p).empty());
  size_t records = 0;
  for (const json& c : cells) {
    if (c["record"].is_null()) continue;
    ++records;
    const auto it = std::find_if(p.paths.begin(), p.paths.end(), [&](const PathChoice& r) {
      return type_name(r.type) == c["type"].get<std::string>() && launch_name(r.launch) == c["launch"].get<std::string>() &&
             r.ncols == c["ncols"].get<int>();
    });
    ASSERT_NE(it, p.paths.end()) << c.dump();
    EXPECT_EQ(approval_name(it->approval), c["record"].get<std::string>());
    EXPECT_EQ(it->arch, "sm_90");
    ASSERT_TRUE(it->evidence);
    EXPECT_EQ(it->evidence->speedup, c["speedup"].get<double>());
  }
  EXPECT_EQ(p.paths.size(), records);
  // The replay after it ran with the paths in the profile's fingerprint: the bench describes this state.
  ASSERT_EQ(p.benches.size(), 1u);
  EXPECT_EQ(p.benches[0].profile_fingerprint, approved_fingerprint(p, "sm_90"));

  const json again = d.run(small);
  EXPECT_EQ(outcomes(again)["crossover"], "skipped");
  EXPECT_EQ(again["crossover"], cells);
  // A minimum gain no winner reaches: measured again, nothing approved, the records pending.
  std::map<std::string, std::string> strict = small;
  strict["--min-path-gain"] = "0.9";
  const json strict_run = d.run(strict);
  EXPECT_EQ(outcomes(strict_run)["crossover"], "done");
  for (const json& c : strict_run["crossover"]) EXPECT_FALSE(c["approved"].get<bool>()) << c.dump();
  for (const PathChoice& r : load_profile(d.profile).paths) EXPECT_EQ(r.approval, Approval::Pending);

  // Approved on another model, the width-8 records (those still pending above) reach this model too: a tune that does not measure
  // width 8 says so, one line each (ggml's mmvq/mmq question has no shape).
  Profile shared = load_profile(d.profile);
  ASSERT_FALSE(shared.paths.empty());
  for (PathChoice& r : shared.paths) {
    r.approval = Approval::Approved;
    r.evidence->model = "other.gguf";
  }
  save_profile(shared, d.profile);
  std::map<std::string, std::string> narrow = small;
  narrow["--ncols"] = "1,2";
  const json narrow_run = d.run(narrow);
  int unmeasured = 0;
  for (const json& n : narrow_run["notes"])
    unmeasured += n.get<std::string>().find("(approved on other.gguf, ") != std::string::npos &&
                  n.get<std::string>().find("applies to small-llama.gguf too, not measured on it: add 8 to --ncols") != std::string::npos;
  EXPECT_EQ(unmeasured, int(shared.paths.size())) << narrow_run["notes"].dump(1);
}

// ---- The group step: same-input runs as one launch ----

int group_entries(const Profile& p) {
  return int(std::count_if(p.entries.begin(), p.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::MulMatGroup; }));
}

// A second model's group step replaces only its own run kinds: the first model's group entries at the
// same width stay (a profile serves the models it was tuned on), and a measured run kind without an
// approved config loses its old entry.
TEST(Tune, GroupInstallReplacesOnlyTheMeasuredRunKinds) {
  const TuneDir d;
  const GgufFile file = GgufFile::open(d.model);
  const std::map<int, LaunchPlan> plans = {{1, plan_launches(file, 1)}};
  ASSERT_FALSE(plans.at(1).groups.empty());
  tune::GroupDecision measured;  // width 1 measured, nothing approved
  measured.ncols = 1;
  const std::vector<ProfileKey> keys = tune::group_keys({measured}, plans, "sm_90", {});
  ASSERT_EQ(keys.size(), plans.at(1).groups.size());
  Profile p;
  ProfileEntry mine, other;
  mine.key = keys.front();
  mine.config = {4, 2};
  other.key = group_profile_key("sm_90", {{GgmlType::Q5_K, 2048}, {GgmlType::Q5_K, 256}}, 2048, 1);
  other.config = {8, 1};
  p.entries = {mine, other};
  tune::install_groups(p, keys, {});
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries.front().key, other.key);
  mine.config = {2, 4};
  tune::install_groups(p, keys, {mine});
  ASSERT_EQ(p.entries.size(), 2u);
  EXPECT_EQ(p.entries.back().config, (Config{2, 4}));
}

// The fake engine's group config 4x2 runs each run in 0.6 of its time: approved at both widths, one
// entry per run kind, the runs all grouped, the outputs the same; the replay's prediction says so.
TEST(Tune, GroupStepInstallsTheWinningConfigPerRunKind) {
  const TuneDir d;
  const std::map<std::string, std::string> small = {{"--ncols", "1,2"}, {"--tests", "tg128"}, {"--rounds", "1"},
                                                    {"--replay-tokens", "6"}, {"--replay-rounds", "3"}};
  const json first = d.run(small);
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(outcomes(first)["groups"], "done");
  const GgufFile file = GgufFile::open(d.model);
  const LaunchPlan one = plan_launches(file, 1), two = plan_launches(file, 2);
  ASSERT_GT(one.group_runs_per_token(), 0);
  const json& groups = first["groups"];
  ASSERT_EQ(groups.size(), 2u) << groups.dump(1);
  for (const json& g : groups) {
    const LaunchPlan& plan = g["ncols"] == 1 ? one : two;
    EXPECT_EQ(g["runs_per_token"], plan.group_runs_per_token());
    EXPECT_EQ(g["group_launches"], plan.group_runs_per_token());
    EXPECT_EQ(g["config"], "4:2") << g.dump();
    EXPECT_TRUE(g["approved"].get<bool>()) << g.dump();
    EXPECT_GT(g["speedup_low"].get<double>(), 1.01);
    EXPECT_LT(g["group_us"].get<double>(), g["off_us"].get<double>());
  }
  const Profile p = load_profile(d.profile);
  EXPECT_TRUE(validate_profile(p).empty());
  EXPECT_EQ(group_entries(p), int(one.groups.size() + two.groups.size()));
  for (const ProfileEntry& e : p.entries) {
    if (e.key.launch != Launch::MulMatGroup) continue;
    EXPECT_EQ(e.config, (Config{4, 2}));
    EXPECT_EQ(e.approval, Approval::Approved);
    EXPECT_FALSE(e.key.device.any());  // the device's own entry, not the arch's
    ASSERT_TRUE(e.provenance);
    EXPECT_GT(e.provenance->speedup, 1.0);
  }
  // The replay ran the profile's groups and multiplied the measured ratio into its prediction.
  EXPECT_EQ(first["replay"]["profiled"]["group_launches"], one.group_runs_per_token());
  EXPECT_EQ(first["replay"]["stock"]["group_launches"], 0);
  EXPECT_NEAR(first["replay"]["predicted_group_ratio"].get<double>(), groups[0]["speedup"].get<double>(), 1e-9);
  bool said = false;
  for (const json& n : first["notes"]) said |= n.get<std::string>().find("multiplies in the group step's measured") != std::string::npos;
  EXPECT_TRUE(said) << first["notes"].dump();

  // Unchanged: skipped, the same decisions, the entries kept.
  const json again = d.run(small);
  EXPECT_EQ(outcomes(again)["groups"], "skipped");
  EXPECT_EQ(again["groups"], groups);
  EXPECT_EQ(group_entries(load_profile(d.profile)), group_entries(p));

  // Killed after the first width: the journal keeps it, the step goes on with the second only.
  const fs::path journal = d.state() / "tune.journal";
  std::vector<std::string> lines;
  {
    std::ifstream in(journal);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  size_t started = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    const json j = json::parse(lines[i], nullptr, false);
    if (j.is_object() && j.value("step", "") == "groups" && j.value("outcome", "") == "started") started = i;
  }
  ASSERT_LT(started + 2, lines.size());
  ASSERT_TRUE(json::parse(lines[started + 1]).contains("group_width"));
  lines.resize(started + 2);  // "started" and the first width's samples
  {
    std::ofstream out(journal, std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
  }
  const json resumed = d.run(small);
  EXPECT_EQ(outcomes(resumed)["groups"], "resumed");
  bool kept = false;
  for (const json& n : resumed["notes"]) kept |= n.get<std::string>().find("resuming the group step: 1 batch widths journaled") != std::string::npos;
  EXPECT_TRUE(kept) << resumed["notes"].dump();
  ASSERT_EQ(resumed["groups"].size(), 2u);
  EXPECT_EQ(resumed["groups"][0], groups[0]);  // the journaled width's own samples, decided again
  EXPECT_EQ(group_entries(load_profile(d.profile)), group_entries(p));
}

// No config beats groups off (the fake engine's FAKE_PROBE_GROUP_WIN=none): nothing approved, no
// entry, the text report says groups stay off; an older probe: the step is not asked, said once.
TEST(Tune, GroupStepWithoutAWinnerOrWithAnOlderProbeInstallsNothing) {
  const TuneDir d;
  const std::map<std::string, std::string> small = {{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"},
                                                    {"--replay-tokens", "6"}, {"--replay-rounds", "3"}};
  const json none = d.run(small, {{"FAKE_PROBE_GROUP_WIN", "none"}});
  ASSERT_TRUE(none.is_object());
  EXPECT_EQ(outcomes(none)["groups"], "done");
  ASSERT_EQ(none["groups"].size(), 1u);
  EXPECT_FALSE(none["groups"][0]["approved"].get<bool>()) << none["groups"].dump();
  EXPECT_EQ(group_entries(load_profile(d.profile)), 0);
  EXPECT_FALSE(none["replay"].contains("predicted_group_ratio"));
  // A wrong group output: that config is left out, whatever its speed.
  std::map<std::string, std::string> strict = small;
  strict["--min-group-gain"] = "0.02";  // another input: measured again
  const json wrong = d.run(strict, {{"FAKE_PROBE_GROUP_WRONG", "4x2"}});
  ASSERT_TRUE(wrong.is_object());
  EXPECT_NE(wrong["groups"][0]["config"], "4:2");
  EXPECT_FALSE(wrong["groups"][0]["approved"].get<bool>());
  // The text report.
  std::vector<std::string> args = d.args(small);
  args.erase(std::find(args.begin(), args.end(), "--json"));
  const test::CliRun text = test::run_temper(args, d.env({{"FAKE_PROBE_GROUP_WIN", "none"}}), true);
  EXPECT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.out.find("same-input groups (q, k, v as one launch)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("groups stay off"), std::string::npos) << text.out;

  const TuneDir old;
  const json older = old.run(small, {{"FAKE_PROBE_PROTOCOL", "4"}});
  ASSERT_TRUE(older.is_object());
  EXPECT_EQ(outcomes(older)["groups"], "not asked");
  bool said = false;
  for (const json& n : older["notes"]) said |= n.get<std::string>().find("no group step: ") != std::string::npos &&
                                               n.get<std::string>().find("protocol 4") != std::string::npos;
  EXPECT_TRUE(said) << older["notes"].dump();
  EXPECT_EQ(group_entries(load_profile(old.profile)), 0);
  // A hook without the ggml-cuda.cu part (group_hooks=0): not asked either, said once.
  const TuneDir unpatched;
  const json no_hooks = unpatched.run(small, {{"FAKE_PROBE_GROUP_HOOKS", "0"}});
  ASSERT_TRUE(no_hooks.is_object());
  EXPECT_EQ(outcomes(no_hooks)["groups"], "not asked");
  bool hooks_said = false;
  for (const json& n : no_hooks["notes"]) hooks_said |= n.get<std::string>().find("group_hooks=0") != std::string::npos;
  EXPECT_TRUE(hooks_said) << no_hooks["notes"].dump();
}

// The pipeline step leaves the profile without pipelined entries when a pipelined launch changes an
// output (whatever its speed: llama-bench is not even run) or llama-bench finds no gain, and is not
// asked without --llama-bench, of a hook without pipelined launches or of an older probe.
TEST(Tune, PipelineStepThatChangesAnOutputOrDoesNotPayInstallsNothing) {
  const std::map<std::string, std::string> small = {{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"},
                                                    {"--replay-tokens", "6"}, {"--replay-rounds", "3"}};
  const auto pipelined_entries = [](const Profile& p) {
    return std::count_if(p.entries.begin(), p.entries.end(), [](const ProfileEntry& e) { return launch_is_pipelined(e.key.launch); });
  };
  const TuneDir d;
  const json wrong = d.run(small, {{"FAKE_PROBE_PIPELINE_WRONG", "1"}});
  ASSERT_TRUE(wrong.is_object());
  EXPECT_EQ(outcomes(wrong)["pipeline"], "done");
  EXPECT_FALSE(wrong["pipeline"]["approved"].get<bool>());
  EXPECT_FALSE(wrong["pipeline"]["identical"].get<bool>());
  EXPECT_GT(wrong["pipeline"]["replay_speedup"].get<double>(), 1.01);  // faster, and still refused
  EXPECT_EQ(wrong["pipeline"]["test"], "");
  EXPECT_NE(wrong["pipeline"]["why"].get<std::string>().find("an output differs"), std::string::npos) << wrong["pipeline"].dump();
  EXPECT_EQ(line_count(d.bench_log), 2u);  // the bench step's stock and profile runs only
  EXPECT_EQ(pipelined_entries(load_profile(d.profile)), 0);

  const TuneDir flat;
  const json no_gain = flat.run(small, {{"FAKE_LLAMA_BENCH_PIPELINE_GAIN", "1.0"}});
  ASSERT_TRUE(no_gain.is_object());
  EXPECT_TRUE(no_gain["pipeline"]["identical"].get<bool>());
  EXPECT_EQ(no_gain["pipeline"]["test"], "tg128");
  EXPECT_FALSE(no_gain["pipeline"]["approved"].get<bool>());
  EXPECT_NE(no_gain["pipeline"]["why"].get<std::string>().find("does not beat pipelining off"), std::string::npos)
      << no_gain["pipeline"].dump();
  EXPECT_EQ(pipelined_entries(load_profile(flat.profile)), 0);

  const TuneDir unbenched;
  std::vector<std::string> args = unbenched.args(small);
  args.erase(std::find(args.begin(), args.end(), "--llama-bench"), std::find(args.begin(), args.end(), "--llama-bench") + 2);
  const test::CliRun r = test::run_temper(args, unbenched.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(r.out);
  EXPECT_EQ(outcomes(j)["pipeline"], "not asked");
  EXPECT_TRUE(j["pipeline"].is_null());

  for (const auto& [env, value] : std::vector<std::pair<std::string, std::string>>{{"FAKE_PROBE_PIPELINE_BITS", "0"},
                                                                                  {"FAKE_PROBE_PROTOCOL", "5"}}) {
    SCOPED_TRACE(env);
    const TuneDir none;
    const json n = none.run(small, {{env, value}});
    ASSERT_TRUE(n.is_object());
    EXPECT_EQ(outcomes(n)["pipeline"], "not asked");
    bool said = false;
    for (const json& note : n["notes"]) said |= note.get<std::string>().find("no pipeline step: the engine's hook compiles no pipelined") == 0;
    EXPECT_TRUE(said) << n["notes"].dump();
    EXPECT_EQ(pipelined_entries(load_profile(none.profile)), 0);
  }
}

// The token step (issue 46) against the fake token probe, whose rule is known: a token costs 100 µs
// less what the approved entries save as the sweep measured them, and FAKE_TOKEN_SLOW's family costs
// three times its saving instead. The sweep approves that family's configs (faster per launch); the
// token must take them back. Then: a probe killed mid-step resumes without measuring a family again,
// a re-run skips, bad output is exit 4 with the profile untouched, an engine without the profile
// switch makes the step "not asked".
TEST(Tune, TokenStepTakesBackAConfigFasterPerLaunchButSlowerPerToken) {
  const TuneDir d;
  const fs::path token_log = d.dir / "token.log";
  std::map<std::string, std::string> small = {{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"}, {"--replay-tokens", "4"},
                                              {"--replay-rounds", "2"}, {"--token-probe", FAKE_TOKEN_PROBE}, {"--token-rounds", "5"},
                                              {"--token-tokens", "8"}, {"--token-greedy", "16"}};
  const test::Env slow = {{"FAKE_TOKEN_SLOW", "mul_mat"}, {"FAKE_TOKEN_LOG", token_log.string()}};
  auto with = [](test::Env e, test::Env more) {
    e.insert(e.end(), more.begin(), more.end());
    return e;
  };
  // The prediction's probe fails: exit 4 naming the probe, the families decided so far journaled, and
  // the profile as the pipeline step left it.
  const test::CliRun failed = test::run_temper(d.args(small), d.env(with(slow, {{"FAKE_TOKEN_FAIL_GREEDY", "1"}})), true);
  ASSERT_EQ(failed.code, 4) << failed.output;
  EXPECT_NE(failed.output.find("token probe exited with status 1; last stderr: fake-token-probe: a decode failed"), std::string::npos)
      << failed.output;
  const std::string before_token = read_file(d.profile);
  EXPECT_EQ(before_token.find("token probe"), std::string::npos);
  const size_t families = line_count(token_log) - 1;  // one probe run per family, then the prediction's
  ASSERT_GE(families, 1u);

  const json j = d.run(small, slow);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(outcomes(j)["token"], "resumed");
  EXPECT_EQ(line_count(token_log), families + 2);  // the prediction alone ran again
  ASSERT_EQ(j["token"]["coordinates"].size(), families) << j["token"].dump();
  bool slow_seen = false, norm_seen = false, glu_q8_on = false, pair_group_on = false;
  for (const json& c : j["token"]["coordinates"]) {
    const std::string chosen = c["options"][c["chosen"].get<size_t>()];
    if (c["kind"] == "mul_mat") {
      slow_seen = true;
      EXPECT_EQ(chosen, "default") << c.dump();
      EXPECT_GT(c["low"].get<double>(), 1.005) << c.dump();
    } else if (c["kind"] == "rms_norm_q8_1") {
      norm_seen = true;  // the fake saves 1.5 µs a token per approved norm entry: on
      EXPECT_EQ(chosen, "on") << c.dump();
      EXPECT_EQ(c["norm_k"], 256) << c.dump();  // the small fixture's hidden size: its gate/up's K
    } else if (c["kind"] == "pair_group") {
      pair_group_on = true;  // the fake saves 1 µs per approved group entry, the pair's too: on
      EXPECT_EQ(chosen, "on") << c.dump();
    } else if (c["kind"] == "glu_q8_1") {
      glu_q8_on = true;  // the sweep ran the fixture's gate/up as the unfused pair; the fake saves 1 µs with its GLU's entry: on
      EXPECT_EQ(chosen, "on") << c.dump();
      EXPECT_EQ(c["norm_k"], 512) << c.dump();  // the gate/up's n
    } else {
      EXPECT_EQ(chosen, "tuned") << c.dump();  // the others save what the sweep said: kept
    }
  }
  ASSERT_TRUE(slow_seen) << j["token"].dump();
  ASSERT_TRUE(norm_seen) << j["token"].dump();
  ASSERT_TRUE(glu_q8_on) << j["token"].dump();
  ASSERT_TRUE(pair_group_on) << j["token"].dump();
  const Profile p = load_profile(d.profile);
  int taken_back = 0, kept = 0, norms = 0;
  for (const ProfileEntry& e : p.entries) {
    if (e.key.ncols != 1 || launch_is_pipelined(e.key.launch) || launch_is_group(e.key.launch)) continue;
    if (launch_writes_q8(e.key.launch)) {  // put in by the token, with its measured µs per token off → on
      EXPECT_EQ(e.approval, Approval::Approved) << key_text(e.key);
      ASSERT_TRUE(e.provenance.has_value());
      EXPECT_GT(e.provenance->default_us, e.provenance->tuned_us);
      ++norms;
      continue;
    }
    if (e.key.launch == Launch::MulMat) {
      EXPECT_NE(e.approval, Approval::Approved) << key_text(e.key);
      taken_back += e.approval == Approval::Rejected && e.note.rfind("token probe: default", 0) == 0;
    } else {
      kept += e.approval == Approval::Approved;
    }
  }
  EXPECT_GT(taken_back, 0);
  EXPECT_GT(kept, 0);
  EXPECT_EQ(norms, 2);  // the norm's entry and the GLU's
  const auto pair_group = std::find_if(p.entries.begin(), p.entries.end(), [](const ProfileEntry& e) {
    return launch_is_group(e.key.launch) && e.key.members.size() == 2 && e.key.members[0] == e.key.members[1] && tune::token_added(e);
  });
  ASSERT_NE(pair_group, p.entries.end());
  EXPECT_EQ(pair_group->key.members[0].n, 512);  // the gate/up's n, twice
  const std::vector<std::string> problems = validate_profile(p);
  EXPECT_TRUE(problems.empty()) << problems.front();  // the norm entry's provenance passes validate
  // The prediction and the bench side by side; greedy decoding gave the same tokens.
  EXPECT_GT(j["prediction"]["token"].get<double>(), 1.0);
  EXPECT_GT(j["prediction"]["bench"].get<double>(), 1.0);
  EXPECT_TRUE(j["token"]["prediction"]["greedy_identical"].get<bool>());
  EXPECT_EQ(j["token"]["prediction"]["tokens"], 128);

  const json again = d.run(small, slow);
  EXPECT_EQ(outcomes(again)["token"], "skipped");
  EXPECT_EQ(line_count(token_log), families + 2);
  EXPECT_EQ(again["prediction"]["token"], j["prediction"]["token"]);

  // Bad output: one line, exit 4, the profile byte for byte as it was.
  const std::string installed = read_file(d.profile);
  small["--token-rounds"] = "4";
  const test::CliRun bad = test::run_temper(d.args(small), d.env(with(slow, {{"FAKE_TOKEN_GARBAGE", "1"}})), true);
  EXPECT_EQ(bad.code, 4) << bad.output;
  EXPECT_NE(bad.output.find("token probe: output line 3 ('window 0 0 0 fast'): expected"), std::string::npos) << bad.output;
  EXPECT_EQ(read_file(d.profile), installed);

  // An engine whose hook cannot switch profiles: not asked, said once, nothing changed.
  small["--token-rounds"] = "3";
  const json old = d.run(small, with(slow, {{"FAKE_TOKEN_NO_HOOK", "1"}}));
  ASSERT_TRUE(old.is_object());
  EXPECT_EQ(outcomes(old)["token"], "not asked");
  int said = 0;
  for (const json& n : old["notes"]) said += n.get<std::string>().rfind("no token step: the engine's hook cannot switch profiles", 0) == 0;
  EXPECT_EQ(said, 1) << old["notes"].dump();
  EXPECT_TRUE(old["prediction"]["token"].is_null());

  // The unfused gate/up pair faster per launch, but its glu kernel costs more per token than it saves:
  // the sweep's best fused launch goes in instead, and stays in through a re-run's install.
  small["--token-rounds"] = "6";
  const test::Env glu = {{"FAKE_TOKEN_UNFUSED_US", "1"}, {"FAKE_TOKEN_LOG", token_log.string()}};
  const json fused = d.run(small, glu);
  ASSERT_TRUE(fused.is_object());
  bool glu_seen = false, glu_q8_seen = false;
  for (const json& c : fused["token"]["coordinates"]) {
    if (c["kind"] == "glu_q8_1" || c["kind"] == "pair_group") {  // the fused launch holds the GLU: kept off without a probe run
      glu_q8_seen |= c["kind"] == "glu_q8_1";
      EXPECT_EQ(c["chosen"], 0) << c.dump();
      EXPECT_TRUE(c["samples"].empty()) << c.dump();
      EXPECT_NE(c["why"].get<std::string>().find(c["kind"] == "glu_q8_1" ? "no unfused gate/up pair of n 512" : "no unfused gate/up pair at one column"),
                std::string::npos) << c.dump();
    }
    if (c["kind"] != "mul_mat_glu") continue;
    glu_seen = true;
    EXPECT_EQ(c["options"], json({"tuned", "default", "fused"}));
    EXPECT_EQ(c["options"][c["chosen"].get<size_t>()], "fused") << c.dump();
  }
  ASSERT_TRUE(glu_seen) << fused["token"].dump();
  ASSERT_TRUE(glu_q8_seen) << fused["token"].dump();
  const Profile after_fused = load_profile(d.profile);
  EXPECT_TRUE(std::none_of(after_fused.entries.begin(), after_fused.entries.end(), [](const ProfileEntry& e) { return e.key.launch == Launch::GluQ8; }));
  auto glu_entries = [&] {
    std::map<std::string, std::string> m;  // launch kind -> approval and config
    for (const ProfileEntry& e : load_profile(d.profile).entries)
      if (e.key.ncols == 1 && (e.key.launch == Launch::MulMatGlu || e.key.launch == Launch::MulMatGluUnfused))
        m[std::string(launch_name(e.key.launch))] = std::string(approval_name(e.approval)) + " " + config_text(e.config) +
                                                     (tune::token_added(e) || tune::token_rejected(e) ? " (token)" : "");
    return m;
  };
  const auto after = glu_entries();
  EXPECT_EQ(after.at("mul_mat_glu").rfind("approved", 0), 0u) << after.at("mul_mat_glu");
  EXPECT_NE(after.at("mul_mat_glu").find("(token)"), std::string::npos);
  EXPECT_EQ(after.at("mul_mat_glu_unfused").rfind("rejected", 0), 0u) << after.at("mul_mat_glu_unfused");
  const size_t runs = line_count(token_log);
  const json again_fused = d.run(small, glu);
  EXPECT_EQ(outcomes(again_fused)["token"], "skipped");
  EXPECT_EQ(line_count(token_log), runs);
  EXPECT_EQ(glu_entries(), after);
}

// ---- The install rule ----

ProfileEntry entry(const std::string& arch, int n, Config c, Approval a = Approval::Approved) {
  ProfileEntry e;
  e.key = ProfileKey(arch, GgmlType::Q4_0, n, 256, 1);
  e.config = c;
  e.default_config = {4, 1};
  e.approval = a;
  return e;
}

// ---- Issue 51: the shared profile, the caches and the state tune trusts ----

// Rebasing: the writer's own change (added, replaced, removed) lands in what the file holds now,
// whatever another writer put there meanwhile.
TEST(TuneShared, RebaseAppliesOnlyTheWritersChange) {
  Profile from;
  from.model = "a.gguf";
  from.entries = {entry("sm_90", 128, {2, 2}), entry("sm_90", 256, {2, 2})};
  Profile to = from;
  to.entries = {entry("sm_90", 128, {4, 1}), entry("sm_90", 512, {2, 1})};  // 128 changed, 256 removed, 512 added
  to.model = "a.gguf, b.gguf";
  Profile theirs = from;
  theirs.entries.push_back(entry("sm_90", 384, {8, 1}));  // another tune's, meanwhile
  theirs.model = "a.gguf, c.gguf";
  const Profile p = rebase_profile(from, to, theirs);
  ASSERT_EQ(p.entries.size(), 3u);
  EXPECT_EQ(p.entries[0].key.n, 128);
  EXPECT_EQ(p.entries[0].config, (Config{4, 1}));
  EXPECT_EQ(p.entries[1].key.n, 384);
  EXPECT_EQ(p.entries[2].key.n, 512);
  EXPECT_EQ(p.model, "a.gguf, c.gguf, b.gguf");
  // Undoing the change takes out only the writer's part.
  const Profile undone = rebase_profile(to, from, p);
  ASSERT_EQ(undone.entries.size(), 3u);
  EXPECT_EQ(undone.entries[0].config, (Config{2, 2}));
  EXPECT_EQ(undone.entries[1].key.n, 256);
  EXPECT_EQ(undone.entries[2].key.n, 384);
}

// Two processes updating one profile file at once, each from the copy it read first: every entry
// of both survives every round (before the lock and the re-read, the later writer dropped the other's).
TEST(TuneShared, UpdatesUnderTheLockKeepEveryWritersEntries) {
  const fs::path dir = fs::temp_directory_path() / ("temper-shared-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "engine-profile.json";
  for (int trial = 0; trial < 20; ++trial) {
    fs::remove(path);
    std::vector<pid_t> kids;
    for (int w = 0; w < 2; ++w) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        Profile mine, base;  // both start from the empty file, then write 5 times, one entry more each time
        for (int i = 0; i < 5; ++i) {
          mine.entries.push_back(entry(w ? "sm_80" : "sm_90", 128 * (i + 1), {2, 1}));
          base = update_profile(path, base, mine);
          mine = base;
        }
        ::_exit(0);
      }
      kids.push_back(pid);
    }
    for (pid_t k : kids) ASSERT_EQ(test::wait_code(k), 0);
    const Profile p = load_profile(path);
    ASSERT_EQ(p.entries.size(), 10u) << "trial " << trial;
  }
  fs::remove_all(dir);
}

// The whole tune, twice at once for two models on one default profile, 20 trials: every entry each
// tune approved and installed is in the file when both have ended.
TEST(TuneShared, ConcurrentTunesOfTwoModelsKeepEveryEntry) {
  const TuneDir d;
  fixtures::Options k;
  k.k_quants = true;  // q4_K / q6_K where the other has q4_0 / q8_0: no key in common
  const fs::path other = d.dir / "small-llama-k.gguf";
  fixtures::writer(fixtures::Fixture::SmallLlama, k).write(other);
  const auto args = [&](const fs::path& model, const fs::path& out) {
    return std::vector<std::string>{"tune", model.string(), "--probe", FAKE_PROBE, "--ncols", "1", "--replay-tokens", "2",
                                    "--replay-rounds", "1", "--llama-bench", FAKE_LLAMA_BENCH, "--tests", "tg128",
                                    "--rounds", "1", "--repetitions", "2", "-o", out.string()};
  };
  const auto state_profile = [&](const fs::path& model) {
    tune::TuneOptions o;
    o.model = model;
    o.probe = FAKE_PROBE;
    ::setenv("XDG_CACHE_HOME", (d.dir / "cache").c_str(), 1);
    const fs::path s = tune::state_dir(o) / "profile.json";
    ::unsetenv("XDG_CACHE_HOME");
    return s;
  };
  for (int trial = 0; trial < 20; ++trial) {
    const fs::path out = d.dir / ("shared-" + std::to_string(trial) + ".json");
    const fs::path log_a = d.dir / "a.txt", log_b = d.dir / "b.txt";
    const pid_t a = test::spawn_temper(args(d.model, out), d.env(), log_a, log_a);
    const pid_t b = test::spawn_temper(args(other, out), d.env(), log_b, log_b);
    ASSERT_EQ(test::wait_code(a), 0) << test::slurp(log_a);
    ASSERT_EQ(test::wait_code(b), 0) << test::slurp(log_b);
    const Profile p = load_profile(out);
    for (const fs::path& model : {d.model, other}) {
      const Profile tuned = load_profile(state_profile(model));
      ASSERT_FALSE(tuned.entries.empty());
      for (const auto& e : tuned.entries)
        EXPECT_NE(find_entry(p, e.key), nullptr) << "trial " << trial << ": " << model.filename() << " lost " << key_text(e.key);
    }
    EXPECT_EQ(p.benches.size(), 2u) << "trial " << trial;  // each model's bench record
    EXPECT_NE(p.model.find("small-llama.gguf"), std::string::npos) << p.model;
    EXPECT_NE(p.model.find("small-llama-k.gguf"), std::string::npos) << p.model;
  }
}

// A second tune of the same model and engine while one runs is refused at once, in one line.
TEST(TuneShared, TheSameModelTwiceAtOnceIsRefused) {
  const TuneDir d;
  const fs::path state = d.state();
  fs::create_directories(state);
  fs::permissions(d.dir / "cache", fs::perms::owner_all);
  fs::permissions(d.dir / "cache" / "temper", fs::perms::owner_all);
  fs::permissions(state.parent_path(), fs::perms::owner_all);
  fs::permissions(state, fs::perms::owner_all);
  const int fd = ::open((state / "tune.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // as the running tune holds it
  const test::CliRun r = test::run_temper(d.args({{"--ncols", "1"}}), d.env());
  ::close(fd);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(r.output, "temper tune: another temper tune of this model and engine is running (its state folder " + state.string() +
                          " is locked): wait for it to end, or stop it\n");
  EXPECT_FALSE(fs::exists(d.gemv_log));  // nothing measured
}

// No HOME and no XDG_CACHE_HOME: one line, no cache under /tmp. A state folder planted as a link or
// left writable by others is refused before anything is written there.
TEST(TuneShared, CachesArePrivateAndNeverInAFixedTmpFolder) {
  const TuneDir d;
  test::CliRun r = test::run_temper(d.args({{"--ncols", "1"}, {"-o", (d.dir / "p.json").string()}}),
                                    {{"HOME", ""}, {"XDG_CACHE_HOME", ""}, {"XDG_CONFIG_HOME", (d.dir / "config").string()}});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("neither XDG_CACHE_HOME nor HOME is set"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_FALSE(fs::exists(d.gemv_log));
  // Made private (a tune refused for its -o, a folder, after the state folder was made).
  r = test::run_temper(d.args({{"--ncols", "1"}, {"-o", d.dir.string()}}), d.env());
  EXPECT_EQ(r.code, 2) << r.output;
  const fs::path state = d.state();
  ASSERT_TRUE(fs::is_directory(state));
  EXPECT_EQ(fs::status(state).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(state.parent_path()).permissions() & fs::perms::all, fs::perms::owner_all);
  // A link planted where the state folder goes: refused, its target untouched.
  fs::remove_all(state);
  const fs::path target = d.dir / "elsewhere";
  fs::create_directories(target);
  fs::create_directory_symlink(target, state);
  r = test::run_temper(d.args({{"--ncols", "1"}}), d.env());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cache folder " + state.string() + " is a symbolic link"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(target));
  // Writable by others.
  fs::remove(state);
  fs::create_directories(state);
  fs::permissions(state, fs::perms::all);
  r = test::run_temper(d.args({{"--ncols", "1"}}), d.env());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("can be written by other users"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(state / "tune.journal"));
}

// The profile (-o or where the engine looks) and --probe: a FIFO, a folder, a read-only file are refused
// at once, before the sweep (a FIFO hung tune for ever).
TEST(TuneShared, AnOutputOrProbeThatIsNotAFileIsRefusedAtOnce) {
  const TuneDir d;
  const fs::path fifo = d.dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path read_only = d.dir / "ro.json";
  std::ofstream(read_only) << "{}";
  fs::permissions(read_only, fs::perms::owner_read);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [opt, value, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"-o", fifo.string(), " is a FIFO: tune's profile must be a regular file"},
           {"-o", d.dir.string(), " is a directory: tune's profile must be a regular file"},
           {"-o", read_only.string(), " is read-only"},
           {"--probe", fifo.string(), ": not a regular file (a FIFO)"}}) {
    const test::CliRun r = test::run_temper(d.args({{"--ncols", "1"}, {opt, value}}), d.env());
    EXPECT_EQ(r.code, 2) << opt << " " << value << ": " << r.output;
    EXPECT_NE(r.output.find(value + why), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  // The default profile path a FIFO.
  fs::create_directories(d.profile.parent_path());
  ASSERT_EQ(::mkfifo(d.profile.c_str(), 0600), 0);
  const test::CliRun r = test::run_temper(d.args({{"--ncols", "1"}}), d.env());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(d.profile.string() + " is a FIFO"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d.gemv_log));  // no sweep
  // `sweep -o FIFO` without a reader: refused at once, not after the sweep.
  const test::CliRun s = test::run_temper({"sweep", "--shape", "q4_K:4096:4096", "--probe", FAKE_PROBE, "--ncols", "1", "-o",
                                           fifo.string()}, d.env());
  EXPECT_EQ(s.code, 2) << s.output;
  EXPECT_NE(s.output.find(fifo.string() + " is a FIFO with no reader"), std::string::npos) << s.output;
  EXPECT_FALSE(fs::exists(d.gemv_log));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

// Paths that are not UTF-8 (model, probe, -o): tune completes; JSON says the odd bytes as \xNN.
TEST(TuneShared, NonUtf8PathsWork) {
  const TuneDir d;
  const fs::path model = d.dir / "mod\xff" "el.gguf", probe = d.dir / "pro\xfe" "be", out = d.dir / "out\xfd.json";
  fs::copy_file(d.model, model);
  fs::copy_file(FAKE_PROBE, probe);
  const test::CliRun r = test::run_temper({"tune", model.string(), "--json", "--probe", probe.string(), "--ncols", "1",
                                           "--replay-tokens", "2", "--replay-rounds", "1", "-o", out.string()}, d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["profile"], (d.dir / "out\\xfd.json").string());
  EXPECT_GT(load_profile(out).entries.size(), 0u);
  EXPECT_EQ(test::run_temper({"profile", "validate", out.string(), "--json"}, d.env()).code, 0);
}

// Another model's profile.json copied into the state folder is not trusted: approve runs again and the
// installed profile keeps this model's approved winners.
TEST(TuneShared, AnotherModelsStateFileIsNotTrusted) {
  const TuneDir d;
  fixtures::Options k;
  k.k_quants = true;
  const fs::path other = d.dir / "small-llama-k.gguf";
  fixtures::writer(fixtures::Fixture::SmallLlama, k).write(other);
  const auto args = [&](const fs::path& model) {
    return std::vector<std::string>{"tune", model.string(), "--json", "--probe", FAKE_PROBE, "--ncols", "1",
                                    "--replay-tokens", "2", "--replay-rounds", "1"};
  };
  ASSERT_EQ(test::run_temper(args(d.model), d.env()).code, 0);
  ASSERT_EQ(test::run_temper(args(other), d.env()).code, 0);
  const Profile mine = load_profile(d.state() / "profile.json");
  tune::TuneOptions o;
  o.model = other;
  o.probe = FAKE_PROBE;
  ::setenv("XDG_CACHE_HOME", (d.dir / "cache").c_str(), 1);
  const fs::path other_state = tune::state_dir(o);
  ::unsetenv("XDG_CACHE_HOME");
  fs::copy_file(other_state / "profile.json", d.state() / "profile.json", fs::copy_options::overwrite_existing);
  fs::copy_file(other_state / "sweep.session.json", d.state() / "sweep.session.json", fs::copy_options::overwrite_existing);
  const test::CliRun r = test::run_temper(args(d.model), d.env(), true);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(outcomes(json::parse(r.out))["sweep"], "done");
  EXPECT_EQ(outcomes(json::parse(r.out))["approve"], "done");
  const Profile p = load_profile(d.profile);
  for (const auto& e : mine.entries)
    if (e.approval == Approval::Approved) {
      const ProfileEntry* kept = find_entry(p, e.key);
      ASSERT_NE(kept, nullptr) << key_text(e.key);
      EXPECT_EQ(kept->approval, Approval::Approved) << key_text(e.key);
    }
}

// A journal record that does not read: exit 2, one line naming the state folder to delete.
TEST(TuneShared, ADamagedJournalRecordNamesTheFolder) {
  const TuneDir d;
  const std::map<std::string, std::string> small = {{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"}};
  ASSERT_TRUE(d.run(small).is_object());
  const fs::path journal = d.state() / "tune.journal";
  json replay;
  std::ifstream in(journal);
  for (std::string l; std::getline(in, l);)
    if (const json j = json::parse(l); j.value("step", "") == "replay") replay = j;
  ASSERT_TRUE(replay.is_object());
  replay["result"] = "garbled";
  std::ofstream(journal, std::ios::app) << replay.dump() << "\n";
  const test::CliRun r = test::run_temper(d.args(small), d.env());
  EXPECT_EQ(r.code, 2) << r.output;  // was exit 1, an internal error
  EXPECT_NE(r.output.find("\ntemper tune: tune journal: a record that does not read: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(the tune's state folder " + d.state().string() + " is damaged: delete it to start this tune afresh)\n"),
            std::string::npos) << r.output;
}

// `engine build` (what `sweep --engine-src` and tune run): an oversized mmvq.cu is refused naming the
// user's file before anything is read whole or copied; a cache folder others can write, or none at
// all without HOME, is refused before anything in it is run.
TEST(TuneShared, EngineBuildRefusesHugeSourcesAndUnsafeCaches) {
  const TuneDir d;
  const fs::path tree = d.dir / "ggml", mmvq = tree / "src" / "ggml-cuda" / "mmvq.cu";
  fs::create_directories(mmvq.parent_path());
  std::ofstream(tree / "CMakeLists.txt") << "project(ggml)\n";
  std::ofstream(mmvq) << "// mmvq\n";
  engine::BuildOptions o = engine::build_options("sm_90", "ci");
  o.cache_root = d.dir / "engine-cache";
  const auto error_of = [&] {
    try {
      engine::build(tree, o);
    } catch (const Error& e) {
      return std::make_pair(e.kind(), std::string(e.what()));
    }
    return std::make_pair(ErrorKind::Internal, std::string("(no error)"));
  };
  fs::create_directories(o.cache_root);
  fs::permissions(o.cache_root, fs::perms::all);
  auto [kind, what] = error_of();
  EXPECT_EQ(kind, ErrorKind::BadInput) << what;
  EXPECT_NE(what.find("cache folder " + o.cache_root.string() + " can be written by other users"), std::string::npos) << what;
  EXPECT_TRUE(fs::is_empty(o.cache_root));
  fs::remove(o.cache_root);
  // Without HOME and XDG_CACHE_HOME: no fixed folder under /tmp.
  o.cache_root.clear();
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::unsetenv("HOME");
  ::unsetenv("XDG_CACHE_HOME");
  std::tie(kind, what) = error_of();
  if (!home.empty()) ::setenv("HOME", home.c_str(), 1);
  EXPECT_EQ(kind, ErrorKind::BadInput) << what;
  EXPECT_NE(what.find("neither XDG_CACHE_HOME nor HOME is set"), std::string::npos) << what;
  // A 5 MB mmvq.cu (a sparse file): refused, the user's path named, nothing cached.
  o.cache_root = d.dir / "engine-cache";
  ASSERT_EQ(::truncate(mmvq.c_str(), 5 << 20), 0);
  std::tie(kind, what) = error_of();
  EXPECT_EQ(kind, ErrorKind::BadInput) << what;
  EXPECT_NE(what.find(mmvq.string()), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(o.cache_root));
}

TEST(TuneInstall, MeasuredShapesReplacedOthersKept) {
  Session s;
  s.id = "new";
  SessionDevice dev;
  dev.info.arch = "sm_90";
  dev.info.index = 0;
  s.devices = {dev};
  for (int n : {128, 256}) {
    Verdict v;
    static_cast<GroupKey&>(v) = GroupKey{};
    v.device = 0, v.type = GgmlType::Q4_0, v.n = n, v.k = 256, v.ncols = 1;
    v.verdict = std::string(kVerdictDefaultStays);
    s.verdicts.push_back(v);
  }
  Profile current;
  current.model = "other.gguf";
  current.sessions = {"old"};
  current.entries = {entry("sm_90", 128, {2, 2}),   // measured again, no longer a winner: goes
                     entry("sm_90", 384, {8, 1}),   // another model's shape: stays
                     entry("gfx90a", 128, {2, 1})};  // another arch: stays
  current.benches.push_back(BenchRecord{});
  Profile tuned;
  tuned.model = "small-llama.gguf";
  tuned.sessions = {"new"};
  tuned.entries = {entry("sm_90", 256, {2, 2})};
  const Profile p = tune::install_profile(current, tuned, s);
  ASSERT_EQ(p.entries.size(), 3u);
  EXPECT_EQ(p.entries[0].key.arch, "gfx90a");
  EXPECT_EQ(p.entries[1].key.n, 256);
  EXPECT_EQ(p.entries[2].key.n, 384);
  EXPECT_EQ(p.model, "other.gguf, small-llama.gguf");
  EXPECT_EQ(p.sessions, (std::vector<std::string>{"old", "new"}));
  EXPECT_EQ(p.benches.size(), 1u);
  // Installing the same again changes nothing (the model is named once).
  EXPECT_EQ(to_json(tune::install_profile(p, tuned, s)), to_json(p));
}

// Hook v10: at a fused gate/up over experts the GLU's q8_1 copy is measured without an unfused pair, and
// the token decides by the fake's known answer: on where it saves a microsecond, off where it costs one.
TEST(Tune, TokenStepMeasuresTheExpertsGluCopy) {
  for (const auto& [glu_us, want] : {std::pair<std::string, std::string>{"1.0", "on"}, {"-1.0", "off"}}) {
    const TuneDir d({}, fixtures::Fixture::MiniMoe);
    int64_t experts_n = 0;
    for (const PlannedLaunch& l : plan_launches(GgufFile::open(d.model), 1).launches)
      if (l.shape().launch == Launch::MulMatIdGlu) experts_n = l.shape().n;
    ASSERT_GT(experts_n, 0);
    const std::map<std::string, std::string> small = {{"--ncols", "1"}, {"--tests", "tg128"}, {"--rounds", "1"},
                                                      {"--replay-tokens", "4"}, {"--replay-rounds", "2"},
                                                      {"--token-probe", FAKE_TOKEN_PROBE}, {"--token-rounds", "5"},
                                                      {"--token-tokens", "8"}};
    const json j = d.run(small, {{"FAKE_TOKEN_GLU_US", glu_us}});
    ASSERT_TRUE(j.is_object());
    const auto glu = std::find_if(j["token"]["coordinates"].begin(), j["token"]["coordinates"].end(),
                                  [](const json& c) { return c["kind"] == "glu_q8_1"; });
    ASSERT_NE(glu, j["token"]["coordinates"].end()) << j["token"].dump();
    EXPECT_EQ((*glu)["norm_k"], experts_n) << glu->dump();
    EXPECT_FALSE((*glu)["samples"].empty()) << glu->dump();  // measured: the experts' kernel writes the copy
    EXPECT_EQ((*glu)["options"][(*glu)["chosen"].get<size_t>()], want) << glu->dump();
    const Profile p = load_profile(d.profile);
    const bool entry = std::any_of(p.entries.begin(), p.entries.end(), [&](const ProfileEntry& e) {
      return e.key.launch == Launch::GluQ8 && e.key.k == experts_n && e.approval == Approval::Approved;
    });
    EXPECT_EQ(entry, want == "on");
  }
}

}  // namespace
