// temper-token-probe: decode tokens of a model through the engine's own graph (llama.cpp, its CUDA
// graphs, its other kernels, the real expert routing) and time them as llama-bench's tg test does,
// switching the hooked mmvq's profile between windows without reloading the model: the candidates a
// plan names are compared interleaved in one process. Built by Temper (core/engine/token_probe.cpp)
// against the user's own llama.cpp build (its llama.h and shared libraries); the hook's entry point
// temper_mmvq_load_profile switches profiles (docs/engine.md, "The token probe").
//
//   temper-token-probe MODEL PLAN
//
// PLAN, one item a line: "temper-token-plan 1", then "tokens N" (tokens per window, each from position
// 0 as tg N), "windows W" (windows per visit), "rounds R", "warmup T" (tokens decoded after each switch,
// untimed), "seed S", "greedy STEPS" (0: none), and "arm PROFILE" per arm (a profile file; the stock arm
// is one with no entries). Each round visits every arm once, in an order rotated round by round.
//
// Output, one record a line on stdout: "temper-token-probe 1 hook V", then "model LAYERS VOCAB", then
// per window "window ARM ROUND INDEX US_PER_TOKEN", per arm with greedy "greedy ARM HASH FINITE TOKEN...",
// and "done". Exit 3 (after the first line, with V 0) when the engine has no hook or its hook cannot
// switch profiles; 2 for a bad plan; 1 when the model or a decode fails.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

struct Plan {
  int tokens = 128, windows = 1, rounds = 1, warmup = 8, greedy = 0;
  unsigned seed = 1;
  std::vector<std::string> arms;
};

[[noreturn]] void die(int code, const std::string& why) {
  std::fprintf(stderr, "temper-token-probe: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(code);
}

Plan read_plan(const char* path) {
  std::ifstream in(path);
  if (!in) die(2, std::string(path) + ": cannot read the plan");
  Plan p;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream l(line);
    std::string key;
    if (!(l >> key)) continue;
    const std::string where = std::string(path) + ":" + std::to_string(n) + ": ";
    if (n == 1) {
      int version = 0;
      if (key != "temper-token-plan" || !(l >> version) || version != 1) die(2, where + "expected 'temper-token-plan 1'");
      continue;
    }
    if (key == "arm") {
      std::string rest;
      std::getline(l >> std::ws, rest);
      if (rest.empty()) die(2, where + "arm without a profile");
      p.arms.push_back(rest);
      continue;
    }
    long v = -1;
    if (!(l >> v) || v < 0) die(2, where + key + ": expected a number >= 0");
    if (key == "tokens") p.tokens = int(v);
    else if (key == "windows") p.windows = int(v);
    else if (key == "rounds") p.rounds = int(v);
    else if (key == "warmup") p.warmup = int(v);
    else if (key == "greedy") p.greedy = int(v);
    else if (key == "seed") p.seed = unsigned(v);
    else die(2, where + "unknown item '" + key + "'");
  }
  if (n == 0) die(2, std::string(path) + ": empty plan");
  if (p.arms.empty() || p.tokens < 1 || p.windows < 1 || p.rounds < 1) die(2, std::string(path) + ": no arm, or no tokens, windows or rounds");
  return p;
}

// The hooked ggml's entry points: the process's own symbols, or a backend library loaded on its own.
template <class F>
F hook_symbol(const char* name) {
  if (void* s = dlsym(RTLD_DEFAULT, name)) return reinterpret_cast<F>(s);
  for (const char* lib : {"libggml-cuda.so", "libggml-hip.so"})
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD))
      if (void* s = dlsym(h, name)) return reinterpret_cast<F>(s);
  return nullptr;
}

void quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

llama_context* new_context(llama_model* model, int n_ctx) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(n_ctx);
  cp.n_batch = uint32_t(n_ctx);
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) die(1, "cannot create a context of " + std::to_string(n_ctx) + " tokens");
  return ctx;
}

// tg N as llama-bench runs it: from position 0, one token a decode, synchronized, the next one random.
double decode(llama_context* ctx, int n, int n_vocab, std::mt19937& rng) {
  llama_memory_clear(llama_get_memory(ctx), false);
  llama_token token = llama_token(rng() % unsigned(n_vocab));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) die(1, "a decode failed");
    llama_synchronize(ctx);
    token = llama_token(rng() % unsigned(n_vocab));
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) die(2, "usage: temper-token-probe MODEL PLAN");
  const Plan plan = read_plan(argv[2]);
  using VersionFn = int (*)();
  using LoadFn = void (*)(const char*);
  const auto version = hook_symbol<VersionFn>("temper_mmvq_hook_version");
  const auto load = hook_symbol<LoadFn>("temper_mmvq_load_profile");
  std::printf("temper-token-probe 1 hook %d\n", version && load ? version() : 0);
  std::fflush(stdout);
  if (!version || !load) die(3, "the engine's ggml has no Temper hook that switches profiles (temper_mmvq_load_profile)");

  llama_log_set(quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 999;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) die(1, std::string(argv[1]) + ": cannot load the model");
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::printf("model %d %d\n", llama_model_n_layer(model), n_vocab);
  std::fflush(stdout);

  std::mt19937 rng(plan.seed);
  const int arms = int(plan.arms.size());
  for (int round = 0; round < plan.rounds; ++round)
    for (int v = 0; v < arms; ++v) {
      const int arm = (v + round) % arms;
      // A fresh context per visit: its CUDA graphs are captured anew with this arm's launches.
      load(plan.arms[size_t(arm)].c_str());
      llama_context* ctx = new_context(model, plan.tokens);
      if (plan.warmup > 0) decode(ctx, std::min(plan.warmup, plan.tokens), n_vocab, rng);
      for (int w = 0; w < plan.windows; ++w) {
        const double us = decode(ctx, plan.tokens, n_vocab, rng);
        std::printf("window %d %d %d %.3f\n", arm, round, w, us / plan.tokens);
      }
      std::fflush(stdout);
      llama_free(ctx);
    }

  // Greedy decoding from one fixed prompt of random ids: each arm's tokens and a hash of its logits.
  if (plan.greedy > 0) {
    std::mt19937 prompt_rng(plan.seed ^ 0x5eedu);
    std::vector<llama_token> prompt(16);
    for (auto& t : prompt) t = llama_token(prompt_rng() % unsigned(n_vocab));
    for (int arm = 0; arm < arms; ++arm) {
      load(plan.arms[size_t(arm)].c_str());
      llama_context* ctx = new_context(model, int(prompt.size()) + plan.greedy + 8);
      std::vector<llama_token> toks = prompt;
      std::vector<llama_token> out;
      uint64_t hash = 1469598103934665603ull;
      bool finite = true;
      // The prompt one token a decode, as the steps: every logits row comes from one-column launches.
      for (size_t i = 0; i + 1 < toks.size(); ++i)
        if (llama_decode(ctx, llama_batch_get_one(&toks[i], 1)) != 0) die(1, "a prompt decode failed");
      llama_token next = toks.back();
      for (int s = 0; s < plan.greedy; ++s) {
        if (llama_decode(ctx, llama_batch_get_one(&next, 1)) != 0) die(1, "a greedy decode failed");
        const float* logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int i = 0; i < n_vocab; ++i) {
          if (!std::isfinite(logits[i])) finite = false;
          if (logits[i] > logits[best]) best = i;
        }
        hash = fnv1a(logits, sizeof(float) * size_t(n_vocab), hash);
        next = llama_token(best);
        out.push_back(next);
      }
      std::printf("greedy %d %016llx %d", arm, (unsigned long long) hash, finite ? 1 : 0);
      for (llama_token t : out) std::printf(" %d", int(t));
      std::printf("\n");
      std::fflush(stdout);
      llama_free(ctx);
    }
  }
  std::printf("done\n");
  llama_model_free(model);
  return 0;
}
