#pragma once
// Profiles (issue 9): the approved configs per (arch, type, N, K, ncols) with provenance — the
// user's deliverable. Made from a session's winners, approved by policy or one by one, saved as
// versioned JSON (resources/profile.schema.json, docs/profile-format.md) and exported to what
// engines read: kernel-anvil's JSON (bucketed, lossy: every dropped or merged entry is reported),
// a standalone C++17 header, or CSV of a session's results.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"
#include "temper/session.h"
#include "temper/types.h"

namespace temper {

// The profile format this build writes; it reads this version and every older one it knows.
// 2 added, per entry, the launch kind (launch, experts, experts_used) and the device.
inline constexpr int kProfileSchemaVersion = 2;
inline constexpr std::string_view kSourceTemper = "temper";
inline constexpr std::string_view kSourceKernelAnvil = "kernel-anvil";  // imported: no provenance
inline constexpr double kDefaultMinSpeedup = 0.03;  // "approve significant": at least 3% faster

enum class Approval { Pending, Approved, Rejected };
std::string_view approval_name(Approval a);  // "pending", "approved", "rejected"
std::optional<Approval> parse_approval(std::string_view name);

// The one device an entry is for. Two GPUs of one arch can want different configs (an H100 and an
// H200; a 7900 XTX and a 780M iGPU), so entries made from a sweep name the device they were measured
// on; the hooked engine matches the device it runs on by name and compute units (memory is shown,
// not matched) and prefers its own entries to arch-level ones. An empty name: every device of the
// arch (schema 1 entries, kernel-anvil imports).
struct ProfileDevice {
  std::string name;
  int compute_units = 0;
  uint64_t memory_mib = 0;
  bool any() const { return name.empty(); }
  friend bool operator==(const ProfileDevice& a, const ProfileDevice& b) {
    return a.name == b.name && a.compute_units == b.compute_units;
  }
  friend std::strong_ordering operator<=>(const ProfileDevice& a, const ProfileDevice& b) {
    if (auto c = a.name <=> b.name; c != 0) return c;
    return a.compute_units <=> b.compute_units;
  }
};
ProfileDevice profile_device(const DeviceInfo& info);
// The vendor's word for its compute units: "SMs" for an NVIDIA arch ("sm_90"), "CUs" for an AMD one;
// without an arch, from the device's name ("NVIDIA ..." is NVIDIA's).
std::string_view compute_units_word(std::string_view arch, std::string_view device_name = {});
// "NVIDIA H100 80GB HBM3 (132 SMs)", "AMD Instinct MI300X (304 CUs)", "any device".
std::string device_text(const ProfileDevice& d, std::string_view arch = {});

// What an entry is keyed by. Ordered: arch, device, type id, n, k, launch kind, members, ncols.
// A same-input group (launch MulMatGroup) is keyed by its members too: its type and n are
// group_type() and group_n() of them (what a hook without groups reads), so two groups can share them.
struct ProfileKey : ShapeKey {
  std::string arch;  // "sm_90", "gfx942"; empty only for a kernel-anvil import without --arch
  ProfileDevice device;
  int ncols = 1;
  std::vector<GroupMember> members;  // MulMatGroup: in graph order; empty for every other kind
  ProfileKey() = default;
  ProfileKey(std::string arch_, const ShapeKey& shape_, int ncols_, ProfileDevice device_ = {})
      : ShapeKey(shape_), arch(std::move(arch_)), device(std::move(device_)), ncols(ncols_) {}
  ProfileKey(std::string arch_, GgmlType type_, int n_, int k_, int ncols_)
      : ProfileKey(std::move(arch_), ShapeKey{type_, n_, k_}, ncols_) {}
  friend bool operator==(const ProfileKey& a, const ProfileKey& b) {
    return a.arch == b.arch && a.device == b.device && a.shape() == b.shape() && a.members == b.members && a.ncols == b.ncols;
  }
  friend std::strong_ordering operator<=>(const ProfileKey& a, const ProfileKey& b) {
    if (auto c = a.arch <=> b.arch; c != 0) return c;
    if (auto c = a.device <=> b.device; c != 0) return c;
    if (auto c = a.shape() <=> b.shape(); c != 0) return c;
    if (auto c = a.members <=> b.members; c != 0) return c;
    return a.ncols <=> b.ncols;
  }
};
// A same-input group's key: launch MulMatGroup, type group_type(members), n group_n(members).
ProfileKey group_profile_key(std::string arch, const std::vector<GroupMember>& members, int k, int ncols,
                             ProfileDevice device = {});
// "sm_90 q4_K 14336x4096 ncols 1", with " on NVIDIA H100 80GB HBM3 (132 SMs)" for a device's entry;
// a group: "sm_90 group q4_K:4096,q4_K:1024,q4_K:1024 k 4096 ncols 1".
std::string key_text(const ProfileKey& key);

// Where an entry's numbers come from: one session's measurement on one device.
struct Provenance {
  std::string session_id;
  std::string device_name;
  std::string device_arch;
  std::string engine;  // default tables version the default was taken from (a name of temper/engine_versions.h)
  // Which kernel was timed: kernel_label(session.kernel_source), "temper" or "engine ggml COMMIT hook V".
  std::string kernel{kKernelTemper};
  double default_us = 0, default_ci_low = 0, default_ci_high = 0;  // median µs per launch, 95% CI
  double tuned_us = 0, tuned_ci_low = 0, tuned_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // default / tuned, with CI
  int64_t calls_per_token = 0;
  uint64_t bytes_per_token = 0;  // weight bytes of this shape per decoded token (merge priority)
};

struct ProfileEntry {
  ProfileKey key;
  Config config;           // the tuned launch
  Config default_config;   // what the engine's table picks ({0,0} when unknown: imports)
  bool is_small_k = false; // config is the default's small-K variant (rows_per_block = nwarps, ncols 1)
  // kernel-anvil imports hold buckets, not shapes: n and k are then the bucket's upper edge
  // (its lower edge 16385 for the open top bucket) and stand for every shape in it.
  bool bucketed = false;
  std::optional<Provenance> provenance;  // absent for imports
  Approval approval = Approval::Pending;
  std::string decided_at;  // UTC ISO-8601 of the last approve/reject; empty while pending
  std::string note;
};

// ---- Bench records: llama-bench with and without the profile (`temper engine bench`) ----
// One arm's llama-bench: which binary, which build it reported.
struct BenchArm {
  std::string binary;
  std::string build_commit;  // llama-bench's build_commit and build_number
  int64_t build_number = 0;
};
// One llama-bench test (tg128, pp4, ...), every run's own samples kept.
struct BenchTest {
  std::string name;                // Temper's name: "tg128", "pp4" (batch width 4)
  std::vector<std::string> args;   // llama-bench's arguments for it ("-p", "128", "-n", "0", "-ub", "4")
  int64_t n_prompt = 0, n_gen = 0, n_ubatch = 0;  // as llama-bench reported them
  // Tokens/s of each repetition, one inner list per run (round) of the arm.
  std::vector<std::vector<double>> stock_runs, profiled_runs;
  double stock_ts = 0, profiled_ts = 0;                   // median over all of the arm's samples
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // profiled / stock, 95 % CI
};
struct BenchRecord {
  std::string date;          // UTC ISO-8601, when it finished
  std::string tool_version;  // Temper's
  std::string device;        // llama-bench's gpu_info
  std::string arch;          // from the engine's line ("sm_90"); empty when it printed none
  std::string model;         // the model file's name
  std::string model_type;    // llama-bench's model_type ("llama 8B Q4_K - Medium")
  BenchArm stock, profiled;
  std::string engine_line;   // the hooked engine's "temper: profile ..." line (stderr, profile arm)
  // approved_fingerprint() of the profile the arm loaded: the record describes that state only.
  std::string profile_fingerprint;
  int rounds = 0, repetitions = 0;
  std::vector<BenchTest> tests;
};

// ---- mmvq or mmq: ggml's own choice per (type, batch width) (issue 27, docs/profile-format.md) ----
// At batch widths 2..8 ggml picks between mmvq and mmq (its should-use-mmvq tables for MUL_MAT, its
// MUL_MAT_ID batch cap for experts). A path choice overrides that pick for one type on one device.
enum class MatPath { Mmvq, Mmq };
std::string_view mat_path_name(MatPath p);  // "mmvq", "mmq"
std::optional<MatPath> parse_mat_path(std::string_view name);

// How a choice was measured: one token's GEMVs replayed in the engine at batch width `ncols`
// (engine replay), once with ggml's own pick everywhere (stock) and once with this type's launches
// on `path`; µs per token, medians with 95 % CI, rounds interleaved.
struct PathEvidence {
  std::string source;  // tune's state folder id or the session id that made it
  std::string device_name, device_arch;
  std::string kernel;  // kernel_label: "engine ggml COMMIT hook V"
  std::string model;   // the model file whose token was replayed
  double stock_us = 0, stock_ci_low = 0, stock_ci_high = 0;
  double path_us = 0, path_ci_low = 0, path_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // stock / path, with CI
};

// One (arch, device, type, launch, ncols)'s path. `launch` is Launch::MulMat or Launch::MulMatId;
// for MulMatId ggml's choice is a cap, so the hook runs mmq from the smallest approved mmq width of
// the type upwards and never raises ggml's own cap (its kernels are compiled for that cap).
struct PathChoice {
  std::string arch;
  ProfileDevice device;  // empty name: every device of the arch
  GgmlType type = GgmlType::Q4_0;
  Launch launch = Launch::MulMat;
  int ncols = 2;                              // 2..8
  MatPath path = MatPath::Mmq;                // what the engine runs with the profile
  MatPath stock_path = MatPath::Mmvq;         // what ggml picks on that device
  Approval approval = Approval::Pending;
  std::string decided_at, note;
  std::optional<PathEvidence> evidence;
  auto key() const { return std::tie(arch, device, type, launch, ncols); }
};

struct Profile {
  int schema_version = kProfileSchemaVersion;
  std::string created;  // UTC ISO-8601
  std::string tool_version;
  std::string source{kSourceTemper};  // kSourceTemper or kSourceKernelAnvil
  std::string model;                  // model file name of the session(s), informative
  std::vector<std::string> sessions;  // ids of the sessions entries came from
  std::vector<ProfileEntry> entries;  // sorted by key
  // Optional ("bench" in the JSON, absent when empty): llama-bench comparisons of this profile,
  // oldest first; a new record replaces one of the same device and model.
  std::vector<BenchRecord> benches;
  // Optional ("paths" in the JSON, absent when empty): mmvq/mmq choices, sorted by key().
  std::vector<PathChoice> paths;
};

// "sm_90 q4_K mul_mat ncols 8", with " on NVIDIA H100 80GB HBM3 (132 SMs)" for a device's record.
std::string path_choice_text(const PathChoice& c);

// 16 hex digits over the approved entries and path choices of `arch` (every arch when empty): what
// the engine launches differently. A bench record whose fingerprint differs describes an older state.
std::string approved_fingerprint(const Profile& p, const std::string& arch = {});
// Adds `r`, replacing a record of the same device and model.
void add_bench_record(Profile& p, BenchRecord r);
// The newest record for `arch` whose fingerprint matches the profile now, or nullptr.
const BenchRecord* current_bench(const Profile& p, const std::string& arch);
// Its JSON, as the profile's "bench" array holds it.
nlohmann::json to_json(const BenchRecord& r);
// The table in compare-llama-bench.py's shape (markdown pipe table: GPU, Model, Microbatch size,
// Test, t/s stock, t/s profile, Speedup) with the speedup's 95 % CI as a last column.
std::string bench_markdown(const BenchRecord& r);
// Every sample, a CSV row each: test,arm,round,repetition,tokens_per_s (a header line first).
std::string bench_csv(const BenchRecord& r);
// The table with what a reader needs to trust it, as markdown: device, both builds, the engine's
// line, rounds and repetitions, how the CI is made; then bench_markdown().
std::string bench_report_markdown(const BenchRecord& r);

// What an entry's provenance speedup measured: "" for one launch shape (the sweep's entries), else the
// whole token it was decided on: "token replay" (same-input groups: whole-token GEMV replays) or
// "llama-bench tg128" (pipelined launches: the profile without vs with them). A whole-token gain is
// the profile's, shared by every entry the step installed, never one shape's.
std::string whole_token_evidence(const ProfileEntry& e);

// ---- A tune at a glance (temper-gui's tune view) ----
// One decode token's GEMV time per launch kind on one (arch, device), from the entries measured per
// launch at ncols 1: calls per token times the default's median (stock) and the approved config's
// (with the profile; the default's where the entry is not approved). Whole-token entries (groups,
// pipelining) are not per launch and not counted here. Largest stock time first.
struct LaunchKindTime {
  Launch launch = Launch::MulMat;
  int entries = 0, approved = 0;
  int64_t launches_per_token = 0;
  uint64_t bytes_per_token = 0;
  double stock_us = 0, profile_us = 0;  // µs per token
  double saved_us() const { return stock_us - profile_us; }
};
std::vector<LaunchKindTime> token_time_by_launch(const Profile& p, const std::string& arch, const ProfileDevice& device);
// Why an entry is not in what the engine runs, in words: "" when approved; "rejected" (with its
// note); pending: its CI reaching 1.000, a gain below `min_speedup`, or no measurement.
std::string left_out_reason(const ProfileEntry& e, double min_speedup = kDefaultMinSpeedup);

// Arches present in a profile, sorted, unique.
std::vector<std::string> profile_arches(const Profile& p);
ProfileEntry* find_entry(Profile& p, const ProfileKey& key);
const ProfileEntry* find_entry(const Profile& p, const ProfileKey& key);
// The approved entry the hooked engine would launch for this shape and batch width on `device`
// of `arch`: the device's own entry, else the arch-level one; nullptr when it runs stock.
const ProfileEntry* applied_entry(const Profile& p, const std::string& arch, const ProfileDevice& device,
                                  const ShapeKey& shape, int ncols);
// The entry the hooked engine applies to a launch of `shape`: for a fused gate/up, its unfused
// pair's entry when there is one (the hook runs the pair), else the shape's own (applied_entry).
const ProfileEntry* applied_launch(const Profile& p, const std::string& arch, const ProfileDevice& device,
                                   const ShapeKey& shape, int ncols);
// The pipelined entry (hook v6) the hooked engine applies to a one-column launch of `shape` (one of the
// engine's four kinds), or nullptr. Where there is one, the hook launches its config pipelined instead
// of applied_launch's; its provenance is whole decode tokens (tune's pipeline step), not one launch.
const ProfileEntry* applied_pipelined(const Profile& p, const std::string& arch, const ProfileDevice& device, const ShapeKey& shape);

// Every winner (verdict "winner") of the session as a pending entry with provenance. `device`
// picks one device of the session; nullopt takes all of them.
Profile profile_from_session(const Session& s, std::optional<int> device = std::nullopt);

// ---- Approval policy ----
// An entry is significant when its measured CI is separated (tuned CI high < default CI low) and
// its median speedup is at least 1 + min_speedup. Approves those, leaves the rest as they are;
// returns how many changed. Entries without provenance are never significant.
bool is_significant(const ProfileEntry& e, double min_speedup = kDefaultMinSpeedup);
int approve_significant(Profile& p, double min_speedup = kDefaultMinSpeedup, const std::string& when = {});
int approve_all(Profile& p, const std::string& when = {});
// Error(BadInput) naming the key when absent. `when` empty: now.
void set_approval(Profile& p, const ProfileKey& key, Approval a, const std::string& note = {},
                  const std::string& when = {});

// Estimated model tokens/s (GEMV share of decode, ncols 1) on one device of the session, default
// configs vs the approved entries the engine would apply on that device (applied_entry).
Estimate estimate_with_profile(const Session& s, int device, const Profile& p);

// ---- Temper JSON (lossless) ----
nlohmann::json to_json(const Profile& p);
// Reads Temper profiles (refusing newer versions) and kernel-anvil files (no provenance; entries
// get `arch_for_anvil`). `where` names the file in messages. Error(BadInput) on malformed input.
Profile profile_from_json(const nlohmann::json& j, const std::string& where, const std::string& arch_for_anvil = {});
bool is_kernel_anvil_json(const nlohmann::json& j);
void save_profile(const Profile& p, const std::filesystem::path& path, const WriteOptions& options = {});  // atomic
Profile load_profile(const std::filesystem::path& path, const std::string& arch_for_anvil = {});

// ---- One profile file, several writers (two tunes of two models on one default profile) ----
// `theirs` with the changes that turn `from` into `to`: entries and path choices (by key) and bench
// records (by device and model) added, replaced or removed; sessions and model names added. What
// `theirs` holds that the change does not touch (another writer's entries) stays.
Profile rebase_profile(const Profile& from, const Profile& to, Profile theirs);
// The change from `from` to `to` applied to what `path` holds now, under an exclusive lock
// (flock on PATH.lock): read again, rebased, written atomically; the file is removed when nothing is
// left in it. Returns what was written. A writer never overwrites a stale copy: entries others
// saved since `from` stay. When the file holds `from` itself (nobody else wrote), `to` is written as
// it is, as `to_bytes` when given (a file put back byte for byte). Error(BadInput) when `path` exists
// and is not a valid profile.
Profile update_profile(const std::filesystem::path& path, const Profile& from, const Profile& to,
                       const std::optional<std::string>& to_bytes = std::nullopt);

// Range and consistency problems (values, known types, K a whole number of blocks, arch, ncols,
// threads per block, provenance). Empty when the profile is valid.
std::vector<std::string> validate_profile(const Profile& p);
// What is valid but worth saying (`temper profile validate` prints them as warnings): today, group
// entries that a hook before v5 would take for one key (type, n, k, ncols and device alike; its
// duplicate-entry rule then ignores the whole file, so such a hook runs stock).
std::vector<std::string> profile_warnings(const Profile& p);
// applied_entry for a same-input group (its members in any order): the device's own approved entry, else
// the arch's; nullptr: stock.
const ProfileEntry* applied_group(const Profile& p, const std::string& arch, const ProfileDevice& device,
                                  const std::vector<GroupMember>& members, int k, int ncols);
// validate_profile's problems as Error(BadInput) naming the first (and how many more there are).
void require_valid_profile(const Profile& p, const std::string& where);
// The engine's own reader (hook/src/temper-mmvq-profile.h, what a patched llama.cpp runs, compiled into
// core as the reference for what a profile means) on a Temper profile file: "the engine refuses it: WHY"
// when it would ignore the whole file, "entry N: the engine skips it: WHY" per entry (and "path choice
// N: ...") it would not apply as malformed; empty when the engine reads every entry. `temper profile validate` asks it after
// validate_profile.
std::vector<std::string> engine_reader_problems(const std::filesystem::path& file);

// ---- Exports ----
// What an export did with each entry, for the user (CLI) and the GUI. Emitted entries are listed
// too, so the report accounts for every approved entry.
enum class ExportFate { Emitted, Merged, Dropped };
std::string_view export_fate_name(ExportFate f);  // "emitted", "merged", "dropped"
struct ExportNote {
  ProfileKey key;
  Config config;
  ExportFate fate = ExportFate::Emitted;
  std::string reason;               // why merged or dropped; the cell for emitted kernel-anvil entries
  std::optional<ProfileKey> kept;   // Merged: the entry whose value the shared cell carries
};
// One row of a per-(type, ncols) table (the ggml table) and its net effect per token over every
// measured shape it reaches: what an approved entry alone cannot show.
struct ExportRowEffect {
  std::string arch, branch;  // "sm_90", "q6_K ncols 4"
  Config stock, value;
  int shapes = 0, unmeasured = 0;  // measured shapes reached; of those, where `value` was never timed
  double stock_us_per_token = 0, table_us_per_token = 0;
  double net_us_per_token() const { return table_us_per_token - stock_us_per_token; }
};
struct ExportReport {
  std::string format;  // "temper", "kernel-anvil", "header", "csv"
  std::vector<ExportNote> notes;
  std::vector<ExportRowEffect> rows;  // ggml-table only
  int emitted() const;
  int merged() const;
  int dropped() const;
  std::string text() const;  // one line per merged/dropped entry and per row, plus a summary line
};

// kernel-anvil's buckets of N and K: 0: ≤128, 1: ≤1024, 2: ≤4096, 3: ≤16384, 4: >16384.
int anvil_bucket(int64_t x);
inline constexpr int kAnvilMaxValue = 32;
inline constexpr size_t kAnvilMaxFileBytes = 1 << 20;  // its loader ignores bigger files
// Why kernel-anvil's patch cannot apply an approved entry, or nullopt when it can: it reads
// entries at ncols 1 only and only switches the small-K variant on (rows_per_block > 1 at the
// default nwarps); values must lie in 1..32.
std::optional<std::string> anvil_inapplicable(const ProfileEntry& e);

struct Export {
  std::string content;  // the file's bytes
  ExportReport report;
};
// Options shared by the exporters: `arch` picks one arch of a multi-arch profile (required
// then for kernel-anvil and header, which carry no arch per entry).
struct ExportOptions {
  std::string arch;
};
Export export_temper(const Profile& p);
Export export_kernel_anvil(const Profile& p, const ExportOptions& o = {});
Export export_header(const Profile& p, const ExportOptions& o = {});
// What an engine loading a kernel-anvil export actually runs: the emitted entries approved, merged
// ones approved with their cell's value, everything else pending. Feed it to estimate_with_profile
// for the speedup that format can carry (configs never measured for a shape count as the default).
Profile as_applied(const Profile& p, const ExportReport& kernel_anvil_report);
// One row per (device, shape, ncols, config) result of the session.
Export export_csv(const Session& s);
// Why an export would make the engine run nothing but its own defaults (no entry emitted: nothing
// approved, or nothing the format can express), or "" when it carries something. Such a file is
// refused unless the user asks for it (`--allow-empty`).
std::string empty_export_reason(const Export& e);
// Estimated model tokens/s (GEMV share of decode, ncols 1) on one device of the session with what
// an export of `p` in `format` ("temper", "kernel-anvil", "header", "ggml-table") makes the engine
// launch: kernel-anvil's buckets, the header's arch and the ggml table's one value per (type,
// ncols) carry less than the approvals, and the estimate counts what they carry. A device of
// another arch than the file's runs its defaults.
Estimate estimate_exported(const Session& s, int device, const Profile& p, std::string_view format,
                           const ExportOptions& o = {});

// ---- Merge and diff ----
struct MergeConflict {
  ProfileKey key;
  Config kept, dropped;
  std::string kept_from, dropped_from;  // session ids ("import" without provenance)
  std::string reason;
};
struct MergeResult {
  Profile profile;
  std::vector<MergeConflict> conflicts;
  std::vector<std::string> arches;  // more than one: said out loud, never silently mixed
  // Path choices of one key that differ between the profiles: which one stayed, and why.
  std::vector<std::string> path_conflicts;
  std::string text() const;
};
// Same key (arch included): the measured faster one stays (lower tuned median) — or, measured on
// two different GPU models of that arch, the larger speedup over its own default; a measured entry
// beats an unmeasured import; equal configs merge without a conflict. Entries of different arches
// never meet (the arch is part of the key). Error(BadInput) when an entry has no arch. Path choices
// keep every device's records; of one key, the newer decision stays (decided over pending, then the
// later decided_at; the first profile's on a tie).
MergeResult merge_profiles(const std::vector<Profile>& profiles);

enum class DiffKind { Added, Removed, Changed, Same };
std::string_view diff_kind_name(DiffKind k);  // "added", "removed", "changed", "same"
struct DiffLine {
  DiffKind kind = DiffKind::Same;
  ProfileKey key;  // arch from the side that has it (from `a` when both)
  std::optional<ProfileEntry> a, b;
  std::optional<double> speedup_change;  // b.speedup − a.speedup when both are measured
};
struct PathDiffLine {
  DiffKind kind = DiffKind::Same;
  std::optional<PathChoice> a, b;
};
struct ProfileDiff {
  bool by_arch = true;           // false: each holds one (arch, device) and they differ (two GPUs)
  std::string arch_a, arch_b;    // when !by_arch: where each side was measured ("sm_90 NVIDIA H100 ... (132 SMs)")
  std::vector<DiffLine> lines;   // every key of either side, sorted
  // Path choices by key (by type, launch and ncols when !by_arch); changed: path or approval.
  std::vector<PathDiffLine> paths;
  int count(DiffKind k) const;
  std::string text(bool include_same = false) const;
};
// Changed = different config or approval state. Profiles of one arch each are compared by
// (type, n, k, ncols) even when the arches differ, so one model on two GPUs lines up.
ProfileDiff diff_profiles(const Profile& a, const Profile& b);

// ---- Recheck: a profile's approved entries re-measured on the current device ----
// ("verify" is kept for kernel verification against the CPU reference, verify.h.)
struct RecheckLine {
  ProfileKey key;
  Config config, default_config;   // default_config: this device's table now
  std::string verdict;             // "still wins", "no longer wins", "now the default", "failed"
  double default_us = 0, default_ci_low = 0, default_ci_high = 0;  // medians with their 95% CI
  double tuned_us = 0, tuned_ci_low = 0, tuned_ci_high = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;
  std::optional<double> recorded_speedup;  // from the profile's provenance
  std::string detail;              // failure text for "failed"
};
struct RecheckReport {
  std::string device_name, device_arch;
  std::string session_id;          // of the verification sweep
  std::vector<RecheckLine> lines;
  std::vector<ProfileKey> skipped; // approved entries of other arches, or bucketed imports
  int still_winning() const;
  std::string text() const;
};
struct RecheckOptions {
  SweepOptions sweep;
  std::string engine;  // default tables version; empty: the entries' recorded engine or the first known
};
// Re-measures every approved entry of the device's arch against this device's default config,
// through the sweep runner. Changes nothing. Error(BadInput) when no approved entry applies.
RecheckReport recheck_profile(const Profile& p, Device& device, const RecheckOptions& options,
                            const std::function<void(const std::string&)>& progress = {});
// A copy of `p` with the verified entries' provenance replaced by the new measurements; entries
// that no longer win (or failed) go back to pending with a note.
Profile apply_recheck(const Profile& p, const RecheckReport& r);

}  // namespace temper
