#pragma once
// A small hand-made session for the reader/writer, winner and estimate tests.
#include "temper/session.h"

namespace temper::test {

inline Result ok_result(GgmlType type, int n, int k, int ncols, Config c, double median, double half_ci,
                        bool is_default = false) {
  Result r;
  r.type = type;
  r.n = n;
  r.k = k;
  r.ncols = ncols;
  r.config = c;
  r.is_default = is_default;
  r.status = ResultStatus::Ok;
  // n, median, p10, p90, min, max, ci_low, ci_high, coverage
  r.time_us = {200,          median, median - 2 * half_ci, median + 2 * half_ci, median - 3 * half_ci,
               median + 5 * half_ci, median - half_ci, median + half_ci, 0.951};
  r.converged = true;
  r.gbs = gemv_bytes(type, n, k, ncols) / (median * 1e-6) / 1e9;
  r.ops_per_s = 2.0 * n * k * ncols / (median * 1e-6);
  r.max_abs_error = 1.5e-6;
  r.worst_error_ratio = 0.02;
  r.weight_copies = 7;
  return r;
}

inline Session sample_session() {
  Session s;
  s.id = "20261123T120000Z-0badcafe";
  s.created = "2026-11-23T12:00:00Z";
  s.finished = "2026-11-23T12:00:30Z";
  s.status = "complete";
  s.tool_version = "0.1.0";
  s.build = {"0123456789abcdef0123456789abcdef01234567", "GNU 14.2.0", "RelWithDebInfo", "-O2 -g", "", "90", "ci"};
  s.model = {"llama-3-8b.Q4_K_M.gguf", 4920000000ull, "fnv1a64:00112233aabbccdd", "llama"};
  s.shapes = {{{GgmlType::Q4_K, 14336, 4096}, 64, 64ull * 14336 * 4096 / 256 * 144, {"blk.*.ffn_gate", "blk.*.ffn_up"}},
              {{GgmlType::Q6_K, 4096, 14336}, 32, 32ull * 4096 * 14336 / 256 * 210, {"blk.*.ffn_down"}}};
  s.grid = {{1, 2}, {1, 2, 4}, {1, 2}, "ggml-7180759", false};
  s.options.seed = 42;
  SessionDevice d;
  d.info.index = 0;
  d.info.api = "fake";
  d.info.name = "Fake GPU";
  d.info.arch = "sm_90";
  d.info.compute_units = 132;
  d.info.memory_bytes = 80ull << 30;
  d.info.l2_bytes = 50ull << 20;
  d.copy_bandwidth_gbs = 3000;
  d.telemetry_start.sm_clock_mhz = 1980;
  d.telemetry_end.temperature_c = 55.5;
  d.plan.grid = s.grid;
  d.plan.defaults_table = "GENERIC";
  for (const auto& sh : s.shapes) {
    d.plan.items.push_back({{sh.type, int(sh.n), int(sh.k)}, 1, {4, 1}, true, false});
    d.plan.items.push_back({{sh.type, int(sh.n), int(sh.k)}, 1, {2, 1}, false, false});
    d.plan.items.push_back({{sh.type, int(sh.n), int(sh.k)}, 1, {1, 1}, false, false});
  }
  d.plan.excluded.push_back({{GgmlType::Q4_K, 14336, 4096}, 1, {16, 8}, "more than 1024 threads"});
  d.plan.skipped_shapes.push_back({{GgmlType::F16, 4096, 4096}, "no mmvq kernel for f16"});
  s.devices.push_back(d);
  // q4_K: {2,1} clearly beats the default; {1,1} is faster on median but its CI overlaps.
  s.results.push_back(ok_result(GgmlType::Q4_K, 14336, 4096, 1, {4, 1}, 100.0, 0.5, true));
  s.results.push_back(ok_result(GgmlType::Q4_K, 14336, 4096, 1, {2, 1}, 90.0, 0.4));
  s.results.back().kernel = KernelAttributes{40, 512, 0, 64, 16};
  s.results.back().telemetry.power_w = 612.5;
  Result failed = ok_result(GgmlType::Q4_K, 14336, 4096, 1, {1, 1}, 80.0, 0.4);
  failed.status = ResultStatus::Failed;
  failed.failure = "row 3 column 0: got 1.5, expected 2.5";
  failed.time_us = {};
  s.results.push_back(failed);
  Result invalid;
  invalid.type = GgmlType::Q4_K;
  invalid.n = 14336;
  invalid.k = 4096;
  invalid.config = {16, 8};
  invalid.status = ResultStatus::Invalid;
  invalid.failure = "more than 1024 threads";
  s.results.push_back(invalid);
  // q6_K: nothing beats the default beyond noise.
  s.results.push_back(ok_result(GgmlType::Q6_K, 4096, 14336, 1, {4, 1}, 150.0, 1.0, true));
  s.results.push_back(ok_result(GgmlType::Q6_K, 4096, 14336, 1, {2, 1}, 149.0, 1.0));
  s.results.push_back(ok_result(GgmlType::Q6_K, 4096, 14336, 1, {1, 1}, 170.0, 1.0));
  return s;
}

}  // namespace temper::test
