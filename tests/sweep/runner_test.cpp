// The sweep engine end to end on the fake device: plan, verification, timing, winners, faults,
// cancellation, journal and resume.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "temper/error.h"
#include "fake_sweep.h"
#include "temper/fake_backend.h"
#include "temper/fileio.h"
#include "temper/sweep.h"

using namespace temper;
namespace fs = std::filesystem;

namespace {

using test::run;
using test::shape;

SweepSetup small_setup() {
  SweepSetup s;
  s.shapes = {shape(GgmlType::Q4_0, 256, 1024, 32), shape(GgmlType::Q4_K, 128, 2048, 32)};
  s.model = {std::string(kSyntheticShape), 0, "", ""};
  s.grid = {{1, 2}, {1, 2, 4}, {1, 2}, std::string(known_engines()[0]), false};
  s.options.min_samples = 32;
  s.options.time_cap_s = 0.05;
  s.options.shape_warmup_s = 0;  // launch counts stay exact for the fault knobs (lose_after_launches)
  s.options.seed = 7;
  return s;
}

using Key = std::tuple<int, GgmlType, int, int, int, int, int>;
std::set<Key> keys(const Session& s, bool measured_only = true) {
  std::set<Key> out;
  for (const auto& r : s.results)
    if (!measured_only || r.status != ResultStatus::Invalid)
      out.insert({r.device, r.type, r.n, r.k, r.ncols, r.config.nwarps, r.config.rows_per_block});
  return out;
}

fs::path runner_dir() {
  const fs::path dir = fs::temp_directory_path() / ("temper-runner-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}


}  // namespace

TEST(Plan, DefaultFirstLargestShapeFirstAndReasonsForExclusions) {
  FakeDeviceOptions o;
  o.missing_configs = {{4, 2}};
  FakeDevice dev(o);
  std::vector<Shape> shapes = {shape(GgmlType::Q4_0, 256, 1024, 1), shape(GgmlType::Q4_K, 4096, 4096, 1),
                               shape(GgmlType::Q4_K, 64, 100, 1), shape(GgmlType::F16, 64, 64, 1),
                               shape(GgmlType::Q4_0, 256, 1024, 1)};
  shapes[2].bytes_per_token = 2;  // K = 100 has no q4_K row size; ordered before the f16 shape
  shapes[3].bytes_per_token = 1;
  PlanGrid grid = full_grid(std::string(known_engines()[0]));
  grid.ncols = {4, 1};
  const Plan plan = make_plan(shapes, grid, dev);
  ASSERT_FALSE(plan.items.empty());
  EXPECT_EQ(plan.defaults_table, "GENERIC");
  // q4_K 4096x4096 has the most bytes: measured first, ncols ascending, default first.
  EXPECT_EQ(plan.items[0].type, GgmlType::Q4_K);
  EXPECT_EQ(plan.items[0].ncols, 1);
  EXPECT_TRUE(plan.items[0].is_default);
  EXPECT_EQ(plan.items[0].config, (Config{4, 1}));
  size_t defaults = 0;
  std::set<std::tuple<GgmlType, int, int, int, int>> unique;
  for (const auto& it : plan.items) {
    defaults += it.is_default;
    EXPECT_TRUE(unique.insert({it.type, it.n, it.ncols, it.config.nwarps, it.config.rows_per_block}).second)
        << "duplicate item";
  }
  EXPECT_EQ(defaults, 2u);  // 2 shapes at ncols 1 (duplicate measured once; ncols-4 defaults have no kernel)
  // The ncols-4 default {4, 2} has no kernel: excluded with the reason, flagged as the default.
  bool saw_missing_default = false;
  for (const auto& e : plan.excluded)
    if (e.config == Config{4, 2} && e.ncols == 4) {
      saw_missing_default = true;
      EXPECT_TRUE(e.is_default);
      EXPECT_NE(e.reason.find("no kernel"), std::string::npos) << e.reason;
      EXPECT_NE(e.reason.find("no baseline"), std::string::npos) << e.reason;
    }
  EXPECT_TRUE(saw_missing_default);
  ASSERT_EQ(plan.skipped_shapes.size(), 2u);
  EXPECT_NE(plan.skipped_shapes[0].reason.find("not a whole number"), std::string::npos) << plan.skipped_shapes[0].reason;
  EXPECT_NE(plan.skipped_shapes[1].reason.find("f16"), std::string::npos) << plan.skipped_shapes[1].reason;
}

TEST(Plan, WideBlocksAreExcludedOnWave64) {
  FakeDeviceOptions o;
  o.warp_size = 64;
  o.arch = "gfx90a";
  FakeDevice dev(o);
  const std::vector<Shape> shapes = {shape(GgmlType::Q8_0, 64, 512)};
  PlanGrid grid = full_grid(std::string(known_engines()[0]));
  grid.nwarps = {1, 16};
  grid.ncols = {1};
  const Plan plan = make_plan(shapes, grid, dev);
  EXPECT_EQ(plan.defaults_table, "GCN");
  // GCN at ncols 1: 2 warps; K = 512 is 16 q8_0 blocks, less than one pass of the block
  // (2 warps × vdr 2 × 64 lanes / qi 8 = 32 blocks), so the engine launches the small-K variant.
  EXPECT_EQ(plan.items[0].config, (Config{2, 2}));
  EXPECT_TRUE(plan.items[0].is_default);
  EXPECT_TRUE(plan.items[0].is_small_k);
  for (const auto& it : plan.items) EXPECT_LE(it.config.nwarps * 64, 1024);
}

TEST(Plan, GridValidationNamesTheBadValue) {
  PlanGrid g = quick_grid(std::string(known_engines()[0]));
  g.nwarps = {3};
  try {
    validate_grid(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("nwarps value 3"), std::string::npos);
  }
  g = quick_grid("llama-0");
  EXPECT_THROW(validate_grid(g), Error);
  g = quick_grid(std::string(known_engines()[0]));
  g.ncols = {1, 9};
  EXPECT_THROW(validate_grid(g), Error);
}

// The duration shown before a sweep counts what it will launch: back-to-back samples and the
// interleaved confirmation of each (shape, ncols) group.
TEST(Plan, EstimateCountsLaunchesPerSampleAndConfirmations) {
  FakeDevice dev;
  const Plan plan = make_plan(small_setup().shapes, small_setup().grid, dev);
  SweepOptions one;
  one.launches_per_sample = 1;
  one.confirm = false;
  one.time_cap_s = 100;  // no cap: the estimate is launches × time per launch
  SweepOptions eight = one;
  eight.launches_per_sample = 8;
  SweepOptions confirmed = eight;
  confirmed.confirm = true;
  const double a = estimated_seconds(plan, one, 1000), b = estimated_seconds(plan, eight, 1000),
               c = estimated_seconds(plan, confirmed, 1000);
  EXPECT_GT(b, 3 * a);  // 8× the timed launches, plus the same data preparation
  EXPECT_GT(c, b);
  EXPECT_LE(c - b, double(plan.items.size()) * confirmed.confirm_time_s);
}

TEST(Sweep, MeasuresEveryItemAndNeverLetsAWrongKernelWin) {
  FakeDeviceOptions o;
  o.wrong_configs = {{1, 1}};
  // {1,1} would be by far the fastest; {2,2} clearly beats the default; the rest are slower.
  o.time_model = [](const GemvProblem&, Config c) {
    if (c == Config{1, 1}) return 10.0;
    if (c == Config{2, 2}) return 40.0;
    return 50.0 + c.nwarps + c.rows_per_block;
  };
  FakeDevice dev(o);
  std::vector<Progress> seen;
  const Session s = run(small_setup(), dev, nullptr, [&](const Progress& p) { seen.push_back(p); });
  EXPECT_EQ(s.status, "complete");
  const size_t items = s.devices[0].plan.items.size();
  EXPECT_EQ(keys(s).size(), items);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().done, items);
  EXPECT_EQ(seen.back().total, items);
  for (const auto& r : s.results) {
    if (r.config == Config{1, 1}) {
      EXPECT_EQ(r.status, ResultStatus::Failed);
      EXPECT_GT(r.worst_error_ratio, 1.0);
      EXPECT_EQ(r.time_us.n, 0);
    } else {
      ASSERT_EQ(r.status, ResultStatus::Ok) << r.failure;
      EXPECT_LE(r.worst_error_ratio, 1.0);
      EXPECT_GE(r.time_us.n, 32);
      EXPECT_TRUE(r.converged);
      EXPECT_GT(r.gbs, 0);
      EXPECT_TRUE(r.kernel.has_value());
      EXPECT_GE(r.weight_copies, 2);  // 2 × 1 MiB of L2 needs several copies of these small shapes
      // The samples' order is kept (condensed), around the same median.
      EXPECT_FALSE(r.trace_us.empty());
      EXPECT_LE(r.trace_us.size(), std::min<size_t>(64, size_t(r.time_us.n)));
      for (double t : r.trace_us) EXPECT_TRUE(t >= r.time_us.min && t <= r.time_us.max);
    }
  }
  ASSERT_EQ(s.verdicts.size(), 4u);  // 2 shapes × 2 ncols
  int beaten = 0;  // verdicts whose default is not already the fastest config
  for (const auto& w : s.verdicts) {
    EXPECT_NE(w.config, (Config{1, 1}));
    if (w.default_config != Config{2, 2}) {
      ++beaten;
      EXPECT_EQ(w.verdict, kVerdictWinner);
      EXPECT_EQ(w.config, (Config{2, 2}));
      EXPECT_GT(w.speedup_low, 1.0);
    }
  }
  EXPECT_EQ(beaten, 4);  // no default here is 2×2: every verdict is a checked win
  ASSERT_EQ(s.estimates.size(), 1u);
  EXPECT_EQ(s.estimates[0].shapes_measured, 2);
  EXPECT_LT(s.estimates[0].tuned_us_per_token, s.estimates[0].default_us_per_token);
}

TEST(Sweep, NoiseKeepsTheDefault) {
  FakeDeviceOptions o;
  o.jitter = 0.02;
  o.time_model = [](const GemvProblem&, Config) { return 50.0; };  // every config the same
  FakeDevice dev(o);
  const Session s = run(small_setup(), dev);
  ASSERT_EQ(s.verdicts.size(), 4u);  // a verdict per shape and ncols, each keeping the default
  for (const auto& w : s.verdicts) EXPECT_EQ(w.verdict, kVerdictDefaultStays);
  EXPECT_DOUBLE_EQ(s.estimates[0].tuned_us_per_token, s.estimates[0].default_us_per_token);
}

TEST(Sweep, DeviceLostKeepsEverythingMeasuredAndSaysWhy) {
  FakeDeviceOptions o;
  o.lose_after_launches = 500;
  FakeDevice dev(o);
  const Session s = run(small_setup(), dev);
  EXPECT_EQ(s.status, "failed");
  EXPECT_NE(s.devices[0].error.find("device lost"), std::string::npos) << s.devices[0].error;
  const size_t measured = keys(s).size();
  EXPECT_GT(measured, 0u);
  EXPECT_LT(measured, s.devices[0].plan.items.size());
  for (const auto& r : s.results) EXPECT_NE(r.status, ResultStatus::Error) << r.failure;
}

TEST(Sweep, OutOfMemoryOnAHugeShapeSkipsItWithTheReason) {
  FakeDeviceOptions o;
  o.memory_bytes = 4u << 20;
  FakeDevice dev(o);
  SweepSetup setup = small_setup();
  setup.shapes.push_back(shape(GgmlType::Q8_0, 8192, 4096, 1000));  // 35 MB: largest, measured first
  setup.options.memory_fraction = 1.0;
  const Session s = run(setup, dev);
  EXPECT_EQ(s.status, "complete");
  int oom = 0, ok = 0;
  for (const auto& r : s.results) {
    if (r.type == GgmlType::Q8_0) {
      EXPECT_EQ(r.status, ResultStatus::Error);
      EXPECT_NE(r.failure.find("out of memory"), std::string::npos) << r.failure;
      ++oom;
    } else {
      ok += r.status == ResultStatus::Ok;
    }
  }
  EXPECT_GT(oom, 0);
  EXPECT_GT(ok, 0);
}

// Options also arrive from a resumed journal, which nothing but the reader has checked.
TEST(Sweep, OptionsFromAJournalAreCheckedBeforeAnyLaunch) {
  FakeDevice dev;
  Device* devices[] = {&dev};
  Session s = new_session(small_setup(), devices);
  s.options.launches_per_sample = 0;
  CancelFlag never{false};
  try {
    run_session(s, devices, nullptr, {}, never);
    FAIL() << "a sample of zero launches was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("launches per sample"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dev.launches(), 0);
}

TEST(Sweep, CancelIsHonouredWithinASecond) {
  FakeDeviceOptions o;
  o.sleep_per_launch_us = 2000;  // a slow kernel: 16 launches per batch = 32 ms
  FakeDevice dev(o);
  CancelFlag cancel{false};
  std::chrono::steady_clock::time_point cancelled_at;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancelled_at = std::chrono::steady_clock::now();
    cancel = true;
  });
  SweepSetup setup = small_setup();
  setup.options.time_cap_s = 10;
  setup.options.launches_per_sample = 1;
  setup.options.ci_target = 1e-9;  // never converges: only the cancel can stop it
  const Session s = run(setup, dev, nullptr, {}, &cancel);
  const double latency = std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelled_at).count();
  stopper.join();
  EXPECT_EQ(s.status, "cancelled");
  EXPECT_LT(latency, 1.0);
  EXPECT_LT(keys(s).size(), s.devices[0].plan.items.size());
}

TEST(Sweep, DevicesRunInParallelAndTagTheirResults) {
  FakeBackend backend({}, 2);
  auto devices = open_all(backend);
  ASSERT_EQ(devices.size(), 2u);
  std::vector<Device*> ptrs{devices[0].get(), devices[1].get()};
  Session s = new_session(small_setup(), ptrs);
  CancelFlag cancel{false};
  run_session(s, ptrs, nullptr, {}, cancel);
  EXPECT_EQ(s.status, "complete");
  std::set<int> tags;
  for (const auto& r : s.results) tags.insert(r.device);
  EXPECT_EQ(tags, (std::set<int>{0, 1}));
  EXPECT_EQ(keys(s).size(), s.devices[0].plan.items.size() + s.devices[1].plan.items.size());
  EXPECT_EQ(s.estimates.size(), 2u);
}

TEST(Journal, RecordsEveryResultAndResumesWhereItStopped) {
  const fs::path path = runner_dir() / "a.journal";
  FakeDevice reference_dev;
  const Session whole = run(small_setup(), reference_dev);

  // First run: cancelled after 5 results.
  FakeDevice dev;
  Device* devices[] = {&dev};
  Session s = new_session(small_setup(), devices);
  CancelFlag cancel{false};
  {
    Journal journal = Journal::create(path, s);
    run_session(s, devices, &journal, [&](const Progress& p) { if (p.done >= 5) cancel = true; }, cancel);
  }
  EXPECT_EQ(s.status, "cancelled");
  JournalContents contents = read_journal(path);
  EXPECT_EQ(contents.results.size(), 5u);
  EXPECT_FALSE(contents.dropped_last_line);
  EXPECT_EQ(contents.header.id, s.id);
  EXPECT_EQ(contents.header.options.seed, s.options.seed);

  // A crash tore the next line: it is dropped, and the journal continues cleanly after resume.
  {
    std::ofstream f(path, std::ios::app | std::ios::binary);
    f << "{\"device\": 0, \"type\": \"q4_0\", \"n\": 25";
  }
  contents = read_journal(path);
  EXPECT_TRUE(contents.dropped_last_line);
  EXPECT_EQ(contents.results.size(), 5u);
  Session resumed = resume_session(contents);
  {
    Journal journal = Journal::reopen(path, contents);
    CancelFlag never{false};
    run_session(resumed, devices, &journal, {}, never);
  }
  EXPECT_EQ(resumed.status, "complete");
  EXPECT_EQ(keys(resumed), keys(whole));
  const JournalContents after = read_journal(path);
  EXPECT_FALSE(after.dropped_last_line);
  EXPECT_EQ(after.results.size(), keys(whole).size());  // no duplicates, nothing lost
  fs::remove_all(path.parent_path());
}

TEST(Journal, DamageBeforeTheLastLineIsRefused) {
  const fs::path dir = runner_dir();
  FakeDevice dev;
  Device* devices[] = {&dev};
  const Session s = new_session(small_setup(), devices);
  const fs::path path = dir / "b.journal";
  { Journal j = Journal::create(path, s); }
  std::string text = read_file(path);
  write_file_atomic(path, text + "garbage\n{\"also\": 1}\n");
  try {
    read_journal(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("b.journal:2"), std::string::npos) << e.what();
  }
  write_file_atomic(path, "{\"hello\": 1}\n");
  EXPECT_THROW(read_journal(path), Error);
  write_file_atomic(path, "");
  EXPECT_THROW(read_journal(path), Error);
  fs::remove_all(dir);
}

TEST(Journal, ResumeDropsDuplicateLines) {
  FakeDevice dev;
  Device* devices[] = {&dev};
  JournalContents c;
  c.header = new_session(small_setup(), devices);
  Result r;
  r.type = GgmlType::Q4_0;
  r.n = 256;
  r.k = 1024;
  r.config = {4, 1};
  c.results = {r, r};
  EXPECT_EQ(resume_session(c).results.size(), 1u);
}

TEST(Journal, ResumingOnAnotherDeviceIsRefused) {
  FakeDevice dev;
  Device* devices[] = {&dev};
  Session s = new_session(small_setup(), devices);
  FakeDeviceOptions other;
  other.name = "Another fake";
  FakeDevice dev2(other);
  Device* devices2[] = {&dev2};
  CancelFlag never{false};
  EXPECT_THROW(run_session(s, devices2, nullptr, {}, never), Error);
}

// Disk full mid-sweep (injected with RLIMIT_FSIZE in a child process): the sweep stops with the
// journal's I/O error, keeps everything it recorded, the journal still reads (at most its last line
// torn) and a failed session save leaves the previous session file whole.
TEST(Journal, WriteFailureStopsTheSweepAndKeepsWhatWasRecorded) {
  const fs::path dir = runner_dir();
  const fs::path path = dir / "full.journal", saved = dir / "full.session.json";
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto check = [](bool ok, int code) {
      if (!ok) ::_exit(code);
    };
    std::signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead of killing us
    FakeDevice dev;
    Device* devices[] = {&dev};
    Session s = new_session(small_setup(), devices);
    Journal journal = Journal::create(path, s);
    save_session(s, saved);  // the previous, whole session file
    const std::string before = read_file(saved);
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = rlim_t(fs::file_size(path) + 6000);  // room for a few results
    check(::setrlimit(RLIMIT_FSIZE, &limit) == 0, 10);
    CancelFlag never{false};
    run_session(s, devices, &journal, {}, never);
    check(s.status == "failed", 11);
    check(s.devices[0].error.find("cannot append to journal") != std::string::npos, 12);
    const JournalContents c = read_journal(path);
    check(!c.results.empty() && c.results.size() == s.results.size() - std::count_if(s.results.begin(), s.results.end(), [](const Result& r) { return r.status == ResultStatus::Invalid; }), 13);
    // Saving the session now fails (the file is too big for the limit) and must leave the old one.
    bool threw = false;
    try {
      save_session(s, saved);
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::Io;
    }
    check(threw, 14);
    check(read_file(saved) == before, 15);
    for (const auto& entry : fs::directory_iterator(path.parent_path()))
      check(entry.path() == path || entry.path() == saved, 16);  // no temporary left behind
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check " << WEXITSTATUS(status) << " failed in the child";
  fs::remove_all(dir);
}
