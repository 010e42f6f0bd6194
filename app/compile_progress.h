#pragma once
// The CLI's kernel-compilation progress on stderr: one rewritten line on a terminal, otherwise a
// line when compilation starts and one when it ends (logs stay short). Ctrl-C cancels (exit 7).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>

#include "temper/kernel_cache.h"

namespace temper::cli {

inline std::atomic<bool> g_compile_cancel{false};
extern "C" inline void temper_compile_on_sigint(int) {
  g_compile_cancel.store(true);
  std::signal(SIGINT, SIG_DFL);
}

class CompileProgressPrinter {
 public:
  explicit CompileProgressPrinter(std::string what) : what_(std::move(what)), tty_(::isatty(2)) {}
  void operator()(const CompileProgress& p) {
    if (p.done == p.total && !started_) return;  // all cached: nothing to say
    const std::string line = "compiling " + what_ + ": " + compile_progress_text(p);
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), p.done == p.total ? "\n" : "");
    } else if (!started_ || p.done == p.total) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    started_ = true;
  }

 private:
  std::string what_;
  bool tty_;
  bool started_ = false;
};

// Runs f() with Ctrl-C setting g_compile_cancel (the compile stops, Error(Cancelled) follows).
template <class F>
auto with_compile_cancel(F&& f) {
  g_compile_cancel = false;
  const auto previous = std::signal(SIGINT, temper_compile_on_sigint);
  struct Restore {
    decltype(previous) p;
    ~Restore() { std::signal(SIGINT, p); }
  } restore{previous};
  return f();
}

}  // namespace temper::cli
