#pragma once
// Hand-made profile entries for the profile tests.
#include <string>

#include "temper/profile.h"

namespace temper::test {

// A measured entry: default median 100 µs (CI ±1), tuned = 100 / speedup (CI ±0.5).
inline ProfileEntry measured(std::string arch, GgmlType type, int n, int k, int ncols, Config config, Config def,
                             double speedup, uint64_t bytes_per_token = 1000, std::string session = "S1") {
  ProfileEntry e;
  e.key = {std::move(arch), type, n, k, ncols};
  e.config = config;
  e.default_config = def;
  e.is_small_k = ncols == 1 && config.nwarps == def.nwarps && config.rows_per_block == config.nwarps && def.nwarps > 1;
  Provenance p;
  p.session_id = std::move(session);
  p.device_name = "Test GPU";
  p.device_arch = e.key.arch;
  p.engine = "ggml-7180759";
  p.default_us = 100;
  p.default_ci_low = 99;
  p.default_ci_high = 101;
  p.tuned_us = 100 / speedup;
  p.tuned_ci_low = p.tuned_us - 0.5;
  p.tuned_ci_high = p.tuned_us + 0.5;
  p.speedup = speedup;
  p.speedup_low = p.default_ci_low / p.tuned_ci_high;
  p.speedup_high = p.default_ci_high / p.tuned_ci_low;
  p.calls_per_token = 32;
  p.bytes_per_token = bytes_per_token;
  e.provenance = p;
  return e;
}

inline ProfileEntry approved(ProfileEntry e) {
  e.approval = Approval::Approved;
  e.decided_at = "2026-11-23T12:00:00Z";
  return e;
}

inline Profile profile_of(std::vector<ProfileEntry> entries) {
  Profile p;
  p.created = "2026-11-23T12:00:00Z";
  p.tool_version = "0.1.0";
  p.model = "test.gguf";
  p.sessions = {"S1"};
  p.entries = std::move(entries);
  std::sort(p.entries.begin(), p.entries.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return p;
}

// A llama-bench record of `p` on an H100 (sm_90): tg128 and pp4, two runs per arm of two samples.
inline BenchRecord bench_record(const Profile& p, std::string device = "NVIDIA H100 80GB HBM3") {
  BenchRecord r;
  r.date = "2026-11-25T10:00:00Z";
  r.tool_version = "0.1.0";
  r.device = std::move(device);
  r.arch = "sm_90";
  r.model = "test.gguf";
  r.model_type = "llama 8B Q4_K - Medium";
  r.stock = {"/opt/llama.cpp/build/bin/llama-bench", "abc1234", 4321};
  r.profiled = r.stock;
  r.engine_line = "temper: profile /p.json: 1 entries for sm_90 (device 0); ignored 1 for other archs, 0 with a config not "
                  "compiled in, 0 malformed, 1 not approved";
  r.profile_fingerprint = approved_fingerprint(p, "sm_90");
  r.rounds = 2;
  r.repetitions = 2;
  BenchTest tg;
  tg.name = "tg128";
  tg.args = {"-p", "0", "-n", "128"};
  tg.n_gen = 128, tg.n_ubatch = 512;
  tg.stock_runs = {{100.0, 100.4}, {99.8, 100.2}};
  tg.profiled_runs = {{105.1, 105.3}, {104.9, 105.0}};
  tg.stock_ts = 100.1, tg.profiled_ts = 105.05, tg.speedup = 1.0495, tg.speedup_low = 1.046, tg.speedup_high = 1.053;
  BenchTest pp = tg;
  pp.name = "pp4";
  pp.args = {"-p", "128", "-n", "0", "-ub", "4"};
  pp.n_gen = 0, pp.n_prompt = 128, pp.n_ubatch = 4;
  r.tests = {tg, pp};
  return r;
}

}  // namespace temper::test
