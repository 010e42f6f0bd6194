#pragma once
// The token probe (issue 46): whole decode tokens of a model through the engine's own graph, timed as
// llama-bench's tg test times them, with the hooked mmvq's profile switched between windows in one
// process (resources/engine/temper-token-probe.cpp; docs/engine.md, "The token probe"). Built against
// the user's llama.cpp build: the tree's llama.h, the shared libraries beside its llama-bench.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::engine {

std::string_view token_probe_source();

struct TokenPlan {
  std::vector<std::filesystem::path> arms;  // one profile file per arm (the stock arm: a profile without entries)
  int tokens = 128;   // per window, each from position 0 (llama-bench's tgN)
  int windows = 1;    // per visit of an arm
  int rounds = 1;     // each round visits every arm once, the order rotated round by round
  int warmup = 8;     // tokens decoded untimed after each switch (the engine captures its graphs anew)
  int greedy = 0;     // steps of greedy decoding per arm, after the windows (0: none)
  uint32_t seed = 1;
};
std::string token_plan_text(const TokenPlan& plan);

struct TokenWindow {
  int arm = 0, round = 0, index = 0;
  double us_per_token = 0;
};
struct TokenGreedy {
  int arm = 0;
  std::string hash;  // of every step's logits row, 16 hex digits
  bool finite = true;
  std::vector<int> tokens;
};
struct TokenRun {
  int hook_version = 0;  // 0: the engine cannot switch profiles (no hook, or one before the entry point)
  int layers = 0, vocab = 0;
  std::vector<TokenWindow> windows;
  std::vector<TokenGreedy> greedy;
  // The windows' µs per token of one arm, in the order measured.
  std::vector<double> arm_samples(int arm) const;
};

// The probe's stdout, checked line by line against the plan: Error(GpuFault) "token probe: line N:
// ..." for anything else (a window of an arm or round the plan does not have, a missing "done", a
// non-finite time).
TokenRun parse_token_output(std::string_view text, const TokenPlan& plan, bool finished);

struct TokenProbeOptions {
  std::filesystem::path exe, model, work;  // work: the plan file and the probe's log go here
  double timeout_s = 900;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(int done, int total)> progress;  // windows measured of the plan's
};
// Runs the plan. A probe that reports hook 0 and exits 3 returns hook_version 0 and nothing else;
// any other failure (exit status, signal, timeout, bad output) is Error(GpuFault) with the probe's
// last stderr lines; Error(Cancelled) when `cancel` stopped it.
TokenRun run_token_probe(const TokenProbeOptions& options, const TokenPlan& plan);

// Where the user's llama.cpp build keeps what the token probe links: the folder of `llama_bench`
// (the shared libraries of a default build sit beside the tools).
struct TokenProbeBuild {
  std::filesystem::path llama_tree;  // the llama.cpp tree (include/llama.h, ggml/include)
  std::filesystem::path lib_dir;     // libllama.so and libggml*.so
  std::filesystem::path out_dir;     // the probe and its log, cached by the hash of what goes in
  std::string compiler;              // empty: $CXX, else c++
  const std::atomic<bool>* cancel = nullptr;
};
struct TokenProbeBuilt {
  std::filesystem::path exe;
  std::string hash;
  bool cached = false;
};
// Error(BadInput) naming what is missing (no include/llama.h: not a llama.cpp tree; no libllama.so:
// a static build), Error(Io) with the compiler's first error when it does not compile.
TokenProbeBuilt build_token_probe(const TokenProbeBuild& build);

}  // namespace temper::engine
