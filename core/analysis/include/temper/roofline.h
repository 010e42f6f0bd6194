#pragma once
// The roofline of a session: ceilings (measured copy bandwidth, spec peaks) and one point per
// verified result at arithmetic intensity AI = ops / bytes, ops = 2·N·K·ncols, bytes = weights +
// q8_1 activations + outputs; y = achieved ops/s. See docs/roofline.md.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"
#include "temper/gpus.h"
#include "temper/session.h"

namespace temper {

struct RooflineCeiling {
  enum class Kind { Bandwidth, Compute };
  Kind kind = Kind::Bandwidth;
  std::string label;     // "measured copy bandwidth", "memory peak (spec)", "int8 peak (spec)", ...
  double value = 0;      // bytes/s (Bandwidth) or ops/s (Compute)
  bool measured = false;
  bool in_roof = false;  // part of the roof that "% of roof" is taken against
};

struct RooflinePoint : ShapeKey {
  int ncols = 1;
  Config config;
  bool is_default = false, is_small_k = false;
  double ops = 0, bytes = 0;
  double intensity = 0;       // ops / byte
  double ops_per_s = 0;       // achieved, from the median time
  double median_us = 0;
  double roof_ops_per_s = 0;  // the roof at this intensity
  double percent_of_roof = 0; // 100 × ops_per_s / roof
  std::string label() const;  // "q4_K 4096×14336 ncols 1 · 4×1 (default)"
};

struct Roofline {
  int device = 0;
  std::string device_name, spec_id;
  std::vector<RooflineCeiling> ceilings;
  std::vector<RooflinePoint> points;
  int results_skipped = 0;  // failed or errored results (not timed, so not drawn)
  // results_skipped by why: configs the plan excluded (never launched) and those that ran but
  // failed verification or errored.
  int results_invalid = 0, results_failed = 0;
  std::string skipped_text() const;  // "28 invalid configs (never launched), 3 failed; not drawn"; "" when none
  // The roof at intensity x: min(bandwidth roof × x, compute roof).
  double roof(double intensity) const;
  double bandwidth_roof() const;  // bytes/s: measured copy bandwidth, else the spec peak; 0 if neither
  double compute_roof() const;    // ops/s: the spec's int8 peak, else its fp32 peak; 0 if unknown (no cap)
};

double gemv_ops(int64_t n, int64_t k, int ncols);  // 2·n·k·ncols
double gemv_ops(const ShapeKey& shape, int ncols);  // every GEMV of one launch (gate and up, each expert)

// The roofline of one device of a session (Error(BadInput) when the session has no such device).
// `spec` overrides the database look-up of the device's spec_id (nullptr: look it up).
Roofline build_roofline(const Session& session, int device, const GpuSpec* spec = nullptr);
// One per device of the session, in session order.
std::vector<Roofline> build_rooflines(const Session& session);

nlohmann::json to_json(const Roofline& r);
// A standalone, readable log-log SVG chart: ceilings, the roof, points (colour per type, default
// configs outlined), labels and a legend; tooltips per point. Produced without Qt.
std::string roofline_svg(const Roofline& r, const std::string& title);

}  // namespace temper
