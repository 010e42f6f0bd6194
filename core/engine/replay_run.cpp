// The decode replay on the engine device: weights up once, then stock and profiled tokens in turn.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "temper/engine_device.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/profile.h"
#include "temper/quant/reference.h"
#include "temper/stats.h"

namespace temper::engine {
namespace {

// A tensor of a sparse fixture reads as zeros: no real weights to replay.
bool has_real_bytes(const TensorInfo& t) {
  if (t.data.size() < t.bytes || t.bytes == 0) return false;
  const size_t step = std::max<size_t>(1, t.bytes / 64);
  for (size_t i = 0; i < t.bytes; i += step)
    if (t.data[i] != std::byte{0}) return true;
  return false;
}

// The probe's plan line for a launch (probe_protocol.h, Op::Replay).
const char* replay_op(const PlannedLaunch& l) {
  switch (l.launch) {
    case Launch::MulMat:
    case Launch::MulMatGroup: return "mm";  // a plan never holds a group: its members are plain launches
    case Launch::MulMatGlu:
    case Launch::MulMatGluUnfused: return "glu";  // the plan holds the engine's launches: fused
    case Launch::MulMatIdGlu:
    case Launch::MulMatIdGluUnfused: return "mmid_glu";
    case Launch::MulMatId: return l.broadcast_input ? "mmid" : "mmid_down";
  }
  return "mm";
}

// The batch width and forced paths are protocol 4's; refused (one line) before anything is uploaded.
void check_width_and_paths(const EngineDevice& device, const ReplayOptions& o) {
  if (o.ncols < 1 || o.ncols > 8) fail(ErrorKind::BadInput, "replay: ncols " + std::to_string(o.ncols) + " is outside 1..8");
  for (const auto& f : o.forced_paths) {
    if (f.launch != Launch::MulMat && f.launch != Launch::MulMatId)
      fail(ErrorKind::BadInput, "replay: a forced path for " + std::string(launch_name(f.launch)) +
                                    " (ggml picks mmvq or mmq for mul_mat and mul_mat_id only)");
    if (o.ncols < 2)
      fail(ErrorKind::BadInput, "replay: a forced mmvq/mmq path needs a batch width 2..8 (ggml runs mmvq at one column)");
  }
  if ((o.ncols > 1 || !o.forced_paths.empty()) && device.protocol() < 4)
    fail(ErrorKind::BadInput, "temper-probe " + device.options().probe.string() + " speaks protocol " +
                                  std::to_string(device.protocol()) +
                                  ", which replays one column with ggml's own mmvq/mmq pick only (batch widths and forced "
                                  "paths need protocol 4); rebuild it with `temper engine build`");
}

void check_group(const EngineDevice& device, const std::optional<GroupSetting>& group) {
  if (group && device.protocol() < 5)
    fail(ErrorKind::BadInput, "temper-probe " + device.options().probe.string() + " speaks protocol " +
                                  std::to_string(device.protocol()) +
                                  ", which has no same-input groups (protocol 5); rebuild it with `temper engine build`");
}

void check_pipeline(const EngineDevice& device, std::optional<bool> pipeline) {
  if (pipeline && device.protocol() < 6)
    fail(ErrorKind::BadInput, "temper-probe " + device.options().probe.string() + " speaks protocol " +
                                  std::to_string(device.protocol()) +
                                  ", which has no pipelined launches (protocol 6); rebuild it with `temper engine build`");
}

ReplayArm summarize_arm(std::vector<double> us, const ReplayTokens& last) {
  ReplayArm a;
  const SampleStats s = summarize(us);
  a.token_us = std::move(us);
  a.median = s.median;
  a.ci_low = s.ci_low;
  a.ci_high = s.ci_high;
  a.launches = last.launches;
  a.tuned = last.tuned;
  a.path_changes = last.path_changes;
  a.group_launches = last.group_launches;
  a.pipelined_launches = last.pipelined_launches;
  return a;
}

}  // namespace

std::string GroupSetting::text() const { return is_off() ? "off" : std::to_string(nwarps) + ":" + std::to_string(rows); }

GroupSetting parse_group_setting(const std::string& text, const std::string& what) {
  if (text == "off") return GroupSetting::off();
  const size_t colon = text.find(':');
  GroupSetting g;
  try {
    size_t used = 0;
    if (colon != std::string::npos) {
      g.nwarps = std::stoi(text.substr(0, colon), &used);
      if (used != colon) g.nwarps = 0;
      g.rows = std::stoi(text.substr(colon + 1), &used);
      if (used != text.size() - colon - 1) g.rows = 0;
    }
  } catch (const std::exception&) {
    g = {0, 0};
  }
  if ((g.nwarps != 2 && g.nwarps != 4 && g.nwarps != 8) || (g.rows != 1 && g.rows != 2 && g.rows != 4))
    fail(ErrorKind::BadInput, what + ": \"" + text + "\": expected off or W:R with W 2, 4 or 8 and R 1, 2 or 4");
  return g;
}

struct TokenReplayer::State {
  EngineDevice& device;
  const ReplayPlan& plan;
  std::map<std::string, DeviceBuffer> weights;
  DeviceBuffer x, out, ids;
  bool real_bytes = false;
};

TokenReplayer::TokenReplayer(EngineDevice& device, const GgufFile& file, const ReplayPlan& plan, uint64_t seed)
    : s_(std::make_unique<State>(State{device, plan, {}, {}, {}, {}, false})) {
  constexpr size_t kWidth = 8;  // every batch width the engine runs mmvq at
  std::map<std::string, const TensorInfo*> by_name;
  for (const TensorInfo& t : file.tensors()) by_name[std::string(t.name)] = &t;

  // Weights: one device buffer per tensor, in the plan's order.
  std::map<std::tuple<GgmlType, uint64_t, uint64_t, uint64_t>, std::vector<uint8_t>> generated;  // per shape
  int real = 0, total = 0;
  for (const PlannedLaunch& n : plan.launches.launches) {
    for (const std::string& name : n.tensors) {
      if (s_->weights.count(name)) continue;
      const TensorInfo& t = *by_name.at(name);
      DeviceBuffer b = device.alloc(t.bytes);
      ++total;
      if (has_real_bytes(t)) {
        ++real;
        device.upload(b, t.data.data(), t.bytes);
      } else {
        auto& bytes = generated[{t.type, t.dims[0], t.dims[1], t.dims[2]}];
        if (bytes.empty()) {
          bytes.resize(t.bytes);
          const int64_t rows = int64_t(t.dims[1] * t.dims[2]);
          quant::fill_random(t.type, bytes.data(), rows, int64_t(t.dims[0]), seed + uint64_t(bytes.size()));
        }
        device.upload(b, bytes.data(), t.bytes);
      }
      s_->weights.emplace(name, std::move(b));
    }
  }
  s_->real_bytes = real == total;

  std::mt19937_64 rng(seed);
  const LaunchPlan& lp = plan.launches;
  std::vector<float> x(size_t(lp.max_k) * size_t(std::max<int64_t>(lp.experts_used, 1)) * kWidth);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : x) v = normal(rng);
  s_->x = device.alloc(x.size() * sizeof(float));
  device.upload(s_->x, x.data(), x.size() * sizeof(float));
  s_->out = device.alloc(plan.output_bytes * kWidth);
  // Each token's experts: distinct, fixed for the run (a router's choice changes which weights are
  // read, not how many). A replay at width N reads the first N tokens' ids.
  int64_t experts = 1;
  for (const auto& n : lp.launches) experts = std::max<int64_t>(experts, n.experts);
  const size_t used = static_cast<size_t>(std::max<int64_t>(lp.experts_used, 1));
  std::vector<int32_t> ids(used * kWidth);
  std::vector<int32_t> all(static_cast<size_t>(experts));
  std::iota(all.begin(), all.end(), 0);
  for (size_t token = 0; token < kWidth; ++token) {
    std::shuffle(all.begin(), all.end(), rng);
    for (size_t i = 0; i < used; ++i) ids[token * used + i] = all[i % all.size()];
  }
  s_->ids = device.alloc(ids.size() * sizeof(int32_t));
  device.upload(s_->ids, ids.data(), ids.size() * sizeof(int32_t));
}

TokenReplayer::~TokenReplayer() = default;

bool TokenReplayer::real_bytes() const { return s_->real_bytes; }

void TokenReplayer::check(const EngineDevice& device, int ncols, const std::vector<ReplayOptions::ForcedPath>& forced,
                          const std::optional<GroupSetting>& group, std::optional<bool> pipeline) {
  ReplayOptions asked;
  asked.ncols = ncols;
  asked.forced_paths = forced;
  check_width_and_paths(device, asked);
  check_group(device, group);
  check_pipeline(device, pipeline);
}

std::string TokenReplayer::plan_text(const std::filesystem::path& profile, int ncols,
                                     const std::vector<ReplayOptions::ForcedPath>& forced, const ShapeKey* only,
                                     const std::optional<GroupSetting>& group, std::optional<bool> pipeline) const {
  check(s_->device, ncols, forced, group, pipeline);
  std::ostringstream p;
  p << "profile " << (profile.empty() ? "-" : profile.string()) << "\n"
    << "x " << EngineDevice::handle(s_->x) << "\nout " << EngineDevice::handle(s_->out) << "\nids " << EngineDevice::handle(s_->ids) << "\n";
  if (ncols > 1) p << "ncols " << ncols << "\n";
  for (const auto& f : forced)
    p << "path " << int(f.launch) << " " << uint32_t(f.type) << " " << (f.path == MatPath::Mmvq ? 1 : 2) << "\n";
  if (group) p << (group->is_off() ? std::string("group off") : "group " + std::to_string(group->nwarps) + " " + std::to_string(group->rows)) << "\n";
  if (pipeline) p << "pipeline " << (*pipeline ? "on" : "off") << "\n";
  // Same-input runs as the engine's graph has them (protocol 5): mm+ reads the node before's tensor.
  const bool runs = s_->device.protocol() >= 5;
  bool previous_written = false;
  for (const PlannedLaunch& n : s_->plan.launches.launches) {
    if (only && n.shape() != *only) {
      previous_written = false;
      continue;
    }
    const bool joins = runs && n.shares_input && previous_written;
    previous_written = true;
    p << (joins ? "mm+" : replay_op(n)) << " " << uint32_t(n.type) << " " << n.n << " " << n.k;
    if (launch_has_ids(n.launch)) p << " " << n.experts << " " << n.used;
    for (const auto& t : n.tensors) p << " " << EngineDevice::handle(s_->weights.at(t));
    p << "\n";
  }
  return p.str();
}

ReplayTokens TokenReplayer::run(const std::string& plan_text, int tokens) { return s_->device.replay(plan_text, uint32_t(tokens)); }

std::vector<float> TokenReplayer::outputs(const std::string& plan_text, int ncols) {
  s_->device.replay(plan_text, 1);
  std::vector<float> v(s_->plan.output_bytes * size_t(ncols) / sizeof(float));
  s_->device.download(v.data(), s_->out, v.size() * sizeof(float));
  return v;
}

ReplayReport run_replay(EngineDevice& device, const GgufFile& file, const ReplayPlan& plan, const ReplayOptions& o,
                        const std::function<void(int, int)>& progress) {
  check_width_and_paths(device, o);
  check_group(device, o.group);
  check_pipeline(device, o.pipeline);
  ReplayReport r;
  r.plan = plan;
  r.ncols = o.ncols;
  TokenReplayer token(device, file, plan, o.seed);
  r.real_bytes = token.real_bytes();
  const LaunchPlan& lp = plan.launches;
  // The stock arm is ggml's own launches: groups off whatever the environment says (protocol 5);
  // the profiled arm runs the asked group setting, else what the profile says.
  const std::optional<GroupSetting> stock_group =
      device.protocol() >= 5 ? std::optional<GroupSetting>(GroupSetting::off()) : std::nullopt;
  // Likewise no pipelined launch in the stock arm (protocol 6).
  const std::optional<bool> stock_pipeline = device.protocol() >= 6 ? std::optional<bool>(false) : std::nullopt;
  auto plan_text = [&](const std::string& profile, const ShapeKey* only = nullptr) {
    return token.plan_text(profile, o.ncols, o.forced_paths, only, profile.empty() ? stock_group : o.group,
                           profile.empty() ? stock_pipeline : o.pipeline);
  };
  const std::string stock_plan = plan_text(""), profiled_plan = plan_text(o.profile.string());
  std::vector<double> stock_us, profiled_us;
  ReplayTokens stock_last, profiled_last;  // the counts per token of each arm's last round
  for (int round = 0; round < o.rounds; ++round) {
    stock_last = token.run(stock_plan, o.tokens);
    stock_us.insert(stock_us.end(), stock_last.token_us.begin(), stock_last.token_us.end());
    if (progress) progress(2 * round + 1, 2 * o.rounds);
    profiled_last = token.run(profiled_plan, o.tokens);
    profiled_us.insert(profiled_us.end(), profiled_last.token_us.begin(), profiled_last.token_us.end());
    if (progress) progress(2 * round + 2, 2 * o.rounds);
  }
  r.stock = summarize_arm(std::move(stock_us), stock_last);
  r.profiled = summarize_arm(std::move(profiled_us), profiled_last);
  r.speedup = r.stock.median / r.profiled.median;
  r.speedup_low = r.stock.ci_low / r.profiled.ci_high;
  r.speedup_high = r.stock.ci_high / r.profiled.ci_low;

  // Same answers: each launch's output of one token, stock and with the profile.
  auto outputs = [&](const std::string& text) { return token.outputs(text, o.ncols); };
  const std::vector<float> stock_out = outputs(stock_plan), prof_out = outputs(profiled_plan);
  r.differences = compare_replay_outputs(plan, o.ncols, stock_out, prof_out);
  r.launches_compared = int(plan.launches.launches.size());

  // Where the time goes: each launch shape's launches on their own.
  r.copy_bandwidth_gbs = device.copy_bandwidth_gbs(size_t(1) << 30);
  if (o.breakdown_tokens > 0) {
    for (const Shape& sh : lp.shapes) {
      const auto median_of = [&](const std::string& text) { return summarize(token.run(text, o.breakdown_tokens).token_us).median; };
      ReplayShare s;
      static_cast<ShapeKey&>(s) = sh.shape();
      s.launches = sh.calls_per_token;
      s.bytes = sh.bytes_per_token;
      s.stock_us = median_of(plan_text("", &sh));
      s.profiled_us = median_of(plan_text(o.profile.string(), &sh));
      s.ideal_us = r.copy_bandwidth_gbs > 0 ? double(sh.bytes_per_token) / (r.copy_bandwidth_gbs * 1e3) : 0;
      s.percent_of_copy = s.stock_us > 0 ? 100 * s.ideal_us / s.stock_us : 0;
      s.overhead_us_per_launch = s.launches > 0 ? (s.stock_us - s.ideal_us) / double(s.launches) : 0;
      r.breakdown.push_back(s);
    }
    std::stable_sort(r.breakdown.begin(), r.breakdown.end(),
                     [](const ReplayShare& a, const ReplayShare& b) { return a.stock_us > b.stock_us; });
  }

  if (o.ncols == 1) {  // the entries' evidence is of one column
    const ReplayPrediction predicted = predict_replay(plan, load_profile(o.profile), device.info());
    r.profile_entries_hit = predicted.entries_hit;
    r.predicted_saving_us = predicted.saving_us;
    r.predicted_speedup = r.stock.median / (r.stock.median - r.predicted_saving_us);
  }
  return r;
}

std::vector<ReplayDifference> compare_replay_outputs(const ReplayPlan& plan, int ncols, const std::vector<float>& a_out,
                                                    const std::vector<float>& b_out) {
  std::vector<ReplayDifference> out;
  const auto slices = replay_output_slices(plan, ncols);
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto [at, count] = slices[i];
    // Non-finite where the stock launch is non-finite too is the data's (a file with garbage
    // scales), not the config's; finite values differ beyond rounding only by a wrong config.
    double worst = 0, sum2 = 0;
    size_t finite = 0;
    bool nan = false;
    for (size_t j = at; j < at + count; ++j) {
      const double a = a_out[j], b = b_out[j];
      if (!std::isfinite(a) || !std::isfinite(b)) {
        nan |= std::isfinite(a) != std::isfinite(b);
        continue;
      }
      worst = std::max(worst, std::abs(a - b));
      sum2 += a * a;
      ++finite;
    }
    const double rms = std::sqrt(sum2 / double(std::max<size_t>(finite, 1)));
    if (nan || worst > 1e-3 * rms) {
      const PlannedLaunch& l = plan.launches.launches[i];
      out.push_back({int(i), (l.layer < 0 ? std::string("head") : "blk." + std::to_string(l.layer)) + " " + l.role(),
                               nan ? std::numeric_limits<double>::quiet_NaN() : worst, rms});
    }
  }

  return out;
}

std::vector<std::pair<size_t, size_t>> replay_output_slices(const ReplayPlan& plan, int ncols) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t at = 0;  // bytes, as the probe's TokenGraph::output() advances
  for (const PlannedLaunch& l : plan.launches.launches) {
    const size_t floats = size_t(l.n) * size_t(launch_has_ids(l.launch) ? l.used : 1) * size_t(ncols);
    const size_t slice = (floats * sizeof(float) + 255) / 256 * 256;
    if (launch_is_fused(l.launch)) at += 2 * slice;  // gate and up, which the fused kernel never writes
    out.emplace_back(at / sizeof(float), floats);
    at += slice;
  }
  return out;
}

ReplayPrediction predict_replay(const ReplayPlan& plan, const Profile& profile, const DeviceInfo& device) {
  ReplayPrediction p;
  const ProfileDevice on = profile_device(device);
  for (const Shape& shape : plan.launches.shapes) {
    const ProfileEntry* e = applied_launch(profile, device.arch, on, shape.shape(), 1);
    if (!e || !e->provenance) continue;
    ++p.entries_hit;
    p.saving_us += double(shape.calls_per_token) * (e->provenance->default_us - e->provenance->tuned_us);
  }
  return p;
}

nlohmann::json replay_report_json(const ReplayReport& r) {
  using nlohmann::json;
  auto arm = [](const ReplayArm& a) {
    return json{{"median_us", a.median}, {"ci_low_us", a.ci_low}, {"ci_high_us", a.ci_high},
                {"tokens", a.token_us.size()}, {"mmvq_launches", a.launches}, {"tuned_launches", a.tuned},
                {"path_changes", a.path_changes}, {"group_launches", a.group_launches},
                {"pipelined_launches", a.pipelined_launches}};
  };
  json breakdown = json::array(), differences = json::array();
  for (const auto& s : r.breakdown)
    breakdown.push_back({{"kind", std::string(launch_name(s.launch))}, {"type", std::string(type_name(s.type))},
                         {"n", s.n}, {"k", s.k}, {"experts", s.experts}, {"experts_used", s.used},
                         {"launches_per_token", s.launches}, {"bytes_per_token", s.bytes},
                         {"stock_us", s.stock_us}, {"profiled_us", s.profiled_us}, {"ideal_us", s.ideal_us},
                         {"percent_of_copy_bandwidth", s.percent_of_copy},
                         {"overhead_us_per_launch", s.overhead_us_per_launch}});
  for (const auto& d : r.differences)
    differences.push_back({{"launch", d.index}, {"role", d.role},
                           {"max_abs_difference", std::isnan(d.max_abs_difference) ? json(nullptr) : json(d.max_abs_difference)},
                           {"stock_rms", d.scale}});
  return {{"ncols", r.ncols}, {"stock", arm(r.stock)}, {"profiled", arm(r.profiled)}, {"speedup", r.speedup},
          {"speedup_low", r.speedup_low}, {"speedup_high", r.speedup_high}, {"predicted_speedup", r.predicted_speedup},
          {"predicted_saving_us", r.predicted_saving_us}, {"profile_entries_hit", r.profile_entries_hit},
          {"real_bytes", r.real_bytes}, {"copy_bandwidth_gbs", r.copy_bandwidth_gbs},
          {"launches_compared", r.launches_compared}, {"breakdown", breakdown}, {"differences", differences}};
}

}  // namespace temper::engine
