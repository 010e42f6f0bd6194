// libFuzzer target: the engine's profile reader (resources/engine/temper-mmvq-profile.h, compiled
// for the host) over arbitrary bytes, differentially against what `temper profile validate` runs.
// Any input must be refused by both or read by both with the same entries, the same ones flagged
// as malformed and the same ones approved; the two differences docs/profile-format.md names (a
// kernel-anvil file, a launch kind this reader does not know) are checked as such. Then the
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
#include "temper/types.h"

namespace {

namespace tp = temper_profile;

tp::TypeFacts temper_types(const std::string& name) {
  tp::TypeFacts f;
  if (const auto t = temper::parse_type(name)) {
    const temper::TypeInfo& ti = temper::type_info(*t);
    f.id = int(*t);
    f.mmvq = ti.quantized && *t != temper::GgmlType::Q8_1 && *t != temper::GgmlType::Q8_K;
    f.block = int(ti.block_size);
  }
  return f;
}

using Key = std::tuple<std::string, std::string, long long, int, long long, long long, std::string, long long, long long, long long>;

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
  try {
    const nlohmann::json j = temper::parse_json_input(text, "fuzz");
    anvil = temper::is_kernel_anvil_json(j);
    const temper::Profile p = temper::profile_from_json(j, "fuzz", "");
    for (const temper::ProfileEntry& e : p.entries) {
      temper::Profile one = p;
      one.entries = {e};
      const Key k{e.key.arch, e.key.device.name, e.key.device.compute_units, int(e.key.type), e.key.n, e.key.k,
                  std::string(temper::launch_name(e.key.launch)), e.key.experts, e.key.used, e.key.ncols};
      core[k] = {!temper::validate_profile(one).empty(), e.approval == temper::Approval::Approved};
    }
  } catch (const temper::Error& e) {
    refused = e.what();
  }

  bool newer_launch = false;
  for (const tp::Entry& e : engine.entries) newer_launch = newer_launch || e.launch == tp::kUnknownLaunch;
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
      const auto it = core.find(Key{e.arch, e.device_name, e.compute_units, e.type, e.n, e.k, e.launch_name, e.experts, e.experts_used, e.ncols});
      if (it == core.end()) disagree("an entry only the engine read");
      if (it->second.first != !e.problem.empty()) disagree("malformed or not: " + e.problem);
      if (it->second.second != e.approved) disagree("approved or not");
    }
  }

  const auto some = [](int, int type, int ncols, int nwarps, int) { return (type + ncols + nwarps) % 3 != 0; };
  for (const tp::Device& d : {tp::Device{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0}, tp::Device{"gfx942", "AMD Instinct MI300X", 304, 1}}) {
    const tp::Choices c = tp::choose(engine, d, some);
    if (c.for_device + c.for_arch + c.other_arch + c.other_device + c.lacking_launch + c.not_compiled + c.malformed + c.unapproved !=
        int(engine.entries.size()))
      disagree("the one line does not count every entry once");
    (void)tp::line("fuzz.json", c, d);
  }
  return 0;
}
