// Merging profiles from several sessions or GPUs, and diffing two profiles.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "temper/error.h"
#include "temper/format.h"
#include "temper/profile.h"

namespace temper {

namespace {
std::string origin(const ProfileEntry& e) { return e.provenance ? e.provenance->session_id : std::string("import"); }
// Which of two approvals of one config stands: rejected over approved over pending.
Approval decided_approval(Approval a, Approval b) {
  auto rank = [](Approval x) { return x == Approval::Rejected ? 2 : x == Approval::Approved ? 1 : 0; };
  return rank(a) >= rank(b) ? a : b;
}
std::string path_side(const PathChoice& c) {
  std::string s = std::string(mat_path_name(c.path)) + " " + std::string(approval_name(c.approval));
  if (c.evidence) s += " speedup " + format_number("%.3f", c.evidence->speedup);
  return s;
}
// Every device's records; one key in two profiles: the newer decision stays.
void merge_paths(const std::vector<Profile>& profiles, MergeResult& m) {
  auto newer = [](const PathChoice& a, const PathChoice& b) {  // a decided later than b
    const bool da = a.approval != Approval::Pending, db = b.approval != Approval::Pending;
    if (da != db) return da;
    return a.decided_at > b.decided_at;
  };
  std::vector<PathChoice> merged;
  for (const Profile& p : profiles)
    for (const PathChoice& c : p.paths) {
      auto it = std::find_if(merged.begin(), merged.end(), [&](const PathChoice& x) { return x.key() == c.key(); });
      if (it == merged.end()) {
        merged.push_back(c);
        continue;
      }
      const bool differ = it->path != c.path || it->approval != c.approval;
      const bool take = newer(c, *it);
      if (differ)
        m.path_conflicts.push_back(path_choice_text(c) + ": kept " + path_side(take ? c : *it) + ", dropped " +
                                   path_side(take ? *it : c) + " (the newer decision stays)");
      if (take) *it = c;
    }
  std::sort(merged.begin(), merged.end(), [](const PathChoice& a, const PathChoice& b) { return a.key() < b.key(); });
  m.profile.paths = std::move(merged);
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}
}  // namespace

std::string MergeResult::text() const {
  std::ostringstream o;
  for (const auto& c : conflicts)
    o << "conflict: " << key_text(c.key) << ": kept " << config_text(c.kept) << " from " << c.kept_from << ", dropped "
      << config_text(c.dropped) << " from " << c.dropped_from << " (" << c.reason << ")\n";
  if (arches.size() > 1) {
    o << "note: the merged profile holds " << arches.size() << " arches (";
    for (size_t i = 0; i < arches.size(); ++i) o << (i ? ", " : "") << arches[i];
    o << "); entries of different arches are kept apart, and single-arch exports need --arch\n";
  }
  for (const auto& c : path_conflicts) o << "conflict: " << c << "\n";
  o << "merged: " << profile.entries.size() << " entries, " << conflicts.size() << " conflicts";
  if (!profile.paths.empty() || !path_conflicts.empty())
    o << "; " << profile.paths.size() << " path choices, " << path_conflicts.size() << " conflicts";
  o << "\n";
  return o.str();
}

MergeResult merge_profiles(const std::vector<Profile>& profiles) {
  if (profiles.empty()) fail(ErrorKind::BadInput, "nothing to merge");
  MergeResult m;
  m.profile.created = utc_now_iso8601();
  m.profile.tool_version = TEMPER_VERSION;
  std::map<ProfileKey, ProfileEntry> merged;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const Profile& p = profiles[i];
    for (const auto& s : p.sessions)
      if (std::find(m.profile.sessions.begin(), m.profile.sessions.end(), s) == m.profile.sessions.end())
        m.profile.sessions.push_back(s);
    if (m.profile.model.empty()) m.profile.model = p.model;
    for (const auto& e : p.entries) {
      if (e.key.arch.empty())
        fail(ErrorKind::BadInput, "profile " + std::to_string(i + 1) + ": entry " + key_text(e.key) +
                                      " has no arch (a kernel-anvil import): import it with --arch so arches never mix");
      auto [it, inserted] = merged.try_emplace(e.key, e);
      if (inserted) continue;
      ProfileEntry& cur = it->second;
      if (cur.config == e.config) {
        // Same value: keep the better documented one (measured, then faster). Approvals that
        // differ are a conflict said out loud: a rejection stands over an approval, a decision
        // over pending.
        const Approval approval = decided_approval(cur.approval, e.approval);
        const ProfileEntry& decided = e.approval == approval ? e : cur;
        const ProfileEntry& overruled = e.approval == approval ? cur : e;
        if (cur.approval != e.approval)
          m.conflicts.push_back({e.key, cur.config, e.config, origin(decided), origin(overruled),
                                 "same config, " + std::string(approval_name(decided.approval)) + " in one and " +
                                     std::string(approval_name(overruled.approval)) + " in the other: " +
                                     std::string(approval_name(approval)) + " stays"});
        const std::string decided_at = decided.decided_at, note = decided.note;
        if ((!cur.provenance && e.provenance) ||
            (cur.provenance && e.provenance && e.provenance->tuned_us < cur.provenance->tuned_us))
          cur = e;
        cur.approval = approval;
        cur.decided_at = decided_at;
        cur.note = note;
        continue;
      }
      bool take_new;
      std::string reason;
      if (cur.provenance && e.provenance && cur.provenance->device_name != e.provenance->device_name) {
        // Two GPU models of one arch (an H100 and an H200 are both sm_90): their microseconds are
        // not comparable (the faster memory would always win), their gains over their own defaults are.
        take_new = e.provenance->speedup > cur.provenance->speedup;
        const ProfileEntry& kept = take_new ? e : cur;
        const ProfileEntry& other = take_new ? cur : e;
        reason = "measured on different GPUs of one arch (" + kept.provenance->device_name + ", " +
                 other.provenance->device_name + "): the larger gain over its own default stays, " +
                 fmt(kept.provenance->speedup) + "x vs " + fmt(other.provenance->speedup) + "x";
      } else if (cur.provenance && e.provenance) {
        take_new = e.provenance->tuned_us < cur.provenance->tuned_us;
        const ProfileEntry& faster = take_new ? e : cur;
        const ProfileEntry& slower = take_new ? cur : e;
        reason = "measured faster: " + fmt(faster.provenance->tuned_us) + " us vs " + fmt(slower.provenance->tuned_us) + " us";
      } else if (cur.provenance || e.provenance) {
        take_new = bool(e.provenance);
        reason = "measured beats imported without provenance";
      } else {
        take_new = false;
        reason = "neither is measured; the first profile's entry stays";
      }
      const ProfileEntry& kept = take_new ? e : cur;
      const ProfileEntry& dropped = take_new ? cur : e;
      m.conflicts.push_back({e.key, kept.config, dropped.config, origin(kept), origin(dropped), reason});
      if (take_new) cur = e;
    }
  }
  bool all_anvil = true;
  for (const auto& p : profiles) all_anvil = all_anvil && p.source == kSourceKernelAnvil;
  m.profile.source = all_anvil ? std::string(kSourceKernelAnvil) : std::string(kSourceTemper);
  for (auto& [key, e] : merged) m.profile.entries.push_back(std::move(e));
  merge_paths(profiles, m);
  m.arches = profile_arches(m.profile);
  return m;
}

std::string_view diff_kind_name(DiffKind k) {
  switch (k) {
    case DiffKind::Added: return "added";
    case DiffKind::Removed: return "removed";
    case DiffKind::Changed: return "changed";
    case DiffKind::Same: return "same";
  }
  return "same";
}

int ProfileDiff::count(DiffKind k) const {
  return int(std::count_if(lines.begin(), lines.end(), [k](const DiffLine& l) { return l.kind == k; }));
}

std::string ProfileDiff::text(bool include_same) const {
  std::ostringstream o;
  if (!by_arch) o << "comparing " << arch_a << " (a) with " << arch_b << " (b) by shape\n";
  auto side = [](const ProfileEntry& e) {
    std::string s = config_text(e.config) + " " + std::string(approval_name(e.approval));
    if (e.provenance) s += " speedup " + fmt(e.provenance->speedup);
    return s;
  };
  for (const auto& l : lines) {
    if (l.kind == DiffKind::Same && !include_same) continue;
    ProfileKey k = l.key;
    if (!by_arch) k.arch = arch_a + " / " + arch_b, k.device = {};
    o << diff_kind_name(l.kind) << ": " << key_text(k);
    if (l.a) o << "  a: " << side(*l.a);
    if (l.b) o << "  b: " << side(*l.b);
    if (l.speedup_change) o << "  speedup change " << (*l.speedup_change >= 0 ? "+" : "") << fmt(*l.speedup_change);
    o << "\n";
  }
  o << "diff: " << count(DiffKind::Added) << " added, " << count(DiffKind::Removed) << " removed, "
    << count(DiffKind::Changed) << " changed, " << count(DiffKind::Same) << " same\n";
  if (paths.empty()) return o.str();
  int counts[4] = {};
  for (const auto& l : paths) {
    ++counts[int(l.kind)];
    if (l.kind == DiffKind::Same && !include_same) continue;
    PathChoice k = l.a ? *l.a : *l.b;
    if (!by_arch) k.arch = arch_a + " / " + arch_b, k.device = {};
    o << "path " << diff_kind_name(l.kind) << ": " << path_choice_text(k);
    if (l.a) o << "  a: " << path_side(*l.a);
    if (l.b) o << "  b: " << path_side(*l.b);
    o << "\n";
  }
  o << "paths: " << counts[int(DiffKind::Added)] << " added, " << counts[int(DiffKind::Removed)] << " removed, "
    << counts[int(DiffKind::Changed)] << " changed, " << counts[int(DiffKind::Same)] << " same\n";
  return o.str();
}

ProfileDiff diff_profiles(const Profile& a, const Profile& b) {
  ProfileDiff d;
  // Where each profile's entries were measured: (arch, device). One place each, and different
  // (the same model on two GPUs): entries line up by shape.
  auto places = [](const Profile& p) {
    std::set<std::pair<std::string, ProfileDevice>> out;
    for (const auto& e : p.entries) out.insert({e.key.arch, e.key.device});
    return out;
  };
  const auto places_a = places(a), places_b = places(b);
  if (places_a.size() == 1 && places_b.size() == 1 && *places_a.begin() != *places_b.begin()) {
    d.by_arch = false;
    auto text = [](const std::pair<std::string, ProfileDevice>& p) {
      return p.second.any() ? p.first : p.first + " " + device_text(p.second, p.first);
    };
    d.arch_a = text(*places_a.begin());
    d.arch_b = text(*places_b.begin());
  }
  auto key_of = [&](const ProfileEntry& e) {
    ProfileKey k = e.key;
    if (!d.by_arch) k.arch.clear(), k.device = {};
    return k;
  };
  std::map<ProfileKey, DiffLine> lines;
  for (const auto& e : a.entries) {
    DiffLine& l = lines[key_of(e)];
    l.key = e.key;
    l.a = e;
  }
  for (const auto& e : b.entries) {
    DiffLine& l = lines[key_of(e)];
    if (!l.a) l.key = e.key;
    l.b = e;
  }
  for (auto& [k, l] : lines) {
    if (!l.b)
      l.kind = DiffKind::Removed;
    else if (!l.a)
      l.kind = DiffKind::Added;
    else
      l.kind = (l.a->config != l.b->config || l.a->approval != l.b->approval) ? DiffKind::Changed : DiffKind::Same;
    if (l.a && l.b && l.a->provenance && l.b->provenance)
      l.speedup_change = l.b->provenance->speedup - l.a->provenance->speedup;
    d.lines.push_back(std::move(l));
  }
  // Path choices line up by key, or by (type, launch, ncols) when the sides are two GPUs.
  using PathKey = std::tuple<std::string, ProfileDevice, GgmlType, Launch, int>;
  auto path_key = [&](const PathChoice& c) {
    return d.by_arch ? PathKey{c.arch, c.device, c.type, c.launch, c.ncols} : PathKey{{}, {}, c.type, c.launch, c.ncols};
  };
  std::map<PathKey, PathDiffLine> paths;
  for (const auto& c : a.paths) paths[path_key(c)].a = c;
  for (const auto& c : b.paths) paths[path_key(c)].b = c;
  for (auto& [k, l] : paths) {
    l.kind = !l.b ? DiffKind::Removed
             : !l.a ? DiffKind::Added
             : (l.a->path != l.b->path || l.a->approval != l.b->approval) ? DiffKind::Changed
                                                                          : DiffKind::Same;
    d.paths.push_back(std::move(l));
  }
  return d;
}

}  // namespace temper
