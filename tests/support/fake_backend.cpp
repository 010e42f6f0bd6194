#include "temper/fake_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "temper/error.h"
#include "temper/mmvq_traits.h"
#include "temper/quant/reference.h"

namespace temper {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t key_hash(uint64_t seed, const GemvProblem& p, Config c) {
  uint64_t h = mix(seed);
  for (uint64_t v : {uint64_t(p.type), uint64_t(p.n), uint64_t(p.k), uint64_t(p.ncols), uint64_t(c.nwarps),
                     uint64_t(c.rows_per_block)})
    h = mix(h ^ v);
  return h;
}

bool pow2_at_most(int v, int max) { return v >= 1 && v <= max && (v & (v - 1)) == 0; }

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

double env_number(const char* name, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
    fail(ErrorKind::BadInput, std::string(name) + "=" + text + ": expected a non-negative number");
  return v;
}

}  // namespace

FakeDeviceOptions fake_options_from_env() {
  FakeDeviceOptions o;
  if (auto v = env("TEMPER_FAKE_SLEEP_US")) o.sleep_per_launch_us = env_number("TEMPER_FAKE_SLEEP_US", *v);
  if (auto v = env("TEMPER_FAKE_LOSE_AFTER"))
    o.lose_after_launches = static_cast<int64_t>(env_number("TEMPER_FAKE_LOSE_AFTER", *v));
  if (auto v = env("TEMPER_FAKE_SEED")) o.seed = static_cast<uint64_t>(env_number("TEMPER_FAKE_SEED", *v));
  if (auto v = env("TEMPER_FAKE_ARCH")) o.arch = *v;
  if (auto v = env("TEMPER_FAKE_WRONG")) {
    size_t pos = 0;
    while (pos <= v->size()) {
      const size_t comma = std::min(v->find(',', pos), v->size());
      const std::string item = v->substr(pos, comma - pos);
      int w = 0, r = 0;
      char x = 0, extra = 0;
      if (std::sscanf(item.c_str(), "%d%c%d%c", &w, &x, &r, &extra) != 3 || x != 'x' || w < 1 || r < 1)
        fail(ErrorKind::BadInput, "TEMPER_FAKE_WRONG: \"" + item + "\" is not NWARPSxROWS (e.g. 4x1)");
      o.wrong_configs.push_back({w, r});
      pos = comma + 1;
    }
  }
  return o;
}

FakeDevice::FakeDevice(FakeDeviceOptions options, int index) : options_(std::move(options)) {
  info_.index = index;
  info_.api = "fake";
  info_.name = options_.name;
  info_.arch = options_.arch;
  info_.compute_units = options_.compute_units;
  info_.warp_size = options_.warp_size;
  info_.memory_bytes = options_.memory_bytes;
  info_.l2_bytes = options_.l2_bytes;
  info_.clock_mhz = 1500;
  info_.memory_clock_mhz = 2600;
  info_.memory_bus_bits = 4096;
  info_.shared_per_block = 48 * 1024;
  info_.shared_per_cu = 64 * 1024;
  info_.regs_per_block = 65536;
  info_.regs_per_cu = 65536;
  info_.max_threads_per_cu = 2048;
  info_.driver_version = "fake";
  info_.runtime_version = "fake";
  info_.pci_bus_id = "fake:" + std::to_string(index);
}

FakeDevice::~FakeDevice() {
  for (auto& [ptr, size] : sizes_) std::free(ptr);
}

void FakeDevice::check_alive(const char* call) {
  if (lost_) fail(ErrorKind::GpuFault, std::string(call) + " on fake device " + std::to_string(info_.index) +
                                           ": device lost (injected fault)");
}

void FakeDevice::count_launch(const char* call) {
  const int64_t n = ++launches_;
  if (options_.lose_after_launches && n > *options_.lose_after_launches) lost_ = true;
  check_alive(call);
}

void FakeDevice::check_buffer(const DeviceBuffer& b, size_t bytes, size_t offset, const char* call) const {
  if (!b) fail(ErrorKind::Internal, std::string(call) + ": null buffer");
  if (offset > b.size() || bytes > b.size() - offset)
    fail(ErrorKind::GpuFault, std::string(call) + ": " + std::to_string(bytes) + " bytes at offset " +
                                  std::to_string(offset) + " exceed a buffer of " + std::to_string(b.size()));
}

void FakeDevice::invalidate(const void* ptr) {
  std::erase_if(cache_, [&](const CachedGemv& c) { return c.weights == ptr || c.y == ptr; });
}

DeviceBuffer FakeDevice::alloc(size_t bytes) {
  check_alive("alloc");
  std::lock_guard lock(mutex_);
  if (bytes > options_.memory_bytes - std::min(allocated_, options_.memory_bytes))
    fail(ErrorKind::GpuFault, "alloc of " + std::to_string(bytes) + " bytes on fake device " +
                                  std::to_string(info_.index) + ": out of memory (" + std::to_string(allocated_) +
                                  " of " + std::to_string(options_.memory_bytes) + " bytes in use)");
  void* p = std::malloc(std::max<size_t>(bytes, 1));
  if (!p) fail(ErrorKind::GpuFault, "alloc of " + std::to_string(bytes) + " bytes: out of host memory");
  allocated_ += bytes;
  sizes_[p] = bytes;
  return DeviceBuffer(this, p, bytes);
}

void FakeDevice::release(void* ptr) noexcept {
  std::lock_guard lock(mutex_);
  auto it = sizes_.find(ptr);
  if (it == sizes_.end()) return;
  allocated_ -= it->second;
  sizes_.erase(it);
  invalidate(ptr);
  std::free(ptr);
}

void FakeDevice::upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) {
  check_alive("upload");
  check_buffer(dst, bytes, offset, "upload");
  std::memcpy(static_cast<uint8_t*>(dst.get()) + offset, src, bytes);
  std::lock_guard lock(mutex_);
  invalidate(dst.get());
}

void FakeDevice::download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset) {
  check_alive("download");
  check_buffer(src, bytes, offset, "download");
  std::memcpy(dst, static_cast<const uint8_t*>(src.get()) + offset, bytes);
}

void FakeDevice::fill(DeviceBuffer& dst, uint8_t byte) {
  check_alive("fill");
  std::memset(dst.get(), byte, dst.size());
  std::lock_guard lock(mutex_);
  invalidate(dst.get());
}

void FakeDevice::quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) {
  count_launch("quantize_q8_1");
  if (k <= 0 || k % 32 != 0 || ncols < 1)
    fail(ErrorKind::BadInput, "quantize_q8_1: k " + std::to_string(k) + " must be a positive multiple of 32");
  const size_t blocks = size_t(k / 32) * size_t(ncols);
  check_buffer(x, size_t(k) * size_t(ncols) * sizeof(float), 0, "quantize_q8_1");
  check_buffer(y, blocks * sizeof(quant::BlockQ8_1), 0, "quantize_q8_1");
  const auto* xf = static_cast<const float*>(x.get());
  auto* yb = static_cast<quant::BlockQ8_1*>(y.get());
  for (int c = 0; c < ncols; ++c)
    quant::quantize_q8_1(xf + size_t(c) * size_t(k), yb + size_t(c) * size_t(k / 32), k, quant::Q8_1Style::Gpu);
  std::lock_guard lock(mutex_);
  invalidate(y.get());
}

bool FakeDevice::has_kernel(GgmlType type, int ncols, Config c) const {
  if (!quant::quant_supported(type) || ncols < 1 || ncols > 8) return false;
  if (!pow2_at_most(c.nwarps, std::end(mmvq::kGridNwarps)[-1]) ||
      !pow2_at_most(c.rows_per_block, std::end(mmvq::kGridRowsPerBlock)[-1]))
    return false;
  if (c.nwarps * info_.warp_size > 1024) return false;
  return std::find(options_.missing_configs.begin(), options_.missing_configs.end(), c) ==
         options_.missing_configs.end();
}

void FakeDevice::gemv(const GemvProblem& p, Config c, const DeviceBuffer& weights, const DeviceBuffer& y_q8_1,
                      DeviceBuffer& dst) {
  if (!has_kernel(p.type, p.ncols, c))
    fail(ErrorKind::BadInput, "fake device has no kernel for " + std::string(type_name(p.type)) + " ncols " +
                                  std::to_string(p.ncols) + " nwarps " + std::to_string(c.nwarps) + " rows_per_block " +
                                  std::to_string(c.rows_per_block));
  count_launch("gemv");
  const auto row = row_bytes(p.type, uint64_t(p.k));
  if (!row || p.n < 1 || p.k % 32 != 0) fail(ErrorKind::BadInput, "gemv: bad problem size");
  const size_t outputs = size_t(p.n) * size_t(p.ncols);
  check_buffer(weights, *row * size_t(p.n + mmvq::kWeightPaddingRows), 0, "gemv");  // with the spare rows
  check_buffer(y_q8_1, size_t(p.k / 32) * size_t(p.ncols) * sizeof(quant::BlockQ8_1), 0, "gemv");
  check_buffer(dst, outputs * sizeof(float), 0, "gemv");

  // The reference result, computed once per (weights, activations): configs differ only in speed.
  std::vector<float> out;
  {
    std::lock_guard lock(mutex_);
    for (const auto& cached : cache_)
      if (cached.weights == weights.get() && cached.y == y_q8_1.get() && cached.p.type == p.type &&
          cached.p.n == p.n && cached.p.k == p.k && cached.p.ncols == p.ncols)
        out = cached.out;
  }
  if (out.empty()) {
    out.resize(outputs);
    const auto* w = static_cast<const uint8_t*>(weights.get());
    const auto* y = static_cast<const quant::BlockQ8_1*>(y_q8_1.get());
    for (int col = 0; col < p.ncols; ++col)
      for (int r = 0; r < p.n; ++r)
        out[size_t(col) * size_t(p.n) + size_t(r)] =
            quant::dot_q8_1(p.type, w + size_t(r) * *row, y + size_t(col) * size_t(p.k / 32), p.k);
    std::lock_guard lock(mutex_);
    cache_.push_back({weights.get(), y_q8_1.get(), p, out});
  }
  if (std::find(options_.wrong_configs.begin(), options_.wrong_configs.end(), c) != options_.wrong_configs.end()) {
    // A plausible bug: the last row of every column gets another row's partial sum twice.
    for (int col = 0; col < p.ncols; ++col) {
      float& v = out[size_t(col) * size_t(p.n) + size_t(p.n - 1)];
      v = 2.0f * v + 1.0f;
    }
  }
  std::memcpy(dst.get(), out.data(), outputs * sizeof(float));
  if (options_.sleep_per_launch_us > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(options_.sleep_per_launch_us));
}

double FakeDevice::mean_time_us(const GemvProblem& p, Config c) const {
  if (options_.time_model) return options_.time_model(p, c);
  const double bytes = gemv_bytes(p.type, p.n, p.k, p.ncols);
  // A smooth, reproducible landscape over configs: the per-config factor comes from a hash.
  const double factor = 0.85 + 0.5 * double(key_hash(options_.seed, p, c) >> 11) * 0x1.0p-53;
  return bytes / (options_.bandwidth_gbs * 1e3) * factor + options_.launch_overhead_us;
}

// The simulated launches averaged per group: the fake device models no gap between kernels.
std::vector<double> FakeDevice::time_gemv_grouped(const GemvProblem& p, Config c,
                                                  std::span<const DeviceBuffer* const> weight_copies,
                                                  const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int groups,
                                                  int per_group) {
  if (groups < 1 || per_group < 1) fail(ErrorKind::Internal, "time_gemv_grouped: no launches");
  const std::vector<double> each = time_gemv(p, c, weight_copies, y_q8_1, dst, groups * per_group);
  std::vector<double> out(size_t(groups), 0.0);
  for (size_t i = 0; i < each.size(); ++i) out[i / size_t(per_group)] += each[i] / per_group;
  return out;
}

std::vector<double> FakeDevice::time_gemv(const GemvProblem& p, Config c,
                                          std::span<const DeviceBuffer* const> weight_copies,
                                          const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int count) {
  if (!has_kernel(p.type, p.ncols, c))
    fail(ErrorKind::BadInput, "fake device has no kernel for this type, ncols and config");
  if (count < 1 || weight_copies.empty()) fail(ErrorKind::Internal, "time_gemv: no launches or no weights");
  const auto row = row_bytes(p.type, uint64_t(p.k));
  if (!row) fail(ErrorKind::BadInput, "time_gemv: bad problem size");
  for (const DeviceBuffer* w : weight_copies) check_buffer(*w, *row * size_t(p.n), 0, "time_gemv");
  check_buffer(y_q8_1, size_t(p.k / 32) * size_t(p.ncols) * sizeof(quant::BlockQ8_1), 0, "time_gemv");
  check_buffer(dst, size_t(p.n) * size_t(p.ncols) * sizeof(float), 0, "time_gemv");
  uint64_t call;
  int64_t first_launch;  // this call's launches are timed_launches_ first_launch, first_launch + 1, ...
  {
    std::lock_guard lock(mutex_);
    call = timing_calls_++;
    first_launch = timed_launches_;
    timed_launches_ += count;
  }
  const double mean = mean_time_us(p, c);
  std::mt19937_64 rng(mix(key_hash(options_.seed, p, c) ^ mix(call)));
  std::normal_distribution<double> normal(0.0, options_.jitter);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> out;
  out.reserve(size_t(count));
  for (int i = 0; i < count; ++i) {
    count_launch("time_gemv");
    double t = mean * (1.0 + normal(rng));
    if (first_launch + i < options_.cold_launches) t *= options_.cold_factor;
    if (uniform(rng) < 0.02) t *= 1.5;  // the occasional slow launch real devices show
    out.push_back(std::max(t, 0.1));
  }
  if (options_.sleep_per_launch_us > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(options_.sleep_per_launch_us * count));
  return out;
}

double FakeDevice::copy_bandwidth_gbs(size_t bytes) {
  check_alive("copy_bandwidth_gbs");
  if (bytes == 0) fail(ErrorKind::BadInput, "copy_bandwidth_gbs: zero bytes");
  return options_.bandwidth_gbs;
}

std::optional<KernelAttributes> FakeDevice::kernel_attributes(GgmlType type, int ncols, Config c) {
  if (!has_kernel(type, ncols, c)) return std::nullopt;
  KernelAttributes a;
  a.registers = std::min(255, 24 + 6 * ncols * c.rows_per_block);
  a.shared_bytes = (c.nwarps - 1) * ncols * c.rows_per_block * info_.warp_size * int(sizeof(float));
  a.max_threads_per_block = 1024;
  a.blocks_per_cu = std::min(16, info_.max_threads_per_cu / (c.nwarps * info_.warp_size));
  return a;
}

Telemetry FakeDevice::telemetry() {
  check_alive("telemetry");
  Telemetry t;
  t.sm_clock_mhz = 1500;
  t.memory_clock_mhz = 2600;
  t.power_w = 250;
  t.temperature_c = 50;
  t.busy_percent = 100;
  return t;
}

FakeBackend::FakeBackend(FakeDeviceOptions options, int device_count)
    : options_(std::move(options)), count_(device_count) {}

std::vector<DeviceInfo> FakeBackend::devices() {
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count_; ++i) out.push_back(FakeDevice(options_, i).info());
  return out;
}

std::unique_ptr<Device> FakeBackend::open(int index) {
  if (index < 0 || index >= count_)
    fail(ErrorKind::NoDevice, "no fake device " + std::to_string(index) + " (there are " + std::to_string(count_) + ")");
  return std::make_unique<FakeDevice>(options_, index);
}

}  // namespace temper
