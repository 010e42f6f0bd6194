#pragma once
// Temper's own type facts in the form the engine's profile reader asks for: the tests (and the
// reader fuzzer) feed Temper's types where the hooked engine feeds ggml's. `Facts` is the
// temper_profile::TypeFacts of whichever reader version is included (today's, or an older hook's
// when tests/engine/reader-golden/generate.cpp is built against it): all have id, mmvq and block.
#include <string>

#include "temper/types.h"

namespace temper::test {

template <class Facts>
Facts profile_type_facts(const std::string& name) {
  Facts f;
  if (const auto t = parse_type(name)) {
    const TypeInfo& ti = type_info(*t);
    f.id = int(*t);
    f.mmvq = ti.quantized && *t != GgmlType::Q8_1 && *t != GgmlType::Q8_K;  // the runtime's rule
    f.block = int(ti.block_size);
  }
  return f;
}

}  // namespace temper::test
