// Re-verification: measure every approved entry again against this device's default config,
// through the sweep runner (same verification and timing rules as a sweep), changing nothing.
#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "temper/error.h"
#include "temper/profile.h"
#include "temper/sweep.h"

namespace temper {

inline constexpr std::string_view kStillWins = "still wins";

int RecheckReport::still_winning() const {
  return int(std::count_if(lines.begin(), lines.end(), [](const RecheckLine& l) { return l.verdict == kStillWins; }));
}

std::string RecheckReport::text() const {
  std::ostringstream o;
  o << "verified on " << device_name << " (" << device_arch << "), session " << session_id << "\n";
  char buf[256];
  for (const auto& l : lines) {
    o << key_text(l.key) << " " << config_text(l.config) << " vs default " << config_text(l.default_config) << ": "
      << l.verdict;
    if (l.verdict != "failed") {
      std::snprintf(buf, sizeof buf, " (%.2f us vs %.2f us, speedup %.3f [%.3f, %.3f]", l.tuned_us, l.default_us,
                    l.speedup, l.speedup_low, l.speedup_high);
      o << buf;
      if (l.recorded_speedup) {
        std::snprintf(buf, sizeof buf, "; recorded %.3f", *l.recorded_speedup);
        o << buf;
      }
      o << ")";
    } else {
      o << ": " << l.detail;
    }
    o << "\n";
  }
  for (const auto& k : skipped)
    o << "skipped: " << key_text(k) << " (another arch or device, overridden by this device's own entry, or a bucketed import)\n";
  o << still_winning() << " of " << lines.size() << " approved entries still win\n";
  return o.str();
}

RecheckReport recheck_profile(const Profile& p, Device& device, const RecheckOptions& options,
                            const std::function<void(const std::string&)>& progress) {
  const DeviceInfo& info = device.info();
  RecheckReport report;
  report.device_name = info.name;
  report.device_arch = info.arch;
  // The entries the engine would apply on this device: its own, else the arch-level ones.
  const ProfileDevice on = profile_device(info);
  std::vector<const ProfileEntry*> todo;
  for (const auto& e : p.entries) {
    if (e.approval != Approval::Approved) continue;
    if (e.key.arch != info.arch || e.bucketed || applied_entry(p, info.arch, on, e.key, e.key.ncols) != &e)
      report.skipped.push_back(e.key);
    else
      todo.push_back(&e);
  }
  if (todo.empty())
    fail(ErrorKind::BadInput, "the profile has no approved entry for this device's arch " + info.arch + " (" +
                                  info.name + ")");

  // One session: the entries' shapes, a grid holding their configs; then only the default and
  // the approved config of each (shape, ncols) stay in the plan.
  SweepSetup setup;
  setup.model.file_name = std::string(kSyntheticShape);
  setup.model.architecture = "profile verification";
  std::set<int> ncols, nwarps, rows;
  std::string engine = options.engine;
  for (const ProfileEntry* e : todo) {
    ncols.insert(e->key.ncols);
    nwarps.insert(e->config.nwarps);
    rows.insert(e->config.rows_per_block);
    if (engine.empty() && e->provenance && !e->provenance->engine.empty()) engine = e->provenance->engine;
    const bool known = std::any_of(setup.shapes.begin(), setup.shapes.end(), [&](const Shape& s) {
      return s.shape() == e->key.shape();
    });
    if (known) continue;
    Shape s;
    static_cast<ShapeKey&>(s) = e->key.shape();
    s.calls_per_token = e->provenance ? std::max<int64_t>(1, e->provenance->calls_per_token) : 1;
    const auto rb = row_bytes(s.type, uint64_t(s.k));
    s.bytes_per_token = e->provenance && e->provenance->bytes_per_token
                            ? e->provenance->bytes_per_token
                            : uint64_t(s.calls_per_token) * uint64_t(s.n) * rb.value_or(0);
    setup.shapes.push_back(s);
  }
  if (engine.empty()) engine = std::string(known_engines().front());
  setup.grid = {{ncols.begin(), ncols.end()}, {nwarps.begin(), nwarps.end()}, {rows.begin(), rows.end()}, engine, false};
  setup.options = options.sweep;
  Device* devices[] = {&device};
  Session s = new_session(setup, devices);
  Plan& plan = s.devices.front().plan;
  std::erase_if(plan.items, [&](const PlanItem& it) {
    if (it.is_default) return false;
    const ProfileEntry* e = applied_entry(p, info.arch, on, it, it.ncols);
    return !(e && e->config == it.config);
  });
  report.session_id = s.id;

  ProgressFn on_progress;
  if (progress) on_progress = [&](const Progress& pr) { progress(pr.current); };
  CancelFlag cancel{false};
  run_session(s, devices, nullptr, on_progress, cancel);
  if (!s.devices.front().error.empty()) fail(ErrorKind::GpuFault, "verification stopped: " + s.devices.front().error);

  for (const ProfileEntry* e : todo) {
    RecheckLine l;
    l.key = e->key;
    l.config = e->config;
    if (e->provenance) l.recorded_speedup = e->provenance->speedup;
    const PlanItem* def = nullptr;
    for (const auto& it : plan.items)
      if (it.is_default && it.shape() == e->key.shape() && it.ncols == e->key.ncols)
        def = &it;
    if (!def) {
      l.verdict = "failed";
      l.detail = "this device has no default config for the shape";
      for (const auto& sk : plan.skipped_shapes)
        if (sk.shape() == e->key.shape()) l.detail = sk.reason;
      report.lines.push_back(l);
      continue;
    }
    l.default_config = def->config;
    const GroupKey group = group_key(info.index, e->key, e->key.ncols);
    const Result* rd = find_result(s, group, def->config);
    const Result* rt = find_result(s, group, e->config);
    const Verdict* w = find_verdict(s, group);
    auto failure_of = [](const Result* r, const char* what) -> std::string {
      if (!r) return std::string(what) + " was not measured";
      return std::string(what) + " " + std::string(result_status_name(r->status)) + ": " + r->failure;
    };
    if (def->config == e->config) {
      l.verdict = "now the default";
    } else if (!rt || rt->status != ResultStatus::Ok) {
      l.verdict = "failed";
      bool excluded = false;
      for (const auto& x : plan.excluded)
        if (x.shape() == e->key.shape() && x.ncols == e->key.ncols && x.config == e->config) {
          l.detail = "approved config excluded on this device: " + x.reason;
          excluded = true;
        }
      if (!excluded) l.detail = failure_of(rt, "approved config");
    } else if (!rd || rd->status != ResultStatus::Ok) {
      l.verdict = "failed";
      l.detail = failure_of(rd, "default config");
    } else {
      l.verdict = w && w->is_winner() && w->config == e->config ? std::string(kStillWins) : std::string("no longer wins");
    }
    if (rd && rd->status == ResultStatus::Ok && rt && rt->status == ResultStatus::Ok) {
      l.default_us = rd->time_us.median;
      l.tuned_us = rt->time_us.median;
      l.default_ci_low = rd->time_us.ci_low;
      l.default_ci_high = rd->time_us.ci_high;
      l.tuned_ci_low = rt->time_us.ci_low;
      l.tuned_ci_high = rt->time_us.ci_high;
      l.speedup = l.default_us / l.tuned_us;
      l.speedup_low = rd->time_us.ci_low / rt->time_us.ci_high;
      l.speedup_high = rd->time_us.ci_high / rt->time_us.ci_low;
    }
    report.lines.push_back(l);
  }
  return report;
}

Profile apply_recheck(const Profile& p, const RecheckReport& r) {
  Profile out = p;
  for (const auto& l : r.lines) {
    ProfileEntry* e = find_entry(out, l.key);
    if (!e) continue;
    if (l.verdict == kStillWins) {
      Provenance pv = e->provenance.value_or(Provenance{});
      pv.session_id = r.session_id;
      pv.device_name = r.device_name;
      pv.device_arch = r.device_arch;
      pv.default_us = l.default_us;
      pv.tuned_us = l.tuned_us;
      pv.speedup = l.speedup;
      pv.speedup_low = l.speedup_low;
      pv.speedup_high = l.speedup_high;
      pv.default_ci_low = l.default_ci_low;
      pv.default_ci_high = l.default_ci_high;
      pv.tuned_ci_low = l.tuned_ci_low;
      pv.tuned_ci_high = l.tuned_ci_high;
      e->provenance = pv;
    } else {
      e->approval = Approval::Pending;
      e->decided_at.clear();
      e->note = "re-verification " + r.session_id + " on " + r.device_name + ": " + l.verdict +
                (l.detail.empty() ? "" : " (" + l.detail + ")");
    }
  }
  if (std::find(out.sessions.begin(), out.sessions.end(), r.session_id) == out.sessions.end())
    out.sessions.push_back(r.session_id);
  return out;
}

}  // namespace temper
