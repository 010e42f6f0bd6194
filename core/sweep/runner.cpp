// Measuring a plan on devices: inputs, verification, timing, journal, progress and cancellation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "internal.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/gpus.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/reference.h"
#include "temper/sweep.h"
#include "temper/verify.h"

namespace temper {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kDefaultLlcBytes = 256ull << 20;  // when neither the spec database nor the runtime knows

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void check_cancel(const CancelFlag& cancel) {
  if (cancel.load(std::memory_order_relaxed)) fail(ErrorKind::Cancelled, "sweep cancelled");
}

// splitmix64: independent, reproducible seeds per shape from the session's seed.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t shape_seed(uint64_t seed, GgmlType type, int n, int k) {
  return mix(mix(mix(seed ^ static_cast<uint64_t>(type)) ^ static_cast<uint64_t>(n)) ^ static_cast<uint64_t>(k));
}

std::string item_text(const PlanItem& it) {
  std::string s = shape_text(it) + " ncols " + std::to_string(it.ncols) + " · nwarps " +
                  std::to_string(it.config.nwarps) + " rows " + std::to_string(it.config.rows_per_block);
  if (it.is_default) s += " (default)";
  if (it.is_small_k) s += " (small-K)";
  return s;
}

using ItemKey = std::pair<GroupKey, Config>;
GroupKey group_of(int device, const PlanItem& it) { return group_key(device, it, it.ncols); }
ItemKey key_of(int device, const PlanItem& it) { return {group_of(device, it), it.config}; }
ItemKey key_of(const Result& r) { return {r.group(), r.config}; }

bool is_fake(const DeviceInfo& info) { return info.api == "fake"; }

uint64_t last_level_cache(const DeviceInfo& info) {
  if (!is_fake(info))
    if (const GpuSpec* spec = match_device(info); spec && spec->llc_bytes > 0) return spec->llc_bytes;
  return info.l2_bytes > 0 ? info.l2_bytes : kDefaultLlcBytes;
}

// Runs f(begin, end) over [0, count) on up to hardware_concurrency threads (the CPU reference of
// a 128k-row output head is seconds on one core).
template <class F>
void parallel_rows(size_t count, const F& f) {
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  const size_t per = std::max<size_t>(256, (count + threads - 1) / threads);
  if (count <= per) return f(size_t(0), count);
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors((count + per - 1) / per);
  for (size_t b = 0, i = 0; b < count; b += per, ++i)
    pool.emplace_back([&, b, i] {
      try {
        f(b, std::min(count, b + per));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Everything a shape needs on one device: weight copies, activations quantized on the device and
// the expected value of every output.
struct ShapeData {
  std::vector<DeviceBuffer> copies;
  std::vector<const DeviceBuffer*> copy_ptrs;
  bool copies_capped = false;
  DeviceBuffer y_q8_1, dst;
  DeviceBuffer ids;                // ids kinds: ids_sets sets of `used` expert ids
  int ids_sets = 1;
  GluOp glu = GluOp::SwiGlu;
  int ncols = 0;                   // columns prepared (the largest ncols still to measure)
  mmvq::KernelVariant variant{};   // the session engine's kernel
  std::vector<Expected> expected;  // [col * n + row]
};

// The launch of one plan item on a shape's buffers.
GemvProblem problem_of(const ShapeKey& shape, int ncols, const ShapeData& d) {
  GemvProblem p;
  static_cast<ShapeKey&>(p) = shape;
  p.ncols = ncols;
  p.variant = d.variant;
  p.glu = d.glu;
  if (launch_has_ids(shape.launch)) {
    p.ids = &d.ids;
    p.ids_sets = d.ids_sets;
  }
  return p;
}

ShapeData prepare_shape(Device& device, const PlanItem& shape, int ncols, GluOp glu, mmvq::KernelVariant variant,
                        const SweepOptions& options, uint64_t seed, const CancelFlag& cancel) {
  const DeviceInfo& info = device.info();
  const WeightLayout layout = weight_layout(shape);
  const size_t row = layout.row_bytes;
  const size_t weight_bytes = layout.total;
  ShapeData d;
  d.ncols = ncols;
  d.glu = glu;
  d.variant = variant;

  // Enough copies that rotating through them exceeds twice the last-level cache, within the memory cap.
  const uint64_t llc = last_level_cache(info);
  size_t copies = static_cast<size_t>(2 * llc / weight_bytes) + 1;
  if (info.memory_bytes > 0) {
    const auto budget = static_cast<size_t>(options.memory_fraction * double(info.memory_bytes));
    const size_t fit = std::max<size_t>(1, budget / weight_bytes);
    if (fit < copies) {
      copies = fit;
      d.copies_capped = true;
    }
  }

  // Random valid blocks (never zeros) for every matrix of the launch (each expert's, gate and up),
  // generated in chunks of rows so cancellation stays prompt. The padding rows stay zero.
  std::vector<uint8_t> weights(weight_bytes);
  const size_t matrix_rows = size_t(shape.n) * layout.experts;
  const size_t rows_per_chunk = std::max<size_t>(1, (size_t(8) << 20) / row);
  size_t chunk = 0;
  for (size_t operand = 0; operand < size_t(launch_matrices(shape.launch)); ++operand) {
    uint8_t* base = weights.data() + operand * layout.gate_offset;
    for (size_t r0 = 0; r0 < matrix_rows; r0 += rows_per_chunk, ++chunk) {
      check_cancel(cancel);
      const size_t rows = std::min(rows_per_chunk, matrix_rows - r0);
      quant::fill_random(shape.type, base + r0 * row, int64_t(rows), shape.k, mix(seed + chunk));
    }
  }
  for (size_t c = 0; c < copies; ++c) {
    check_cancel(cancel);
    d.copies.push_back(device.alloc(weight_bytes));
    device.upload(d.copies.back(), weights.data(), weight_bytes);
  }
  for (const auto& b : d.copies) d.copy_ptrs.push_back(&b);

  // Expert ids: the experts split into disjoint sets of `used` in a random order, so launches
  // cycle through every expert (a router's choice changes which weights are read, not how many)
  // and consecutive launches never re-read the last one's experts from cache.
  std::vector<int32_t> ids;
  if (launch_has_ids(shape.launch)) {
    if (shape.used < 1 || shape.used > shape.experts)
      fail(ErrorKind::BadInput, shape_text(shape) + ": experts used must be 1.." + std::to_string(shape.experts));
    std::vector<int32_t> order(size_t(shape.experts));
    for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(mix(seed ^ 0x1D5u)));
    d.ids_sets = std::max(1, shape.experts / shape.used);
    ids.assign(order.begin(), order.begin() + ptrdiff_t(d.ids_sets) * shape.used);
    d.ids = device.alloc(ids.size() * sizeof(int32_t));
    device.upload(d.ids, ids.data(), ids.size() * sizeof(int32_t));
  }

  // Fresh activations, quantized to q8_1 on the device as llama.cpp does; the exact reference uses
  // the device's own q8_1 blocks, so verification judges the GEMV alone.
  const size_t k = static_cast<size_t>(shape.k);
  const int columns_in = input_columns(shape, ncols), columns_out = output_columns(shape, ncols);
  std::vector<float> x(k * size_t(columns_in));
  quant::fill_random_activations(x.data(), int64_t(x.size()), mix(seed ^ 0xAC71u));
  DeviceBuffer x_dev = device.alloc(x.size() * sizeof(float));
  device.upload(x_dev, x.data(), x.size() * sizeof(float));
  const size_t q8_bytes = k / 32 * sizeof(quant::BlockQ8_1) * size_t(columns_in);
  d.y_q8_1 = device.alloc(q8_bytes);
  device.quantize_q8_1(x_dev, d.y_q8_1, shape.k, columns_in);
  std::vector<quant::BlockQ8_1> y(k / 32 * size_t(columns_in));
  device.download(y.data(), d.y_q8_1, q8_bytes);
  d.dst = device.alloc(size_t(shape.n) * size_t(columns_out) * sizeof(float));

  d.expected.resize(size_t(shape.n) * size_t(columns_out));
  const GemvProblem p = problem_of(shape, ncols, d);
  parallel_rows(size_t(shape.n), [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; r += 256) {
      check_cancel(cancel);
      expected_launch_rows(p, weights.data(), y.data(), ids.data(), int64_t(r), int64_t(std::min(r1, r + 256)),
                           d.expected.data());
    }
  });
  return d;
}

// Times `samples` × `per_sample` launches of `c` (one value per sample: µs per launch of
// `per_sample` back-to-back launches) and moves the ring of weight copies on by the launches made,
// so the next call starts at the copy after the last one used. Device timing starts each call at
// the first copy it is given: with calls shorter than the ring (a small shape has dozens of
// copies) every call would re-read the same copies, still in the last-level cache from the call
// before, and time the shape partly from cache.
std::vector<double> time_batch(Device& device, const GemvProblem& p, Config c, ShapeData& d, int samples,
                               int per_sample = 1) {
  std::vector<double> us = device.time_gemv_grouped(p, c, d.copy_ptrs, d.y_q8_1, d.dst, samples, per_sample);
  const size_t launches = size_t(samples) * size_t(per_sample);
  std::rotate(d.copy_ptrs.begin(), d.copy_ptrs.begin() + ptrdiff_t(launches % d.copy_ptrs.size()), d.copy_ptrs.end());
  return us;
}

// A device that still answers after an error: the error was this result's, not the device's.
bool device_healthy(Device& device) {
  try {
    DeviceBuffer probe = device.alloc(256);
    device.fill(probe, 0);
    uint8_t back[256];
    device.download(back, probe, sizeof back);
    return true;
  } catch (const Error&) {
    return false;
  }
}

Result blank_result(const Device& device, const PlanItem& it) {
  Result r;
  static_cast<GroupKey&>(r) = group_key(device.info().index, it, it.ncols);
  r.config = it.config;
  r.is_default = it.is_default;
  r.is_small_k = it.is_small_k;
  return r;
}

void record_error(Result& r, const Error& e) {
  r.status = ResultStatus::Error;
  r.failure = std::string(error_kind_name(e.kind())) + ": " + e.what();
  r.time_us = {};
}

Result measure(Device& device, const PlanItem& it, ShapeData& d, const SweepOptions& options, const CancelFlag& cancel) {
  Result r = blank_result(device, it);
  r.weight_copies = int(d.copies.size());
  r.copies_capped = d.copies_capped;
  try {
    r.kernel = device.kernel_attributes(it.type, it.ncols, it.config);
    // 1. Verification: poisoned outputs, one launch, every value compared with the reference.
    const GemvProblem p = problem_of(it, it.ncols, d);
    device.fill(d.dst, 0xFF);  // NaN everywhere: an unwritten output cannot pass
    device.gemv(p, it.config, *d.copy_ptrs[0], d.y_q8_1, d.dst);
    std::vector<float> out(size_t(it.n) * size_t(output_columns(it, it.ncols)));
    device.download(out.data(), d.dst, out.size() * sizeof(float));
    const OutputCheck check =
        compare_outputs(out, std::span<const Expected>(d.expected.data(), out.size()), it.n);
    // JSON has no infinity: an unwritten output records the largest finite error.
    const double huge = std::numeric_limits<double>::max();
    const bool nonfinite = check.unwritten > 0 || check.nonfinite > 0;
    r.max_abs_error = nonfinite || !std::isfinite(check.max_abs_error) ? huge : check.max_abs_error;
    r.worst_error_ratio = nonfinite || !std::isfinite(check.worst_ratio) ? huge : check.worst_ratio;
    if (!check.passed()) {
      r.status = ResultStatus::Failed;
      r.failure = check.first_failure.empty() ? "outputs disagree with the CPU reference" : check.first_failure;
      return r;  // a wrong kernel is never timed, so it can never win
    }
    // 2. Timing: warm-up, then batches until the median's CI is tight enough or the cap is reached.
    const auto start = Clock::now();
    if (options.warmup > 0) (void)time_batch(device, p, it.config, d, options.warmup);
    std::vector<double> samples;
    for (;;) {
      check_cancel(cancel);
      const auto batch = time_batch(device, p, it.config, d, options.batch, options.launches_per_sample);
      samples.insert(samples.end(), batch.begin(), batch.end());
      if (int(samples.size()) < options.min_samples) continue;
      r.time_us = summarize(samples);
      r.converged = (r.time_us.ci_high - r.time_us.ci_low) / 2 < options.ci_target * r.time_us.median;
      if (r.converged || seconds_since(start) >= options.time_cap_s || int(samples.size()) >= options.max_samples)
        break;
    }
    r.trace_us = sample_trace(samples);
    const double seconds = r.time_us.median * 1e-6;
    r.gbs = gemv_bytes(it.shape(), it.ncols) / seconds / 1e9;
    r.ops_per_s = 2.0 * double(it.n) * double(it.k) * double(it.ncols) * it.gemvs() / seconds;
    r.telemetry = device.telemetry();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) throw;
    // A config this build cannot launch, or a fault the device survives, is this result's problem;
    // a device that no longer answers stops this device's sweep (the caller records why).
    if (e.kind() != ErrorKind::BadInput && !device_healthy(device)) throw;
    record_error(r, e);
  }
  return r;
}

// The GPU idles while the host prepares a shape's data, and its clocks drop. A burst of real
// launches (SweepOptions::shape_warmup_s of wall time) brings it back before anything is timed:
// without it an H100 once timed a shape's first config 37% slow and flipped that shape's winner.
// The fake device has no clocks to bring back, so it skips this: its sweeps then repeat exactly
// for one seed (the same session from the CLI and from the GUI), with no wall-time dependence.
void warm_up_device(Device& device, const PlanItem& it, ShapeData& d, double seconds, const CancelFlag& cancel) {
  if (!(seconds > 0) || is_fake(device.info())) return;
  const GemvProblem p = problem_of(it, it.ncols, d);
  const auto start = Clock::now();
  try {
    do {
      check_cancel(cancel);
      (void)time_batch(device, p, it.config, d, 16);
    } while (seconds_since(start) < seconds);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) throw;
    // A config that cannot run is recorded by measure(); warming is best effort.
  }
}

// The interleaved re-measure of a provisional winner: batches of the default and the candidate
// alternate (default first, then candidate first, ...) on the same buffers, so slow drift (clocks,
// temperature, a cold first config) touches both alike, until both medians' CIs are within
// ci_target or confirm_time_s has passed. The winner stands only if its CI is again wholly below.
Confirmation confirm_winner(Device& device, const Verdict& w, ShapeData& d, const SweepOptions& options,
                            const CancelFlag& cancel) {
  Confirmation c;
  static_cast<GroupKey&>(c) = w.group();
  c.default_config = w.default_config;
  c.config = w.config;
  const GemvProblem p = problem_of(w, w.ncols, d);
  try {
    for (Config cfg : {c.default_config, c.config})
      if (options.warmup > 0) (void)time_batch(device, p, cfg, d, options.warmup);
    std::vector<double> samples[2];  // [0] default, [1] candidate
    const Config configs[2] = {c.default_config, c.config};
    const auto start = Clock::now();
    for (int round = 0;; ++round) {
      for (int half = 0; half < 2; ++half) {
        check_cancel(cancel);
        const int which = (round + half) % 2;  // round 0: default, candidate; round 1: candidate, default
        const auto batch = time_batch(device, p, configs[which], d, options.batch, options.launches_per_sample);
        samples[which].insert(samples[which].end(), batch.begin(), batch.end());
      }
      if (int(samples[0].size()) < options.min_samples) continue;
      c.default_us = summarize(samples[0]);
      c.candidate_us = summarize(samples[1]);
      const auto tight = [&](const SampleStats& s) { return (s.ci_high - s.ci_low) / 2 < options.ci_target * s.median; };
      c.converged = tight(c.default_us) && tight(c.candidate_us);
      if (c.converged || seconds_since(start) >= options.confirm_time_s ||
          int(samples[0].size()) >= options.max_samples)
        break;
    }
    c.confirmed = c.candidate_us.ci_high < c.default_us.ci_low;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled || !device_healthy(device)) throw;
    // Both configs ran moments ago; if one cannot run now, the winner is not confirmed.
    c.default_us = c.candidate_us = {};
    c.converged = c.confirmed = false;
    c.failure = std::string(error_kind_name(e.kind())) + ": " + e.what();
  }
  return c;
}

std::string confirm_text(const Verdict& w) {
  return "confirming " + group_text(w) + " · " + config_text(w.config) + " vs default " + config_text(w.default_config);
}

// Shared between the device workers: results, journal, progress.
struct Shared {
  Session& session;
  Journal* journal;
  const ProgressFn& progress;
  std::mutex mutex;
  size_t done = 0, total = 0;
  std::map<int, double> eta_by_device;
};

void report(Shared& sh, int device, const std::string& current, double eta_s, bool finished_one) {
  std::lock_guard lock(sh.mutex);
  if (finished_one) ++sh.done;
  sh.eta_by_device[device] = eta_s;
  if (!sh.progress) return;
  double eta = 0;
  for (const auto& [dev, e] : sh.eta_by_device) eta = std::max(eta, e);
  sh.progress({sh.done, sh.total, current, eta, device});
}

void record(Shared& sh, Result r) {
  std::lock_guard lock(sh.mutex);
  if (sh.journal) sh.journal->append(r);  // on disk before the sweep goes on
  sh.session.results.push_back(std::move(r));
}

void record(Shared& sh, Confirmation c) {
  std::lock_guard lock(sh.mutex);
  if (sh.journal) sh.journal->append(c);
  sh.session.confirmations.push_back(std::move(c));
}


// What a device's worker knows before it starts: results and confirmed groups from a resumed journal.
struct DeviceStart {
  std::vector<Result> results;
  std::set<GroupKey> confirmed;
};

void run_device(Device& device, SessionDevice& sd, Shared& sh, const std::set<ItemKey>& done, DeviceStart start,
                const CancelFlag& cancel) {
  const SweepOptions& options = sh.session.options;
  const uint64_t seed = options.seed;
  const int dev = sd.info.index;
  const auto& items = sd.plan.items;
  std::vector<const PlanItem*> todo;
  for (const auto& it : items)
    if (!done.count(key_of(dev, it))) todo.push_back(&it);
  // ETA: the a-priori estimate of what remains, scaled by how fast estimates have come true so far.
  std::vector<double> est(todo.size());
  double remaining = 0;
  for (size_t i = 0; i < todo.size(); ++i)
    remaining += est[i] = detail::item_seconds(*todo[i], options, sd.copy_bandwidth_gbs);
  double est_done = 0, measured_s = 0;  // a-priori seconds of the results done, and what they took
  auto eta = [&] { return remaining * (est_done > 0 ? measured_s / est_done : 1.0); };

  // Per (shape, ncols) group: its results so far and how many planned items still lack one.
  std::map<GroupKey, std::vector<Result>> group_results;
  std::map<GroupKey, size_t> missing;
  for (auto& r : start.results) group_results[r.group()].push_back(std::move(r));
  for (const auto& it : items) missing[group_of(dev, it)] += !done.count(key_of(dev, it));
  // The winner a complete group's results pick, if it still needs its interleaved confirmation.
  auto pending_winner = [&](const GroupKey& g) -> std::optional<Verdict> {
    if (!options.confirm || start.confirmed.count(g) || missing[g] > 0) return std::nullopt;
    std::vector<const Result*> ptrs;
    for (const auto& r : group_results[g]) ptrs.push_back(&r);
    std::optional<Verdict> w = detail::group_verdict(ptrs);
    if (!w || !w->is_winner()) return std::nullopt;
    return w;
  };

  sd.telemetry_start = device.telemetry();
  size_t next_todo = 0;  // index into todo/est of the next item to measure
  for (size_t a = 0; a < items.size();) {
    // One shape at a time (the plan keeps a shape's items together): its data serves every ncols
    // and config still to measure, and the confirmations of its groups.
    size_t b = a;
    while (b < items.size() && items[b].shape() == items[a].shape())
      ++b;
    const size_t todo_begin = next_todo;
    int max_ncols = 0;
    while (next_todo < todo.size() && todo[next_todo] >= &items[a] && todo[next_todo] < &items[b])
      max_ncols = std::max(max_ncols, todo[next_todo++]->ncols);
    const size_t todo_end = next_todo;
    for (size_t i = a; i < b; ++i)  // groups complete before this run that still need confirming
      if (pending_winner(group_of(dev, items[i]))) max_ncols = std::max(max_ncols, items[i].ncols);
    const PlanItem& first = todo_begin < todo_end ? *todo[todo_begin] : items[a];
    const size_t range_begin = a;
    a = b;
    if (max_ncols == 0) continue;  // nothing left to do for this shape

    check_cancel(cancel);
    report(sh, dev, "preparing " + shape_text(first), eta(), false);
    std::optional<ShapeData> data;
    try {
      data = prepare_shape(device, first, max_ncols, glu_of_architecture(sh.session.model.architecture),
                           defaults::kernel_variant(sh.session.grid.engine), options,
                           shape_seed(seed, first.type, first.n, first.k), cancel);
    } catch (const Error& e) {
      // Out of memory on a huge shape: every item of the shape records why; a lost device stops.
      if (e.kind() == ErrorKind::Cancelled || !device_healthy(device)) throw;
      for (size_t i = todo_begin; i < todo_end; ++i) {
        Result r = blank_result(device, *todo[i]);
        record_error(r, e);
        record(sh, std::move(r));
        remaining -= est[i];
        report(sh, dev, item_text(*todo[i]), eta(), true);
      }
      continue;
    }
    warm_up_device(device, first, *data, options.shape_warmup_s, cancel);
    size_t t = todo_begin;
    for (size_t i = range_begin; i < b; ++i) {
      const PlanItem& it = items[i];
      const GroupKey g = group_of(dev, it);
      if (t < todo_end && todo[t] == &it) {
        report(sh, dev, item_text(it), eta(), false);
        const auto t0 = Clock::now();
        Result r = measure(device, it, *data, options, cancel);
        measured_s += seconds_since(t0);
        remaining -= est[t];
        est_done += est[t];
        ++t;
        group_results[g].push_back(r);
        --missing[g];
        record(sh, std::move(r));
        report(sh, dev, item_text(it), eta(), true);
      }
      // After a group's last planned item: confirm its winner before the sweep moves on.
      if (i + 1 < b && group_of(dev, items[i + 1]) == g) continue;
      if (const std::optional<Verdict> w = pending_winner(g)) {
        report(sh, dev, confirm_text(*w), eta(), false);
        record(sh, confirm_winner(device, *w, *data, options, cancel));
        start.confirmed.insert(g);
      }
    }
  }
  sd.telemetry_end = device.telemetry();
}

}  // namespace

namespace {
// Options come from the command line or from a resumed journal: both are checked before any launch.
void check_options(const SweepOptions& o) {
  if (o.batch < 1 || o.launches_per_sample < 1 || o.min_samples < 1 || o.max_samples < o.min_samples ||
      !(o.ci_target > 0) || !(o.time_cap_s > 0) || !(o.shape_warmup_s >= 0) || !(o.memory_fraction > 0) ||
      o.memory_fraction > 1 || o.warmup < 0 || (o.confirm && !(o.confirm_time_s > 0)))
    fail(ErrorKind::BadInput,
         "invalid sweep options (batch, launches per sample, samples, CI target, time cap, memory fraction or "
         "confirmation time)");
}
}  // namespace

Session new_session(const SweepSetup& setup, std::span<Device* const> devices) {
  validate_grid(setup.grid);
  if (devices.empty()) fail(ErrorKind::NoDevice, "no HIP or CUDA device found");
  check_options(setup.options);
  Session s;
  s.id = new_session_id();
  s.created = utc_now_iso8601();
  s.tool_version = TEMPER_VERSION;
  s.build = this_build();
  s.model = setup.model;
  s.shapes = setup.shapes;
  s.grid = setup.grid;
  s.kernel_source = setup.kernel_source;
  if (!s.kernel_source.is_engine() && s.kernel_source.engine.empty()) s.kernel_source.engine = s.grid.engine;
  s.options = setup.options;
  while (s.options.seed == 0) s.options.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  std::set<int> indices;
  for (Device* d : devices) {
    SessionDevice sd;
    sd.info = d->info();
    if (!indices.insert(sd.info.index).second)
      fail(ErrorKind::BadInput, "device index " + std::to_string(sd.info.index) + " given twice");
    if (!is_fake(sd.info))
      if (const GpuSpec* spec = match_device(sd.info)) sd.spec_id = spec->id;
    // Copy bandwidth with a buffer well past the last-level cache.
    const uint64_t llc = last_level_cache(sd.info);
    uint64_t bytes = std::max<uint64_t>(4 * llc, 64ull << 20);
    if (sd.info.memory_bytes > 0) bytes = std::min<uint64_t>(bytes, sd.info.memory_bytes / 8);
    sd.copy_bandwidth_gbs = d->copy_bandwidth_gbs(static_cast<size_t>(bytes));
    sd.plan = make_plan(s.shapes, s.grid, *d);
    s.devices.push_back(std::move(sd));
  }
  return s;
}

double estimated_seconds(const Session& session) {
  std::set<ItemKey> done;
  for (const auto& r : session.results) done.insert(key_of(r));
  double slowest = 0;
  for (const auto& sd : session.devices) {
    Plan left = sd.plan;
    std::erase_if(left.items, [&](const PlanItem& it) { return done.count(key_of(sd.info.index, it)) > 0; });
    slowest = std::max(slowest, estimated_seconds(left, session.options, sd.copy_bandwidth_gbs));
  }
  return slowest;
}

void run_session(Session& session, std::span<Device* const> devices, Journal* journal, const ProgressFn& progress,
                 const CancelFlag& cancel) {
  check_options(session.options);
  if (devices.size() != session.devices.size())
    fail(ErrorKind::Internal, "run_session: " + std::to_string(devices.size()) + " devices for a session of " +
                                  std::to_string(session.devices.size()));
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& now = devices[i]->info();
    const DeviceInfo& then = session.devices[i].info;
    if (now.name != then.name || now.arch != then.arch || now.index != then.index || now.api != then.api)
      fail(ErrorKind::BadInput, "the session was planned on device " + std::to_string(then.index) + " (" + then.name +
                                    ", " + then.arch + ") but device " + std::to_string(now.index) + " is " +
                                    now.name + " (" + now.arch + ")");
  }
  session.status = "running";
  session.finished.clear();
  std::erase_if(session.results, [](const Result& r) { return r.status == ResultStatus::Invalid; });
  std::set<ItemKey> done;
  for (const auto& r : session.results) done.insert(key_of(r));

  Shared sh{session, journal, progress, {}, 0, 0, {}};
  for (const auto& sd : session.devices) {
    sh.total += sd.plan.items.size();
    for (const auto& it : sd.plan.items) sh.done += done.count(key_of(sd.info.index, it));
  }

  // Each worker gets its device's earlier results and confirmed groups (a resumed journal): the
  // shared vectors grow under the lock while workers run, so they read copies.
  std::vector<DeviceStart> starts(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    const int index = session.devices[i].info.index;
    for (const auto& r : session.results)
      if (r.device == index) starts[i].results.push_back(r);
    for (const auto& c : session.confirmations)
      if (c.device == index) starts[i].confirmed.insert(c.group());
  }
  std::vector<std::exception_ptr> errors(devices.size());
  auto work = [&](size_t i) {
    try {
      run_device(*devices[i], session.devices[i], sh, done, std::move(starts[i]), cancel);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (devices.size() == 1) {
    work(0);
  } else {
    std::vector<std::thread> workers;
    for (size_t i = 0; i < devices.size(); ++i) workers.emplace_back(work, i);
    for (auto& t : workers) t.join();
  }

  bool failed = false;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Cancelled) continue;
      // Journal failures (disk full) end the run like a device fault: everything so far is kept.
      session.devices[i].error = std::string(error_kind_name(e.kind())) + ": " + e.what();
    } catch (const std::exception& e) {
      session.devices[i].error = std::string("internal error: ") + e.what();
    }
    failed = true;
  }
  finish_session(session);
  session.finished = utc_now_iso8601();
  session.status = failed ? "failed" : cancel.load() ? "cancelled" : "complete";
}

std::vector<std::unique_ptr<Device>> open_all(Backend& backend) {
  std::vector<std::unique_ptr<Device>> out;
  for (const auto& info : backend.devices()) out.push_back(backend.open(info.index));
  return out;
}

}  // namespace temper
