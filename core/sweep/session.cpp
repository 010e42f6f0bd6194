#include "temper/session.h"

#include <ctime>
#include <random>
#include <sstream>

#include "json_read.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/validate.h"
#include "temper/gpu_backend.h"  // device and telemetry JSON, shared with `temper devices`
#include "temper/quant/blocks.h"

namespace temper {
namespace {

using nlohmann::json;
using json_read::Node;

// ---- writing ----------------------------------------------------------------------------------

json config_json(Config c) { return {{"nwarps", c.nwarps}, {"rows_per_block", c.rows_per_block}}; }

// The key fields as every record writes them: type, n, k, and for a launch other than a plain
// MUL_MAT its kind (and experts for the ids kinds); a group adds device and ncols.
void put_shape(json& j, const ShapeKey& s) {
  j["type"] = type_name(s.type);
  j["n"] = s.n;
  j["k"] = s.k;
  if (s.launch != Launch::MulMat) j["launch"] = launch_name(s.launch);
  if (launch_has_ids(s.launch)) {
    j["experts"] = s.experts;
    j["experts_used"] = s.used;
  }
}
void put_group(json& j, const GroupKey& g) {
  j["device"] = g.device;
  put_shape(j, g);
  j["ncols"] = g.ncols;
}

json stats_json(const SampleStats& s) {
  return {{"n", s.n},       {"median", s.median}, {"p10", s.p10},         {"p90", s.p90},
          {"min", s.min},   {"max", s.max},       {"ci_low", s.ci_low},   {"ci_high", s.ci_high},
          {"ci_coverage", s.ci_coverage}};
}

json grid_json(const PlanGrid& g) {
  return {{"ncols", g.ncols}, {"nwarps", g.nwarps}, {"rows_per_block", g.rows_per_block},
          {"engine", g.engine}, {"quick", g.quick}};
}

json plan_json(const Plan& p) {
  json items = json::array();
  for (const auto& it : p.items) {
    json j;
    put_shape(j, it);
    j["ncols"] = it.ncols;
    j["config"] = config_json(it.config);
    j["is_default"] = it.is_default;
    j["is_small_k"] = it.is_small_k;
    items.push_back(std::move(j));
  }
  json excluded = json::array();
  for (const auto& e : p.excluded) {
    json j;
    put_shape(j, e);
    j["ncols"] = e.ncols;
    j["config"] = config_json(e.config);
    j["reason"] = e.reason;
    j["is_default"] = e.is_default;
    j["is_small_k"] = e.is_small_k;
    excluded.push_back(std::move(j));
  }
  json skipped = json::array();
  for (const auto& sk : p.skipped_shapes)
  {
    json j;
    put_shape(j, sk);
    j["reason"] = sk.reason;
    skipped.push_back(std::move(j));
  }
  json j = {{"grid", grid_json(p.grid)}, {"defaults_table", p.defaults_table}, {"items", items},
            {"excluded", excluded}, {"skipped_shapes", skipped}};
  if (!p.notes.empty()) j["notes"] = p.notes;  // optional: engine sweeps whose stock differs from the table
  return j;
}

json options_json(const SweepOptions& o) {
  return {{"warmup", o.warmup},         {"batch", o.batch},           {"launches_per_sample", o.launches_per_sample},
          {"min_samples", o.min_samples},
          {"max_samples", o.max_samples}, {"ci_target", o.ci_target}, {"time_cap_s", o.time_cap_s},
          {"shape_warmup_s", o.shape_warmup_s},
          {"memory_fraction", o.memory_fraction}, {"seed", o.seed},
          {"confirm", o.confirm},       {"confirm_time_s", o.confirm_time_s}};
}

json shape_json(const Shape& s) {
  json j;
  put_shape(j, s);
  j["calls_per_token"] = s.calls_per_token;
  j["bytes_per_token"] = s.bytes_per_token;
  j["tensors"] = s.tensors;
  return j;
}

json winner_json(const Verdict& w) {
  json j;
  put_group(j, w);
  j["verdict"] = w.verdict;
  j["default_config"] = config_json(w.default_config);
  j["config"] = config_json(w.config);
  j["default_us"] = w.default_us;
  j["default_ci_low"] = w.default_ci_low;
  j["default_ci_high"] = w.default_ci_high;
  j["best_us"] = w.best_us;
  j["best_ci_low"] = w.best_ci_low;
  j["best_ci_high"] = w.best_ci_high;
  j["speedup"] = w.speedup;
  j["speedup_low"] = w.speedup_low;
  j["speedup_high"] = w.speedup_high;
  j["confirmed"] = w.confirmed;
  j["note"] = w.note;
  return j;
}

json confirmation_json(const Confirmation& c) {
  json j;
  put_group(j, c);
  j["default_config"] = config_json(c.default_config);
  j["config"] = config_json(c.config);
  j["default_us"] = stats_json(c.default_us);
  j["candidate_us"] = stats_json(c.candidate_us);
  j["converged"] = c.converged;
  j["confirmed"] = c.confirmed;
  j["failure"] = c.failure;
  return j;
}

json kernel_json(const std::optional<KernelAttributes>& k) {
  if (!k) return nullptr;
  return {{"registers", k->registers},
          {"shared_bytes", k->shared_bytes},
          {"local_bytes", k->local_bytes},
          {"max_threads_per_block", k->max_threads_per_block},
          {"blocks_per_cu", k->blocks_per_cu}};
}

json estimate_shape_json(const EstimateShape& e) {
  json j;
  put_shape(j, e);
  j.update(json{{"calls_per_token", e.calls_per_token},
          {"bytes_per_token", e.bytes_per_token},
          {"measured", e.measured},
          {"default_config", config_json(e.default_config)},
          {"tuned_config", config_json(e.tuned_config)},
          {"default_us", e.default_us},
          {"tuned_us", e.tuned_us},
          {"share", e.share}});
  if (e.tuned_unfused) j["tuned_unfused"] = true;  // optional: the fused launch runs as the unfused pair
  return j;
}

json estimate_json(const Estimate& e) {
  json shapes = json::array();
  for (const auto& sh : e.shapes) shapes.push_back(estimate_shape_json(sh));
  return {{"device", e.device},
          {"label", e.label},
          {"shapes_total", e.shapes_total},
          {"shapes_measured", e.shapes_measured},
          {"default_us_per_token", e.default_us_per_token},
          {"tuned_us_per_token", e.tuned_us_per_token},
          {"default_tokens_per_s", e.default_tokens_per_s},
          {"tuned_tokens_per_s", e.tuned_tokens_per_s},
          {"bytes_per_token", e.bytes_per_token},
          {"bandwidth_gbs", e.bandwidth_gbs},
          {"ceiling_tokens_per_s", e.ceiling_tokens_per_s},
          {"shapes", shapes}};
}

// ---- reading ----------------------------------------------------------------------------------

GgmlType type_from(const Node& n) {
  const std::string name = n.str();
  const auto t = parse_type(name);
  if (!t) fail(ErrorKind::BadInput, n.where + ": unknown ggml type \"" + name + "\"");
  return *t;
}

ShapeKey shape_key_from(const Node& n) {
  ShapeKey s{type_from(n["type"]), n["n"].integer(), n["k"].integer()};
  if (n.has("launch")) {  // absent: a plain MUL_MAT (every schema 1 record)
    const std::string name = n["launch"].str();
    const auto launch = parse_launch(name);
    if (!launch)
      fail(ErrorKind::BadInput, n["launch"].where + ": unknown launch kind \"" + name + "\" (expected " +
                                    std::string(launch_names()) + ")");
    if (*launch == Launch::MulMatGroup)
      fail(ErrorKind::BadInput, n["launch"].where + ": \"mul_mat_group\" is a profile's same-input group, not a swept launch");
    if (launch_is_pipelined(*launch))
      fail(ErrorKind::BadInput, n["launch"].where + ": \"" + name + "\" is a profile's pipelined launch, not a swept one");
    s.launch = *launch;
  }
  if (launch_has_ids(s.launch)) {
    s.experts = n["experts"].integer();
    s.used = n["experts_used"].integer();
    if (s.used < 1 || s.used > s.experts)
      fail(ErrorKind::BadInput, n["experts_used"].where + ": expected 1.." + std::to_string(s.experts) + " (experts), got " +
                                    std::to_string(s.used));
  }
  return s;
}
GroupKey group_from(const Node& n) {
  GroupKey g;
  g.device = n["device"].integer();  // fields in order, so the first missing one is the one named
  static_cast<ShapeKey&>(g) = shape_key_from(n);
  g.ncols = n["ncols"].integer();
  return g;
}

Config config_from(const Node& n) { return {n["nwarps"].integer(), n["rows_per_block"].integer()}; }

std::vector<int> int_list(const Node& n) {
  std::vector<int> out;
  for (size_t i = 0; i < n.size(); ++i) out.push_back(n.at(i).integer());
  return out;
}

SampleStats stats_from(const Node& n) {
  SampleStats s;
  s.n = n["n"].integer();
  s.median = n["median"].number();
  s.p10 = n["p10"].number();
  s.p90 = n["p90"].number();
  s.min = n["min"].number();
  s.max = n["max"].number();
  s.ci_low = n["ci_low"].number();
  s.ci_high = n["ci_high"].number();
  s.ci_coverage = n["ci_coverage"].number();
  return s;
}

Telemetry telemetry_from(const Node& n) {
  n.object();
  Telemetry t;
  auto get = [&](const char* key, std::optional<double>& v) {
    if (n.has(key) && !n[key].is_null()) v = n[key].number();
  };
  get("sm_clock_mhz", t.sm_clock_mhz);
  get("memory_clock_mhz", t.memory_clock_mhz);
  get("power_w", t.power_w);
  get("temperature_c", t.temperature_c);
  get("busy_percent", t.busy_percent);
  return t;
}

DeviceInfo device_info_from(const Node& n) {
  DeviceInfo d;
  d.index = n["index"].integer();
  d.api = n["api"].str();
  d.name = n["name"].str();
  d.arch = n["arch"].str();
  d.compute_units = n["compute_units"].integer();
  d.warp_size = n["warp_size"].integer();
  d.memory_bytes = n["memory_bytes"].uint64();
  d.l2_bytes = n["l2_bytes"].uint64();
  d.clock_mhz = n["clock_mhz"].integer();
  d.memory_clock_mhz = n["memory_clock_mhz"].integer();
  d.memory_bus_bits = n["memory_bus_bits"].integer();
  d.shared_per_block = n["shared_per_block"].integer();
  d.shared_per_cu = n["shared_per_cu"].integer();
  d.regs_per_block = n["regs_per_block"].integer();
  d.regs_per_cu = n["regs_per_cu"].integer();
  d.max_threads_per_cu = n["max_threads_per_cu"].integer();
  d.driver_version = n["driver_version"].str();
  d.runtime_version = n["runtime_version"].str();
  d.pci_bus_id = n["pci_bus_id"].str();
  return d;
}

PlanGrid grid_from(const Node& n) {
  PlanGrid g;
  g.ncols = int_list(n["ncols"]);
  g.nwarps = int_list(n["nwarps"]);
  g.rows_per_block = int_list(n["rows_per_block"]);
  g.engine = n["engine"].str();
  g.quick = n["quick"].boolean();
  return g;
}

Plan plan_from(const Node& n) {
  Plan p;
  p.grid = grid_from(n["grid"]);
  p.defaults_table = n["defaults_table"].str();
  const Node items = n["items"];
  for (size_t i = 0; i < items.size(); ++i) {
    const Node it = items.at(i);
    p.items.push_back({shape_key_from(it), it["ncols"].integer(),
                       config_from(it["config"]), it["is_default"].boolean(), it["is_small_k"].boolean()});
  }
  const Node excluded = n["excluded"];
  for (size_t i = 0; i < excluded.size(); ++i) {
    const Node e = excluded.at(i);
    p.excluded.push_back({shape_key_from(e), e["ncols"].integer(),
                          config_from(e["config"]), e["reason"].str(), e["is_default"].boolean(),
                          e["is_small_k"].boolean()});
  }
  const Node skipped = n["skipped_shapes"];
  for (size_t i = 0; i < skipped.size(); ++i) {
    const Node sk = skipped.at(i);
    p.skipped_shapes.push_back({shape_key_from(sk), sk["reason"].str()});
  }
  if (n.has("notes")) {
    const Node notes = n["notes"];
    for (size_t i = 0; i < notes.size(); ++i) p.notes.push_back(notes.at(i).str());
  }
  return p;
}

SweepOptions options_from(const Node& n) {
  SweepOptions o;
  o.warmup = n["warmup"].integer();
  o.batch = n["batch"].integer();
  // Sessions from before back-to-back samples timed each launch with its own event pair.
  o.launches_per_sample = n.has("launches_per_sample") ? n["launches_per_sample"].integer() : 1;
  o.min_samples = n["min_samples"].integer();
  o.max_samples = n["max_samples"].integer();
  o.ci_target = n["ci_target"].number();
  o.time_cap_s = n["time_cap_s"].number();
  if (n.has("shape_warmup_s")) o.shape_warmup_s = n["shape_warmup_s"].number();  // absent before 0.1.0's H100 runs
  o.memory_fraction = n["memory_fraction"].number();
  o.seed = n["seed"].uint64();
  // Sessions from before the interleaved confirmation were not confirmed.
  o.confirm = n.has("confirm") ? n["confirm"].boolean() : false;
  if (n.has("confirm_time_s")) o.confirm_time_s = n["confirm_time_s"].number();
  return o;
}

Shape shape_from(const Node& n) {
  Shape s;
  static_cast<ShapeKey&>(s) = shape_key_from(n);
  s.calls_per_token = n["calls_per_token"].integer();
  s.bytes_per_token = n["bytes_per_token"].uint64();
  const Node tensors = n["tensors"];
  for (size_t i = 0; i < tensors.size(); ++i) s.tensors.push_back(tensors.at(i).str());
  return s;
}

ResultStatus status_from(const Node& n) {
  const std::string s = n.str();
  for (auto st : {ResultStatus::Ok, ResultStatus::Failed, ResultStatus::Invalid, ResultStatus::Error})
    if (s == result_status_name(st)) return st;
  fail(ErrorKind::BadInput, n.where + ": unknown result status \"" + s + "\" (expected ok, failed, invalid or error)");
}

std::optional<KernelAttributes> kernel_from(const Node& n) {
  if (n.is_null()) return std::nullopt;
  KernelAttributes k;
  k.registers = n["registers"].integer();
  k.shared_bytes = n["shared_bytes"].integer();
  k.local_bytes = n["local_bytes"].integer();
  k.max_threads_per_block = n["max_threads_per_block"].integer();
  k.blocks_per_cu = n["blocks_per_cu"].integer();
  return k;
}

Result result_from(const Node& n) {
  Result r;
  static_cast<GroupKey&>(r) = group_from(n);
  r.config = config_from(n["config"]);
  r.is_default = n["is_default"].boolean();
  r.is_small_k = n["is_small_k"].boolean();
  r.status = status_from(n["status"]);
  r.failure = n["failure"].str();
  r.max_abs_error = n["max_abs_error"].number();
  r.worst_error_ratio = n["worst_error_ratio"].number();
  r.time_us = stats_from(n["time_us"]);
  if (n.has("trace_us")) {  // optional: absent in sessions recorded before it was kept
    const Node t = n["trace_us"];
    for (size_t i = 0; i < t.size(); ++i) r.trace_us.push_back(t.at(i).number());
  }
  r.converged = n["converged"].boolean();
  r.gbs = n["gbs"].number();
  r.ops_per_s = n["ops_per_s"].number();
  r.weight_copies = n["weight_copies"].integer();
  r.copies_capped = n["copies_capped"].boolean();
  r.telemetry = telemetry_from(n["telemetry"]);
  r.kernel = kernel_from(n["kernel"]);
  return r;
}

Verdict winner_from(const Node& n) {
  Verdict w;
  static_cast<GroupKey&>(w) = group_from(n);
  w.verdict = n["verdict"].str();
  w.default_config = config_from(n["default_config"]);
  w.config = config_from(n["config"]);
  w.default_us = n["default_us"].number();
  w.default_ci_low = n["default_ci_low"].number();
  w.default_ci_high = n["default_ci_high"].number();
  w.best_us = n["best_us"].number();
  w.best_ci_low = n["best_ci_low"].number();
  w.best_ci_high = n["best_ci_high"].number();
  w.speedup = n["speedup"].number();
  w.speedup_low = n["speedup_low"].number();
  w.speedup_high = n["speedup_high"].number();
  // Absent in sessions from before the interleaved confirmation.
  if (n.has("confirmed")) w.confirmed = n["confirmed"].boolean();
  if (n.has("note")) w.note = n["note"].str();
  return w;
}

Confirmation confirmation_from(const Node& n) {
  Confirmation c;
  static_cast<GroupKey&>(c) = group_from(n);
  c.default_config = config_from(n["default_config"]);
  c.config = config_from(n["config"]);
  c.default_us = stats_from(n["default_us"]);
  c.candidate_us = stats_from(n["candidate_us"]);
  c.converged = n["converged"].boolean();
  c.confirmed = n["confirmed"].boolean();
  c.failure = n["failure"].str();
  return c;
}

Estimate estimate_from(const Node& n) {
  Estimate e;
  e.device = n["device"].integer();
  e.label = n["label"].str();
  e.shapes_total = n["shapes_total"].integer();
  e.shapes_measured = n["shapes_measured"].integer();
  e.default_us_per_token = n["default_us_per_token"].number();
  e.tuned_us_per_token = n["tuned_us_per_token"].number();
  e.default_tokens_per_s = n["default_tokens_per_s"].number();
  e.tuned_tokens_per_s = n["tuned_tokens_per_s"].number();
  e.bytes_per_token = n["bytes_per_token"].number();
  e.bandwidth_gbs = n["bandwidth_gbs"].number();
  e.ceiling_tokens_per_s = n["ceiling_tokens_per_s"].number();
  const Node shapes = n["shapes"];
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Node sh = shapes.at(i);
    EstimateShape es;
    static_cast<ShapeKey&>(es) = shape_key_from(sh);
    es.calls_per_token = sh["calls_per_token"].int64();
    es.bytes_per_token = sh["bytes_per_token"].uint64();
    es.measured = sh["measured"].boolean();
    es.default_config = config_from(sh["default_config"]);
    es.tuned_config = config_from(sh["tuned_config"]);
    es.default_us = sh["default_us"].number();
    es.tuned_us = sh["tuned_us"].number();
    es.tuned_unfused = sh.has("tuned_unfused") && sh["tuned_unfused"].boolean();
    es.share = sh["share"].number();
    e.shapes.push_back(es);
  }
  return e;
}

template <class T, class F>
std::vector<T> list_from(const Node& n, F&& one) {
  std::vector<T> out;
  const size_t count = n.size();
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(one(n.at(i)));
  return out;
}

}  // namespace

std::string_view result_status_name(ResultStatus s) {
  switch (s) {
    case ResultStatus::Ok: return "ok";
    case ResultStatus::Failed: return "failed";
    case ResultStatus::Invalid: return "invalid";
    case ResultStatus::Error: return "error";
  }
  return "error";
}

ModelIdentity model_identity(const Model& m) {
  return {path_text(m.path.filename()), m.file_size, std::string(kHeaderHashPrefix) + hex64(m.header_hash), m.architecture};
}

const SessionDevice* find_device(const Session& s, int device_index) {
  for (const auto& d : s.devices)
    if (d.info.index == device_index) return &d;
  return nullptr;
}

const Result* find_result(const Session& s, const GroupKey& group, Config config) {
  for (const auto& r : s.results)
    if (r.group() == group && r.config == config) return &r;
  return nullptr;
}

const Verdict* find_verdict(const Session& s, const GroupKey& group) {
  for (const auto& w : s.verdicts)
    if (w.group() == group) return &w;
  return nullptr;
}

const Confirmation* find_confirmation(const Session& s, const GroupKey& group) {
  for (const auto& c : s.confirmations)
    if (c.group() == group) return &c;
  return nullptr;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string new_session_id() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device rd;
  char tail[16];
  std::snprintf(tail, sizeof tail, "%08x", static_cast<unsigned>(rd()));
  return std::string(stamp) + "-" + tail;
}

json to_json(const Result& r) {
  json j;
  put_group(j, r);
  j["config"] = config_json(r.config);
  j["is_default"] = r.is_default;
  j["is_small_k"] = r.is_small_k;
  j["status"] = result_status_name(r.status);
  j["failure"] = r.failure;
  j["max_abs_error"] = r.max_abs_error;
  j["worst_error_ratio"] = r.worst_error_ratio;
  j["time_us"] = stats_json(r.time_us);
  if (!r.trace_us.empty()) j["trace_us"] = r.trace_us;
  j["converged"] = r.converged;
  j["gbs"] = r.gbs;
  j["ops_per_s"] = r.ops_per_s;
  j["weight_copies"] = r.weight_copies;
  j["copies_capped"] = r.copies_capped;
  j["telemetry"] = gpu::telemetry_json(r.telemetry);
  j["kernel"] = kernel_json(r.kernel);
  return j;
}

namespace {

json kernel_source_json(const KernelSource& k) {
  json j = {{"kind", k.kind}};
  if (!k.is_engine()) {
    j["engine"] = k.engine;
  } else {
    j["source_path"] = k.source_path;
    j["ggml_commit"] = k.ggml_commit;
    j["hook_version"] = k.hook_version;
    j["probe_path"] = k.probe_path;
  }
  return j;
}

// Absent (sessions before the engine bridge): Temper's kernel, following the grid's engine version.
KernelSource kernel_source_from(const Node& root, const PlanGrid& grid) {
  KernelSource k;
  k.engine = grid.engine;
  if (!root.has("kernel_source")) return k;
  const Node n = root["kernel_source"];
  k.kind = n["kind"].str();
  if (k.kind == kKernelTemper) {
    k.engine = n["engine"].str();
  } else if (k.kind == kKernelEngine) {
    k.engine.clear();
    k.source_path = n["source_path"].str();
    k.ggml_commit = n["ggml_commit"].str();
    k.hook_version = n["hook_version"].str();
    k.probe_path = n["probe_path"].str();
  } else {
    fail(ErrorKind::BadInput, n["kind"].where + ": expected \"temper\" or \"engine\", found \"" + k.kind + "\"");
  }
  return k;
}

}  // namespace

std::string kernel_label(const KernelSource& k) {
  if (!k.is_engine()) return std::string(kKernelTemper);
  std::string s = "engine ggml " + (k.ggml_commit.empty() ? std::string("unknown") : k.ggml_commit);
  if (!k.hook_version.empty()) s += " hook " + k.hook_version;
  return s;
}

std::string describe(const KernelSource& k) {
  if (!k.is_engine()) return "temper (Temper's own kernel, " + (k.engine.empty() ? "?" : k.engine) + " tables)";
  std::string s = "engine: ggml " + (k.ggml_commit.empty() ? "(commit unknown)" : k.ggml_commit);
  if (!k.hook_version.empty()) s += " (hook " + k.hook_version + ")";
  if (!k.source_path.empty()) s += " from " + k.source_path;
  return s + " via " + k.probe_path;
}

json to_json(const Session& s) {
  json devices = json::array();
  for (const auto& d : s.devices)
    devices.push_back({{"info", gpu::device_json(d.info)},
                       {"spec_id", d.spec_id},
                       {"copy_bandwidth_gbs", d.copy_bandwidth_gbs},
                       {"telemetry_start", gpu::telemetry_json(d.telemetry_start)},
                       {"telemetry_end", gpu::telemetry_json(d.telemetry_end)},
                       {"plan", plan_json(d.plan)},
                       {"error", d.error}});
  json shapes = json::array();
  for (const auto& sh : s.shapes) shapes.push_back(shape_json(sh));
  json results = json::array();
  for (const auto& r : s.results) results.push_back(to_json(r));
  json winners = json::array();
  for (const auto& w : s.verdicts) winners.push_back(winner_json(w));
  json estimates = json::array();
  for (const auto& e : s.estimates) estimates.push_back(estimate_json(e));
  json confirmations = json::array();
  for (const auto& c : s.confirmations) confirmations.push_back(confirmation_json(c));
  const auto& b = s.build;
  return {{"schema_version", s.schema_version},
          {"id", s.id},
          {"created", s.created},
          {"finished", s.finished},
          {"status", s.status},
          {"tool_version", s.tool_version},
          {"build",
           {{"git_commit", b.git_commit}, {"compiler", b.compiler}, {"build_type", b.build_type}, {"flags", b.flags},
            {"hip_archs", b.hip_archs}, {"cuda_archs", b.cuda_archs}, {"kernel_set", b.kernel_set}}},
          {"kernel_source", kernel_source_json(s.kernel_source)},
          {"model",
           {{"file_name", s.model.file_name}, {"size_bytes", s.model.size_bytes},
            {"header_hash", s.model.header_hash}, {"architecture", s.model.architecture}}},
          {"shapes", shapes},
          {"grid", grid_json(s.grid)},
          {"options", options_json(s.options)},
          {"devices", devices},
          {"results", results},
          {"winners", winners},
          {"estimates", estimates},
          {"confirmations", confirmations}};
}

Result result_from_json(const json& j, const std::string& where) { return result_from(Node{j, where}); }

json to_json(const Confirmation& c) { return confirmation_json(c); }

Confirmation confirmation_from_json(const json& j, const std::string& where) {
  return confirmation_from(Node{j, where});
}

Session session_from_json(const json& j, const std::string& where) {
  const Node root{j, where};
  root.object();
  // A profile opened where a session is expected used to say `missing field "id"`.
  if (!j.contains("results") && ((j.contains("format") && j["format"] == "temper-profile") || j.contains("configs")))
    fail(ErrorKind::BadInput, where + ": a tuning profile, not a sweep session (`temper profile show` reads profiles)");
  const int version = root["schema_version"].integer();
  if (version > kSessionSchemaVersion)
    fail(ErrorKind::BadInput, where + ": session written by a newer Temper (schema " + std::to_string(version) +
                                  ", this build reads <= " + std::to_string(kSessionSchemaVersion) + ")");
  // Version 1 is the first format; older numbers were never written by any Temper. Version 2 only
  // added optional fields (launch kinds), so both read alike. Migrations of later versions go here,
  // oldest first, each turning version v into v + 1.
  if (version < 1)
    fail(ErrorKind::BadInput, where + ": schema_version " + std::to_string(version) +
                                  " is not a Temper session version (expected 1.." +
                                  std::to_string(kSessionSchemaVersion) + ")");
  Session s;
  s.schema_version = kSessionSchemaVersion;
  s.id = root["id"].str();
  s.created = root["created"].str();
  s.finished = root["finished"].str();
  s.status = root["status"].str();
  s.tool_version = root["tool_version"].str();
  const Node b = root["build"];
  s.build = {b["git_commit"].str(), b["compiler"].str(),   b["build_type"].str(), b["flags"].str(),
             b["hip_archs"].str(),  b["cuda_archs"].str(), b["kernel_set"].str()};
  const Node m = root["model"];
  s.model = {m["file_name"].str(), m["size_bytes"].uint64(), m["header_hash"].str(), m["architecture"].str()};
  // Sessions older GUIs wrote hold the bare 16 hex digits: read them as the prefixed form.
  if (s.model.header_hash.size() == 16 && s.model.header_hash.find_first_not_of("0123456789abcdef") == std::string::npos)
    s.model.header_hash = std::string(kHeaderHashPrefix) + s.model.header_hash;
  s.shapes = list_from<Shape>(root["shapes"], shape_from);
  s.grid = grid_from(root["grid"]);
  s.kernel_source = kernel_source_from(root, s.grid);
  s.options = options_from(root["options"]);
  s.devices = list_from<SessionDevice>(root["devices"], [](const Node& d) {
    SessionDevice sd;
    sd.info = device_info_from(d["info"]);
    sd.spec_id = d["spec_id"].str();
    sd.copy_bandwidth_gbs = d["copy_bandwidth_gbs"].number();
    sd.telemetry_start = telemetry_from(d["telemetry_start"]);
    sd.telemetry_end = telemetry_from(d["telemetry_end"]);
    sd.plan = plan_from(d["plan"]);
    sd.error = d["error"].str();
    return sd;
  });
  s.results = list_from<Result>(root["results"], result_from);
  s.verdicts = list_from<Verdict>(root["winners"], winner_from);
  s.estimates = list_from<Estimate>(root["estimates"], estimate_from);
  // Optional: absent in sessions from before the interleaved confirmation (none were made).
  if (root.has("confirmations")) s.confirmations = list_from<Confirmation>(root["confirmations"], confirmation_from);
  validate_session(s, where);
  return s;
}

void save_session(const Session& s, const std::filesystem::path& path, const WriteOptions& options) {
  write_file_atomic(path, to_json(s).dump(1) + "\n", options);
}

Session load_session(const std::filesystem::path& path) {
  return session_from_json(read_json_input(path, "session"), path_text(path));
}

}  // namespace temper
