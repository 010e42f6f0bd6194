// Issue 32 (findings 1, 6, 7): the engine's profile reader, hook/src/temper-mmvq-profile.h,
// compiled for the host. The shared corpus (tests/profile/corpus/) goes through it and through what
// `temper profile validate` runs (load_profile + validate_profile), and both must reach the same
// verdict on every file: refused whole, or read with the same entries flagged and the same entries
// launched. Also: the reader's I/O (FIFOs, devices, huge files), its memory on hostile nesting,
// the engine's choice per device and its one line, and loading without blocking.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "temper-mmvq-profile.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/profile.h"
#include "support/profile_type_facts.h"
#include "temper/types.h"
#include "support/test_dir.h"

namespace temper {
namespace {

namespace fs = std::filesystem;
namespace tp = temper_profile;

const fs::path kCorpus = fs::path(TEMPER_SOURCE_DIR) / "tests/profile/corpus";

// Temper's own type facts, as the engine's are ggml's.
tp::TypeFacts temper_types(const std::string& name) { return test::profile_type_facts<tp::TypeFacts>(name); }

// An entry's key and config, as both readers see it (type id, launch by name, experts, device, and a
// group's members as "type id:n," each).
using EntryKey =
    std::tuple<std::string, std::string, long long, int, long long, long long, std::string, long long, long long, long long, std::string>;
EntryKey key_of(const tp::Entry& e) {
  return {e.arch, e.device_name, e.compute_units, e.type, e.n, e.k, e.launch_name, e.experts, e.experts_used, e.ncols, e.members_key};
}
EntryKey key_of(const ProfileEntry& e) {
  std::string members;
  for (const GroupMember& m : e.key.members) members += std::to_string(int(m.type)) + ":" + std::to_string(m.n) + ",";
  return {e.key.arch, e.key.device.name,  e.key.device.compute_units, int(e.key.type), e.key.n, e.key.k,
          std::string(launch_name(e.key.launch)), e.key.experts, e.key.used, e.key.ncols, members};
}

// A path choice's key as both readers see it (type id, launch by name, device).
using PathKey = std::tuple<std::string, std::string, long long, int, std::string, long long>;
PathKey key_of(const tp::PathRecord& c) { return {c.arch, c.device_name, c.compute_units, c.type, c.launch_name, c.ncols}; }
PathKey key_of(const PathChoice& c) {
  return {c.arch, c.device.name, c.device.compute_units, int(c.type), std::string(launch_name(c.launch)), c.ncols};
}

// What `temper profile validate` makes of a file: refused (the reason), or each entry and path
// choice with whether validate lists a problem for it.
struct CoreVerdict {
  std::string refused;
  bool anvil = false;
  std::map<EntryKey, std::pair<bool, Approval>> entries;  // problem?, approval
  std::map<PathKey, std::pair<bool, Approval>> paths;
};

CoreVerdict core_verdict(const fs::path& path) {
  CoreVerdict v;
  try {
    const Profile p = load_profile(path, "");
    v.anvil = p.source == kSourceKernelAnvil && p.entries.size() == size_t(std::count_if(p.entries.begin(), p.entries.end(),
                                                                                          [](const ProfileEntry& e) { return e.key.arch.empty(); }));
    for (const ProfileEntry& e : p.entries) {
      Profile one = p;
      one.entries = {e};
      one.paths.clear();
      v.entries[key_of(e)] = {!validate_profile(one).empty(), e.approval};
    }
    for (const PathChoice& c : p.paths) {
      Profile one = p;
      one.entries.clear();
      one.paths = {c};
      v.paths[key_of(c)] = {!validate_profile(one).empty(), c.approval};
    }
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput) << path << ": " << e.what();
    v.refused = e.what();
  }
  return v;
}

// (7) The one reader: every corpus file gets the same verdict from both.
TEST(ProfileReader, TheCorpusReadsTheSameAsProfileValidate) {
  int files = 0, refused = 0, malformed_files = 0;
  for (const auto& f : fs::directory_iterator(kCorpus)) {
    ++files;
    const std::string name = f.path().filename().string();
    SCOPED_TRACE(name);
    const CoreVerdict core = core_verdict(f.path());
    const tp::Profile engine = tp::read(f.path().string(), temper_types);
    if (name.rfind("refused-", 0) == 0) {
      ++refused;
      EXPECT_FALSE(core.refused.empty());
      EXPECT_FALSE(engine.error.empty());
      continue;
    }
    if (name.rfind("anvil-", 0) == 0) {  // validate reads it as a kernel-anvil import: nothing an engine launches
      EXPECT_TRUE(core.refused.empty() || core.refused.find("configs") != std::string::npos) << core.refused;
      EXPECT_NE(engine.error.find("a kernel-anvil file"), std::string::npos) << engine.error;
      for (const auto& [k, e] : core.entries) EXPECT_TRUE(e.first) << "an anvil cell without an arch is a problem";
      continue;
    }
    if (name.rfind("newer-launch", 0) == 0) {  // the one difference, by design (docs/profile-format.md)
      EXPECT_NE(core.refused.find("unknown launch kind"), std::string::npos) << core.refused;
      ASSERT_EQ(engine.error, "");
      EXPECT_EQ(std::count_if(engine.entries.begin(), engine.entries.end(), [](const tp::Entry& e) { return e.launch == tp::kUnknownLaunch; }), 1);
      continue;
    }
    ASSERT_EQ(core.refused, "");
    ASSERT_EQ(engine.error, "");
    ASSERT_EQ(engine.entries.size(), core.entries.size());
    int problems = 0;
    for (const tp::Entry& e : engine.entries) {
      const auto it = core.entries.find(key_of(e));
      ASSERT_NE(it, core.entries.end()) << e.arch << " " << e.n << "x" << e.k;
      EXPECT_EQ(!e.problem.empty(), it->second.first) << e.arch << " " << e.n << "x" << e.k << ": " << e.problem;
      EXPECT_EQ(e.approved, it->second.second == Approval::Approved);
      problems += !e.problem.empty();
    }
    ASSERT_EQ(engine.paths.size(), core.paths.size());
    for (const tp::PathRecord& c : engine.paths) {
      const auto it = core.paths.find(key_of(c));
      ASSERT_NE(it, core.paths.end()) << c.arch << " " << c.launch_name << " " << c.ncols;
      EXPECT_EQ(!c.problem.empty(), it->second.first) << c.launch_name << " " << c.ncols << ": " << c.problem;
      EXPECT_EQ(c.approved, it->second.second == Approval::Approved);
      problems += !c.problem.empty();
    }
    if (name.rfind("valid-", 0) == 0) {
      EXPECT_EQ(problems, 0);
    }
    if (name.rfind("malformed-", 0) == 0) {
      ++malformed_files;
      EXPECT_EQ(problems, 1);
    }
  }
  EXPECT_GE(files, 119);
  EXPECT_GE(refused, 76);
  EXPECT_GE(malformed_files, 30);
}

// `temper profile validate` asks the engine's reader, compiled into core (engine_reader_problems), last:
// what it refuses or skips, in its own words, on every corpus file; nothing on a valid one.
TEST(ProfileReader, ValidateAsksTheEnginesReaderCompiledIntoCore) {
  EXPECT_EQ(engine_reader_problems(kCorpus / "refused-paths-object.json"),
            std::vector<std::string>{"the engine refuses it: \"paths\" is not an array"});
  int skipped = 0;
  for (const auto& f : fs::directory_iterator(kCorpus)) {
    SCOPED_TRACE(f.path().filename().string());
    const tp::Profile engine = tp::read(f.path().string(), temper_types);
    const std::vector<std::string> problems = engine_reader_problems(f.path());
    if (!engine.error.empty()) {
      EXPECT_EQ(problems, std::vector<std::string>{"the engine refuses it: " + engine.error});
      continue;
    }
    std::vector<std::string> expected;
    for (size_t i = 0; i < engine.entries.size(); ++i)
      if (!engine.entries[i].problem.empty()) expected.push_back("entry " + std::to_string(i) + ": the engine skips it: " + engine.entries[i].problem);
    for (size_t i = 0; i < engine.paths.size(); ++i)
      if (!engine.paths[i].problem.empty()) expected.push_back("path choice " + std::to_string(i) + ": the engine skips it: " + engine.paths[i].problem);
    EXPECT_EQ(problems, expected);
    if (f.path().filename().string().rfind("valid-", 0) == 0) EXPECT_TRUE(problems.empty());
    skipped += !expected.empty();
  }
  EXPECT_GE(skipped, 30);  // the malformed-* files
}

// Every corpus file through the reader's parse alone under a memory limit of 64 MiB of address
// space beyond the test's own: a sanitizer build reports any read out of bounds, UB or leak.
TEST(ProfileReader, EveryCorpusFileParsesWithinItsBounds) {
  for (const auto& f : fs::directory_iterator(kCorpus)) {
    const std::string text = read_file(f.path());
    const tp::Profile p = tp::parse(text.data(), text.size(), temper_types);
    EXPECT_TRUE(p.error.empty() || p.entries.empty()) << f.path();
  }
}

// The engine's choice on one device agrees with Temper's applied_entry (what estimates assume).
TEST(ProfileReader, TheChoiceForADeviceIsTempersAppliedEntry) {
  const fs::path file = kCorpus / "valid-v2-launches-and-devices.json";
  const Profile core = load_profile(file, "");
  const tp::Profile engine = tp::read(file.string(), temper_types);
  ASSERT_EQ(engine.error, "");
  const auto all_compiled = [](int, int, int, int, int) { return true; };
  for (const auto& [name, cus] : std::vector<std::pair<std::string, int>>{{"NVIDIA H100 80GB HBM3", 132}, {"NVIDIA H200", 132},
                                                                          {"NVIDIA H100 PCIe", 114}}) {
    SCOPED_TRACE(name);
    const tp::Device d{"sm_90", name, cus, 0};
    const tp::Choices c = tp::choose(engine, d, all_compiled);
    int matched = 0;
    for (const ProfileEntry& e : core.entries) {
      if (e.key.arch != "sm_90") continue;
      const ProfileEntry* applied = applied_entry(core, "sm_90", ProfileDevice{name, cus, 0}, e.key.shape(), e.key.ncols);
      const auto it = c.table.find({int(e.key.launch), int(e.key.type), e.key.n, e.key.k, e.key.ncols});
      ASSERT_EQ(applied != nullptr, it != c.table.end()) << key_text(e.key);
      if (applied) {
        EXPECT_EQ(it->second.nwarps, applied->config.nwarps) << key_text(e.key);
        EXPECT_EQ(it->second.rows, applied->config.rows_per_block) << key_text(e.key);
        ++matched;
      }
    }
    EXPECT_GT(matched, 0);
  }
}

// The one line, in the wording docs/engine.md shows, every entry counted once.
TEST(ProfileReader, TheOneLineCountsEveryEntryOnce) {
  const tp::Profile p = tp::read((kCorpus / "valid-v2-launches-and-devices.json").string(), temper_types);
  ASSERT_EQ(p.error, "");
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  // q4_K instantiations only where nwarps is 4 (a kernel set without the others).
  const auto compiled = [](int, int type, int, int nwarps, int) { return type != int(GgmlType::Q4_K) || nwarps != 2; };
  const tp::Choices c = tp::choose(p, h100, compiled);
  EXPECT_EQ(tp::line("/p.json", c, h100),
            "temper: profile /p.json: 3 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 2 for sm_90; ignored 2 for other "
            "archs, 1 for other devices, 0 for launches this hook lacks, 2 with a config not compiled in, 0 malformed, 2 not approved");
  EXPECT_EQ(c.for_device + c.for_arch + c.other_arch + c.other_device + c.lacking_launch + c.not_compiled + c.malformed + c.unapproved,
            int(p.entries.size()));
  const tp::Profile newer = tp::read((kCorpus / "newer-launch.json").string(), temper_types);
  const tp::Choices n = tp::choose(newer, h100, compiled);
  EXPECT_EQ(n.lacking_launch, 1);
  EXPECT_EQ(n.for_arch, 1);
  const tp::Profile bad = tp::read((kCorpus / "malformed-no-provenance.json").string(), temper_types);
  EXPECT_EQ(tp::choose(bad, h100, compiled).malformed, 1);
}

// Pipelined launches (hook v7): each *_pipelined entry is looked up under its own kind, the device's
// own before the arch's; where the build has no pipelined instantiation (HIP, a ggml without the
// dependent-launch wait) it is skipped and counted as not compiled in; the line says how many apply.
// Temper's applied_pipelined is the same choice.
TEST(ProfileReader, APipelinedEntryIsLookedUpUnderItsOwnKind) {
  const fs::path file = kCorpus / "valid-pipelined.json";
  const tp::Profile p = tp::read(file.string(), temper_types);
  ASSERT_EQ(p.error, "");
  const int q4 = int(GgmlType::Q4_K);
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const tp::Choices c = tp::choose(p, h100, [](int, int, int, int, int) { return true; });
  EXPECT_EQ(tp::line("/p.json", c, h100),
            "temper: profile /p.json: 1 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 5 for sm_90; ignored 0 for other "
            "archs, 0 for other devices, 0 for launches this hook lacks, 0 with a config not compiled in, 0 malformed, 0 not "
            "approved; 5 of the entries for NVIDIA H100 80GB HBM3 and sm_90 are pipelined launches");
  ASSERT_EQ(c.table.count({tp::kMulMatPipelined, q4, 512, 4096, 1}), 1u);
  EXPECT_EQ(c.table.count({tp::kMulMat, q4, 512, 4096, 1}), 1u);  // the plain entry stays (the hook asks the pipelined kind first)
  EXPECT_EQ(c.table.at({tp::kMulMatIdGluPipelined, q4, 768, 2048, 1}).rows, 2);
  EXPECT_EQ(tp::kMulMatGluPipelined, tp::kMulMatGlu + tp::kPipelinedBase);
  EXPECT_EQ(tp::kMulMatIdGluPipelined, tp::kMulMatIdGlu + tp::kPipelinedBase);
  // A build without pipelined instantiations: those entries are not compiled in, the plain one applies.
  const tp::Choices unpipelined = tp::choose(p, h100, [](int launch, int, int, int, int) { return !tp::launch_is_pipelined(launch); });
  EXPECT_EQ(unpipelined.not_compiled, 5);
  EXPECT_EQ(unpipelined.table.size(), 1u);
  EXPECT_EQ(unpipelined.pipelined_entries, 0);
  // Temper's side: the H100's own pipelined entry, and none for the H200 (the arch's plain entry is not pipelined).
  const Profile core = load_profile(file);
  const ShapeKey plain{GgmlType::Q4_K, 512, 4096};
  const ProfileEntry* own = applied_pipelined(core, "sm_90", ProfileDevice{"NVIDIA H100 80GB HBM3", 132, 0}, plain);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->key.launch, Launch::MulMatPipelined);
  EXPECT_EQ(applied_pipelined(core, "sm_90", ProfileDevice{"NVIDIA H200", 132, 0}, plain), nullptr);
  ShapeKey experts{GgmlType::Q4_K, 2048, 768, Launch::MulMatId};
  experts.experts = 128, experts.used = 8;
  ASSERT_NE(applied_pipelined(core, "sm_90", ProfileDevice{"NVIDIA H200", 132, 0}, experts), nullptr);
  EXPECT_EQ(applied_pipelined(core, "sm_90", ProfileDevice{}, with_launch(plain, Launch::MulMatPipelined)), nullptr);
}

// Same-input groups (hook v5): Loader::group() finds a group by its members in any order (hook v12), the
// device's own entry before the arch's (as Temper's applied_group); has_groups() says whether any
// applies; an entry whose config the hook did not compile is skipped and counted; the line counts them.
TEST(ProfileReader, AGroupIsFoundByItsMembersTheDevicesOwnBeforeTheArchs) {
  const fs::path file = kCorpus / "valid-groups.json";
  const int q4 = int(GgmlType::Q4_K), q6 = int(GgmlType::Q6_K);
  const tp::GroupKey qkv{1, 4096, 3, {q4, q4, q4}, {4096, 1024, 1024}};
  const tp::GroupKey mixed{1, 4096, 3, {q4, q4, q6}, {4096, 1024, 1024}};
  const tp::GroupKey qkv2{2, 4096, 3, {q4, q4, q4}, {4096, 1024, 1024}};
  const tp::GroupKey reordered{1, 4096, 3, {q4, q4, q4}, {1024, 4096, 1024}};
  const tp::GroupKey engine_order{1, 4096, 3, {q4, q6, q4}, {4096, 1024, 1024}};  // llama.cpp runs q, v, k
  const tp::GroupKey other_members{1, 4096, 3, {q4, q6, q6}, {4096, 1024, 1024}};
  const tp::GroupKey two{1, 4096, 2, {q4, q4, 99, 99}, {4096, 1024, 7, 7}};  // past count: never read
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const tp::Device h200{"sm_90", "NVIDIA H200", 132, 1};
  const tp::Device ada{"sm_89", "NVIDIA GeForce RTX 4090", 128, 2};
  std::vector<std::string> said;
  const tp::Compiled all = [](int, int, int, int, int) { return true; };
  tp::Loader loader(temper_types, [&](const std::string& l) { said.push_back(l); }, 3, all);
  loader.load(file.c_str());
  tp::Config c;
  ASSERT_TRUE(loader.group(h100, qkv, &c));
  EXPECT_EQ(c.nwarps, 4);
  EXPECT_EQ(c.rows, 2);
  ASSERT_TRUE(loader.group(h100, mixed, &c));
  EXPECT_EQ(c.nwarps, 8);
  EXPECT_EQ(c.rows, 1);
  ASSERT_TRUE(loader.group(h100, qkv2, &c));  // the arch's
  EXPECT_EQ(c.nwarps, 2);
  EXPECT_EQ(c.rows, 4);
  ASSERT_TRUE(loader.group(h100, reordered, &c));  // qkv's members in another order
  EXPECT_EQ(c.nwarps, 4);
  EXPECT_EQ(c.rows, 2);
  ASSERT_TRUE(loader.group(h100, engine_order, &c));  // mixed's
  EXPECT_EQ(c.nwarps, 8);
  EXPECT_EQ(c.rows, 1);
  EXPECT_FALSE(loader.group(h100, other_members, &c));
  EXPECT_FALSE(loader.group(h100, two, &c));
  EXPECT_FALSE(loader.group(h100, tp::GroupKey{1, 4096, 5, {}, {}}, &c));
  EXPECT_FALSE(loader.group(h200, qkv, &c));  // the H100's own entry is not the H200's
  ASSERT_TRUE(loader.group(h200, qkv2, &c));
  EXPECT_EQ(c.nwarps, 2);
  EXPECT_TRUE(loader.has_groups(h100));
  EXPECT_TRUE(loader.has_groups(h200));
  EXPECT_FALSE(loader.has_groups(ada));
  // A plain entry of the same profile still applies (the arch-level q4_K 512x4096).
  tp::Config plain;
  EXPECT_TRUE(loader.lookup(h100, all, {tp::kMulMat, q4, 512, 4096, 1}, &plain));
  ASSERT_EQ(said.size(), 3u);
  EXPECT_EQ(said[0],
            "temper: profile " + file.string() + ": 2 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 2 for sm_90; ignored 0 for "
            "other archs, 0 for other devices, 0 for launches this hook lacks, 0 with a config not compiled in, 0 malformed, 0 not "
            "approved; 3 of the entries for NVIDIA H100 80GB HBM3 and sm_90 are same-input groups (mul_mat_group)");
  // The group kernel without nwarps 8: the mixed group is skipped and counted, the rest applies.
  const tp::Profile p = tp::read(file.string(), temper_types);
  ASSERT_EQ(p.error, "");
  const tp::Choices no8 = tp::choose(p, h100, [](int launch, int, int, int nwarps, int) { return launch != tp::kMulMatGroup || nwarps != 8; });
  EXPECT_EQ(no8.not_compiled, 1);
  EXPECT_EQ(no8.group_entries, 2);
  EXPECT_EQ(no8.groups.size(), 2u);
  // Without a profile's line before: group() and has_groups() with no compiled set answer stock.
  tp::Loader blind(temper_types, [](const std::string&) {});
  blind.load(file.c_str());
  EXPECT_FALSE(blind.has_groups(h100));
  EXPECT_FALSE(blind.group(h100, qkv, &c));
  EXPECT_TRUE(blind.lookup(h100, all, {tp::kMulMat, q4, 512, 4096, 1}, &plain));  // it learns what lookup() brings
  EXPECT_TRUE(blind.group(h100, qkv, &c));
}

// Temper's applied_group is the same choice (the core side of the lookup above).
TEST(ProfileReader, TempersAppliedGroupAgrees) {
  const Profile p = load_profile(kCorpus / "valid-groups.json");
  const ProfileDevice h100{"NVIDIA H100 80GB HBM3", 132, 0}, h200{"NVIDIA H200", 132, 0};
  const std::vector<GroupMember> qkv{{GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}, {GgmlType::Q4_K, 1024}};
  const ProfileEntry* own = applied_group(p, "sm_90", h100, qkv, 4096, 1);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->config, (Config{4, 2}));
  EXPECT_EQ(applied_group(p, "sm_90", h200, qkv, 4096, 1), nullptr);
  ASSERT_NE(applied_group(p, "sm_90", h200, qkv, 4096, 2), nullptr);
  EXPECT_EQ(applied_group(p, "sm_90", h200, qkv, 4096, 2)->config, (Config{2, 4}));
  EXPECT_EQ(applied_group(p, "sm_89", h100, qkv, 4096, 2), nullptr);
  // The members in the engine's order (q, v, k) find the same entries as the reader does.
  const std::vector<GroupMember> mixed_engine{{GgmlType::Q4_K, 4096}, {GgmlType::Q6_K, 1024}, {GgmlType::Q4_K, 1024}};
  const ProfileEntry* mixed = applied_group(p, "sm_90", h100, mixed_engine, 4096, 1);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->config, (Config{8, 1}));
  const std::vector<GroupMember> reordered{{GgmlType::Q4_K, 1024}, {GgmlType::Q4_K, 4096}, {GgmlType::Q4_K, 1024}};
  ASSERT_NE(applied_group(p, "sm_90", h100, reordered, 4096, 1), nullptr);
  EXPECT_EQ(applied_group(p, "sm_90", h100, reordered, 4096, 1), own);
  const std::vector<GroupMember> other{{GgmlType::Q4_K, 4096}, {GgmlType::Q6_K, 1024}, {GgmlType::Q6_K, 1024}};
  EXPECT_EQ(applied_group(p, "sm_90", h100, other, 4096, 1), nullptr);
}

// Path choices (hook v4): the device's own record decides, approved or not; else the arch's.
TEST(ProfileReader, APathChoiceForADeviceIsItsOwnElseTheArchs) {
  const tp::Profile p = tp::read((kCorpus / "valid-paths.json").string(), temper_types);
  ASSERT_EQ(p.error, "");
  ASSERT_EQ(p.paths.size(), 4u);
  const auto all = [](int, int, int, int, int) { return true; };
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0}, h200{"sm_90", "NVIDIA H200", 132, 1},
      mi300{"gfx942", "AMD Instinct MI300X", 304, 2};
  const int q4k = int(GgmlType::Q4_K), q5k = int(GgmlType::Q5_K);
  const tp::Choices own = tp::choose(p, h100, all);
  EXPECT_EQ(own.paths, (std::map<tp::PathKey, int>{{{tp::kMulMat, q4k, 4}, tp::kMmq},
                                                   {{tp::kMulMat, q5k, 5}, tp::kMmvq},
                                                   {{tp::kMulMatId, q4k, 2}, tp::kMmq}}));
  EXPECT_EQ(own.path_counts.for_device, 2);
  EXPECT_EQ(own.path_counts.for_arch, 1);
  EXPECT_EQ(own.path_counts.unapproved, 1);  // q6_K's rejected choice
  const tp::Choices other = tp::choose(p, h200, all);
  EXPECT_EQ(other.paths, (std::map<tp::PathKey, int>{{{tp::kMulMatId, q4k, 2}, tp::kMmq}}));
  EXPECT_EQ(other.path_counts.other, 2);
  EXPECT_TRUE(tp::choose(p, mi300, all).paths.empty());
  // A device's own pending (or malformed) record is not replaced by the arch's approved one.
  Profile core = load_profile(kCorpus / "valid-paths.json", "");
  PathChoice pending = core.paths.front();
  for (PathChoice& c : core.paths)
    if (c.launch == Launch::MulMatId) pending = c;
  pending.device = {"NVIDIA H100 80GB HBM3", 132, 81559};
  pending.approval = Approval::Pending;
  core.paths.push_back(pending);
  const std::string json_text = to_json(core).dump();
  const tp::Profile shadowed = tp::parse(json_text.data(), json_text.size(), temper_types);
  ASSERT_EQ(shadowed.error, "");
  EXPECT_EQ(tp::choose(shadowed, h100, all).paths.count({tp::kMulMatId, q4k, 2}), 0u);
  EXPECT_EQ(tp::choose(shadowed, h200, all).paths.count({tp::kMulMatId, q4k, 2}), 1u);
}

// The one line adds the path choices; a choice for a decision this ggml lacks is said not applied.
TEST(ProfileReader, TheLineCountsPathChoicesAndSaysWhatTheTreeCannotApply) {
  const tp::Profile p = tp::read((kCorpus / "valid-paths.json").string(), temper_types);
  ASSERT_EQ(p.error, "");
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const tp::Choices c = tp::choose(p, h100, [](int, int, int, int, int) { return true; });
  const std::string head = "temper: profile /p.json: 0 entries for NVIDIA H100 80GB HBM3 (sm_90, device 0), 1 for sm_90; ignored 0 for "
                           "other archs, 0 for other devices, 0 for launches this hook lacks, 0 with a config not compiled in, 0 "
                           "malformed, 0 not approved; 2 path choices (mmvq/mmq) for NVIDIA H100 80GB HBM3, 1 for sm_90 (ignored 0 "
                           "for other archs or devices, 0 malformed, 1 not approved)";
  EXPECT_EQ(tp::line("/p.json", c, h100, 3), head);
  EXPECT_EQ(tp::line("/p.json", c, h100, 2), head + "; path choices not applied: this ggml has no ggml_cuda_should_use_mmvq");
  EXPECT_EQ(tp::line("/p.json", c, h100, 0), head + "; path choices not applied: this ggml has no ggml_cuda_should_use_mmvq" +
                                                 "; path choices not applied: this ggml has no get_mmvq_mmid_max_batch");
  // Through the loader, as the engine asks: the path lookup loads, prints the line once, answers.
  std::vector<std::string> said;
  tp::Loader loader(temper_types, [&](const std::string& l) { said.push_back(l); }, 1);
  const std::string file = (kCorpus / "valid-paths.json").string();
  loader.load(file.c_str());
  const auto all = [](int, int, int, int, int) { return true; };
  EXPECT_EQ(loader.path(h100, all, tp::kMulMat, int(GgmlType::Q4_K), 4), tp::kMmq);
  EXPECT_EQ(loader.path(h100, all, tp::kMulMat, int(GgmlType::Q4_K), 3), tp::kNoPath);
  EXPECT_EQ(loader.path(h100, all, tp::kMulMat, int(GgmlType::Q6_K), 8), tp::kNoPath);  // rejected
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("; path choices not applied: this ggml has no get_mmvq_mmid_max_batch"), std::string::npos) << said[0];
  EXPECT_EQ(said[0].find("no ggml_cuda_should_use_mmvq"), std::string::npos) << said[0];
}

// (7) The loader treated approval null, true, 1, [], {} as approved and launched a tuned config.
TEST(ProfileReader, OnlyTheStringApprovedApproves) {
  for (const char* name : {"null", "true", "one", "array", "object", "other"}) {
    const tp::Profile p = tp::read((kCorpus / (std::string("refused-approval-") + name + ".json")).string(), temper_types);
    EXPECT_NE(p.error, "") << name;
    EXPECT_TRUE(p.entries.empty()) << name;
  }
}

class ReaderIo : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_test_dir("temper-profile-reader"); }
  void TearDown() override { test::remove_test_dir(dir_); }
  fs::path dir_;
};

// (1) A FIFO as the profile: fopen blocked forever, holding the loader's mutex.
TEST_F(ReaderIo, AFifoADeviceAFolderAndAHugeFileAreRefusedAtOnce) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo.json").c_str(), 0600), 0);
  {
    FILE* f = std::fopen((dir_ / "huge.json").c_str(), "w");
    ASSERT_TRUE(f);
    ASSERT_EQ(::ftruncate(::fileno(f), off_t{2} << 30), 0);
    std::fclose(f);
  }
  for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{
           {(dir_ / "fifo.json").string(), "not a regular file"},
           {"/dev/zero", "not a regular file"},
           {dir_.string(), "not a regular file"},
           {(dir_ / "huge.json").string(), "2147483648 bytes, more than the 16 MiB"},
           {(dir_ / "missing.json").string(), "cannot open it: No such file or directory"}}) {
    const auto start = std::chrono::steady_clock::now();
    const tp::Profile p = tp::read(path, temper_types);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << path;
    EXPECT_NE(p.error.find(why), std::string::npos) << path << ": " << p.error;
  }
}

// (1) The engine's side: TEMPER_PROFILE naming a FIFO. The first launch returns at once, stock, and
// the one line says why; every launch after runs stock without reading again.
TEST_F(ReaderIo, TheEngineRunsStockWithItsLineWhenTheProfileIsAFifo) {
  const fs::path fifo = dir_ / "profile.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::string> said;
  tp::Loader loader(temper_types, [&](const std::string& l) { said.push_back(l); });
  ::setenv("TEMPER_PROFILE", fifo.c_str(), 1);
  const tp::Device d{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  tp::Config c;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(loader.lookup(d, [](int, int, int, int, int) { return true; }, {0, 12, 14336, 4096, 1}, &c));
  EXPECT_FALSE(loader.lookup(d, [](int, int, int, int, int) { return true; }, {0, 12, 14336, 4096, 1}, &c));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  ::unsetenv("TEMPER_PROFILE");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "temper: profile " + fifo.string() + " ignored: not a regular file (a FIFO, a device or a folder); mmvq runs stock");
}

// (7) "when no entry is usable it prints no line": the line comes on each device's first launch,
// whatever the profile holds for it; a default profile that is not there is silence.
TEST_F(ReaderIo, TheLineIsPrintedOncePerDeviceEvenWhenNothingIsUsable) {
  std::vector<std::string> said;
  tp::Loader loader(temper_types, [&](const std::string& l) { said.push_back(l); });
  const auto all = [](int, int, int, int, int) { return true; };
  const std::string file = (kCorpus / "valid-v2-launches-and-devices.json").string();
  loader.load(file.c_str());
  const tp::Device mi300{"gfx942", "AMD Instinct MI300X", 304, 1}, h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  tp::Config c;
  EXPECT_FALSE(loader.lookup(mi300, all, {0, 12, 1, 256, 1}, &c));
  EXPECT_FALSE(loader.lookup(mi300, all, {0, 12, 1, 256, 1}, &c));
  ASSERT_TRUE(loader.lookup(h100, all, {int(tp::kMulMat), int(GgmlType::Q4_K), 14336, 4096, 1}, &c));
  EXPECT_EQ(c.nwarps, 4);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[0].rfind("temper: profile " + file + ": 0 entries for AMD Instinct MI300X (gfx942, device 1), 1 for gfx942;", 0), 0u)
      << said[0];
  EXPECT_NE(said[1].find("entries for NVIDIA H100 80GB HBM3 (sm_90, device 0)"), std::string::npos);
  // No default profile: stock, silently.
  said.clear();
  ::setenv("XDG_CONFIG_HOME", dir_.c_str(), 1);
  tp::Loader quiet(temper_types, [&](const std::string& l) { said.push_back(l); });
  EXPECT_FALSE(quiet.lookup(h100, all, {0, 12, 14336, 4096, 1}, &c));
  ::unsetenv("XDG_CONFIG_HOME");
  EXPECT_TRUE(said.empty());
}

// The hook's cheap questions, asked at every launch and graph check: without a usable profile each
// answers "nothing" (the first one loads, silently without a default profile); a profile says whether
// it holds anything, and path choices apart.
TEST_F(ReaderIo, TheHooksCheapQuestionsSayWhetherTheProfileHoldsAnything) {
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  std::vector<std::string> said;
  ::setenv("XDG_CONFIG_HOME", dir_.c_str(), 1);
  tp::Loader none(temper_types, [&](const std::string& l) { said.push_back(l); });
  EXPECT_FALSE(none.any());
  EXPECT_FALSE(none.any_paths());
  EXPECT_FALSE(none.has_groups(h100));
  ::unsetenv("XDG_CONFIG_HOME");
  EXPECT_TRUE(said.empty());
  tp::Loader missing(temper_types, [&](const std::string& l) { said.push_back(l); });
  missing.load((dir_ / "not-there.json").c_str());
  EXPECT_FALSE(missing.any());
  EXPECT_EQ(said.size(), 1u);  // an explicit file that is not there says so
  tp::Loader groups(temper_types, [](const std::string&) {}, 3, [](int, int, int, int, int) { return true; });
  groups.load((kCorpus / "valid-groups.json").c_str());
  EXPECT_TRUE(groups.any());
  EXPECT_FALSE(groups.any_paths());
  EXPECT_TRUE(groups.has_groups(h100));
  tp::Loader paths(temper_types, [](const std::string&) {});
  paths.load((kCorpus / "valid-paths.json").c_str());
  EXPECT_TRUE(paths.any());
  EXPECT_TRUE(paths.any_paths());
}

// Threads launching while the first one loads run stock; none waits for the file.
TEST_F(ReaderIo, LaunchesNeverWaitForTheLoad) {
  std::atomic<bool> release{false};
  std::vector<std::string> said;
  const auto slow_types = [&](const std::string& name) {  // holds the load in progress
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return temper_types(name);
  };
  tp::Loader loader(slow_types, [&](const std::string& l) { said.push_back(l); });
  ::setenv("TEMPER_PROFILE", (kCorpus / "valid-v1-fixture.json").c_str(), 1);
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const auto all = [](int, int, int, int, int) { return true; };
  std::thread first([&] {
    tp::Config c;
    loader.lookup(h100, all, {0, 12, 14336, 4096, 1}, &c);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  tp::Config c;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(loader.lookup(h100, all, {0, int(GgmlType::Q4_K), 14336, 4096, 1}, &c));  // stock meanwhile
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  release = true;
  first.join();
  ::unsetenv("TEMPER_PROFILE");
  EXPECT_TRUE(loader.lookup(h100, all, {0, int(GgmlType::Q4_K), 14336, 4096, 1}, &c));
  EXPECT_EQ(c.nwarps, 4);
  EXPECT_EQ(c.rows, 4);
}

// (6) A profile of at most 16 MiB made the old loader allocate up to 930 MB (a DOM node per value).
// The reader keeps only the fields it knows: a 16 MiB file of nested arrays and unknown keys must
// not grow the process by more than a few times its size.
TEST_F(ReaderIo, HostileShapesStayWithinBoundedMemory) {
  const auto grows_kib = [](const std::string& text) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      rusage before{};
      ::getrusage(RUSAGE_SELF, &before);
      const tp::Profile p = tp::parse(text.data(), text.size(), temper_types);
      rusage after{};
      ::getrusage(RUSAGE_SELF, &after);
      ::_exit(int(std::min<long>(250, (after.ru_maxrss - before.ru_maxrss) / 1024 / 4)));  // in 4 MiB steps
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) * 4 : 1000;
  };
  const std::string head = R"({"format":"temper-profile","schema_version":2,"created":"","tool_version":"","source":"temper","model":"","sessions":[],"x":)";
  std::string arrays = head + "[";
  while (arrays.size() < (size_t{15} << 20)) arrays += "[[],[[]],{}],";
  arrays += "0],\"entries\":[]}";
  std::string keys = head + "{";
  for (int i = 0; keys.size() < (size_t{15} << 20); ++i) keys += "\"k" + std::to_string(i) + "\":0,";
  keys += "\"end\":0},\"entries\":[]}";
  std::string entries = head + "0,\"entries\":[";
  while (entries.size() < (size_t{15} << 20)) entries += "{\"a\":[0,0,0,0,0,0,0,0,0,0,0,0,0],\"b\":{}},";
  entries += "{}]}";
  EXPECT_LE(grows_kib(arrays), 64);
  EXPECT_LE(grows_kib(keys), 128);   // the keys of one object are kept until it closes (to find duplicates)
  EXPECT_LE(grows_kib(entries), 64);
}

}  // namespace
}  // namespace temper
