// A stand-in for temper-probe, for CI without a GPU: it speaks core/engine/probe_protocol.h on the
// CPU. Results come from Temper's exact reference (q8_1 quantize with the GPU's semantics, the exact
// dot); times are deterministic and synthetic: the stock config of (type, ncols, K) is the baseline,
// other configs are 3-43 % slower, except that shapes whose N is a multiple of 128 have one genuinely
// faster config (10 %), so winners, confirmations and "default stays" all occur. Stock configs come
// from temper::defaults for ggml-d99724f on sm_90, like an engine built from that tree.
//
// Like the real probe it insists on the protocol: a config equal to the stock one must arrive as
// nwarps 0 (the engine's own launch), and Gemv/Time read activations written by Quantize.
//
// Switches, from the environment (so they reach it through `temper sweep --probe`):
//   FAKE_PROBE_CRASH_AT=N   abort in the middle of answering the N-th request (1-based)
//   FAKE_PROBE_HANG_AT=N    stop answering at the N-th request (sleeps forever)
//   FAKE_PROBE_ERROR_AT=N   answer the N-th request and all later Gemv/Time with EngineError
//   FAKE_PROBE_CRASH_ON=OP[:M] / FAKE_PROBE_ERROR_ON=OP[:M]  the same at the M-th request of op OP
//                           (a number, or Gemv / Time / Alloc / Quantize ...)
//   FAKE_PROBE_STOCK=WxR    the engine's stock config for every shape (an engine newer than Temper's table)
//   FAKE_PROBE_SLEEP_US=U   real wall time per Gemv or Time request (so a sweep lasts long enough to kill)
//   FAKE_PROBE_WRONG=WxR    Replay: a tuned launch of that config writes a wrong result
//   FAKE_PROBE_PROTOCOL=V   the protocol version Hello reports (below 2: TimeKernel is an unknown op;
//                           below 3: GemvLaunch and TimeLaunch)
//   FAKE_PROBE_GROUP_WIN=WxR|none  Replay (protocol 5): the same-input group config that runs a run's
//                           members in 0.6 of their time (default 4x2); every other config, and all
//                           with none, 1.00-1.04 of it (so no config wins)
//   FAKE_PROBE_GROUP_HOOKS=N  Hello's group_hooks (default 3; 0: a hook without the ggml-cuda.cu part)
//   FAKE_PROBE_GROUP_WRONG=WxR  Replay: a group launched with that config writes a wrong result
// Replay (protocol 6): "pipeline on" runs every tuned one-column launch pipelined, in 0.95 of its time;
// without the line the profile's approved *_pipelined entries do (hook v7), "pipeline off" none.
//   FAKE_PROBE_PIPELINE_BITS=N  Hello's pipeline_bits (default 3; 0: a hook without pipelined launches)
//   FAKE_PROBE_PIPELINE_WRONG=1  Replay: a pipelined launch writes a wrong result (a reader that ran early)
//   FAKE_PROBE_GEMV_LOG=F   append "LAUNCH TYPE N K NCOLS NWARPS ROWS" to F per Gemv or GemvLaunch (each
//                           verification a sweep makes measures one result: tests see what a run measured)
//
// TimeKernel (kernel-only) answers (bytes at 1000 GB/s) × the config's factor, exactly, without
// jitter; it takes every compiled config as itself, the stock one included.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/probe_protocol.h"
#include "temper/defaults.h"
#include "temper/quant/reference.h"
#include "temper/profile.h"
#include "temper/session.h"
#include "temper/verify.h"
#include "fake_mix.h"

using namespace temper;
using temper::probe::Op;
using temper::probe::ProbeStatus;

namespace {

constexpr std::string_view kEngine = "ggml-d99724f";
constexpr double kBandwidthGbs = 1000;
constexpr const char* kName = "Temper fake probe (CPU reference, synthetic times)";

bool read_all(void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = ::read(0, b, n);
    if (r <= 0) return false;
    b += r, n -= size_t(r);
  }
  return true;
}
void write_all(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = ::write(1, b, n);
    if (r <= 0) std::exit(3);
    b += r, n -= size_t(r);
  }
}

struct Fail {
  ProbeStatus status;
  std::string text;
};

class In {
 public:
  explicit In(const std::vector<uint8_t>& b) : b_(b) {}
  template <class T>
  T get() {
    if (pos_ + sizeof(T) > b_.size()) throw Fail{ProbeStatus::BadRequest, "payload too short"};
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  size_t left() const { return b_.size() - pos_; }
  const uint8_t* here() const { return b_.data() + pos_; }

 private:
  const std::vector<uint8_t>& b_;
  size_t pos_ = 0;
};

class Out {
 public:
  template <class T>
  Out& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  std::vector<uint8_t> bytes;
};

long env_long(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atol(v) : 0;
}

// "Time:3" -> (9, 3); "Gemv" -> (8, 1).
std::pair<uint32_t, long> env_op(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return {0, 0};
  static const std::map<std::string, Op> names = {
      {"Hello", Op::Hello}, {"Alloc", Op::Alloc},       {"Free", Op::Free},           {"Upload", Op::Upload},
      {"Download", Op::Download}, {"Fill", Op::Fill},   {"Quantize", Op::Quantize},   {"Gemv", Op::Gemv},
      {"Time", Op::Time}, {"HasKernel", Op::HasKernel}, {"Attributes", Op::Attributes},
      {"StockConfig", Op::StockConfig}, {"Bandwidth", Op::Bandwidth}, {"TimeKernel", Op::TimeKernel},
      {"GemvLaunch", Op::GemvLaunch}, {"TimeLaunch", Op::TimeLaunch}};
  std::string s = v;
  long count = 1;
  if (const size_t colon = s.find(':'); colon != std::string::npos) {
    count = std::atol(s.c_str() + colon + 1);
    s.resize(colon);
  }
  const auto it = names.find(s);
  return {it != names.end() ? uint32_t(it->second) : uint32_t(std::atol(s.c_str())), count};
}

using temper::fake::mix;

class Probe {
 public:
  Probe() {
    if (const char* s = std::getenv("FAKE_PROBE_STOCK")) {
      Config c;
      if (std::sscanf(s, "%dx%d", &c.nwarps, &c.rows_per_block) == 2) stock_override_ = c;
    }
    sleep_us_ = env_long("FAKE_PROBE_SLEEP_US");
  }

  std::vector<uint8_t> handle(Op op, const std::vector<uint8_t>& payload) {
    In in(payload);
    Out out;
    switch (op) {
      case Op::Hello: {
        const std::string text = "protocol=" + std::to_string(protocol()) +
                                 "\nname=" + std::string(kName) + "\narch=sm_90\ncc=90\n"
                                 "sms=16\nwarp_size=32\nl2_bytes=1048576\nmemory_bytes=1073741824\nclock_mhz=1000\n"
                                 "memory_clock_mhz=1000\nmemory_bus_bits=256\nshared_per_block=49152\n"
                                 "shared_per_sm=233472\nregs_per_block=65536\nregs_per_sm=65536\n"
                                 "max_threads_per_sm=2048\ndriver=fake\nruntime=fake\npci_bus_id=0000:00:00.0\n"
                                 "hook_version=fake-1\nkernel_set=ci\ngraphs=0\n" +
                                 (protocol() >= 4 ? "path_hooks=3\n" : "") + (protocol() >= 5 ? "group_hooks=" + std::string(std::getenv("FAKE_PROBE_GROUP_HOOKS") ? std::getenv("FAKE_PROBE_GROUP_HOOKS") : "3") + "\n" : "") +
                                 (protocol() >= 6 ? "pipeline_bits=" + std::string(std::getenv("FAKE_PROBE_PIPELINE_BITS") ? std::getenv("FAKE_PROBE_PIPELINE_BITS") : "3") + "\n" : "");
        return {text.begin(), text.end()};
      }
      case Op::Alloc: {
        const uint64_t bytes = in.get<uint64_t>();
        if (bytes > (1ull << 30)) throw Fail{ProbeStatus::EngineError, "cudaMalloc: out of memory"};
        buffers_[next_] = std::vector<uint8_t>(bytes);
        return out.put(next_++).bytes;
      }
      case Op::Free:
        buffers_.erase(in.get<uint64_t>());
        return {};
      case Op::Upload: {
        auto& b = buffer(in.get<uint64_t>());
        const uint64_t offset = in.get<uint64_t>();
        if (offset + in.left() > b.size()) throw Fail{ProbeStatus::BadRequest, "Upload past the buffer's end"};
        std::memcpy(b.data() + offset, in.here(), in.left());
        return {};
      }
      case Op::Download: {
        auto& b = buffer(in.get<uint64_t>());
        const uint64_t offset = in.get<uint64_t>(), bytes = in.get<uint64_t>();
        if (offset + bytes > b.size()) throw Fail{ProbeStatus::BadRequest, "Download past the buffer's end"};
        return {b.begin() + ptrdiff_t(offset), b.begin() + ptrdiff_t(offset + bytes)};
      }
      case Op::Fill: {
        auto& b = buffer(in.get<uint64_t>());
        std::memset(b.data(), in.get<uint8_t>(), b.size());
        return {};
      }
      case Op::Quantize: {
        const uint64_t xh = in.get<uint64_t>(), yh = in.get<uint64_t>();
        const int k = in.get<int32_t>(), ncols = in.get<int32_t>();
        auto& x = buffer(xh);
        auto& y = buffer(yh);
        if (k <= 0 || k % 32 || ncols < 1 || x.size() < size_t(k) * size_t(ncols) * 4 ||
            y.size() < size_t(k / 32) * size_t(ncols) * sizeof(quant::BlockQ8_1))
          throw Fail{ProbeStatus::BadRequest, "Quantize: bad sizes"};
        for (int c = 0; c < ncols; ++c)
          quant::quantize_q8_1(reinterpret_cast<const float*>(x.data()) + size_t(c) * size_t(k),
                               reinterpret_cast<quant::BlockQ8_1*>(y.data()) + size_t(c) * size_t(k / 32), k,
                               quant::Q8_1Style::Gpu);
        quantized_[yh] = xh;
        return {};
      }
      case Op::Gemv: {
        const auto [p, c] = problem(in);
        const uint64_t wh = in.get<uint64_t>(), yh = in.get<uint64_t>(), dh = in.get<uint64_t>();
        check_launch(p, c, yh);
        log_verification(p, c);
        auto& w = buffer(wh);
        auto& y = buffer(yh);
        auto& dst = buffer(dh);
        const size_t row = *row_bytes(p.type, uint64_t(p.k));
        if (w.size() < row * size_t(p.n) || dst.size() < size_t(p.n) * size_t(p.ncols) * 4)
          throw Fail{ProbeStatus::BadRequest, "Gemv: buffers too small"};
        auto* out_f = reinterpret_cast<float*>(dst.data());
        const auto* yb = reinterpret_cast<const quant::BlockQ8_1*>(y.data());
        for (int col = 0; col < p.ncols; ++col)
          for (int r = 0; r < p.n; ++r)
            out_f[size_t(col) * size_t(p.n) + size_t(r)] =
                quant::dot_q8_1(p.type, w.data() + size_t(r) * row, yb + size_t(col) * size_t(p.k / 32), p.k);
        nap();
        return {};
      }
      case Op::Time: {
        const auto [p, c, groups, per_group, yh] = timing_request(in, "Time");
        check_launch(p, c, yh);
        const Config actual = c.nwarps == 0 ? stock(p) : c;
        const double mean = mean_us(p, actual);
        for (int g = 0; g < groups; ++g) {
          // ±0.2 % deterministic jitter, so medians have a CI.
          jitter_ = mix(jitter_ + 1);
          out.put(mean * (1 + 0.004 * (double(jitter_ % 10000) / 10000.0 - 0.5)));
        }
        nap();
        return out.bytes;
      }
      case Op::GemvLaunch: {
        if (protocol() < 3) throw Fail{ProbeStatus::BadRequest, "unknown op " + std::to_string(uint32_t(op))};
        const auto [p, c] = launch_problem(in);
        const uint64_t wh = in.get<uint64_t>(), yh = in.get<uint64_t>(), ih = in.get<uint64_t>(), dh = in.get<uint64_t>();
        check_launch(p, c, yh);
        log_verification(p, c);
        auto& w = buffer(wh);
        auto& y = buffer(yh);
        auto& dst = buffer(dh);
        const int32_t* ids = launch_has_ids(p.launch) ? reinterpret_cast<const int32_t*>(buffer(ih).data()) : nullptr;
        const size_t outputs = size_t(p.n) * size_t(output_columns(p, p.ncols));
        if (w.size() < weight_layout(p).total || dst.size() < outputs * 4 ||
            y.size() < size_t(p.k / 32) * size_t(input_columns(p, p.ncols)) * sizeof(quant::BlockQ8_1) ||
            (ids && buffer(ih).size() < size_t(p.used) * 4))
          throw Fail{ProbeStatus::BadRequest, "GemvLaunch: buffers too small"};
        std::vector<Expected> e(outputs);
        expected_launch_rows(p, w.data(), reinterpret_cast<const quant::BlockQ8_1*>(y.data()), ids, 0, p.n, e.data());
        auto* out_f = reinterpret_cast<float*>(dst.data());
        for (size_t i = 0; i < outputs; ++i) out_f[i] = float(e[i].exact);
        nap();
        return {};
      }
      case Op::TimeLaunch: {
        if (protocol() < 3) throw Fail{ProbeStatus::BadRequest, "unknown op " + std::to_string(uint32_t(op))};
        const auto [p, c] = launch_problem(in);
        const int groups = in.get<int32_t>(), per_group = in.get<int32_t>();
        const uint64_t yh = in.get<uint64_t>(), ih = in.get<uint64_t>(), dh = in.get<uint64_t>();
        const uint32_t copies = in.get<uint32_t>();
        for (uint32_t i = 0; i < copies; ++i) buffer(in.get<uint64_t>());
        buffer(dh);
        if (launch_has_ids(p.launch)) buffer(ih);
        if (groups < 1 || per_group < 1 || copies == 0) throw Fail{ProbeStatus::BadRequest, "TimeLaunch: nothing to time"};
        check_launch(p, c, yh);
        const double mean = mean_us(p, c.nwarps == 0 ? stock(p) : c);
        for (int g = 0; g < groups; ++g) {
          jitter_ = mix(jitter_ + 1);
          out.put(mean * (1 + 0.004 * (double(jitter_ % 10000) / 10000.0 - 0.5)));
        }
        nap();
        return out.bytes;
      }
      case Op::Replay: return replay(in);
      case Op::TimeKernel: {
        if (protocol() < 2) throw Fail{ProbeStatus::BadRequest, "unknown op " + std::to_string(uint32_t(op))};
        const auto [p, c, groups, per_group, yh] = timing_request(in, "TimeKernel");
        if (!quantized_.count(yh)) throw Fail{ProbeStatus::BadRequest, "activations not written by Quantize"};
        if (c.nwarps == 0) throw Fail{ProbeStatus::NotCompiled, "time_kernel: nwarps 0 (the stock dispatch) has no instantiation"};
        if (!compiled(p.type, p.ncols, c)) throw Fail{ProbeStatus::NotCompiled, "config not compiled in"};
        // Exact, no jitter: the MUL_MAT's time less its 3 µs (the engine's quantize and launch).
        const double us = gemv_bytes(p.type, p.n, p.k, p.ncols) / (kBandwidthGbs * 1e3) * factor(p, c);
        for (int g = 0; g < groups; ++g) out.put(us);
        nap();
        return out.bytes;
      }
      case Op::HasKernel: {
        const GgmlType type = GgmlType(in.get<int32_t>());
        const int ncols = in.get<int32_t>();
        Config c;
        c.nwarps = in.get<int32_t>();
        c.rows_per_block = in.get<int32_t>();
        return out.put(uint8_t(compiled(type, ncols, c))).bytes;
      }
      case Op::Attributes: {
        in.get<int32_t>(), in.get<int32_t>();
        const int w = in.get<int32_t>(), r = in.get<int32_t>();
        // Plausible, deterministic: more rows per block, more registers.
        return out.put(int32_t(32 + 8 * r)).put(int32_t(w > 1 ? w * 32 * r * 4 : 0)).put(int32_t(0))
            .put(int32_t(w * 32)).put(int32_t(std::max(1, std::min(32, 64 / w)))).bytes;
      }
      case Op::StockConfig: {
        GemvProblem p;
        p.type = GgmlType(in.get<int32_t>());
        p.ncols = in.get<int32_t>();
        p.k = in.get<int32_t>();
        const Config c = stock(p);
        return out.put(int32_t(c.nwarps)).put(int32_t(c.rows_per_block)).bytes;
      }
      case Op::Bandwidth:
        in.get<uint64_t>();
        return out.put(kBandwidthGbs).bytes;
      default:
        throw Fail{ProbeStatus::BadRequest, "unknown op " + std::to_string(uint32_t(op))};
    }
  }

 private:
  std::vector<uint8_t>& buffer(uint64_t h) {
    auto it = buffers_.find(h);
    if (it == buffers_.end()) throw Fail{ProbeStatus::BadRequest, "no buffer with handle " + std::to_string(h)};
    return it->second;
  }

  static GemvProblem with_launch_problem(GemvProblem p, Launch l) {
    p.launch = l;
    return p;
  }

  // Op::Replay on the CPU: each node's exact output in its slice of the arena (as the real probe lays
  // them out), tokens timed as the sum of the nodes' synthetic times with the profile's configs (the
  // entries the engine would apply on this device), launches and tuned launches counted.
  // FAKE_PROBE_WRONG=WxR: a tuned launch of that config writes a wrong last row (a buggy kernel).
  // Protocol 4: "ncols N" and "path L TYPE P" lines before the nodes, and the mmvq/mmq cost model of
  // path_us(): ggml's own pick (the H100's: mmvq at every width up to 8) unless a forced path or the
  // profile's approved path choice says otherwise.
  std::vector<uint8_t> replay(In& in) {
    const uint32_t tokens = in.get<uint32_t>();
    const std::string text(reinterpret_cast<const char*>(in.here()), in.left());
    std::istringstream lines(text);
    std::string line, profile_path = "-";
    uint64_t xh = 0, outh = 0, idsh = 0;
    Profile profile;
    size_t at = 0;  // bytes into the arena
    double us = 0;
    int64_t launches = 0, tuned = 0, path_changes = 0, group_launches = 0, pipelined = 0;
    int ncols = 1, nodes = 0;
    int pipeline = -1;  // protocol 6: "pipeline on" 1, "off" 0; -1: the profile's pipelined entries decide
    const bool pipeline_wrong = std::getenv("FAKE_PROBE_PIPELINE_WRONG") != nullptr;
    DeviceInfo self;
    self.name = kName;
    self.arch = "sm_90";
    self.compute_units = 16;
    self.memory_bytes = 1ull << 30;
    // Same-input groups (protocol 5): the override of the run (0: the profile decides, -1: off) and
    // the open run of mm / mm+ nodes: its members, K, time and where its last output lies.
    int group_w = 0, group_r = 0;
    struct Run {
      std::vector<std::pair<int, int>> members;  // (type, n)
      int k = 0;
      double us = 0;
      float* last_out = nullptr;
      int64_t pipelined = 0;  // its members' pipelined launches (a group launch is not pipelined)
    } open_run;
    auto parse_wxr = [](const char* name) -> std::optional<Config> {
      const char* v = std::getenv(name);
      Config c;
      if (v && std::sscanf(v, "%dx%d", &c.nwarps, &c.rows_per_block) == 2) return c;
      return std::nullopt;
    };
    const char* win_env = std::getenv("FAKE_PROBE_GROUP_WIN");
    const bool no_winner = win_env && std::string(win_env) == "none";
    const Config winner = parse_wxr("FAKE_PROBE_GROUP_WIN").value_or(Config{4, 2});
    const std::optional<Config> group_wrong = parse_wxr("FAKE_PROBE_GROUP_WRONG");
    auto finish_run = [&] {
      Run r = std::move(open_run);
      open_run = Run{};
      std::vector<int> types;
      for (const auto& m : r.members)
        if (std::find(types.begin(), types.end(), m.first) == types.end()) types.push_back(m.first);
      if (protocol() < 5 || r.members.size() < 2 || r.members.size() > 4 || types.size() > 2 || ncols > 4 || group_w < 0) return;
      std::optional<Config> c;
      if (group_w > 0) c = Config{group_w, group_r};
      if (group_w == 0) {  // no override: the profile's approved mul_mat_group entry for these members, if any
        std::vector<GroupMember> members;
        for (const auto& m : r.members) members.push_back({GgmlType(m.first), m.second});
        if (const ProfileEntry* e = applied_group(profile, self.arch, profile_device(self), members, r.k, ncols)) c = e->config;
      }
      if (!c) return;
      const double factor = !no_winner && *c == winner ? 0.6 : 1.0 + 0.01 * double((c->nwarps * 3 + c->rows_per_block) % 5);
      us -= r.us * (1 - factor);
      launches -= int64_t(r.members.size()) - 1;  // one launch for the run
      pipelined -= r.pipelined;
      ++group_launches;
      if (group_wrong && *c == *group_wrong && r.last_out) *r.last_out += 1.0f + std::abs(*r.last_out);
    };
    std::map<std::pair<int, int>, MatPath> forced;  // (launch, type) -> path
    std::optional<Config> wrong;
    if (const char* w = std::getenv("FAKE_PROBE_WRONG")) {
      Config c;
      if (std::sscanf(w, "%dx%d", &c.nwarps, &c.rows_per_block) == 2) wrong = c;
    }
    while (std::getline(lines, line)) {
      std::istringstream l(line);
      std::string op, extra;
      if (!(l >> op)) continue;
      if (op == "profile") {
        l >> profile_path;
        try {
          if (profile_path != "-") profile = load_profile(profile_path);
        } catch (const Error&) {
          profile = {};  // as the engine: an unusable file is ignored
        }
        continue;
      }
      if (op == "x") { l >> xh; continue; }
      if (op == "out") { l >> outh; continue; }
      if (op == "ids") { l >> idsh; continue; }
      if (protocol() >= 5 && op == "group") {
        if (nodes > 0) throw Fail{ProbeStatus::BadRequest, "replay: \"" + line + "\" comes after the nodes"};
        std::string first;
        int rows = 0;
        if ((l >> first) && first == "off" && !(l >> extra)) {
          group_w = -1;
          continue;
        }
        const int w = std::atoi(first.c_str());
        if ((l >> rows) && !(l >> extra) && (w == 2 || w == 4 || w == 8) && (rows == 1 || rows == 2 || rows == 4)) {
          group_w = w;
          group_r = rows;
          continue;
        }
        throw Fail{ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line + "\""};
      }
      if (protocol() >= 6 && op == "pipeline") {
        if (nodes > 0) throw Fail{ProbeStatus::BadRequest, "replay: \"" + line + "\" comes after the nodes"};
        std::string value;
        if ((l >> value) && (value == "on" || value == "off") && !(l >> extra)) {
          pipeline = value == "on" ? 1 : 0;
          continue;
        }
        throw Fail{ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line + "\""};
      }
      if (protocol() >= 4 && (op == "ncols" || op == "path")) {
        int launch = 0, type = 0, path = 0;
        if (nodes > 0) throw Fail{ProbeStatus::BadRequest, "replay: \"" + line + "\" comes after the nodes"};
        if (op == "ncols" && (l >> ncols) && !(l >> extra) && ncols >= 1 && ncols <= 8) continue;
        if (op == "path" && (l >> launch >> type >> path) && !(l >> extra) && (launch == 0 || launch == 2) && find_type(uint32_t(type)) &&
            (path == 1 || path == 2)) {
          forced[{launch, type}] = path == 1 ? MatPath::Mmvq : MatPath::Mmq;
          continue;
        }
        throw Fail{ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line + "\""};
      }
      int type = 0, n = 0, k = 0, e = 1, u = 1;
      uint64_t w = 0, w2 = 0;
      GemvProblem p;
      const bool joins = protocol() >= 5 && op == "mm+";
      if ((op == "mm" || joins) && (l >> type >> n >> k >> w)) p.launch = Launch::MulMat;
      else if (op == "glu" && (l >> type >> n >> k >> w >> w2)) p.launch = Launch::MulMatGlu;
      else if ((op == "mmid" || op == "mmid_down") && (l >> type >> n >> k >> e >> u >> w)) p.launch = Launch::MulMatId;
      else if (op == "mmid_glu" && (l >> type >> n >> k >> e >> u >> w >> w2)) p.launch = Launch::MulMatIdGlu;
      else throw Fail{ProbeStatus::BadRequest, "replay: cannot read plan line \"" + line + "\""};
      ++nodes;
      if (joins && (open_run.members.empty() || open_run.k != k))
        throw Fail{ProbeStatus::BadRequest, "replay: \"" + line + "\" follows no mm/mm+ node of the same K"};
      if (!joins) finish_run();
      const double us_before = us;
      const int64_t pipelined_before = pipelined;
      p.type = GgmlType(type);
      p.n = n;
      p.k = k;
      if (launch_has_ids(p.launch)) p.experts = e, p.used = u;
      const bool fused = launch_is_fused(p.launch);
      const ProfileEntry* entry = nullptr;
      bool applies = false;
      if (ncols == 1) {
        const ProfileEntry* piped =
            protocol() >= 6 && pipeline != 0 ? applied_pipelined(profile, self.arch, profile_device(self), p) : nullptr;
        if (piped && !compiled(p.type, 1, piped->config)) piped = nullptr;
        entry = piped ? piped : applied_launch(profile, self.arch, profile_device(self), p, 1);
        applies = entry && compiled(p.type, 1, entry->config);
        const Config c = applies ? entry->config : stock(p);
        const Launch ran = piped ? p.launch : applies ? entry->key.launch : p.launch;
        const bool pipelined_here = piped || (pipeline == 1 && applies && !launch_is_unfused(ran));
        us += mean_us(with_launch_problem(p, ran), c) * (pipelined_here ? 0.95 : 1.0);
        launches += launch_is_unfused(ran) ? 2 : 1;  // the pair: two plain mmvq launches
        tuned += applies;
        pipelined += pipelined_here;
      } else {  // ggml fuses at one column only: gate and up are two launches of the plain kind
        const Launch plain = launch_has_ids(p.launch) ? Launch::MulMatId : Launch::MulMat;
        const PathRun run = path_run(with_launch_problem(p, plain), ncols, forced, profile, self);
        const int count = fused ? 2 : 1;
        us += count * run.us;
        launches += count * run.mmvq;
        tuned += count * run.tuned;
        path_changes += count * run.changed;
      }
      // The node's output: each column its own dot of the activations quantized as the GPU does.
      // MUL_MAT: one column per token; MUL_MAT_ID: `u` experts per token (ids: ncols × u).
      const size_t row = *row_bytes(p.type, uint64_t(k));
      const size_t per_token = launch_has_ids(p.launch) ? size_t(u) : 1, cols = per_token * size_t(ncols);
      const auto& xb = buffer(xh);
      const size_t x_floats = op == "mmid_down" ? cols : size_t(ncols);
      if (xb.size() < x_floats * size_t(k) * 4) throw Fail{ProbeStatus::BadRequest, "replay: x is too small"};
      const auto* x = reinterpret_cast<const float*>(xb.data());
      const int32_t* ids = nullptr;
      if (launch_has_ids(p.launch)) {
        if (buffer(idsh).size() < cols * 4) throw Fail{ProbeStatus::BadRequest, "replay: ids is too small"};
        ids = reinterpret_cast<const int32_t*>(buffer(idsh).data());
      }
      const size_t slice = (size_t(n) * cols * 4 + 255) / 256 * 256;
      if (fused) at += 2 * slice;
      auto& arena = buffer(outh);
      if (at + slice > arena.size()) throw Fail{ProbeStatus::BadRequest, "replay: the output arena is too small"};
      auto* out = reinterpret_cast<float*>(arena.data() + at);
      std::vector<quant::BlockQ8_1> y(size_t(k / 32));
      for (size_t col = 0; col < cols; ++col) {
        const size_t token = col / per_token;
        quant::quantize_q8_1(x + (op == "mmid_down" ? col : token) * size_t(k), y.data(), k, quant::Q8_1Style::Gpu);
        const size_t expert = ids ? size_t(ids[col]) : 0;
        if (ids && (ids[col] < 0 || ids[col] >= e)) throw Fail{ProbeStatus::BadRequest, "replay: an expert id out of range"};
        for (int r = 0; r < n; ++r) {
          const size_t off = (expert * size_t(n) + size_t(r)) * row;
          double v = quant::dot_q8_1(p.type, buffer(w).data() + off, y.data(), k);
          if (fused) {  // the plan names gate first, then up: silu(gate) · up
            const double up = quant::dot_q8_1(p.type, buffer(w2).data() + off, y.data(), k);
            v = v / (1 + std::exp(-v)) * up;
          }
          out[col * size_t(n) + size_t(r)] = float(v);
        }
        if (wrong && entry && applies && entry->config == *wrong) out[col * size_t(n) + size_t(n - 1)] += 1.0f + std::abs(out[col * size_t(n)]);
        if (pipeline_wrong && pipelined > pipelined_before) out[col * size_t(n)] += 1.0f + std::abs(out[col * size_t(n)]);
      }
      if (p.launch == Launch::MulMat && !fused && (op == "mm" || joins)) {
        open_run.members.emplace_back(type, n);
        open_run.k = k;
        open_run.us += us - us_before;
        open_run.last_out = out;
        open_run.pipelined += pipelined - pipelined_before;
      } else if (p.launch == Launch::MulMatGlu && ncols > 1) {
        // Unfused at ncols > 1, gate and up are two MUL_MATs of one input, side by side: a run.
        open_run.members = {{type, n}, {type, n}};
        open_run.k = k;
        open_run.us = us - us_before;
        open_run.last_out = out;
        finish_run();
      }
      at += slice;
    }
    finish_run();
    Out out;
    for (uint32_t t = 0; t < tokens; ++t) {
      jitter_ = mix(jitter_ + 1);
      out.put(us * (1 + 0.004 * (double(jitter_ % 10000) / 10000.0 - 0.5)));
    }
    out.put(launches).put(tuned);
    if (protocol() >= 4) out.put(path_changes);
    if (protocol() >= 5) out.put(group_launches);
    if (protocol() >= 6) out.put(pipelined);
    nap();
    return out.bytes;
  }

  // One plain MUL_MAT or MUL_MAT_ID launch at batch width `ncols` >= 2, as the engine runs it: mmvq
  // (its stock config, or the profile's entry for that ncols) or mmq.
  struct PathRun {
    double us = 0;
    int mmvq = 0, tuned = 0, changed = 0;
  };
  PathRun path_run(GemvProblem p, int ncols, const std::map<std::pair<int, int>, MatPath>& forced, const Profile& profile,
                   const DeviceInfo& self) const {
    // ggml's own pick on this device: mmvq at every width up to 8 (MUL_MAT's ne11 <= 8, MUL_MAT_ID's cap 8).
    MatPath path = MatPath::Mmvq;
    if (const auto f = forced.find({int(p.launch), int(p.type)}); f != forced.end()) path = f->second;
    else if (const PathChoice* c = applied_path(profile, self, p.type, p.launch, ncols)) path = c->path;
    PathRun r;
    r.changed = path != MatPath::Mmvq;  // MUL_MAT_ID: only lowering the cap (to mmq) is possible
    p.ncols = 1;
    const double one_column = mean_us(p, stock(p));
    if (path == MatPath::Mmq) {
      r.us = path_us(p, ncols, MatPath::Mmq, one_column);
      return r;
    }
    r.mmvq = 1;
    const ProfileEntry* e = applied_launch(profile, self.arch, profile_device(self), p, ncols);
    r.tuned = e && compiled(p.type, ncols, e->config);
    p.ncols = ncols;
    r.us = path_us(p, ncols, MatPath::Mmvq, one_column) * (r.tuned ? factor(p, e->config) : 1.0);
    return r;
  }

  // The mmvq/mmq cost model (known answers for the tests): with T the launch's one-column mmvq time,
  // mmvq costs T × (1 + s × (N - 1)) at N columns, s = 0.4 for the k-quants (q2_K .. q6_K) and 0.1 for
  // every other type; mmq costs 2 T at any width. So mmq wins for the k-quants from N = 4 on (2.2 T
  // against 2 T; a tie never occurs) and never for the other types (1.7 T at most).
  static double path_us(const GemvProblem& p, int ncols, MatPath path, double one_column_us) {
    if (path == MatPath::Mmq) return 2.0 * one_column_us;
    const bool k_quant = p.type == GgmlType::Q2_K || p.type == GgmlType::Q3_K || p.type == GgmlType::Q4_K ||
                         p.type == GgmlType::Q5_K || p.type == GgmlType::Q6_K;
    return one_column_us * (1 + (k_quant ? 0.4 : 0.1) * (ncols - 1));
  }

  // The profile's approved path choice for this device, as the hook picks it: the device's own record
  // decides (approved or not), else the arch's.
  static const PathChoice* applied_path(const Profile& profile, const DeviceInfo& self, GgmlType type, Launch launch, int ncols) {
    for (const ProfileDevice& d : {profile_device(self), ProfileDevice{}}) {
      for (const PathChoice& c : profile.paths)
        if (c.arch == self.arch && c.device == d && c.type == type && c.launch == launch && c.ncols == ncols) {
          if (!validate_path_ok(profile, c)) return nullptr;  // malformed: stock, as the engine
          return c.approval == Approval::Approved ? &c : nullptr;
        }
    }
    return nullptr;
  }

  static bool validate_path_ok(const Profile& profile, const PathChoice& c) {
    Profile one;
    one.source = profile.source;
    one.paths = {c};
    return validate_profile(one).empty();
  }

  // GemvLaunch / TimeLaunch's header (probe_protocol.h).
  std::pair<GemvProblem, Config> launch_problem(In& in) {
    const int32_t launch = in.get<int32_t>(), glu = in.get<int32_t>();
    if (launch < 0 || launch > int32_t(Launch::MulMatIdGluUnfused) || glu < 0 || glu > 1)
      throw Fail{ProbeStatus::BadRequest, "bad launch kind or GLU"};
    auto [p, c] = problem(in);  // Gemv's fields follow, in Gemv's order
    p.launch = Launch(launch);
    p.glu = GluOp(glu);
    p.experts = in.get<int32_t>();
    p.used = in.get<int32_t>();
    p.ids_sets = in.get<int32_t>();
    const uint64_t gate_offset = in.get<uint64_t>();
    if (launch_has_ids(p.launch) && (p.used < 1 || p.used > p.experts || p.ncols != 1))
      throw Fail{ProbeStatus::BadRequest, "bad experts"};
    if (launch_is_fused(p.launch) && p.ncols != 1)
      throw Fail{ProbeStatus::EngineError, "the engine fuses gate/up only at one token"};
    if (gate_offset != weight_layout(p).gate_offset) throw Fail{ProbeStatus::BadRequest, "gate offset differs from the layout"};
    return {p, c};
  }

  std::pair<GemvProblem, Config> problem(In& in) {
    GemvProblem p;
    p.type = GgmlType(in.get<int32_t>());
    p.n = in.get<int32_t>();
    p.k = in.get<int32_t>();
    p.ncols = in.get<int32_t>();
    Config c;
    c.nwarps = in.get<int32_t>();
    c.rows_per_block = in.get<int32_t>();
    if (p.n < 1 || p.k < 32 || p.ncols < 1 || p.ncols > 8 || !row_bytes(p.type, uint64_t(p.k)))
      throw Fail{ProbeStatus::BadRequest, "bad problem"};
    return {p, c};
  }

  // The request Time and TimeKernel share: problem, config, groups × per_group launches, the
  // activations, dst and the ring of weight copies (every handle must exist).
  struct TimingRequest {
    GemvProblem problem;
    Config config;
    int groups, per_group;
    uint64_t activations;
  };
  TimingRequest timing_request(In& in, const char* op) {
    const auto [p, c] = problem(in);
    const int groups = in.get<int32_t>(), per_group = in.get<int32_t>();
    const uint64_t yh = in.get<uint64_t>(), dh = in.get<uint64_t>();
    const uint32_t copies = in.get<uint32_t>();
    for (uint32_t i = 0; i < copies; ++i) buffer(in.get<uint64_t>());
    buffer(dh);
    if (groups < 1 || per_group < 1 || copies == 0) throw Fail{ProbeStatus::BadRequest, std::string(op) + ": nothing to time"};
    return {p, c, groups, per_group, yh};
  }

  void check_launch(const GemvProblem& p, Config c, uint64_t yh) {
    if (!quantized_.count(yh)) throw Fail{ProbeStatus::BadRequest, "activations not written by Quantize"};
    if (launch_is_unfused(p.launch) && c.nwarps == 0)
      throw Fail{ProbeStatus::BadRequest, "the unfused pair is the hook's launch: it needs a config"};
    if (c.nwarps == 0) return;  // the engine's own launch
    if (c == stock(p) && !launch_is_unfused(p.launch))
      throw Fail{ProbeStatus::BadRequest, "the stock config arrived as an override; it must be sent as nwarps 0"};
    if (!compiled(p.type, p.ncols, c)) throw Fail{ProbeStatus::NotCompiled, "config not compiled in"};
  }

  bool compiled(GgmlType type, int ncols, Config c) const {
    return defaults::config_invalid_reason(type, ncols, c, 32).empty();
  }

  Config stock(const GemvProblem& p) const {
    if (stock_override_) return *stock_override_;
    return defaults::default_config(kEngine, "sm_90", p.type, p.ncols, p.k, 32);
  }

  static long protocol() {
    return std::getenv("FAKE_PROBE_PROTOCOL") ? env_long("FAKE_PROBE_PROTOCOL") : long(probe::kProtocolVersion);
  }

  // (Bytes at 1000 GB/s plus 3 µs) times factor(); the unfused pair 7 % faster than that where N is
  // a multiple of 256, else 8 % slower (so a profile meets both answers).
  double mean_us(const GemvProblem& p, Config c) const {
    const double pair = !launch_is_unfused(p.launch) ? 1.0 : p.n % 256 == 0 ? 0.93 : 1.08;
    return (gemv_bytes(p.shape(), p.ncols) / (kBandwidthGbs * 1e3) + 3.0) * factor(p, c) * pair;
  }

  // 1 for stock, 0.9 for the one faster config of shapes whose N is a multiple of 128, else
  // 1.03..1.43 hashed from the config.
  double factor(const GemvProblem& p, Config c) const {
    const Config s = stock(p);
    double f = 1;
    if (c != s) {
      const Config fast{s.nwarps >= 8 ? s.nwarps / 2 : s.nwarps * 2, s.rows_per_block == 1 ? 2 : 1};
      if (p.n % 128 == 0 && c == fast) {
        f = 0.9;
      } else {
        const uint64_t h = mix((uint64_t(p.type) << 48) ^ (uint64_t(p.n) << 24) ^ uint64_t(p.k) ^
                               (uint64_t(p.ncols) << 56) ^ (uint64_t(c.nwarps) << 40) ^ (uint64_t(c.rows_per_block) << 44) ^
                               (uint64_t(p.launch) << 60));
        f = 1.03 + 0.4 * double(h % 1000) / 1000.0;
      }
    }
    return f;
  }

  static void log_verification(const GemvProblem& p, Config c) {
    if (const char* log = std::getenv("FAKE_PROBE_GEMV_LOG"))
      if (FILE* f = std::fopen(log, "a")) {
        std::fprintf(f, "%d %d %d %d %d %d %d\n", int(p.launch), int(p.type), p.n, p.k, p.ncols, c.nwarps, c.rows_per_block);
        std::fclose(f);
      }
  }

  void nap() const {
    if (sleep_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
  }

  std::map<uint64_t, std::vector<uint8_t>> buffers_;
  std::map<uint64_t, uint64_t> quantized_;  // y -> the x it holds quantized
  uint64_t next_ = 1;
  uint64_t jitter_ = 12345;
  std::optional<Config> stock_override_;
  long sleep_us_ = 0;
};

}  // namespace

int main() {
  std::fprintf(stderr, "fake probe: started (pid %d)\n", int(::getpid()));
  const long crash_at = env_long("FAKE_PROBE_CRASH_AT"), hang_at = env_long("FAKE_PROBE_HANG_AT"),
             error_at = env_long("FAKE_PROBE_ERROR_AT");
  const auto [crash_op, crash_count] = env_op("FAKE_PROBE_CRASH_ON");
  const auto [error_op, error_count] = env_op("FAKE_PROBE_ERROR_ON");
  std::map<uint32_t, long> per_op;
  bool erroring = false;
  Probe probe;
  for (long n = 1;; ++n) {
    uint32_t head[2];
    if (!read_all(head, sizeof head)) return 0;  // Temper closed the pipe: leave
    std::vector<uint8_t> payload(head[1]);
    if (!read_all(payload.data(), payload.size())) return 0;
    const Op op = Op(head[0]);
    if (op == Op::Quit) return 0;
    const long nth = ++per_op[head[0]];
    const bool launch = op == Op::Gemv || op == Op::Time || op == Op::TimeKernel || op == Op::GemvLaunch || op == Op::TimeLaunch;
    if (n == crash_at || (head[0] == crash_op && nth == crash_count)) {
      std::fprintf(stderr, "fake probe: crashing in request %ld (op %u) as asked\n", n, head[0]);
      const int32_t status = 0;
      write_all(&status, sizeof status);  // half an answer, then the end
      std::abort();
    }
    if (n == hang_at) {
      std::fprintf(stderr, "fake probe: hanging in request %ld as asked\n", n);
      for (;;) ::pause();
    }
    if (n == error_at || (head[0] == error_op && nth == error_count)) erroring = true;
    int32_t status = 0;
    std::vector<uint8_t> answer;
    if (erroring && (launch || n == error_at || (head[0] == error_op && nth == error_count))) {
      std::fprintf(stderr, "fake probe: CUDA error: an illegal memory access was encountered (as asked)\n");
      status = int32_t(ProbeStatus::EngineError);
      const std::string text = "CUDA error: an illegal memory access was encountered";
      answer.assign(text.begin(), text.end());
    } else {
      try {
        answer = probe.handle(op, payload);
      } catch (const Fail& f) {
        status = int32_t(f.status);
        answer.assign(f.text.begin(), f.text.end());
      } catch (const std::exception& e) {
        status = int32_t(ProbeStatus::EngineError);
        const std::string text = e.what();
        answer.assign(text.begin(), text.end());
      }
    }
    const uint32_t size = uint32_t(answer.size());
    write_all(&status, sizeof status);
    write_all(&size, sizeof size);
    write_all(answer.data(), answer.size());
  }
}
