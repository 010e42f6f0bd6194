// libFuzzer target (issue 51): what a llama-bench prints, as `engine bench` and tune read it. The
// input is its stdout, then a NUL, then its stderr: stdout through the JSON reader (-o json and
// jsonl), stderr through the search for the hooked engine's `temper: profile` line and that line's
// reader. Nothing may crash, hang or overflow; what is accepted must be within the readers' bounds.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "temper/engine_bench.h"
#include "temper/error.h"
#include "temper/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view out = input.substr(0, nul), err = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  try {
    for (const temper::engine::LlamaBenchRow& r : temper::engine::parse_llama_bench_json(out, "fuzz")) {
      if (r.samples_ts.empty() || r.samples_ts.size() > 10000 || r.gpu_info.size() > 1024) __builtin_trap();
      for (double ts : r.samples_ts)
        if (!std::isfinite(ts) || ts <= 0) __builtin_trap();
    }
  } catch (const temper::Error&) {
  }
  for (const std::string_view text : {err, out}) {
    const std::string line = temper::engine::find_engine_line(text);
    if (line.size() > 16384) __builtin_trap();
    const std::string candidate(text.substr(0, 20000));  // the line reader alone, on any text
    for (const std::string& l : {line, candidate}) {
      const int entries = temper::engine::engine_line_entries(l);
      const std::string arch = temper::engine::engine_line_arch(l);
      if (entries < -1 || (entries >= 0) != !arch.empty()) __builtin_trap();
      const std::string shown = temper::terminal_text(l);
      for (char c : shown)
        if (c == '\x1b' || c == '\x07') __builtin_trap();
    }
  }
  return 0;
}
