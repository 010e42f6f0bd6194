#pragma once
// A whole sweep on one fake device, as `temper sweep` runs it: plan, measure, winners.
#include "temper/fake_backend.h"
#include "temper/sweep.h"

namespace temper::test {

inline Session run(const SweepSetup& setup, FakeDevice& dev, Journal* journal = nullptr,
                   const ProgressFn& progress = {}, const CancelFlag* cancel = nullptr) {
  Device* devices[] = {&dev};
  Session s = new_session(setup, devices);
  CancelFlag never{false};
  run_session(s, devices, journal, progress, cancel ? *cancel : never);
  return s;
}

}  // namespace temper::test
