// `temper profile export|show|validate|diff|merge|approve|reject|verify`: profiles from sessions,
// their approval, exports for engines, and checks (issue 9).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/engine_device.h"
#include "temper/error.h"
#include "temper/fake_backend.h"
#include "temper/fileio.h"
#include "temper/format.h"
#include "temper/ggml_table.h"
#include "temper/gpu_backend.h"
#include "temper/input.h"
#include "temper/profile.h"
#include "temper/session.h"
#include "temper/sweep.h"

namespace temper::cli {
namespace cmd_profile {  // own namespace: the commands are compiled together (unity build)
namespace {

using nlohmann::json;

// Text: a profile's strings (notes, device names, bench records) may hold anything; no control
// character of theirs reaches the terminal. JSON: nlohmann escapes them itself.
void out(const std::string& s) { std::fputs(terminal_text(s).c_str(), stdout); }
void out_json(const std::string& s) { std::fputs(s.c_str(), stdout); }
void err(const std::string& s) { std::fputs(s.c_str(), stderr); }

// Every profile sub-command's options; each declares the ones it takes.
struct Options {
  std::vector<std::string> files;
  std::string format, output, approve, arch, type, note, backend = "gpu", engine;
  double min_speedup = kDefaultMinSpeedup;
  int device = -1, n = 0, k = 0, ncols = 1;
  bool json = false, all = false, update = false, allow_empty = false, force = false;
  EngineProbeArgs probe;
};

json key_json(const ProfileKey& k) {
  json j = {{"arch", k.arch}, {"type", std::string(type_name(k.type))}, {"n", k.n}, {"k", k.k}, {"ncols", k.ncols}};
  if (launch_is_group(k.launch)) j["members"] = members_text(k.members);  // two groups may share the rest
  return j;
}
json config_json(Config c) { return {{"nwarps", c.nwarps}, {"rows_per_block", c.rows_per_block}}; }

json report_json(const ExportReport& r) {
  json notes = json::array();
  for (const auto& n : r.notes) {
    json j{{"key", key_json(n.key)}, {"config", config_json(n.config)}, {"fate", std::string(export_fate_name(n.fate))},
           {"reason", n.reason}};
    if (n.kept) j["kept"] = key_json(*n.kept);
    notes.push_back(j);
  }
  json out{{"format", r.format}, {"emitted", r.emitted()}, {"merged", r.merged()}, {"dropped", r.dropped()}, {"notes", notes}};
  if (!r.rows.empty()) {
    json rows = json::array();
    for (const auto& x : r.rows)
      rows.push_back({{"arch", x.arch}, {"branch", x.branch}, {"stock", config_json(x.stock)}, {"value", config_json(x.value)},
                      {"shapes", x.shapes}, {"unmeasured", x.unmeasured}, {"stock_us_per_token", x.stock_us_per_token},
                      {"table_us_per_token", x.table_us_per_token}, {"net_us_per_token", x.net_us_per_token()}});
    out["rows"] = rows;
  }
  return out;
}

json estimate_json(const Estimate& e) {
  return {{"device", e.device},
          {"label", e.label},
          {"shapes_total", e.shapes_total},
          {"shapes_measured", e.shapes_measured},
          {"default_tokens_per_s", e.default_tokens_per_s},
          {"tuned_tokens_per_s", e.tuned_tokens_per_s},
          {"ceiling_tokens_per_s", e.ceiling_tokens_per_s}};
}

// A session file has "results"; anything else is read as a profile (Temper or kernel-anvil).
bool is_session_file(const std::string& path) {
  const json j = read_json_input(path, "session or profile");
  return j.is_object() && j.contains("results") && j.contains("devices");
}

int run_export(const Options& o) {
  const auto& pos = o.files;
  const std::string& format = o.format;
  const std::string& path = o.output;
  const bool json_out = o.json;
  const double min_speedup = o.min_speedup;
  const std::optional<std::string> approve = o.approve.empty() ? std::nullopt : std::optional(o.approve);
  const std::optional<int> device = o.device >= 0 ? std::optional(o.device) : std::nullopt;
  ExportOptions eo;
  eo.arch = o.arch;
  refuse_overwriting_inputs(path, {pos[0]});
  check_output(path, {o.force});

  json summary{{"input", path_text(pos[0])}, {"output", path_text(path)}, {"format", format}};
  Export ex;
  if (is_session_file(pos[0])) {
    const Session s = read_session(pos[0]);
    if (format == "csv") {
      ex = export_csv(s);
    } else {
      Profile p = profile_from_session(s, device);
      const std::string policy = approve.value_or("significant");
      int approved = 0;
      if (policy == "significant") approved = approve_significant(p, min_speedup);
      if (policy == "all") approved = approve_all(p);
      summary["approved"] = approved;
      summary["entries"] = p.entries.size();
      json estimates = json::array();
      for (const auto& d : s.devices) {
        if (device && d.info.index != *device) continue;
        const Estimate e = estimate_with_profile(s, d.info.index, p);
        estimates.push_back(estimate_json(e));
        if (!json_out && e.shapes_measured > 0) {
          char buf[256];
          std::snprintf(buf, sizeof buf, "device %d (%s): %.1f tok/s default, %.1f tok/s approved (%s, %d of %d shapes)\n",
                        d.info.index, d.info.name.c_str(), e.default_tokens_per_s, e.tuned_tokens_per_s,
                        e.label.c_str(), e.shapes_measured, e.shapes_total);
          out(buf);
        }
      }
      summary["estimates"] = estimates;
      if (!json_out)
        out(std::to_string(approved) + " of " + std::to_string(p.entries.size()) + " winners approved (" + policy +
            (policy == "significant" ? ", min speedup " + std::to_string(int(min_speedup * 1000 + 0.5) / 10.0).substr(0, 4) + "%" : "") + ")\n");
      ex = format == "temper" ? export_temper(p) : format == "kernel-anvil" ? export_kernel_anvil(p, eo)
           : format == "ggml-table" ? export_ggml_table(p, eo, &s) : export_header(p, eo);
      // What the engine will actually run with this file: less than the approvals when the format
      // cannot carry them all (kernel-anvil's buckets, the ggml table's one value per type and ncols).
      json carried = json::array();
      for (const auto& d : s.devices) {
        if ((device && d.info.index != *device) || (!eo.arch.empty() && d.info.arch != eo.arch)) continue;
        const Estimate e = estimate_exported(s, d.info.index, p, format, eo);
        carried.push_back(estimate_json(e));
        if (!json_out && e.shapes_measured > 0) {
          char buf[256];
          std::snprintf(buf, sizeof buf, "device %d: %.1f tok/s as exported (what this %s file makes the engine run; %s)\n",
                        d.info.index, e.tuned_tokens_per_s, format.c_str(), e.label.c_str());
          out(buf);
        }
      }
      summary["estimates_as_applied"] = carried;
    }
  } else {
    if (format == "csv") fail(ErrorKind::BadInput, "--format csv exports a session's results; " + pos[0] + " is a profile");
    if (device) fail(ErrorKind::BadInput, "--device picks a device of a session; " + pos[0] + " is a profile");
    Profile p = load_profile(pos[0], eo.arch);
    require_valid_profile(p, pos[0]);  // never export what `profile validate` rejects
    if (approve == "significant") approve_significant(p, min_speedup);
    if (approve == "all") approve_all(p);
    ex = format == "temper" ? export_temper(p) : format == "kernel-anvil" ? export_kernel_anvil(p, eo)
         : format == "ggml-table" ? export_ggml_table(p, eo) : export_header(p, eo);
  }
  // An export that carries nothing used to be written anyway ({"configs": {}}, exit 0).
  if (const std::string why = empty_export_reason(ex); !why.empty() && !o.allow_empty) {
    if (!json_out) out(ex.report.text());
    fail(ErrorKind::BadInput, path + " not written: " + why + " (--allow-empty writes it anyway)");
  }
  write_file_atomic(path, ex.content, {o.force});
  summary["report"] = report_json(ex.report);
  if (json_out) {
    out_json(summary.dump(2) + "\n");
  } else {
    out(ex.report.text());
    out("wrote " + path + "\n");
  }
  if (const std::string why = empty_export_reason(ex); !why.empty())
    err("temper profile export: warning: " + path + ": " + why + "\n");
  return 0;
}

Profile load_for_cli(const Options& o, const std::string& path) { return load_profile(path, o.arch); }

int run_show(const Options& o) {
  const Profile p = load_for_cli(o, o.files[0]);
  if (o.json) {
    out_json(to_json(p).dump(2) + "\n");
    return 0;
  }
  // A kernel-anvil file records no date: the time it was read is not when it was made.
  const bool anvil = p.source == kSourceKernelAnvil;
  out("profile (" + p.source + "), " + (anvil ? std::string("no creation date recorded") : "created " + p.created) +
      ", model " + (p.model.empty() ? "-" : p.model) + ", " + std::to_string(p.entries.size()) + " entries\n");
  // Entries per (arch, device), each with its launch kind; a whole-token gain (groups, pipelining) is
  // said as the step's, not as one shape's.
  char buf[768];
  std::string place;
  for (const auto& e : p.entries) {
    const std::string here = e.key.arch + " " + device_text(e.key.device, e.key.arch);
    if (here != place) {
      place = here;
      out("\n" + (e.key.arch.empty() ? std::string("(no arch)") : e.key.arch) + ", " +
          (e.key.device.any() ? std::string("every device of the arch") : device_text(e.key.device, e.key.arch)) + "\n");
      std::snprintf(buf, sizeof buf, "  %-19s %-26s %5s %7s %7s %-9s %s\n", "launch", "shape", "ncols", "config", "default",
                    "approval", "speedup [CI] / source");
      out(buf);
    }
    std::string tail = "imported (no provenance)";
    if (e.provenance) {
      const std::string whole = whole_token_evidence(e);
      tail = format_number("%.3f", e.provenance->speedup) + " [" + format_number("%.3f", e.provenance->speedup_low) + ", " +
             format_number("%.3f", e.provenance->speedup_high) + "] " +
             (whole.empty() ? "this launch, " : "whole token (" + whole + ", the step's gain, not this shape's), ") +
             e.provenance->session_id;
    }
    const std::string shape = launch_is_group(e.key.launch) ? members_text(e.key.members) + " k " + std::to_string(e.key.k)
                                                            : shape_text(plain_shape(e.key)) +
                                                                  (launch_has_ids(e.key.launch)
                                                                       ? " experts " + std::to_string(e.key.used) + "/" + std::to_string(e.key.experts)
                                                                       : std::string());
    std::snprintf(buf, sizeof buf, "  %-19s %-26s %5d %7s %7s %-9s %s%s\n", std::string(launch_name(e.key.launch)).c_str(),
                  shape.c_str(), e.key.ncols, config_text(e.config).c_str(),
                  e.default_config.nwarps ? config_text(e.default_config).c_str() : "?", std::string(approval_name(e.approval)).c_str(),
                  tail.c_str(), e.bucketed ? " (bucket)" : "");
    out(buf);
  }
  // The llama-bench records: with and without the profile, per test, with the CI.
  for (const auto& b : p.benches) {
    const bool current = b.profile_fingerprint == approved_fingerprint(p, b.arch);
    out("\nllama-bench " + b.date + " on " + b.device + (b.arch.empty() ? "" : " (" + b.arch + ")") + ", " + b.model + ", " +
        std::to_string(b.rounds) + " runs x " + std::to_string(b.repetitions) + " repetitions per arm" +
        (current ? "" : "; recorded for an older state of this profile (its approvals changed since)") + "\n");
    out(bench_markdown(b));
    if (!b.engine_line.empty()) out("the engine said: " + b.engine_line + "\n");
  }
  if (p.paths.empty()) return 0;
  // mmvq or mmq at batch widths 2..8: what the hooked engine runs instead of ggml's own pick.
  out("\n" + std::to_string(p.paths.size()) + " path choices (mmvq or mmq)\n");
  std::snprintf(buf, sizeof buf, "%-8s %-8s %-10s %5s %-5s %-5s %-9s %s\n", "arch", "type", "launch", "ncols", "path", "stock",
                "approval", "speedup [CI] / device");
  out(buf);
  for (const auto& c : p.paths) {
    std::string tail = c.device.any() ? "every device of the arch" : device_text(c.device, c.arch);
    if (c.evidence)
      tail = format_number("%.3f", c.evidence->speedup) + " [" + format_number("%.3f", c.evidence->speedup_low) + ", " +
             format_number("%.3f", c.evidence->speedup_high) + "] " + tail;
    std::snprintf(buf, sizeof buf, "%-8s %-8s %-10s %5d %-5s %-5s %-9s %s\n", c.arch.c_str(), std::string(type_name(c.type)).c_str(),
                  std::string(launch_name(c.launch)).c_str(), c.ncols, std::string(mat_path_name(c.path)).c_str(),
                  std::string(mat_path_name(c.stock_path)).c_str(), std::string(approval_name(c.approval)).c_str(), tail.c_str());
    out(buf);
  }
  return 0;
}

int run_validate(const Options& o) {
  const auto& pos = o.files;
  const Profile p = load_for_cli(o, pos[0]);
  std::vector<std::string> problems = validate_profile(p);
  // The engine's reader is the reference: a Temper profile Temper accepts must read there alike.
  if (problems.empty() && p.source == kSourceTemper) problems = engine_reader_problems(pos[0]);
  const auto warnings = profile_warnings(p);  // valid, but an older hook would ignore the file
  if (o.json) {
    out_json(json{{"file", path_text(pos[0])}, {"valid", problems.empty()}, {"entries", p.entries.size()}, {"path_choices", p.paths.size()}, {"problems", problems}, {"warnings", warnings}}.dump(2) + "\n");
  } else {
    for (const auto& pr : problems) err(pos[0] + ": " + pr + "\n");
    for (const auto& w : warnings) err(pos[0] + ": warning: " + w + "\n");
    out(pos[0] + ": " + (problems.empty() ? "valid" : std::to_string(problems.size()) + " problem(s)") + ", " +
        std::to_string(p.entries.size()) + " entries" +
        (p.paths.empty() ? std::string() : ", " + std::to_string(p.paths.size()) + " path choices") + "\n");
  }
  return problems.empty() ? 0 : static_cast<int>(ErrorKind::BadInput);
}

int run_diff(const Options& o) {
  ProfileDiff d;
  try {
    d = diff_profiles(load_for_cli(o, o.files[0]), load_for_cli(o, o.files[1]));
  } catch (const Error& e) {  // any trouble is 2, as diff(1) says it, whatever its kind
    std::fprintf(stderr, "temper profile diff: %s\n", e.what());
    return 2;
  }
  if (o.json) {
    json lines = json::array();
    for (const auto& l : d.lines) {
      json j{{"kind", std::string(diff_kind_name(l.kind))}, {"key", key_json(l.key)}};
      if (l.a) j["a"] = {{"config", config_json(l.a->config)}, {"approval", std::string(approval_name(l.a->approval))}};
      if (l.b) j["b"] = {{"config", config_json(l.b->config)}, {"approval", std::string(approval_name(l.b->approval))}};
      if (l.speedup_change) j["speedup_change"] = *l.speedup_change;
      lines.push_back(j);
    }
    json paths = json::array();
    auto side = [](const PathChoice& c) {
      return json{{"path", std::string(mat_path_name(c.path))}, {"approval", std::string(approval_name(c.approval))}};
    };
    for (const auto& l : d.paths) {
      const PathChoice& k = l.a ? *l.a : *l.b;
      json j{{"kind", std::string(diff_kind_name(l.kind))}, {"arch", k.arch}, {"device", k.device.name},
             {"type", std::string(type_name(k.type))}, {"launch", std::string(launch_name(k.launch))}, {"ncols", k.ncols}};
      if (l.a) j["a"] = side(*l.a);
      if (l.b) j["b"] = side(*l.b);
      paths.push_back(j);
    }
    out_json(json{{"by_arch", d.by_arch}, {"arch_a", d.arch_a}, {"arch_b", d.arch_b}, {"added", d.count(DiffKind::Added)},
             {"removed", d.count(DiffKind::Removed)}, {"changed", d.count(DiffKind::Changed)},
             {"same", d.count(DiffKind::Same)}, {"lines", lines}, {"paths", paths}}
            .dump(2) +
        "\n");
  } else {
    out(d.text(o.all));
  }
  // As diff(1): 0 the same, 1 different (2 trouble: the errors above).
  const bool paths_differ =
      std::any_of(d.paths.begin(), d.paths.end(), [](const PathDiffLine& l) { return l.kind != DiffKind::Same; });
  return d.count(DiffKind::Added) + d.count(DiffKind::Removed) + d.count(DiffKind::Changed) > 0 || paths_differ ? 1 : 0;
}

int run_merge(const Options& o) {
  const std::string& path = o.output;
  refuse_overwriting_inputs(path, {o.files.begin(), o.files.end()});
  check_output(path, {o.force});
  std::vector<Profile> profiles;
  for (const auto& f : o.files) profiles.push_back(load_for_cli(o, f));
  const MergeResult m = merge_profiles(profiles);
  save_profile(m.profile, path, {o.force});
  if (o.json) {
    json conflicts = json::array();
    for (const auto& c : m.conflicts)
      conflicts.push_back({{"key", key_json(c.key)}, {"kept", config_json(c.kept)}, {"dropped", config_json(c.dropped)},
                           {"kept_from", c.kept_from}, {"dropped_from", c.dropped_from}, {"reason", c.reason}});
    out_json(json{{"output", path_text(path)}, {"entries", m.profile.entries.size()}, {"arches", m.arches}, {"conflicts", conflicts},
             {"paths", m.profile.paths.size()}, {"path_conflicts", m.path_conflicts}}
            .dump(2) +
        "\n");
  } else {
    out(m.text() + "wrote " + path + "\n");
  }
  return 0;
}

// approve / reject one entry, in place (or to -o).
int run_decide(const Options& o, Approval a) {
  Profile p = load_for_cli(o, o.files[0]);
  ProfileKey key;
  key.type = *parse_type(o.type);
  key.n = o.n;
  key.k = o.k;
  key.ncols = o.ncols;
  if (!o.arch.empty()) {
    key.arch = o.arch;
  } else {
    const auto arches = profile_arches(p);
    if (arches.size() != 1) fail(ErrorKind::BadInput, "the profile holds several arches: give --arch");
    key.arch = arches.front();
  }
  set_approval(p, key, a, o.note);
  const std::string path = o.output.empty() ? o.files[0] : o.output;
  save_profile(p, path, {o.force});
  if (o.json)
    out_json(json{{"key", key_json(key)}, {"approval", std::string(approval_name(a))}, {"output", path_text(path)}}.dump(2) + "\n");
  else
    out(key_text(key) + ": " + std::string(approval_name(a)) + " (wrote " + path + ")\n");
  return 0;
}

int run_verify(const Options& o, const CLI::App& app) {
  const Profile p = load_for_cli(o, o.files[0]);
  const bool update = o.update;
  if (!o.output.empty() && !update) fail(ErrorKind::BadInput, "-o is for --update (verify changes nothing otherwise)");
  if (update) check_output(o.output.empty() ? o.files[0] : o.output, {o.force});  // refused now, not after measuring
  // In the engine itself (docs/engine.md): the probe built from --engine-src, or --probe.
  const bool in_engine = o.probe.given();
  if (in_engine && (app.count("--backend") || app.count("--device")))
    fail(ErrorKind::BadInput, "--backend and --device cannot be combined with --probe/--engine-src (the probe serves one device)");
  std::unique_ptr<Device> device;
  if (in_engine) {
    EngineProbeArgs probe = o.probe;
    probe.arch = o.arch;  // --arch: the profile's arch, and the one the engine is built for
    device = std::make_unique<engine::EngineDevice>(engine_probe_options(probe));
  } else {
    std::vector<std::unique_ptr<Backend>> backends;
    if (o.backend == "fake")
      backends.push_back(std::make_unique<FakeBackend>(fake_options_from_env()));
    else
      backends = gpu_backends();
    gpu::DeviceList list = gpu::list_devices(std::move(backends));
    device = gpu::open_device(list, std::max(o.device, 0));  // Error(NoDevice) without one
  }

  RecheckOptions vo;
  vo.engine = o.engine;
  const bool json_out = o.json;
  std::string last;
  const RecheckReport r = recheck_profile(p, *device, vo, [&](const std::string& what) {
    if (!json_out && what != last) err("  " + what + "\n");
    last = what;
  });
  if (json_out) {
    json lines = json::array();
    for (const auto& l : r.lines) {
      json j{{"key", key_json(l.key)},       {"config", config_json(l.config)},
             {"default_config", config_json(l.default_config)}, {"verdict", l.verdict},
             {"default_us", l.default_us},   {"tuned_us", l.tuned_us},
             {"speedup", l.speedup},         {"speedup_low", l.speedup_low},
             {"speedup_high", l.speedup_high}, {"detail", l.detail}};
      if (l.recorded_speedup) j["recorded_speedup"] = *l.recorded_speedup;
      lines.push_back(j);
    }
    json skipped = json::array();
    for (const auto& k : r.skipped) skipped.push_back(key_json(k));
    out_json(json{{"device_name", r.device_name}, {"device_arch", r.device_arch}, {"session_id", r.session_id},
             {"still_winning", r.still_winning()}, {"lines", lines}, {"skipped", skipped}}
            .dump(2) +
        "\n");
  } else {
    out(r.text());
  }
  if (update) {
    const std::string path = o.output.empty() ? o.files[0] : o.output;
    save_profile(apply_recheck(p, r), path, {o.force});
    if (!json_out) out("updated " + path + "\n");
  }
  return 0;
}

// The sub-commands of `temper profile`, each with its options.
Action define_profile(CLI::App& app) {
  auto o = std::make_shared<Options>();
  std::vector<std::pair<CLI::App*, Action>> subs;
  auto sub = [&](const char* name, const char* summary, std::function<int(const Options&)> run) {
    CLI::App* s = app.add_subcommand(name, summary);
    subs.emplace_back(s, [o, run] { return run(*o); });
    return s;
  };
  auto files = [&](CLI::App* s, const char* name, int min, int max) {
    s->add_option(name, o->files, "")->required()->expected(min, max);
  };
  auto arch = [&](CLI::App* s) {
    s->add_option("--arch", o->arch, "one arch of the profile (an import's arch: kernel-anvil files carry none)");
  };
  auto json_flag = [&](CLI::App* s) { add_json(*s, o->json); };

  CLI::App* ex = sub("export", "a session's winners, or a profile, as temper, kernel-anvil, header or csv", run_export);
  files(ex, "SESSION|PROFILE", 1, 1);
  ex->add_option("--format", o->format, "temper, kernel-anvil, header, ggml-table or csv")
      ->required()
      ->check(one_of({"temper", "kernel-anvil", "header", "ggml-table", "csv"}));
  add_output(*ex, o->output)->required();
  add_force(*ex, o->force);
  ex->add_option("--approve", o->approve, "which winners to approve (default significant; a profile keeps its own)")
      ->check(one_of({"significant", "all", "none"}));
  add_min_speedup(*ex, o->min_speedup);
  add_device(*ex, o->device)->description("one device of the session");
  ex->add_flag("--allow-empty", o->allow_empty, "write an export that carries no config (refused otherwise)");
  arch(ex);
  json_flag(ex);

  for (auto [name, summary, run] : {std::tuple{"show", "a profile's entries", &run_show},
                                    {"validate", "a profile's problems (exit 2 when any)", &run_validate}}) {
    CLI::App* s = sub(name, summary, run);
    files(s, "PROFILE", 1, 1);
    arch(s);
    json_flag(s);
  }
  CLI::App* diff = sub("diff", "what changed between two profiles (exit 0 same, 1 different, 2 trouble, as diff(1))", run_diff);
  files(diff, "PROFILES", 2, 2);  // A then B
  diff->add_flag("--all", o->all, "also list the entries that are the same");
  arch(diff);
  json_flag(diff);
  CLI::App* merge = sub("merge", "profiles into one, the measured faster entry per key", run_merge);
  files(merge, "PROFILES", 2, -1);
  add_output(*merge, o->output)->required();
  add_force(*merge, o->force);
  arch(merge);
  json_flag(merge);
  for (auto [name, approval] : {std::pair{"approve", Approval::Approved}, {"reject", Approval::Rejected}}) {
    CLI::App* s = sub(name, "one entry of a profile, in place (or to -o)",
                      [a = approval](const Options& opt) { return run_decide(opt, a); });
    files(s, "PROFILE", 1, 1);
    add_type(*s, o->type, "the entry's ggml type")->required();
    s->add_option("--n", o->n, "the entry's rows")->required()->check(integer_in(1, INT32_MAX));
    s->add_option("--k", o->k, "the entry's row length")->required()->check(integer_in(1, INT32_MAX));
    s->add_option("--ncols", o->ncols, "the entry's batch width (default 1)")->check(integer_in(1, INT32_MAX));
    s->add_option("--note", o->note, "why, kept with the entry");
    add_output(*s, o->output, "write here instead of in place");
    add_force(*s, o->force);
    arch(s);
    json_flag(s);
  }
  CLI::App* verify = app.add_subcommand("verify", "re-measure approved entries against the default on this device");
  subs.emplace_back(verify, [o, verify] { return run_verify(*o, *verify); });
  files(verify, "PROFILE", 1, 1);
  add_device(*verify, o->device);
  verify->add_option("--backend", o->backend, "gpu (default) or fake (tests and demos)")->check(one_of({"gpu", "fake"}));
  verify->add_option("--engine", o->engine, "whose default config is the baseline (default: the profile's)");
  verify->add_flag("--update", o->update, "entries that no longer win go back to pending");
  add_output(*verify, o->output, "with --update: write here instead of in place");
  add_force(*verify, o->force);
  arch(verify);
  add_engine_probe(*verify, o->probe, false);  // --arch above also picks the engine build's arch
  verify->get_option("--probe")->description("re-measure in the engine's own kernel through this temper-probe (docs/engine.md)");
  json_flag(verify);

  return [subs] {
    for (const auto& [s, run] : subs)
      if (s->parsed()) return run();
    fail(ErrorKind::BadInput, "expected a sub-command: export, show, validate, diff, merge, approve, reject, verify");
  };
}

const Registrar registrar{Command{
    "profile",
    "approve a session's winners and export them for engines; show, validate, diff, merge, verify profiles",
    "export: from a session, every winner becomes an entry; --approve significant (default) approves\n"
    "  winners whose CI is separated from the default's and whose speedup is at least --min-speedup\n"
    "  (0.03 = 3%); it prints the estimated tokens/s (GEMV share of decode) default vs approved, and\n"
    "  as exported: what the file makes the engine run. A file that would carry no config is refused\n"
    "  (exit 2, nothing written) unless --allow-empty.\n"
    "  temper: lossless profile JSON. kernel-anvil: the JSON its llama.cpp patch reads (one arch; ncols 1\n"
    "  small-K winners only; shapes sharing a bucket cell merged); every dropped or merged entry is\n"
    "  listed. header: a standalone C++17 constexpr lookup. csv: every result of the session.\n"
    "  ggml-table: per arch, calc_nwarps / calc_rows_per_block / should_use_small_k in upstream's form\n"
    "  (one value per type and ncols: the approved config fastest per token over every measured shape\n"
    "  of the row, upstream's when none beats stock; each row's net µs per token is printed; shapes it\n"
    "  cannot carry are listed with their cost) and the evidence for a llama.cpp pull request (all\n"
    "  arches unless --arch).\n"
    "  From a profile, its approvals are kept unless --approve is given. --arch picks one arch.\n"
    "show/validate/diff/merge read Temper profiles and kernel-anvil files (imports carry no provenance;\n"
    "  give their arch with --arch). validate exits 2 when it finds problems; diff exits 0 same,\n"
    "  1 different, 2 trouble (as diff(1)). merge keeps, per key, the\n"
    "  measured faster entry and reports every conflict; arches are part of the key and never mix.\n"
    "verify re-measures every approved entry of the device's arch against the default on this device\n"
    "  and reports which still win; it changes nothing unless --update (entries that no longer win go\n"
    "  back to pending). Without a device it fails with exit code 3. --probe P or --engine-src DIR\n"
    "  re-measures in the engine's own kernel instead (docs/engine.md).\n"
    "All files are written atomically (temporary sibling + rename).",
    define_profile}};

}  // namespace
}  // namespace cmd_profile
}  // namespace temper::cli
