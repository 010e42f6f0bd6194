// Issue 32 (3): other programs run from an argv, never a shell command line: what a user typed
// reaches the program as one argument, whatever characters it holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
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

}  // namespace
}  // namespace temper
