// Issue 32 (3): other programs run from an argv, never a shell command line: what a user typed
// reaches the program as one argument, whatever characters it holds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "temper/error.h"
#include "temper/process.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}

// Whether pid has ended within a second: gone, or dead and waiting for whoever adopted it (state Z).
bool gone(pid_t pid) {
  for (int i = 0; i < 100; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    if (::kill(pid, 0) != 0) return true;
    std::stringstream stat;
    stat << std::ifstream("/proc/" + std::to_string(pid) + "/stat").rdbuf();
    const std::string s = stat.str();
    const size_t paren = s.rfind(')');
    if (paren != std::string::npos && s.size() > paren + 2 && s[paren + 2] == 'Z') return true;
  }
  return false;
}

// (3) Arguments reach the program as they are: no shell sees them.
TEST(Process, ArgumentsAreNeverInterpretedByAShell) {
  const fs::path marker = fs::temp_directory_path() / ("temper-process-" + std::to_string(::getpid()));
  fs::remove(marker);
  std::string out;
  ProcessOptions o;
  o.capture = &out;
  const std::string hostile = "sm_90;touch " + marker.string() + ";#";
  EXPECT_EQ(run_process({"printf", "[%s]", hostile, "$(id)", "a b", "*"}, o), 0);
  EXPECT_EQ(out, "[" + hostile + "][$(id)][a b][*]");
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(command_text({"cmake", "-DX=a b", "it's"}), "cmake '-DX=a b' 'it'\\''s'");
}

TEST(Process, StatusLinesEnvironmentAndErrors) {
  std::vector<std::string> lines;
  ProcessOptions o;
  o.env = {"TEMPER_PROCESS_TEST=seen"};
  o.on_line = [&](const std::string& l) { lines.push_back(l); };
  EXPECT_EQ(run_process({"env"}, o), 0);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "TEMPER_PROCESS_TEST=seen"), lines.end());
  EXPECT_EQ(run_process({"false"}), 1);
  ErrorKind kind{};
  EXPECT_NE(error_of([] { run_process({"temper-no-such-program-32"}); }, &kind).find("cannot run temper-no-such-program-32"),
            std::string::npos);
  EXPECT_EQ(kind, ErrorKind::Io);
  EXPECT_FALSE(process_output({"temper-no-such-program-32"}).has_value());
  EXPECT_EQ(process_output({"sh", "-c", "echo out; echo err >&2"}), "out\nerr\n");
  EXPECT_EQ(process_output({"sh", "-c", "echo out; echo err >&2"}, /*with_stderr=*/false), "out\n");
}

TEST(Process, CancelStopsTheProgram) {
  std::atomic<bool> cancel{false};
  ProcessOptions o;
  o.cancel = &cancel;
  o.own_group = true;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run_process({"sleep", "30"}, o), kCancelled);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// stderr read apart: only stdout is logged, captured and split into lines; a full stderr pipe
// (more than the pipe holds) does not stall a program that writes stdout after it.
TEST(Process, StderrApartFromStdout) {
  const fs::path log = fs::temp_directory_path() / ("temper-process-log-" + std::to_string(::getpid()));
  std::string out, err;
  std::vector<std::string> lines;
  ProcessOptions o;
  o.log = log;
  o.truncate_log = true;
  o.capture = &out;
  o.capture_stderr = &err;
  o.on_line = [&](const std::string& l) { lines.push_back(l); };
  const std::string script = "echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 3";
  EXPECT_EQ(run_process({"sh", "-c", script}, o), 3);
  EXPECT_EQ(out, "out1\nout2\n");
  EXPECT_EQ(err, "err1\nerr2\n");
  EXPECT_EQ(lines, (std::vector<std::string>{"out1", "out2"}));
  std::stringstream logged;
  logged << std::ifstream(log).rdbuf();
  EXPECT_EQ(logged.str(), "$ sh -c '" + script + "'\nout1\nout2\n");
  fs::remove(log);

  out.clear(), err.clear(), lines.clear();
  o.log.clear();
  EXPECT_EQ(run_process({"sh", "-c", "head -c 300000 /dev/zero >&2; echo done"}, o), 0);
  EXPECT_EQ(err, std::string(300000, '\0'));
  EXPECT_EQ(out, "done\n");
}

// With kill_after, a program that ignores SIGTERM is SIGKILLed that much later, its whole group with
// own_group (here a child of the shell that ignores SIGTERM too).
TEST(Process, IgnoredSigtermIsFollowedBySigkill) {
  std::atomic<bool> cancel{false};
  pid_t background = 0;
  ProcessOptions o;
  o.cancel = &cancel;
  o.kill_after = std::chrono::seconds(2);
  o.own_group = true;
  o.on_line = [&](const std::string& l) {  // SIGTERM ignored from here on: cancel now
    background = std::atoi(l.c_str());
    cancel = true;
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run_process({"sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"}, o), kCancelled);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(1900));
  EXPECT_LT(took, std::chrono::seconds(3));
  ASSERT_GT(background, 0);
  EXPECT_TRUE(gone(background)) << "the shell's sleep " << background << " outlived the cancel";
}

// die_with_parent: the program has PR_SET_PDEATHSIG SIGKILL (without it, none), and dies when the
// process that ran it is killed with -9.
// Issue 51 (12): a program is bounded in time and in output, and its end ends the wait even when
// something it left behind keeps its output open.
TEST(Process, TimeoutOutputBoundAndLeftoversHoldingTheOutput) {
  ProcessOptions o;
  std::string out;
  o.capture = &out;
  o.own_group = true;
  o.timeout = std::chrono::milliseconds(300);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_process({"sleep", "30"}, o), kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));

  o.timeout = std::chrono::milliseconds(0);
  o.max_capture = 1 << 20;
  EXPECT_EQ(run_process({"yes"}, o), kOutputTooLarge);
  EXPECT_LE(out.size(), size_t(1) << 20);
  std::string err;
  o.capture_stderr = &err;
  out.clear();
  EXPECT_EQ(run_process({"sh", "-c", "yes >&2"}, o), kOutputTooLarge);
  EXPECT_LE(err.size(), size_t(1) << 20);

  // The shell ends at once; the sleep it started holds stdout for 30 s: not waited for.
  o.max_capture = 0;
  o.capture_stderr = nullptr;
  out.clear();
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_process({"sh", "-c", "sleep 30 & echo started; exit 3"}, o), 3);
  EXPECT_EQ(out, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(Process, DieWithParentSetsPdeathsigAndTheChildDiesWithIt) {
  EXPECT_EQ(process_output({PDEATHSIG_CHILD}).value_or("").substr(0, 2), "0 ");
  ProcessOptions o;
  std::string out;
  o.capture = &out;
  o.die_with_parent = true;
  EXPECT_EQ(run_process({PDEATHSIG_CHILD}, o), 0);
  EXPECT_EQ(out.substr(0, 2), std::to_string(SIGKILL) + " ");

  int report[2];
  ASSERT_EQ(::pipe2(report, O_CLOEXEC), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {  // the parent of the run: tells its pid, then is killed while it runs
    ::close(report[0]);
    ProcessOptions p;
    p.die_with_parent = true;
    p.on_line = [&](const std::string& l) { [[maybe_unused]] const ssize_t n = ::write(report[1], l.data(), l.size()); };
    try {
      run_process({PDEATHSIG_CHILD, "30"}, p);
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(report[1]);
  char buf[64] = {};
  const ssize_t n = ::read(report[0], buf, sizeof buf - 1);
  ::close(report[0]);
  ::kill(parent, SIGKILL);
  int status = 0;
  ::waitpid(parent, &status, 0);
  ASSERT_GT(n, 0);
  std::istringstream line(buf);
  int sig = 0, child = 0;
  line >> sig >> child;
  EXPECT_EQ(sig, SIGKILL);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(gone(child)) << "the run " << child << " outlived its parent";
}

}  // namespace
}  // namespace temper
