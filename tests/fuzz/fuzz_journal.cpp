// libFuzzer target (issue 19): the sweep journal reader over arbitrary bytes, as `sweep --resume`
// uses it: parse, validate every line, rebuild the session to resume, and everything a resumed
// sweep does with it before measuring (plan left, winners, summary, write-back).
#include <cstdint>
#include <string>
#include <string_view>

#include "temper/error.h"
#include "temper/estimate.h"
#include "temper/input.h"
#include "temper/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const temper::JournalContents contents = temper::parse_journal(text, "fuzz.journal");
    temper::Session s = temper::resume_session(contents);
    temper::finish_session(s);
    (void)temper::format_summary(s);
    // What was accepted must write back and read back as the same thing.
    const nlohmann::json j = temper::to_json(s);
    if (temper::to_json(temper::session_from_json(j, "round trip")) != j) __builtin_trap();
  } catch (const temper::Error&) {
  }
  // The first line as a JSON document of its own, through the readers' strict parser.
  try {
    (void)temper::parse_json_input(text.substr(0, text.find('\n')), "fuzz.json");
  } catch (const temper::Error&) {
  }
  return 0;
}
