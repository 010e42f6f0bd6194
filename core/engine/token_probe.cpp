// The token probe: its plan, its output, running it, building it against the user's llama.cpp build.
#include "temper/token_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "temper/content_hash.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/process.h"

namespace temper::engine {
namespace fs = std::filesystem;

std::vector<double> TokenRun::arm_samples(int arm) const {
  std::vector<double> out;
  for (const TokenWindow& w : windows)
    if (w.arm == arm) out.push_back(w.us_per_token);
  return out;
}

std::string token_plan_text(const TokenPlan& p) {
  std::ostringstream s;
  s << "temper-token-plan 1\ntokens " << p.tokens << "\nwindows " << p.windows << "\nrounds " << p.rounds << "\nwarmup "
    << p.warmup << "\ngreedy " << p.greedy << "\nseed " << p.seed << "\n";
  for (const fs::path& a : p.arms) s << "arm " << a.string() << "\n";
  return s.str();
}

namespace {

[[noreturn]] void bad_line(int n, const std::string& line, const std::string& expected) {
  std::string shown = line.size() > 120 ? line.substr(0, 120) + "..." : line;
  fail(ErrorKind::GpuFault, "token probe: output line " + std::to_string(n) + " ('" + shown + "'): expected " + expected);
}

}  // namespace

TokenRun parse_token_output(std::string_view text, const TokenPlan& plan, bool finished) {
  TokenRun run;
  const int arms = int(plan.arms.size());
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  bool hello = false, model = false, done = false;
  std::vector<int> windows_of(size_t(arms), 0);
  while (std::getline(in, line)) {
    ++n;
    std::istringstream l(line);
    std::string key;
    if (!(l >> key)) bad_line(n, line, "a record");
    if (done) bad_line(n, line, "nothing after 'done'");
    std::string rest;
    auto end_of_line = [&] { return !(l >> rest); };
    if (!hello) {
      int version = 0;
      std::string word;
      if (key != "temper-token-probe" || !(l >> version) || version != 1 || !(l >> word) || word != "hook" ||
          !(l >> run.hook_version) || run.hook_version < 0 || !end_of_line())
        bad_line(n, line, "'temper-token-probe 1 hook V' first");
      hello = true;
    } else if (key == "model") {
      if (model || !(l >> run.layers >> run.vocab) || run.layers < 1 || run.vocab < 1 || !end_of_line())
        bad_line(n, line, "'model LAYERS VOCAB' once");
      model = true;
    } else if (key == "window") {
      TokenWindow w;
      if (!model || !(l >> w.arm >> w.round >> w.index >> w.us_per_token) || !end_of_line())
        bad_line(n, line, "'window ARM ROUND INDEX US_PER_TOKEN' after 'model'");
      if (w.arm < 0 || w.arm >= arms || w.round < 0 || w.round >= plan.rounds || w.index < 0 || w.index >= plan.windows)
        bad_line(n, line, "an arm below " + std::to_string(arms) + ", a round below " + std::to_string(plan.rounds) +
                              " and a window below " + std::to_string(plan.windows));
      if (!std::isfinite(w.us_per_token) || w.us_per_token <= 0) bad_line(n, line, "a positive, finite time");
      if (++windows_of[size_t(w.arm)] > plan.rounds * plan.windows) bad_line(n, line, "no more windows of that arm than the plan's");
      run.windows.push_back(w);
    } else if (key == "greedy") {
      TokenGreedy g;
      int finite = -1;
      if (!model || !(l >> g.arm >> g.hash >> finite) || g.arm < 0 || g.arm >= arms || (finite != 0 && finite != 1) ||
          g.hash.size() != 16 || g.hash.find_first_not_of("0123456789abcdef") != std::string::npos)
        bad_line(n, line, "'greedy ARM HASH FINITE TOKEN...' (16 hex digits, 0 or 1)");
      g.finite = finite == 1;
      for (int t; l >> t;) {
        if (t < 0 || t >= run.vocab) bad_line(n, line, "token ids below the vocabulary's " + std::to_string(run.vocab));
        g.tokens.push_back(t);
      }
      if (!l.eof() || int(g.tokens.size()) != plan.greedy) bad_line(n, line, std::to_string(plan.greedy) + " token ids");
      run.greedy.push_back(std::move(g));
    } else if (key == "done") {
      if (!end_of_line()) bad_line(n, line, "'done' alone");
      done = true;
    } else {
      bad_line(n, line, "window, greedy or done");
    }
  }
  if (!hello) fail(ErrorKind::GpuFault, "token probe: no output (expected 'temper-token-probe 1 hook V' first)");
  if (!finished) return run;
  if (run.hook_version == 0) return run;
  if (!done) fail(ErrorKind::GpuFault, "token probe: the output ends after line " + std::to_string(n) + " without 'done'");
  for (int a = 0; a < arms; ++a)
    if (windows_of[size_t(a)] != plan.rounds * plan.windows)
      fail(ErrorKind::GpuFault, "token probe: arm " + std::to_string(a) + " has " + std::to_string(windows_of[size_t(a)]) +
                                    " windows, the plan " + std::to_string(plan.rounds * plan.windows));
  if (plan.greedy > 0 && int(run.greedy.size()) != arms)
    fail(ErrorKind::GpuFault, "token probe: greedy decoding of " + std::to_string(run.greedy.size()) + " arms, the plan " + std::to_string(arms));
  return run;
}

TokenRun run_token_probe(const TokenProbeOptions& o, const TokenPlan& plan) {
  fs::create_directories(o.work);
  const fs::path plan_path = o.work / "token-plan.txt", log = o.work / "token-probe.log";
  write_file_atomic(plan_path, token_plan_text(plan));
  std::string out, err;
  int windows = 0;
  const int total = plan.rounds * plan.windows * int(plan.arms.size());
  ProcessOptions p;
  p.capture = &out;
  p.capture_stderr = &err;
  p.cancel = o.cancel;
  p.kill_after = std::chrono::milliseconds(3000);
  p.timeout = std::chrono::milliseconds(int64_t(o.timeout_s * 1000));
  p.die_with_parent = true;
  p.max_capture = size_t(64) << 20;
  p.on_line = [&](const std::string& line) {
    if (line.rfind("window ", 0) == 0 && o.progress) o.progress(++windows, total);
  };
  const int rc = run_process({o.exe.string(), o.model.string(), plan_path.string()}, p);
  write_file_atomic(log, "$ " + command_text({o.exe.string(), o.model.string(), plan_path.string()}) + "\n--- stdout\n" + out +
                             "--- stderr\n" + err);
  if (rc == kCancelled) fail(ErrorKind::Cancelled, "token probe cancelled");
  auto last_stderr = [&] {
    std::string e = err;
    while (!e.empty() && (e.back() == '\n' || e.back() == '\r')) e.pop_back();
    const size_t cut = e.rfind('\n');
    e = cut == std::string::npos ? e : e.substr(cut + 1);
    return (e.empty() ? std::string() : "; last stderr: " + e) + "; log: " + log.string();
  };
  if (rc == kTimedOut) fail(ErrorKind::GpuFault, "token probe: no end after " + std::to_string(int(o.timeout_s)) + " s" + last_stderr());
  if (rc == kOutputTooLarge) fail(ErrorKind::GpuFault, "token probe: more than 64 MiB of output" + last_stderr());
  if (rc == 3) {
    TokenRun r = parse_token_output(out, plan, false);
    if (r.hook_version == 0) return r;
  }
  if (rc != 0)
    fail(ErrorKind::GpuFault, "token probe " + std::string(rc > 128 ? "killed by signal " + std::to_string(rc - 128)
                                                                     : "exited with status " + std::to_string(rc)) + last_stderr());
  try {
    return parse_token_output(out, plan, true);
  } catch (const Error& e) {
    fail(e.kind(), e.what() + std::string("; log: ") + log.string());
  }
}

TokenProbeBuilt build_token_probe(const TokenProbeBuild& b) {
  std::error_code ec;
  const fs::path header = b.llama_tree / "include" / "llama.h", ggml_include = b.llama_tree / "ggml" / "include";
  if (!fs::is_regular_file(header, ec))
    fail(ErrorKind::BadInput, b.llama_tree.string() + ": no include/llama.h: the token probe needs a llama.cpp tree (a ggml tree alone has no decode)");
  const fs::path libllama = b.lib_dir / "libllama.so";
  if (!fs::exists(libllama, ec))
    fail(ErrorKind::BadInput, b.lib_dir.string() + ": no libllama.so beside llama-bench: the token probe links the build's shared "
                                                    "libraries (BUILD_SHARED_LIBS=ON, llama.cpp's default)");
  std::string compiler = b.compiler;
  if (compiler.empty()) compiler = std::getenv("CXX") && *std::getenv("CXX") ? std::getenv("CXX") : "c++";
  std::string inputs = std::string(token_probe_source()) + "\n" + compiler + "\n" + file_identity(header) + "\n" + file_identity(libllama);
  for (const char* lib : {"libggml.so", "libggml-base.so", "libggml-cuda.so", "libggml-hip.so"})
    if (fs::exists(b.lib_dir / lib, ec)) inputs += "\n" + file_identity(b.lib_dir / lib);
  TokenProbeBuilt built;
  built.hash = content_hash(inputs).substr(0, 16);
  built.exe = b.out_dir / ("temper-token-probe-" + built.hash);
  if (fs::is_regular_file(built.exe, ec)) {
    built.cached = true;
    return built;
  }
  fs::create_directories(b.out_dir);
  const fs::path src = b.out_dir / "temper-token-probe.cpp", log = b.out_dir / "token-probe-build.log";
  write_file_atomic(src, token_probe_source());
  const fs::path tmp = built.exe.string() + ".tmp";
  const std::vector<std::string> argv = {compiler, "-std=c++17", "-O2", src.string(), "-I", (b.llama_tree / "include").string(),
                                         "-I", ggml_include.string(), "-L", b.lib_dir.string(), "-lllama", "-lggml", "-lggml-base",
                                         "-ldl", "-Wl,-rpath," + fs::absolute(b.lib_dir).string(), "-o", tmp.string()};
  ProcessOptions p;
  p.log = log;
  p.truncate_log = true;
  p.cancel = b.cancel;
  std::string out;
  p.capture = &out;
  const int rc = run_process(argv, p);
  if (rc == kCancelled) fail(ErrorKind::Cancelled, "token probe build cancelled");
  if (rc != 0) {
    std::string first = "no compiler error in the log";
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (line.find("error") != std::string::npos) {
        first = line.size() > 300 ? line.substr(0, 300) + "..." : line;
        break;
      }
    fs::remove(tmp, ec);
    fail(ErrorKind::Io, "the token probe does not build against " + b.llama_tree.string() + ": " + first + " (log: " + log.string() + ")");
  }
  fs::rename(tmp, built.exe);
  return built;
}

}  // namespace temper::engine
