#pragma once
// Sweeps on one fake device, as `temper sweep` runs them: plan, measure, winners.
#include "temper/fake_backend.h"
#include "temper/sweep.h"

namespace temper::test {

// N rows of K values, called `calls` times per token; a K that is no whole number of the type's
// blocks has no row size: 0 bytes (a test that orders by bytes sets them).
inline Shape shape(GgmlType t, int n, int k, int calls = 1) {
  const uint64_t bytes = row_bytes(t, uint64_t(k)).value_or(0) * uint64_t(n) * uint64_t(calls);
  return {{t, n, k}, calls, bytes, {}};
}

inline Session run(const SweepSetup& setup, FakeDevice& dev, Journal* journal = nullptr,
                   const ProgressFn& progress = {}, const CancelFlag* cancel = nullptr) {
  Device* devices[] = {&dev};
  Session s = new_session(setup, devices);
  CancelFlag never{false};
  run_session(s, devices, journal, progress, cancel ? *cancel : never);
  return s;
}

}  // namespace temper::test
