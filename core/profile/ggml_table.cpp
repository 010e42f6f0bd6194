// The ggml-table export: approved entries folded into one value per (arch, type, ncols, small-K
// branch) and written as upstream writes its mmvq tables, with the evidence a pull request needs.
#include "temper/ggml_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/mmvq_traits.h"

namespace temper {

namespace {


std::string num(double v, const char* fmt = "%.2f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// One line of text safe inside a comment and a markdown table cell.
std::string plain(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\\' || c == '|') c = ' ';
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s[at] = ' ';
  return s;
}

std::string ggml_enum_name(GgmlType t) {
  std::string s = "GGML_TYPE_";
  for (char c : type_name(t)) s += char(std::toupper(uint8_t(c)));
  return s;
}

std::string function_suffix(const std::string& arch) {
  std::string s;
  for (char c : arch) s += std::isalnum(uint8_t(c)) ? char(std::tolower(uint8_t(c))) : '_';
  return s.empty() ? "any" : s;
}

std::vector<GgmlType> mmvq_types() {
  std::vector<GgmlType> out;
  for (const TypeInfo& t : all_types())
    if (mmvq::type_supported(uint32_t(t.type))) out.push_back(t.type);
  return out;
}

// The stock tables version most entries of the arch were measured against.
std::string engine_of(const std::vector<const ProfileEntry*>& entries) {
  std::map<std::string, int> count;
  for (const ProfileEntry* e : entries)
    if (e->provenance && defaults::is_known_engine(e->provenance->engine)) ++count[e->provenance->engine];
  std::string best(defaults::known_engines().front());
  int most = 0;
  for (const auto& [engine, n] : count)
    if (n > most) best = engine, most = n;
  return best;
}

const SessionDevice* session_device(const Session* s, const ProfileEntry& e) {
  if (!s || !e.provenance || e.provenance->session_id != s->id) return nullptr;
  for (const SessionDevice& d : s->devices)
    if (d.info.arch == e.key.arch && d.info.name == e.provenance->device_name) return &d;
  return nullptr;
}

bool usable(GgmlType t, int ncols) { return mmvq::type_supported(uint32_t(t)) && ncols >= 1 && ncols <= mmvq::kMaxNcols; }

struct Timing {
  double us = 0, lo = 0, hi = 0;
  std::string source;
};

// A measured shape of one arch that the table reaches: a profile entry (of any approval) or, from a
// session, a verdict. What a config costs there is looked up from whatever measured it.
struct Measured {
  ProfileKey key;
  const ProfileEntry* entry = nullptr;
  std::optional<GroupKey> group;  // where the session timed it
  std::string status;             // the entry's approval, else the session's verdict
  Config default_config;
  Timing stock;                   // the default's median and CI
  int64_t calls_per_token = 0;
};

// Calls per token of a shape: the weight of every per-token sum the table makes, from one place
// (the session's model when it measured the shape, else what the entry recorded).
int64_t calls_per_token(const Session* s, const ShapeKey& shape, const Provenance* pv) {
  if (s)
    for (const Shape& sh : s->shapes)
      if (sh.shape() == shape) return sh.calls_per_token;
  return pv ? pv->calls_per_token : 0;
}
double weight(const Measured& m) { return double(std::max<int64_t>(1, m.calls_per_token)); }

// The median (with CI) of config `c` at a measured shape, when anything measured it.
std::optional<Timing> time_at(const Measured& m, Config c, const Session* s) {
  if (c == m.default_config) return m.stock;
  if (m.entry && m.entry->provenance && c == m.entry->config) {
    const Provenance& pv = *m.entry->provenance;
    return Timing{pv.tuned_us, pv.tuned_ci_low, pv.tuned_ci_high, "approved"};
  }
  if (s && m.group)
    if (const Result* r = find_result(*s, *m.group, c))
      if (r->status == ResultStatus::Ok && r->time_us.n > 0)
        return Timing{r->time_us.median, r->time_us.ci_low, r->time_us.ci_high, "session " + s->id};
  return std::nullopt;
}

// Every measured launch of `arch` the table reaches: the profile's entries first, then the session's
// other verdicts; one per (shape, ncols) — the first device's, as the table has no device. The
// hook's unfused pairs and same-input groups are not the engine's launches: the table never reaches them.
std::vector<Measured> measured_shapes(const std::string& arch, const Profile& p, const Session* s) {
  std::vector<Measured> out;
  std::set<std::pair<ShapeKey, int>> seen;
  auto fresh = [&](const ShapeKey& shape, int ncols) {
    return !launch_is_unfused(shape.launch) && !launch_is_group(shape.launch) && !launch_is_pipelined(shape.launch) &&
           !launch_writes_q8(shape.launch) &&
           seen.insert({shape, ncols}).second;
  };
  for (const ProfileEntry& e : p.entries) {
    if (e.key.arch != arch || e.bucketed || !e.provenance || !usable(e.key.type, e.key.ncols) ||
        e.default_config.nwarps < 1 || !fresh(e.key.shape(), e.key.ncols))
      continue;
    const Provenance& pv = *e.provenance;
    Measured m{e.key, &e, std::nullopt, std::string(approval_name(e.approval)), e.default_config,
               {pv.default_us, pv.default_ci_low, pv.default_ci_high, "default"}, 0};
    const SessionDevice* d = session_device(s, e);
    if (d) m.group = group_key(d->info.index, e.key.shape(), e.key.ncols);
    m.calls_per_token = calls_per_token(d ? s : nullptr, e.key, &pv);
    out.push_back(std::move(m));
  }
  if (s)
    for (const Verdict& w : s->verdicts) {
      const SessionDevice* d = find_device(*s, w.device);
      if (!d || d->info.arch != arch || w.verdict == kVerdictNoDefault || w.default_config.nwarps < 1 ||
          !usable(w.type, w.ncols) || !fresh(w.shape(), w.ncols))
        continue;
      const ProfileKey key{arch, w.shape(), w.ncols, profile_device(d->info)};
      out.push_back({key, nullptr, w.group(), w.verdict, w.default_config,
                     {w.default_us, w.default_ci_low, w.default_ci_high, "default"}, calls_per_token(s, key, nullptr)});
    }
  std::sort(out.begin(), out.end(), [](const Measured& x, const Measured& y) { return x.key < y.key; });
  return out;
}

// Σ calls per token × median over a branch's shapes with `c` launched at each (nullopt: each
// shape's stock config); where `c` was never timed the shape counts as stock.
struct RowSum {
  double us = 0, lo = 0, hi = 0;
  int unmeasured = 0;
};
RowSum row_sum(const std::vector<const Measured*>& shapes, std::optional<Config> c, const Session* s) {
  RowSum r;
  for (const Measured* m : shapes) {
    std::optional<Timing> t = c ? time_at(*m, *c, s) : m->stock;
    if (!t) t = m->stock, ++r.unmeasured;
    const double w = weight(*m);
    r.us += w * t->us, r.lo += w * t->lo, r.hi += w * t->hi;
  }
  return r;
}

std::optional<std::string> dropped_reason(const ProfileEntry& e, const std::string& only_arch) {
  if (e.approval != Approval::Approved) return "not approved (" + std::string(approval_name(e.approval)) + ")";
  if (e.key.arch.empty()) return "no arch: a table is per GPU family";
  if (!only_arch.empty() && e.key.arch != only_arch) return "arch " + e.key.arch + ": this file holds " + only_arch + " only";
  if (e.bucketed) return "kernel-anvil bucket: no measured shape to place in a per-type table";
  if (launch_is_unfused(e.key.launch))
    return "the hook's unfused pair: upstream's table has no launch kind to carry it (a Temper profile does)";
  if (launch_is_group(e.key.launch))
    return "a same-input group (mul_mat_group): upstream has no group launch to carry it (a Temper profile does)";
  if (launch_is_pipelined(e.key.launch))
    return "a pipelined launch: upstream's kernel has no pipelined instantiation to carry it (a Temper profile does)";
  if (launch_writes_q8(e.key.launch))
    return "a " + producer_words(e.key.launch) + " writing its GEMVs' q8_1 activations: upstream's table tunes mmvq launches only (a Temper profile carries it)";
  if (!mmvq::type_supported(uint32_t(e.key.type))) return "type " + std::string(type_name(e.key.type)) + " has no mmvq kernel";
  if (e.key.ncols < 1 || e.key.ncols > mmvq::kMaxNcols) return "ncols outside 1..8";
  const std::string why =
      defaults::config_invalid_reason(e.key.type, e.key.ncols, e.config, defaults::engine_warp_size(e.key.arch));
  if (!why.empty()) return why;
  return std::nullopt;
}

// ---- C++ in upstream's style ----

constexpr int kNwarpsParam = -1;  // a rows_per_block value that is the nwarps argument itself

std::string value_text(int v) { return v == kNwarpsParam ? "nwarps" : std::to_string(v); }

// The value most types share (ties: the smaller), for the switch's default.
int common_value(const std::map<GgmlType, int>& values) {
  std::map<int, int> count;
  for (const auto& [t, v] : values) ++count[v];
  int best = 0, most = -1;
  for (const auto& [v, n] : count)
    if (n > most) best = v, most = n;
  return best;
}

bool uniform(const std::map<GgmlType, int>& values) {
  return std::all_of(values.begin(), values.end(), [&](const auto& kv) { return kv.second == values.begin()->second; });
}

// `switch (type) { case ...: return v; default: return d; }` indented by `in`.
void emit_type_switch(std::ostream& o, const std::map<GgmlType, int>& values, const std::string& in,
                      const std::function<std::string(int)>& text) {
  const int def = common_value(values);
  std::vector<int> order;  // exception values in order of their first type
  for (const auto& [t, v] : values)
    if (v != def && std::find(order.begin(), order.end(), v) == order.end()) order.push_back(v);
  o << in << "switch (type) {\n";
  for (int v : order) {
    for (const auto& [t, tv] : values)
      if (tv == v) o << in << "    case " << ggml_enum_name(t) << ":\n";
    o << in << "        return " << text(v) << ";\n";
  }
  o << in << "    default:\n" << in << "        return " << text(def) << ";\n" << in << "}\n";
}

// One int function of (type, ncols_dst): `small` is the ncols 1 small-K branch, `by_ncols[c-1]` the rest.
void emit_function(std::ostream& o, const std::string& signature, const std::map<GgmlType, int>& small,
                   const std::vector<std::map<GgmlType, int>>& by_ncols, const std::string& unused_if_no_nwarps) {
  auto text = [](int v) { return value_text(v); };
  bool uses_type = !uniform(small);
  const bool uses_nwarps = std::any_of(small.begin(), small.end(), [](const auto& kv) { return kv.second == kNwarpsParam; });
  for (const auto& m : by_ncols) uses_type = uses_type || !uniform(m);
  o << signature << " {\n";
  if (!uses_type) o << "    (void) type;\n";
  if (!unused_if_no_nwarps.empty() && !uses_nwarps) o << "    (void) " << unused_if_no_nwarps << ";\n";
  o << "    if (ncols_dst == 1 && small_k) {\n";
  if (uniform(small)) o << "        return " << text(small.begin()->second) << ";\n";
  else emit_type_switch(o, small, "        ", text);
  o << "    }\n";
  // ncols with per-type values, consecutive equal ones together, as upstream's if-blocks.
  for (int c = 1; c <= int(by_ncols.size());) {
    int last = c;
    while (last < int(by_ncols.size()) && by_ncols[size_t(last)] == by_ncols[size_t(c - 1)]) ++last;
    if (!uniform(by_ncols[size_t(c - 1)])) {
      o << "    if (" << (c == last ? "ncols_dst == " + std::to_string(c)
                                     : "ncols_dst >= " + std::to_string(c) + " && ncols_dst <= " + std::to_string(last))
        << ") {\n";
      emit_type_switch(o, by_ncols[size_t(c - 1)], "        ", text);
      o << "    }\n";
    }
    c = last + 1;
  }
  // The rest by ncols alone, as upstream's switch (ncols_dst).
  std::vector<std::pair<int, std::vector<int>>> groups;  // value → ncols, in order
  for (int c = 1; c <= int(by_ncols.size()); ++c) {
    const auto& m = by_ncols[size_t(c - 1)];
    if (!uniform(m)) continue;
    const int v = m.begin()->second;
    auto g = std::find_if(groups.begin(), groups.end(), [v](const auto& x) { return x.first == v; });
    if (g == groups.end()) groups.push_back({v, {c}});
    else g->second.push_back(c);
  }
  o << "    switch (ncols_dst) {\n";
  for (const auto& [v, cs] : groups) {
    for (int c : cs) o << "        case " << c << ":\n";
    o << "            return " << text(v) << ";\n";
  }
  o << "        default:\n            return 1;\n    }\n}\n\n";
}

}  // namespace

std::string GgmlTableCell::branch_text() const {
  return std::string(type_name(type)) + " ncols " + std::to_string(ncols) + (ncols == 1 ? (small_k ? " (small K)" : " (large K)") : "");
}

std::optional<Config> GgmlTable::launch(const ProfileKey& key) const {
  // The hook's unfused pair is no launch of the engine's: the table does not reach it.
  if (!usable(key.type, key.ncols) || launch_is_unfused(key.launch) || launch_is_group(key.launch) || launch_is_pipelined(key.launch) ||
      launch_writes_q8(key.launch))
    return std::nullopt;
  for (const GgmlTableArch& a : arches)
    if (a.arch == key.arch) return a.value(key.type, key.ncols, a.uses_small_k(key.type, key.ncols, key.k));
  return std::nullopt;
}

int GgmlTableArch::small_k_factor(GgmlType type) const {
  if (std::find(small_k_off.begin(), small_k_off.end(), type) != small_k_off.end()) return 0;
  const auto variant = defaults::small_k_variant(engine, arch, type, 1);
  return variant ? variant->nwarps : 0;
}

Config GgmlTableArch::value(GgmlType type, int ncols, bool small_k) const {
  small_k = small_k && ncols == 1;
  for (const GgmlTableCell& c : cells)
    if (c.type == type && c.ncols == ncols && c.small_k == small_k) return c.value;
  const Config entry = defaults::table_entry(engine, defaults::table_for(engine, arch), type, ncols);
  return small_k ? Config{entry.nwarps, entry.nwarps} : entry;
}

bool GgmlTableArch::uses_small_k(GgmlType type, int ncols, int k) const {
  const int factor = small_k_factor(type);
  if (ncols != 1 || factor == 0) return false;
  const mmvq::TypeTraits t = mmvq::type_traits(uint32_t(type));
  return k / t.qk < factor * (t.vdr * warp_size / t.qi);
}

namespace {

std::string signed_us(double v) { return (v >= 0 ? "+" : "") + num(v); }

// `entries`: the arch's approved entries; `measured`: every measured shape of the arch.
GgmlTableArch build_arch(const std::string& arch, const std::vector<const ProfileEntry*>& entries,
                         const std::vector<Measured>& measured, const Session* s, std::vector<ExportNote>& notes) {
  GgmlTableArch a;
  a.arch = arch;
  a.suffix = function_suffix(arch);
  a.engine = engine_of(entries);
  a.stock_table = std::string(defaults::table_name(defaults::table_for(a.engine, arch)));
  a.warp_size = defaults::engine_warp_size(arch);
  // Branches by the stock small-K rule, so each value applies where its shapes were measured.
  using Branch = std::tuple<GgmlType, int, bool>;
  auto branch_of = [&](const ProfileKey& k) -> Branch {
    return {k.type, k.ncols, k.ncols == 1 && defaults::small_k_applies(a.engine, arch, k.type, 1, k.k, a.warp_size)};
  };
  std::map<Branch, std::vector<const ProfileEntry*>> branches;
  for (const ProfileEntry* e : entries) branches[branch_of(e->key)].push_back(e);
  std::map<Branch, std::vector<const Measured*>> reach;
  for (const Measured& m : measured) reach[branch_of(m.key)].push_back(&m);
  auto measured_of = [&](const ProfileKey& k) -> const Measured* {
    for (const Measured& m : measured)
      if (m.key == k) return &m;
    return nullptr;
  };

  for (auto& [branch, members] : branches) {
    const auto [type, ncols, small] = branch;
    GgmlTableCell cell;
    cell.type = type, cell.ncols = ncols, cell.small_k = small;
    cell.stock = a.value(type, ncols, small);  // no cells yet: the engine's own value
    const std::vector<const Measured*>& shapes = reach[branch];
    for (const Measured* m : shapes) cell.reached.push_back(m->key.shape());
    // The value: the approved config with the least time per token over every measured shape of
    // the branch (ties: the larger share of decode bytes, then key order); upstream's when none
    // is faster than it.
    std::stable_sort(members.begin(), members.end(), [](const ProfileEntry* x, const ProfileEntry* y) {
      const uint64_t bx = x->provenance ? x->provenance->bytes_per_token : 0, by = y->provenance ? y->provenance->bytes_per_token : 0;
      return bx > by;
    });
    const RowSum stock = row_sum(shapes, std::nullopt, s);
    std::map<Config, RowSum> sums;
    RowSum best = stock;
    cell.value = cell.stock;
    for (const ProfileEntry* e : members) {
      const auto [it, fresh] = sums.try_emplace(e->config);
      if (fresh) it->second = row_sum(shapes, e->config, s);
      if (it->second.us < best.us - 1e-9) best = it->second, cell.value = e->config;
    }
    // A row whose speedup CI reaches 1.000 is not evidence of a gain: upstream's value stays.
    const bool spans_one = cell.value != cell.stock && !(best.hi > 0 && stock.lo / best.hi > 1);
    const RowSum unproven = best;
    const Config tried = cell.value;
    if (spans_one) best = stock, cell.value = cell.stock;
    cell.stock_us_per_token = stock.us, cell.stock_ci_low = stock.lo, cell.stock_ci_high = stock.hi;
    cell.table_us_per_token = best.us, cell.table_ci_low = best.lo, cell.table_ci_high = best.hi;
    cell.unmeasured = best.unmeasured;
    const std::string where = std::to_string(shapes.size()) + " measured shape" + (shapes.size() == 1 ? "" : "s");
    auto net_text = [&](const RowSum& r) {
      std::string t = signed_us(r.us - stock.us) + " µs per token (" + num(stock.us) + " -> " + num(r.us) + " over " + where;
      if (r.unmeasured) t += "; " + std::to_string(r.unmeasured) + " never timed with it count as stock";
      return t + ")";
    };
    const auto keeper = std::find_if(members.begin(), members.end(), [&](const ProfileEntry* e) { return e->config == cell.value; });
    for (const ProfileEntry* e : members) {
      GgmlTableShape sh;
      sh.key = e->key;
      sh.approved = e->config;
      sh.default_config = e->default_config;
      sh.table_config = cell.value;
      if (e->provenance) {
        const Provenance& pv = *e->provenance;
        sh.default_us = pv.default_us, sh.default_ci_low = pv.default_ci_low, sh.default_ci_high = pv.default_ci_high;
        sh.approved_us = pv.tuned_us, sh.approved_ci_low = pv.tuned_ci_low, sh.approved_ci_high = pv.tuned_ci_high;
        sh.device = pv.device_name, sh.engine = pv.engine, sh.session = pv.session_id;
      }
      const Measured* m = measured_of(e->key);
      if (m) sh.calls_per_token = m->calls_per_token;
      if (const SessionDevice* d = session_device(s, *e))
        sh.driver = d->info.driver_version + " (runtime " + d->info.runtime_version + ")";
      if (const auto t = m ? time_at(*m, cell.value, s) : std::nullopt) {
        sh.table_us = t->us, sh.table_ci_low = t->lo, sh.table_ci_high = t->hi;
        sh.table_us_source = t->source;
      }
      if (!sh.lost()) {
        notes.push_back({e->key, e->config, ExportFate::Emitted,
                         std::string(type_name(type)) + " ncols " + std::to_string(ncols) + (small ? " (small K)" : ""), {}});
        cell.shapes.push_back(sh);
        continue;
      }
      std::string reason = "one value per type and ncols: ";
      if (spans_one)
        reason += "upstream's " + config_text(cell.value) + " stays, since the row's speedup CI with " +
                  config_text(tried) + " reaches 1.000 ([" + num(stock.lo / unproven.hi, "%.3f") + ", " +
                  num(unproven.lo > 0 ? stock.hi / unproven.lo : 0, "%.3f") + "] over " + where + ")";
      else if (keeper == members.end())
        reason += "upstream's " + config_text(cell.value) + " stays, since this shape's " + config_text(e->config) +
                  " at every shape of the row costs " + net_text(sums[e->config]);
      else
        reason += "the table carries " + config_text(cell.value) + " (from " + key_text((*keeper)->key) + ": " +
                  net_text(best) + "), not this shape's " + config_text(e->config) + " (" + net_text(sums[e->config]) + ")";
      if (sh.table_us)
        reason += "; here " + num(*sh.table_us) + " µs vs " + num(sh.approved_us) + " µs approved (+" +
                  num(*sh.table_us - sh.approved_us) + " µs per call)";
      else
        reason += "; " + config_text(cell.value) + " was not measured at this shape (up to its " +
                  num(sh.default_us - sh.approved_us) + " µs gain per call at stake)";
      if (keeper == members.end()) notes.push_back({e->key, e->config, ExportFate::Dropped, reason, {}});
      else notes.push_back({e->key, e->config, ExportFate::Merged, reason, (*keeper)->key});
      cell.shapes.push_back(sh);
    }
    a.cells.push_back(std::move(cell));
  }
  // Small K as a rule where the data says so: the same value on both sides of the threshold
  // switches the rule off for that type; different values keep it, each branch with its own.
  for (const GgmlType t : mmvq_types()) {
    const GgmlTableCell *big = nullptr, *small = nullptr;
    for (const auto& c : a.cells)
      if (c.type == t && c.ncols == 1) (c.small_k ? small : big) = &c;
    if (big && small && big->value == small->value && a.small_k_factor(t) > 0) a.small_k_off.push_back(t);
  }
  // Measured shapes without an approved entry of their own whose launch the table changes.
  for (const Measured& m : measured) {
    if (std::any_of(entries.begin(), entries.end(), [&](const ProfileEntry* e) { return e->key == m.key; })) continue;
    const Config tc = a.value(m.key.type, m.key.ncols, a.uses_small_k(m.key.type, m.key.ncols, m.key.k));
    if (tc == m.default_config) continue;
    GgmlTableSideEffect x{m.key, m.status, m.default_config, tc, m.stock.us, std::nullopt, m.calls_per_token};
    if (const auto t = time_at(m, tc, s)) x.table_us = t->us;
    a.side_effects.push_back(x);
  }
  return a;
}

void emit_arch(std::ostream& o, const GgmlTableArch& a) {
  const std::vector<GgmlType> types = mmvq_types();
  std::map<GgmlType, int> small_nwarps, small_rows, factor;
  std::vector<std::map<GgmlType, int>> nwarps(mmvq::kMaxNcols), rows(mmvq::kMaxNcols);
  for (const GgmlType t : types) {
    bool tuned_small = false;
    for (const auto& c : a.cells) tuned_small = tuned_small || (c.type == t && c.ncols == 1 && c.small_k);
    const Config sk = a.value(t, 1, true);
    small_nwarps[t] = sk.nwarps;
    small_rows[t] = tuned_small || sk.rows_per_block != sk.nwarps ? sk.rows_per_block : kNwarpsParam;
    factor[t] = a.small_k_factor(t);
    for (int c = 1; c <= mmvq::kMaxNcols; ++c) {
      const Config v = a.value(t, c, false);
      nwarps[size_t(c - 1)][t] = v.nwarps;
      rows[size_t(c - 1)][t] = v.rows_per_block;
    }
  }
  o << "// ---- " << plain(a.arch) << ": upstream's table for it is MMVQ_PARAMETERS_" << a.stock_table << " (" << a.engine
    << "); values differing from it are Temper's measured winners. ----\n\n";
  emit_function(o, "static constexpr TEMPER_MMVQ_HD int calc_nwarps_" + a.suffix +
                       "(ggml_type type, int ncols_dst, bool small_k = false)",
                small_nwarps, nwarps, "");
  emit_function(o, "static constexpr TEMPER_MMVQ_HD int calc_rows_per_block_" + a.suffix +
                       "(ggml_type type, int ncols_dst, bool small_k = false, int nwarps = 1)",
                small_rows, rows, "nwarps");
  o << "// Small K: one pass of the block covers the row (upstream's should_use_small_k, at its\n"
    << "// threshold; blocks_per_row_x = ncols_x / qk, blocks_per_iter_1warp = vdr * warp_size / qi).\n";
  if (!a.small_k_off.empty()) {
    o << "// Switched off where the same config won on both sides of the threshold:";
    for (GgmlType t : a.small_k_off) o << " " << type_name(t);
    o << ".\n";
  }
  o << "static constexpr TEMPER_MMVQ_HD bool should_use_small_k_" << a.suffix
    << "(ggml_type type, int ncols_dst, int blocks_per_row_x, int blocks_per_iter_1warp) {\n";
  const bool never = std::all_of(factor.begin(), factor.end(), [](const auto& kv) { return kv.second == 0; });
  if (never) {
    o << "    (void) type;\n    (void) ncols_dst;\n    (void) blocks_per_row_x;\n    (void) blocks_per_iter_1warp;\n"
      << "    return false;\n}\n\n";
    return;
  }
  o << "    if (ncols_dst != 1) {\n        return false;\n    }\n";
  const auto rule = [](int f) {
    return f == 0 ? std::string("false") : "blocks_per_row_x < " + std::to_string(f) + " * blocks_per_iter_1warp";
  };
  if (uniform(factor)) o << "    (void) type;\n    return " << rule(factor.begin()->second) << ";\n";
  else emit_type_switch(o, factor, "    ", rule);
  o << "}\n\n";
}

// ---- The evidence, as markdown ----

std::string speedup_text(const GgmlTableCell& c) {
  if (c.table_us_per_token <= 0 || c.table_ci_low <= 0 || c.table_ci_high <= 0) return "-";
  return num(c.stock_us_per_token / c.table_us_per_token, "%.3f") + " [" + num(c.stock_ci_low / c.table_ci_high, "%.3f") +
         ", " + num(c.stock_ci_high / c.table_ci_low, "%.3f") + "]" + (c.unmeasured ? " (est.)" : "");
}

std::string join_unique(const std::vector<std::string>& v, const std::string& none) {
  std::vector<std::string> u;
  for (const auto& x : v)
    if (!x.empty() && std::find(u.begin(), u.end(), x) == u.end()) u.push_back(x);
  std::string s;
  for (const auto& x : u) s += (s.empty() ? "" : "; ") + plain(x);
  return s.empty() ? none : s;
}

// What the hooked engine ran for a bench record beyond what the table carries: approved entries of
// `arch` the table cannot express or keeps another value for, and approved path choices.
std::vector<std::string> beyond_table(const std::string& arch, const Profile& p, int lost_shapes) {
  int groups = 0, pipelined = 0, unfused = 0, norms = 0, glus = 0, other = 0, paths = 0;
  for (const auto& e : p.entries) {
    if (e.approval != Approval::Approved || e.key.arch != arch) continue;
    if (launch_is_group(e.key.launch)) ++groups;
    else if (launch_is_pipelined(e.key.launch)) ++pipelined;
    else if (launch_is_unfused(e.key.launch)) ++unfused;
    else if (e.key.launch == Launch::RmsNormQ8) ++norms;
    else if (e.key.launch == Launch::GluQ8) ++glus;
    else if (dropped_reason(e, arch)) ++other;
  }
  for (const auto& c : p.paths) paths += c.approval == Approval::Approved && c.arch == arch && c.path == MatPath::Mmq;
  std::vector<std::string> out;
  auto add = [&](int n, const std::string& what) {
    if (n > 0) out.push_back(std::to_string(n) + " " + what);
  };
  add(groups, "same-input groups");
  add(pipelined, "pipelined launches");
  add(unfused, "unfused gate/up pairs");
  add(norms, "norms writing their GEMVs' q8_1 activations");
  add(glus, "GLUs writing their GEMVs' q8_1 activations");
  add(paths, "mmq path choices");
  add(other, "other entries the table cannot express");
  add(lost_shapes, "shapes whose approved config the table does not keep");
  return out;
}

// The profile's llama-bench record for this arch (temper engine bench), in compare-llama-bench's
// shape, when it describes the profile as it is now and measured nothing the table does not carry;
// otherwise what it measured, said plainly, and no numbers that would pass for the table's.
void emit_bench(std::ostream& o, const std::string& arch, const Profile& p, int lost_shapes) {
  o << "#### llama-bench\n\n";
  if (const BenchRecord* b = current_bench(p, arch)) {
    const std::vector<std::string> beyond = beyond_table(arch, p, lost_shapes);
    if (!beyond.empty()) {
      std::string what;
      for (const auto& x : beyond) what += (what.empty() ? "" : ", ") + x;
      o << "The profile's llama-bench record (" << plain(b->device) << ", " << plain(b->model)
        << ") measured the whole profile in the hooked engine, including " << plain(what)
        << ", which this table does not carry: its numbers are not this table's and are left out. Before "
           "submitting, build llama.cpp with the table and compare against master with llama-bench and "
           "scripts/compare-llama-bench.py.\n\n";
      return;
    }
    std::string report = bench_report_markdown(*b);
    for (size_t at; (at = report.find("*/")) != std::string::npos;) report.replace(at, 2, "* /");  // inside a C comment
    o << report << "\nThese are whole-model numbers of the hooked engine loading this profile, whose approved "
                   "configs this table carries at every shape. Before submitting, build llama.cpp with the table "
                   "and compare against master with llama-bench and scripts/compare-llama-bench.py.\n\n";
    return;
  }
  const bool stale = std::any_of(p.benches.begin(), p.benches.end(), [&](const BenchRecord& b) { return b.arch == arch; });
  o << (stale ? "The profile's llama-bench record for " + plain(arch) + " predates its current approvals: re-run "
                "`temper engine bench` for numbers that describe it.\n\n"
              : std::string("No llama-bench record in the profile for ") + plain(arch) +
                    " (`temper engine bench` adds one); these are per-kernel numbers from Temper's sweep, and a pull "
                    "request should add the llama-bench rows.\n\n");
}

void emit_evidence(std::ostream& o, const GgmlTableArch& a, const Profile& p, const Session* session) {
  std::vector<std::string> devices, drivers, engines, sessions;
  for (const auto& c : a.cells)
    for (const auto& s : c.shapes) {
      devices.push_back(s.device), drivers.push_back(s.driver), engines.push_back(s.engine), sessions.push_back(s.session);
    }
  o << "### " << plain(a.arch) << " (upstream table MMVQ_PARAMETERS_" << a.stock_table << ")\n\n"
    << "- device: " << join_unique(devices, "(not recorded)") << "\n"
    << "- driver: " << join_unique(drivers, "(not recorded in a profile; export from the session to include it)") << "\n"
    << "- stock tables compared against: " << join_unique(engines, a.engine) << " (ggml commit after the dash)\n"
    << "- measured by: Temper " << plain(p.tool_version.empty() ? std::string(TEMPER_VERSION) : p.tool_version)
    << (session ? " (build " + plain(session->build.git_commit) + ", " + plain(session->build.compiler) + ")" : "")
    << ", session(s) " << join_unique(sessions, "(none)") << (p.model.empty() ? "" : ", model " + plain(p.model)) << "\n"
    << "- times: a row sums the medians of every measured shape it reaches (approved or not; * marks the\n"
    << "  approved ones), each weighted by the model's calls per token (µs per token), once with the stock\n"
    << "  configs and once with the table's; net = table − stock, never above 0 (upstream's value stays\n"
    << "  where no approved config is faster over the row). Speedup with its 95 % CI from the summed CI\n"
    << "  bounds; \"(est.)\": the table's config was never timed at some shape, which counts as stock.\n"
    << "  Per-shape costs are µs per launch.\n\n"
    << "| type | ncols | K | stock nwarps×rows | table nwarps×rows | shapes measured (N×K) | stock µs/token | table µs/token | net µs/token | speedup [95 % CI] |\n"
    << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : a.cells) {
    std::string shapes;
    for (const ShapeKey& k : c.reached) {
      const bool approved = std::any_of(c.shapes.begin(), c.shapes.end(), [&](const GgmlTableShape& s) { return s.key.shape() == k; });
      shapes += (shapes.empty() ? "" : ", ") + std::to_string(k.n) + "×" + std::to_string(k.k) + (approved ? "*" : "");
    }
    o << "| " << type_name(c.type) << " | " << c.ncols << " | " << (c.ncols == 1 ? (c.small_k ? "small" : "large") : "any")
      << " | " << config_text(c.stock) << " | " << config_text(c.value) << " | " << (shapes.empty() ? "-" : shapes) << " | "
      << num(c.stock_us_per_token) << " | " << num(c.table_us_per_token) << " | " << signed_us(c.net_us_per_token())
      << " | " << speedup_text(c) << " |\n";
  }
  std::vector<const GgmlTableShape*> lost;
  for (const auto& c : a.cells)
    for (const auto& s : c.shapes)
      if (s.lost()) lost.push_back(&s);
  o << "\nShapes whose approved config one value per (type, ncols) cannot carry: ";
  if (lost.empty()) {
    o << "none.\n";
  } else {
    o << lost.size() << ".\n\n"
      << "| shape | approved | table keeps | approved µs | table's config µs | cost µs per call | cost µs per token |\n"
      << "|---|---|---|---|---|---|---|\n";
    for (const GgmlTableShape* s : lost) {
      o << "| " << type_name(s->key.type) << " " << s->key.n << "×" << s->key.k << " ncols " << s->key.ncols << " | "
        << config_text(s->approved) << " | " << config_text(s->table_config) << " | " << num(s->approved_us) << " | ";
      if (s->table_us) {
        const double cost = *s->table_us - s->approved_us;
        o << num(*s->table_us) << " (" << s->table_us_source << ") | " << num(cost) << " | "
          << (s->calls_per_token > 0 ? num(cost * double(s->calls_per_token)) : std::string("-")) << " |\n";
      } else {
        o << "not measured | up to " << num(s->default_us - s->approved_us) << " (its whole gain) | - |\n";
      }
    }
  }
  o << "\nOther measured shapes whose launch the table changes (no approved entry of their own): ";
  if (a.side_effects.empty()) {
    o << "none.\n";
  } else {
    o << a.side_effects.size() << ".\n\n"
      << "| shape | status | stock | table | stock µs | table's config µs | change µs per call |\n"
      << "|---|---|---|---|---|---|---|\n";
    for (const auto& x : a.side_effects) {
      o << "| " << type_name(x.key.type) << " " << x.key.n << "×" << x.key.k << " ncols " << x.key.ncols << " | "
        << plain(x.status) << " | " << config_text(x.default_config) << " | " << config_text(x.table_config) << " | "
        << num(x.default_us) << " | ";
      if (x.table_us) o << num(*x.table_us) << " | " << (*x.table_us >= x.default_us ? "+" : "") << num(*x.table_us - x.default_us) << " |\n";
      else o << "not measured | ? |\n";
    }
  }
  o << "\nEvery other (type, ncols) keeps upstream's MMVQ_PARAMETERS_" << a.stock_table << " value.\n\n";
  emit_bench(o, a.arch, p, int(lost.size()));
}

}  // namespace

GgmlTable build_ggml_table(const Profile& p, const ExportOptions& o, const Session* session) {
  GgmlTable t;
  t.file.report.format = "ggml-table";
  if (!o.arch.empty() && std::none_of(p.entries.begin(), p.entries.end(), [&](const ProfileEntry& e) {
        return e.approval == Approval::Approved && e.key.arch == o.arch;
      }))
    fail(ErrorKind::BadInput, "profile has no approved entry for arch " + o.arch);
  std::map<std::string, std::vector<const ProfileEntry*>> by_arch;
  for (const auto& e : p.entries) {
    if (auto why = dropped_reason(e, o.arch)) t.file.report.notes.push_back({e.key, e.config, ExportFate::Dropped, *why, {}});
    else by_arch[e.key.arch].push_back(&e);
  }
  for (const auto& [arch, entries] : by_arch) {
    t.arches.push_back(build_arch(arch, entries, measured_shapes(arch, p, session), session, t.file.report.notes));
    for (const GgmlTableCell& c : t.arches.back().cells)
      t.file.report.rows.push_back({arch, c.branch_text(), c.stock, c.value, int(c.reached.size()), c.unmeasured,
                                    c.stock_us_per_token, c.table_us_per_token});
    // Two arch strings that spell the same identifier ("gfx90a:xnack-", "gfx90a_xnack_") get apart.
    for (size_t i = 0; i + 1 < t.arches.size(); ++i)
      if (t.arches[i].suffix == t.arches.back().suffix) t.arches.back().suffix += "_" + std::to_string(t.arches.size());
  }

  std::ostringstream ev;
  ev << "## mmvq launch parameters measured by Temper\n\n";
  if (t.arches.empty()) ev << "No approved entry: the table is upstream's.\n";
  for (const auto& a : t.arches) emit_evidence(ev, a, p, session);
  t.evidence = ev.str();

  std::ostringstream c;
  c << "// Generated by Temper " << TEMPER_VERSION << " from a profile created " << plain(p.created)
    << (p.model.empty() ? "" : " (model " + plain(p.model) + ")") << ". Do not edit; re-export instead.\n"
    << "// llama.cpp's mmvq launch table in upstream's form (ggml/src/ggml-cuda/mmvq.cu: calc_nwarps,\n"
    << "// calc_rows_per_block, should_use_small_k), one set of functions per arch, named by its suffix.\n"
    << "// A launch at ncols_dst = 1 uses the small_k values when should_use_small_k_<arch> is true.\n"
    << "// Needs ggml_type (ggml.h) declared first; C++17, no includes. The evidence for a pull request\n"
    << "// is the markdown comment at the end. docs/llama-cpp.md says how to use both.\n"
    << "#ifndef TEMPER_GGML_TABLE_H\n#define TEMPER_GGML_TABLE_H\n\n"
    << "#if defined(__CUDACC__) || defined(__HIPCC__)\n#define TEMPER_MMVQ_HD __host__ __device__\n#else\n"
    << "#define TEMPER_MMVQ_HD\n#endif\n\n";
  for (const auto& a : t.arches) emit_arch(c, a);
  c << "/*\n" << t.evidence << "*/\n\n#endif  // TEMPER_GGML_TABLE_H\n";
  t.file.content = c.str();
  return t;
}

}  // namespace temper
