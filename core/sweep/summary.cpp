// What a session says, for people (`temper sweep`'s end, `temper session`) and for scripts (--json).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "temper/format.h"
#include "temper/estimate.h"
#include "temper/sweep.h"

namespace temper {
namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

std::string pad(std::string s, size_t width) {
  // Width in characters, not bytes: the table holds "±" and "×".
  size_t chars = 0;
  for (unsigned char ch : s) chars += (ch & 0xC0) != 0x80;
  if (chars < width) s.append(width - chars, ' ');
  return s;
}

// The shape column: wide enough for the longest shape ("q4_K 768x2048 gate+up experts 8/128").
int shape_column(const std::vector<Shape>& shapes) {
  int width = 22;
  for (const auto& sh : shapes) width = std::max(width, int(shape_text(sh).size()) + 2);
  return width;
}

const Result* best_result(const Session& s, const Verdict& w) {
  return find_result(s, w, w.config);
}

// The verdict column: whether a winner survived its interleaved re-measure (or had none).
std::string verdict_cell(const Verdict& w) {
  if (w.is_winner()) return w.confirmed ? "winner, confirmed" : "winner, not re-measured";
  if (!w.note.empty()) return w.verdict + " (not confirmed)";
  return w.verdict;
}

}  // namespace

std::map<std::string, int> status_counts(const Session& s) {
  std::map<std::string, int> out;
  for (auto st : {ResultStatus::Ok, ResultStatus::Failed, ResultStatus::Invalid, ResultStatus::Error})
    out[std::string(result_status_name(st))] = 0;
  for (const auto& r : s.results) ++out[std::string(result_status_name(r.status))];
  return out;
}

std::string format_summary(const Session& s) {
  std::ostringstream o;
  o << "session " << s.id << " (" << s.status << "), " << s.created;
  if (!s.finished.empty()) o << " to " << s.finished;
  o << "\nmodel: " << s.model.file_name;
  if (!s.model.architecture.empty()) o << " (" << s.model.architecture << ")";
  o << ", " << s.shapes.size() << " shapes; engine " << s.grid.engine << (s.grid.quick ? ", quick grid" : "") << "\n";
  o << "kernel: " << describe(s.kernel_source) << "\n";
  for (const auto& d : s.devices) {
    o << "device " << d.info.index << ": " << d.info.name << " (" << d.info.arch << ", " << d.info.api
      << "), spec " << d.spec_id << ", copy bandwidth " << fmt("%.0f", d.copy_bandwidth_gbs) << " GB/s, defaults table "
      << d.plan.defaults_table << "\n";
    if (!d.error.empty()) o << "  stopped early: " << d.error << "\n";
    for (const auto& sk : d.plan.skipped_shapes)
      o << "  skipped " << shape_text(sk) << ": " << sk.reason << "\n";
    for (const auto& note : d.plan.notes) o << "  note: " << note << "\n";
  }
  const auto counts = status_counts(s);
  o << "results: " << counts.at("ok") << " ok, " << counts.at("failed") << " failed verification, "
    << counts.at("invalid") << " invalid, " << counts.at("error") << " errors\n";
  for (const auto& r : s.results)
    if (r.status == ResultStatus::Failed)
      o << "  FAILED " << group_text(r, s.devices.size() > 1) << " config "
        << config_text(r.config) << ": " << r.failure << "\n";

  if (!s.verdicts.empty()) {
    o << "\n";
    const bool multi = s.devices.size() > 1;
    const int shape_width = shape_column(s.shapes);
    o << (multi ? pad("dev", 4) : "") << pad("shape (type NxK)", shape_width) << pad("ncols", 6) << pad("default µs (cfg)", 20)
      << pad("best µs ± CI (cfg)", 26) << pad("speedup [CI]", 22) << pad("% copy BW", 10) << "verdict\n";
    for (const auto& w : s.verdicts) {
      const SessionDevice* d = find_device(s, w.device);
      const Result* best = best_result(s, w);
      std::string bw = "-";
      if (d && best && best->status == ResultStatus::Ok && d->copy_bandwidth_gbs > 0)
        bw = fmt("%.0f%%", 100.0 * best->gbs / d->copy_bandwidth_gbs);
      const bool have_default = w.verdict != kVerdictNoDefault;
      const double half = std::max(w.best_us - w.best_ci_low, w.best_ci_high - w.best_us);
      o << (multi ? pad(std::to_string(w.device), 4) : "")
        << pad(shape_text(w), shape_width)
        << pad(std::to_string(w.ncols), 6)
        << pad(have_default ? fmt("%.2f", w.default_us) + " (" + config_text(w.default_config) + ")" : "-", 20)
        << pad(have_default ? fmt("%.2f", w.best_us) + " ± " + fmt("%.2f", half) + " (" + config_text(w.config) + ")"
                            : "-",
               26)
        << pad(w.is_winner() ? fmt("%.3f", w.speedup) + " [" + fmt("%.3f", w.speedup_low) + ", " +
                                   fmt("%.3f", w.speedup_high) + "]"
                             : "1",
               22)
        << pad(bw, 10) << verdict_cell(w) << "\n";
    }
    for (const auto& w : s.verdicts)
      if (!w.note.empty())
        o << "  " << (multi ? "device " + std::to_string(w.device) + " " : "") << shape_text(w) << " ncols " << w.ncols
          << ": " << w.note << "\n";
    // Each fused gate/up against its unfused pair (the hook's alternative), both at their best: a
    // profile runs the faster.
    for (const auto& w : s.verdicts) {
      if (!launch_is_fused(w.launch) || launch_is_unfused(w.launch) || w.ncols != 1) continue;
      const Verdict* pair = find_verdict(s, group_key(w.device, with_launch(w, unfused_kind(w.launch)), 1));
      if (!pair || pair->verdict == kVerdictNoDefault) continue;
      const double fused = w.is_winner() ? w.best_us : w.default_us, unfused = pair->best_us;
      o << "  " << (multi ? "device " + std::to_string(w.device) + " " : "") << shape_text(w) << ": fused at best "
        << fmt("%.2f", fused) << " µs (" << config_text(w.config) << "), unfused pair at best " << fmt("%.2f", unfused)
        << " µs (" << config_text(pair->config) << "): "
        << (unfused_verdict(s, *pair) ? "the pair, faster by " + fmt("%.1f%%", 100 * (fused / unfused - 1)) + ", goes into a profile"
                                      : std::string("the fused launch stays"))
        << "\n";
    }
  }
  for (const auto& e : s.estimates) {
    o << "\n" << e.label << (s.devices.size() > 1 ? " (device " + std::to_string(e.device) + ")" : "") << ":\n";
    if (e.shapes_measured == 0) {
      o << "  no shape has a verified default at ncols 1 yet\n";
      continue;
    }
    o << "  GEMV time per token " << fmt("%.1f", e.default_us_per_token) << " µs (default) -> "
      << fmt("%.1f", e.tuned_us_per_token) << " µs (all winners)\n";
    o << "  tokens/s " << fmt("%.1f", e.default_tokens_per_s) << " -> " << fmt("%.1f", e.tuned_tokens_per_s) << " ("
      << fmt("%+.1f%%", 100.0 * (e.tuned_tokens_per_s / e.default_tokens_per_s - 1.0)) << ")";
    if (e.ceiling_tokens_per_s > 0)
      o << "; bandwidth ceiling " << fmt("%.1f", e.ceiling_tokens_per_s) << " tokens/s (" << fmt("%.0f", e.bandwidth_gbs)
        << " GB/s over " << fmt("%.1f", e.bytes_per_token / 1e6) << " MB per token)";
    o << "\n";
    if (e.shapes_measured < e.shapes_total)
      o << "  only " << e.shapes_measured << " of " << e.shapes_total << " shapes measured: the sums under-count\n";
  }
  return o.str();
}

nlohmann::json summary_json(const Session& s) {
  const nlohmann::json full = to_json(s);
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : full["devices"]) {
    nlohmann::json dev = d;
    dev.erase("plan");  // the plan is in the session file
    devices.push_back(dev);
  }
  return {{"id", s.id},
          {"status", s.status},
          {"created", s.created},
          {"finished", s.finished},
          {"model", full["model"]},
          {"kernel_source", full["kernel_source"]},
          {"devices", devices},
          {"result_counts", status_counts(s)},
          {"winners", full["winners"]},
          {"confirmations", full["confirmations"]},
          {"estimates", full["estimates"]}};
}

namespace {
std::string verdict_text(const Verdict& w) {
  return w.is_winner() ? "winner " + config_text(w.config) : w.verdict;
}
}  // namespace

std::string model_mismatch(const Session& a, const Session& b) {
  const ModelIdentity &ma = a.model, &mb = b.model;
  const auto name = [](const ModelIdentity& m) {
    return m.file_name + (m.header_hash.empty() ? std::string() : " (" + m.header_hash + ")");
  };
  if (ma.synthetic() != mb.synthetic() || (!ma.header_hash.empty() && !mb.header_hash.empty() && ma.header_hash != mb.header_hash) ||
      ((ma.header_hash.empty() || mb.header_hash.empty()) && (ma.file_name != mb.file_name || ma.size_bytes != mb.size_bytes)))
    return "different models: " + name(ma) + " vs " + name(mb);
  // Synthetic shapes have no file to tell them apart: they must share a shape at least.
  if (ma.synthetic()) {
    for (const ShapeKey& x : a.shapes)
      for (const ShapeKey& y : b.shapes)
        if (x == y) return {};
    return "no shape in common";
  }
  return {};
}

SessionComparison compare_sessions(const Session& a, const Session& b) {
  SessionComparison c;
  c.kernel_a = kernel_label(a.kernel_source);
  c.kernel_b = kernel_label(b.kernel_source);
  const bool multi = a.devices.size() > 1;
  for (const auto& w : a.verdicts) c.confirmed_a += w.confirmed;
  for (const auto& w : b.verdicts) c.confirmed_b += w.confirmed;
  for (const auto& wa : a.verdicts) {
    const Verdict* wb = find_verdict(b, wa);
    if (!wb) continue;
    ++c.winners_compared;
    auto side = [](const Verdict& w) {
      return SessionComparison::Side{w.verdict, w.default_config, w.config, w.default_us, w.best_us, w.confirmed};
    };
    SessionComparison::Row row;
    static_cast<GroupKey&>(row) = wa;
    row.a = side(wa);
    row.b = side(*wb);
    row.agree = wa.verdict == wb->verdict && wa.config == wb->config;
    c.rows.push_back(row);
    if (row.agree) {
      ++c.winners_agree;
    } else {
      c.disagreements.push_back(group_text(wa, multi) + ": " + verdict_text(wa) +
                                " vs " + verdict_text(*wb));
    }
  }
  std::vector<std::pair<double, const Result*>> spreads;
  for (const auto& ra : a.results) {
    if (ra.status != ResultStatus::Ok) continue;
    const Result* rb = find_result(b, ra, ra.config);
    if (!rb || rb->status != ResultStatus::Ok) continue;
    const double mean = (ra.time_us.median + rb->time_us.median) / 2;
    if (mean > 0) spreads.push_back({std::abs(ra.time_us.median - rb->time_us.median) / mean, &ra});
  }
  c.estimates_a = a.estimates;
  c.estimates_b = b.estimates;
  c.medians_compared = int(spreads.size());
  if (!spreads.empty()) {
    std::sort(spreads.begin(), spreads.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<double> values;
    for (const auto& sp : spreads) values.push_back(sp.first);
    c.spread_median = percentile(values, 0.5);
    c.spread_p90 = percentile(values, 0.9);
    c.spread_max = values.back();
    const Result& r = *spreads.back().second;
    c.spread_max_at = group_text(r, multi) + " config " + config_text(r.config);
  }
  return c;
}

std::string format_comparison(const SessionComparison& c) {
  std::ostringstream o;
  if (c.kernel_a != c.kernel_b)
    o << "kernels differ: the first timed " << c.kernel_a << ", the second " << c.kernel_b
      << " (agreement and spreads compare the kernels, not two runs)\n";
  o << "winners: " << c.winners_agree << " of " << c.winners_compared << " agree";
  if (c.winners_compared > 0) o << " (" << fmt("%.0f%%", 100.0 * c.winners_agree / c.winners_compared) << ")";
  o << "\n";
  for (const auto& d : c.disagreements) o << "  differs: " << d << "\n";
  if (c.confirmed_a + c.confirmed_b > 0)
    o << "confirmed winners (interleaved re-measure): " << c.confirmed_a << " in the first, " << c.confirmed_b
      << " in the second\n";
  o << "medians: " << c.medians_compared << " results in both; |a - b| / mean: median "
    << fmt("%.2f%%", 100 * c.spread_median) << ", p90 " << fmt("%.2f%%", 100 * c.spread_p90) << ", max "
    << fmt("%.2f%%", 100 * c.spread_max);
  if (!c.spread_max_at.empty()) o << " (" << c.spread_max_at << ")";
  o << "\n";
  if (!c.rows.empty()) {
    const bool multi = std::any_of(c.rows.begin(), c.rows.end(), [](const auto& r) { return r.device != 0; });
    auto cell = [](double us, Config cfg) { return fmt("%.2f", us) + " (" + config_text(cfg) + ")"; };
    int shape_width = 22;
    for (const auto& r : c.rows) shape_width = std::max(shape_width, int(shape_text(r).size()) + 2);
    o << "\n" << (multi ? pad("dev", 4) : "") << pad("shape (type NxK)", shape_width) << pad("ncols", 6)
      << pad("first: default µs", 20) << pad("best µs", 16) << pad("second: default µs", 20) << pad("best µs", 16)
      << "winners agree\n";
    for (const auto& r : c.rows)
      o << (multi ? pad(std::to_string(r.device), 4) : "") << pad(shape_text(r), shape_width) << pad(std::to_string(r.ncols), 6)
        << pad(cell(r.a.default_us, r.a.default_config), 20) << pad(cell(r.a.best_us, r.a.config), 16)
        << pad(cell(r.b.default_us, r.b.default_config), 20) << pad(cell(r.b.best_us, r.b.config), 16)
        << (r.agree ? "yes" : "no") << "\n";
  }
  for (const auto* side : {&c.estimates_a, &c.estimates_b})
    for (const Estimate& e : *side) {
      if (e.shapes_measured == 0) continue;
      o << (side == &c.estimates_a ? "first" : "second") << " (" << (side == &c.estimates_a ? c.kernel_a : c.kernel_b)
        << (e.device != 0 ? ", device " + std::to_string(e.device) : std::string()) << "): GEMV time per token "
        << fmt("%.1f", e.default_us_per_token) << " -> " << fmt("%.1f", e.tuned_us_per_token) << " µs, tokens/s "
        << fmt("%.1f", e.default_tokens_per_s) << " -> " << fmt("%.1f", e.tuned_tokens_per_s) << " ("
        << fmt("%+.1f%%", 100.0 * (e.tuned_tokens_per_s / e.default_tokens_per_s - 1.0)) << ")\n";
    }
  return o.str();
}

nlohmann::json to_json(const SessionComparison& c) {
  auto side = [](const SessionComparison::Side& x) {
    return nlohmann::json{{"verdict", x.verdict}, {"default_config", config_text(x.default_config)},
                          {"config", config_text(x.config)}, {"default_us", x.default_us}, {"best_us", x.best_us},
                          {"confirmed", x.confirmed}};
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"device", r.device}, {"type", type_name(r.type)}, {"n", r.n}, {"k", r.k}, {"ncols", r.ncols},
                    {"a", side(r.a)}, {"b", side(r.b)}, {"agree", r.agree}});
  auto estimates = [](const std::vector<Estimate>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (const Estimate& e : v)
      out.push_back({{"device", e.device}, {"shapes_measured", e.shapes_measured}, {"shapes_total", e.shapes_total},
                     {"default_us_per_token", e.default_us_per_token}, {"tuned_us_per_token", e.tuned_us_per_token},
                     {"default_tokens_per_s", e.default_tokens_per_s}, {"tuned_tokens_per_s", e.tuned_tokens_per_s}});
    return out;
  };
  return {{"winners_compared", c.winners_compared}, {"winners_agree", c.winners_agree},
          {"disagreements", c.disagreements},       {"medians_compared", c.medians_compared},
          {"spread_median", c.spread_median},       {"spread_p90", c.spread_p90},
          {"spread_max", c.spread_max},             {"spread_max_at", c.spread_max_at},
          {"confirmed_a", c.confirmed_a},           {"confirmed_b", c.confirmed_b},
          {"kernel_a", c.kernel_a},                 {"kernel_b", c.kernel_b},
          {"rows", rows},                           {"estimates_a", estimates(c.estimates_a)},
          {"estimates_b", estimates(c.estimates_b)}};
}

}  // namespace temper
