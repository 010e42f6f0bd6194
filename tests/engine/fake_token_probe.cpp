// A stand-in for temper-token-probe (resources/engine/temper-token-probe.cpp), for CI without a GPU:
// the same plan and output, with µs per token made from each arm's profile by a known rule.
//
// A token costs 100 µs (the fixtures' GEMVs are small), less what the profile's approved one-column entries save as the sweep
// measured them (calls per token × (default µs − tuned µs), the replay's prediction), less 1 µs per
// approved same-input group entry (an unfused pair's group included), 2 % with approved pipelined entries and FAKE_TOKEN_NORM_US (default 1.5) per approved
// rms_norm_q8_1 entry (the norm writes its GEMVs' q8_1 activations: fewer launches), FAKE_TOKEN_GLU_US (default 1.0) per
// approved glu_q8_1 entry whose row length is an approved unfused pair's n (the GLU writes the down GEMV's
// q8_1 activations; without the pair the entry changes nothing, as in the hook) or the n of a fused gate/up
// over experts of the model (hook v10: one kernel writes the GLU and its copy); ±0.05 % noise, a hash of
// the seed, arm, round and window. Greedy decoding gives the same tokens for every arm.
//
// From the environment:
//   FAKE_TOKEN_SLOW=FAMILY    that launch family's tuned entries ("mul_mat", "mul_mat_glu", "mul_mat_id",
//                             "mul_mat_id_glu") cost three times what they save: faster per launch,
//                             slower per token
//   FAKE_TOKEN_UNFUSED_US=X   each approved unfused gate/up pair costs X µs more per launch (its glu kernel)
//   FAKE_TOKEN_NO_HOOK=1      an engine whose hook cannot switch profiles: "hook 0", exit 3
//   FAKE_TOKEN_GARBAGE=1      a window line that does not read
//   FAKE_TOKEN_GREEDY_DIFFER=1  the last arm's greedy tokens differ from the others'
//   FAKE_TOKEN_FAIL_GREEDY=1  a plan with greedy steps (tune's prediction) fails after its first line: exit 1
//   FAKE_TOKEN_LOG=FILE       one line per invocation appended: "run ARMS ROUNDS"
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temper/gguf.h"
#include "temper/plan.h"
#include "temper/profile.h"
#include "fake_mix.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

using temper::fake::mix;

std::string family(temper::Launch l) {
  if (l == temper::Launch::MulMatGroup) return "groups";
  std::string n(temper::launch_name(l));
  for (const char* suffix : {"_unfused", "_pipelined"})
    if (const size_t at = n.find(suffix); at != std::string::npos) n.erase(at);
  return n;
}

// The n of each fused gate/up over experts among the model's one-column launches.
std::vector<int64_t> expert_gate_ups(const char* model) {
  std::vector<int64_t> n;
  for (const temper::PlannedLaunch& l : temper::plan_launches(temper::GgufFile::open(model), 1).launches)
    if (l.shape().launch == temper::Launch::MulMatIdGlu) n.push_back(l.shape().n);
  return n;
}

double token_us(const temper::Profile& p, const std::vector<int64_t>& experts) {
  const std::string slow = env("FAKE_TOKEN_SLOW");
  const double unfused_us = std::atof(env("FAKE_TOKEN_UNFUSED_US").c_str());
  const double norm_us = env("FAKE_TOKEN_NORM_US").empty() ? 1.5 : std::atof(env("FAKE_TOKEN_NORM_US").c_str());
  const double glu_us = env("FAKE_TOKEN_GLU_US").empty() ? 1.0 : std::atof(env("FAKE_TOKEN_GLU_US").c_str());
  double us = 100;
  bool pipelined = false;
  const auto approved_pair = [&](int64_t n) {
    for (const temper::ProfileEntry& e : p.entries)
      if (e.approval == temper::Approval::Approved && e.key.ncols == 1 && temper::launch_is_unfused(e.key.launch) && e.key.n == n) return true;
    return false;
  };
  for (const temper::ProfileEntry& e : p.entries) {
    if (e.approval != temper::Approval::Approved || e.key.ncols != 1) continue;
    if (e.key.launch == temper::Launch::RmsNormQ8) {
      us -= norm_us;
    } else if (e.key.launch == temper::Launch::GluQ8) {
      if (approved_pair(e.key.k) || std::find(experts.begin(), experts.end(), e.key.k) != experts.end()) us -= glu_us;
    } else if (temper::launch_is_pipelined(e.key.launch)) {
      pipelined = true;
    } else if (temper::launch_is_group(e.key.launch)) {
      us -= 1;
    } else if (e.provenance) {
      const double saved = double(e.provenance->calls_per_token) * (e.provenance->default_us - e.provenance->tuned_us);
      us -= family(e.key.launch) == slow ? -2 * saved : saved;
      if (temper::launch_is_unfused(e.key.launch)) us += unfused_us * double(e.provenance->calls_per_token);
    }
  }
  return pipelined ? us * 0.98 : us;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fake-token-probe MODEL PLAN\n");
    return 2;
  }
  std::ifstream in(argv[2]);
  std::string line;
  int tokens = 0, rounds = 0, windows = 0, greedy = 0;
  uint64_t seed = 0;
  std::vector<std::string> arms;
  std::getline(in, line);
  if (line != "temper-token-plan 1") {
    std::fprintf(stderr, "fake-token-probe: %s:1: expected 'temper-token-plan 1'\n", argv[2]);
    return 2;
  }
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string key;
    l >> key;
    if (key == "arm") arms.push_back(line.substr(4));
    else if (key == "tokens") l >> tokens;
    else if (key == "rounds") l >> rounds;
    else if (key == "windows") l >> windows;
    else if (key == "greedy") l >> greedy;
    else if (key == "seed") l >> seed;
  }
  if (const std::string log = env("FAKE_TOKEN_LOG"); !log.empty())
    std::ofstream(log, std::ios::app) << "run " << arms.size() << " " << rounds << "\n";
  if (env("FAKE_TOKEN_NO_HOOK") == "1") {
    std::printf("temper-token-probe 1 hook 0\n");
    std::fprintf(stderr, "fake-token-probe: the engine's ggml has no Temper hook that switches profiles\n");
    return 3;
  }
  std::printf("temper-token-probe 1 hook 9\nmodel 2 1000\n");
  if (env("FAKE_TOKEN_FAIL_GREEDY") == "1" && greedy > 0) {
    std::fprintf(stderr, "fake-token-probe: a decode failed\n");
    return 1;
  }
  std::vector<double> us;
  const std::vector<int64_t> experts = expert_gate_ups(argv[1]);
  for (const std::string& a : arms) us.push_back(token_us(temper::load_profile(a), experts));
  if (env("FAKE_TOKEN_GARBAGE") == "1") std::printf("window 0 0 0 fast\n");
  for (int r = 0; r < rounds; ++r)
    for (size_t v = 0; v < arms.size(); ++v) {
      const size_t arm = (v + size_t(r)) % arms.size();
      for (int w = 0; w < windows; ++w) {
        const double noise = double(mix(seed * 1000003 + arm * 1009 + size_t(r) * 31 + size_t(w)) % 1001) / 1000 - 0.5;
        std::printf("window %zu %d %d %.3f\n", arm, r, w, us[arm] * (1 + 0.001 * noise));
      }
    }
  for (size_t a = 0; greedy > 0 && a < arms.size(); ++a) {
    const bool differ = env("FAKE_TOKEN_GREEDY_DIFFER") == "1" && a + 1 == arms.size();
    std::printf("greedy %zu %016llx 1", a, (unsigned long long) mix(seed + differ));
    for (int s = 0; s < greedy; ++s) std::printf(" %d", int(mix(seed * 7 + uint64_t(s) + differ) % 1000));
    std::printf("\n");
  }
  std::printf("done\n");
  return 0;
}
