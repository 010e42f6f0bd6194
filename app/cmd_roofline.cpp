// `temper roofline SESSION.json`: where every result of a session sits under the device's
// ceilings — arithmetic intensity, achieved ops/s, % of roof — as a table, JSON or an SVG chart.
#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/roofline.h"
#include "temper/sweep.h"
#include "temper/session.h"

namespace temper::cli {
namespace cmd_roofline {  // own namespace: the commands are compiled together (unity build)
namespace {

std::string unit(double v, const char* suffix) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (v >= 1000 && p < 5) v /= 1000, ++p;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefixes[p], suffix);
  return buf;
}

void print_text(const Roofline& r) {
  std::printf("device %d: %s (spec %s)\n", r.device, r.device_name.c_str(), r.spec_id.c_str());
  for (const auto& c : r.ceilings)
    std::printf("  %-40s %12s%s\n", c.label.c_str(),
                unit(c.value, c.kind == RooflineCeiling::Kind::Bandwidth ? "B/s" : "ops/s").c_str(),
                c.in_roof ? "  (roof)" : "");
  if (r.points.empty()) {
    std::printf("  no timed results%s\n", r.results_skipped ? (" (" + r.skipped_text() + ")").c_str() : "");
    return;
  }
  std::printf("\n%-8s %7s %7s %5s %6s %4s %8s %10s %12s %12s %7s\n", "type", "N", "K", "ncols", "nwarps", "rpb", "AI", "median us",
              "achieved", "roof", "% roof");
  auto points = r.points;
  std::stable_sort(points.begin(), points.end(), [](const RooflinePoint& a, const RooflinePoint& b) {
    return std::tuple(static_cast<uint32_t>(a.type), a.n, a.k, a.ncols) < std::tuple(static_cast<uint32_t>(b.type), b.n, b.k, b.ncols);
  });
  for (const auto& p : points)
    std::printf("%-8s %7d %7d %5d %6d %4d %8.3g %10.2f %12s %12s %6.1f%%%s\n", std::string(type_name(p.type)).c_str(), p.n, p.k,
                p.ncols, p.config.nwarps, p.config.rows_per_block, p.intensity, p.median_us, unit(p.ops_per_s, "ops/s").c_str(),
                unit(p.roof_ops_per_s, "ops/s").c_str(), p.percent_of_roof, p.is_default ? "  default" : "");
  if (r.results_skipped) std::printf("(%s)\n", r.skipped_text().c_str());
}

struct Options {
  std::string path, svg;
  int device = -1;  // all
  bool json = false, force = false;
};

int run_roofline(const Options& o) {
  const Session session = read_session(o.path);
  if (session.devices.empty()) fail(ErrorKind::BadInput, o.path + ": the session has no devices");

  std::vector<Roofline> rooflines;
  if (o.device >= 0) {
    if (!find_device(session, o.device))
      fail(ErrorKind::BadInput, "--device " + std::to_string(o.device) + ": the session has no such device");
    rooflines.push_back(build_roofline(session, o.device));
  } else {
    rooflines = build_rooflines(session);
  }

  if (!o.svg.empty()) {
    const std::string* svg_path = &o.svg;
    refuse_overwriting_inputs(*svg_path, {o.path}, "--svg");
    if (rooflines.size() > 1 && o.device < 0)
      fail(ErrorKind::BadInput, "the session has " + std::to_string(rooflines.size()) +
                                    " devices: choose one for the chart with --device N");
    const std::string title = "Roofline · " + session.model.file_name + " · session " + session.id;
    write_file_atomic(*svg_path, roofline_svg(rooflines.front(), title), {o.force});
    if (!o.json) std::fprintf(stderr, "wrote %s\n", svg_path->c_str());
  }
  if (o.json) {
    nlohmann::json j = {{"session", session.id}, {"rooflines", nlohmann::json::array()}};
    for (const auto& r : rooflines) j["rooflines"].push_back(to_json(r));
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  for (size_t i = 0; i < rooflines.size(); ++i) {
    if (i) std::printf("\n");
    print_text(rooflines[i]);
  }
  return 0;
}

const Registrar registrar{Command{
    "roofline",
    "arithmetic intensity, achieved ops/s and % of roof of a session's results; SVG chart",
    "For every timed result of the session: arithmetic intensity AI = ops / bytes with\n"
    "ops = 2*N*K*ncols and bytes = weights + q8_1 activations + outputs, achieved ops/s (from the\n"
    "median time) and its % of the roof at that AI. The roof is the measured copy bandwidth (else\n"
    "the spec's memory peak) times AI, capped by the spec's int8 peak (else its fp32 peak); the\n"
    "fp32 peak is drawn for reference. Failed results are counted, not drawn. See docs/roofline.md.",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("SESSION", o->path, "a session file")->required();
      add_device(app, o->device)->description("only device N of the session (needed for --svg when it has several)");
      app.add_option("--svg", o->svg,
                     "write a log-log chart (ceilings, roof, points coloured by type, default configs outlined, "
                     "tooltips) readable in any browser")
          ->type_name("OUT.svg");
      add_force(app, o->force);
      add_json(app, o->json)->description("print one JSON document: {session, rooflines: [{ceilings, points, ...}]}");
      return [o] { return run_roofline(*o); };
    }}};

}  // namespace
}  // namespace cmd_roofline
}  // namespace temper::cli
