#pragma once
// The fake temper-probe (fake_probe.cpp, the engine protocol on the CPU) as engine_test reaches it:
// the build names its path in FAKE_PROBE.
#include "temper/engine_device.h"

namespace temper::test {

inline engine::ProbeOptions fake_probe(double timeout_s = engine::ProbeOptions{}.timeout_s) {
  engine::ProbeOptions o;
  o.probe = FAKE_PROBE;
  o.timeout_s = timeout_s;
  return o;
}

}  // namespace temper::test
