#pragma once
// Ctrl-C for long commands (engine bench, tune): the first sets a flag the work checks, so it stops
// cleanly and the command exits 7 (cancelled); a second ends the process at once (journals are
// written line by line, so nothing recorded is lost).
#include <atomic>
#include <csignal>

namespace temper::cli {

inline std::atomic<bool> g_sigint_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler stores to it");
extern "C" inline void temper_cancel_on_sigint(int) {
  g_sigint_cancel.store(true);
  std::signal(SIGINT, SIG_DFL);
}

class CancelOnSigint {
 public:
  CancelOnSigint() {
    g_sigint_cancel = false;
    previous_ = std::signal(SIGINT, temper_cancel_on_sigint);
  }
  ~CancelOnSigint() { std::signal(SIGINT, previous_); }
  CancelOnSigint(const CancelOnSigint&) = delete;
  CancelOnSigint& operator=(const CancelOnSigint&) = delete;
  const std::atomic<bool>* flag() const { return &g_sigint_cancel; }

 private:
  void (*previous_)(int) = SIG_DFL;
};

}  // namespace temper::cli
