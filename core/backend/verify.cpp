// Device verification: every mmvq instantiation on random valid data against the CPU reference.
#include "temper/verify.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "temper/engine_versions.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"
#include "temper/mmvq_group.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/fp.h"
#include "temper/quant/reference.h"

namespace temper {

namespace {

constexpr int kMaxNcols = 8;

// Distinct seeds per purpose from one run seed (splitmix64 finaliser).
uint64_t derive(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t z = seed ^ (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL) ^ (c * 0x165667B19E3779F9ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Calls `each` with every comma-separated item of `text`, empty ones included, in order.
template <class Each>
void for_each_item(std::string_view text, const Each& each) {
  while (true) {
    const auto comma = text.find(',');
    each(text.substr(0, comma));
    if (comma == std::string_view::npos) return;
    text.remove_prefix(comma + 1);
  }
}

// The `k` a shape asks for, made valid for `type`: 0 means the smallest K of the type.
int shape_k(const VerifyShape& s, GgmlType type) {
  const int block = int(type_info(type).block_size);
  if (s.k == 0) return std::max(256, block);
  return s.k;
}

}  // namespace

int half_ulp_distance(quant::half_bits a, quant::half_bits b) {
  // Map sign-magnitude bits onto a monotonic integer line where +0 and -0 meet.
  auto line = [](quant::half_bits h) { return (h & 0x8000) ? -int(h & 0x7FFF) : int(h & 0x7FFF); };
  return std::abs(line(a) - line(b));
}

Q8_1Check compare_q8_1(std::span<const quant::BlockQ8_1> device, std::span<const quant::BlockQ8_1> reference) {
  Q8_1Check c;
  if (device.size() != reference.size())
    fail(ErrorKind::Internal, "compare_q8_1: " + std::to_string(device.size()) + " device blocks vs " +
                                  std::to_string(reference.size()) + " reference blocks");
  c.blocks = int(device.size());
  auto note = [&](const std::string& text) {
    if (c.first_failure.empty()) c.first_failure = text;
  };
  for (size_t b = 0; b < device.size(); ++b) {
    const auto& g = device[b];
    const auto& r = reference[b];
    for (int i = 0; i < quant::QK8_1; ++i) {
      if (g.qs[i] == r.qs[i]) continue;
      ++c.quant_mismatches;
      note("block " + std::to_string(b) + ": q[" + std::to_string(i) + "] = " + std::to_string(g.qs[i]) +
           ", expected " + std::to_string(r.qs[i]));
    }
    const int dd = half_ulp_distance(g.d, r.d), ds = half_ulp_distance(g.s, r.s);
    c.worst_ulps = std::max({c.worst_ulps, dd, ds});
    if (dd > 1) {
      ++c.scale_mismatches;
      note("block " + std::to_string(b) + ": d = " + fmt(quant::fp16_to_fp32(g.d)) + ", expected " +
           fmt(quant::fp16_to_fp32(r.d)) + " (" + std::to_string(dd) + " ulps)");
    }
    if (ds > 1) {
      ++c.sum_mismatches;
      note("block " + std::to_string(b) + ": s = " + fmt(quant::fp16_to_fp32(g.s)) + ", expected " +
           fmt(quant::fp16_to_fp32(r.s)) + " (" + std::to_string(ds) + " ulps)");
    }
  }
  return c;
}

OutputCheck compare_outputs(std::span<const float> device, std::span<const Expected> expected, int n) {
  OutputCheck c;
  if (device.size() != expected.size())
    fail(ErrorKind::Internal, "compare_outputs: " + std::to_string(device.size()) + " values vs " +
                                  std::to_string(expected.size()) + " expected");
  c.values = int(device.size());
  const int rows = std::max(n, 1);
  for (size_t i = 0; i < device.size(); ++i) {
    const float v = device[i];
    const Expected& e = expected[i];
    const std::string where = "row " + std::to_string(int(i) % rows) + " column " + std::to_string(int(i) / rows);
    auto note = [&](const std::string& text) {
      if (c.first_failure.empty()) c.first_failure = where + ": " + text;
    };
    if (std::isnan(v)) {
      ++c.unwritten;
      note("not written (still NaN), expected " + fmt(e.exact));
      continue;
    }
    if (std::isinf(v)) {
      ++c.nonfinite;
      note(fmt(v) + ", expected " + fmt(e.exact));
      continue;
    }
    const double err = std::abs(double(v) - e.exact);
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (e.tolerance > 0) c.worst_ratio = std::max(c.worst_ratio, err / e.tolerance);
    if (!(err <= e.tolerance)) {
      ++c.wrong;
      note(fmt(v) + ", expected " + fmt(e.exact) + " ± " + fmt(e.tolerance) + " (integer q8_1 dot)");
    }
    const double err64 = std::abs(double(v) - e.f64);
    if (e.f64_tolerance > 0) c.worst_f64_ratio = std::max(c.worst_f64_ratio, err64 / e.f64_tolerance);
    if (!(err64 <= e.f64_tolerance)) {
      ++c.wrong_f64;
      note(fmt(v) + ", expected " + fmt(e.f64) + " ± " + fmt(e.f64_tolerance) + " (float64 dequantized dot)");
    }
  }
  return c;
}

std::vector<Expected> norm_reference(std::span<const float> x, std::span<const float> w, int k, int rows, float eps) {
  if (k < 1 || rows < 1 || x.size() != size_t(k) * size_t(rows) || w.size() != size_t(k))
    fail(ErrorKind::Internal, "norm_reference: " + std::to_string(x.size()) + " inputs and " + std::to_string(w.size()) +
                                  " weights for " + std::to_string(rows) + " rows of " + std::to_string(k));
  constexpr double u = 0x1p-24;
  const double relative = 0.5 * (k - 1) * u + 8 * u;
  std::vector<Expected> out(x.size());
  for (int r = 0; r < rows; ++r) {
    const float* xr = x.data() + size_t(r) * size_t(k);
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += double(xr[i]) * double(xr[i]);
    const double scale = 1 / std::sqrt(sum / k + double(eps));
    for (int i = 0; i < k; ++i) {
      Expected& e = out[size_t(r) * size_t(k) + size_t(i)];
      e.exact = e.f64 = scale * double(xr[i]) * double(w[size_t(i)]);
      e.tolerance = e.f64_tolerance = std::abs(e.exact) * relative + 1e-30;
    }
  }
  return out;
}

bool VerifyReport::passed() const {
  if (cancelled || !fault.empty()) return false;
  if (cases.empty() && group_cases.empty()) return false;
  if (!std::all_of(norm_cases.begin(), norm_cases.end(), [](const NormVerifyCase& c) { return c.passed(); })) return false;
  return std::all_of(quantizer.begin(), quantizer.end(), [](const QuantizerCase& q) { return q.passed(); }) &&
         std::all_of(cases.begin(), cases.end(), [](const VerifyCase& c) { return c.passed(); }) &&
         std::all_of(group_cases.begin(), group_cases.end(), [](const GroupVerifyCase& c) { return c.passed(); });
}

std::vector<Config> instantiated_configs(const Device& device, GgmlType type, int ncols) {
  std::vector<Config> out;
  for (int w : mmvq::kGridNwarps)
    for (int r : mmvq::kGridRowsPerBlock)
      if (device.has_kernel(type, ncols, {w, r})) out.push_back({w, r});
  return out;
}

std::vector<GgmlType> verifiable_types(const Device& device) {
  std::vector<GgmlType> out;
  for (GgmlType t : quant::supported_types())
    if (!instantiated_configs(device, t, 1).empty()) out.push_back(t);
  return out;
}

namespace {

// One (shape, ncols) activation set: the floats and the q8_1 blocks the device made of them.
struct Activations {
  int ncols = 0;
  std::vector<float> x;                    // ncols × k
  std::vector<quant::BlockQ8_1> q;         // ncols × k/32, downloaded from the device
  DeviceBuffer q_device;
};

// The device is still usable after a failed case? A tiny fill answers; its error is the fault.
std::string probe(Device& device, DeviceBuffer& scratch) {
  try {
    device.fill(scratch, 0xFF);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

// What every output of a plain GEMV must be, column-major like the device's dst.
std::vector<Expected> expected_outputs(GgmlType type, int n, int k, int ncols, const uint8_t* weights, size_t row,
                                       const Activations& a) {
  std::vector<Expected> expected(size_t(n) * size_t(ncols));
  for (int c = 0; c < ncols; ++c) {
    const quant::BlockQ8_1* y = a.q.data() + size_t(c) * size_t(k / quant::QK8_1);
    const float* x = a.x.data() + size_t(c) * size_t(k);
    for (int r = 0; r < n; ++r) {
      const uint8_t* w = weights + size_t(r) * row;
      Expected& e = expected[size_t(c) * size_t(n) + size_t(r)];
      const quant::DotQ8_1 d = quant::dot_q8_1_detail(type, w, y, k);
      e.exact = d.value;
      e.tolerance = quant::tolerance_q8_1(d);
      e.f64 = quant::dot_f64(type, w, x, k);
      e.f64_tolerance = quant::tolerance_f64(type, w, x, k);
    }
  }
  return expected;
}

// Adds one member's check to a group's: counts and worsts; the first failure names the member.
void merge_member(OutputCheck& all, const OutputCheck& member, size_t m) {
  if (all.first_failure.empty() && !member.first_failure.empty())
    all.first_failure = "member " + std::to_string(m) + " " + member.first_failure;
  all.values += member.values;
  all.unwritten += member.unwritten;
  all.nonfinite += member.nonfinite;
  all.wrong += member.wrong;
  all.wrong_f64 += member.wrong_f64;
  all.max_abs_error = std::max(all.max_abs_error, member.max_abs_error);
  all.worst_ratio = std::max(all.worst_ratio, member.worst_ratio);
  all.worst_f64_ratio = std::max(all.worst_f64_ratio, member.worst_f64_ratio);
}

// The member rows of a verified group at a shape: n, then n / (m+1), so no two members end alike.
std::vector<GroupMember> group_members(const std::vector<GgmlType>& types, int n) {
  std::vector<GroupMember> members;
  for (size_t m = 0; m < types.size(); ++m) members.push_back({types[m], std::max(1, n / int(m + 1))});
  return members;
}

}  // namespace

std::vector<std::vector<GgmlType>> parse_group_list(const std::string& text) {
  std::vector<std::vector<GgmlType>> out;
  for_each_item(text, [&](std::string_view item) {
    std::vector<GgmlType> types;
    std::string_view rest = item;
    while (true) {
      const auto plus = rest.find('+');
      const std::string name(rest.substr(0, plus));
      const auto t = name.empty() ? std::vector<GgmlType>{} : parse_type_list(name);  // its errors name the type
      if (t.size() != 1)
        fail(ErrorKind::BadInput, "group '" + std::string(item) + "' in '" + text +
                                      "': expected types joined by +, e.g. q4_K+q4_K+q6_K");
      types.push_back(t[0]);
      if (plus == std::string_view::npos) break;
      rest.remove_prefix(plus + 1);
    }
    std::vector<GgmlType> distinct;
    for (GgmlType t : types)
      if (std::find(distinct.begin(), distinct.end(), t) == distinct.end()) distinct.push_back(t);
    if (types.size() < 2 || types.size() > size_t(mmvq::kGroupMaxMembers) || distinct.size() > 2)
      fail(ErrorKind::BadInput, "group '" + std::string(item) + "': " + std::to_string(types.size()) + " members of " +
                                    std::to_string(distinct.size()) + " types; a group launch takes 2.." +
                                    std::to_string(mmvq::kGroupMaxMembers) + " members of at most 2 types");
    out.push_back(std::move(types));
  });
  return out;
}

VerifyReport run_verification(Device& device, const VerifyOptions& options, const VerifyProgress& progress,
                              const std::atomic<bool>* cancel) {
  VerifyReport report;
  report.device = device.info();
  report.seed = options.seed ? options.seed : std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  if (report.seed == 0) report.seed = 1;

  std::vector<GgmlType> types = options.types.empty() ? verifiable_types(device) : options.types;
  std::vector<int> ncols_list = options.ncols;
  if (ncols_list.empty())
    for (int c = 1; c <= kMaxNcols; ++c) ncols_list.push_back(c);
  for (int c : ncols_list)
    if (c < 1 || c > kMaxNcols) fail(ErrorKind::BadInput, "ncols " + std::to_string(c) + " is outside 1..8");
  for (GgmlType t : types)
    if (!quant::has_reference(t))
      fail(ErrorKind::BadInput, "no CPU reference for " + std::string(type_name(t)) + ": it cannot be verified");

  // The plan first, so progress knows its total.
  struct Planned {
    GgmlType type;
    int ncols;
    std::vector<Config> configs;
    std::vector<mmvq::KernelVariant> variants;
  };
  const std::vector<mmvq::KernelVariant> variants =
      options.variants.empty() ? std::vector<mmvq::KernelVariant>{default_engine_version().variant} : options.variants;
  std::vector<Planned> plan;
  for (GgmlType t : types)
    for (int c : ncols_list) {
      std::vector<mmvq::KernelVariant> at_c;
      for (mmvq::KernelVariant v : variants)
        if (v != mmvq::KernelVariant::GgmlD99724fPipelined || c == 1) at_c.push_back(v);
      if (auto configs = instantiated_configs(device, t, c); !configs.empty() && !at_c.empty())
        plan.push_back({t, c, std::move(configs), std::move(at_c)});
    }
  // Groups: per group, width and config, the variants that have group launches.
  struct PlannedGroup {
    std::vector<GgmlType> types;
    int ncols;
    Config config;
  };
  std::vector<mmvq::KernelVariant> group_variants;
  for (mmvq::KernelVariant v : variants)
    if (v != mmvq::KernelVariant::GgmlD99724fPipelined) group_variants.push_back(v);
  std::vector<PlannedGroup> group_plan;
  for (const auto& group : options.groups) {
    group_weight_types({group_members(group, 1), 256, 1});  // a malformed group is the caller's error, before any work
    for (int c : ncols_list)
      for (int w : mmvq::kGroupNwarps)
        for (int r : mmvq::kGroupRowsPerBlock)
          if (c <= mmvq::kGroupMaxNcols && device.has_group_kernel({group_members(group, 1), 256, c}, {w, r}))
            group_plan.push_back({group, c, {w, r}});
  }
  // The norm: each row length at 1, 3 and 8 rows.
  constexpr int kNormRows[] = {1, 3, 8};
  for (int k : options.norms)
    if (k <= 0 || k % quant::QK8_1 != 0)
      fail(ErrorKind::BadInput, "norm row length " + std::to_string(k) + ": expected a positive multiple of 32");
  if (!options.norms.empty() && !device.has_norm_kernel())
    fail(ErrorKind::BadInput, device.info().name + " has no kernel for the norm that writes q8_1 activations");
  size_t total = 0;
  for (const auto& p : plan) total += p.configs.size() * p.variants.size();
  total += group_plan.size() * group_variants.size();
  total *= options.shapes.size();
  total += options.norms.size() * std::size(kNormRows);
  size_t done = 0;
  if (progress) progress(0, total);
  if (total == 0) return report;

  auto cancelled = [&] { return cancel && cancel->load(); };
  DeviceBuffer scratch;  // probe()'s, allocated before the first case
  // One case: `run` launches and fills its check; a GPU fault or a launch the device refuses becomes
  // the case's error. False when the device is unusable after it (report.fault set): the run stops.
  auto record = [&](auto& cases, auto c, const auto& run) {
    try {
      run(c);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::GpuFault && e.kind() != ErrorKind::BadInput) throw;
      c.error = e.what();
    }
    const bool failed = !c.error.empty();
    cases.push_back(std::move(c));
    if (failed)
      if (const std::string why = probe(device, scratch); !why.empty()) {
        report.fault = why;
        return false;
      }
    if (progress) progress(++done, total);
    return true;
  };

  try {
    scratch = device.alloc(256);
    for (size_t s = 0; s < options.shapes.size(); ++s) {
      const VerifyShape& shape = options.shapes[s];
      if (shape.n < 1 || shape.k < 0)
        fail(ErrorKind::BadInput, "verify shape n=" + std::to_string(shape.n) + " k=" + std::to_string(shape.k) +
                                      ": n must be positive and k a multiple of the type's block size");
      // Activations per distinct K (K = 0 resolves per type) and ncols, shared by all types.
      std::map<std::pair<int, int>, Activations> acts;
      auto activations = [&](int k, int ncols) -> Activations& {
        auto [it, fresh] = acts.try_emplace({k, ncols});
        Activations& a = it->second;
        if (!fresh) return a;
        a.ncols = ncols;
        a.x.resize(size_t(k) * size_t(ncols));
        quant::fill_random_activations(a.x.data(), int64_t(a.x.size()), derive(report.seed, 1, uint64_t(k), uint64_t(ncols)));
        const size_t nblocks = a.x.size() / quant::QK8_1;
        DeviceBuffer x_device = device.alloc(a.x.size() * sizeof(float));
        device.upload(x_device, a.x.data(), a.x.size() * sizeof(float));
        a.q_device = device.alloc(nblocks * sizeof(quant::BlockQ8_1));
        device.fill(a.q_device, 0xFF);
        QuantizerCase qc;
        qc.k = k;
        qc.ncols = ncols;
        a.q.resize(nblocks);
        try {
          device.quantize_q8_1(x_device, a.q_device, k, ncols);
          device.download(a.q.data(), a.q_device, nblocks * sizeof(quant::BlockQ8_1));
          std::vector<quant::BlockQ8_1> ref(nblocks);
          quant::quantize_q8_1(a.x.data(), ref.data(), int64_t(a.x.size()), quant::Q8_1Style::Gpu);
          qc.check = compare_q8_1(a.q, ref);
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::GpuFault && e.kind() != ErrorKind::BadInput) throw;
          qc.error = e.what();
          report.quantizer.push_back(qc);
          throw;  // without activations nothing can be checked
        }
        report.quantizer.push_back(qc);
        return a;
      };

      for (GgmlType type : types) {
        const int k = shape_k(shape, type);
        const auto rb = row_bytes(type, uint64_t(k));
        if (!rb || k % quant::QK8_1 != 0)
          fail(ErrorKind::BadInput, "verify shape k=" + std::to_string(k) + " is not a multiple of " +
                                        std::string(type_name(type)) + "'s block size " +
                                        std::to_string(type_info(type).block_size));
        bool any = false;
        for (const auto& p : plan) any = any || p.type == type;
        if (!any) continue;

        std::vector<uint8_t> weights(size_t(*rb) * size_t(shape.n));
        quant::fill_random(type, weights.data(), shape.n, k, derive(report.seed, 2, uint64_t(type), uint64_t(k)));
        DeviceBuffer w_device = device.alloc(weights.size() + size_t(*rb) * mmvq::kWeightPaddingRows);
        device.upload(w_device, weights.data(), weights.size());

        for (const auto& p : plan) {
          if (p.type != type) continue;
          Activations& a = activations(k, p.ncols);
          const std::vector<Expected> expected = expected_outputs(type, shape.n, k, p.ncols, weights.data(), size_t(*rb), a);
          DeviceBuffer dst = device.alloc(expected.size() * sizeof(float));
          std::vector<float> out(expected.size());
          for (Config config : p.configs) {
            for (mmvq::KernelVariant variant : p.variants) {
              if (cancelled()) {
                report.cancelled = true;
                return report;
              }
              const GemvProblem problem{ShapeKey{type, shape.n, k}, p.ncols, variant};
              VerifyCase vc;
              static_cast<ShapeKey&>(vc) = {type, shape.n, k};
              vc.ncols = p.ncols;
              vc.config = config;
              vc.variant = variant;
              const bool usable = record(report.cases, vc, [&](VerifyCase& c) {
                device.fill(dst, 0xFF);  // NaN everywhere: an unwritten output stays NaN
                device.gemv(problem, config, w_device, a.q_device, dst);
                device.download(out.data(), dst, out.size() * sizeof(float));
                c.check = compare_outputs(out, expected, shape.n);
              });
              if (!usable) return report;
            }
          }
        }
      }

      // Same-input groups at this shape: every member's weights once, then each planned launch.
      for (const auto& group : options.groups) {
        GemvGroupProblem problem{group_members(group, shape.n), 0, 1};
        for (GgmlType t : group) problem.k = std::max(problem.k, shape_k(shape, t));
        for (GgmlType t : group)
          if (!row_bytes(t, uint64_t(problem.k)) || problem.k % quant::QK8_1 != 0)
            fail(ErrorKind::BadInput, "verify shape k=" + std::to_string(problem.k) + " is not a multiple of " +
                                          std::string(type_name(t)) + "'s block size " +
                                          std::to_string(type_info(t).block_size));
        std::vector<std::vector<uint8_t>> weights;
        std::vector<DeviceBuffer> w_device;
        for (size_t m = 0; m < group.size(); ++m) {
          const GroupMember& member = problem.members[m];
          const size_t row = size_t(*row_bytes(member.type, uint64_t(problem.k)));
          weights.emplace_back(row * size_t(member.n));
          quant::fill_random(member.type, weights.back().data(), member.n, problem.k,
                             derive(report.seed, 3, uint64_t(member.type), uint64_t(problem.k) * 8 + m));
          w_device.push_back(device.alloc(weights.back().size()));
          device.upload(w_device.back(), weights.back().data(), weights.back().size());
        }
        std::vector<const DeviceBuffer*> w_ptrs;
        for (const DeviceBuffer& b : w_device) w_ptrs.push_back(&b);
        for (const PlannedGroup& g : group_plan) {
          if (g.types != group) continue;
          problem.ncols = g.ncols;
          Activations& a = activations(problem.k, g.ncols);
          std::vector<std::vector<Expected>> expected;
          std::vector<DeviceBuffer> dst;
          std::vector<DeviceBuffer*> dst_ptrs;
          for (size_t m = 0; m < group.size(); ++m) {
            const GroupMember& member = problem.members[m];
            expected.push_back(expected_outputs(member.type, member.n, problem.k, g.ncols, weights[m].data(),
                                                size_t(*row_bytes(member.type, uint64_t(problem.k))), a));
            dst.push_back(device.alloc(expected.back().size() * sizeof(float)));
          }
          for (DeviceBuffer& b : dst) dst_ptrs.push_back(&b);
          for (mmvq::KernelVariant variant : group_variants) {
            if (cancelled()) {
              report.cancelled = true;
              return report;
            }
            problem.variant = variant;
            GroupVerifyCase gc;
            gc.problem = problem;
            gc.config = g.config;
            const bool usable = record(report.group_cases, gc, [&](GroupVerifyCase& c) {
              for (DeviceBuffer& b : dst) device.fill(b, 0xFF);
              device.gemv_group(problem, g.config, w_ptrs, a.q_device, dst_ptrs);
              for (size_t m = 0; m < group.size(); ++m) {
                std::vector<float> out(expected[m].size());
                device.download(out.data(), dst[m], out.size() * sizeof(float));
                merge_member(c.check, compare_outputs(out, expected[m], problem.members[m].n), m);
              }
            });
            if (!usable) return report;
          }
        }
      }
    }
    for (int k : options.norms) {
      std::vector<float> w(static_cast<size_t>(k));
      quant::fill_random_activations(w.data(), k, derive(report.seed, 4, uint64_t(k)));
      DeviceBuffer w_device = device.alloc(w.size() * sizeof(float));
      device.upload(w_device, w.data(), w.size() * sizeof(float));
      for (int rows : kNormRows) {
        if (cancelled()) {
          report.cancelled = true;
          return report;
        }
        const float eps = 1e-6f;
        std::vector<float> x(size_t(k) * size_t(rows));
        quant::fill_random_activations(x.data(), int64_t(x.size()), derive(report.seed, 5, uint64_t(k), uint64_t(rows)));
        DeviceBuffer x_device = device.alloc(x.size() * sizeof(float)), dst = device.alloc(x.size() * sizeof(float));
        DeviceBuffer y = device.alloc(x.size() / quant::QK8_1 * sizeof(quant::BlockQ8_1));
        device.upload(x_device, x.data(), x.size() * sizeof(float));
        NormVerifyCase nc;
        nc.k = k;
        nc.rows = rows;
        const bool usable = record(report.norm_cases, nc, [&](NormVerifyCase& c) {
          device.fill(dst, 0xFF);
          device.fill(y, 0xFF);
          device.rms_norm_q8_1(x_device, w_device, dst, y, k, rows, eps);
          std::vector<float> out(x.size());
          device.download(out.data(), dst, out.size() * sizeof(float));
          c.check = compare_outputs(out, norm_reference(x, w, k, rows, eps), k);
          std::vector<quant::BlockQ8_1> q(x.size() / quant::QK8_1), ref(q.size());
          device.download(q.data(), y, q.size() * sizeof(quant::BlockQ8_1));
          quant::quantize_q8_1(out.data(), ref.data(), int64_t(out.size()), quant::Q8_1Style::Gpu);
          c.q8 = compare_q8_1(q, ref);
        });
        if (!usable) return report;
      }
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::GpuFault) throw;
    report.fault = e.what();  // out of memory or a dead device: keep what was checked
  }
  return report;
}

std::vector<GgmlType> parse_type_list(const std::string& text) {
  std::vector<GgmlType> out;
  for_each_item(text, [&](std::string_view item) {
    if (item.empty()) fail(ErrorKind::BadInput, "empty type name in '" + text + "' (expected e.g. q4_0,q4_K)");
    const auto t = parse_type(item);
    if (!t) fail(ErrorKind::BadInput, "unknown type '" + std::string(item) + "' (expected a ggml type such as q4_K)");
    if (!type_info(*t).quantized)
      fail(ErrorKind::BadInput, "type '" + std::string(item) + "' is not a quantized type; mmvq needs one");
    if (std::find(out.begin(), out.end(), *t) == out.end()) out.push_back(*t);
  });
  return out;
}

std::vector<int> parse_ncols_list(const std::string& text) {
  auto number = [&](std::string_view s) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 1 || v > kMaxNcols)
      fail(ErrorKind::BadInput, "ncols '" + std::string(s) + "' in '" + text + "': expected a number 1..8");
    return v;
  };
  std::vector<int> out;
  for_each_item(text, [&](std::string_view item) {
    if (const auto dash = item.find('-'); dash != std::string_view::npos) {
      const int lo = number(item.substr(0, dash)), hi = number(item.substr(dash + 1));
      if (lo > hi) fail(ErrorKind::BadInput, "ncols range '" + std::string(item) + "' runs backwards");
      for (int v = lo; v <= hi; ++v) out.push_back(v);
    } else {
      out.push_back(number(item));
    }
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> parse_norm_list(const std::string& text) {
  std::vector<int> out;
  for_each_item(text, [&](std::string_view item) {
    int v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 32 || v > (1 << 20) || v % 32 != 0)
      fail(ErrorKind::BadInput, "norm row length '" + std::string(item) + "' in '" + text + "': expected a multiple of 32 from 32 to 1048576");
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  });
  return out;
}

std::string_view variant_name(mmvq::KernelVariant v) {
  static const std::string pipelined = std::string(engine_version(EngineFamily::HalveIters).commit) + "-pipelined";
  if (v == mmvq::KernelVariant::GgmlD99724fPipelined) return pipelined;
  for (const EngineVersion& e : kEngineVersions)
    if (e.variant == v) return e.commit;
  return "?";
}

std::string variant_names() {
  std::string out;
  for (int v = 0; v < mmvq::kKernelVariants; ++v)
    out += (v ? ", " : "") + std::string(variant_name(static_cast<mmvq::KernelVariant>(v)));
  return out;
}

std::vector<mmvq::KernelVariant> parse_variant_list(const std::string& text) {
  std::vector<mmvq::KernelVariant> all;
  for (int v = 0; v < mmvq::kKernelVariants; ++v) all.push_back(static_cast<mmvq::KernelVariant>(v));
  if (text == "all") return all;
  std::vector<mmvq::KernelVariant> out;
  for_each_item(text, [&](std::string_view item) {
    const auto it = std::find_if(all.begin(), all.end(), [&](mmvq::KernelVariant v) { return variant_name(v) == item; });
    if (it == all.end())
      fail(ErrorKind::BadInput, "unknown kernel variant '" + std::string(item) + "' in '" + text +
                                    "' (expected all or a list of " + variant_names() + ")");
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
  });
  return out;
}

std::string format_report(const VerifyReport& report, int max_failures) {
  std::ostringstream o;
  const DeviceInfo& d = report.device;
  o << "device: " << d.name << " (" << d.api << ", " << d.arch << ")  seed: " << report.seed << "\n";

  int q_pass = 0, q_worst = 0;
  for (const auto& q : report.quantizer) {
    q_pass += q.passed();
    q_worst = std::max(q_worst, q.check.worst_ulps);
  }
  o << "q8_1 quantizer: " << q_pass << "/" << report.quantizer.size() << " passed (worst d/s distance " << q_worst
    << " ulp)\n\n";

  // Pass table: rows types, columns ncols.
  std::vector<GgmlType> types;
  std::vector<int> ncols;
  for (const auto& c : report.cases) {
    if (std::find(types.begin(), types.end(), c.type) == types.end()) types.push_back(c.type);
    if (std::find(ncols.begin(), ncols.end(), c.ncols) == ncols.end()) ncols.push_back(c.ncols);
  }
  std::sort(ncols.begin(), ncols.end());
  char cell[64];
  std::snprintf(cell, sizeof cell, "%-8s", "type");
  o << cell;
  for (int c : ncols) {
    std::snprintf(cell, sizeof cell, " %8s", ("ncols " + std::to_string(c)).c_str());
    o << cell;
  }
  o << "  worst/tol\n";
  for (GgmlType t : types) {
    std::snprintf(cell, sizeof cell, "%-8s", std::string(type_name(t)).c_str());
    o << cell;
    double worst = 0;
    for (int n : ncols) {
      int pass = 0, all = 0;
      for (const auto& c : report.cases)
        if (c.type == t && c.ncols == n) {
          ++all;
          pass += c.passed();
          worst = std::max(worst, c.check.worst_ratio);
        }
      const std::string text = all == 0 ? "-" : std::to_string(pass) + "/" + std::to_string(all) + (pass == all ? "" : "!");
      std::snprintf(cell, sizeof cell, " %8s", text.c_str());
      o << cell;
    }
    std::snprintf(cell, sizeof cell, "  %.3f", worst);
    o << cell << "\n";
  }

  size_t passed = 0;
  for (const auto& c : report.cases) passed += c.passed();
  o << "\n" << passed << "/" << report.cases.size() << " instantiations passed";
  if (report.cancelled) o << " (cancelled)";
  o << "\n";
  // Groups: a line per member set, passed launches over all widths, configs and variants.
  std::vector<std::string> group_names;
  for (const auto& c : report.group_cases) {
    std::string name;
    for (const GroupMember& m : c.problem.members) name += (name.empty() ? "" : "+") + std::string(type_name(m.type));
    if (std::find(group_names.begin(), group_names.end(), name) == group_names.end()) group_names.push_back(name);
  }
  for (const std::string& name : group_names) {
    int pass = 0, all = 0;
    double worst = 0;
    for (const auto& c : report.group_cases) {
      std::string n;
      for (const GroupMember& m : c.problem.members) n += (n.empty() ? "" : "+") + std::string(type_name(m.type));
      if (n != name) continue;
      ++all;
      pass += c.passed();
      worst = std::max(worst, c.check.worst_ratio);
    }
    char worst_text[32];
    std::snprintf(worst_text, sizeof worst_text, "%.3f", worst);
    o << "group " << name << ": " << pass << "/" << all << " launches passed (worst/tol " << worst_text << ")\n";
  }
  if (!report.norm_cases.empty()) {
    int pass = 0, worst_ulps = 0;
    double worst = 0;
    for (const auto& c : report.norm_cases) {
      pass += c.passed();
      worst = std::max(worst, c.check.worst_ratio);
      worst_ulps = std::max(worst_ulps, c.q8.worst_ulps);
    }
    char worst_text[32];
    std::snprintf(worst_text, sizeof worst_text, "%.3f", worst);
    o << "norm with q8_1: " << pass << "/" << report.norm_cases.size() << " launches passed (output worst/bound " << worst_text
      << ", q8_1 d/s worst " << worst_ulps << " ulp)\n";
  }
  int listed = 0;
  for (const auto& q : report.quantizer) {
    if (q.passed()) continue;
    if (listed++ < max_failures)
      o << "FAIL q8_1 quantizer k=" << q.k << " ncols=" << q.ncols << ": "
        << (q.error.empty() ? q.check.first_failure : q.error) << "\n";
  }
  for (const auto& c : report.cases) {
    if (c.passed()) continue;
    if (listed++ < max_failures)
      o << "FAIL " << type_name(c.type) << " n=" << c.n << " k=" << c.k << " ncols=" << c.ncols << " "
        << "(" << config_words(c.config) << ", " << variant_name(c.variant)
        << "): " << (c.error.empty() ? c.check.first_failure : c.error) << "\n";
  }
  for (const auto& c : report.group_cases) {
    if (c.passed()) continue;
    if (listed++ < max_failures)
      o << "FAIL group " << group_text(c.problem) << " ncols=" << c.problem.ncols << " (" << config_words(c.config) << ", "
        << variant_name(c.problem.variant) << "): " << (c.error.empty() ? c.check.first_failure : c.error) << "\n";
  }
  for (const auto& c : report.norm_cases) {
    if (c.passed()) continue;
    if (listed++ < max_failures)
      o << "FAIL norm with q8_1 k=" << c.k << " rows=" << c.rows << ": "
        << (!c.error.empty() ? c.error : !c.check.passed() ? c.check.first_failure : "q8_1 " + c.q8.first_failure) << "\n";
  }
  if (listed > max_failures) o << "... and " << (listed - max_failures) << " more failures\n";
  if (!report.fault.empty()) o << "STOPPED: " << report.fault << "\n";
  return o.str();
}

namespace {
// An output check's counts and worst error, and what failed first, into a case's JSON.
void put_check(nlohmann::json& e, const OutputCheck& c, const std::string& error) {
  e["values"] = c.values;
  e["unwritten"] = c.unwritten;
  e["nonfinite"] = c.nonfinite;
  e["wrong"] = c.wrong;
  e["wrong_f64"] = c.wrong_f64;
  e["max_abs_error"] = c.max_abs_error;
  e["worst_ratio"] = c.worst_ratio;
  if (!c.first_failure.empty()) e["first_failure"] = c.first_failure;
  if (!error.empty()) e["error"] = error;
}
}  // namespace

nlohmann::json to_json(const VerifyReport& report) {
  nlohmann::json j;
  j["device"] = gpu::device_json(report.device);
  j["seed"] = report.seed;
  j["passed"] = report.passed();
  j["cancelled"] = report.cancelled;
  if (!report.fault.empty()) j["fault"] = report.fault;
  nlohmann::json quantizer = nlohmann::json::array();
  for (const auto& q : report.quantizer) {
    nlohmann::json e = {{"k", q.k},
                        {"ncols", q.ncols},
                        {"passed", q.passed()},
                        {"blocks", q.check.blocks},
                        {"quant_mismatches", q.check.quant_mismatches},
                        {"scale_mismatches", q.check.scale_mismatches},
                        {"sum_mismatches", q.check.sum_mismatches},
                        {"worst_ulps", q.check.worst_ulps}};
    if (!q.check.first_failure.empty()) e["first_failure"] = q.check.first_failure;
    if (!q.error.empty()) e["error"] = q.error;
    quantizer.push_back(std::move(e));
  }
  j["quantizer"] = std::move(quantizer);
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : report.cases) {
    nlohmann::json e = {{"type", std::string(type_name(c.type))},
                        {"n", c.n},
                        {"k", c.k},
                        {"ncols", c.ncols},
                        {"config", {{"nwarps", c.config.nwarps}, {"rows_per_block", c.config.rows_per_block}}},
                        {"variant", std::string(variant_name(c.variant))},
                        {"passed", c.passed()},
                        {"worst_f64_ratio", c.check.worst_f64_ratio}};
    put_check(e, c.check, c.error);
    cases.push_back(std::move(e));
  }
  j["cases"] = std::move(cases);
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& c : report.group_cases) {
    nlohmann::json members = nlohmann::json::array();
    for (const GroupMember& m : c.problem.members) members.push_back({{"type", std::string(type_name(m.type))}, {"n", m.n}});
    nlohmann::json e = {{"members", std::move(members)},
                        {"k", c.problem.k},
                        {"ncols", c.problem.ncols},
                        {"config", {{"nwarps", c.config.nwarps}, {"rows_per_block", c.config.rows_per_block}}},
                        {"variant", std::string(variant_name(c.problem.variant))},
                        {"passed", c.passed()}};
    put_check(e, c.check, c.error);
    groups.push_back(std::move(e));
  }
  j["groups"] = std::move(groups);
  nlohmann::json norms = nlohmann::json::array();
  for (const auto& c : report.norm_cases) {
    nlohmann::json e = {{"k", c.k},
                        {"rows", c.rows},
                        {"passed", c.passed()},
                        {"q8_1_quant_mismatches", c.q8.quant_mismatches},
                        {"q8_1_worst_ulps", c.q8.worst_ulps}};
    put_check(e, c.check, c.error);
    if (!c.q8.first_failure.empty()) e["q8_1_first_failure"] = c.q8.first_failure;
    norms.push_back(std::move(e));
  }
  j["norms"] = std::move(norms);
  return j;
}

}  // namespace temper
