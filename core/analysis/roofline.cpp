#include "temper/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "temper/error.h"
#include "temper/format.h"

namespace temper {
namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

// 3.35e12 → "3.35 T"; used for B/s and ops/s.
std::string si(double v) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int u = 0;
  while (std::abs(v) >= 1000 && u < 6) v /= 1000, ++u;
  return fmt(v < 10 ? "%.3g" : "%.4g", v) + " " + units[u];
}

std::string xml(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* kind_name(RooflineCeiling::Kind k) { return k == RooflineCeiling::Kind::Bandwidth ? "bandwidth" : "compute"; }

}  // namespace

double gemv_ops(int64_t n, int64_t k, int ncols) { return 2.0 * static_cast<double>(n) * static_cast<double>(k) * ncols; }
double gemv_ops(const ShapeKey& s, int ncols) { return gemv_ops(s.n, s.k, ncols) * s.gemvs(); }

std::string RooflinePoint::label() const {
  return shape_text(*this, "×") + " ncols " + std::to_string(ncols) + " · " + config_text(config, "×") +
         (is_default ? " (default)" : is_small_k ? " (small-K)" : "");
}

double Roofline::bandwidth_roof() const {
  for (const auto& c : ceilings)
    if (c.in_roof && c.kind == RooflineCeiling::Kind::Bandwidth) return c.value;
  return 0;
}

double Roofline::compute_roof() const {
  for (const auto& c : ceilings)
    if (c.in_roof && c.kind == RooflineCeiling::Kind::Compute) return c.value;
  return 0;
}

double Roofline::roof(double intensity) const {
  const double bw = bandwidth_roof(), compute = compute_roof();
  if (bw <= 0) return compute;
  return compute > 0 ? std::min(bw * intensity, compute) : bw * intensity;
}

Roofline build_roofline(const Session& session, int device, const GpuSpec* spec) {
  const SessionDevice* dev = find_device(session, device);
  if (!dev) fail(ErrorKind::BadInput, "session " + session.id + " has no device " + std::to_string(device));
  Roofline r;
  r.device = device;
  r.device_name = dev->info.name;
  r.spec_id = dev->spec_id;
  // The session's spec entry by exact id; else what the runtime reported (which may match an
  // entry added to the database since the session was recorded).
  GpuSpec from_runtime;
  if (!spec) {
    const GpuSpec* g = find_gpu(dev->spec_id);
    if (g && g->id == dev->spec_id) spec = g;
  }
  if (!spec) {
    from_runtime = spec_for_device(dev->info);
    spec = &from_runtime;
  }
  using K = RooflineCeiling::Kind;
  const bool measured = dev->copy_bandwidth_gbs > 0;
  if (measured) r.ceilings.push_back({K::Bandwidth, "measured copy bandwidth", dev->copy_bandwidth_gbs * 1e9, true, true});
  if (spec->memory_bandwidth_gbs > 0)
    r.ceilings.push_back({K::Bandwidth,
                          spec->id == kNotInDatabase ? "memory peak (runtime clocks)" : "memory peak (spec)",
                          spec->memory_bandwidth_gbs * 1e9, false, !measured});
  // mmvq's ops are int8 dot products, so the int8 peak caps the roof (where it is published; on
  // most GPUs it is a matrix-unit rate the vector dp4a path cannot reach, which leaves the
  // bandwidth line as the practical roof of decode GEMV). Without it the fp32 peak caps instead.
  const bool int8_roof = spec->int8_tops > 0;
  if (int8_roof) r.ceilings.push_back({K::Compute, "int8 peak (spec)", spec->int8_tops * 1e12, false, true});
  if (spec->fp32_tflops > 0)
    r.ceilings.push_back({K::Compute, int8_roof ? "fp32 vector peak (spec, reference)" : "fp32 vector peak (spec)",
                          spec->fp32_tflops * 1e12, false, !int8_roof});

  for (const Result& res : session.results) {
    if (res.device != device) continue;
    if (res.status != ResultStatus::Ok || res.time_us.median <= 0) {
      ++r.results_skipped;
      ++(res.status == ResultStatus::Invalid ? r.results_invalid : r.results_failed);
      continue;
    }
    RooflinePoint p;
    static_cast<ShapeKey&>(p) = res.shape();
    p.ncols = res.ncols;
    p.config = res.config;
    p.is_default = res.is_default;
    p.is_small_k = res.is_small_k;
    p.ops = gemv_ops(res.shape(), res.ncols);
    p.bytes = gemv_bytes(res.shape(), res.ncols);
    p.intensity = p.ops / p.bytes;
    p.median_us = res.time_us.median;
    p.ops_per_s = p.ops / (p.median_us * 1e-6);
    p.roof_ops_per_s = r.roof(p.intensity);
    p.percent_of_roof = p.roof_ops_per_s > 0 ? 100 * p.ops_per_s / p.roof_ops_per_s : 0;
    r.points.push_back(p);
  }
  return r;
}

std::string Roofline::skipped_text() const {
  std::string out;
  if (results_invalid) out += std::to_string(results_invalid) + " invalid config" + (results_invalid == 1 ? "" : "s") + " (never launched)";
  if (results_failed) out += (out.empty() ? "" : ", ") + std::to_string(results_failed) + " failed";
  return out.empty() ? out : out + "; not drawn";
}

std::vector<Roofline> build_rooflines(const Session& session) {
  std::vector<Roofline> out;
  for (const auto& d : session.devices) out.push_back(build_roofline(session, d.info.index));
  return out;
}

nlohmann::json to_json(const Roofline& r) {
  nlohmann::json j = {{"device", r.device}, {"device_name", r.device_name}, {"spec_id", r.spec_id},
                      {"results_skipped", r.results_skipped}, {"results_invalid", r.results_invalid}, {"results_failed", r.results_failed}, {"ceilings", nlohmann::json::array()},
                      {"points", nlohmann::json::array()}};
  for (const auto& c : r.ceilings)
    j["ceilings"].push_back({{"kind", kind_name(c.kind)}, {"label", c.label}, {"value", c.value},
                             {"unit", c.kind == RooflineCeiling::Kind::Bandwidth ? "B/s" : "ops/s"},
                             {"measured", c.measured}, {"in_roof", c.in_roof}});
  for (const auto& p : r.points)
    j["points"].push_back({{"type", std::string(type_name(p.type))}, {"n", p.n}, {"k", p.k}, {"ncols", p.ncols},
                           {"nwarps", p.config.nwarps}, {"rows_per_block", p.config.rows_per_block},
                           {"is_default", p.is_default}, {"is_small_k", p.is_small_k}, {"ops", p.ops},
                           {"bytes", p.bytes}, {"intensity", p.intensity}, {"median_us", p.median_us},
                           {"ops_per_s", p.ops_per_s}, {"roof_ops_per_s", p.roof_ops_per_s},
                           {"percent_of_roof", p.percent_of_roof}});
  return j;
}

// ---- SVG --------------------------------------------------------------------------------------

std::string roofline_svg(const Roofline& r, const std::string& title) {
  constexpr double kW = 1000, kH = 640, kLeft = 90, kRight = 280, kTop = 60, kBottom = 70;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const double bw = r.bandwidth_roof(), compute = r.compute_roof();

  // Axis ranges in whole decades around the points and the ridge (where the roof turns flat).
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
  for (const auto& p : r.points) {
    xlo = std::min(xlo, p.intensity), xhi = std::max(xhi, p.intensity);
    ylo = std::min(ylo, p.ops_per_s), yhi = std::max(yhi, p.ops_per_s);
  }
  if (r.points.empty()) xlo = 0.5, xhi = 20;
  // Show the ridge (where the roof turns flat) when it is near the points; a far ridge would
  // squash them into a corner, and its ceiling is listed as "above the chart" instead.
  if (bw > 0 && compute > 0 && compute / bw < 10 * xhi) xhi = std::max(xhi, compute / bw);
  const double lx0 = std::floor(std::log10(xlo / 1.5)), lx1 = std::max(lx0 + 1, std::ceil(std::log10(xhi * 1.5)));
  if (r.roof(std::pow(10, lx1)) > 0) yhi = std::max(yhi, r.roof(std::pow(10, lx1)));
  if (r.roof(std::pow(10, lx0)) > 0) ylo = std::min(ylo, r.roof(std::pow(10, lx0)));
  if (yhi <= 0) ylo = 1e9, yhi = 1e12;
  const double ly0 = std::floor(std::log10(ylo / 1.5)), ly1 = std::max(ly0 + 1, std::ceil(std::log10(yhi * 1.5)));
  auto X = [&](double x) { return kLeft + (std::log10(x) - lx0) / (lx1 - lx0) * pw; };
  auto Y = [&](double y) { return kTop + ph - (std::log10(y) - ly0) / (ly1 - ly0) * ph; };
  auto num = [](double v) { return fmt("%.1f", v); };

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW
    << " " << kH << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s << "<title>" << xml(title) << "</title>\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << kLeft << "\" y=\"30\" font-size=\"16\" font-weight=\"bold\">" << xml(title) << "</text>\n";
  s << "<text x=\"" << kLeft << "\" y=\"48\" fill=\"#555\">" << xml(r.device_name + " · spec " + r.spec_id) << " · "
    << r.points.size() << " results" << (r.results_skipped ? " (" + r.skipped_text() + ")" : "")
    << "</text>\n";

  // Grid: decades solid, 2..9 faint; tick labels on decades.
  s << "<g stroke-width=\"1\">\n";
  for (double d = lx0; d <= lx1 + 1e-9; ++d) {
    for (int m = 1; m < 10 && d + std::log10(m) <= lx1 + 1e-9; ++m) {
      const double x = X(m * std::pow(10, d));
      s << "<line x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\"" << num(x) << "\" y2=\"" << kTop + ph << "\" stroke=\""
        << (m == 1 ? "#ccc" : "#eee") << "\"/>\n";
      if (d == lx1) break;
    }
    s << "<text x=\"" << num(X(std::pow(10, d))) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
      << fmt("%g", std::pow(10, d)) << "</text>\n";
  }
  for (double d = ly0; d <= ly1 + 1e-9; ++d) {
    for (int m = 1; m < 10 && d + std::log10(m) <= ly1 + 1e-9; ++m) {
      const double y = Y(m * std::pow(10, d));
      s << "<line x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\"" << kLeft + pw << "\" y2=\"" << num(y) << "\" stroke=\""
        << (m == 1 ? "#ccc" : "#eee") << "\"/>\n";
      if (d == ly1) break;
    }
    s << "<text x=\"" << kLeft - 8 << "\" y=\"" << num(Y(std::pow(10, d)) + 4) << "\" text-anchor=\"end\">"
      << xml(si(std::pow(10, d))) << "</text>\n";
  }
  s << "</g>\n";
  s << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 25
    << "\" text-anchor=\"middle\">arithmetic intensity (ops per byte: 2·N·K·ncols / (weights + q8_1 activations + outputs))</text>\n";
  s << "<text transform=\"translate(22," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">achieved ops/s</text>\n";

  // Ceilings, clipped to the plot by hand (not every SVG renderer honours clip paths).
  const double x0 = std::pow(10, lx0), x1 = std::pow(10, lx1);
  const double slope_deg = -std::atan((ph / (ly1 - ly0)) / (pw / (lx1 - lx0))) * 180 / 3.14159265358979;
  // The part of y = value·x inside the plot, as log10 x from..to; empty when from >= to.
  auto sloped = [&](double value, double lx_max) {
    return std::pair(std::max(lx0, ly0 - std::log10(value)), std::min({lx1, ly1 - std::log10(value), lx_max}));
  };
  auto line = [&](double xa, double ya, double xb, double yb, const char* colour, double width, const char* extra) {
    s << "<line x1=\"" << num(X(xa)) << "\" y1=\"" << num(Y(ya)) << "\" x2=\"" << num(X(xb)) << "\" y2=\"" << num(Y(yb))
      << "\" stroke=\"" << colour << "\" stroke-width=\"" << width << "\"" << extra << "/>\n";
  };
  auto in_y = [&](double v) { return std::log10(v) >= ly0 && std::log10(v) <= ly1; };
  int bandwidth_labels = 0;
  for (const auto& c : r.ceilings) {
    const char* colour = c.measured ? "#1b7837" : c.in_roof ? "#444" : "#999";
    const char* dash = c.in_roof ? "" : " stroke-dasharray=\"6 4\"";
    const std::string text = c.label + ": " + si(c.value) + (c.kind == RooflineCeiling::Kind::Bandwidth ? "B/s" : "ops/s");
    if (c.kind == RooflineCeiling::Kind::Bandwidth) {
      const auto [from, to] = sloped(c.value, lx1);
      if (from >= to) continue;
      line(std::pow(10, from), c.value * std::pow(10, from), std::pow(10, to), c.value * std::pow(10, to), colour, 1.5, dash);
      // Labels staggered along the line, the measured one below it, the others above.
      const double lx = from + (0.06 + 0.3 * bandwidth_labels++) * (to - from);
      const double x = X(std::pow(10, lx)), y = Y(c.value * std::pow(10, lx)) + (c.measured ? 14 : -6);
      s << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" transform=\"rotate(" << fmt("%.1f", slope_deg) << " " << num(x)
        << " " << num(y) << ")\" fill=\"#333\">" << xml(text) << "</text>\n";
    } else if (in_y(c.value)) {
      line(x0, c.value, x1, c.value, colour, 1.5, dash);
      s << "<text x=\"" << kLeft + pw - 6 << "\" y=\"" << num(Y(c.value) - 6) << "\" text-anchor=\"end\" fill=\"#333\">"
        << xml(text) << "</text>\n";
    }
  }
  // The roof itself, bold: the bandwidth line up to the ridge, then flat.
  const char* roof_style = " stroke-opacity=\"0.6\" stroke-linecap=\"round\"";
  const double lridge = bw > 0 && compute > 0 ? std::log10(compute / bw) : lx1;
  if (bw > 0) {
    const auto [from, to] = sloped(bw, lridge);
    if (from < to) line(std::pow(10, from), bw * std::pow(10, from), std::pow(10, to), bw * std::pow(10, to), "#d6604d", 3, roof_style);
  }
  if (compute > 0 && in_y(compute) && lridge < lx1)
    line(std::pow(10, std::max(lx0, lridge)), compute, x1, compute, "#d6604d", 3, roof_style);

  // Points: one colour per type; default configs as outlined squares.
  const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728"};
  std::map<std::string, const char*> colour_of;
  for (const auto& p : r.points) {
    const std::string t(type_name(p.type));
    if (!colour_of.count(t)) colour_of[t] = palette[colour_of.size() % std::size(palette)];
  }
  s << "<g>\n";
  for (const auto& p : r.points) {
    const double x = X(p.intensity), y = Y(p.ops_per_s);
    const char* colour = colour_of[std::string(type_name(p.type))];
    const std::string tip = p.label() + "\nAI " + fmt("%.3g", p.intensity) + " ops/B, " + si(p.ops_per_s) + "ops/s, " +
                            fmt("%.1f", p.percent_of_roof) + "% of roof, median " + fmt("%.2f", p.median_us) + " µs";
    if (p.is_default)
      s << "<rect x=\"" << num(x - 5) << "\" y=\"" << num(y - 5) << "\" width=\"10\" height=\"10\" fill=\"" << colour
        << "\" stroke=\"black\" stroke-width=\"1.5\"><title>" << xml(tip) << "</title></rect>\n";
    else
      s << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"4\" fill=\"" << colour
        << "\" fill-opacity=\"0.75\"><title>" << xml(tip) << "</title></circle>\n";
  }
  s << "</g>\n";

  // Legend.
  double ly = kTop + 10;
  const double lx = kW - kRight + 20;
  s << "<g>\n<text x=\"" << lx << "\" y=\"" << ly << "\" font-weight=\"bold\">types</text>\n";
  for (const auto& [t, colour] : colour_of) {
    ly += 18;
    s << "<circle cx=\"" << lx + 6 << "\" cy=\"" << ly - 4 << "\" r=\"5\" fill=\"" << colour << "\"/><text x=\"" << lx + 18
      << "\" y=\"" << ly << "\">" << xml(t) << "</text>\n";
  }
  ly += 26;
  s << "<rect x=\"" << lx + 1 << "\" y=\"" << ly - 9 << "\" width=\"10\" height=\"10\" fill=\"white\" stroke=\"black\" stroke-width=\"1.5\"/>"
    << "<text x=\"" << lx + 18 << "\" y=\"" << ly << "\">default config</text>\n";
  ly += 18;
  s << "<circle cx=\"" << lx + 6 << "\" cy=\"" << ly - 4 << "\" r=\"4\" fill=\"#888\"/><text x=\"" << lx + 18 << "\" y=\"" << ly
    << "\">other configs</text>\n";
  ly += 30;
  s << "<text x=\"" << lx << "\" y=\"" << ly << "\" font-weight=\"bold\">ceilings</text>\n";
  ly += 4;
  s << "<line x1=\"" << lx << "\" y1=\"" << ly + 10 << "\" x2=\"" << lx + 14 << "\" y2=\"" << ly + 10
    << "\" stroke=\"#d6604d\" stroke-width=\"3\" stroke-opacity=\"0.6\"/><text x=\"" << lx + 18 << "\" y=\"" << ly + 14
    << "\">roof (% of roof is taken here)</text>\n";
  ly += 18;
  for (const auto& c : r.ceilings) {
    const bool off_chart = c.kind == RooflineCeiling::Kind::Compute && std::log10(c.value) > ly1;
    s << "<line x1=\"" << lx << "\" y1=\"" << ly + 10 << "\" x2=\"" << lx + 14 << "\" y2=\"" << ly + 10 << "\" stroke=\""
      << (c.measured ? "#1b7837" : c.in_roof ? "#444" : "#999") << "\" stroke-width=\"1.5\""
      << (c.in_roof ? "" : " stroke-dasharray=\"4 3\"") << "/><text x=\"" << lx + 18 << "\" y=\"" << ly + 14 << "\">"
      << xml(c.label) << "</text>\n";
    ly += 16;
    s << "<text x=\"" << lx + 18 << "\" y=\"" << ly + 14 << "\" fill=\"#555\">"
      << xml(si(c.value) + (c.kind == RooflineCeiling::Kind::Bandwidth ? "B/s" : "ops/s") + (off_chart ? " (above the chart)" : ""))
      << "</text>\n";
    ly += 20;
  }
  s << "</g>\n</svg>\n";
  return s.str();
}

}  // namespace temper
