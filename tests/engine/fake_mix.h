// The stand-ins' deterministic noise: a 64-bit finalizer (MurmurHash3's fmix64) over what a sample is
// of, so a test's numbers are the same on every run.
#pragma once
#include <cstdint>

namespace temper::fake {

inline uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

}  // namespace temper::fake
