#pragma once
// A Device in host memory for the backend tests: the CPU reference plays the kernel, and chosen
// configs misbehave on purpose (leave a row unwritten, return a wrong value, fault the device).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "temper/backend.h"
#include "temper/error.h"
#include "temper/mmvq_group.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/reference.h"

namespace temper::testing {

class HostDevice final : public Device {
 public:
  enum class Bug { None, SkipLastRow, Wrong, Infinite, Fault };

  HostDevice() {
    info_.api = "host";
    info_.name = "host test device";
    info_.arch = "host";
    info_.warp_size = 32;
    info_.l2_bytes = 1 << 20;
  }

  std::vector<GgmlType> types{GgmlType::Q4_0, GgmlType::Q8_0};
  std::vector<Config> configs{{1, 1}, {2, 1}, {4, 1}, {4, 4}};
  std::map<Config, Bug> bugs;
  std::map<mmvq::KernelVariant, Bug> variant_bugs;  // every config of that kernel variant misbehaves
  bool dead = false;
  std::set<const void*> timed_weights;  // every weight copy time_gemv launched on
  std::set<mmvq::KernelVariant> variants;  // every kernel variant gemv / time_gemv was asked for
  int gemv_calls = 0;

  const DeviceInfo& info() const override { return info_; }

  DeviceBuffer alloc(size_t bytes) override {
    alive();
    if (bytes > (size_t(1) << 34)) fail(ErrorKind::GpuFault, "out of device memory: asked " + std::to_string(bytes));
    return DeviceBuffer(this, new char[bytes], bytes);
  }
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    alive();
    std::memcpy(static_cast<char*>(dst.get()) + offset, src, bytes);
  }
  void download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset) override {
    alive();
    std::memcpy(dst, static_cast<const char*>(src.get()) + offset, bytes);
  }
  void fill(DeviceBuffer& dst, uint8_t byte) override {
    alive();
    std::memset(dst.get(), byte, dst.size());
  }
  void quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) override {
    alive();
    quant::quantize_q8_1(static_cast<const float*>(x.get()), static_cast<quant::BlockQ8_1*>(y.get()),
                         int64_t(k) * ncols, quant::Q8_1Style::Gpu);
  }
  // The norm that writes q8_1: float arithmetic as the kernel's (a float sum, then scale · x · w) and the
  // CPU quantizer; norm_bug misbehaves on purpose.
  enum class NormBug { None, WrongValue, WrongQuant };
  bool norm = true;
  NormBug norm_bug = NormBug::None;
  bool has_norm_kernel() const override { return norm; }
  void rms_norm_q8_1(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& dst, DeviceBuffer& y, int k, int rows,
                     float eps) override {
    alive();
    if (!norm) return Device::rms_norm_q8_1(x, w, dst, y, k, rows, eps);
    const auto* in = static_cast<const float*>(x.get());
    const auto* weight = static_cast<const float*>(w.get());
    auto* out = static_cast<float*>(dst.get());
    for (int r = 0; r < rows; ++r) {
      float sum = 0;
      for (int i = 0; i < k; ++i) sum += in[r * k + i] * in[r * k + i];
      const float scale = 1.0f / std::sqrt(sum / float(k) + eps);
      for (int i = 0; i < k; ++i) out[r * k + i] = scale * in[r * k + i] * weight[i];
    }
    if (norm_bug == NormBug::WrongValue && rows > 1) out[k + 5] *= 1.01f;  // value 5 of row 1
    auto* q = static_cast<quant::BlockQ8_1*>(y.get());
    quant::quantize_q8_1(out, q, int64_t(k) * rows, quant::Q8_1Style::Gpu);
    if (norm_bug == NormBug::WrongQuant) q[1].qs[3] = int8_t(q[1].qs[3] + 1);
  }
  bool has_kernel(GgmlType type, int ncols, Config c) const override {
    return ncols >= 1 && ncols <= 8 && std::find(types.begin(), types.end(), type) != types.end() &&
           std::find(configs.begin(), configs.end(), c) != configs.end();
  }
  void gemv(const GemvProblem& p, Config c, const DeviceBuffer& weights, const DeviceBuffer& y_q8_1,
            DeviceBuffer& dst) override {
    alive();
    ++gemv_calls;
    variants.insert(p.variant);
    if (!has_kernel(p.type, p.ncols, c)) fail(ErrorKind::BadInput, "no kernel");
    // As the GPU backend: the kernel's last block may read mmvq::kWeightPaddingRows rows past the end.
    if (weights.size() < *row_bytes(p.type, uint64_t(p.k)) * size_t(p.n + mmvq::kWeightPaddingRows))
      fail(ErrorKind::Internal, "gemv: weight buffer without the spare rows");
    const Bug bug = bugs.count(c) ? bugs.at(c) : variant_bugs.count(p.variant) ? variant_bugs.at(p.variant) : Bug::None;
    if (bug == Bug::Fault) {
      dead = true;
      fail(ErrorKind::GpuFault, "illegal memory access in the test kernel");
    }
    const size_t row = *row_bytes(p.type, uint64_t(p.k));
    auto* out = static_cast<float*>(dst.get());
    const auto* y = static_cast<const quant::BlockQ8_1*>(y_q8_1.get());
    for (int col = 0; col < p.ncols; ++col)
      for (int r = 0; r < p.n; ++r) {
        if (bug == Bug::SkipLastRow && r == p.n - 1) continue;
        float v = quant::dot_q8_1(p.type, static_cast<const char*>(weights.get()) + size_t(r) * row,
                                  y + size_t(col) * size_t(p.k / 32), p.k);
        if (bug == Bug::Wrong && r == 1) v += 0.5f + std::abs(v) * 0.01f;
        if (bug == Bug::Infinite && r == 0) v = INFINITY;
        out[size_t(col) * size_t(p.n) + size_t(r)] = v;
      }
  }
  std::vector<double> time_gemv(const GemvProblem& p, Config c, std::span<const DeviceBuffer* const> weight_copies,
                                const DeviceBuffer&, DeviceBuffer&, int count) override {
    alive();
    variants.insert(p.variant);
    if (!has_kernel(p.type, p.ncols, c)) fail(ErrorKind::BadInput, "no kernel");
    std::vector<double> us;
    for (int i = 0; i < count; ++i) {
      timed_weights.insert(weight_copies[size_t(i) % weight_copies.size()]->get());
      us.push_back(10.0 * c.nwarps / c.rows_per_block + (i % 3));  // median 11·nwarps/rpb-ish
    }
    return us;
  }
  // Groups: every member as gemv would compute it; group_bugs misbehave on the member's config.
  std::map<Config, std::pair<size_t, Bug>> group_bugs;  // config → (member, bug)
  int group_calls = 0;
  bool has_group_kernel(const GemvGroupProblem& p, Config c) const override {
    return p.members.size() >= 2 && p.members.size() <= 4 && p.ncols >= 1 && p.ncols <= 4 &&
           mmvq::group_config_in_grid(c.nwarps, c.rows_per_block) &&
           std::all_of(p.members.begin(), p.members.end(), [&](const GroupMember& m) {
             return std::find(types.begin(), types.end(), m.type) != types.end();
           });
  }
  void gemv_group(const GemvGroupProblem& p, Config c, std::span<const DeviceBuffer* const> weights,
                  const DeviceBuffer& y_q8_1, std::span<DeviceBuffer* const> dst) override {
    alive();
    ++group_calls;
    variants.insert(p.variant);
    group_weight_types(p);
    if (!has_group_kernel(p, c)) fail(ErrorKind::BadInput, "no group kernel");
    const auto* y = static_cast<const quant::BlockQ8_1*>(y_q8_1.get());
    for (size_t m = 0; m < p.members.size(); ++m) {
      const GroupMember& member = p.members[m];
      const Bug bug = group_bugs.count(c) && group_bugs.at(c).first == m ? group_bugs.at(c).second : Bug::None;
      const size_t row = *row_bytes(member.type, uint64_t(p.k));
      auto* out = static_cast<float*>(dst[m]->get());
      for (int col = 0; col < p.ncols; ++col)
        for (int r = 0; r < member.n; ++r) {
          if (bug == Bug::SkipLastRow && r == member.n - 1) continue;
          float v = quant::dot_q8_1(member.type, static_cast<const char*>(weights[m]->get()) + size_t(r) * row,
                                    y + size_t(col) * size_t(p.k / 32), p.k);
          if (bug == Bug::Wrong && r == 0) v += 0.5f + std::abs(v) * 0.01f;
          out[size_t(col) * size_t(member.n) + size_t(r)] = v;
        }
    }
  }
  std::set<const void*> group_timed_weights;  // every member weight copy time_gemv_group launched on
  std::vector<double> time_gemv_group(const GemvGroupProblem& p, Config c, std::span<const DeviceBuffer* const> weight_copies,
                                      const DeviceBuffer&, std::span<DeviceBuffer* const>, int samples,
                                      int per_sample) override {
    alive();
    if (!has_group_kernel(p, c)) fail(ErrorKind::BadInput, "no group kernel");
    std::vector<double> us;
    size_t launches = 0;
    for (int i = 0; i < samples; ++i) {
      for (int j = 0; j < per_sample; ++j, ++launches)
        for (size_t m = 0; m < p.members.size(); ++m)
          group_timed_weights.insert(weight_copies[(launches * p.members.size() + m) % weight_copies.size()]->get());
      us.push_back(5.0 * c.nwarps / c.rows_per_block + (i % 3));
    }
    return us;
  }
  double copy_bandwidth_gbs(size_t) override { return 1000.0; }
  std::optional<KernelAttributes> kernel_attributes(GgmlType, int, Config) override { return std::nullopt; }

 protected:
  void release(void* ptr) noexcept override { delete[] static_cast<char*>(ptr); }

 private:
  void alive() const {
    if (dead) fail(ErrorKind::GpuFault, "the device is unusable after an earlier fault");
  }
  DeviceInfo info_;
};

}  // namespace temper::testing
