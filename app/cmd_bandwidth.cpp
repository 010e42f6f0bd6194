// `temper bandwidth`: the measured device-to-device copy bandwidth (the roofline's sloped ceiling).
#include <charconv>
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "temper/device_bench.h"
#include "temper/error.h"
#include "temper/gpu_backend.h"
#include "temper/gpus.h"

namespace temper::cli {
namespace cmd_bandwidth {  // own namespace: the commands are compiled together (unity build)
namespace {

uint64_t parse_bytes(const std::string& text) {
  // A number with an optional K/M/G (binary) suffix: 256M, 1G, 4096.
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  uint64_t scale = 1;
  if (p != end && p + 1 == end) {
    switch (*p) {
      case 'K': case 'k': scale = 1ULL << 10; break;
      case 'M': case 'm': scale = 1ULL << 20; break;
      case 'G': case 'g': scale = 1ULL << 30; break;
      default: scale = 0;
    }
    ++p;
  }
  if (ec != std::errc() || p != end || scale == 0 || v == 0 || v > (1ULL << 40) / scale)
    fail(ErrorKind::BadInput, "expected a size such as 4096, 256M or 1G, got '" + text + "'");
  return v * scale;
}

struct Options {
  int device = 0;
  std::string bytes;
  bool json = false;
};

int run_bandwidth(const Options& o) {
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  auto device = gpu::open_device(list, o.device);
  const DeviceInfo& d = device->info();
  // Large enough that caches do not help: 8 × LLC, at least 256 MiB, at most a quarter of memory.
  uint64_t bytes = std::max<uint64_t>(256ULL << 20, 8 * device_llc_bytes(d));
  if (d.memory_bytes) bytes = std::min(bytes, d.memory_bytes / 4);
  if (!o.bytes.empty()) bytes = parse_bytes(o.bytes);
  const double gbs = device->copy_bandwidth_gbs(bytes);
  const GpuSpec* spec = match_device(d);
  if (o.json) {
    nlohmann::json j = {{"device", gpu::device_json(d)}, {"bytes", bytes}, {"copy_gbs", gbs}};
    if (spec && spec->memory_bandwidth_gbs > 0) {
      j["spec_gbs"] = spec->memory_bandwidth_gbs;
      j["fraction_of_spec"] = gbs / spec->memory_bandwidth_gbs;
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%s (%s, %s): device-to-device copy of %.0f MiB: %.1f GB/s (median, read + write counted)\n",
              d.name.c_str(), d.api.c_str(), d.arch.c_str(), double(bytes) / (1 << 20), gbs);
  if (spec && spec->memory_bandwidth_gbs > 0)
    std::printf("  %.0f%% of the %.0f GB/s peak in the spec database (%s)\n", 100.0 * gbs / spec->memory_bandwidth_gbs,
                spec->memory_bandwidth_gbs, spec->id.c_str());
  return 0;
}

const Registrar reg{{"bandwidth", "measure device-to-device copy bandwidth",
                     "Copies a buffer on the device 20 times (after 2 warm-up copies), each timed with device\n"
                     "events, and prints the median in GB/s (10^9 bytes/s) counting the bytes read and written.\n"
                     "SIZE defaults to 8x the last-level cache, at least 256M (suffixes K, M, G are binary).",
                     [](CLI::App& app) {
                       auto o = std::make_shared<Options>();
                       add_device(app, o->device);
                       app.add_option("--bytes", o->bytes, "bytes copied, e.g. 4096, 256M, 1G")
                           ->type_name("SIZE")
                           ->check(checked_by([](const std::string& t) { parse_bytes(t); }));
                       add_json(app, o->json);
                       return [o] { return run_bandwidth(*o); };
                     }}};

}  // namespace
}  // namespace cmd_bandwidth
}  // namespace temper::cli
