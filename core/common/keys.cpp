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

namespace {
constexpr std::string_view kLaunchNames[] = {"mul_mat",    "mul_mat_glu",         "mul_mat_id",
                                             "mul_mat_id_glu", "mul_mat_glu_unfused", "mul_mat_id_glu_unfused"};
}

std::string_view launch_name(Launch l) { return kLaunchNames[static_cast<size_t>(l)]; }

std::optional<Launch> parse_launch(std::string_view name) {
  for (size_t i = 0; i < std::size(kLaunchNames); ++i)
    if (kLaunchNames[i] == name) return static_cast<Launch>(i);
  return std::nullopt;
}

std::string_view launch_names() {
  return "mul_mat|mul_mat_glu|mul_mat_id|mul_mat_id_glu|mul_mat_glu_unfused|mul_mat_id_glu_unfused";
}

std::string shape_text(const ShapeKey& s, std::string_view times) {
  std::string out = std::string(type_name(s.type)) + " " + std::to_string(s.n) + std::string(times) + std::to_string(s.k);
  if (launch_is_fused(s.launch)) out += launch_is_unfused(s.launch) ? " gate+up unfused" : " gate+up";
  if (launch_has_ids(s.launch)) out += " experts " + std::to_string(s.used) + "/" + std::to_string(s.experts);
  return out;
}

std::string group_text(const GroupKey& g, bool with_device) {
  return (with_device ? "device " + std::to_string(g.device) + " " : "") + shape_text(g) + " ncols " +
         std::to_string(g.ncols);
}

}  // namespace temper
