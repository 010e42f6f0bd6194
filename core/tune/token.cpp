// Tune's token step: the replay's choices per launch family, confirmed or changed by whole tokens.
#include "temper/token.h"

#include <algorithm>
#include <map>
#include <set>

#include "temper/crossover.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/session.h"
#include "temper/stats.h"

namespace temper::tune {
using nlohmann::json;

namespace {

// The coordinate a launch kind belongs to: its family, whatever form (unfused, pipelined) it runs in.
std::string family(Launch l) {
  switch (l) {
    case Launch::MulMat:
    case Launch::MulMatPipelined: return "mul_mat";
    case Launch::MulMatGlu:
    case Launch::MulMatGluUnfused:
    case Launch::MulMatGluPipelined: return "mul_mat_glu";
    case Launch::MulMatId:
    case Launch::MulMatIdPipelined: return "mul_mat_id";
    case Launch::MulMatIdGlu:
    case Launch::MulMatIdGluUnfused:
    case Launch::MulMatIdGluPipelined: return "mul_mat_id_glu";
    case Launch::MulMatGroup: return "groups";
    case Launch::RmsNormQ8: return std::string(kNormKind);
    case Launch::GluQ8: return std::string(kGluKind);
  }
  return "?";
}

// The replay's choices: approved one-column entries, and those an earlier token step took back.
bool in_scope(const ProfileEntry& e, const std::string& arch) {
  return e.key.arch == arch && e.key.ncols == 1 && (e.approval == Approval::Approved || token_rejected(e));
}

// Every round's samples as one: their median and its CI (all zero without a sample).
SampleStats pooled_stats(const std::vector<std::vector<double>>& rounds) {
  std::vector<double> all;
  for (const auto& r : rounds) all.insert(all.end(), r.begin(), r.end());
  return all.empty() ? SampleStats{} : summarize(all);
}

double median_of(const std::vector<std::vector<double>>& rounds) { return pooled_stats(rounds).median; }

// A gate/up launch of the model, fused or over experts: the norm before it and the GLU in it produce activations.
bool is_gate_up(const ShapeKey& s) { return fused_kind(s.launch) == Launch::MulMatGlu || fused_kind(s.launch) == Launch::MulMatIdGlu; }

// The provenance of an entry a structure coordinate `c` (off, on) puts in: µs per token off against on
// once measured (before that, the probe's arm, a placeholder of 1); device and engine from `like`.
Provenance token_provenance(const TokenCoordinate& c, const std::string& arch, const ProfileEntry* like) {
  Provenance v;
  v.session_id = "token step";
  v.device_arch = arch;
  if (like && like->provenance) {
    v.device_name = like->provenance->device_name;
    v.engine = like->provenance->engine;
    v.kernel = like->provenance->kernel;
  }
  v.default_us = v.default_ci_low = v.default_ci_high = v.tuned_us = v.tuned_ci_low = v.tuned_ci_high = 1;
  if (c.samples.size() == 2 && !c.samples[0].empty() && !c.samples[1].empty()) {
    const SampleStats off = pooled_stats(c.samples[0]), on = pooled_stats(c.samples[1]);
    v.default_us = off.median, v.default_ci_low = std::min(off.ci_low, off.median), v.default_ci_high = std::max(off.ci_high, off.median);
    v.tuned_us = on.median, v.tuned_ci_low = std::min(on.ci_low, on.median), v.tuned_ci_high = std::max(on.ci_high, on.median);
    v.speedup = c.speedup, v.speedup_low = std::min(c.low, c.speedup), v.speedup_high = std::max(c.high, c.speedup);
  }
  return v;
}

// The approved entry of `key` a structure coordinate `c` puts in: it switches the structure on at
// `config` (stock has none: {0, 0}), noted kTokenNote + c.why, with token_provenance(c, arch, like).
ProfileEntry token_entry(const ProfileKey& key, Config config, const TokenCoordinate& c, const std::string& arch, const ProfileEntry* like) {
  ProfileEntry e;
  e.key = key;
  e.config = config;
  e.default_config = {0, 0};
  e.approval = Approval::Approved;
  e.decided_at = utc_now_iso8601();
  e.note = std::string(kTokenNote) + (c.why.empty() ? "measured by the token" : c.why);
  e.provenance = token_provenance(c, arch, like);
  return e;
}

}  // namespace

bool token_rejected(const ProfileEntry& e) { return e.approval == Approval::Rejected && e.note.rfind(kTokenNote, 0) == 0; }
bool token_added(const ProfileEntry& e) { return e.approval == Approval::Approved && e.note.rfind(kTokenNote, 0) == 0; }

bool of_model(const ProfileEntry& e, const std::vector<ShapeKey>& shapes) {
  if (shapes.empty()) return true;
  const auto has = [&](auto&& match) { return std::any_of(shapes.begin(), shapes.end(), match); };
  switch (e.key.launch) {
    case Launch::RmsNormQ8: return has([&](const ShapeKey& s) { return is_gate_up(s) && s.k == e.key.k; });
    case Launch::GluQ8: return has([&](const ShapeKey& s) { return is_gate_up(s) && s.n == e.key.k; });
    case Launch::MulMatGroup:
      return !e.key.members.empty() && std::all_of(e.key.members.begin(), e.key.members.end(), [&](const GroupMember& m) {
        return has([&](const ShapeKey& s) { return s.type == m.type && s.n == m.n && s.k == e.key.k; });
      });
    default: {
      ShapeKey s = e.key.shape();
      s.launch = fused_kind(unpipelined_kind(s.launch));
      return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
    }
  }
}

Profile without_token(Profile p, const std::vector<ShapeKey>& shapes) {
  std::set<std::string> arches;
  for (const ProfileEntry& e : p.entries)
    if ((token_added(e) || token_rejected(e)) && of_model(e, shapes)) arches.insert(e.key.arch);
  std::erase_if(p.entries, [&](const ProfileEntry& e) { return token_added(e) && of_model(e, shapes); });
  for (ProfileEntry& e : p.entries)
    if (token_rejected(e) && of_model(e, shapes)) e.approval = Approval::Approved, e.note.clear();
  for (const std::string& arch : arches) align_pipelined(p, arch);
  return p;
}

namespace {

// The fused launch at its best config that stands in for `pair` (an unfused gate/up), if there is one.
const ProfileEntry* fused_alternative(const ProfileEntry& pair, const std::vector<ProfileEntry>& alternatives) {
  if (!launch_is_unfused(pair.key.launch)) return nullptr;
  ProfileKey fused = pair.key;
  fused.launch = fused_kind(pair.key.launch);
  for (const ProfileEntry& a : alternatives)
    if (a.key == fused) return &a;
  return nullptr;
}

}  // namespace

std::vector<TokenCoordinate> token_coordinates(const Profile& p, const std::string& arch, int max, const std::vector<ShapeKey>& shapes,
                                               const std::vector<ProfileEntry>& fused) {
  // The launch an entry tunes, as the plan lists it: the fused gate/up for its unfused pair.
  const auto planned = [&](const ProfileEntry& e) {
    if (shapes.empty() || launch_is_group(e.key.launch)) return true;
    ShapeKey s = e.key.shape();
    if (launch_is_unfused(s.launch)) s.launch = fused_kind(s.launch);
    return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
  };
  std::map<std::string, TokenCoordinate> by_kind;
  std::map<std::string, bool> has_fused;
  for (const ProfileEntry& e : p.entries) {
    if (!in_scope(e, arch) || token_added(e) || launch_is_pipelined(e.key.launch) || !planned(e)) continue;
    TokenCoordinate& c = by_kind[family(e.key.launch)];
    c.kind = family(e.key.launch);
    ++c.entries;
    if (fused_alternative(e, fused)) has_fused[c.kind] = true;
    // Groups are whole-token entries: their provenance is not per launch and weighs nothing here.
    if (e.provenance && !launch_is_group(e.key.launch)) c.weight_us += double(e.provenance->calls_per_token) * e.provenance->default_us;
  }
  std::vector<TokenCoordinate> out;
  for (auto& [kind, c] : by_kind) {
    c.options = {"tuned", kind == "groups" ? "off" : "default"};
    if (has_fused[kind]) c.options.push_back("fused");
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const TokenCoordinate& a, const TokenCoordinate& b) { return a.weight_us > b.weight_us; });
  if (max >= 0 && int(out.size()) > max) out.resize(size_t(max));
  return out;
}

Profile with_token_option(Profile p, const std::string& arch, const std::string& kind, const std::string& option,
                          const std::string& why, const std::vector<ProfileEntry>& fused, const std::vector<ShapeKey>& shapes) {
  const bool tuned = option == "tuned", as_fused = option == "fused";
  if (!tuned && !as_fused && option != (kind == "groups" ? "off" : "default"))
    fail(ErrorKind::BadInput, "token step: no option '" + option + "' for " + kind);
  if (as_fused && (kind != "mul_mat_glu" && kind != "mul_mat_id_glu"))
    fail(ErrorKind::BadInput, "token step: no option 'fused' for " + kind);
  // Every option starts from the replay's choices: what a token step added before goes.
  const auto ours = [&](const ProfileEntry& e) { return in_scope(e, arch) && family(e.key.launch) == kind && of_model(e, shapes); };
  std::erase_if(p.entries, [&](const ProfileEntry& e) { return ours(e) && token_added(e); });
  std::vector<ProfileEntry> added;
  for (ProfileEntry& e : p.entries) {
    if (!ours(e) || launch_is_pipelined(e.key.launch)) continue;
    const ProfileEntry* alternative = as_fused ? fused_alternative(e, fused) : nullptr;
    if ((tuned || (as_fused && !alternative)) && token_rejected(e)) e.approval = Approval::Approved, e.note.clear();
    if (!tuned && (!as_fused || alternative)) e.approval = Approval::Rejected, e.note = std::string(kTokenNote) + why;
    if (alternative) {
      added.push_back(*alternative);
      added.back().approval = Approval::Approved;
      added.back().note = std::string(kTokenNote) + why;
    }
  }
  if (!added.empty()) {
    for (ProfileEntry& a : added) {
      std::erase_if(p.entries, [&](const ProfileEntry& e) { return e.key == a.key; });
      p.entries.push_back(std::move(a));
    }
    std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
  }
  align_pipelined(p, arch, kind);
  return p;
}

void add_producer_coordinates(std::vector<TokenCoordinate>& coordinates, const std::vector<ShapeKey>& shapes,
                              const std::vector<int>& ncols) {
  const auto gate_up = std::find_if(shapes.begin(), shapes.end(), is_gate_up);
  if (gate_up == shapes.end()) return;
  for (const auto& [kind, k] : {std::pair{kNormKind, gate_up->k}, std::pair{kGluKind, gate_up->n}}) {
    if (k % 32 != 0) continue;
    TokenCoordinate c;
    c.kind = std::string(kind);
    c.options = {"off", "on"};
    c.norm_k = k;
    if (kind == kNormKind)
      for (int w : ncols)
        if (w >= 2 && w <= 8 && std::find(c.widths.begin(), c.widths.end(), w) == c.widths.end()) c.widths.push_back(w);
    coordinates.push_back(std::move(c));
  }
}

bool glu_applies(const Profile& p, const std::string& arch, const TokenCoordinate& c, const std::vector<ShapeKey>& shapes) {
  if (std::any_of(shapes.begin(), shapes.end(), [&](const ShapeKey& s) { return s.launch == Launch::MulMatIdGlu && s.n == c.norm_k; }))
    return true;
  return std::any_of(p.entries.begin(), p.entries.end(), [&](const ProfileEntry& e) {
    return e.key.arch == arch && e.key.ncols == 1 && launch_is_unfused(e.key.launch) && e.key.n == c.norm_k &&
           e.approval == Approval::Approved;
  });
}

Profile with_producer_option(Profile p, const std::string& arch, const TokenCoordinate& c, size_t option) {
  if (!is_producer_kind(c.kind) || option >= c.options.size() || c.norm_k <= 0)
    fail(ErrorKind::BadInput, "token step: no producer option " + std::to_string(option) + " for " + c.kind);
  const Launch launch = c.kind == kGluKind ? Launch::GluQ8 : Launch::RmsNormQ8;
  const auto is_own = [&](const ProfileEntry& e) { return e.key.arch == arch && e.key.launch == launch && e.key.k == c.norm_k && token_added(e); };
  std::erase_if(p.entries, is_own);
  if (c.options[option] != "on") return p;
  const auto other = std::find_if(p.entries.begin(), p.entries.end(), [&](const ProfileEntry& x) { return in_scope(x, arch); });
  const ProfileEntry* like = other != p.entries.end() ? &*other : nullptr;
  ProfileKey key(arch, ShapeKey{GgmlType::F32, 1, c.norm_k, launch}, 1, like ? like->key.device : ProfileDevice{});
  const ProfileEntry e = token_entry(key, {0, 0}, c, arch, like);  // no launch config: the entry switches the structure on
  for (int w : c.widths) {
    ProfileEntry at = e;
    at.key.ncols = w;
    if (w != 1) at.note += " (measured at one column; at " + std::to_string(w) + " it removes the same launches, the bench's pp rows measure it)";
    p.entries.push_back(std::move(at));
  }
  std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
  return p;
}

void add_pair_group_coordinate(std::vector<TokenCoordinate>& coordinates, const std::vector<ShapeKey>& shapes) {
  const auto gate_up = std::find_if(shapes.begin(), shapes.end(), [](const ShapeKey& s) { return fused_kind(s.launch) == Launch::MulMatGlu; });
  if (gate_up == shapes.end()) return;
  TokenCoordinate c;
  c.kind = std::string(kPairGroupKind);
  c.options = {"off", "on"};
  c.norm_k = gate_up->n;
  coordinates.push_back(std::move(c));
}

const ProfileEntry* unfused_pair(const Profile& p, const std::string& arch, int n) {
  for (const ProfileEntry& e : p.entries)
    if (e.key.arch == arch && e.key.ncols == 1 && e.key.launch == Launch::MulMatGluUnfused && e.key.n == n && e.approval == Approval::Approved)
      return &e;
  return nullptr;
}

Profile with_pair_group_option(Profile p, const std::string& arch, const TokenCoordinate& c, size_t option) {
  if (c.kind != kPairGroupKind || option >= c.options.size())
    fail(ErrorKind::BadInput, "token step: no pair-group option " + std::to_string(option) + " for " + c.kind);
  const auto is_own = [&](const ProfileEntry& e) {
    return e.key.arch == arch && launch_is_group(e.key.launch) && e.key.members.size() == 2 && e.key.members[0] == e.key.members[1] &&
           e.key.members[0].n == c.norm_k && token_added(e);
  };
  std::erase_if(p.entries, is_own);
  const ProfileEntry* pair = unfused_pair(p, arch, c.norm_k);
  if (c.options[option] != "on" || !pair) return p;
  // The group grid's config nearest the pair's (nwarps 2|4|8, rows 1|2|4).
  const int w = pair->config.nwarps <= 2 ? 2 : pair->config.nwarps <= 4 ? 4 : 8;
  const int r = pair->config.rows_per_block <= 1 ? 1 : pair->config.rows_per_block <= 2 ? 2 : 4;
  const GroupMember m{pair->key.type, pair->key.n};
  ProfileEntry e = token_entry(group_profile_key(arch, {m, m}, pair->key.k, 1, pair->key.device), {w, r}, c, arch, pair);
  e.provenance->calls_per_token = pair->provenance ? pair->provenance->calls_per_token : 0;
  p.entries.push_back(std::move(e));
  std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
  return p;
}

void align_pipelined(Profile& p, const std::string& arch, const std::string& kind) {
  for (ProfileEntry& e : p.entries) {
    if (!in_scope(e, arch) || (!kind.empty() && family(e.key.launch) != kind) || !launch_is_pipelined(e.key.launch)) continue;
    ProfileKey plain_key = e.key;
    plain_key.launch = unpipelined_kind(e.key.launch);
    const ProfileEntry* plain = find_entry(p, plain_key);
    if (plain && plain->approval == Approval::Approved) e.config = plain->config, e.is_small_k = plain->is_small_k;
    else if (e.default_config.nwarps > 0) e.config = e.default_config, e.is_small_k = false;
  }
}

void decide_coordinate(TokenCoordinate& c, double min_gain) {
  if (c.samples.size() != c.options.size() || c.samples.empty())
    fail(ErrorKind::BadInput, "token step: " + c.kind + " has samples for " + std::to_string(c.samples.size()) + " of " +
                                  std::to_string(c.options.size()) + " options");
  for (const auto& rounds : c.samples)
    if (rounds.empty()) fail(ErrorKind::BadInput, "token step: " + c.kind + " has an option without samples");
  c.chosen = 0;
  c.speedup = c.low = c.high = 1;
  int best = -1;
  RatioCi best_ci;
  for (size_t i = 1; i < c.options.size(); ++i) {
    // µs per token: tuned / option is the option's speedup, round by round (the arms of a round ran side
    // by side; the machine's level drifts between rounds).
    const RatioCi ci = bootstrap_round_ratio(c.samples[i], c.samples[0]);
    if (best < 0 || ci.ratio > best_ci.ratio) best = int(i), best_ci = ci;
  }
  if (best < 0) {
    c.why = "nothing to compare";
    return;
  }
  c.speedup = best_ci.ratio, c.low = best_ci.low, c.high = best_ci.high;
  const std::string ci = gain_text(c.speedup) + " [" + gain_text(c.low) + ", " + gain_text(c.high) + "] per token";
  const std::string other = c.options[size_t(best)];
  const bool norm = is_structure_kind(c.kind);
  if (c.low >= 1 + min_gain) {
    c.chosen = best;
    c.why = other + " " + ci + (norm ? ": fewer launches per token" : ": the replay's choice loses in the engine's graph");
  } else {
    c.why = c.options[0] + " kept (" + other + " " + ci + ")";
  }
}

void summarize_prediction(TokenPrediction& p) {
  if (p.stock.empty() || p.profile.empty()) fail(ErrorKind::BadInput, "token prediction: an arm without samples");
  p.stock_us = median_of(p.stock);
  p.profile_us = median_of(p.profile);
  const RatioCi ci = bootstrap_median_ratio(p.profile, p.stock);  // stock µs / profile µs
  p.speedup = ci.ratio, p.low = ci.low, p.high = ci.high;
}

json to_json(const TokenCoordinate& c) {
  return {{"kind", c.kind},     {"entries", c.entries}, {"weight_us", c.weight_us}, {"options", c.options},
          {"samples", c.samples}, {"chosen", c.chosen},   {"speedup", c.speedup},     {"low", c.low},
          {"high", c.high},     {"why", c.why},         {"norm_k", c.norm_k},       {"widths", c.widths}};
}

TokenCoordinate token_coordinate_from_json(const json& j) {
  TokenCoordinate c;
  try {
    c.kind = j.at("kind").get<std::string>();
    c.entries = j.at("entries").get<int>();
    c.weight_us = j.at("weight_us").get<double>();
    c.options = j.at("options").get<std::vector<std::string>>();
    c.samples = j.at("samples").get<std::vector<std::vector<std::vector<double>>>>();
    c.chosen = j.at("chosen").get<int>();
    c.speedup = j.at("speedup").get<double>();
    c.low = j.at("low").get<double>();
    c.high = j.at("high").get<double>();
    c.why = j.at("why").get<std::string>();
    c.norm_k = j.value("norm_k", 0);
    c.widths = j.value("widths", std::vector<int>{1});
  } catch (const json::exception& e) {
    fail(ErrorKind::BadInput, std::string("tune journal: a token coordinate that does not read: ") + e.what());
  }
  for (int w : c.widths)
    if (w < 1 || w > 8) fail(ErrorKind::BadInput, "tune journal: token coordinate " + c.kind + " has batch width " + std::to_string(w) + " (expected 1..8)");
  if (c.options.empty() || c.chosen < 0 || c.chosen >= int(c.options.size()))
    fail(ErrorKind::BadInput, "tune journal: token coordinate " + c.kind + " chose option " + std::to_string(c.chosen) + " of " +
                                  std::to_string(c.options.size()));
  return c;
}

json to_json(const TokenPrediction& p) {
  return {{"tokens", p.tokens},         {"stock", p.stock},
          {"profile", p.profile},       {"stock_us", p.stock_us},
          {"profile_us", p.profile_us}, {"speedup", p.speedup},
          {"low", p.low},               {"high", p.high},
          {"greedy_steps", p.greedy_steps}, {"greedy_identical", p.greedy_identical},
          {"finite", p.finite},         {"bench_speedup", p.bench_speedup}};
}

TokenPrediction token_prediction_from_json(const json& j) {
  TokenPrediction p;
  try {
    p.tokens = j.at("tokens").get<int>();
    p.stock = j.at("stock").get<std::vector<std::vector<double>>>();
    p.profile = j.at("profile").get<std::vector<std::vector<double>>>();
    p.greedy_steps = j.at("greedy_steps").get<int>();
    p.greedy_identical = j.at("greedy_identical").get<bool>();
    p.finite = j.at("finite").get<bool>();
    p.bench_speedup = j.value("bench_speedup", 0.0);
  } catch (const json::exception& e) {
    fail(ErrorKind::BadInput, std::string("tune journal: a token prediction that does not read: ") + e.what());
  }
  summarize_prediction(p);
  return p;
}

std::string token_text(const std::vector<TokenCoordinate>& coordinates, const TokenPrediction* prediction) {
  std::string s;
  int changed = 0;
  for (const TokenCoordinate& c : coordinates) changed += c.chosen != 0;
  s = std::to_string(coordinates.size()) + " launch famil" + (coordinates.size() == 1 ? "y" : "ies") + " measured by the token, " +
      std::to_string(changed) + " changed";
  for (const TokenCoordinate& c : coordinates)
    s += "; " + c.kind + ": " + c.why;
  if (prediction)
    s += "; predicted tg" + std::to_string(prediction->tokens) + " " + format_number("x%.3f", prediction->speedup) + " [" +
         format_number("%.3f", prediction->low) + ", " + format_number("%.3f", prediction->high) + "]";
  return s;
}

}  // namespace temper::tune
