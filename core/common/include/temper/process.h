#pragma once
// Running another program (cmake, a compiler, hipconfig): always an argv, never a shell command line,
// so no argument is ever split, globbed or interpreted — a value like "sm_90;touch X" reaches the
// program as one argument. argv[0] without a '/' is looked up on PATH.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace temper {

struct ProcessOptions {
  std::vector<std::string> env;     // "NAME=value": set in the child, replacing an inherited NAME
  std::filesystem::path log;        // stdout and stderr appended here (empty: not kept)
  bool truncate_log = false;        // start the log afresh instead of appending
  std::function<void(const std::string&)> on_line;  // each line of stdout + stderr, as it comes
  std::string* capture = nullptr;   // stdout + stderr appended here, byte for byte
  bool with_stderr = true;          // false: stderr goes to /dev/null, only stdout is read
  // Set: stderr is read apart from stdout and appended here (not logged, not in capture nor on_line).
  std::string* capture_stderr = nullptr;
  // Set from another thread: the program is stopped (SIGTERM; its whole process group with
  // own_group) and run_process returns kCancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Above zero: a cancel's SIGTERM is followed this much later by SIGKILL (to the group with
  // own_group) for a program still running; zero: run_process waits for it however long it takes.
  std::chrono::milliseconds kill_after{0};
  // A process group of its own: a cancel reaches every process it started (compilers under a build
  // tool); without one, Ctrl-C on Temper's terminal reaches them as it reaches Temper.
  bool own_group = false;
  // SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG): Temper killed, even with -9,
  // leaves the program no time to outlive it.
  bool die_with_parent = false;
  // Above zero: the program (its group with own_group) is killed when it runs longer than this, and
  // run_process returns kTimedOut.
  std::chrono::milliseconds timeout{0};
  // Above zero: a program that prints more than this many bytes into capture or capture_stderr is
  // killed (its group with own_group), and run_process returns kOutputTooLarge; what was kept stays.
  size_t max_capture = 0;
};

constexpr int kCancelled = -1, kTimedOut = -2, kOutputTooLarge = -3;

// Runs argv to its end (stdin /dev/null, SIGPIPE and SIGINT at their defaults, no signal blocked);
// its exit status, 128 + N when signal N killed it, kCancelled, kTimedOut or kOutputTooLarge. With
// own_group, the program's end ends the wait: whatever it left running in its group that still
// holds its output open is killed a second later.
// Error(Io) "cannot run PROGRAM: why" when it cannot be started (not found, not executable).
int run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// stdout (and stderr unless with_stderr is false) of argv, or nullopt when it cannot be started.
std::optional<std::string> process_output(const std::vector<std::string>& argv, bool with_stderr = true);

// argv as one line for logs and messages, each argument quoted where a shell would need it (for
// reading only: nothing ever runs it).
std::string command_text(const std::vector<std::string>& argv);

}  // namespace temper
