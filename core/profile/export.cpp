// Exports: Temper JSON, kernel-anvil JSON (bucketed and lossy, with a report of every entry it
// could not carry), a standalone C++17 header, and CSV of a session's results.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "temper/error.h"
#include "temper/estimate.h"
#include "temper/ggml_table.h"
#include "temper/profile.h"

namespace temper {

using nlohmann::json;

std::string_view export_fate_name(ExportFate f) {
  switch (f) {
    case ExportFate::Emitted: return "emitted";
    case ExportFate::Merged: return "merged";
    case ExportFate::Dropped: return "dropped";
  }
  return "dropped";
}

namespace {
int count_fate(const std::vector<ExportNote>& notes, ExportFate f) {
  return int(std::count_if(notes.begin(), notes.end(), [f](const ExportNote& n) { return n.fate == f; }));
}
}  // namespace

int ExportReport::emitted() const { return count_fate(notes, ExportFate::Emitted); }
int ExportReport::merged() const { return count_fate(notes, ExportFate::Merged); }
int ExportReport::dropped() const { return count_fate(notes, ExportFate::Dropped); }

std::string ExportReport::text() const {
  std::ostringstream o;
  for (const auto& n : notes) {
    if (n.fate == ExportFate::Emitted) continue;
    o << export_fate_name(n.fate) << ": " << key_text(n.key) << " (nwarps x rows " << config_text(n.config)
      << "): " << n.reason << "\n";
  }
  for (const auto& r : rows) {
    char net[160];
    std::snprintf(net, sizeof net, "%.2f -> %.2f µs per token (net %+.2f)", r.stock_us_per_token, r.table_us_per_token,
                  r.net_us_per_token());
    o << "row: " << r.arch << " " << r.branch << ": "
      << (r.value == r.stock ? "upstream's " + config_text(r.stock) + " stays"
                             : config_text(r.stock) + " -> " + config_text(r.value))
      << ", " << net << " over " << r.shapes << " measured shape" << (r.shapes == 1 ? "" : "s");
    if (r.unmeasured) o << " (" << r.unmeasured << " never timed with " << config_text(r.value) << ": counted as stock)";
    o << "\n";
  }
  o << format << " export: " << emitted() << " emitted, " << merged() << " merged, " << dropped() << " dropped\n";
  return o.str();
}

int anvil_bucket(int64_t x) {
  if (x <= 128) return 0;
  if (x <= 1024) return 1;
  if (x <= 4096) return 2;
  if (x <= 16384) return 3;
  return 4;
}

std::optional<std::string> anvil_inapplicable(const ProfileEntry& e) {
  const Config c = e.config;
  if (launch_is_group(e.key.launch))
    return "a same-input group (mul_mat_group " + members_text(e.key.members) +
           "): kernel-anvil has no group launch; a Temper profile carries it";
  if (launch_is_pipelined(e.key.launch))
    return "a pipelined launch (" + std::string(launch_name(e.key.launch)) + "): only Temper's hook can pipeline a launch; a Temper profile carries it";
  if (launch_writes_q8(e.key.launch))
    return "a " + producer_words(e.key.launch) + " that writes its GEMVs' q8_1 activations (" + std::string(launch_name(e.key.launch)) +
           "): not a GEMV launch; a Temper profile carries it";
  if (e.key.launch != Launch::MulMat)
    return "a " + std::string(launch_name(e.key.launch)) +
           " launch: kernel-anvil's cells have no launch kind, and its patch would apply the value to every launch "
           "of the bucket";
  if (e.key.ncols != 1)
    return "ncols " + std::to_string(e.key.ncols) + ": kernel-anvil's patch reads entries at ncols 1 only";
  if (c.nwarps < 1 || c.nwarps > kAnvilMaxValue || c.rows_per_block < 1 || c.rows_per_block > kAnvilMaxValue)
    return "values outside kernel-anvil's 1..32";
  if (e.bucketed) return std::nullopt;  // an imported cell is already what the patch reads
  if (c.rows_per_block <= 1)
    return "rows_per_block 1: the patch only switches the small-K variant on (rows_per_block > 1); it cannot set nwarps";
  if (e.default_config.nwarps > 0 && c.nwarps != e.default_config.nwarps)
    return "nwarps " + std::to_string(c.nwarps) + " differs from the default's " +
           std::to_string(e.default_config.nwarps) + ": the patch does not apply nwarps, so the engine would run " +
           config_text({e.default_config.nwarps, e.default_config.nwarps}) + ", which was not the measured winner";
  if (c.rows_per_block != c.nwarps)
    return "rows_per_block " + std::to_string(c.rows_per_block) + " != nwarps " + std::to_string(c.nwarps) +
           ": the small-K variant always runs rows_per_block = nwarps";
  return std::nullopt;
}

namespace {

// The arch an export for one arch covers: the option, else the only arch of the approved entries.
std::string pick_arch(const Profile& p, const ExportOptions& o, std::string_view format) {
  std::vector<std::string> arches;
  for (const auto& e : p.entries)
    if (e.approval == Approval::Approved && std::find(arches.begin(), arches.end(), e.key.arch) == arches.end())
      arches.push_back(e.key.arch);
  if (!o.arch.empty()) {
    if (std::find(arches.begin(), arches.end(), o.arch) == arches.end())
      fail(ErrorKind::BadInput, "profile has no approved entry for arch " + o.arch);
    return o.arch;
  }
  if (arches.size() > 1) {
    std::string list;
    for (const auto& a : arches) list += (list.empty() ? "" : ", ") + (a.empty() ? "(no arch)" : a);
    fail(ErrorKind::BadInput, std::string(format) + " carries one arch; the profile's approved entries span " + list +
                                  ": choose one with --arch");
  }
  return arches.empty() ? std::string() : arches.front();
}

// Not approved or another arch: dropped, with the reason, so the report covers every entry.
bool note_unexported(const ProfileEntry& e, const std::string& arch, std::vector<ExportNote>& notes) {
  if (e.approval != Approval::Approved) {
    notes.push_back({e.key, e.config, ExportFate::Dropped, "not approved (" + std::string(approval_name(e.approval)) + ")", {}});
    return true;
  }
  if (e.key.arch != arch) {
    notes.push_back({e.key, e.config, ExportFate::Dropped, "arch " + e.key.arch + ": this file holds " + arch + " only", {}});
    return true;
  }
  return false;
}

uint64_t share_of(const ProfileEntry& e) { return e.provenance ? e.provenance->bytes_per_token : 0; }
double speedup_of(const ProfileEntry& e) { return e.provenance ? e.provenance->speedup : 1.0; }

// One line of text safe inside a // comment.
std::string comment_safe(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\\') c = ' ';
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Export export_temper(const Profile& p) {
  Export out;
  out.content = to_json(p).dump(2) + "\n";
  out.report.format = "temper";
  for (const auto& e : p.entries) out.report.notes.push_back({e.key, e.config, ExportFate::Emitted, "lossless", {}});
  return out;
}

Export export_kernel_anvil(const Profile& p, const ExportOptions& o) {
  Export out;
  out.report.format = "kernel-anvil";
  const std::string arch = pick_arch(p, o, "kernel-anvil JSON");
  // Cells: (type id, n bucket, k bucket) → applicable approved entries.
  std::map<std::tuple<uint32_t, int, int>, std::vector<const ProfileEntry*>> cells;
  for (const auto& e : p.entries) {
    if (note_unexported(e, arch, out.report.notes)) continue;
    if (auto why = anvil_inapplicable(e)) {
      out.report.notes.push_back({e.key, e.config, ExportFate::Dropped, *why, {}});
      continue;
    }
    cells[{uint32_t(e.key.type), anvil_bucket(e.key.n), anvil_bucket(e.key.k)}].push_back(&e);
  }
  json configs = json::object();
  for (auto& [cell, members] : cells) {
    const auto [type_id, bn, bk] = cell;
    // The cell carries one value: the shape with the largest share of decode bytes decides
    // (then the larger speedup, then key order).
    std::stable_sort(members.begin(), members.end(), [](const ProfileEntry* a, const ProfileEntry* b) {
      if (share_of(*a) != share_of(*b)) return share_of(*a) > share_of(*b);
      return speedup_of(*a) > speedup_of(*b);
    });
    const ProfileEntry& kept = *members.front();
    const std::string cell_key = std::to_string(bn) + "," + std::to_string(bk);
    configs[std::to_string(type_id)][cell_key] = {{"nwarps", kept.config.nwarps},
                                                  {"rows_per_block", kept.config.rows_per_block}};
    out.report.notes.push_back({kept.key, kept.config, ExportFate::Emitted,
                                "type " + std::to_string(type_id) + " cell \"" + cell_key + "\"", {}});
    for (size_t i = 1; i < members.size(); ++i) {
      const ProfileEntry& m = *members[i];
      std::string reason = "shares type " + std::to_string(type_id) + " cell \"" + cell_key + "\" with " +
                           key_text(kept.key) + " (larger share of decode bytes); the cell carries " +
                           config_text(kept.config);
      if (m.config != kept.config) reason += ", not this entry's " + config_text(m.config);
      out.report.notes.push_back({m.key, m.config, ExportFate::Merged, reason, kept.key});
    }
  }
  out.content = json{{"configs", configs}}.dump(2) + "\n";
  if (out.content.size() > kAnvilMaxFileBytes)
    fail(ErrorKind::BadInput, "kernel-anvil export would be " + std::to_string(out.content.size()) +
                                  " bytes; its loader ignores files over 1 MiB");
  return out;
}

std::string empty_export_reason(const Export& e) {
  const ExportReport& r = e.report;
  if (r.format == "csv" || r.emitted() > 0) return "";
  std::string why = "it carries no config (" + std::to_string(r.dropped()) + " dropped, " + std::to_string(r.merged()) +
                    " merged): ";
  if (r.notes.empty()) return why + "the profile has no entry";
  if (std::none_of(r.notes.begin(), r.notes.end(), [](const ExportNote& n) { return n.reason.rfind("not approved", 0) != 0; }))
    return why + "nothing is approved";
  return why + "nothing approved is expressible in the " + r.format + " format; the engine would keep its defaults";
}

Estimate estimate_exported(const Session& s, int device, const Profile& p, std::string_view format, const ExportOptions& o) {
  const SessionDevice* d = find_device(s, device);
  if (!d) fail(ErrorKind::BadInput, "session " + s.id + " has no device " + std::to_string(device));
  const std::string arch = d->info.arch;
  if (format == "temper") return estimate_with_profile(s, device, p);
  // The single-arch formats hold one arch: the option's, else this device's.
  ExportOptions one = o;
  if (one.arch.empty()) one.arch = arch;
  const bool carried = std::any_of(p.entries.begin(), p.entries.end(), [&](const ProfileEntry& e) {
    return e.approval == Approval::Approved && e.key.arch == one.arch;
  });
  if (one.arch != arch || !carried) return estimate_decode(s, device, {});  // this device runs its defaults
  if (format == "ggml-table") {
    const GgmlTable t = build_ggml_table(p, one, &s);
    return estimate_decode(s, device, [&](const ShapeKey& shape) { return t.launch({arch, shape, 1}); });
  }
  const Export e = format == "kernel-anvil" ? export_kernel_anvil(p, one) : export_header(p, one);
  return estimate_with_profile(s, device, as_applied(p, e.report));
}

Profile as_applied(const Profile& p, const ExportReport& r) {
  Profile out = p;
  for (auto& e : out.entries) e.approval = Approval::Pending;
  for (const auto& n : r.notes) {
    ProfileEntry* e = find_entry(out, n.key);
    if (!e || n.fate == ExportFate::Dropped) continue;
    e->approval = Approval::Approved;
    if (n.fate == ExportFate::Merged && n.kept)
      if (const ProfileEntry* kept = find_entry(p, *n.kept)) e->config = kept->config;
  }
  return out;
}

Export export_header(const Profile& p, const ExportOptions& o) {
  Export out;
  out.report.format = "header";
  const std::string arch = pick_arch(p, o, "a C++ header");
  std::vector<const ProfileEntry*> rows;
  std::vector<std::string> devices, sessions;
  auto add_unique = [](std::vector<std::string>& v, const std::string& s) {
    if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const auto& e : p.entries) {
    if (note_unexported(e, arch, out.report.notes)) continue;
    if (launch_is_group(e.key.launch)) {  // the header's lookup is per launch; a group is several
      out.report.notes.push_back({e.key, e.config, ExportFate::Dropped,
                                  "a same-input group (mul_mat_group): the header's lookup has no group launch; a Temper "
                                  "profile carries it",
                                  {}});
      continue;
    }
    if (launch_is_pipelined(e.key.launch)) {  // the header's launches are upstream's kernel, which has no pipelined twin
      out.report.notes.push_back({e.key, e.config, ExportFate::Dropped,
                                  "a pipelined launch (" + std::string(launch_name(e.key.launch)) +
                                      "): only Temper's hook can pipeline a launch; a Temper profile carries it",
                                  {}});
      continue;
    }
    if (launch_writes_q8(e.key.launch)) {
      out.report.notes.push_back({e.key, e.config, ExportFate::Dropped,
                                  "a " + producer_words(e.key.launch) + " that writes its GEMVs' q8_1 activations (" +
                                      std::string(launch_name(e.key.launch)) + "): the header tunes mmvq launches only; a Temper profile carries it",
                                  {}});
      continue;
    }
    if (e.config.nwarps < 1 || e.config.rows_per_block < 1) {
      out.report.notes.push_back({e.key, e.config, ExportFate::Dropped, "config values must be ≥ 1", {}});
      continue;
    }
    // The lookup has no device: one entry per launch, the first device's (entries are sorted).
    const auto same_launch = std::find_if(rows.begin(), rows.end(), [&](const ProfileEntry* r) {
      return r->key.shape() == e.key.shape() && r->key.ncols == e.key.ncols && r->bucketed == e.bucketed;
    });
    if (same_launch != rows.end()) {
      out.report.notes.push_back({e.key, e.config, ExportFate::Merged,
                                  "another device's entry for the same launch: the header's lookup has no device",
                                  (*same_launch)->key});
      continue;
    }
    rows.push_back(&e);
    out.report.notes.push_back({e.key, e.config, ExportFate::Emitted, "exact shape", {}});
    if (e.bucketed) out.report.notes.back().reason = "kernel-anvil bucket (range of shapes)";
    if (e.provenance) {
      add_unique(devices, e.provenance->device_name);
      add_unique(sessions, e.provenance->session_id);
    }
  }
  // Exact shapes first, so they win over an imported bucket that contains them.
  std::stable_sort(rows.begin(), rows.end(), [](const ProfileEntry* a, const ProfileEntry* b) { return !a->bucketed && b->bucketed; });
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("(none recorded)") : s;
  };
  std::string guard = "TEMPER_TUNING_";
  for (char c : arch.empty() ? std::string("ANY") : arch) guard += std::isalnum(uint8_t(c)) ? char(std::toupper(uint8_t(c))) : '_';
  guard += "_H";
  std::ostringstream h;
  h << "// Generated by Temper " << TEMPER_VERSION << " from a profile created " << comment_safe(p.created)
    << ". Do not edit; re-export instead.\n"
    << "// Tuned llama.cpp mmvq launch configs for arch " << comment_safe(arch.empty() ? "(none)" : arch)
    << ", measured on " << comment_safe(join(devices)) << ", session(s) " << comment_safe(join(sessions))
    << (p.model.empty() ? "" : ", model " + comment_safe(p.model)) << ".\n"
    << "// lookup(type, n, k, ncols, launch): type = ggml type id (GGML_TYPE_*), n = rows, k = row length,\n"
    << "// ncols = batch width, launch = 0 plain MUL_MAT, 1 fused gate/up, 2 MUL_MAT_ID, 3 fused MUL_MAT_ID\n"
    << "// gate/up (n, k of one matrix, one expert's). Returns the tuned (nwarps, rows_per_block), or\n"
    << "// use_default = true when the engine's own table should decide. Standalone C++17, no includes.\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\nnamespace temper_tuning {\n\n"
    << "struct LaunchConfig {\n  int nwarps;\n  int rows_per_block;\n  bool use_default;\n};\n\n"
    << "namespace detail {\nstruct Entry {\n  int type;\n  long long n_lo, n_hi, k_lo, k_hi;\n  int ncols;\n"
    << "  int nwarps;\n  int rows_per_block;\n  int launch;\n};\n"
    << "// {type, n_lo, n_hi, k_lo, k_hi, ncols, nwarps, rows_per_block, launch}; the last row only ends the table.\n"
    << "inline constexpr Entry kEntries[] = {\n";
  static const long long kLo[5] = {1, 129, 1025, 4097, 16385};
  static const long long kHi[5] = {128, 1024, 4096, 16384, 9223372036854775807LL};
  for (const ProfileEntry* e : rows) {
    long long nlo = e->key.n, nhi = e->key.n, klo = e->key.k, khi = e->key.k;
    if (e->bucketed) {
      nlo = kLo[anvil_bucket(e->key.n)], nhi = kHi[anvil_bucket(e->key.n)];
      klo = kLo[anvil_bucket(e->key.k)], khi = kHi[anvil_bucket(e->key.k)];
    }
    h << "    {" << uint32_t(e->key.type) << ", " << nlo << "LL, " << nhi << "LL, " << klo << "LL, " << khi << "LL, "
      << e->key.ncols << ", " << e->config.nwarps << ", " << e->config.rows_per_block << ", " << int(e->key.launch)
      << "},  // " << type_name(e->key.type);
    if (e->key.launch != Launch::MulMat) h << " " << launch_name(e->key.launch);
    if (e->provenance)
      h << " " << e->key.n << "x" << e->key.k << ": " << number_text(e->provenance->speedup) << "x ("
        << number_text(e->provenance->speedup_low) << ".." << number_text(e->provenance->speedup_high) << ") vs default "
        << config_text(e->default_config);
    else
      h << " bucket, imported without measurements";
    h << "\n";
  }
  h << "    {-1, 0LL, 0LL, 0LL, 0LL, 0, 0, 0, 0},\n};\n}  // namespace detail\n\n"
    << "inline constexpr const char* kArch = \"" << arch << "\";\n"
    << "inline constexpr int kEntryCount = " << rows.size() << ";\n\n"
    << "constexpr LaunchConfig lookup(int type, long long n, long long k, int ncols, int launch = 0) {\n"
    << "  for (const detail::Entry& e : detail::kEntries) {\n"
    << "    if (e.type == type && e.launch == launch && e.ncols == ncols && n >= e.n_lo && n <= e.n_hi && k >= e.k_lo &&\n"
    << "        k <= e.k_hi) {\n"
    << "      return LaunchConfig{e.nwarps, e.rows_per_block, false};\n    }\n  }\n"
    << "  return LaunchConfig{0, 0, true};\n}\n\n}  // namespace temper_tuning\n\n#endif  // " << guard << "\n";
  out.content = h.str();
  return out;
}

Export export_csv(const Session& s) {
  Export out;
  out.report.format = "csv";
  std::ostringstream c;
  c << "session,device,device_name,arch,type,n,k,ncols,nwarps,rows_per_block,is_default,is_small_k,status,"
       "median_us,p10_us,p90_us,ci_low_us,ci_high_us,samples,converged,gbs,ops_per_s,max_abs_error,"
       "worst_error_ratio,speedup_vs_default,verdict,failure,launch,experts,experts_used\n";
  for (const Result& r : s.results) {
    const SessionDevice* d = find_device(s, r.device);
    const bool timed = r.status == ResultStatus::Ok && r.time_us.n > 0;
    std::string speedup, verdict;
    const Verdict* w = find_verdict(s, r);
    if (timed && w && w->default_us > 0 && r.time_us.median > 0) speedup = number_text(w->default_us / r.time_us.median);
    if (w && w->config == r.config) verdict = w->verdict;
    c << csv_field(s.id) << "," << r.device << "," << csv_field(d ? d->info.name : "") << ","
      << csv_field(d ? d->info.arch : "") << "," << type_name(r.type) << "," << r.n << "," << r.k << "," << r.ncols
      << "," << r.config.nwarps << "," << r.config.rows_per_block << "," << (r.is_default ? 1 : 0) << ","
      << (r.is_small_k ? 1 : 0) << "," << result_status_name(r.status) << ",";
    if (timed)
      c << number_text(r.time_us.median) << "," << number_text(r.time_us.p10) << "," << number_text(r.time_us.p90) << "," << number_text(r.time_us.ci_low)
        << "," << number_text(r.time_us.ci_high) << "," << r.time_us.n << "," << (r.converged ? 1 : 0) << "," << number_text(r.gbs)
        << "," << number_text(r.ops_per_s) << ",";
    else
      c << ",,,,,,,,,";
    if (r.status == ResultStatus::Ok || r.status == ResultStatus::Failed)
      c << number_text(r.max_abs_error) << "," << number_text(r.worst_error_ratio) << ",";
    else
      c << ",,";
    c << speedup << "," << csv_field(verdict) << "," << csv_field(r.failure) << "," << launch_name(r.launch) << ","
      << r.experts << "," << r.used << "\n";
    out.report.notes.push_back({{d ? d->info.arch : "", r, r.ncols}, r.config, ExportFate::Emitted, "row", {}});
  }
  out.content = c.str();
  return out;
}

}  // namespace temper
