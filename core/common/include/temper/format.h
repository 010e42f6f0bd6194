#pragma once
// One number as text with a printf format ("%.2f", "%.3g"), for tables and reports.
#include <cstdio>
#include <string>
#include <string_view>

namespace temper {

inline std::string format_number(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

// Text from outside Temper (a profile's strings, llama-bench's output) safe to print on a terminal:
// control characters (but newline and tab), DEL and the C1 controls (UTF-8 C2 80..9F) become "\xNN",
// so no escape sequence in them reaches the terminal. Everything else is kept as it is.
inline std::string terminal_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto hex = [&](unsigned char c) {
    char b[8];
    std::snprintf(b, sizeof b, "\\x%02x", c);
    out += b;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      hex(c);
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      hex(c);
      hex(static_cast<unsigned char>(s[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace temper
