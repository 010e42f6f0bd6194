#pragma once
// Device verification (`temper verify`): every mmvq instantiation this build has and this device
// can run, on random valid data, checked against the CPU reference:
//   1. the device's q8_1 quantizer against quant::quantize_q8_1 (GPU style): quants exact, the
//      half scale d and sum s within 1 ulp;
//   2. every gemv output against the exact integer reference quant::dot_q8_1 on the activations
//      the device quantized (downloaded), within quant::tolerance_q8_1, and loosely against
//      quant::dot_f64 on the original floats, within quant::tolerance_f64;
//   3. outputs poisoned with 0xFF (NaN) before every launch: each value written and finite;
//   4. on request, same-input group launches (VerifyOptions::groups): every member's outputs as 2. and 3.;
//   5. on request, the norm that writes its GEMVs' q8_1 activations (VerifyOptions::norms): its float
//      output against ggml's RMS_NORM·MUL in float64 within a bound on float rounding, its q8_1 copy
//      against quant::quantize_q8_1 of the device's own output as 1.
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"
#include "temper/quant/blocks.h"

namespace temper {

// ---- Comparisons (pure; the unit tests feed them hand-made outputs) ----

// Distance of two halves in units in the last place, across zero (+0 and -0 are 0 apart).
int half_ulp_distance(quant::half_bits a, quant::half_bits b);

struct Q8_1Check {
  int blocks = 0;
  int quant_mismatches = 0;  // int8 values that differ
  int scale_mismatches = 0;  // blocks whose d is more than 1 ulp off
  int sum_mismatches = 0;    // blocks whose s is more than 1 ulp off
  int worst_ulps = 0;        // of d and s
  std::string first_failure; // "block 3: q[7] = 12, expected 13"
  bool passed() const { return quant_mismatches == 0 && scale_mismatches == 0 && sum_mismatches == 0; }
};
Q8_1Check compare_q8_1(std::span<const quant::BlockQ8_1> device, std::span<const quant::BlockQ8_1> reference);

// What one output value must be.
struct Expected {
  double exact = 0;          // quant::dot_q8_1 on the device-quantized activations
  double tolerance = 0;      // quant::tolerance_q8_1
  double f64 = 0;            // quant::dot_f64 on the original floats
  double f64_tolerance = 0;  // quant::tolerance_f64
};

// The expected outputs of one launch for rows [r0, r1) of every output column, into out[col * n +
// row], from its buffers as the device holds them: `weights` laid out as weight_layout(p), `y` the
// device-quantized activation columns (input_columns), `ids` the `used` expert ids of an ids kind
// (set 0). Each dot is the exact q8_1 reference with its tolerance; the fused kinds' GLU,
// up · act(gate), is evaluated in double and its tolerance carries both dots' tolerances through
// its derivatives (plus the device's float rounding of act()). Error(BadInput) on an expert id out
// of range.
void expected_launch_rows(const GemvProblem& p, const uint8_t* weights, const quant::BlockQ8_1* y, const int32_t* ids,
                          int64_t r0, int64_t r1, Expected* out);

struct OutputCheck {
  int values = 0;
  int unwritten = 0;             // still NaN: the kernel never wrote them
  int nonfinite = 0;             // ±Inf
  int wrong = 0;                 // outside the tight tolerance
  int wrong_f64 = 0;             // outside the loose float64 tolerance
  double max_abs_error = 0;      // worst |device − exact| over finite values
  double worst_ratio = 0;        // worst |device − exact| / tolerance
  double worst_f64_ratio = 0;    // worst |device − f64| / f64_tolerance
  std::string first_failure;     // "row 5 column 1: 3.25, expected 3.5 ± 1e-06"
  bool passed() const { return unwritten == 0 && nonfinite == 0 && wrong == 0 && wrong_f64 == 0; }
};
// `device` and `expected` in the same order (column-major: column c row r at c·n + r); `n` rows
// per column only serves the messages.
OutputCheck compare_outputs(std::span<const float> device, std::span<const Expected> expected, int n);

// ---- The run ----

struct VerifyShape {
  int n = 0, k = 0;
};

struct VerifyOptions {
  std::vector<GgmlType> types;  // empty: every type with a CPU reference and a kernel on the device
  std::vector<int> ncols;       // empty: 1..8
  // Rows not a multiple of any rows_per_block > 1; a long K and a K shorter than one pass of a block.
  // k = 0 in a shape means "the smallest K of the type": max(256, its block size).
  std::vector<VerifyShape> shapes{{67, 4096}, {67, 0}};
  uint64_t seed = 0;            // 0: a fresh random seed (reported)
  // Which compiled kernels of each config (mmvq::KernelVariant); empty: the default engine's. The
  // pipelined one exists at one column only and is skipped at the others.
  std::vector<mmvq::KernelVariant> variants;
  // Same-input groups to verify as well (Temper's group kernel, kernels/mmvq_group.h): each entry the
  // members' weight types in order (2..4 members, at most 2 types). Per shape, member m has
  // max(1, n / (m+1)) rows of the shape's K; batch widths of `ncols` up to 4, every group config the
  // device has, the variants above but the pipelined one (groups have none).
  std::vector<std::vector<GgmlType>> groups;
  // Row lengths (multiples of 32) of the norm that writes q8_1 activations to verify too, each at 1, 3
  // and 8 rows; a device without that kernel: Error(BadInput).
  std::vector<int> norms;
};

struct VerifyCase : ShapeKey {
  int ncols = 1;
  Config config;
  mmvq::KernelVariant variant = default_engine_version().variant;
  OutputCheck check;
  std::string error;  // a GPU fault or launch failure instead of a check
  bool passed() const { return error.empty() && check.passed(); }
};

struct GroupVerifyCase {
  GemvGroupProblem problem;
  Config config;
  OutputCheck check;  // all members' outputs; first_failure names the member
  std::string error;
  bool passed() const { return error.empty() && check.passed(); }
};

// One launch of the norm that writes q8_1 activations: `rows` rows of k floats.
struct NormVerifyCase {
  int k = 0, rows = 0;
  OutputCheck check;  // the float output against the float64 reference (wrong: outside the float bound)
  Q8_1Check q8;       // the q8_1 copy against quant::quantize_q8_1 of the device's own float output
  std::string error;
  bool passed() const { return error.empty() && check.passed() && q8.passed(); }
};
// ggml's RMS_NORM·MUL of `rows` rows of k floats x with the weight row w, in float64, and each value's
// bound on a float evaluation: the sum of k squares within (k−1)·u of itself (u = 2^-24), halved by the
// square root, plus a few u for the mean, eps, rsqrt and the two products. Laid out as compare_outputs
// takes it (row r of the norm is "column" r).
std::vector<Expected> norm_reference(std::span<const float> x, std::span<const float> w, int k, int rows, float eps);

struct QuantizerCase {
  int k = 0, ncols = 0;
  Q8_1Check check;
  std::string error;
  bool passed() const { return error.empty() && check.passed(); }
};

struct VerifyReport {
  DeviceInfo device;
  uint64_t seed = 0;
  std::vector<QuantizerCase> quantizer;
  std::vector<VerifyCase> cases;
  std::vector<GroupVerifyCase> group_cases;
  std::vector<NormVerifyCase> norm_cases;
  bool cancelled = false;
  std::string fault;  // the device became unusable; the run stopped here
  bool passed() const;
};

// Which configs of (type, ncols) the device has kernels for: nwarps and rows_per_block each 1..16.
std::vector<Config> instantiated_configs(const Device& device, GgmlType type, int ncols);
// The types verify covers by default: CPU reference present and at least one kernel at ncols 1.
std::vector<GgmlType> verifiable_types(const Device& device);

using VerifyProgress = std::function<void(size_t done, size_t total)>;
VerifyReport run_verification(Device& device, const VerifyOptions& options, const VerifyProgress& progress = {},
                              const std::atomic<bool>* cancel = nullptr);

// ---- Presentation ----

// "q4_0,q4_K" → types; Error(BadInput) naming an unknown or unquantized type.
std::vector<GgmlType> parse_type_list(const std::string& text);
// "1,2,8" or "1-8" → ncols, each 1..8; Error(BadInput) otherwise.
std::vector<int> parse_ncols_list(const std::string& text);
// "2048,4096" → the norm's row lengths, each a positive multiple of 32 up to 2^20; Error(BadInput) otherwise.
std::vector<int> parse_norm_list(const std::string& text);
// "q4_K+q4_K+q6_K,q8_0+q8_0" → groups of member types; Error(BadInput) naming an unknown type or a
// group of fewer than 2 or more than 4 members or more than 2 types.
std::vector<std::vector<GgmlType>> parse_group_list(const std::string& text);
// A kernel variant's name: its engine version's short commit (temper/engine_versions.h), the
// pipelined one's with "-pipelined".
std::string_view variant_name(mmvq::KernelVariant v);
// Every variant's name in order, ", " between them: what --variants accepts besides "all".
std::string variant_names();
// A comma-separated list of variant names or "all" → variants; Error(BadInput) naming an unknown one.
std::vector<mmvq::KernelVariant> parse_variant_list(const std::string& text);

// The pass table (rows: types; columns: ncols; cells: passed/total), the quantizer line, the
// worst error and the failures (at most `max_failures` listed).
std::string format_report(const VerifyReport& report, int max_failures = 20);
nlohmann::json to_json(const VerifyReport& report);

}  // namespace temper
