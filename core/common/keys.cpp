#include "temper/keys.h"

#include <algorithm>
#include <climits>

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
constexpr std::string_view kLaunchNames[] = {"mul_mat",        "mul_mat_glu",         "mul_mat_id",
                                             "mul_mat_id_glu", "mul_mat_glu_unfused", "mul_mat_id_glu_unfused",
                                             "mul_mat_group",  "mul_mat_pipelined",   "mul_mat_glu_pipelined",
                                             "mul_mat_id_pipelined", "mul_mat_id_glu_pipelined", "rms_norm_q8_1",
                                             "glu_q8_1"};
}

std::string_view launch_name(Launch l) { return kLaunchNames[static_cast<size_t>(l)]; }

std::optional<Launch> parse_launch(std::string_view name) {
  for (size_t i = 0; i < std::size(kLaunchNames); ++i)
    if (kLaunchNames[i] == name) return static_cast<Launch>(i);
  return std::nullopt;
}

std::string_view launch_names() {
  return "mul_mat|mul_mat_glu|mul_mat_id|mul_mat_id_glu|mul_mat_glu_unfused|mul_mat_id_glu_unfused|mul_mat_group|mul_mat_pipelined|"
         "mul_mat_glu_pipelined|mul_mat_id_pipelined|mul_mat_id_glu_pipelined|rms_norm_q8_1|glu_q8_1";
}

std::string shape_text(const ShapeKey& s, std::string_view times) {
  if (s.launch == Launch::RmsNormQ8) return "rms_norm q8_1 k " + std::to_string(s.k);
  if (s.launch == Launch::GluQ8) return "glu q8_1 k " + std::to_string(s.k);
  std::string out = std::string(type_name(s.type)) + " " + std::to_string(s.n) + std::string(times) + std::to_string(s.k);
  if (launch_is_fused(s.launch)) out += launch_is_unfused(s.launch) ? " gate+up unfused" : " gate+up";
  if (launch_is_group(s.launch)) out += " same-input group";
  if (launch_is_pipelined(s.launch)) out += " pipelined";
  if (launch_has_ids(s.launch)) out += " experts " + std::to_string(s.used) + "/" + std::to_string(s.experts);
  return out;
}

std::string members_text(const std::vector<GroupMember>& members) {
  std::string out;
  for (const GroupMember& m : members) out += (out.empty() ? "" : ",") + std::string(type_name(m.type)) + ":" + std::to_string(m.n);
  return out;
}

std::optional<std::vector<GroupMember>> parse_members(std::string_view text, std::string* why) {
  std::vector<GroupMember> out;
  const auto bad = [&](const std::string& what) -> std::optional<std::vector<GroupMember>> {
    if (why) *why = what;
    return std::nullopt;
  };
  size_t at = 0;
  for (;;) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view member = text.substr(at, comma - at);
    const size_t colon = member.find(':');
    const std::string index = std::to_string(out.size());
    if (colon == std::string_view::npos || colon == 0) return bad("member " + index + " is not TYPE:N");
    const std::string_view name = member.substr(0, colon), digits = member.substr(colon + 1);
    const auto type = parse_type(name);
    if (!type) return bad("unknown ggml type \"" + std::string(name.substr(0, 32)) + "\"");
    const bool all_digits = std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits.empty() || digits.size() > 10 || digits[0] == '0' || !all_digits || std::stoll(std::string(digits)) > INT32_MAX)
      return bad("member " + index + "'s N is not an integer 1..2147483647");
    out.push_back({*type, int(std::stoll(std::string(digits)))});
    if (comma == text.size()) return out;
    at = comma + 1;
  }
}

GgmlType group_type(const std::vector<GroupMember>& members) {
  if (members.empty()) return GgmlType::Q4_0;
  for (const GroupMember& m : members)
    if (m.type != members.front().type) return m.type;
  return members.front().type;
}

int64_t group_n(const std::vector<GroupMember>& members) {
  int64_t n = 0;
  for (const GroupMember& m : members) n += m.n;
  return n;
}

int group_types(const std::vector<GroupMember>& members) {
  std::vector<GgmlType> seen;
  for (const GroupMember& m : members)
    if (std::find(seen.begin(), seen.end(), m.type) == seen.end()) seen.push_back(m.type);
  return int(seen.size());
}

std::string group_text(const GroupKey& g, bool with_device) {
  return (with_device ? "device " + std::to_string(g.device) + " " : "") + shape_text(g) + " ncols " +
         std::to_string(g.ncols);
}

}  // namespace temper
