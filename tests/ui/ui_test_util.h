#pragma once
// Shared by the ui tests: a registry of test classes (one executable, one ctest entry per class)
// and the sessions they look at.
#include <QObject>
#include <QTemporaryDir>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "sweep/sample_session.h"
#include "temper/sweep.h"

namespace temper::ui::uitest {

using Factory = std::function<std::unique_ptr<QObject>()>;
inline std::map<std::string, Factory>& registry() {
  static std::map<std::string, Factory> r;
  return r;
}
struct Register {
  Register(const char* name, Factory f) { registry()[name] = std::move(f); }
};
#define TEMPER_UI_TEST(Class) \
  static const ::temper::ui::uitest::Register register_##Class(#Class, [] { return std::make_unique<Class>(); })

// The sweep tests' hand-made session (two shapes, a winner, a failed and an invalid config), with
// winners and estimates filled in as a finished sweep would have them.
inline Session sampleSession() {
  Session s = temper::test::sample_session();
  finish_session(s);
  return s;
}

// A synthetic shape of `type` (N×K, two calls per token) for sweeps on the fake device.
inline Shape smallShape(GgmlType type, int n, int k) {
  Shape s;
  s.type = type, s.n = n, s.k = k, s.calls_per_token = 2;
  s.bytes_per_token = *row_bytes(type, uint64_t(k)) * uint64_t(n) * 2;
  s.tensors = {"blk.*.test"};
  return s;
}

}  // namespace temper::ui::uitest
