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

}  // namespace temper::test
