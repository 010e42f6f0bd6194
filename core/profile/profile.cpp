// The profile model: from a session's winners, approval policy, Temper JSON (lossless) and the
// kernel-anvil import, validation.
#include "temper/profile.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <initializer_list>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "temper/content_hash.h"
#include "temper/error.h"
#include "temper/estimate.h"
#include "temper/input.h"
#include "temper/fileio.h"
#include "temper/format.h"

namespace temper {

using nlohmann::json;

std::string_view approval_name(Approval a) {
  switch (a) {
    case Approval::Pending: return "pending";
    case Approval::Approved: return "approved";
    case Approval::Rejected: return "rejected";
  }
  return "pending";
}

std::optional<Approval> parse_approval(std::string_view name) {
  for (Approval a : {Approval::Pending, Approval::Approved, Approval::Rejected})
    if (approval_name(a) == name) return a;
  return std::nullopt;
}

std::string_view mat_path_name(MatPath p) { return p == MatPath::Mmq ? "mmq" : "mmvq"; }

std::optional<MatPath> parse_mat_path(std::string_view name) {
  for (MatPath p : {MatPath::Mmvq, MatPath::Mmq})
    if (mat_path_name(p) == name) return p;
  return std::nullopt;
}

ProfileDevice profile_device(const DeviceInfo& info) {
  return {info.name, info.compute_units, info.memory_bytes >> 20};
}

std::string_view compute_units_word(std::string_view arch, std::string_view device_name) {
  if (!arch.empty()) return arch.rfind("sm_", 0) == 0 ? "SMs" : "CUs";
  return device_name.rfind("NVIDIA", 0) == 0 ? "SMs" : "CUs";
}

std::string device_text(const ProfileDevice& d, std::string_view arch) {
  return d.any() ? "any device"
                 : d.name + " (" + std::to_string(d.compute_units) + " " + std::string(compute_units_word(arch, d.name)) + ")";
}

namespace {
// The key as text; `display` false: the words approved_fingerprint has always hashed (every device's
// units as "CUs"), so a bench record's fingerprint stays valid whatever the display says.
std::string key_words(const ProfileKey& key, bool display) {
  const std::string shape = launch_is_group(key.launch)
                                ? "group " + members_text(key.members) + " k " + std::to_string(key.k)
                                : shape_text(key);
  const std::string device = key.device.any() ? std::string()
                             : display        ? device_text(key.device, key.arch)
                                              : key.device.name + " (" + std::to_string(key.device.compute_units) + " CUs)";
  return (key.arch.empty() ? "(no arch)" : key.arch) + " " + shape + " ncols " + std::to_string(key.ncols) +
         (device.empty() ? "" : " on " + device);
}
std::string path_words(const PathChoice& c, bool display) {
  const std::string device = c.device.any() ? std::string()
                             : display      ? device_text(c.device, c.arch)
                                            : c.device.name + " (" + std::to_string(c.device.compute_units) + " CUs)";
  return (c.arch.empty() ? "(no arch)" : c.arch) + " " + std::string(type_name(c.type)) + " " + std::string(launch_name(c.launch)) +
         " ncols " + std::to_string(c.ncols) + (device.empty() ? "" : " on " + device);
}
}  // namespace

std::string key_text(const ProfileKey& key) { return key_words(key, true); }

ProfileKey group_profile_key(std::string arch, const std::vector<GroupMember>& members, int k, int ncols, ProfileDevice device) {
  ProfileKey key(std::move(arch), ShapeKey{group_type(members), int(std::min<int64_t>(group_n(members), INT32_MAX)), k,
                                           Launch::MulMatGroup},
                 ncols, std::move(device));
  key.members = members;
  return key;
}

std::string path_choice_text(const PathChoice& c) { return path_words(c, true); }

std::string whole_token_evidence(const ProfileEntry& e) {
  if (!e.provenance) return {};
  const std::string& engine = e.provenance->engine;
  if (engine == "replay") return "token replay";
  if (engine.rfind("llama-bench", 0) == 0) return engine;
  return {};
}

std::vector<LaunchKindTime> token_time_by_launch(const Profile& p, const std::string& arch, const ProfileDevice& device) {
  std::map<Launch, LaunchKindTime> kinds;
  for (const auto& e : p.entries) {
    if (e.key.arch != arch || !(e.key.device == device) || e.key.ncols != 1 || !e.provenance || !whole_token_evidence(e).empty()) continue;
    const Provenance& pv = *e.provenance;
    LaunchKindTime& k = kinds[e.key.launch];
    k.launch = e.key.launch;
    ++k.entries;
    const bool on = e.approval == Approval::Approved;
    k.approved += on;
    k.launches_per_token += pv.calls_per_token;
    k.bytes_per_token += pv.bytes_per_token;
    k.stock_us += pv.default_us * double(pv.calls_per_token);
    k.profile_us += (on ? pv.tuned_us : pv.default_us) * double(pv.calls_per_token);
  }
  std::vector<LaunchKindTime> out;
  for (const auto& [launch, k] : kinds) out.push_back(k);
  std::stable_sort(out.begin(), out.end(), [](const LaunchKindTime& a, const LaunchKindTime& b) { return a.stock_us > b.stock_us; });
  return out;
}

std::string left_out_reason(const ProfileEntry& e, double min_speedup) {
  if (e.approval == Approval::Approved) return {};
  if (e.approval == Approval::Rejected) return "rejected" + (e.note.empty() ? std::string() : ": " + e.note);
  if (!e.provenance) return "pending, not measured (an import)";
  const Provenance& pv = *e.provenance;
  if (pv.speedup_low <= 1)
    return "pending: not significant (speedup " + format_number("%.3f", pv.speedup) + ", its 95 % CI [" +
           format_number("%.3f", pv.speedup_low) + ", " + format_number("%.3f", pv.speedup_high) + "] reaches 1.000)";
  if (pv.speedup < 1 + min_speedup)
    return "pending: " + format_number("%.1f", (pv.speedup - 1) * 100) + " % faster, below the " +
           format_number("%.0f", min_speedup * 100) + " % that approval asks";
  return "pending: not decided yet";
}

std::vector<std::string> profile_arches(const Profile& p) {
  std::set<std::string> arches;
  for (const auto& e : p.entries) arches.insert(e.key.arch);
  return {arches.begin(), arches.end()};
}

ProfileEntry* find_entry(Profile& p, const ProfileKey& key) {
  for (auto& e : p.entries)
    if (e.key == key) return &e;
  return nullptr;
}

const ProfileEntry* applied_launch(const Profile& p, const std::string& arch, const ProfileDevice& device,
                                   const ShapeKey& shape, int ncols) {
  if (launch_is_fused(shape.launch) && !launch_is_unfused(shape.launch))
    if (const ProfileEntry* pair = applied_entry(p, arch, device, with_launch(shape, unfused_kind(shape.launch)), ncols))
      return pair;
  return applied_entry(p, arch, device, shape, ncols);
}
const ProfileEntry* applied_pipelined(const Profile& p, const std::string& arch, const ProfileDevice& device, const ShapeKey& shape) {
  const Launch pipelined = pipelined_kind(shape.launch);
  return pipelined == shape.launch ? nullptr : applied_entry(p, arch, device, with_launch(shape, pipelined), 1);
}
const ProfileEntry* find_entry(const Profile& p, const ProfileKey& key) {
  return find_entry(const_cast<Profile&>(p), key);
}

const ProfileEntry* applied_entry(const Profile& p, const std::string& arch, const ProfileDevice& device,
                                  const ShapeKey& shape, int ncols) {
  for (const ProfileDevice& d : {device, ProfileDevice{}}) {
    const ProfileEntry* e = find_entry(p, ProfileKey(arch, shape, ncols, d));
    if (e && e->approval == Approval::Approved) return e;
    if (e || d.any()) break;  // the device's own entry decides, approved or not
  }
  return nullptr;
}

// A group entry for these members in any order (as the engine's reader, hook v12: an engine may run a
// layer's q, k and v in another order than the model file's).
static const ProfileEntry* find_group_entry(const Profile& p, const ProfileKey& key) {
  if (const ProfileEntry* e = find_entry(p, key)) return e;
  std::vector<GroupMember> sorted = key.members;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& e : p.entries) {
    if (e.key.launch != Launch::MulMatGroup || e.key.arch != key.arch || !(e.key.device == key.device) || e.key.k != key.k ||
        e.key.ncols != key.ncols || e.key.members.size() != sorted.size())
      continue;
    std::vector<GroupMember> members = e.key.members;
    std::sort(members.begin(), members.end());
    if (members == sorted) return &e;
  }
  return nullptr;
}

const ProfileEntry* applied_group(const Profile& p, const std::string& arch, const ProfileDevice& device,
                                  const std::vector<GroupMember>& members, int k, int ncols) {
  for (const ProfileDevice& d : {device, ProfileDevice{}}) {
    const ProfileEntry* e = find_group_entry(p, group_profile_key(arch, members, k, ncols, d));
    if (e && e->approval == Approval::Approved) return e;
    if (e || d.any()) break;  // the device's own entry decides, approved or not
  }
  return nullptr;
}

// A profile's path choices in key order, however they were added (files and fingerprints).
static std::vector<const PathChoice*> sorted_paths(const Profile& p) {
  std::vector<const PathChoice*> sorted;
  for (const auto& c : p.paths) sorted.push_back(&c);
  std::sort(sorted.begin(), sorted.end(), [](const PathChoice* a, const PathChoice* b) { return a->key() < b->key(); });
  return sorted;
}


std::string approved_fingerprint(const Profile& p, const std::string& arch) {
  ContentHash h;
  for (const auto& e : p.entries)  // sorted by key
    if (e.approval == Approval::Approved && (arch.empty() || e.key.arch == arch))
      h.add(key_words(e.key, false) + " " + config_text(e.config));
  // Approved path choices change what the engine launches too (a profile without any hashes as before).
  for (const PathChoice* c : sorted_paths(p))
    if (c->approval == Approval::Approved && (arch.empty() || c->arch == arch))
      h.add("path " + path_words(*c, false) + " " + std::string(mat_path_name(c->path)));
  return h.hex();
}

void add_bench_record(Profile& p, BenchRecord r) {
  std::erase_if(p.benches, [&](const BenchRecord& b) { return b.device == r.device && b.model == r.model; });
  p.benches.push_back(std::move(r));
}

const BenchRecord* current_bench(const Profile& p, const std::string& arch) {
  const std::string now = approved_fingerprint(p, arch);
  for (auto it = p.benches.rbegin(); it != p.benches.rend(); ++it)
    if (it->arch == arch && it->profile_fingerprint == now) return &*it;
  return nullptr;
}

namespace {

void sort_entries(Profile& p) {
  std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
}

std::string or_now(const std::string& when) { return when.empty() ? utc_now_iso8601() : when; }

}  // namespace

Profile profile_from_session(const Session& s, std::optional<int> device) {
  Profile p;
  p.created = utc_now_iso8601();
  p.tool_version = TEMPER_VERSION;
  p.model = s.model.file_name;
  p.sessions = {s.id};
  // A fused gate/up's entry is its unfused pair's when the pair beats the fused launch at its best
  // (then measured against the fused launch's stock: what the engine runs without the profile).
  std::vector<Verdict> verdicts;
  for (const Verdict& w : s.verdicts) {
    if (launch_is_unfused(w.launch)) {
      if (std::optional<Verdict> v = unfused_verdict(s, w)) verdicts.push_back(std::move(*v));
    } else {
      verdicts.push_back(w);
    }
  }
  std::erase_if(verdicts, [&](const Verdict& w) {
    return launch_is_fused(w.launch) && !launch_is_unfused(w.launch) &&
           std::any_of(verdicts.begin(), verdicts.end(), [&](const Verdict& u) {
             return launch_is_unfused(u.launch) && u.device == w.device && u.ncols == w.ncols &&
                    with_launch(u, w.launch) == w.shape();
           });
  });
  for (const Verdict& w : verdicts) {
    if (!w.is_winner() || (device && w.device != *device)) continue;
    const SessionDevice* d = find_device(s, w.device);
    if (!d) fail(ErrorKind::BadInput, "session " + s.id + ": winner on device " + std::to_string(w.device) +
                                          " which the session does not list");
    ProfileEntry e;
    e.key = {d->info.arch, w, w.ncols, profile_device(d->info)};
    e.config = w.config;
    e.default_config = w.default_config;
    e.is_small_k = w.ncols == 1 && w.default_config.nwarps > 1 && w.config.nwarps == w.default_config.nwarps &&
                   w.config.rows_per_block == w.config.nwarps;
    if (const Result* r = find_result(s, w, w.config)) e.is_small_k = r->is_small_k;
    Provenance pv;
    pv.session_id = s.id;
    pv.device_name = d->info.name;
    pv.device_arch = d->info.arch;
    pv.engine = d->plan.grid.engine.empty() ? s.grid.engine : d->plan.grid.engine;
    pv.kernel = kernel_label(s.kernel_source);
    pv.default_us = w.default_us;
    pv.default_ci_low = w.default_ci_low;
    pv.default_ci_high = w.default_ci_high;
    pv.tuned_us = w.best_us;
    pv.tuned_ci_low = w.best_ci_low;
    pv.tuned_ci_high = w.best_ci_high;
    pv.speedup = w.speedup;
    pv.speedup_low = w.speedup_low;
    pv.speedup_high = w.speedup_high;
    // The launches it replaces: an unfused pair's are its fused launch's.
    for (const Shape& sh : s.shapes)
      if (sh.shape() == with_launch(w, fused_kind(w.launch))) {
        pv.calls_per_token = sh.calls_per_token;
        pv.bytes_per_token = sh.bytes_per_token;
      }
    e.provenance = pv;
    if (find_entry(p, e.key))
      fail(ErrorKind::BadInput, "session " + s.id + ": two devices of one kind both have a winner for " +
                                    key_text(e.key) + "; export one device with --device");
    p.entries.push_back(std::move(e));
  }
  sort_entries(p);
  return p;
}

// ---- Approval policy ----

bool is_significant(const ProfileEntry& e, double min_speedup) {
  if (!e.provenance) return false;
  const Provenance& pv = *e.provenance;
  return pv.tuned_ci_high < pv.default_ci_low && pv.speedup >= 1.0 + min_speedup;
}

int approve_significant(Profile& p, double min_speedup, const std::string& when) {
  if (!(min_speedup >= 0) || !std::isfinite(min_speedup))
    fail(ErrorKind::BadInput, "minimum speedup must be a number ≥ 0 (0.03 = 3%), got " + std::to_string(min_speedup));
  int changed = 0;
  const std::string t = or_now(when);
  for (auto& e : p.entries)
    if (e.approval != Approval::Approved && is_significant(e, min_speedup)) {
      e.approval = Approval::Approved;
      e.decided_at = t;
      ++changed;
    }
  return changed;
}

int approve_all(Profile& p, const std::string& when) {
  int changed = 0;
  const std::string t = or_now(when);
  for (auto& e : p.entries)
    if (e.approval != Approval::Approved) {
      e.approval = Approval::Approved;
      e.decided_at = t;
      ++changed;
    }
  return changed;
}

void set_approval(Profile& p, const ProfileKey& key, Approval a, const std::string& note, const std::string& when) {
  ProfileEntry* e = find_entry(p, key);
  if (!e) fail(ErrorKind::BadInput, "profile has no entry " + key_text(key));
  e->approval = a;
  e->decided_at = a == Approval::Pending ? std::string() : or_now(when);
  if (!note.empty()) e->note = note;
}

Estimate estimate_with_profile(const Session& s, int device, const Profile& p) {
  const SessionDevice* d = find_device(s, device);
  if (!d) fail(ErrorKind::BadInput, "session " + s.id + " has no device " + std::to_string(device));
  const ProfileDevice on = profile_device(d->info);
  return estimate_decode(s, device, [&](const ShapeKey& shape) -> std::optional<Config> {
    if (const ProfileEntry* e = applied_entry(p, d->info.arch, on, shape, 1)) return e->config;
    return std::nullopt;
  });
}

// ---- JSON ----

namespace {

json config_json(Config c) { return {{"nwarps", c.nwarps}, {"rows_per_block", c.rows_per_block}}; }

// Field access with errors that name the file, the JSON path and what was expected.
struct Reader {
  const json& j;
  std::string where, path;

  [[noreturn]] void bad(const std::string& what) const { fail(ErrorKind::BadInput, where + ": " + path + ": " + what); }
  Reader at(const std::string& key) const {
    if (!j.is_object()) bad("expected an object");
    auto it = j.find(key);
    if (it == j.end()) fail(ErrorKind::BadInput, where + ": " + path + ": missing field \"" + key + "\"");
    return {*it, where, path + "." + key};
  }
  bool has(const std::string& key) const { return j.is_object() && j.contains(key); }
  Reader at(size_t i) const { return {j[i], where, path + "[" + std::to_string(i) + "]"}; }
  std::string str() const {
    if (!j.is_string()) bad("expected a string");
    return j.get<std::string>();
  }
  double num() const {
    if (!j.is_number()) bad("expected a number");
    return j.get<double>();
  }
  int64_t integer(int64_t lo, int64_t hi) const {
    if (!j.is_number_integer() && !j.is_number_unsigned()) bad("expected an integer");
    if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) bad("integer out of range");
    const int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) bad(std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return v;
  }
  bool boolean() const {
    if (!j.is_boolean()) bad("expected true or false");
    return j.get<bool>();
  }
  const json& array() const {
    if (!j.is_array()) bad("expected an array");
    return j;
  }
};

Config read_config(const Reader& r) {
  return {int(r.at("nwarps").integer(0, 1024)), int(r.at("rows_per_block").integer(0, 1024))};
}

GgmlType read_type(const Reader& r) {
  const std::string name = r.str();
  auto t = parse_type(name);
  if (!t) r.bad("unknown ggml type \"" + name + "\"");
  return *t;
}

ProfileEntry read_entry(const Reader& r) {
  ProfileEntry e;
  e.key.arch = r.at("arch").str();
  if (r.has("device")) {  // absent: an arch-level entry (schema 1)
    const Reader d = r.at("device");
    e.key.device.name = d.at("name").str();
    if (e.key.device.name.empty()) d.at("name").bad("expected the device's name");
    e.key.device.compute_units = int(d.at("compute_units").integer(1, 1 << 20));
    e.key.device.memory_mib = uint64_t(d.at("memory_mib").integer(0, INT64_MAX));
  }
  e.key.type = read_type(r.at("type"));
  e.key.n = int(r.at("n").integer(1, INT32_MAX));
  e.key.k = int(r.at("k").integer(1, INT32_MAX));
  if (r.has("launch")) {  // absent: a plain MUL_MAT (schema 1)
    const std::string name = r.at("launch").str();
    const auto launch = parse_launch(name);
    if (!launch) r.at("launch").bad("unknown launch kind \"" + name + "\" (expected " + std::string(launch_names()) + ")");
    e.key.launch = *launch;
  }
  if (launch_has_ids(e.key.launch)) {
    e.key.experts = int(r.at("experts").integer(1, INT32_MAX));
    e.key.used = int(r.at("experts_used").integer(1, e.key.experts));
  }
  if (launch_is_group(e.key.launch)) {  // its members: their count, types and sum are validate's
    const Reader m = r.at("members");
    std::string why;
    const auto members = parse_members(m.str(), &why);
    if (!members) m.bad("expected TYPE:N,... (" + why + ")");
    e.key.members = *members;
  }
  e.key.ncols = int(r.at("ncols").integer(1, 1024));
  e.config = read_config(r.at("config"));
  e.default_config = read_config(r.at("default_config"));
  e.is_small_k = r.at("is_small_k").boolean();
  e.bucketed = r.at("bucketed").boolean();
  const std::string a = r.at("approval").str();
  auto ap = parse_approval(a);
  if (!ap) r.at("approval").bad("expected \"pending\", \"approved\" or \"rejected\", got \"" + a + "\"");
  e.approval = *ap;
  e.decided_at = r.at("decided_at").str();
  e.note = r.at("note").str();
  const Reader pr = r.at("provenance");
  if (!pr.j.is_null()) {
    Provenance pv;
    pv.session_id = pr.at("session_id").str();
    pv.device_name = pr.at("device_name").str();
    pv.device_arch = pr.at("device_arch").str();
    pv.engine = pr.at("engine").str();
    if (pr.has("kernel")) pv.kernel = pr.at("kernel").str();  // optional: absent = Temper's kernel
    pv.default_us = pr.at("default_us").num();
    pv.default_ci_low = pr.at("default_ci_low").num();
    pv.default_ci_high = pr.at("default_ci_high").num();
    pv.tuned_us = pr.at("tuned_us").num();
    pv.tuned_ci_low = pr.at("tuned_ci_low").num();
    pv.tuned_ci_high = pr.at("tuned_ci_high").num();
    pv.speedup = pr.at("speedup").num();
    pv.speedup_low = pr.at("speedup_low").num();
    pv.speedup_high = pr.at("speedup_high").num();
    pv.calls_per_token = pr.at("calls_per_token").integer(0, INT64_MAX);
    const Reader b = pr.at("bytes_per_token");
    if (!b.j.is_number_unsigned() && !(b.j.is_number_integer() && b.j.get<int64_t>() >= 0))
      b.bad("expected an integer ≥ 0");
    pv.bytes_per_token = b.j.get<uint64_t>();
    e.provenance = pv;
  }
  return e;
}

// A path choice (docs/profile-format.md, "paths"): every field required; evidence null or complete.
PathChoice read_path(const Reader& r) {
  PathChoice c;
  c.arch = r.at("arch").str();
  if (r.has("device")) {
    const Reader d = r.at("device");
    c.device.name = d.at("name").str();
    if (c.device.name.empty()) d.at("name").bad("expected the device's name");
    c.device.compute_units = int(d.at("compute_units").integer(1, 1 << 20));
    c.device.memory_mib = uint64_t(d.at("memory_mib").integer(0, INT64_MAX));
  }
  c.type = read_type(r.at("type"));
  const std::string launch = r.at("launch").str();
  const auto l = parse_launch(launch);
  if (!l) r.at("launch").bad("unknown launch kind \"" + launch + "\" (expected mul_mat or mul_mat_id)");
  c.launch = *l;
  c.ncols = int(r.at("ncols").integer(1, 1024));
  for (const auto& [field, out] : {std::pair{"path", &c.path}, std::pair{"stock_path", &c.stock_path}}) {
    const std::string word = r.at(field).str();
    const auto mp = parse_mat_path(word);
    if (!mp) r.at(field).bad("expected \"mmvq\" or \"mmq\", got \"" + word + "\"");
    *out = *mp;
  }
  const std::string a = r.at("approval").str();
  const auto ap = parse_approval(a);
  if (!ap) r.at("approval").bad("expected \"pending\", \"approved\" or \"rejected\", got \"" + a + "\"");
  c.approval = *ap;
  c.decided_at = r.at("decided_at").str();
  c.note = r.at("note").str();
  const Reader ev = r.at("evidence");
  if (!ev.j.is_null()) {
    PathEvidence v;
    v.source = ev.at("source").str();
    v.device_name = ev.at("device_name").str();
    v.device_arch = ev.at("device_arch").str();
    v.kernel = ev.at("kernel").str();
    v.model = ev.at("model").str();
    v.stock_us = ev.at("stock_us").num();
    v.stock_ci_low = ev.at("stock_ci_low").num();
    v.stock_ci_high = ev.at("stock_ci_high").num();
    v.path_us = ev.at("path_us").num();
    v.path_ci_low = ev.at("path_ci_low").num();
    v.path_ci_high = ev.at("path_ci_high").num();
    v.speedup = ev.at("speedup").num();
    v.speedup_low = ev.at("speedup_low").num();
    v.speedup_high = ev.at("speedup_high").num();
    c.evidence = v;
  }
  return c;
}

json to_json(const PathChoice& c) {
  json j = {{"arch", c.arch}};
  if (!c.device.any())
    j["device"] = {{"name", c.device.name}, {"compute_units", c.device.compute_units}, {"memory_mib", c.device.memory_mib}};
  json ev = nullptr;
  if (c.evidence) {
    const PathEvidence& v = *c.evidence;
    ev = {{"source", v.source},           {"device_name", v.device_name}, {"device_arch", v.device_arch},
          {"kernel", v.kernel},           {"model", v.model},             {"stock_us", v.stock_us},
          {"stock_ci_low", v.stock_ci_low}, {"stock_ci_high", v.stock_ci_high}, {"path_us", v.path_us},
          {"path_ci_low", v.path_ci_low}, {"path_ci_high", v.path_ci_high}, {"speedup", v.speedup},
          {"speedup_low", v.speedup_low}, {"speedup_high", v.speedup_high}};
  }
  j.update(json{{"type", std::string(type_name(c.type))},
                {"launch", std::string(launch_name(c.launch))},
                {"ncols", c.ncols},
                {"path", std::string(mat_path_name(c.path))},
                {"stock_path", std::string(mat_path_name(c.stock_path))},
                {"approval", std::string(approval_name(c.approval))},
                {"decided_at", c.decided_at},
                {"note", c.note},
                {"evidence", ev}});
  return j;
}

}  // namespace

json to_json(const BenchRecord& b) {
  auto arm = [](const BenchArm& a) {
    return json{{"binary", a.binary}, {"build_commit", a.build_commit}, {"build_number", a.build_number}};
  };
  json tests = json::array();
  for (const auto& t : b.tests)
    tests.push_back({{"name", t.name}, {"args", t.args}, {"n_prompt", t.n_prompt}, {"n_gen", t.n_gen},
                     {"n_ubatch", t.n_ubatch}, {"stock_ts", t.stock_ts}, {"profiled_ts", t.profiled_ts},
                     {"speedup", t.speedup}, {"speedup_low", t.speedup_low}, {"speedup_high", t.speedup_high},
                     {"stock_runs", t.stock_runs}, {"profiled_runs", t.profiled_runs}});
  return {{"date", b.date}, {"tool_version", b.tool_version}, {"device", b.device}, {"arch", b.arch},
          {"model", b.model}, {"model_type", b.model_type}, {"stock", arm(b.stock)}, {"profiled", arm(b.profiled)},
          {"engine_line", b.engine_line}, {"profile_fingerprint", b.profile_fingerprint}, {"rounds", b.rounds},
          {"repetitions", b.repetitions}, {"tests", tests}};
}

namespace {

std::vector<std::vector<double>> read_runs(const Reader& r) {
  std::vector<std::vector<double>> runs;
  for (size_t i = 0; i < r.array().size(); ++i) {
    const Reader run = r.at(i);
    runs.emplace_back();
    for (size_t k = 0; k < run.array().size(); ++k) runs.back().push_back(run.at(k).num());
  }
  return runs;
}

BenchRecord read_bench(const Reader& r) {
  BenchRecord b;
  auto arm = [](const Reader& a) {
    return BenchArm{a.at("binary").str(), a.at("build_commit").str(), a.at("build_number").integer(INT64_MIN, INT64_MAX)};
  };
  b.date = r.at("date").str();
  b.tool_version = r.at("tool_version").str();
  b.device = r.at("device").str();
  b.arch = r.at("arch").str();
  b.model = r.at("model").str();
  b.model_type = r.at("model_type").str();
  b.stock = arm(r.at("stock"));
  b.profiled = arm(r.at("profiled"));
  b.engine_line = r.at("engine_line").str();
  b.profile_fingerprint = r.at("profile_fingerprint").str();
  b.rounds = int(r.at("rounds").integer(1, 1 << 20));
  b.repetitions = int(r.at("repetitions").integer(1, 1 << 20));
  const Reader tests = r.at("tests");
  for (size_t i = 0; i < tests.array().size(); ++i) {
    const Reader tr = tests.at(i);
    BenchTest t;
    t.name = tr.at("name").str();
    const Reader args = tr.at("args");
    for (size_t k = 0; k < args.array().size(); ++k) t.args.push_back(args.at(k).str());
    t.n_prompt = tr.at("n_prompt").integer(0, INT32_MAX);
    t.n_gen = tr.at("n_gen").integer(0, INT32_MAX);
    t.n_ubatch = tr.at("n_ubatch").integer(0, INT32_MAX);
    t.stock_ts = tr.at("stock_ts").num();
    t.profiled_ts = tr.at("profiled_ts").num();
    t.speedup = tr.at("speedup").num();
    t.speedup_low = tr.at("speedup_low").num();
    t.speedup_high = tr.at("speedup_high").num();
    t.stock_runs = read_runs(tr.at("stock_runs"));
    t.profiled_runs = read_runs(tr.at("profiled_runs"));
    b.tests.push_back(std::move(t));
  }
  return b;
}

// kernel-anvil: {"configs": {"<type id>": {"<n_bucket>,<k_bucket>": {"nwarps": W, "rows_per_block": R}}}}
Profile read_kernel_anvil(const json& j, const std::string& where, const std::string& arch) {
  static const int kBucketEdge[5] = {128, 1024, 4096, 16384, 16385};
  Profile p;
  p.source = kSourceKernelAnvil;
  p.created = utc_now_iso8601();
  p.tool_version = TEMPER_VERSION;
  const Reader configs{j.at("configs"), where, "$.configs"};
  if (!configs.j.is_object()) configs.bad("expected an object keyed by ggml type id");
  for (const auto& [type_key, cells] : configs.j.items()) {
    const Reader tr{cells, where, configs.path + "[\"" + type_key + "\"]"};
    char* end = nullptr;
    const long id = std::strtol(type_key.c_str(), &end, 10);
    if (type_key.empty() || *end != '\0' || id < 0) tr.bad("type key must be a ggml type id (a number)");
    const TypeInfo* ti = find_type(uint32_t(id));
    if (!ti) tr.bad("unknown ggml type id " + type_key);
    if (!cells.is_object()) tr.bad("expected an object keyed by \"<n_bucket>,<k_bucket>\"");
    for (const auto& [cell, value] : cells.items()) {
      const Reader cr{value, where, tr.path + "[\"" + cell + "\"]"};
      static const std::regex kCell(R"(^([0-4]),([0-4])$)");
      std::smatch m;
      if (!std::regex_match(cell, m, kCell)) cr.bad("cell key must be \"<n_bucket>,<k_bucket>\" with buckets 0..4");
      ProfileEntry e;
      e.key = ProfileKey{arch, ti->type, kBucketEdge[std::stoi(m[1])], kBucketEdge[std::stoi(m[2])], 1};
      e.config = {int(cr.at("nwarps").integer(1, kAnvilMaxValue)), int(cr.at("rows_per_block").integer(1, kAnvilMaxValue))};
      e.bucketed = true;
      e.is_small_k = e.config.rows_per_block > 1;  // the only thing its patch applies
      e.approval = Approval::Approved;             // an engine file: everything in it is in use
      e.note = "imported from kernel-anvil (" + where + "), no provenance";
      p.entries.push_back(std::move(e));
    }
  }
  sort_entries(p);
  return p;
}

}  // namespace

json to_json(const Profile& p) {
  json entries = json::array();
  for (const auto& e : p.entries) {
    json pv = nullptr;
    if (e.provenance) {
      const Provenance& v = *e.provenance;
      pv = {{"session_id", v.session_id},       {"device_name", v.device_name},
            {"device_arch", v.device_arch},     {"engine", v.engine},
            {"default_us", v.default_us},       {"default_ci_low", v.default_ci_low},
            {"default_ci_high", v.default_ci_high}, {"tuned_us", v.tuned_us},
            {"tuned_ci_low", v.tuned_ci_low},   {"tuned_ci_high", v.tuned_ci_high},
            {"speedup", v.speedup},             {"speedup_low", v.speedup_low},
            {"speedup_high", v.speedup_high},   {"calls_per_token", v.calls_per_token},
            {"bytes_per_token", v.bytes_per_token}, {"kernel", v.kernel}};
    }
    json entry = {{"arch", e.key.arch}};
    if (!e.key.device.any())
      entry["device"] = {{"name", e.key.device.name}, {"compute_units", e.key.device.compute_units},
                         {"memory_mib", e.key.device.memory_mib}};
    entry.update(json{{"type", std::string(type_name(e.key.type))}, {"n", e.key.n}, {"k", e.key.k}});
    if (e.key.launch != Launch::MulMat) entry["launch"] = launch_name(e.key.launch);
    if (launch_has_ids(e.key.launch)) {
      entry["experts"] = e.key.experts;
      entry["experts_used"] = e.key.used;
    }
    if (launch_is_group(e.key.launch)) entry["members"] = members_text(e.key.members);
    entry.update(json{{"ncols", e.key.ncols},
                       {"config", config_json(e.config)},
                       {"default_config", config_json(e.default_config)},
                       {"is_small_k", e.is_small_k},
                       {"bucketed", e.bucketed},
                       {"approval", std::string(approval_name(e.approval))},
                       {"decided_at", e.decided_at},
                       {"note", e.note},
                       {"provenance", pv}});
    entries.push_back(std::move(entry));
  }
  json j = {{"format", "temper-profile"}, {"schema_version", p.schema_version}, {"created", p.created},
            {"tool_version", p.tool_version}, {"source", p.source}, {"model", p.model},
            {"sessions", p.sessions}, {"entries", entries}};
  if (!p.benches.empty()) {
    j["bench"] = json::array();
    for (const auto& b : p.benches) j["bench"].push_back(to_json(b));
  }
  if (!p.paths.empty()) {
    j["paths"] = json::array();
    for (const PathChoice* c : sorted_paths(p)) j["paths"].push_back(to_json(*c));
  }
  return j;
}

bool is_kernel_anvil_json(const json& j) { return j.is_object() && j.contains("configs") && !j.contains("schema_version"); }

Profile profile_from_json(const json& j, const std::string& where, const std::string& arch_for_anvil) {
  if (is_kernel_anvil_json(j)) return read_kernel_anvil(j, where, arch_for_anvil);
  const Reader root{j, where, "$"};
  if (!j.is_object()) root.bad("expected a Temper profile object or a kernel-anvil {\"configs\": ...} object");
  if (!root.has("format") || !j["format"].is_string() || j["format"] != "temper-profile")
    root.bad("not a Temper profile (expected \"format\": \"temper-profile\") nor a kernel-anvil file");
  const int64_t version = root.at("schema_version").integer(INT32_MIN, INT32_MAX);
  if (version > kProfileSchemaVersion)
    fail(ErrorKind::BadInput, where + ": profile written by a newer Temper (schema version " + std::to_string(version) +
                                  "; this build reads up to " + std::to_string(kProfileSchemaVersion) + "); upgrade Temper");
  if (version < 1) root.at("schema_version").bad("unknown schema version " + std::to_string(version));
  Profile p;
  p.schema_version = int(version);
  p.created = root.at("created").str();
  p.tool_version = root.at("tool_version").str();
  p.source = root.at("source").str();
  if (p.source != kSourceTemper && p.source != kSourceKernelAnvil)
    root.at("source").bad("expected \"temper\" or \"kernel-anvil\", got \"" + p.source + "\"");
  p.model = root.at("model").str();
  const Reader sessions = root.at("sessions");
  for (size_t i = 0; i < sessions.array().size(); ++i) p.sessions.push_back(sessions.at(i).str());
  const Reader entries = root.at("entries");
  std::set<ProfileKey> seen;
  for (size_t i = 0; i < entries.array().size(); ++i) {
    ProfileEntry e = read_entry(entries.at(i));
    if (!seen.insert(e.key).second) entries.at(i).bad("duplicate entry " + key_text(e.key));
    p.entries.push_back(std::move(e));
  }
  sort_entries(p);
  if (root.has("bench")) {  // optional: llama-bench records (temper engine bench)
    const Reader bench = root.at("bench");
    for (size_t i = 0; i < bench.array().size(); ++i) p.benches.push_back(read_bench(bench.at(i)));
  }
  if (root.has("paths")) {  // optional: mmvq/mmq choices
    const Reader paths = root.at("paths");
    std::set<std::tuple<std::string, ProfileDevice, GgmlType, Launch, int>> seen_paths;
    for (size_t i = 0; i < paths.array().size(); ++i) {
      PathChoice c = read_path(paths.at(i));
      if (!seen_paths.insert(c.key()).second) paths.at(i).bad("a second path choice for " + path_choice_text(c));
      p.paths.push_back(std::move(c));
    }
    std::sort(p.paths.begin(), p.paths.end(), [](const PathChoice& a, const PathChoice& b) { return a.key() < b.key(); });
  }
  return p;
}

void save_profile(const Profile& p, const std::filesystem::path& path, const WriteOptions& options) {
  write_file_atomic(path, to_json(p).dump(2) + "\n", options);
}

Profile load_profile(const std::filesystem::path& path, const std::string& arch_for_anvil) {
  return profile_from_json(read_json_input(path, "profile", kMaxProfileBytes), path_text(path), arch_for_anvil);
}

// ---- One profile file, several writers ----

namespace {

std::vector<std::string> model_names(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream names(list);
  for (std::string m; std::getline(names, m, ',');)
    if (const size_t b = m.find_first_not_of(' '); b != std::string::npos) out.push_back(m.substr(b));
  return out;
}

// Items of one kind (entries, path choices, bench records) rebased by key: `theirs` gets every item
// `to` added or changed against `from`, and loses every item `to` removed.
template <class T, class Key, class Text>
void rebase_items(const std::vector<T>& from, const std::vector<T>& to, std::vector<T>& theirs, Key key, Text text) {
  const auto find = [&](const std::vector<T>& v, const T& x) {
    return std::find_if(v.begin(), v.end(), [&](const T& y) { return key(y) == key(x); });
  };
  for (const T& f : from)
    if (find(to, f) == to.end()) std::erase_if(theirs, [&](const T& y) { return key(y) == key(f); });
  for (const T& t : to) {
    const auto was = find(from, t);
    if (was != from.end() && text(*was) == text(t)) continue;
    const auto now = std::find_if(theirs.begin(), theirs.end(), [&](const T& y) { return key(y) == key(t); });
    if (now != theirs.end()) *now = t;
    else theirs.push_back(t);
  }
}

}  // namespace

namespace {
// The same content, whatever order the entries are in (a profile read back lists them in key order).
bool same_profile(const Profile& a, const Profile& b) {
  Profile x = a, y = b;
  sort_entries(x);
  sort_entries(y);
  return to_json(x) == to_json(y);
}
}  // namespace

Profile rebase_profile(const Profile& from, const Profile& to, Profile theirs) {
  const auto entry_text = [](const ProfileEntry& e) {
    Profile one;
    one.entries = {e};
    return to_json(one)["entries"][0].dump();
  };
  rebase_items(from.entries, to.entries, theirs.entries, [](const ProfileEntry& e) { return e.key; }, entry_text);
  sort_entries(theirs);
  rebase_items(from.paths, to.paths, theirs.paths, [](const PathChoice& c) { return c.key(); },
               [](const PathChoice& c) { return to_json(c).dump(); });
  std::sort(theirs.paths.begin(), theirs.paths.end(), [](const PathChoice& a, const PathChoice& b) { return a.key() < b.key(); });
  rebase_items(from.benches, to.benches, theirs.benches, [](const BenchRecord& b) { return std::tie(b.device, b.model); },
               [](const BenchRecord& b) { return to_json(b).dump(); });
  for (const auto& s : to.sessions)
    if (std::find(theirs.sessions.begin(), theirs.sessions.end(), s) == theirs.sessions.end()) theirs.sessions.push_back(s);
  std::vector<std::string> names = model_names(theirs.model);
  for (const auto& m : model_names(to.model))
    if (std::find(names.begin(), names.end(), m) == names.end()) names.push_back(m);
  theirs.model.clear();
  for (const auto& m : names) theirs.model += (theirs.model.empty() ? "" : ", ") + m;
  theirs.created = to.created;
  theirs.tool_version = to.tool_version;
  theirs.source = to.source;
  return theirs;
}

Profile update_profile(const std::filesystem::path& path, const Profile& from, const Profile& to,
                       const std::optional<std::string>& to_bytes) {
  namespace fs = std::filesystem;
  const fs::path lock_path = path.string() + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) fail(ErrorKind::Io, "cannot open the lock " + path_text(lock_path) + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      const int e = errno;
      ::close(fd);
      fail(ErrorKind::Io, "cannot lock " + path_text(lock_path) + ": " + std::strerror(e));
    }
  try {
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    std::optional<Profile> held;
    if (exists) held = load_profile(path);
    const bool untouched = !held || same_profile(*held, from);
    Profile now = untouched ? to : rebase_profile(from, to, *held);
    if (untouched && to_bytes) write_file_atomic(path, *to_bytes);
    else if (now.entries.empty() && now.paths.empty() && now.benches.empty()) {
      if (exists) fs::remove(path, ec);
    } else {
      save_profile(now, path);
    }
    ::close(fd);
    return now;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

// ---- Validation ----

namespace {

// A same-input group's own rules (docs/profile-format.md, "mul_mat_group"), each problem naming its field.
void group_problems(const ProfileEntry& e, const std::string& at, std::vector<std::string>& problems) {
  const std::vector<GroupMember>& m = e.key.members;
  if (m.size() < size_t(kMinGroupMembers) || m.size() > size_t(kMaxGroupMembers))
    return problems.push_back(at + "members: " + std::to_string(m.size()) + " members (a group has 2..4)");
  if (group_types(m) > kMaxGroupTypes)
    return problems.push_back(at + "members: " + std::to_string(group_types(m)) + " distinct types (a group has at most 2)");
  if (e.key.type != group_type(m))
    problems.push_back(at + "type: " + std::string(type_name(e.key.type)) + " is not the members' " +
                       std::string(type_name(group_type(m))) + " (theirs, or in a mix the one other than the first member's)");
  if (e.key.n != group_n(m))
    problems.push_back(at + "n: " + std::to_string(e.key.n) + " is not the sum of the members' N, " + std::to_string(group_n(m)));
  for (const GroupMember& x : m) {
    const TypeInfo& ti = type_info(x.type);
    if (!ti.quantized || x.type == GgmlType::Q8_1 || x.type == GgmlType::Q8_K)
      problems.push_back(at + "members: type " + std::string(ti.name) + " has no mmvq kernel");
    else if (e.key.k % int(ti.block_size) != 0)
      problems.push_back(at + "k " + std::to_string(e.key.k) + " is not a whole number of the member's " + std::string(ti.name) +
                         " blocks (" + std::to_string(ti.block_size) + " values)");
  }
  if (e.key.ncols > kMaxGroupNcols) problems.push_back(at + "ncols: a group runs at ncols 1..4");
  const auto in = [](int v, std::initializer_list<int> set) { return std::find(set.begin(), set.end(), v) != set.end(); };
  if (!in(e.config.nwarps, {2, 4, 8}) || !in(e.config.rows_per_block, {1, 2, 4}))
    problems.push_back(at + "config: " + config_words(e.config) + " is outside the group grid (nwarps 2|4|8, rows_per_block 1|2|4)");
}

// A q8_1 producer's own rules (docs/profile-format.md, "rms_norm_q8_1", "glu_q8_1"): not a GEMV, so none of theirs.
void producer_problems(const ProfileEntry& e, const std::string& at, std::vector<std::string>& problems) {
  const std::string what = "a " + producer_words(e.key.launch) + " entry";
  if (e.key.type != GgmlType::F32) problems.push_back(at + "type: " + std::string(type_name(e.key.type)) + " (" + what + "'s type is f32)");
  if (e.key.n != 1) problems.push_back(at + "n: " + std::to_string(e.key.n) + " (" + what + "'s n is 1)");
  if (e.key.k % 32 != 0) problems.push_back(at + "k " + std::to_string(e.key.k) + " is not a whole number of q8_1 blocks (32 values)");
  if (e.key.ncols < 1 || e.key.ncols > 8) problems.push_back(at + "ncols must be 1..8");
  if (e.config.nwarps != 0 || e.config.rows_per_block != 0 || e.default_config.nwarps != 0 || e.default_config.rows_per_block != 0)
    problems.push_back(at + "config: " + what + " has none (nwarps 0, rows_per_block 0 in config and default_config)");
  if (e.bucketed) problems.push_back(at + "a kernel-anvil bucket tunes plain MUL_MAT only");
}

}  // namespace

std::vector<std::string> profile_warnings(const Profile& p) {
  std::vector<std::string> warnings;
  std::map<ProfileKey, const ProfileEntry*> as_older_hooks_read;  // the key without its members
  for (const ProfileEntry& e : p.entries) {
    if (!launch_is_group(e.key.launch)) continue;
    ProfileKey k = e.key;
    k.members.clear();
    const auto [it, first] = as_older_hooks_read.emplace(k, &e);
    if (!first)
      warnings.push_back(key_text(e.key) + ": a hook before v5 takes it and " + key_text(it->second->key) +
                         " for one entry (same type, n, k and ncols) and ignores the whole profile; patch the engine with "
                         "this Temper, or keep one of them");
  }
  // Hook v12 finds a group by its members in any order: two entries of the same members are one group
  // there, and the engine takes the first in the file.
  std::map<ProfileKey, const ProfileEntry*> as_sets;
  for (const ProfileEntry& e : p.entries) {
    if (!launch_is_group(e.key.launch)) continue;
    ProfileKey k = e.key;
    std::sort(k.members.begin(), k.members.end());
    const auto [it, first] = as_sets.emplace(k, &e);
    if (!first)
      warnings.push_back(key_text(e.key) + ": the same members as " + key_text(it->second->key) +
                         " in another order; a hook from v12 takes them for one group and uses the first in the file; keep one of them");
  }
  return warnings;
}

std::vector<std::string> validate_profile(const Profile& p) {
  std::vector<std::string> problems;
  static const std::regex kArch(R"(^(sm_[0-9]{2,3}[a-z]?|gfx[0-9a-f]{3,4})$)");
  auto in_range = [](int v) { return v >= 1 && v <= kAnvilMaxValue; };
  for (const auto& e : p.entries) {
    const std::string at = key_text(e.key) + ": ";
    if (e.key.arch.empty())
      problems.push_back(at + "no arch (a kernel-anvil import: give one with --arch)");
    else if (!std::regex_match(e.key.arch, kArch))
      problems.push_back(at + "unknown arch \"" + e.key.arch + "\" (expected sm_NN or gfxNNN)");
    const TypeInfo& ti = type_info(e.key.type);
    if (launch_writes_q8(e.key.launch)) {
      producer_problems(e, at, problems);
    } else {
      if (!ti.quantized || e.key.type == GgmlType::Q8_1 || e.key.type == GgmlType::Q8_K)
        problems.push_back(at + "type " + std::string(ti.name) + " has no mmvq kernel");
      if (e.key.n < 1 || e.key.k < 1) problems.push_back(at + "n and k must be ≥ 1");
      if (!e.bucketed && e.key.k % int(ti.block_size) != 0)
        problems.push_back(at + "k " + std::to_string(e.key.k) + " is not a whole number of " + std::string(ti.name) +
                           " blocks (" + std::to_string(ti.block_size) + " values)");
      if (e.key.ncols < 1 || e.key.ncols > 8) problems.push_back(at + "ncols must be 1..8");
      if (launch_is_fused(e.key.launch) && e.key.ncols != 1)
        problems.push_back(at + "a fused gate/up launch exists at ncols 1 only (ggml fuses at one token)");
      else if (launch_has_ids(e.key.launch) && e.key.ncols != 1)
        problems.push_back(at + "MUL_MAT_ID at more than one token runs the multi-token MoE kernel, which the hook does not tune");
      else if (launch_is_pipelined(e.key.launch) && e.key.ncols != 1)
        problems.push_back(at + "a pipelined launch exists at ncols 1 only (the hook compiles pipelined instantiations for decode)");
      if (e.bucketed && e.key.launch != Launch::MulMat) problems.push_back(at + "a kernel-anvil bucket tunes plain MUL_MAT only");
      if (launch_is_group(e.key.launch)) group_problems(e, at, problems);
      if (!in_range(e.config.nwarps) || !in_range(e.config.rows_per_block))
        problems.push_back(at + "config values must be 1..32, got nwarps " + std::to_string(e.config.nwarps) +
                           " rows_per_block " + std::to_string(e.config.rows_per_block));
      if (e.config.nwarps * 32 > 1024 && e.key.arch.rfind("sm_", 0) == 0)
        problems.push_back(at + "nwarps " + std::to_string(e.config.nwarps) + " exceeds 1024 threads per block");
      if (e.config.nwarps * 64 > 1024 && e.key.arch.rfind("gfx9", 0) == 0)
        problems.push_back(at + "nwarps " + std::to_string(e.config.nwarps) + " × wave64 exceeds 1024 threads per block");
    }
    if (e.provenance) {
      const Provenance& v = *e.provenance;
      if (!(v.default_us > 0) || !(v.tuned_us > 0)) problems.push_back(at + "provenance times must be > 0");
      if (!(v.default_ci_low <= v.default_us && v.default_us <= v.default_ci_high) ||
          !(v.tuned_ci_low <= v.tuned_us && v.tuned_us <= v.tuned_ci_high))
        problems.push_back(at + "a median lies outside its confidence interval");
      if (!(v.speedup_low <= v.speedup && v.speedup <= v.speedup_high))
        problems.push_back(at + "speedup lies outside its confidence interval");
      if (!v.device_arch.empty() && v.device_arch != e.key.arch)
        problems.push_back(at + "measured on " + v.device_arch + " but keyed by arch " + e.key.arch);
    } else if (p.source == kSourceTemper && !e.bucketed) {
      problems.push_back(at + "no provenance (every entry of a Temper profile records where it was measured)");
    }
    if (e.approval != Approval::Pending && e.decided_at.empty() && !e.bucketed)
      problems.push_back(at + std::string(approval_name(e.approval)) + " without a decision time");
  }
  for (const PathChoice& c : p.paths) {
    const std::string at = "path choice " + path_choice_text(c) + ": ";
    if (c.arch.empty()) problems.push_back(at + "no arch");
    else if (!std::regex_match(c.arch, kArch)) problems.push_back(at + "unknown arch \"" + c.arch + "\" (expected sm_NN or gfxNNN)");
    const TypeInfo& ti = type_info(c.type);
    if (!ti.quantized || c.type == GgmlType::Q8_1 || c.type == GgmlType::Q8_K)
      problems.push_back(at + "type " + std::string(ti.name) + " has no mmvq kernel");
    if (c.launch != Launch::MulMat && c.launch != Launch::MulMatId)
      problems.push_back(at + "ggml picks mmvq or mmq for mul_mat and mul_mat_id only");
    if (c.ncols < 2 || c.ncols > 8) problems.push_back(at + "ncols must be 2..8 (ggml picks between mmvq and mmq there)");
    if (c.path == c.stock_path) problems.push_back(at + "path equals stock_path (a choice records a change from ggml's pick)");
    if (c.evidence) {
      const PathEvidence& v = *c.evidence;
      if (!(v.stock_us > 0) || !(v.path_us > 0)) problems.push_back(at + "evidence times must be > 0");
      if (!(v.stock_ci_low <= v.stock_us && v.stock_us <= v.stock_ci_high) ||
          !(v.path_ci_low <= v.path_us && v.path_us <= v.path_ci_high))
        problems.push_back(at + "a median lies outside its confidence interval");
      if (!v.device_arch.empty() && v.device_arch != c.arch)
        problems.push_back(at + "measured on " + v.device_arch + " but keyed by arch " + c.arch);
    } else if (p.source == kSourceTemper) {
      problems.push_back(at + "no evidence (every path choice of a Temper profile records where it was measured)");
    }
    if (c.approval != Approval::Pending && c.decided_at.empty())
      problems.push_back(at + std::string(approval_name(c.approval)) + " without a decision time");
  }
  for (size_t i = 0; i < p.benches.size(); ++i)
    for (const auto& t : p.benches[i].tests) {
      const std::string at = "bench " + std::to_string(i + 1) + " (" + p.benches[i].device + ") " + t.name + ": ";
      if (!(t.stock_ts > 0) || !(t.profiled_ts > 0)) problems.push_back(at + "tokens/s must be > 0");
      if (!(t.speedup_low <= t.speedup && t.speedup <= t.speedup_high))
        problems.push_back(at + "speedup lies outside its confidence interval");
      if (t.stock_runs.empty() || t.profiled_runs.empty()) problems.push_back(at + "an arm has no run");
    }
  return problems;
}

}  // namespace temper
