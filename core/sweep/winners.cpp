// Winners against the default config, and the session's closing bookkeeping.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "internal.h"
#include "temper/estimate.h"
#include "temper/sweep.h"

namespace temper {

namespace {
// Steps between two configs on the grid's power-of-two axes.
int config_distance(Config a, Config b) {
  const auto log2 = [](int v) { return int(std::bit_width(unsigned(v))) - 1; };
  return std::abs(log2(a.nwarps) - log2(b.nwarps)) + std::abs(log2(a.rows_per_block) - log2(b.rows_per_block));
}
}  // namespace

std::optional<Verdict> detail::group_verdict(std::span<const Result* const> group) {
  // Nothing launched in this group (only configs the plan excluded): no verdict to give.
  if (group.empty() ||
      std::all_of(group.begin(), group.end(), [](const Result* r) { return r->status == ResultStatus::Invalid; }))
    return std::nullopt;
  const Result& first = *group.front();
  Verdict w;
  static_cast<GroupKey&>(w) = first.group();
  const Result* def = nullptr;
  for (const Result* r : group)
    if (r->is_default) def = r;
  if (def) w.default_config = w.config = def->config;
  if (!def || def->status != ResultStatus::Ok) {
    // Without a verified baseline nothing can be said to beat it.
    w.verdict = kVerdictNoDefault;
    return w;
  }
  const SampleStats& d = def->time_us;
  w.default_us = w.best_us = d.median;
  w.default_ci_low = w.best_ci_low = d.ci_low;
  w.default_ci_high = w.best_ci_high = d.ci_high;
  const Result* best = nullptr;
  for (const Result* r : group) {
    if (r == def || r->status != ResultStatus::Ok) continue;
    // Only a CI wholly below the default's counts: overlap is noise.
    if (r->time_us.ci_high < d.ci_low && (!best || r->time_us.median < best->time_us.median)) best = r;
  }
  if (!best) {
    w.verdict = kVerdictDefaultStays;
    return w;
  }
  // Configs whose CI overlaps the fastest one's are tied with it: among those, the smallest step
  // away from the default wins, so near-ties don't flip the winner from run to run.
  const Result* fastest = best;
  for (const Result* r : group) {
    if (r == def || r->status != ResultStatus::Ok || !(r->time_us.ci_high < d.ci_low)) continue;
    if (r->time_us.ci_low > fastest->time_us.ci_high) continue;
    const int dr = config_distance(r->config, def->config), db = config_distance(best->config, def->config);
    if (dr < db || (dr == db && r->time_us.median < best->time_us.median)) best = r;
  }
  const SampleStats& b = best->time_us;
  w.verdict = kVerdictWinner;
  w.config = best->config;
  w.best_us = b.median;
  w.best_ci_low = b.ci_low;
  w.best_ci_high = b.ci_high;
  w.speedup = d.median / b.median;
  // Conservative bounds: the slowest plausible default over the fastest plausible winner, and back.
  w.speedup_low = d.ci_low / b.ci_high;
  w.speedup_high = d.ci_high / b.ci_low;
  return w;
}

void detail::apply_confirmation(Verdict& w, const Confirmation* c) {
  // A re-measure of another candidate (the results changed since) says nothing about this one.
  if (!w.is_winner() || !c || c->config != w.config || c->default_config != w.default_config) return;
  if (c->confirmed) {
    w.confirmed = true;  // speedup and CI stay those of the main results, as the estimate uses them
    return;
  }
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, "default %.2f µs, candidate %.2f µs", c->default_us.median,
                c->candidate_us.median);
  w.note = config_text(w.config) + " not confirmed by an interleaved re-measure (" +
           (c->failure.empty() ? std::string(numbers) : "it could not run: " + c->failure) + ")";
  w.verdict = kVerdictDefaultStays;
  w.config = w.default_config;
  w.best_us = w.default_us;
  w.best_ci_low = w.default_ci_low;
  w.best_ci_high = w.default_ci_high;
  w.speedup = w.speedup_low = w.speedup_high = 1;
}

std::vector<Verdict> select_verdicts(const Session& session) {
  // Group results by (device, shape, ncols), in the order they first appear.
  std::map<GroupKey, size_t> index;
  std::vector<std::vector<const Result*>> groups;
  for (const auto& r : session.results) {
    auto [it, added] = index.try_emplace(r.group(), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(&r);
  }
  std::vector<Verdict> out;
  for (const auto& group : groups) {
    std::optional<Verdict> w = detail::group_verdict(group);
    if (!w) continue;
    detail::apply_confirmation(*w, find_confirmation(session, *w));
    out.push_back(std::move(*w));
  }
  // Devices finish in any order; readers expect device 0's verdicts first.
  std::stable_sort(out.begin(), out.end(), [](const Verdict& a, const Verdict& b) { return a.device < b.device; });
  return out;
}

Session read_session(const std::filesystem::path& path) {
  Session s = load_session(path);
  if (!s.results.empty()) finish_session(s);
  return s;
}

Session read_session(const nlohmann::json& j, const std::string& where) {
  Session s = session_from_json(j, where);
  if (!s.results.empty()) finish_session(s);
  return s;
}

void finish_session(Session& session) {
  // Configs the plan excluded become "invalid" results with the reason, so every reader sees the
  // whole grid (they are never journaled: the plan in the journal's header carries them).
  for (const auto& d : session.devices)
    for (const auto& e : d.plan.excluded) {
      if (find_result(session, group_key(d.info.index, e, e.ncols), e.config)) continue;
      Result r;
      static_cast<GroupKey&>(r) = group_key(d.info.index, e, e.ncols);
      r.config = e.config;
      r.status = ResultStatus::Invalid;
      r.failure = e.reason;
      r.is_default = e.is_default;
      r.is_small_k = e.is_small_k;
      session.results.push_back(std::move(r));
    }
  session.verdicts = select_verdicts(session);
  session.estimates = estimate_decode(session);
}

}  // namespace temper
