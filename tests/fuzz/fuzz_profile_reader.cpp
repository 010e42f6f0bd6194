// libFuzzer target: the engine's profile reader (hook/src/temper-mmvq-profile.h, compiled
// for the host) over arbitrary bytes, differentially against what `temper profile validate` runs.
// Any input must be refused by both or read by both with the same entries and path choices, the same
// ones flagged as malformed and the same ones approved; the two differences docs/profile-format.md
// names (a kernel-anvil file, a launch kind this reader does not know) are checked as such. Then the
// engine's choice and its one line for a few devices. A disagreement aborts: that is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "temper-mmvq-profile.h"
#include "temper/error.h"
#include "temper/input.h"
#include "temper/profile.h"
#include "support/profile_type_facts.h"
#include "temper/types.h"

namespace {

namespace tp = temper_profile;

// Temper's own type facts, as the engine's are ggml's.
tp::TypeFacts temper_types(const std::string& name) { return temper::test::profile_type_facts<tp::TypeFacts>(name); }

// An entry's key as both readers see it; a group's members as "type id:n," each.
using Key =
    std::tuple<std::string, std::string, long long, int, long long, long long, std::string, long long, long long, long long, std::string>;
using PathKey = std::tuple<std::string, std::string, long long, int, std::string, long long>;

[[noreturn]] void disagree(const std::string& what) {
  std::fprintf(stderr, "profile readers disagree: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const tp::Profile engine = tp::parse(text.data(), text.size(), temper_types);

  std::string refused;
  bool anvil = false;
  std::map<Key, std::pair<bool, bool>> core;  // problem?, approved?
  std::map<PathKey, std::pair<bool, bool>> core_paths;
  try {
    const nlohmann::json j = temper::parse_json_input(text, "fuzz");
    anvil = temper::is_kernel_anvil_json(j);
    const temper::Profile p = temper::profile_from_json(j, "fuzz", "");
    for (const temper::ProfileEntry& e : p.entries) {
      temper::Profile one = p;
      one.entries = {e};
      one.paths.clear();
      std::string members;
      for (const temper::GroupMember& m : e.key.members) members += std::to_string(int(m.type)) + ":" + std::to_string(m.n) + ",";
      const Key k{e.key.arch, e.key.device.name, e.key.device.compute_units, int(e.key.type), e.key.n, e.key.k,
                  std::string(temper::launch_name(e.key.launch)), e.key.experts, e.key.used, e.key.ncols, members};
      core[k] = {!temper::validate_profile(one).empty(), e.approval == temper::Approval::Approved};
    }
    for (const temper::PathChoice& c : p.paths) {
      temper::Profile one = p;
      one.entries.clear();
      one.paths = {c};
      const PathKey k{c.arch, c.device.name, c.device.compute_units, int(c.type), std::string(temper::launch_name(c.launch)), c.ncols};
      core_paths[k] = {!temper::validate_profile(one).empty(), c.approval == temper::Approval::Approved};
    }
  } catch (const temper::Error& e) {
    refused = e.what();
  }

  bool newer_launch = false;
  for (const tp::Entry& e : engine.entries) newer_launch = newer_launch || e.launch == tp::kUnknownLaunch;
  for (const tp::PathRecord& c : engine.paths) newer_launch = newer_launch || !temper::parse_launch(c.launch_name);
  if (anvil) {
    if (engine.error.find("kernel-anvil") == std::string::npos) disagree("a kernel-anvil file the engine took for a profile");
  } else if (newer_launch) {
    if (refused.find("unknown launch kind") == std::string::npos) disagree("a launch kind only the engine skipped: " + refused);
  } else if (refused.empty() != engine.error.empty()) {
    disagree("validate: " + (refused.empty() ? std::string("read it") : refused) + "; engine: " +
             (engine.error.empty() ? std::string("read it") : engine.error));
  } else if (refused.empty()) {
    if (engine.entries.size() != core.size()) disagree("entry counts");
    for (const tp::Entry& e : engine.entries) {
      const auto it = core.find(
          Key{e.arch, e.device_name, e.compute_units, e.type, e.n, e.k, e.launch_name, e.experts, e.experts_used, e.ncols, e.members_key});
      if (it == core.end()) disagree("an entry only the engine read");
      if (it->second.first != !e.problem.empty()) disagree("malformed or not: " + e.problem);
      if (it->second.second != e.approved) disagree("approved or not");
    }
    if (engine.paths.size() != core_paths.size()) disagree("path choice counts");
    for (const tp::PathRecord& c : engine.paths) {
      const auto it = core_paths.find(PathKey{c.arch, c.device_name, c.compute_units, c.type, c.launch_name, c.ncols});
      if (it == core_paths.end()) disagree("a path choice only the engine read");
      if (it->second.first != !c.problem.empty()) disagree("path choice malformed or not: " + c.problem);
      if (it->second.second != c.approved) disagree("path choice approved or not");
    }
  }

  const auto some = [](int, int type, int ncols, int nwarps, int) { return (type + ncols + nwarps) % 3 != 0; };
  for (const tp::Device& d : {tp::Device{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0}, tp::Device{"gfx942", "AMD Instinct MI300X", 304, 1}}) {
    const tp::Choices c = tp::choose(engine, d, some);
    if (c.for_device + c.for_arch + c.other_arch + c.other_device + c.lacking_launch + c.not_compiled + c.malformed + c.unapproved !=
        int(engine.entries.size()))
      disagree("the one line does not count every entry once");
    if (c.group_entries > c.for_device + c.for_arch || c.groups.size() > size_t(c.group_entries))
      disagree("more groups applied than group entries counted");
    const tp::PathCounts& n = c.path_counts;
    if (n.for_device + n.for_arch + n.other + n.malformed + n.unapproved != int(engine.paths.size()))
      disagree("the one line does not count every path choice once");
    (void)tp::line("fuzz.json", c, d);
  }
  return 0;
}
