// Crash safety of the sweep journal (issue 10): a real `temper sweep --backend fake` process is
// killed with SIGKILL at random moments 20 times and resumed each time. No result may be journaled
// twice, none that was journaled may disappear, and the final session must hold exactly the
// results of an uninterrupted sweep.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "temper/sweep.h"

using namespace temper;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSweepArgs = {"sweep",     "--backend",        "fake", "--shape",
                                             "q4_0:256:1024,q4_K:128:2048",   "--ncols", "1,2",
                                             "--nwarps",  "1,2,4,8",            "--rows-per-block", "1,2",
                                             "--seed",    "5",                "--time-cap", "0.05",
                                             "--back-to-back", "1"};

// Starts temper with `args`; the fake device sleeps per launch so a sweep lasts long enough to kill.
pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(TEMPER_EXE)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::setenv("TEMPER_FAKE_SLEEP_US", "1200", 1);
    // Quiet: the test judges files, not text.
    FILE* null = std::fopen("/dev/null", "w");
    if (null) {
      ::dup2(::fileno(null), 1);
      ::dup2(::fileno(null), 2);
    }
    ::execv(TEMPER_EXE, argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

uintmax_t journal_size(const fs::path& journal) {
  std::error_code ec;
  const uintmax_t n = fs::file_size(journal, ec);
  return ec ? 0 : n;
}

// Waits until `journal` is larger than `before` bytes; false if the process ended first.
bool await_journal_growth(pid_t pid, const fs::path& journal, uintmax_t before) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (journal_size(journal) > before) return true;
    siginfo_t info{};  // peeks without reaping: wait_exit collects the status
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;  // kill it anyway: a hung sweep must not hang the test
}

using Key = std::tuple<int, GgmlType, int, int, int, int, int>;
Key key_of(const Result& r) { return {r.device, r.type, r.n, r.k, r.ncols, r.config.nwarps, r.config.rows_per_block}; }

std::set<Key> measured_keys(const Session& s) {
  std::set<Key> out;
  for (const auto& r : s.results)
    if (r.status != ResultStatus::Invalid) EXPECT_TRUE(out.insert(key_of(r)).second) << "a result appears twice";
  return out;
}

// Removes a test's directory however the test ends.
struct RemovedAtExit {
  fs::path dir;
  ~RemovedAtExit() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST(KillResume, TwentySigkillsLoseNothingAndDuplicateNothing) {
  const fs::path dir = fs::temp_directory_path() / ("temper-kill-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const RemovedAtExit cleanup{dir};  // also when an assertion ends the test early
  const fs::path reference = dir / "reference.json", output = dir / "killed.json";
  const fs::path journal = output.string() + ".journal";

  auto args = kSweepArgs;
  args.insert(args.end(), {"-o", reference.string()});
  ASSERT_EQ(wait_exit(spawn(args)), 0) << "uninterrupted sweep failed";
  const std::set<Key> expected = measured_keys(load_session(reference));
  ASSERT_GT(expected.size(), 20u);

  std::mt19937 rng(20261123);
  std::uniform_int_distribution<int> delay_ms(0, 30);
  size_t journaled = 0;
  int kills = 0, restarts_without_journal = 0;
  for (int attempt = 0; kills < 20 && attempt < 200; ++attempt) {
    std::vector<std::string> run;
    if (fs::exists(journal)) {
      run = {"sweep", "--resume", journal.string()};
    } else if (fs::exists(output) && load_session(output).status == "complete") {
      break;  // killed between saving the session and exiting
    } else {
      run = kSweepArgs;
      run.insert(run.end(), {"-o", output.string()});
      ++restarts_without_journal;
    }
    const pid_t pid = spawn(run);
    // Every fourth kill lands during start-up; the others after the run has journaled something
    // new, so each kill interrupts real work however slow the machine is.
    if (attempt % 4 != 3 && !await_journal_growth(pid, journal, journal_size(journal))) {
      const int rc = wait_exit(pid);
      if (rc == 0) break;  // finished before the kill: nothing left to interrupt
      FAIL() << "temper exited with " << rc << " before it was killed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    ::kill(pid, SIGKILL);
    const int rc = wait_exit(pid);
    if (rc == 0) break;
    ASSERT_EQ(rc, -SIGKILL) << "temper exited with " << rc << " instead of being killed";
    ++kills;
    if (!fs::exists(journal)) continue;  // killed before the journal's header was written
    const JournalContents c = read_journal(journal);  // must parse: only the last line may be torn
    std::set<Key> keys;
    for (const auto& r : c.results) EXPECT_TRUE(keys.insert(key_of(r)).second) << "journaled twice after kill " << kills;
    EXPECT_GE(c.results.size(), journaled) << "results lost after kill " << kills;
    journaled = c.results.size();
  }
  EXPECT_EQ(kills, 20) << "the sweep finished before it could be killed 20 times";
  EXPECT_LE(restarts_without_journal, 3);

  // Let the last resume run to the end.
  if (fs::exists(journal)) ASSERT_EQ(wait_exit(spawn({"sweep", "--resume", journal.string()})), 0);
  const Session final_session = load_session(output);
  EXPECT_EQ(final_session.status, "complete");
  EXPECT_EQ(measured_keys(final_session), expected);
  EXPECT_FALSE(fs::exists(journal)) << "a complete sweep removes its journal";
}
