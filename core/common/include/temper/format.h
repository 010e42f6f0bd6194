#pragma once
// One number as text with a printf format ("%.2f", "%.3g"), for tables and reports.
#include <cstdio>
#include <string>

namespace temper {

inline std::string format_number(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

}  // namespace temper
