// libFuzzer target: GGUF reader + shape extraction over arbitrary bytes.
#include "fuzz/gguf_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  temper::fuzz::gguf_one_input(data, size);
  return 0;
}
