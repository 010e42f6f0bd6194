// libFuzzer target: the profile importer (Temper and kernel-anvil JSON) over arbitrary bytes.
// Any input either fails with temper::Error or reads into a profile that survives validation,
// every export, and a lossless JSON round trip.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "temper/error.h"
#include "temper/ggml_table.h"
#include "temper/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::json;
  const json j = json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  temper::Profile p;
  try {
    p = temper::profile_from_json(j, "fuzz", "sm_90");
  } catch (const temper::Error&) {
    return 0;
  }
  (void)temper::validate_profile(p);
  const json once = temper::to_json(p);
  const json twice = temper::to_json(temper::profile_from_json(once, "round trip"));
  if (once != twice) std::abort();  // the Temper format must be lossless
  for (const std::string& arch : temper::profile_arches(p)) {
    try {
      (void)temper::export_kernel_anvil(p, {arch});
      (void)temper::export_header(p, {arch});
      (void)temper::export_ggml_table(p, {arch});
    } catch (const temper::Error&) {
      // e.g. an arch without approved entries, or a kernel-anvil file over 1 MiB
    }
  }
  (void)temper::export_temper(p);
  (void)temper::export_ggml_table(p);  // every arch at once: never throws
  return 0;
}
