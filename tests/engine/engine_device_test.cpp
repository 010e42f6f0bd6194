// EngineDevice against the fake probe: every Device method as a protocol round trip, and every way
// a probe can fail (missing, crashing, hanging, answering an error) as one clear temper::Error.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "temper/defaults.h"
#include "engine/probe_protocol.h"
#include "fake_probe_options.h"
#include "temper/engine_device.h"
#include "temper/keys.h"
#include "temper/quant/reference.h"

using namespace temper;
using namespace temper::engine;
namespace fs = std::filesystem;

namespace {

// Sets an environment variable for the probes started in its lifetime.
struct EnvVar {
  std::string name;
  EnvVar(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~EnvVar() { ::unsetenv(name.c_str()); }
};

// Every probe log of this test process goes to a private engine cache (XDG_CACHE_HOME), removed at
// the end: a failing probe's log is kept there, and no test run leaves it in the user's cache.
class PrivateCache : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("temper-engine-cache-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  fs::path dir_;
};
[[maybe_unused]] ::testing::Environment* const private_cache = ::testing::AddGlobalTestEnvironment(new PrivateCache);

// Sets an environment variable for its lifetime, then puts the old value back.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { old ? (void)::setenv(name.c_str(), old->c_str(), 1) : (void)::unsetenv(name.c_str()); }
};

bool empty_dir(const fs::path& d) { return fs::is_directory(d) && fs::directory_iterator(d) == fs::directory_iterator(); }

Error error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no temper::Error thrown";
  return Error(ErrorKind::Internal, "");
}

// q4_0 weights and activations for a 64 x 256 GEMV, quantized on the device, checked on the CPU.
struct Gemv {
  GemvProblem p{{GgmlType::Q4_0, 64, 256}, 2};
  std::vector<uint8_t> w;
  std::vector<float> x;
  DeviceBuffer wd, xd, yd, dst;
  explicit Gemv(Device& dev) {
    w.resize(*row_bytes(p.type, uint64_t(p.k)) * size_t(p.n));
    quant::fill_random(p.type, w.data(), p.n, p.k, 7);
    x.resize(size_t(p.k) * size_t(p.ncols));
    quant::fill_random_activations(x.data(), int64_t(x.size()), 8);
    wd = dev.alloc(w.size());
    dev.upload(wd, w.data(), w.size());
    xd = dev.alloc(x.size() * 4);
    dev.upload(xd, x.data(), x.size() * 4);
    yd = dev.alloc(size_t(p.k / 32) * size_t(p.ncols) * sizeof(quant::BlockQ8_1));
    dev.quantize_q8_1(xd, yd, p.k, p.ncols);
    dst = dev.alloc(size_t(p.n) * size_t(p.ncols) * 4);
  }
  // Runs config c and compares every output with the exact reference on the device's q8_1 blocks.
  void check(Device& dev, Config c) {
    dev.fill(dst, 0xFF);
    dev.gemv(p, c, wd, yd, dst);
    std::vector<float> out(size_t(p.n) * size_t(p.ncols));
    dev.download(out.data(), dst, out.size() * 4);
    std::vector<quant::BlockQ8_1> y(size_t(p.k / 32) * size_t(p.ncols));
    dev.download(y.data(), yd, y.size() * sizeof(quant::BlockQ8_1));
    const size_t row = *row_bytes(p.type, uint64_t(p.k));
    for (int col = 0; col < p.ncols; ++col)
      for (int r = 0; r < p.n; ++r)
        ASSERT_EQ(out[size_t(col) * size_t(p.n) + size_t(r)],
                  quant::dot_q8_1(p.type, w.data() + size_t(r) * row, y.data() + size_t(col) * size_t(p.k / 32), p.k))
            << "row " << r << " col " << col;
  }
};

TEST(EngineDevice, HelloBecomesDeviceInfo) {
  EngineDevice dev(test::fake_probe(30));
  EXPECT_EQ(dev.info().api, "engine-cuda");
  EXPECT_EQ(dev.info().arch, "sm_90");
  EXPECT_EQ(dev.info().name, "Temper fake probe (CPU reference, synthetic times)");
  EXPECT_EQ(dev.info().warp_size, 32);
  EXPECT_EQ(dev.info().l2_bytes, 1048576u);
  EXPECT_EQ(dev.info().compute_units, 16);
  EXPECT_EQ(dev.hello().at("kernel_set"), "ci");
  const KernelSource k = dev.kernel_source();
  EXPECT_TRUE(k.is_engine());
  EXPECT_EQ(k.hook_version, "fake-1");
  EXPECT_EQ(k.probe_path, fs::absolute(FAKE_PROBE).lexically_normal().string());
  EXPECT_EQ(api_for_arch("gfx90a"), "engine-hip");
  EXPECT_TRUE(is_engine_api("engine-hip"));
  EXPECT_FALSE(is_engine_api("cuda"));
}

TEST(EngineDevice, BuffersRoundTrip) {
  EngineDevice dev(test::fake_probe(30));
  DeviceBuffer b = dev.alloc(1000);
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 3);
  dev.upload(b, data.data(), data.size());
  std::vector<uint8_t> back(1000);
  dev.download(back.data(), b, back.size());
  EXPECT_EQ(back, data);
  const uint8_t patch[3] = {1, 2, 3};
  dev.upload(b, patch, 3, 500);
  uint8_t part[5];
  dev.download(part, b, 5, 499);
  EXPECT_EQ(part[0], data[499]);
  EXPECT_EQ(part[1], 1);
  EXPECT_EQ(part[3], 3);
  EXPECT_EQ(part[4], data[503]);
  dev.fill(b, 0xAB);
  dev.download(back.data(), b, back.size());
  EXPECT_EQ(back, std::vector<uint8_t>(1000, 0xAB));
  // Past the end: the probe says so, Temper reports it, the probe lives on.
  const Error e = error_of([&] { dev.download(back.data(), b, 10, 995); });
  EXPECT_NE(std::string(e.what()).find("past the buffer's end"), std::string::npos) << e.what();
  dev.download(back.data(), b, 10);
}

TEST(EngineDevice, GemvMatchesTheReferenceAtStockAndOverride) {
  EngineDevice dev(test::fake_probe(30));
  Gemv g(dev);
  const Config stock = *dev.stock_config(g.p.type, g.p.ncols, g.p.k);
  EXPECT_EQ(stock, defaults::default_config("ggml-d99724f", "sm_90", g.p.type, g.p.ncols, g.p.k));
  // The fake probe refuses the stock config as an override: passing here means it went as nwarps 0.
  g.check(dev, stock);
  g.check(dev, Config{2, 2});
  EXPECT_TRUE(dev.has_kernel(g.p.type, 1, {4, 2}));
  EXPECT_TRUE(dev.has_kernel(g.p.type, 1, {32, 1}));  // the grid's nwarps 32 (hook v4)
  // (32, 8) is in the grid but not compiled at ncols 1: its fused twin exceeds 48 KiB of shared memory.
  EXPECT_FALSE(dev.has_kernel(g.p.type, 1, {32, 8}));
  const Error e = error_of([&] { dev.gemv(g.p, Config{32, 8}, g.wd, g.yd, g.dst); });
  EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
  EXPECT_NE(std::string(e.what()).find("not compiled"), std::string::npos) << e.what();
}

TEST(EngineDevice, TimesAttributesAndBandwidth) {
  EngineDevice dev(test::fake_probe(30));
  Gemv g(dev);
  const DeviceBuffer* copies[] = {&g.wd};
  const Config stock = *dev.stock_config(g.p.type, g.p.ncols, g.p.k);
  const std::vector<double> a = dev.time_gemv_grouped(g.p, stock, copies, g.yd, g.dst, 5, 8);
  ASSERT_EQ(a.size(), 5u);
  for (double us : a) EXPECT_GT(us, 3.0);
  EXPECT_EQ(dev.time_gemv(g.p, stock, copies, g.yd, g.dst, 3).size(), 3u);
  // N = 64 has no faster config: every other config is slower than stock.
  const std::vector<double> b = dev.time_gemv_grouped(g.p, Config{1, 1}, copies, g.yd, g.dst, 5, 8);
  EXPECT_GT(*std::min_element(b.begin(), b.end()), *std::max_element(a.begin(), a.end()));
  const auto attr = dev.kernel_attributes(g.p.type, 1, {4, 2});
  ASSERT_TRUE(attr);
  EXPECT_EQ(attr->registers, 48);
  EXPECT_EQ(attr->max_threads_per_block, 128);
  EXPECT_DOUBLE_EQ(dev.copy_bandwidth_gbs(1 << 20), 1000.0);
}

TEST(EngineDevice, BackendHandsOutTheProbeItStarted) {
  EngineBackend backend(test::fake_probe(30));
  const auto infos = backend.devices();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].api, "engine-cuda");
  EXPECT_NE(backend.open(0), nullptr);
  EXPECT_EQ(error_of([&] { backend.open(1); }).kind(), ErrorKind::NoDevice);
  ProbeOptions missing = test::fake_probe(30);
  missing.probe = "/nonexistent/temper-probe";
  EngineBackend none(missing);
  EXPECT_TRUE(none.devices().empty());
  EXPECT_NE(none.unavailable_reason().find("no such file"), std::string::npos) << none.unavailable_reason();
}

TEST(EngineDeviceErrors, MissingOrNotExecutable) {
  ProbeOptions o = test::fake_probe(30);
  o.probe = "/nonexistent/temper-probe";
  Error e = error_of([&] { EngineDevice dev(o); });
  EXPECT_EQ(e.kind(), ErrorKind::BadInput);
  EXPECT_EQ(std::string(e.what()), "temper-probe /nonexistent/temper-probe: no such file");
  const fs::path plain = fs::temp_directory_path() / "temper-engine-test-not-executable";
  std::ofstream(plain) << "not a program\n";
  ::chmod(plain.c_str(), 0644);
  o.probe = plain;
  e = error_of([&] { EngineDevice dev(o); });
  EXPECT_EQ(e.kind(), ErrorKind::BadInput);
  EXPECT_NE(std::string(e.what()).find("not an executable"), std::string::npos) << e.what();
  fs::remove(plain);
}

TEST(EngineDeviceErrors, CrashMidRequestIsAGpuFaultWithStderrAndLog) {
  EnvVar crash("FAKE_PROBE_CRASH_ON", "Gemv");
  EngineDevice dev(test::fake_probe(30));
  Gemv g(dev);
  Error e = error_of([&] { g.check(dev, Config{2, 2}); });
  EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
  const std::string what = e.what();
  EXPECT_NE(what.find("killed by signal 6"), std::string::npos) << what;
  EXPECT_NE(what.find("during Gemv q4_0 64x256 ncols 2 config 2x2"), std::string::npos) << what;
  EXPECT_NE(what.find("fake probe: crashing in request"), std::string::npos) << what;
  EXPECT_NE(what.find("; log: " + dev.log_path().string()), std::string::npos) << what;
  // The probe is gone: every later call says why, at once.
  e = error_of([&] { dev.alloc(16); });
  EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
  EXPECT_EQ(std::string(e.what()), what);
}

TEST(EngineDeviceErrors, HangEndsInATimeout) {
  EnvVar hang("FAKE_PROBE_HANG_AT", "3");
  EngineDevice dev(test::fake_probe(0.5));
  DeviceBuffer b = dev.alloc(64);  // request 2
  const auto start = std::chrono::steady_clock::now();
  const Error e = error_of([&] { dev.fill(b, 0); });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
  EXPECT_NE(std::string(e.what()).find("did not answer Fill within 0.5 s (killed)"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("hanging in request 3"), std::string::npos) << e.what();
  EXPECT_LT(waited, 5.0);
}

TEST(EngineDeviceErrors, ErrorAnswerIsAGpuFaultAndTheProbeLivesOn) {
  EnvVar err("FAKE_PROBE_ERROR_ON", "Gemv");
  EngineDevice dev(test::fake_probe(30));
  Gemv g(dev);
  const Error e = error_of([&] { dev.gemv(g.p, Config{2, 2}, g.wd, g.yd, g.dst); });
  EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
  const std::string what = e.what();
  EXPECT_NE(what.find("Gemv q4_0 64x256 ncols 2 config 2x2: CUDA error: an illegal memory access"), std::string::npos)
      << what;
  EXPECT_NE(what.find("last stderr:"), std::string::npos) << what;
  DeviceBuffer b = dev.alloc(16);  // not a dead probe
  dev.fill(b, 1);
}

TEST(EngineDeviceErrors, OtherProtocolVersionIsRefused) {
  EnvVar v("FAKE_PROBE_PROTOCOL", "7");
  const Error e = error_of([&] { EngineDevice dev(test::fake_probe(30)); });
  EXPECT_EQ(e.kind(), ErrorKind::GpuFault);
  EXPECT_NE(std::string(e.what()).find("speaks protocol 7; this Temper speaks 1.." + std::to_string(temper::probe::kProtocolVersion)),
            std::string::npos)
      << e.what();
}

// Kernel-only timing (Op::TimeKernel): the fake answers (bytes at 1000 GB/s) × the config's factor,
// exactly; every config arrives as itself (the fake refuses nwarps 0 here), the stock one included.
TEST(EngineDeviceKernelOnly, TimesAreTheKernelAloneForEveryConfig) {
  ProbeOptions o = test::fake_probe(30);
  o.kernel_only = true;
  EngineDevice kernel(o);
  EngineDevice whole(test::fake_probe(30));
  Gemv gk(kernel), gw(whole);
  const Config stock = defaults::default_config("ggml-d99724f", "sm_90", gk.p.type, gk.p.ncols, gk.p.k, 32);
  const double bytes_us = gemv_bytes(gk.p.type, gk.p.n, gk.p.k, gk.p.ncols) / 1e6;
  const DeviceBuffer* kc[] = {&gk.wd};
  const DeviceBuffer* wc[] = {&gw.wd};
  const std::vector<double> s = kernel.time_gemv_grouped(gk.p, stock, kc, gk.yd, gk.dst, 3, 4);
  ASSERT_EQ(s.size(), 3u);
  for (double us : s) EXPECT_DOUBLE_EQ(us, bytes_us);
  // The same ratio between configs as the whole MUL_MAT's (within its ±0.2 % jitter), without its 3 µs.
  const double whole_stock = whole.time_gemv(gw.p, stock, wc, gw.yd, gw.dst, 1).at(0);
  EXPECT_NEAR(whole_stock, bytes_us + 3.0, 0.01 * (bytes_us + 3.0));
  for (Config c : {Config{1, 1}, Config{8, 2}, Config{2, 4}}) {
    if (c == stock) continue;
    const double k_us = kernel.time_gemv(gk.p, c, kc, gk.yd, gk.dst, 1).at(0);
    const double w_us = whole.time_gemv(gw.p, c, wc, gw.yd, gw.dst, 1).at(0);
    EXPECT_GT(k_us, bytes_us) << config_text(c, ",");
    EXPECT_NEAR(k_us / bytes_us, w_us / whole_stock, 0.005 * k_us / bytes_us) << config_text(c, ",");
  }
}

TEST(EngineDeviceKernelOnly, ConfigNotCompiledInIsBadInput) {
  ProbeOptions o = test::fake_probe(30);
  o.kernel_only = true;
  EngineDevice dev(o);
  Gemv g(dev);
  const DeviceBuffer* copies[] = {&g.wd};
  ASSERT_FALSE(defaults::config_invalid_reason(g.p.type, g.p.ncols, Config{3, 1}, 32).empty());
  const Error e = error_of([&] { dev.time_gemv(g.p, Config{3, 1}, copies, g.yd, g.dst, 2); });
  EXPECT_EQ(e.kind(), ErrorKind::BadInput);
  EXPECT_NE(std::string(e.what()).find("TimeKernel q4_0 64x256 ncols 2 config 3x1: config not compiled in"),
            std::string::npos)
      << e.what();
  EXPECT_EQ(dev.time_gemv(g.p, Config{1, 1}, copies, g.yd, g.dst, 2).size(), 2u);  // the probe lives on
}

TEST(EngineDeviceKernelOnly, ProtocolOneProbeIsRefusedInOneLine) {
  EnvVar v("FAKE_PROBE_PROTOCOL", "1");
  {
    EngineDevice old(test::fake_probe(30));  // still fine for whole MUL_MATs
    Gemv g(old);
    g.check(old, Config{1, 1});
  }
  ProbeOptions o = test::fake_probe(30);
  o.kernel_only = true;
  const Error e = error_of([&] { EngineDevice dev(o); });
  EXPECT_EQ(e.kind(), ErrorKind::BadInput);
  const std::string what = e.what();
  EXPECT_NE(what.find("speaks protocol 1, which has no kernel-only timing (protocol 2); rebuild it with `temper engine build`"),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
}

// The probe's stderr log never goes to the user's temp directory: it lives in the engine cache,
// disappears when the probe ends well and stays (named in the error) when the probe failed.
TEST(EngineDeviceLog, KeptOnlyWhenTheProbeFailedAndNeverInTheTempDirectory) {
  const fs::path root = fs::temp_directory_path() / ("temper-probe-log-test-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "tmp");
  {
    ScopedEnv tmp("TMPDIR", (root / "tmp").string()), cache("XDG_CACHE_HOME", (root / "cache").string());
    const fs::path logs = root / "cache" / "temper" / "engine" / "logs";
    fs::path log;
    {
      EngineDevice dev(test::fake_probe(30));
      Gemv g(dev);
      g.check(dev, Config{2, 2});
      log = dev.log_path();
      EXPECT_EQ(log.parent_path(), logs);
      EXPECT_TRUE(fs::exists(log));
    }
    EXPECT_FALSE(fs::exists(log)) << "a probe that ended well keeps no log";
    {
      EnvVar crash("FAKE_PROBE_CRASH_ON", "Gemv");
      EngineDevice dev(test::fake_probe(30));
      Gemv g(dev);
      const std::string what = error_of([&] { g.check(dev, Config{2, 2}); }).what();
      log = dev.log_path();
      EXPECT_NE(what.find("; log: " + log.string()), std::string::npos) << what;
    }
    EXPECT_TRUE(fs::is_regular_file(log)) << "the log the error names is kept";
    EXPECT_EQ(log.parent_path(), logs);
    {
      ScopedEnv keep("TEMPER_PROBE_LOG_DIR", (root / "kept").string());
      { EngineDevice dev(test::fake_probe(30)); log = dev.log_path(); }
      EXPECT_EQ(log.parent_path(), root / "kept");
      EXPECT_TRUE(fs::is_regular_file(log)) << "TEMPER_PROBE_LOG_DIR keeps every log";
    }
    EXPECT_TRUE(empty_dir(root / "tmp")) << "the probe left files in TMPDIR";
  }
  fs::remove_all(root);
}

}  // namespace
