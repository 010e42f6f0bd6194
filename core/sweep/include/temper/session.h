#pragma once
// A sweep's whole record: what was measured (device, build, model, shapes, plan), every result,
// the winners and the model-level estimate. Plain data, saved as versioned JSON
// (resources/session.schema.json, docs/session-format.md); opens without a GPU.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"
#include "temper/fileio.h"
#include "temper/model.h"
#include "temper/stats.h"

namespace temper {

// The session format this build writes; it reads this version and every older one it knows.
// 2 added launch kinds: a shape key may carry "launch" (and "experts", "experts_used"); a version 1
// file reads as plain MUL_MATs.
inline constexpr int kSessionSchemaVersion = 2;
inline constexpr std::string_view kEstimateLabel = "estimate of the GEMV share of decode";
inline constexpr std::string_view kNotInDatabase = "not in database";
inline constexpr std::string_view kSyntheticShape = "synthetic shape";

// The axes a sweep covers. The plan adds the default config and the small-K variant even when
// they lie outside the grid.
struct PlanGrid {
  std::vector<int> ncols{1, 2, 4, 8};
  std::vector<int> nwarps = grid_nwarps();
  std::vector<int> rows_per_block = grid_rows_per_block();
  std::string engine;  // default tables version: a name of temper/engine_versions.h
  bool quick = false;
};

// One (shape, ncols, config) to measure. Shapes are named by (type, n, k), unique in a session.
struct PlanItem : ShapeKey {
  int ncols = 1;
  Config config;
  bool is_default = false;  // what the engine's table picks for this device, type, K and ncols
  bool is_small_k = false;  // the small-K variant: rows_per_block = nwarps at ncols 1
};

struct ExcludedConfig : ShapeKey {
  int ncols = 1;
  Config config;
  std::string reason;
  bool is_default = false, is_small_k = false;
};

// A shape with no mmvq sweep at all (e.g. an f16 tensor, or K not a whole number of blocks).
struct SkippedShape : ShapeKey {
  std::string reason;
};

// The plan for one device: items in measurement order (largest share of decode bytes first).
struct Plan {
  PlanGrid grid;
  std::string defaults_table;  // the engine's table this device gets: "GENERIC", "GCN", "RDNA3_0", ...
  std::vector<PlanItem> items;
  std::vector<ExcludedConfig> excluded;
  std::vector<SkippedShape> skipped_shapes;
  // Where the device's own stock config differs from Temper's table, one line each (engine sweeps).
  std::vector<std::string> notes;
};

// How each result is measured.
struct SweepOptions {
  int warmup = 3;                 // untimed launches before timing, per result
  int batch = 16;                 // timed samples per device call (cancellation granularity)
  // Each sample is this many launches back to back inside one event pair, in µs per launch: decode
  // runs its kernels back to back (graphs), so an event pair per launch would add time decode never
  // spends (about 1.1 µs per launch on the H100). 1: one event pair per launch (sessions before it).
  int launches_per_sample = 8;
  int min_samples = 32;
  int max_samples = 20000;
  double ci_target = 0.01;        // stop once the median's 95% CI half-width < ci_target × median
  double time_cap_s = 0.3;        // ... or once one result has taken this long
  double shape_warmup_s = 0.05;   // launches before a shape's first result, so the GPU leaves idle clocks
  double memory_fraction = 0.25;  // weight copies use at most this share of device memory
  uint64_t seed = 0;              // inputs derive from it (recorded, so a resume regenerates them)
  // Before a non-default winner is declared, it and the default are timed again in alternating
  // batches (A B, then B A, ...) so both see the same device state; the winner stands only if this
  // paired measurement also puts its CI wholly below the default's. Stops when both medians' CI
  // half-widths are < ci_target or after confirm_time_s.
  bool confirm = true;
  double confirm_time_s = 0.2;
};

// Ok: verified and timed. Failed: wrong output (never timed, never a winner). Invalid: the plan
// excluded the config (reason in `failure`; never launched). Error: it could not run (launch or
// runtime failure, recorded with the runtime's message).
enum class ResultStatus { Ok, Failed, Invalid, Error };
std::string_view result_status_name(ResultStatus s);  // "ok", "failed", "invalid", "error"

struct Result : GroupKey {
  Config config;
  bool is_default = false, is_small_k = false;
  ResultStatus status = ResultStatus::Ok;
  std::string failure;            // why, when not Ok
  // Verification against the CPU reference on the device-quantized activations.
  double max_abs_error = 0;       // worst |device - reference| over every row of every column
  double worst_error_ratio = 0;   // worst |device - reference| / tolerance (> 1 fails)
  // Timing (empty when not Ok): microseconds per launch.
  SampleStats time_us;
  // The samples in the order they were taken, as sample_trace condenses them (at most 64 run
  // medians): drift over the measurement. Empty in sessions recorded before it was kept.
  std::vector<double> trace_us;
  bool converged = false;         // CI target reached before the time cap
  double gbs = 0;                 // (weights + q8_1 activations + outputs) bytes / median
  double ops_per_s = 0;           // 2·n·k·ncols / median
  int weight_copies = 0;
  bool copies_capped = false;     // fewer copies than 2× the last-level cache needs (memory cap)
  Telemetry telemetry;            // snapshot right after timing
  // Resources of the compiled kernel as the runtime reports them (registers, shared memory,
  // blocks per CU), for occupancy; absent when the backend cannot tell.
  std::optional<KernelAttributes> kernel;
};

inline constexpr std::string_view kVerdictWinner = "winner";
inline constexpr std::string_view kVerdictDefaultStays = "default stays";
inline constexpr std::string_view kVerdictNoDefault = "no verified default";

// Per (device, shape, ncols): the verdict against the default config.
struct Verdict : GroupKey {
  std::string verdict;            // kVerdictWinner, kVerdictDefaultStays or kVerdictNoDefault
  bool is_winner() const { return verdict == kVerdictWinner; }
  Config default_config;
  Config config;                  // the winner, or the default when it stays
  double default_us = 0, default_ci_low = 0, default_ci_high = 0;
  double best_us = 0, best_ci_low = 0, best_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // default median / winner median, with CI
  // A winner that an interleaved re-measure (Confirmation) also found faster. False for winners
  // never re-measured (sweeps with confirm off, sessions from before confirmation).
  bool confirmed = false;
  // Why the verdict is not what the results alone say, e.g. "2x1 not confirmed by an interleaved
  // re-measure (default 5.31 µs, candidate 5.40 µs)"; empty otherwise.
  std::string note;
};

// The interleaved re-measure of a provisional winner against the default, per (device, shape,
// ncols): batches alternate default, candidate, then candidate, default, ... on the same buffers.
struct Confirmation : GroupKey {
  Config default_config;
  Config config;                  // the candidate: the winner the results alone pick
  SampleStats default_us, candidate_us;  // µs per launch over the paired batches
  bool converged = false;         // both CI half-widths reached ci_target before confirm_time_s
  bool confirmed = false;         // candidate ci_high < default ci_low in the paired measurement
  std::string failure;            // the device's error when the re-measure could not run (then not confirmed)
};

// One shape's part in an estimate.
struct EstimateShape : ShapeKey {
  int64_t calls_per_token = 0;
  uint64_t bytes_per_token = 0;
  bool measured = false;           // a verified default result exists at ncols 1
  Config default_config, tuned_config;
  bool tuned_unfused = false;      // tuned_config runs the fused gate/up as the hook's unfused pair
  double default_us = 0, tuned_us = 0;  // per call (median)
  double share = 0;                // of the default GEMV time per token (0..1)
};

// Model-level estimate of the GEMV share of decode on one device (ncols 1):
// time per token = Σ calls_per_token × median time of the chosen config. Only measured shapes count.
struct Estimate {
  int device = 0;
  std::string label{kEstimateLabel};
  int shapes_total = 0, shapes_measured = 0;  // incomplete sweeps under-count
  double default_us_per_token = 0, tuned_us_per_token = 0;
  double default_tokens_per_s = 0, tuned_tokens_per_s = 0;
  double bytes_per_token = 0;
  double bandwidth_gbs = 0;        // measured copy bandwidth
  double ceiling_tokens_per_s = 0; // bandwidth / bytes_per_token (of every shape of the model)
  std::vector<EstimateShape> shapes;  // in the session's shape order
};

struct BuildIdentity {
  std::string git_commit;  // "unknown" outside a git checkout
  std::string compiler, build_type, flags;
  std::string hip_archs, cuda_archs;  // empty when that backend is not built
  std::string kernel_set;
};
const BuildIdentity& this_build();

struct ModelIdentity {
  std::string file_name;      // or "synthetic shape"
  uint64_t size_bytes = 0;
  std::string header_hash;    // "fnv1a64:" + 16 hex digits over the GGUF header (metadata + tensor infos)
  std::string architecture;   // general.architecture
  bool synthetic() const { return file_name == kSyntheticShape; }
};

inline constexpr std::string_view kHeaderHashPrefix = "fnv1a64:";
// A model's identity as sessions record it: file name, size, "fnv1a64:<16 hex>" and architecture.
ModelIdentity model_identity(const Model& m);

// Which kernel a session timed. Absent in sessions from before the engine bridge: Temper's own.
inline constexpr std::string_view kKernelTemper = "temper";
inline constexpr std::string_view kKernelEngine = "engine";
struct KernelSource {
  std::string kind{kKernelTemper};  // kKernelTemper or kKernelEngine
  std::string engine;               // temper: the engine version whose tables it follows (the grid's)
  // engine: the ggml tree it was built from, its commit, the tuning hook's version, the probe run.
  std::string source_path, ggml_commit, hook_version, probe_path;
  bool is_engine() const { return kind == kKernelEngine; }
  bool operator==(const KernelSource&) const = default;
};
std::string describe(const KernelSource& k);
// "engine: ggml 1a2b3c4 (hook 1) from /src/ggml via /x/temper-probe"; kernel_label drops the paths.
std::string kernel_label(const KernelSource& k);

struct SessionDevice {
  DeviceInfo info;
  std::string spec_id{kNotInDatabase};  // GPU spec database entry
  double copy_bandwidth_gbs = 0;
  Telemetry telemetry_start, telemetry_end;
  Plan plan;
  std::string error;  // why this device stopped early; empty when it did not
};

struct Session {
  int schema_version = kSessionSchemaVersion;
  std::string id;
  std::string created, finished;  // UTC ISO-8601; finished empty while running
  std::string status = "running"; // "running", "complete", "cancelled", "failed"
  std::string tool_version;
  BuildIdentity build;
  KernelSource kernel_source;
  ModelIdentity model;
  std::vector<Shape> shapes;
  PlanGrid grid;
  SweepOptions options;
  std::vector<SessionDevice> devices;
  std::vector<Result> results;
  std::vector<Verdict> verdicts;  // one per (device, shape, ncols); JSON "winners"
  std::vector<Estimate> estimates;
  std::vector<Confirmation> confirmations;  // at most one per (device, shape, ncols)
};

// Look-ups for readers (GUI, roofline, profiles). nullptr when absent.
const SessionDevice* find_device(const Session& s, int device_index);
const Result* find_result(const Session& s, const GroupKey& group, Config config);
const Verdict* find_verdict(const Session& s, const GroupKey& group);
const Confirmation* find_confirmation(const Session& s, const GroupKey& group);

std::string utc_now_iso8601();
std::string new_session_id();

// JSON forms. `where` names the file (and line) in error messages.
nlohmann::json to_json(const Session& s);
nlohmann::json to_json(const Result& r);
Session session_from_json(const nlohmann::json& j, const std::string& where);
Result result_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Confirmation& c);
Confirmation confirmation_from_json(const nlohmann::json& j, const std::string& where);

// Atomic write; load refuses a newer schema ("session written by a newer Temper ...").
void save_session(const Session& s, const std::filesystem::path& path, const WriteOptions& options = {});
Session load_session(const std::filesystem::path& path);

}  // namespace temper
