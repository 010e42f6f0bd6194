// The decode replay on the engine device: weights up once, then stock and profiled tokens in turn.
#include <algorithm>
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
    case Launch::MulMat: return "mm";
    case Launch::MulMatGlu: return "glu";
    case Launch::MulMatIdGlu: return "mmid_glu";
    case Launch::MulMatId: return l.broadcast_input ? "mmid" : "mmid_down";
  }
  return "mm";
}

ReplayArm summarize_arm(std::vector<double> us, int64_t launches, int64_t tuned) {
  ReplayArm a;
  const SampleStats s = summarize(us);
  a.token_us = std::move(us);
  a.median = s.median;
  a.ci_low = s.ci_low;
  a.ci_high = s.ci_high;
  a.launches = launches;
  a.tuned = tuned;
  return a;
}

}  // namespace

ReplayReport run_replay(EngineDevice& device, const GgufFile& file, const ReplayPlan& plan, const ReplayOptions& o,
                        const std::function<void(int, int)>& progress) {
  ReplayReport r;
  r.plan = plan;
  std::map<std::string, const TensorInfo*> by_name;
  for (const TensorInfo& t : file.tensors()) by_name[std::string(t.name)] = &t;

  // Weights: one device buffer per tensor, in the plan's order.
  std::map<std::string, DeviceBuffer> weights;
  std::map<std::tuple<GgmlType, uint64_t, uint64_t, uint64_t>, std::vector<uint8_t>> generated;  // per shape
  int real = 0, total = 0;
  for (const PlannedLaunch& n : plan.launches.launches) {
    for (const std::string& name : n.tensors) {
      if (weights.count(name)) continue;
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
          quant::fill_random(t.type, bytes.data(), rows, int64_t(t.dims[0]), o.seed + uint64_t(bytes.size()));
        }
        device.upload(b, bytes.data(), t.bytes);
      }
      weights.emplace(name, std::move(b));
    }
  }
  r.real_bytes = real == total;

  std::mt19937_64 rng(o.seed);
  const LaunchPlan& lp = plan.launches;
  std::vector<float> x(size_t(lp.max_k) * size_t(std::max<int64_t>(lp.experts_used, 1)));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (float& v : x) v = normal(rng);
  DeviceBuffer xb = device.alloc(x.size() * sizeof(float));
  device.upload(xb, x.data(), x.size() * sizeof(float));
  DeviceBuffer out = device.alloc(plan.output_bytes);
  // The token's experts: distinct, fixed for the run (a router's choice changes which weights are
  // read, not how many).
  int64_t experts = 1;
  for (const auto& n : lp.launches) experts = std::max<int64_t>(experts, n.experts);
  std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(lp.experts_used, 1)));
  std::vector<int32_t> all(static_cast<size_t>(experts));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = all[i % all.size()];
  DeviceBuffer idb = device.alloc(ids.size() * sizeof(int32_t));
  device.upload(idb, ids.data(), ids.size() * sizeof(int32_t));

  auto plan_text = [&](const std::string& profile) {
    std::ostringstream p;
    p << "profile " << (profile.empty() ? "-" : profile) << "\n"
      << "x " << EngineDevice::handle(xb) << "\nout " << EngineDevice::handle(out) << "\nids " << EngineDevice::handle(idb) << "\n";
    for (const PlannedLaunch& n : lp.launches) {
      p << replay_op(n) << " " << uint32_t(n.type) << " " << n.n << " " << n.k;
      if (launch_has_ids(n.launch)) p << " " << n.experts << " " << n.used;
      for (const auto& t : n.tensors) p << " " << EngineDevice::handle(weights.at(t));
      p << "\n";
    }
    return p.str();
  };
  const std::string stock_plan = plan_text(""), profiled_plan = plan_text(o.profile.string());
  std::vector<double> stock_us, profiled_us;
  int64_t stock_launches = 0, stock_tuned = 0, prof_launches = 0, prof_tuned = 0;
  for (int round = 0; round < o.rounds; ++round) {
    const ReplayTokens s = device.replay(stock_plan, uint32_t(o.tokens));
    stock_us.insert(stock_us.end(), s.token_us.begin(), s.token_us.end());
    stock_launches = s.launches;
    stock_tuned = s.tuned;
    if (progress) progress(2 * round + 1, 2 * o.rounds);
    const ReplayTokens p = device.replay(profiled_plan, uint32_t(o.tokens));
    profiled_us.insert(profiled_us.end(), p.token_us.begin(), p.token_us.end());
    prof_launches = p.launches;
    prof_tuned = p.tuned;
    if (progress) progress(2 * round + 2, 2 * o.rounds);
  }
  r.stock = summarize_arm(std::move(stock_us), stock_launches, stock_tuned);
  r.profiled = summarize_arm(std::move(profiled_us), prof_launches, prof_tuned);
  r.speedup = r.stock.median / r.profiled.median;
  r.speedup_low = r.stock.ci_low / r.profiled.ci_high;
  r.speedup_high = r.stock.ci_high / r.profiled.ci_low;

  const ReplayPrediction predicted = predict_replay(plan, load_profile(o.profile), device.info());
  r.profile_entries_hit = predicted.entries_hit;
  r.predicted_saving_us = predicted.saving_us;
  r.predicted_speedup = r.stock.median / (r.stock.median - r.predicted_saving_us);
  return r;
}

ReplayPrediction predict_replay(const ReplayPlan& plan, const Profile& profile, const DeviceInfo& device) {
  ReplayPrediction p;
  const ProfileDevice on = profile_device(device);
  for (const Shape& shape : plan.launches.shapes) {
    const ProfileEntry* e = applied_entry(profile, device.arch, on, shape.shape(), 1);
    if (!e || !e->provenance) continue;
    ++p.entries_hit;
    p.saving_us += double(shape.calls_per_token) * (e->provenance->default_us - e->provenance->tuned_us);
  }
  return p;
}

}  // namespace temper::engine
