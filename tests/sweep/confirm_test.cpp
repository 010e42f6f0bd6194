// The interleaved confirmation of sweep winners: a genuine win is confirmed, a win that drift
// manufactured is overturned, journals resume without confirming a group twice, --no-confirm keeps
// the old verdicts, and sessions carry confirmations through JSON.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include "sample_session.h"
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

SweepSetup setup_for(std::vector<Shape> shapes, std::vector<int> ncols) {
  SweepSetup s;
  s.shapes = std::move(shapes);
  s.model = {std::string(kSyntheticShape), 0, "", ""};
  s.grid = {std::move(ncols), {1, 2, 4}, {1, 2}, std::string(known_engines()[0]), false};
  s.options.warmup = 3;
  s.options.min_samples = 32;
  s.options.time_cap_s = 0.05;
  s.options.shape_warmup_s = 0;       // launch counts stay exact for cold_launches
  s.options.launches_per_sample = 1;  // ... one launch per sample, so counts are in samples too
  s.options.seed = 11;
  return s;
}

SweepSetup two_shapes() {
  return setup_for({shape(GgmlType::Q4_0, 256, 1024, 32), shape(GgmlType::Q4_K, 128, 2048, 32)}, {1, 2});
}

// The default config of the first shape's ncols-1 group on a plain fake device.
Config default_of(const SweepSetup& setup) {
  FakeDevice probe;
  for (const auto& it : make_plan(setup.shapes, setup.grid, probe).items)
    if (it.is_default) return it.config;
  ADD_FAILURE() << "no default in the plan";
  return {};
}

// 2x2 is genuinely 20% faster than every other config.
FakeDeviceOptions clear_winner_device() {
  FakeDeviceOptions o;
  o.time_model = [](const GemvProblem&, Config c) { return c == Config{2, 2} ? 40.0 : 50.0 + 0.1 * c.nwarps; };
  return o;
}


std::set<GroupKey> confirmed_groups(const std::vector<Confirmation>& cs) {
  std::set<GroupKey> out;
  for (const auto& c : cs) EXPECT_TRUE(out.insert(c.group()).second) << "confirmed twice";
  return out;
}
std::set<GroupKey> winning_groups(const Session& s) {
  std::set<GroupKey> out;
  for (const auto& w : s.verdicts)
    if (w.is_winner()) out.insert(w.group());
  return out;
}

fs::path confirm_dir() {
  const fs::path dir = fs::temp_directory_path() / ("temper-confirm-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// The journal's text without its confirmation lines: what a kill between a group's last result and
// its confirmation leaves behind.
void drop_confirmation_lines(const fs::path& path) {
  std::istringstream in(read_file(path));
  std::string line, kept;
  while (std::getline(in, line))
    if (line.rfind("{\"confirmation\"", 0) != 0) kept += line + "\n";
  write_file_atomic(path, kept);
}

}  // namespace

TEST(Confirm, AGenuinelyFasterConfigIsConfirmedAndStaysTheWinner) {
  FakeDevice dev(clear_winner_device());
  const Session s = run(two_shapes(), dev);
  ASSERT_EQ(s.status, "complete");
  ASSERT_EQ(s.verdicts.size(), 4u);
  // Every group whose default is not 2x2 has a winner, and each was re-measured once.
  EXPECT_FALSE(winning_groups(s).empty());
  EXPECT_EQ(confirmed_groups(s.confirmations), winning_groups(s));
  for (const auto& w : s.verdicts) {
    if (w.default_config == Config{2, 2}) continue;
    EXPECT_EQ(w.verdict, kVerdictWinner);
    EXPECT_EQ(w.config, (Config{2, 2}));
    EXPECT_TRUE(w.confirmed);
    EXPECT_TRUE(w.note.empty()) << w.note;
    const Confirmation* c = find_confirmation(s, w);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->confirmed);
    EXPECT_TRUE(c->failure.empty());
    EXPECT_EQ(c->config, w.config);
    EXPECT_EQ(c->default_config, w.default_config);
    EXPECT_GE(c->default_us.n, 32);
    EXPECT_EQ(c->default_us.n, c->candidate_us.n);  // paired: the same number of batches each
    EXPECT_NEAR(c->candidate_us.median, 40.0, 1.0);
    EXPECT_NEAR(c->default_us.median, 50.0 + 0.1 * w.default_config.nwarps, 1.0);
    // The speedup is the main pass's (as the estimate uses it).
    EXPECT_NEAR(w.speedup, w.default_us / w.best_us, 1e-12);
  }
  EXPECT_NE(format_summary(s).find("winner, confirmed"), std::string::npos) << format_summary(s);
}

// The re-measure alternates which config goes first: default, candidate, then candidate, default.
TEST(Confirm, BatchesAlternateBetweenDefaultAndCandidate) {
  SweepSetup setup = setup_for({shape(GgmlType::Q4_0, 256, 1024)}, {1});
  setup.options.ci_target = 1e-9;  // never converges: runs until confirm_time_s
  setup.options.time_cap_s = 0.01;
  setup.options.confirm_time_s = 0.01;
  const Config def = default_of(setup);
  auto calls = std::make_shared<std::vector<Config>>();  // one entry per time_gemv call
  FakeDeviceOptions o;
  o.time_model = [=](const GemvProblem&, Config c) {
    calls->push_back(c);
    return c == Config{2, 2} ? 40.0 : 50.0;
  };
  FakeDevice dev(o);
  const Session s = run(setup, dev);
  ASSERT_EQ(s.confirmations.size(), 1u);
  EXPECT_TRUE(s.confirmations[0].confirmed);
  EXPECT_FALSE(s.confirmations[0].converged);
  // The confirmation's calls are the last ones: a warm-up of each, then rounds of two batches.
  const int batches = 2 * s.confirmations[0].default_us.n / setup.options.batch;
  ASSERT_GE(batches, 4);
  ASSERT_GE(calls->size(), size_t(batches + 2));
  const std::vector<Config> tail(calls->end() - batches - 2, calls->end());
  EXPECT_EQ(tail[0], def);
  EXPECT_EQ(tail[1], (Config{2, 2}));
  for (int round = 0; round < batches / 2; ++round) {
    const Config first = round % 2 == 0 ? def : Config{2, 2}, second = round % 2 == 0 ? Config{2, 2} : def;
    EXPECT_EQ(tail[size_t(2 + 2 * round)], first) << "round " << round;
    EXPECT_EQ(tail[size_t(3 + 2 * round)], second) << "round " << round;
  }
}

// A fake device that records where in the ring of weight copies each timing call starts.
class RingRecorder final : public Device {
 public:
  explicit RingRecorder(FakeDeviceOptions o) : inner_(std::move(o)) {}
  struct Call {
    const DeviceBuffer* first;
    size_t ring;
    int count;
    std::vector<const DeviceBuffer*> order;
  };
  std::vector<Call> calls;

  const DeviceInfo& info() const override { return inner_.info(); }
  DeviceBuffer alloc(size_t bytes) override { return inner_.alloc(bytes); }
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    inner_.upload(dst, src, bytes, offset);
  }
  void download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset) override {
    inner_.download(dst, src, bytes, offset);
  }
  void fill(DeviceBuffer& dst, uint8_t byte) override { inner_.fill(dst, byte); }
  void quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) override {
    inner_.quantize_q8_1(x, y, k, ncols);
  }
  bool has_kernel(GgmlType type, int ncols, Config c) const override { return inner_.has_kernel(type, ncols, c); }
  void gemv(const GemvProblem& p, Config c, const DeviceBuffer& w, const DeviceBuffer& y, DeviceBuffer& dst) override {
    inner_.gemv(p, c, w, y, dst);
  }
  std::vector<double> time_gemv(const GemvProblem& p, Config c, std::span<const DeviceBuffer* const> copies,
                                const DeviceBuffer& y, DeviceBuffer& dst, int count) override {
    calls.push_back({copies.front(), copies.size(), count, {copies.begin(), copies.end()}});
    return inner_.time_gemv(p, c, copies, y, dst, count);
  }
  double copy_bandwidth_gbs(size_t bytes) override { return inner_.copy_bandwidth_gbs(bytes); }
  std::optional<KernelAttributes> kernel_attributes(GgmlType type, int ncols, Config c) override {
    return inner_.kernel_attributes(type, ncols, c);
  }

 protected:
  void release(void*) noexcept override {}  // buffers belong to the inner device

 private:
  FakeDevice inner_;
};

// Weights rotate per launch across timing calls too: each call starts at the copy after the last
// one the previous call used, so short batches never re-read copies still in the cache.
TEST(Confirm, TimingCallsContinueTheRingOfWeightCopies) {
  SweepSetup setup = setup_for({shape(GgmlType::Q4_0, 256, 1024)}, {1});
  FakeDeviceOptions o = clear_winner_device();
  o.l2_bytes = 8u << 20;  // 2 × 8 MiB / 147 KiB per copy: over a hundred copies, far more than a batch
  RingRecorder dev(o);
  Device* devices[] = {&dev};
  Session s = new_session(setup, devices);
  CancelFlag never{false};
  run_session(s, devices, nullptr, {}, never);
  ASSERT_EQ(s.status, "complete");
  ASSERT_EQ(s.confirmations.size(), 1u);
  ASSERT_GT(dev.calls.size(), 10u);
  const std::vector<const DeviceBuffer*> ring = dev.calls[0].order;
  ASSERT_GT(ring.size(), 100u);
  size_t pos = 0;  // where the next call should start
  for (size_t i = 0; i < dev.calls.size(); ++i) {
    ASSERT_EQ(dev.calls[i].ring, ring.size());
    EXPECT_EQ(dev.calls[i].first, ring[pos]) << "call " << i << " restarted the ring";
    pos = (pos + size_t(dev.calls[i].count)) % ring.size();
  }
}

namespace {
// The candidate is 3% slower than the default on a device that starts cold (see below).
FakeDeviceOptions cold_default_device(const SweepSetup& setup, Config def, Config candidate) {
  FakeDeviceOptions o;
  o.time_model = [=](const GemvProblem&, Config c) { return c == def ? 50.0 : c == candidate ? 51.5 : 60.0; };
  o.cold_launches = setup.options.warmup + setup.options.min_samples;
  o.cold_factor = 1.1;
  return o;
}
}  // namespace

// The device starts cold: the group's default (timed first: 3 warm-up + 32 timed launches) looks
// 10% slow in the main pass, so a config 3% slower than it wins there. The paired re-measure sees
// the truth and the default stays, with the reason.
TEST(Confirm, AWinThatDriftManufacturedIsOverturned) {
  SweepSetup setup = setup_for({shape(GgmlType::Q4_0, 256, 1024)}, {1});
  const Config def = default_of(setup);
  const Config candidate = def == Config{1, 1} ? Config{2, 1} : Config{1, 1};
  FakeDevice dev(cold_default_device(setup, def, candidate));
  const Session s = run(setup, dev);
  ASSERT_EQ(s.status, "complete");
  ASSERT_EQ(s.verdicts.size(), 1u);
  // The main pass alone would have crowned the candidate.
  Session unconfirmed = s;
  unconfirmed.confirmations.clear();
  const Verdict provisional = select_verdicts(unconfirmed)[0];
  ASSERT_EQ(provisional.verdict, kVerdictWinner);
  ASSERT_EQ(provisional.config, candidate);

  const Verdict& w = s.verdicts[0];
  EXPECT_EQ(w.verdict, kVerdictDefaultStays);
  EXPECT_EQ(w.config, def);
  EXPECT_FALSE(w.confirmed);
  EXPECT_DOUBLE_EQ(w.speedup, 1.0);
  EXPECT_DOUBLE_EQ(w.best_us, w.default_us);
  EXPECT_NE(w.note.find("not confirmed by an interleaved re-measure (default 50."), std::string::npos) << w.note;
  EXPECT_NE(w.note.find("candidate 51."), std::string::npos) << w.note;
  ASSERT_EQ(s.confirmations.size(), 1u);
  const Confirmation& c = s.confirmations[0];
  EXPECT_FALSE(c.confirmed);
  EXPECT_EQ(c.config, candidate);
  EXPECT_LT(c.default_us.median, c.candidate_us.median);
  // The estimate follows the verdict: nothing tuned.
  EXPECT_DOUBLE_EQ(s.estimates[0].tuned_us_per_token, s.estimates[0].default_us_per_token);
  const std::string text = format_summary(s);
  EXPECT_NE(text.find("default stays (not confirmed)"), std::string::npos) << text;
  EXPECT_NE(text.find(w.note), std::string::npos) << text;
}

TEST(Confirm, NoConfirmKeepsTheMainPassVerdicts) {
  SweepSetup setup = setup_for({shape(GgmlType::Q4_0, 256, 1024)}, {1});
  setup.options.confirm = false;
  const Config def = default_of(setup);
  const Config candidate = def == Config{1, 1} ? Config{2, 1} : Config{1, 1};
  FakeDevice dev(cold_default_device(setup, def, candidate));
  const Session s = run(setup, dev);
  EXPECT_TRUE(s.confirmations.empty());
  ASSERT_EQ(s.verdicts.size(), 1u);
  EXPECT_EQ(s.verdicts[0].verdict, kVerdictWinner);  // the spurious win stands, as before confirmation
  EXPECT_EQ(s.verdicts[0].config, candidate);
  EXPECT_FALSE(s.verdicts[0].confirmed);
  EXPECT_TRUE(s.verdicts[0].note.empty());
  EXPECT_FALSE(session_from_json(to_json(s), "memory").options.confirm);
  EXPECT_NE(format_summary(s).find("winner, not re-measured"), std::string::npos);
}

// A sweep stopped while confirming (Ctrl-C, or a kill between a group's last result and its
// confirmation line) leaves complete groups without confirmation: a resume confirms each exactly
// once, and a resume of a journal that has them measures nothing at all.
TEST(Confirm, JournalResumeConfirmsCompleteGroupsOnceAndNeverTwice) {
  const fs::path dir = confirm_dir();
  const fs::path path = dir / "c.journal";
  const SweepSetup setup = two_shapes();
  FakeDevice reference_dev(clear_winner_device());
  const Session whole = run(setup, reference_dev);
  ASSERT_GE(winning_groups(whole).size(), 2u);

  // 1. Cancelled at the first confirmation: its group is complete, its confirmation never written.
  FakeDevice dev(clear_winner_device());
  Device* devices[] = {&dev};
  Session s = new_session(setup, devices);
  CancelFlag cancel{false};
  {
    Journal journal = Journal::create(path, s);
    run_session(s, devices, &journal, [&](const Progress& p) {
      if (p.current.rfind("confirming ", 0) == 0) cancel = true;
    }, cancel);
  }
  EXPECT_EQ(s.status, "cancelled");
  EXPECT_TRUE(s.confirmations.empty());
  JournalContents contents = read_journal(path);
  EXPECT_TRUE(contents.confirmations.empty());
  EXPECT_FALSE(contents.results.empty());

  // 2. Resumed: the stopped group and every later one are confirmed.
  Session resumed = resume_session(contents);
  {
    Journal journal = Journal::reopen(path, contents);
    CancelFlag never{false};
    run_session(resumed, devices, &journal, {}, never);
  }
  EXPECT_EQ(resumed.status, "complete");
  EXPECT_EQ(confirmed_groups(resumed.confirmations), winning_groups(whole));
  contents = read_journal(path);
  EXPECT_EQ(confirmed_groups(contents.confirmations), winning_groups(whole));

  // 3. A kill before any confirmation line landed: every complete group is confirmed on resume.
  drop_confirmation_lines(path);
  contents = read_journal(path);
  ASSERT_TRUE(contents.confirmations.empty());
  const size_t results_before = contents.results.size();
  {
    FakeDevice dev2(clear_winner_device());
    Device* devices2[] = {&dev2};
    Session again = resume_session(contents);
    Journal journal = Journal::reopen(path, contents);
    CancelFlag never{false};
    run_session(again, devices2, &journal, {}, never);
    EXPECT_EQ(confirmed_groups(again.confirmations), winning_groups(whole));
    for (const auto& w : again.verdicts) {
      if (w.is_winner()) {
        EXPECT_TRUE(w.confirmed);
      }
    }
  }
  contents = read_journal(path);
  EXPECT_EQ(contents.results.size(), results_before);  // nothing measured twice
  EXPECT_EQ(confirmed_groups(contents.confirmations), winning_groups(whole));

  // 4. Every group confirmed: a resume launches nothing and appends nothing.
  {
    FakeDevice dev3(clear_winner_device());
    Device* devices3[] = {&dev3};
    Session done = resume_session(contents);
    Journal journal = Journal::reopen(path, contents);
    CancelFlag never{false};
    run_session(done, devices3, &journal, {}, never);
    EXPECT_EQ(dev3.launches(), 0);
    EXPECT_EQ(done.confirmations.size(), winning_groups(whole).size());
  }
  EXPECT_EQ(read_journal(path).confirmations.size(), winning_groups(whole).size());
  fs::remove_all(dir);
}

TEST(Confirm, JournalReadsVersion1AndIgnoresARepeatedConfirmation) {
  FakeDevice dev;
  Device* devices[] = {&dev};
  const Session s = new_session(two_shapes(), devices);
  const fs::path dir = confirm_dir();
  const fs::path path = dir / "v.journal";
  { Journal j = Journal::create(path, s); }
  // A version 1 journal (results only) as builds before confirmation wrote it.
  nlohmann::json header = nlohmann::json::parse(read_file(path));
  EXPECT_EQ(header["journal_version"], 2);
  header["journal_version"] = 1;
  header["session"].erase("confirmations");
  header["session"]["options"].erase("confirm");
  header["session"]["options"].erase("confirm_time_s");
  const Result r = test::ok_result(GgmlType::Q4_0, 256, 1024, 1, {4, 1}, 50.0, 0.1, true);
  write_file_atomic(path, header.dump() + "\n" + to_json(r).dump() + "\n");
  JournalContents c = read_journal(path);
  EXPECT_EQ(c.results.size(), 1u);
  EXPECT_TRUE(c.confirmations.empty());
  EXPECT_FALSE(c.header.options.confirm);  // a sweep from before confirmation is not confirmed on resume

  Confirmation conf;
  conf.type = GgmlType::Q4_0;
  conf.n = 256;
  conf.k = 1024;
  conf.default_config = {4, 1};
  conf.config = {2, 1};
  conf.confirmed = true;
  Confirmation second = conf;
  second.confirmed = false;
  c.confirmations = {conf, second};
  const Session resumed = resume_session(c);
  ASSERT_EQ(resumed.confirmations.size(), 1u);
  EXPECT_TRUE(resumed.confirmations[0].confirmed);  // the first line counts
  fs::remove_all(dir);
}

TEST(Confirm, WinnersFollowTheirConfirmation) {
  Session s = test::sample_session();  // q4_K: 2x1 beats the default 4x1 in the main pass
  Confirmation c;
  c.type = GgmlType::Q4_K;
  c.n = 14336;
  c.k = 4096;
  c.ncols = 1;
  c.default_config = {4, 1};
  c.config = {2, 1};
  c.default_us = {64, 100.2, 0, 0, 0, 0, 100.0, 100.4, 0.95};
  c.candidate_us = {64, 90.1, 0, 0, 0, 0, 89.9, 90.3, 0.95};
  c.confirmed = true;
  s.confirmations = {c};
  Verdict w = select_verdicts(s)[0];
  EXPECT_EQ(w.verdict, kVerdictWinner);
  EXPECT_TRUE(w.confirmed);
  EXPECT_NEAR(w.speedup, 100.0 / 90.0, 1e-12);  // from the main results

  s.confirmations[0].confirmed = false;
  s.confirmations[0].candidate_us.median = 100.7;
  w = select_verdicts(s)[0];
  EXPECT_EQ(w.verdict, kVerdictDefaultStays);
  EXPECT_EQ(w.config, (Config{4, 1}));
  EXPECT_FALSE(w.confirmed);
  EXPECT_EQ(w.note, "2x1 not confirmed by an interleaved re-measure (default 100.20 µs, candidate 100.70 µs)");
  EXPECT_DOUBLE_EQ(w.speedup_low, 1.0);
  finish_session(s);
  EXPECT_EQ(s.estimates[0].shapes[0].tuned_config, (Config{4, 1}));

  s.confirmations[0].failure = "GpuFault: launch failed";
  EXPECT_NE(select_verdicts(s)[0].note.find("it could not run: GpuFault: launch failed"), std::string::npos);

  // A re-measure of another candidate says nothing about this winner.
  s.confirmations[0].config = {1, 2};
  w = select_verdicts(s)[0];
  EXPECT_EQ(w.verdict, kVerdictWinner);
  EXPECT_FALSE(w.confirmed);
  EXPECT_TRUE(w.note.empty());
  // The q6_K group (default stays) has no confirmation and is untouched.
  EXPECT_EQ(select_verdicts(s)[1].verdict, kVerdictDefaultStays);
  EXPECT_TRUE(select_verdicts(s)[1].note.empty());
}

TEST(Confirm, SessionsCarryConfirmationsThroughJsonAndOlderFilesLoad) {
  FakeDevice dev(clear_winner_device());
  const Session s = run(two_shapes(), dev);
  ASSERT_FALSE(s.confirmations.empty());
  const nlohmann::json j = to_json(s);
  ASSERT_TRUE(j.contains("confirmations"));
  const Session back = session_from_json(j, "memory");
  EXPECT_EQ(to_json(back), j);
  ASSERT_EQ(back.confirmations.size(), s.confirmations.size());
  EXPECT_EQ(back.confirmations[0].candidate_us.median, s.confirmations[0].candidate_us.median);
  EXPECT_TRUE(back.options.confirm);
  const fs::path path = confirm_dir() / "s.json";
  save_session(s, path);
  EXPECT_EQ(to_json(load_session(path)), j);
  fs::remove_all(path.parent_path());

  // A session from before confirmation: no confirmations, winners without confirmed/note, options
  // without confirm. It loads, and its verdicts are today's.
  nlohmann::json old = to_json(test::sample_session());
  old.erase("confirmations");
  old["options"].erase("confirm");
  old["options"].erase("confirm_time_s");
  Session loaded = session_from_json(old, "old.json");
  EXPECT_TRUE(loaded.confirmations.empty());
  EXPECT_FALSE(loaded.options.confirm);
  finish_session(loaded);
  Session fresh = test::sample_session();
  finish_session(fresh);
  const nlohmann::json today = to_json(fresh)["winners"];
  ASSERT_EQ(to_json(loaded)["winners"], today);
  for (const auto& w : today) {
    EXPECT_EQ(w["confirmed"], false);
    EXPECT_EQ(w["note"], "");
  }
  EXPECT_EQ(loaded.verdicts[0].verdict, kVerdictWinner);
}

TEST(Confirm, OptionsAreValidated) {
  FakeDevice dev;
  Device* devices[] = {&dev};
  SweepSetup setup = two_shapes();
  setup.options.confirm_time_s = 0;
  EXPECT_THROW(new_session(setup, devices), Error);
  setup.options.confirm = false;  // the time does not matter then
  EXPECT_NO_THROW(new_session(setup, devices));
}
