// EngineDevice: every Device method as one request to temper-probe (core/engine/probe_protocol.h).
#include "temper/engine_device.h"

#include <charconv>
#include <cstring>
#include <sstream>

#include "probe_process.h"
#include "temper/engine.h"
#include "temper/error.h"
#include "temper/input.h"

namespace temper::engine {
namespace {

using probe::Op;
using probe::ProbeStatus;

constexpr size_t kChunk = size_t(256) << 20;  // uploads and downloads travel in pieces this large

// Little-endian packing of request payloads.
class Writer {
 public:
  template <class T>
  Writer& put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // the hosts Temper runs on are little-endian
    bytes.insert(bytes.end(), b, b + sizeof(T));
    return *this;
  }
  Writer& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> bytes;
};

// Reads an answer's payload; a short one is a protocol error.
class Reader {
 public:
  Reader(const std::vector<uint8_t>& b, std::string what) : b_(b), what_(std::move(what)) {}
  template <class T>
  T get() {
    if (pos_ + sizeof(T) > b_.size())
      fail(ErrorKind::GpuFault, "temper-probe answered " + what_ + " with " + std::to_string(b_.size()) +
                                    " bytes; expected at least " + std::to_string(pos_ + sizeof(T)));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

 private:
  const std::vector<uint8_t>& b_;
  std::string what_;
  size_t pos_ = 0;
};

std::string problem_text(const GemvProblem& p, Config c) {
  return shape_text(p) + " ncols " + std::to_string(p.ncols) + " config " + std::to_string(c.nwarps) + "x" +
         std::to_string(c.rows_per_block);
}

// A number of the probe's hello reply; 0 when the field is absent or not a number.
template <class T>
T number(const std::map<std::string, std::string>& m, const std::string& key) {
  T v = 0;
  if (const auto it = m.find(key); it != m.end()) std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

}  // namespace

ProbeOptions probe_options(const std::filesystem::path& src, const BuildResult& built) {
  ProbeOptions o;
  o.probe = built.probe;
  o.source_path = std::filesystem::absolute(src).string();
  o.ggml_commit = built.tree.commit;
  o.hook_version = std::to_string(kHookVersion);
  return o;
}

std::string api_for_arch(const std::string& arch) { return arch.rfind("gfx", 0) == 0 ? "engine-hip" : "engine-cuda"; }
bool is_engine_api(const std::string& api) { return api == "engine-cuda" || api == "engine-hip"; }

EngineDevice::EngineDevice(ProbeOptions options) : options_(std::move(options)) {
  process_ = std::make_unique<ProbeProcess>(options_.probe, options_.args, options_.log, options_.timeout_s);
  const std::vector<uint8_t> text = call(uint32_t(Op::Hello), {}, "Hello");
  std::istringstream in(std::string(text.begin(), text.end()));
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) hello_[line.substr(0, eq)] = line.substr(eq + 1);
  }
  protocol_ = number<int>(hello_, "protocol");
  if (protocol_ < int(probe::kMinProtocolVersion) || protocol_ > int(probe::kProtocolVersion))
    fail(ErrorKind::GpuFault, "temper-probe " + options_.probe.string() + " speaks protocol " +
                                  std::to_string(protocol_) + "; this Temper speaks " +
                                  std::to_string(probe::kMinProtocolVersion) + ".." +
                                  std::to_string(probe::kProtocolVersion) + " (rebuild the probe)");
  if (options_.kernel_only && protocol_ < 2)
    fail(ErrorKind::BadInput, "temper-probe " + options_.probe.string() + " speaks protocol " + std::to_string(protocol_) +
                                  ", which has no kernel-only timing (protocol 2); rebuild it with `temper engine build`");
  info_.index = 0;
  info_.arch = hello_["arch"];
  info_.api = api_for_arch(info_.arch);
  info_.name = hello_["name"];
  info_.compute_units = number<int>(hello_, "sms");
  info_.warp_size = number<int>(hello_, "warp_size");
  if (info_.warp_size <= 0) info_.warp_size = 32;
  info_.memory_bytes = number<uint64_t>(hello_, "memory_bytes");
  info_.l2_bytes = number<uint64_t>(hello_, "l2_bytes");
  info_.clock_mhz = number<int>(hello_, "clock_mhz");
  info_.memory_clock_mhz = number<int>(hello_, "memory_clock_mhz");
  info_.memory_bus_bits = number<int>(hello_, "memory_bus_bits");
  info_.shared_per_block = number<int>(hello_, "shared_per_block");
  info_.shared_per_cu = number<int>(hello_, "shared_per_sm");
  info_.regs_per_block = number<int>(hello_, "regs_per_block");
  info_.regs_per_cu = number<int>(hello_, "regs_per_sm");
  info_.max_threads_per_cu = number<int>(hello_, "max_threads_per_sm");
  info_.driver_version = hello_["driver"];
  info_.runtime_version = hello_["runtime"];
  info_.pci_bus_id = hello_["pci_bus_id"];
  if (options_.hook_version.empty()) options_.hook_version = hello_["hook_version"];
}

EngineDevice::~EngineDevice() = default;

const std::filesystem::path& EngineDevice::log_path() const { return process_->log(); }

KernelSource EngineDevice::kernel_source() const {
  KernelSource k;
  k.kind = std::string(kKernelEngine);
  k.source_path = options_.source_path;
  k.ggml_commit = options_.ggml_commit;
  k.hook_version = options_.hook_version;
  k.probe_path = path_text(std::filesystem::absolute(options_.probe).lexically_normal());
  return k;
}

std::vector<uint8_t> EngineDevice::call(uint32_t op, const std::vector<uint8_t>& payload, const char* what) const {
  std::lock_guard lock(mutex_);
  ProbeAnswer a = process_->request(op, payload, what);
  if (a.status == int32_t(ProbeStatus::Ok)) return std::move(a.payload);
  const std::string text(a.payload.begin(), a.payload.end());
  const std::string msg = "temper-probe " + options_.probe.string() + ": " + what + ": " + text;
  // NotCompiled: a config this build cannot launch (the Device contract's BadInput); anything else is
  // the engine's failure, with what the probe printed.
  if (a.status == int32_t(ProbeStatus::NotCompiled)) fail(ErrorKind::BadInput, msg);
  if (a.status == int32_t(ProbeStatus::BadRequest)) fail(ErrorKind::Internal, msg + " (a bad request)" + process_->stderr_context());
  fail(ErrorKind::GpuFault, msg + process_->stderr_context());
}

DeviceBuffer EngineDevice::alloc(size_t bytes) {
  const auto a = call(uint32_t(Op::Alloc), Writer().put(uint64_t(bytes)).bytes, "Alloc");
  const uint64_t h = Reader(a, "Alloc").get<uint64_t>();
  if (h == 0) fail(ErrorKind::GpuFault, "temper-probe answered Alloc with handle 0");
  return DeviceBuffer(this, reinterpret_cast<void*>(uintptr_t(h)), bytes);
}

void EngineDevice::release(void* ptr) noexcept {
  try {
    if (!process_->dead()) call(uint32_t(Op::Free), Writer().put(uint64_t(reinterpret_cast<uintptr_t>(ptr))).bytes, "Free");
  } catch (...) {
    // A buffer freed on a dead or failing probe is gone with it.
  }
}

void EngineDevice::upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (size_t done = 0; done < bytes; done += kChunk) {
    const size_t n = std::min(kChunk, bytes - done);
    call(uint32_t(Op::Upload), Writer().put(handle(dst)).put(uint64_t(offset + done)).raw(p + done, n).bytes, "Upload");
  }
}

void EngineDevice::download(void* dst, const DeviceBuffer& src, size_t bytes, size_t offset) {
  auto* p = static_cast<uint8_t*>(dst);
  for (size_t done = 0; done < bytes; done += kChunk) {
    const size_t n = std::min(kChunk, bytes - done);
    const auto a =
        call(uint32_t(Op::Download), Writer().put(handle(src)).put(uint64_t(offset + done)).put(uint64_t(n)).bytes, "Download");
    if (a.size() != n)
      fail(ErrorKind::GpuFault, "temper-probe answered Download of " + std::to_string(n) + " bytes with " +
                                    std::to_string(a.size()));
    std::memcpy(p + done, a.data(), n);
  }
}

void EngineDevice::fill(DeviceBuffer& dst, uint8_t byte) {
  call(uint32_t(Op::Fill), Writer().put(handle(dst)).put(byte).bytes, "Fill");
}

void EngineDevice::quantize_q8_1(const DeviceBuffer& x, DeviceBuffer& y, int k, int ncols) {
  call(uint32_t(Op::Quantize), Writer().put(handle(x)).put(handle(y)).put(int32_t(k)).put(int32_t(ncols)).bytes,
       "Quantize");
}

bool EngineDevice::has_kernel(GgmlType type, int ncols, Config config) const {
  const auto key = std::tuple{type, ncols, config.nwarps, config.rows_per_block};
  {
    std::lock_guard lock(mutex_);
    if (auto it = has_kernel_.find(key); it != has_kernel_.end()) return it->second;
  }
  const auto a = call(uint32_t(Op::HasKernel),
                      Writer().put(int32_t(type)).put(int32_t(ncols)).put(int32_t(config.nwarps))
                          .put(int32_t(config.rows_per_block)).bytes,
                      "HasKernel");
  const bool has = Reader(a, "HasKernel").get<uint8_t>() != 0;
  std::lock_guard lock(mutex_);
  has_kernel_[key] = has;
  return has;
}

std::optional<Config> EngineDevice::stock_config(GgmlType type, int ncols, int k) const {
  const auto key = std::tuple{type, ncols, k};
  {
    std::lock_guard lock(mutex_);
    if (auto it = stock_.find(key); it != stock_.end()) return it->second;
  }
  const auto a = call(uint32_t(Op::StockConfig), Writer().put(int32_t(type)).put(int32_t(ncols)).put(int32_t(k)).bytes,
                      "StockConfig");
  Reader r(a, "StockConfig");
  Config c;
  c.nwarps = r.get<int32_t>();
  c.rows_per_block = r.get<int32_t>();
  if (c.nwarps < 1 || c.rows_per_block < 1)
    fail(ErrorKind::GpuFault, "temper-probe answered StockConfig with " + std::to_string(c.nwarps) + "x" +
                                  std::to_string(c.rows_per_block));
  std::lock_guard lock(mutex_);
  stock_[key] = c;
  return c;
}

Config EngineDevice::wire_config(const GemvProblem& p, Config c) const {
  // The unfused pair is the hook's own launch: every config of it, the stock one too, is asked for.
  if (launch_is_unfused(p.launch)) return c;
  return stock_config(p.type, p.ncols, p.k) == c ? Config{0, 0} : c;
}

void EngineDevice::put_launch_header(std::vector<uint8_t>& out, const GemvProblem& p, Config w) const {
  if (protocol_ < 3)
    fail(ErrorKind::BadInput, "temper-probe " + options_.probe.string() + " speaks protocol " + std::to_string(protocol_) +
                                  ", which has no " + std::string(launch_name(p.launch)) +
                                  " launches (protocol 3); rebuild it with `temper engine build`");
  if (launch_has_ids(p.launch) && !p.ids) fail(ErrorKind::Internal, shape_text(p) + ": no expert ids");
  Writer h;
  h.put(int32_t(p.launch)).put(int32_t(p.glu)).put(int32_t(p.type)).put(int32_t(p.n)).put(int32_t(p.k))
      .put(int32_t(p.ncols)).put(int32_t(w.nwarps)).put(int32_t(w.rows_per_block)).put(int32_t(p.experts))
      .put(int32_t(p.used)).put(int32_t(p.ids_sets)).put(uint64_t(weight_layout(p).gate_offset));
  out.insert(out.end(), h.bytes.begin(), h.bytes.end());
}

void EngineDevice::gemv(const GemvProblem& p, Config c, const DeviceBuffer& weights, const DeviceBuffer& y_q8_1,
                        DeviceBuffer& dst) {
  const Config w = wire_config(p, c);
  const std::string what = "Gemv " + problem_text(p, c);
  if (p.launch != Launch::MulMat) {
    Writer req;
    put_launch_header(req.bytes, p, w);
    req.put(handle(weights)).put(handle(y_q8_1)).put(p.ids ? handle(*p.ids) : uint64_t(0)).put(handle(dst));
    call(uint32_t(Op::GemvLaunch), req.bytes, what.c_str());
    return;
  }
  call(uint32_t(Op::Gemv),
       Writer().put(int32_t(p.type)).put(int32_t(p.n)).put(int32_t(p.k)).put(int32_t(p.ncols)).put(int32_t(w.nwarps))
           .put(int32_t(w.rows_per_block)).put(handle(weights)).put(handle(y_q8_1)).put(handle(dst)).bytes,
       what.c_str());
}

std::vector<double> EngineDevice::time_gemv(const GemvProblem& p, Config c,
                                            std::span<const DeviceBuffer* const> weight_copies,
                                            const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int count) {
  return time_gemv_grouped(p, c, weight_copies, y_q8_1, dst, count, 1);
}

std::vector<double> EngineDevice::time_gemv_grouped(const GemvProblem& p, Config c,
                                                    std::span<const DeviceBuffer* const> weight_copies,
                                                    const DeviceBuffer& y_q8_1, DeviceBuffer& dst, int groups,
                                                    int per_group) {
  if (weight_copies.empty()) fail(ErrorKind::BadInput, "time_gemv: no weight copies");
  if (groups < 1 || per_group < 1) fail(ErrorKind::BadInput, "time_gemv: groups and per_group must be positive");
  // Kernel-only: the config's own grid instantiation, the stock one too (there is no MUL_MAT around it).
  // Launches of the fused and ids kinds are timed as the engine makes them, never kernel-only.
  const bool kernel_only = options_.kernel_only && p.launch == Launch::MulMat;
  const Config w = kernel_only ? c : wire_config(p, c);
  const Op op = p.launch != Launch::MulMat ? Op::TimeLaunch : kernel_only ? Op::TimeKernel : Op::Time;
  Writer req;
  if (op == Op::TimeLaunch) {
    put_launch_header(req.bytes, p, w);
    req.put(int32_t(groups)).put(int32_t(per_group)).put(handle(y_q8_1)).put(p.ids ? handle(*p.ids) : uint64_t(0));
  } else {
    req.put(int32_t(p.type)).put(int32_t(p.n)).put(int32_t(p.k)).put(int32_t(p.ncols)).put(int32_t(w.nwarps))
        .put(int32_t(w.rows_per_block)).put(int32_t(groups)).put(int32_t(per_group)).put(handle(y_q8_1));
  }
  req.put(handle(dst)).put(uint32_t(weight_copies.size()));
  for (const DeviceBuffer* b : weight_copies) req.put(handle(*b));
  const std::string what = (op == Op::TimeKernel ? "TimeKernel " : op == Op::TimeLaunch ? "TimeLaunch " : "Time ") +
                           problem_text(p, c);
  const auto a = call(uint32_t(op), req.bytes, what.c_str());
  if (a.size() != size_t(groups) * sizeof(double))
    fail(ErrorKind::GpuFault, "temper-probe answered " + what + " with " + std::to_string(a.size()) +
                                  " bytes; expected " + std::to_string(groups) + " doubles");
  std::vector<double> us(static_cast<size_t>(groups));
  std::memcpy(us.data(), a.data(), a.size());
  return us;
}

double EngineDevice::copy_bandwidth_gbs(size_t bytes) {
  const auto a = call(uint32_t(Op::Bandwidth), Writer().put(uint64_t(bytes)).bytes, "Bandwidth");
  return Reader(a, "Bandwidth").get<double>();
}

std::optional<KernelAttributes> EngineDevice::kernel_attributes(GgmlType type, int ncols, Config config) {
  const auto a = call(uint32_t(Op::Attributes),
                      Writer().put(int32_t(type)).put(int32_t(ncols)).put(int32_t(config.nwarps))
                          .put(int32_t(config.rows_per_block)).bytes,
                      "Attributes");
  Reader r(a, "Attributes");
  KernelAttributes k;
  k.registers = r.get<int32_t>();
  k.shared_bytes = r.get<int32_t>();
  k.local_bytes = r.get<int32_t>();
  k.max_threads_per_block = r.get<int32_t>();
  k.blocks_per_cu = r.get<int32_t>();
  if (k.registers == 0 && k.shared_bytes == 0 && k.local_bytes == 0 && k.max_threads_per_block == 0 &&
      k.blocks_per_cu == 0)
    return std::nullopt;  // the probe cannot tell
  return k;
}

std::vector<DeviceInfo> EngineBackend::devices() {
  if (!started_) {
    try {
      started_ = std::make_unique<EngineDevice>(options_);
    } catch (const Error& e) {
      why_ = e.what();
      return {};
    }
  }
  return {started_->info()};
}

std::unique_ptr<Device> EngineBackend::open(int index) {
  if (index != 0)
    fail(ErrorKind::NoDevice, "device " + std::to_string(index) + " does not exist: temper-probe serves one device (0)");
  if (started_) return std::move(started_);
  return std::make_unique<EngineDevice>(options_);
}

}  // namespace temper::engine

namespace temper::engine {

ReplayTokens EngineDevice::replay(const std::string& plan, uint32_t tokens) {
  Writer w;
  w.put(tokens).raw(plan.data(), plan.size());
  const auto a = call(uint32_t(Op::Replay), w.bytes, "Replay");
  Reader r(a, "Replay");
  ReplayTokens t;
  for (uint32_t i = 0; i < tokens; ++i) t.token_us.push_back(r.get<double>());
  t.launches = r.get<int64_t>();
  t.tuned = r.get<int64_t>();
  if (protocol_ >= 4) t.path_changes = r.get<int64_t>();
  if (protocol_ >= 5) t.group_launches = r.get<int64_t>();
  if (protocol_ >= 6) t.pipelined_launches = r.get<int64_t>();
  return t;
}

}  // namespace temper::engine
