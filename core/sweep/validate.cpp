#include "temper/validate.h"

#include <cmath>
#include <set>
#include <tuple>

#include "temper/error.h"
#include "temper/mmvq_traits.h"
#include "temper/session.h"

namespace temper {
namespace {

// Limits far above anything a sweep produces; they only keep hostile values out.
constexpr int kMaxDim = 1 << 30;           // n, k
constexpr size_t kMaxText = 64 * 1024;     // names, messages, notes
constexpr int kMaxConfigValue = 1024;      // nwarps, rows_per_block

[[noreturn]] void bad(const std::string& where, const std::string& what) { fail(ErrorKind::BadInput, where + ": " + what); }

void check_text(const std::string& s, const std::string& where) {
  if (s.size() > kMaxText) bad(where, "text of " + std::to_string(s.size()) + " bytes, expected at most " + std::to_string(kMaxText));
}

void check_shape_key(uint32_t type, int64_t n, int64_t k, const std::string& where) {
  if (n < 1 || n > kMaxDim) bad(where + ".n", "expected 1.." + std::to_string(kMaxDim) + ", got " + std::to_string(n));
  if (k < 1 || k > kMaxDim) bad(where + ".k", "expected 1.." + std::to_string(kMaxDim) + ", got " + std::to_string(k));
  const mmvq::TypeTraits t = mmvq::type_traits(type);
  if (t.qk != 0 && k % t.qk != 0)
    bad(where + ".k", "expected a multiple of " + std::to_string(t.qk) + " (the block size), got " + std::to_string(k));
}

void check_ncols(int ncols, const std::string& where) {
  if (ncols < 1 || ncols > mmvq::kMaxNcols)
    bad(where + ".ncols", "expected 1.." + std::to_string(mmvq::kMaxNcols) + ", got " + std::to_string(ncols));
}

void check_config(Config c, const std::string& where) {
  if (c.nwarps < 1 || c.nwarps > kMaxConfigValue)
    bad(where + ".nwarps", "expected 1.." + std::to_string(kMaxConfigValue) + ", got " + std::to_string(c.nwarps));
  if (c.rows_per_block < 1 || c.rows_per_block > kMaxConfigValue)
    bad(where + ".rows_per_block", "expected 1.." + std::to_string(kMaxConfigValue) + ", got " + std::to_string(c.rows_per_block));
}

void check_non_negative(double v, const std::string& where) {
  if (!std::isfinite(v) || v < 0) bad(where, "expected a finite number >= 0, got " + std::to_string(v));
}

void check_positive(double v, const std::string& where) {
  if (!std::isfinite(v) || v <= 0) bad(where, "expected a finite number > 0, got " + std::to_string(v));
}

// Timing statistics of a measured result: positive, finite and ordered.
void check_stats(const SampleStats& s, const std::string& where) {
  if (s.n < 1) bad(where + ".n", "expected at least one sample, got " + std::to_string(s.n));
  check_positive(s.median, where + ".median");
  check_positive(s.min, where + ".min");
  check_positive(s.max, where + ".max");
  check_positive(s.p10, where + ".p10");
  check_positive(s.p90, where + ".p90");
  check_positive(s.ci_low, where + ".ci_low");
  check_positive(s.ci_high, where + ".ci_high");
  if (!(s.min <= s.median && s.median <= s.max)) bad(where, "expected min <= median <= max");
  if (!(s.ci_low <= s.median && s.median <= s.ci_high)) bad(where, "expected ci_low <= median <= ci_high");
  if (!(s.ci_coverage >= 0 && s.ci_coverage <= 1)) bad(where + ".ci_coverage", "expected 0..1");
}

using ResultKey = std::pair<GroupKey, Config>;

std::string index_text(const std::string& where, const char* list, size_t i) {
  return where + "." + list + "[" + std::to_string(i) + "]";
}

// What a verdict and a confirmation share: a device of the session, a key and configs in range,
// and no other entry of their list for the same group.
void check_group_entry(const GroupKey& g, Config config, Config default_config, const std::set<int>& devices,
                       std::set<GroupKey>& seen, const std::string& at, const std::string& what) {
  if (!devices.contains(g.device)) bad(at + ".device", "no device " + std::to_string(g.device) + " in the session");
  check_shape_key(static_cast<uint32_t>(g.type), g.n, g.k, at);
  check_ncols(g.ncols, at);
  check_config(config, at + ".config");
  check_config(default_config, at + ".default_config");
  if (!seen.insert(g).second) bad(at, "a second " + what + " for the same device, shape and ncols");
}

}  // namespace

void validate_result(const Result& r, const std::string& where) {
  if (r.device < 0) bad(where + ".device", "expected a device index >= 0, got " + std::to_string(r.device));
  check_shape_key(static_cast<uint32_t>(r.type), r.n, r.k, where);
  check_ncols(r.ncols, where);
  check_config(r.config, where + ".config");
  check_text(r.failure, where + ".failure");
  check_non_negative(r.max_abs_error, where + ".max_abs_error");
  check_non_negative(r.worst_error_ratio, where + ".worst_error_ratio");
  check_non_negative(r.gbs, where + ".gbs");
  check_non_negative(r.ops_per_s, where + ".ops_per_s");
  if (r.weight_copies < 0) bad(where + ".weight_copies", "expected >= 0, got " + std::to_string(r.weight_copies));
  if (r.status == ResultStatus::Ok) {
    if (!mmvq::type_supported(static_cast<uint32_t>(r.type))) bad(where + ".type", "a type without an mmvq kernel cannot be measured");
    check_stats(r.time_us, where + ".time_us");
    if (r.worst_error_ratio > 1) bad(where + ".worst_error_ratio", "an ok result passed verification (ratio <= 1)");
  }
}

void validate_confirmation(const Confirmation& c, const std::string& where) {
  check_shape_key(static_cast<uint32_t>(c.type), c.n, c.k, where);
  check_ncols(c.ncols, where);
  check_config(c.config, where + ".config");
  check_config(c.default_config, where + ".default_config");
  check_text(c.failure, where + ".failure");
  if (!c.failure.empty()) {
    // The re-measure could not run: no numbers, and nothing confirmed.
    for (const SampleStats* s : {&c.default_us, &c.candidate_us})
      for (double v : {s->median, s->p10, s->p90, s->min, s->max, s->ci_low, s->ci_high}) check_non_negative(v, where);
    if (c.confirmed) bad(where + ".confirmed", "a confirmation that failed (\"failure\" set) cannot confirm");
    return;
  }
  check_stats(c.default_us, where + ".default_us");
  check_stats(c.candidate_us, where + ".candidate_us");
  if (c.confirmed && !(c.candidate_us.ci_high < c.default_us.ci_low))
    bad(where + ".confirmed", "true, but the candidate's CI is not wholly below the default's");
}

void validate_session(const Session& s, const std::string& where) {
  check_text(s.id, where + ".id");
  check_text(s.model.file_name, where + ".model.file_name");
  std::set<int> devices;
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const SessionDevice& d = s.devices[i];
    const std::string at = index_text(where, "devices", i);
    if (d.info.index < 0) bad(at + ".index", "expected >= 0, got " + std::to_string(d.info.index));
    if (!devices.insert(d.info.index).second) bad(at + ".index", "device " + std::to_string(d.info.index) + " appears twice");
    check_text(d.info.name, at + ".name");
    check_text(d.info.arch, at + ".arch");
    check_text(d.error, at + ".error");
    check_non_negative(d.copy_bandwidth_gbs, at + ".copy_bandwidth_gbs");
    if (d.info.warp_size != 32 && d.info.warp_size != 64) bad(at + ".warp_size", "expected 32 or 64, got " + std::to_string(d.info.warp_size));
  }
  for (size_t i = 0; i < s.shapes.size(); ++i) {
    const Shape& sh = s.shapes[i];
    const std::string at = index_text(where, "shapes", i);
    check_shape_key(static_cast<uint32_t>(sh.type), sh.n, sh.k, at);
    if (sh.calls_per_token < 0) bad(at + ".calls_per_token", "expected >= 0");
  }
  std::set<ResultKey> results;
  std::set<int> measured_devices;
  for (size_t i = 0; i < s.results.size(); ++i) {
    const Result& r = s.results[i];
    const std::string at = index_text(where, "results", i);
    validate_result(r, at);
    if (!devices.contains(r.device)) bad(at + ".device", "no device " + std::to_string(r.device) + " in the session");
    if (!results.insert({static_cast<const GroupKey&>(r), r.config}).second)
      bad(at, "a second result for the same device, shape, ncols and config");
    if (r.status == ResultStatus::Ok) measured_devices.insert(r.device);
  }
  for (size_t i = 0; i < s.devices.size(); ++i)
    if (measured_devices.contains(s.devices[i].info.index) && !(s.devices[i].copy_bandwidth_gbs > 0))
      bad(index_text(where, "devices", i) + ".copy_bandwidth_gbs", "expected > 0 for a device with measured results");
  auto ok_result = [&](const GroupKey& group, Config c) {
    const Result* r = find_result(s, group, c);
    return r && r->status == ResultStatus::Ok;
  };
  std::set<GroupKey> verdicts;
  for (size_t i = 0; i < s.verdicts.size(); ++i) {
    const Verdict& w = s.verdicts[i];
    const std::string at = index_text(where, "winners", i);
    check_group_entry(w, w.config, w.default_config, devices, verdicts, at, "verdict");
    check_text(w.note, at + ".note");
    if (w.verdict != kVerdictWinner && w.verdict != kVerdictDefaultStays && w.verdict != kVerdictNoDefault)
      bad(at + ".verdict", "expected \"winner\", \"default stays\" or \"no verified default\", got \"" + w.verdict.substr(0, 64) + "\"");
    for (double v : {w.default_us, w.best_us, w.speedup, w.speedup_low, w.speedup_high, w.default_ci_low, w.default_ci_high,
                     w.best_ci_low, w.best_ci_high})
      check_non_negative(v, at);
    if (w.verdict == kVerdictNoDefault) continue;
    if (!ok_result(w, w.default_config))
      bad(at + ".default_config", "no ok result behind the default " + config_text(w.default_config));
    if (!ok_result(w, w.config)) bad(at + ".config", "no ok result behind " + config_text(w.config));
  }
  std::set<GroupKey> confirmations;
  for (size_t i = 0; i < s.confirmations.size(); ++i) {
    const Confirmation& c = s.confirmations[i];
    const std::string at = index_text(where, "confirmations", i);
    check_group_entry(c, c.config, c.default_config, devices, confirmations, at, "confirmation");
    validate_confirmation(c, at);
  }
}

}  // namespace temper
