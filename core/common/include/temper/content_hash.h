#pragma once
// FNV-1a 64 over a sequence of strings: the engine build's cache key, the hook's record of the
// file it wrote, tune's step inputs and a profile's fingerprint. Not cryptographic; it tells
// Temper's own outputs apart, nothing more.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace temper {

struct ContentHash {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;  // a separator, so ("ab","c") and ("a","bc") differ
  }
  std::string hex() const {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
    return b;
  }
};

inline std::string content_hash(std::string_view s) {
  ContentHash h;
  h.add(s);
  return h.hex();
}

}  // namespace temper
