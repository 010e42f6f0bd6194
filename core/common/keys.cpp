#include "temper/keys.h"

namespace temper {

std::string config_text(Config c, std::string_view times) {
  return std::to_string(c.nwarps) + std::string(times) + std::to_string(c.rows_per_block);
}

std::string config_words(Config c) {
  return "nwarps " + std::to_string(c.nwarps) + ", rows_per_block " + std::to_string(c.rows_per_block);
}

std::string values_text(const std::vector<int>& values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

std::string shape_text(const ShapeKey& s, std::string_view times) {
  return std::string(type_name(s.type)) + " " + std::to_string(s.n) + std::string(times) + std::to_string(s.k);
}

std::string group_text(const GroupKey& g, bool with_device) {
  return (with_device ? "device " + std::to_string(g.device) + " " : "") + shape_text(g) + " ncols " +
         std::to_string(g.ncols);
}

}  // namespace temper
