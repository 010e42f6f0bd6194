#pragma once
// Issue 16 item 3: a profile in llama.cpp's own form. Per arch, C++17 functions of (ggml_type,
// ncols) written the way upstream's mmvq.cu writes calc_nwarps / calc_rows_per_block /
// should_use_small_k, plus the evidence table a pull request carries. A per-(type, ncols) value
// cannot follow N and K, so each value is chosen by its net effect per token over every measured
// shape it reaches (approved or not); shapes whose approved config the table cannot return are
// listed with their cost. docs/llama-cpp.md says how to use it in a pull request.
#include <optional>
#include <string>
#include <vector>

#include "temper/profile.h"
#include "temper/session.h"

namespace temper {

// One approved shape of a cell and what the table does to it.
struct GgmlTableShape {
  ProfileKey key;
  Config approved, default_config;
  double default_us = 0, default_ci_low = 0, default_ci_high = 0;
  double approved_us = 0, approved_ci_low = 0, approved_ci_high = 0;
  int64_t calls_per_token = 0;
  // The table's config at this shape and its median with CI: measured (it is the approved config,
  // the default, or the session has it), else unknown (nullopt) and counted as the default in sums.
  Config table_config;
  std::optional<double> table_us, table_ci_low, table_ci_high;
  std::string table_us_source;  // "approved", "default", "session <id>", or empty when unknown
  bool lost() const { return !(approved == table_config); }
  std::string device, driver, engine, session;  // provenance; driver only from a session
};

// One branch of one arch's table: (type, ncols) and, at ncols 1, whether the K is small by the
// stock should_use_small_k threshold (upstream launches the small-K instantiation there).
struct GgmlTableCell {
  GgmlType type = GgmlType::Q4_0;
  int ncols = 1;
  bool small_k = false;
  Config stock, value;  // the engine's own value and what the exported table returns
  std::vector<GgmlTableShape> shapes;  // the approved ones
  // Every measured shape the branch reaches (approved or not) and its per-token sums, each shape's
  // median weighted by its calls per token: stock configs vs the table's value. A shape where the
  // value was never timed counts as stock (`unmeasured` says how many).
  std::vector<ShapeKey> reached;
  double stock_us_per_token = 0, stock_ci_low = 0, stock_ci_high = 0;
  double table_us_per_token = 0, table_ci_low = 0, table_ci_high = 0;
  int unmeasured = 0;
  double net_us_per_token() const { return table_us_per_token - stock_us_per_token; }
  std::string branch_text() const;  // "q6_K ncols 4", "q4_K ncols 1 (large K)"
};

// A measured shape without an approved entry (pending or rejected in the profile; "default
// stays" in the session) whose launch the table changes all the same.
struct GgmlTableSideEffect {
  ProfileKey key;
  std::string status;  // "pending", "rejected", "default stays", ...
  Config default_config, table_config;
  double default_us = 0;
  std::optional<double> table_us;  // when the profile or the session measured it
  int64_t calls_per_token = 0;
};

struct GgmlTableArch {
  std::string arch;         // "sm_90"
  std::string suffix;       // the function names' suffix: "sm_90" → calc_nwarps_sm_90
  std::string engine;       // stock tables version the entries were measured against
  std::string stock_table;  // upstream's table id for this arch: "GENERIC"
  int warp_size = 32;
  std::vector<GgmlTableCell> cells;  // sorted by (type, ncols, small_k)
  std::vector<GgmlTableSideEffect> side_effects;
  // Types whose small-K rule the data switched off (the same config won on both sides).
  std::vector<GgmlType> small_k_off;
  // The stock should_use_small_k factor: small K when blocks_per_row < factor × blocks_per_iter_1warp
  // (0: never). Per mmvq type of this arch.
  int small_k_factor(GgmlType type) const;
  // What the exported functions return for (type, ncols, small-K branch).
  Config value(GgmlType type, int ncols, bool small_k) const;
  bool uses_small_k(GgmlType type, int ncols, int k) const;  // the exported should_use_small_k at this K
};

struct GgmlTable {
  std::vector<GgmlTableArch> arches;
  // The config the exported functions make the engine launch at `key`; nullopt where the file has
  // no functions for the key's arch or type (the engine's own table stays).
  std::optional<Config> launch(const ProfileKey& key) const;
  Export file;            // the C++17 source with the evidence (markdown) in a trailing comment
  std::string evidence;   // that markdown alone, for a pull request's description
};

// Per (arch, type, ncols, small-K side) with an approved entry of `o.arch` (all arches when empty),
// the table carries the approved config with the least time per token over every measured shape
// of that branch — the profile's entries of any approval and, with `session`, every verdict of the
// session — and upstream's value when none is faster than it. Not approved, bucketed imports and
// other arches are reported as dropped; approved entries whose config the table does not carry as
// merged (kept: the entry whose config the cell carries) or, where upstream's value stays, dropped
// with the net cost. `session`, when given, also supplies medians of other configs and the driver.
GgmlTable build_ggml_table(const Profile& p, const ExportOptions& o = {}, const Session* session = nullptr);
inline Export export_ggml_table(const Profile& p, const ExportOptions& o = {}, const Session* session = nullptr) {
  return build_ggml_table(p, o, session).file;
}

}  // namespace temper
