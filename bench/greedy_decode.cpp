// Issue 29: does a launch change what the engine computes? Greedy decoding of a fixed prompt, token
// by token (one column per step: the GEMV path), printing each step's token and a hash of its whole
// logits row. Two arms that must compute the same thing (pipelined launches against the same configs
// unpipelined, a build against itself) must print the same lines, bit for bit; a launch that lets a
// reader start before its output is written shows as a differing hash.
//
//   greedy_decode MODEL [STEPS=128] [PROMPT_TOKENS=16]
//
// The last lines: "all HASH" (over every step's hash), then "finite F of T logits, D distinct step
// hashes". A comparison means something only where the logits are finite and differ step to step
// (tune_device.sh's verify stage says "vacuous" otherwise).
//
// Built on the device host against the tree's libllama (tune_device.sh's verify stage):
//   c++ -O2 -std=c++17 bench/greedy_decode.cpp -I TREE/include -I TREE/ggml/include -L BUILD/bin -lllama -Wl,-rpath,BUILD/bin
// The prompt is token ids, not text: the fixtures' weights are random and need no tokenizer.
#include "llama.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

namespace {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void quiet(ggml_log_level level, const char* text, void*) {
  if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: greedy_decode MODEL [STEPS=128] [PROMPT_TOKENS=16]\n");
    return 2;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 128, prompt_tokens = argc > 3 ? std::atoi(argv[3]) : 16;
  if (steps < 1 || prompt_tokens < 1) {
    std::fprintf(stderr, "greedy_decode: STEPS and PROMPT_TOKENS must be positive\n");
    return 2;
  }
  llama_log_set(quiet, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 999;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "greedy_decode: %s: cannot load the model\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = uint32_t(prompt_tokens + steps + 8);
  cp.n_batch = uint32_t(prompt_tokens);
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "greedy_decode: cannot create a context\n");
    return 1;
  }
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::vector<llama_token> prompt(prompt_tokens);
  for (int i = 0; i < prompt_tokens; ++i) prompt[i] = llama_token((1 + i * 7919) % vocab);
  if (llama_decode(ctx, llama_batch_get_one(prompt.data(), prompt_tokens)) != 0) {
    std::fprintf(stderr, "greedy_decode: the prompt failed to decode\n");
    return 1;
  }
  uint64_t all = fnv1a(nullptr, 0);
  long long finite = 0;
  std::set<uint64_t> distinct;
  for (int s = 0; s < steps; ++s) {
    const float* logits = llama_get_logits_ith(ctx, -1);
    llama_token best = 0;
    for (int t = 0; t < vocab; ++t) {
      finite += std::isfinite(logits[t]);
      if (logits[t] > logits[best]) best = t;
    }
    const uint64_t h = fnv1a(logits, sizeof(float) * size_t(vocab));
    distinct.insert(h);
    all = fnv1a(&h, sizeof h, all);
    std::printf("%d %d %016llx\n", s, best, (unsigned long long) h);
    if (llama_decode(ctx, llama_batch_get_one(&best, 1)) != 0) {
      std::fprintf(stderr, "greedy_decode: step %d failed to decode\n", s);
      return 1;
    }
  }
  std::printf("all %016llx\n", (unsigned long long) all);
  std::printf("finite %lld of %lld logits, %zu distinct step hashes\n", finite, (long long) vocab * steps, distinct.size());
  // A hooked engine's own counters (hooks v8, v9), on stderr so the compared lines stay the same: how
  // many norms and GLUs wrote their GEMVs' q8_1 activations, and how many mmvq launches read such a copy.
  using counter = long long (*)();
  const auto glus = (counter) dlsym(RTLD_DEFAULT, "temper_mmvq_glu_launches");
  if (auto pairs = (counter) dlsym(RTLD_DEFAULT, "temper_mmvq_pair_group_launches"))
    std::fprintf(stderr, "temper: %lld unfused pairs ran as one group launch\n", pairs());
  if (auto launches = (counter) dlsym(RTLD_DEFAULT, "temper_mmvq_norm_launches"))
    if (auto reads = (counter) dlsym(RTLD_DEFAULT, "temper_mmvq_norm_reads"))
      std::fprintf(stderr, "temper: %lld norms and %lld GLUs wrote q8_1 activations, %lld mmvq launches read them\n", launches(),
                   glus ? glus() : 0LL, reads());
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
