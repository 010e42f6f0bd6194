#pragma once
// One fuzz input for the GGUF reader + shape extraction, shared by the libFuzzer target
// (fuzz_gguf.cpp) and the regression test that replays every input that ever crashed
// (tests/gguf/regression_test.cpp over tests/fuzz/regressions/gguf/).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/model.h"

namespace temper::fuzz {

// Reads every value the way a caller would, so lazily decoded arrays are walked too.
inline uint64_t touch(const GgufValue& v) {
  uint64_t sum = 0;
  if (v.type() == GgufType::Array) {
    uint64_t i = 0;
    for (const GgufValue e : v) {
      sum += touch(e);
      if (++i == 3 && v.size() > 3) sum += touch(v[v.size() - 1]);  // random access too
      if (i > 64) break;  // enough to cover the element paths; keep inputs fast
    }
    return sum + v.size();
  }
  if (const auto s = v.to_string()) return sum + s->size();
  if (const auto x = v.to_f64()) return sum + static_cast<uint64_t>(*x != 0);
  if (const auto b = v.to_bool()) return sum + *b;
  return sum;
}

// Returns normally for a valid file or a BadInput error; aborts on anything else (a finding).
inline void gguf_one_input(const uint8_t* data, size_t size) {
  try {
    const GgufFile f = GgufFile::from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.gguf");
    uint64_t sum = f.header_hash();
    for (const GgufKv& kv : f.metadata()) sum += touch(kv.value) + kv.key.size();
    for (const TensorInfo& t : f.tensors()) sum += t.bytes + (t.data.empty() ? 0 : static_cast<uint64_t>(t.data.back()));
    const Model m = describe_model(f);
    sum += m.bytes_per_token + m.shapes.size();
    volatile uint64_t sink = sum;
    (void)sink;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput) std::abort();  // only "bad input" is an acceptable answer
  }
}

}  // namespace temper::fuzz
