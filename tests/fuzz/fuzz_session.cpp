// libFuzzer target: the session reader and the sweep journal reader over arbitrary bytes, then
// everything a reader does with what it accepted (winners, estimate, summary, write-back).
#include <cstdint>
#include <string>
#include <string_view>

#include "temper/error.h"
#include "temper/estimate.h"
#include "temper/input.h"
#include "temper/sweep.h"

namespace {

void use(temper::Session s) {
  temper::finish_session(s);  // as `temper session` does for a session saved mid-way
  (void)temper::format_summary(s);
  (void)temper::summary_json(s).dump();
  // What was accepted must write back and read back as the same thing.
  const nlohmann::json j = temper::to_json(s);
  if (temper::to_json(temper::session_from_json(j, "round trip")) != j) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    use(temper::session_from_json(temper::parse_json_input(text, "fuzz.json"), "fuzz.json"));
  } catch (const temper::Error&) {
  }
  try {
    use(temper::resume_session(temper::parse_journal(text, "fuzz.journal")));
  } catch (const temper::Error&) {
  }
  return 0;
}
