// `temper profile export|show|validate|diff|merge|approve|reject|verify`: profiles from sessions,
// their approval, exports for engines, and checks (issue 9).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/engine_device.h"
#include "temper/error.h"
#include "temper/fake_backend.h"
#include "temper/fileio.h"
#include "temper/ggml_table.h"
#include "temper/gpu_backend.h"
#include "temper/input.h"
#include "temper/validate.h"
#include "temper/profile.h"
#include "temper/session.h"
#include "temper/sweep.h"

namespace temper::cli {
namespace {

using nlohmann::json;

void out(const std::string& s) { std::fputs(s.c_str(), stdout); }
void err(const std::string& s) { std::fputs(s.c_str(), stderr); }

std::string need_output(const Args& args) {
  auto o = option(args, "-o");
  if (!o) o = option(args, "--output");
  if (!o) fail(ErrorKind::BadInput, "missing -o FILE");
  return *o;
}

std::optional<std::string> output_opt(const Args& args) {
  auto o = option(args, "-o");
  return o ? o : option(args, "--output");
}

json key_json(const ProfileKey& k) {
  return {{"arch", k.arch}, {"type", std::string(type_name(k.type))}, {"n", k.n}, {"k", k.k}, {"ncols", k.ncols}};
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
  return {{"format", r.format}, {"emitted", r.emitted()}, {"merged", r.merged()}, {"dropped", r.dropped()}, {"notes", notes}};
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

double parse_min_speedup(const Args& args) {
  const auto text = option(args, "--min-speedup");
  if (!text) return kDefaultMinSpeedup;
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(*text, &used);
  } catch (...) {
  }
  if (used != text->size() || !(v >= 0) || v > 10)
    fail(ErrorKind::BadInput, "--min-speedup expects a fraction ≥ 0 (0.03 = 3%), got \"" + *text + "\"");
  return v;
}

int run_export(const Args& args) {
  reject_unknown(args, {"--approve", "--min-speedup", "--format", "-o", "--output", "--device", "--arch", "--json"});
  const auto pos = positionals(args, {"--approve", "--min-speedup", "--format", "-o", "--output", "--device", "--arch"});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "expected one SESSION.json or PROFILE.json (see `temper help profile`)");
  const std::string format = option(args, "--format").value_or("");
  if (format != "temper" && format != "kernel-anvil" && format != "header" && format != "csv" && format != "ggml-table")
    fail(ErrorKind::BadInput, "--format must be temper, kernel-anvil, header, ggml-table or csv");
  const std::string path = need_output(args);
  refuse_overwriting_inputs(path, {pos[0]});
  const bool json_out = has_flag(args, "--json");
  const double min_speedup = parse_min_speedup(args);
  const auto approve = option(args, "--approve");
  if (approve && *approve != "significant" && *approve != "all" && *approve != "none")
    fail(ErrorKind::BadInput, "--approve must be significant, all or none, got \"" + *approve + "\"");
  std::optional<int> device;
  if (auto d = option(args, "--device")) device = gpu::parse_device_number(*d);
  ExportOptions eo;
  eo.arch = option(args, "--arch").value_or("");

  json summary{{"input", pos[0]}, {"output", path}, {"format", format}};
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
      if (format == "kernel-anvil") {
        // What the engine will actually run with this file: less than the profile when entries drop.
        const Profile applied = as_applied(p, ex.report);
        json carried = json::array();
        for (const auto& d : s.devices) {
          if ((device && d.info.index != *device) || (!eo.arch.empty() && d.info.arch != eo.arch)) continue;
          const Estimate e = estimate_with_profile(s, d.info.index, applied);
          carried.push_back(estimate_json(e));
          if (!json_out && e.shapes_measured > 0) {
            char buf[256];
            std::snprintf(buf, sizeof buf, "device %d: %.1f tok/s with what kernel-anvil's format carries (%s)\n",
                          d.info.index, e.tuned_tokens_per_s, e.label.c_str());
            out(buf);
          }
        }
        summary["estimates_as_applied"] = carried;
      }
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
  write_file_atomic(path, ex.content);
  summary["report"] = report_json(ex.report);
  if (json_out) {
    out(summary.dump(2) + "\n");
  } else {
    out(ex.report.text());
    out("wrote " + path + "\n");
  }
  // An export that carries nothing used to pass silently ({"configs": {}}, exit 0).
  if (format != "csv" && ex.report.emitted() == 0)
    err("temper profile export: warning: " + path + " carries no config (0 emitted, " + std::to_string(ex.report.dropped()) +
        " dropped" + (format == "kernel-anvil" ? ": nothing approved is expressible in kernel-anvil's format" : ": nothing approved") +
        "); the engine keeps its defaults\n");
  return 0;
}

Profile load_for_cli(const Args& args, const std::string& path) { return load_profile(path, option(args, "--arch").value_or("")); }

int run_show(const Args& args) {
  reject_unknown(args, {"--arch", "--json"});
  const auto pos = positionals(args, {"--arch"});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "expected one PROFILE.json");
  const Profile p = load_for_cli(args, pos[0]);
  if (has_flag(args, "--json")) {
    out(to_json(p).dump(2) + "\n");
    return 0;
  }
  out("profile (" + p.source + "), created " + p.created + ", model " + (p.model.empty() ? "-" : p.model) + ", " +
      std::to_string(p.entries.size()) + " entries\n");
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-8s %-8s %7s %7s %5s %7s %7s %-9s %s\n", "arch", "type", "n", "k", "ncols", "config",
                "default", "approval", "speedup [CI] / source");
  out(buf);
  for (const auto& e : p.entries) {
    std::string cfg = config_text(e.config);
    std::string def = e.default_config.nwarps ? config_text(e.default_config) : "?";
    std::string tail = "imported (no provenance)";
    if (e.provenance) {
      char t[256];
      std::snprintf(t, sizeof t, "%.3f [%.3f, %.3f] %s on %s", e.provenance->speedup, e.provenance->speedup_low,
                    e.provenance->speedup_high, e.provenance->session_id.c_str(), e.provenance->device_name.c_str());
      tail = t;
    }
    std::snprintf(buf, sizeof buf, "%-8s %-8s %7d %7d %5d %7s %7s %-9s %s%s\n", e.key.arch.c_str(),
                  std::string(type_name(e.key.type)).c_str(), e.key.n, e.key.k, e.key.ncols, cfg.c_str(), def.c_str(),
                  std::string(approval_name(e.approval)).c_str(), tail.c_str(), e.bucketed ? " (bucket)" : "");
    out(buf);
  }
  return 0;
}

int run_validate(const Args& args) {
  reject_unknown(args, {"--arch", "--json"});
  const auto pos = positionals(args, {"--arch"});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "expected one PROFILE.json");
  const Profile p = load_for_cli(args, pos[0]);
  const auto problems = validate_profile(p);
  if (has_flag(args, "--json")) {
    out(json{{"file", pos[0]}, {"valid", problems.empty()}, {"entries", p.entries.size()}, {"problems", problems}}.dump(2) + "\n");
  } else {
    for (const auto& pr : problems) err(pos[0] + ": " + pr + "\n");
    out(pos[0] + ": " + (problems.empty() ? "valid" : std::to_string(problems.size()) + " problem(s)") + ", " +
        std::to_string(p.entries.size()) + " entries\n");
  }
  return problems.empty() ? 0 : static_cast<int>(ErrorKind::BadInput);
}

int run_diff(const Args& args) {
  reject_unknown(args, {"--arch", "--json", "--all"});
  const auto pos = positionals(args, {"--arch"});
  if (pos.size() != 2) fail(ErrorKind::BadInput, "expected two profiles: A.json B.json");
  const ProfileDiff d = diff_profiles(load_for_cli(args, pos[0]), load_for_cli(args, pos[1]));
  if (has_flag(args, "--json")) {
    json lines = json::array();
    for (const auto& l : d.lines) {
      json j{{"kind", std::string(diff_kind_name(l.kind))}, {"key", key_json(l.key)}};
      if (l.a) j["a"] = {{"config", config_json(l.a->config)}, {"approval", std::string(approval_name(l.a->approval))}};
      if (l.b) j["b"] = {{"config", config_json(l.b->config)}, {"approval", std::string(approval_name(l.b->approval))}};
      if (l.speedup_change) j["speedup_change"] = *l.speedup_change;
      lines.push_back(j);
    }
    out(json{{"by_arch", d.by_arch}, {"arch_a", d.arch_a}, {"arch_b", d.arch_b}, {"added", d.count(DiffKind::Added)},
             {"removed", d.count(DiffKind::Removed)}, {"changed", d.count(DiffKind::Changed)},
             {"same", d.count(DiffKind::Same)}, {"lines", lines}}
            .dump(2) +
        "\n");
  } else {
    out(d.text(has_flag(args, "--all")));
  }
  return 0;
}

int run_merge(const Args& args) {
  reject_unknown(args, {"--arch", "--json", "-o", "--output"});
  const auto pos = positionals(args, {"--arch", "-o", "--output"});
  if (pos.size() < 2) fail(ErrorKind::BadInput, "expected two or more profiles to merge");
  const std::string path = need_output(args);
  std::vector<Profile> profiles;
  for (const auto& f : pos) profiles.push_back(load_for_cli(args, f));
  const MergeResult m = merge_profiles(profiles);
  save_profile(m.profile, path);
  if (has_flag(args, "--json")) {
    json conflicts = json::array();
    for (const auto& c : m.conflicts)
      conflicts.push_back({{"key", key_json(c.key)}, {"kept", config_json(c.kept)}, {"dropped", config_json(c.dropped)},
                           {"kept_from", c.kept_from}, {"dropped_from", c.dropped_from}, {"reason", c.reason}});
    out(json{{"output", path}, {"entries", m.profile.entries.size()}, {"arches", m.arches}, {"conflicts", conflicts}}.dump(2) + "\n");
  } else {
    out(m.text() + "wrote " + path + "\n");
  }
  return 0;
}

// approve / reject one entry, in place (or to -o).
int run_decide(const Args& args, Approval a) {
  reject_unknown(args, {"--arch", "--type", "--n", "--k", "--ncols", "--note", "-o", "--output", "--json"});
  const auto pos = positionals(args, {"--arch", "--type", "--n", "--k", "--ncols", "--note", "-o", "--output"});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "expected one PROFILE.json");
  Profile p = load_for_cli(args, pos[0]);
  auto need = [&](std::string_view name) {
    auto v = option(args, name);
    if (!v) fail(ErrorKind::BadInput, "missing " + std::string(name));
    return *v;
  };
  auto integer = [&](std::string_view name, const std::string& v) {
    size_t used = 0;
    int x = 0;
    try {
      x = std::stoi(v, &used);
    } catch (...) {
    }
    if (used != v.size() || x < 1) fail(ErrorKind::BadInput, std::string(name) + " expects a positive integer, got \"" + v + "\"");
    return x;
  };
  ProfileKey key;
  const auto t = parse_type(need("--type"));
  if (!t) fail(ErrorKind::BadInput, "unknown ggml type \"" + need("--type") + "\"");
  key.type = *t;
  key.n = integer("--n", need("--n"));
  key.k = integer("--k", need("--k"));
  key.ncols = integer("--ncols", option(args, "--ncols").value_or("1"));
  if (auto arch = option(args, "--arch")) {
    key.arch = *arch;
  } else {
    const auto arches = profile_arches(p);
    if (arches.size() != 1) fail(ErrorKind::BadInput, "the profile holds several arches: give --arch");
    key.arch = arches.front();
  }
  set_approval(p, key, a, option(args, "--note").value_or(""));
  const std::string path = output_opt(args).value_or(pos[0]);
  save_profile(p, path);
  if (has_flag(args, "--json"))
    out(json{{"key", key_json(key)}, {"approval", std::string(approval_name(a))}, {"output", path}}.dump(2) + "\n");
  else
    out(key_text(key) + ": " + std::string(approval_name(a)) + " (wrote " + path + ")\n");
  return 0;
}

int run_verify(const Args& args) {
  reject_unknown(args, {"--device", "--backend", "--update", "-o", "--output", "--json", "--engine", "--arch", "--probe",
                        "--engine-src", "--kernel-set"});
  const auto pos = positionals(args, {"--device", "--backend", "-o", "--output", "--engine", "--arch", "--probe",
                                      "--engine-src", "--kernel-set"});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "expected one PROFILE.json");
  const Profile p = load_for_cli(args, pos[0]);
  const bool update = has_flag(args, "--update");
  if (output_opt(args) && !update) fail(ErrorKind::BadInput, "-o is for --update (verify changes nothing otherwise)");
  const int number = gpu::parse_device_number(option(args, "--device").value_or("0"));
  const std::string backend = option(args, "--backend").value_or("gpu");
  std::vector<std::unique_ptr<Backend>> backends;
  if (backend == "fake")
    backends.push_back(std::make_unique<FakeBackend>(fake_options_from_env()));
  else if (backend == "gpu")
    backends = gpu_backends();
  else
    fail(ErrorKind::BadInput, "--backend must be gpu or fake, got \"" + backend + "\"");
  // In the engine itself (docs/engine.md): the probe built from --engine-src, or --probe.
  const bool in_engine = option(args, "--probe") || option(args, "--engine-src");
  if (in_engine && (option(args, "--backend") || option(args, "--device")))
    fail(ErrorKind::BadInput, "--backend and --device cannot be combined with --probe/--engine-src (the probe serves one device)");
  gpu::DeviceList list = gpu::list_devices(in_engine ? std::vector<std::unique_ptr<Backend>>{} : std::move(backends));
  std::unique_ptr<Device> device = in_engine ? std::make_unique<engine::EngineDevice>(engine_probe_options(args))
                                             : gpu::open_device(list, number);  // Error(NoDevice) without one

  RecheckOptions vo;
  vo.engine = option(args, "--engine").value_or("");
  const bool json_out = has_flag(args, "--json");
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
    out(json{{"device_name", r.device_name}, {"device_arch", r.device_arch}, {"session_id", r.session_id},
             {"still_winning", r.still_winning()}, {"lines", lines}, {"skipped", skipped}}
            .dump(2) +
        "\n");
  } else {
    out(r.text());
  }
  if (update) {
    const std::string path = output_opt(args).value_or(pos[0]);
    save_profile(apply_recheck(p, r), path);
    if (!json_out) out("updated " + path + "\n");
  }
  return 0;
}

int run_profile(const Args& args) {
  if (args.empty()) fail(ErrorKind::BadInput, "expected a sub-command: export, show, validate, diff, merge, approve, reject, verify");
  const std::string sub = args[0];
  const Args rest(args.begin() + 1, args.end());
  if (sub == "export") return run_export(rest);
  if (sub == "show") return run_show(rest);
  if (sub == "validate") return run_validate(rest);
  if (sub == "diff") return run_diff(rest);
  if (sub == "merge") return run_merge(rest);
  if (sub == "approve") return run_decide(rest, Approval::Approved);
  if (sub == "reject") return run_decide(rest, Approval::Rejected);
  if (sub == "verify") return run_verify(rest);
  fail(ErrorKind::BadInput, "unknown profile sub-command \"" + sub + "\" (see `temper help profile`)");
}

const Registrar registrar{Command{
    "profile",
    "approve a session's winners and export them for engines; show, validate, diff, merge, verify profiles",
    "usage:\n"
    "  temper profile export SESSION.json|PROFILE.json --format temper|kernel-anvil|header|ggml-table|csv -o FILE\n"
    "                        [--approve significant|all|none] [--min-speedup 0.03] [--device N] [--arch A] [--json]\n"
    "  temper profile show PROFILE.json [--arch A] [--json]\n"
    "  temper profile validate PROFILE.json [--arch A] [--json]\n"
    "  temper profile diff A.json B.json [--all] [--json]\n"
    "  temper profile merge A.json B.json... -o OUT.json [--json]\n"
    "  temper profile approve|reject PROFILE.json --type T --n N --k K [--ncols 1] [--arch A] [--note TEXT] [-o OUT]\n"
    "  temper profile verify PROFILE.json [--device N] [--backend gpu|fake] [--engine E] [--update [-o OUT]] [--json]\n"
    "                        [--probe P | --engine-src DIR]   re-measure in the engine's own kernel (docs/engine.md)\n"
    "\n"
    "export: from a session, every winner becomes an entry; --approve significant (default) approves\n"
    "  winners whose CI is separated from the default's and whose speedup is at least --min-speedup\n"
    "  (0.03 = 3%); it prints the estimated tokens/s (GEMV share of decode) default vs approved.\n"
    "  temper: lossless profile JSON. kernel-anvil: the JSON its llama.cpp patch reads (one arch; ncols 1\n"
    "  small-K winners only; shapes sharing a bucket cell merged); every dropped or merged entry is\n"
    "  listed. header: a standalone C++17 constexpr lookup. csv: every result of the session.\n"
    "  ggml-table: per arch, calc_nwarps / calc_rows_per_block / should_use_small_k in upstream's form\n"
    "  (one value per type and ncols; shapes it cannot carry are listed with their cost) and the\n"
    "  evidence table for a llama.cpp pull request (all arches unless --arch).\n"
    "  From a profile, its approvals are kept unless --approve is given. --arch picks one arch.\n"
    "show/validate/diff/merge read Temper profiles and kernel-anvil files (imports carry no provenance;\n"
    "  give their arch with --arch). validate exits 2 when it finds problems. merge keeps, per key, the\n"
    "  measured faster entry and reports every conflict; arches are part of the key and never mix.\n"
    "verify re-measures every approved entry of the device's arch against the default on this device\n"
    "  and reports which still win; it changes nothing unless --update (entries that no longer win go\n"
    "  back to pending). Without a device it fails with exit code 3.\n"
    "All files are written atomically (temporary sibling + rename).",
    run_profile}};

}  // namespace
}  // namespace temper::cli
