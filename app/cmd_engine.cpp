// `temper engine check|patch|build DIR`: the tuning hook on a user's ggml / llama.cpp tree, and the
// private hooked build with temper-probe that `temper sweep --engine-src` times (docs/engine.md);
// `engine replay` and `engine bench`: the profile measured in the engine and in the user's llama-bench.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cancel_on_sigint.h"
#include "cli.h"
#include "temper/engine.h"
#include "temper/engine_bench.h"
#include "temper/engine_build.h"
#include "temper/engine_device.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/input.h"
#include "temper/gguf.h"
#include "temper/gpu_backend.h"

namespace temper::cli {
namespace cmd_engine {  // own namespace: the commands are compiled together (unity build)
namespace {

// Every engine sub-command's options; each declares the ones it takes.
struct Options {
  std::string dir, model, profile, cache;
  EngineProbeArgs probe;
  int jobs = 0, tokens = 40, rounds = 5, ncols = 1;
  std::vector<std::string> paths;  // --path TYPE[:mul_mat_id]=mmvq|mmq
  std::string group;               // --group W:R|off (the profile arm's same-input groups)
  std::string pipeline;            // --pipeline on|off (the profile arm's pipelined launches)
  bool json = false, undo = false, dry_run = false;
  BenchArgs bench;
  bool md = false, csv = false, no_record = false;
};

int run_check(const Options& o) {
  const engine::CheckReport r = engine::check(o.dir);
  if (o.json) {
    nlohmann::json j = {{"path", r.tree.root.string()}, {"kind", engine::tree_kind_name(r.tree.kind)},
                        {"ggml_root", r.tree.ggml_root.string()}, {"mmvq", r.tree.mmvq.string()},
                        {"commit", r.tree.commit}, {"patched", r.state == engine::HookState::Patched},
                        {"patched_version", r.patched_version}, {"applies", r.applies}, {"problem", r.problem},
                        {"undoable", r.undoable}, {"undo_problem", r.undo_problem},
                        {"types", r.types}, {"hook_version", engine::kHookVersion},
                        {"group_hooks", r.group_hooks}, {"group_problem", r.group_problem},
                        {"pipeline_hooks", r.pipeline_hooks}, {"norm_hooks", r.norm_hooks}, {"family", r.family}};
    for (const engine::HookFamily& f : engine::hook_families())
      if (f.name == r.family)
        j["family_row"] = {{"tested", f.tested}, {"types", f.types}, {"groups", f.groups}, {"pipelining", f.pipelining},
                           {"mul_mat_path", f.mul_mat_path}, {"moe_cap", f.moe_cap}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s tree at %s (ggml commit %s)\n", std::string(engine::tree_kind_name(r.tree.kind)).c_str(),
                r.tree.root.string().c_str(), r.tree.commit.empty() ? "unknown: no .git" : r.tree.commit.substr(0, 12).c_str());
    if (r.state == engine::HookState::Patched && r.undoable)
      std::printf("mmvq.cu carries Temper's hook v%d (undo: temper engine patch %s --undo)\n", r.patched_version,
                  r.tree.root.string().c_str());
    else if (r.state == engine::HookState::Patched)
      std::printf("mmvq.cu carries Temper's hook v%d, but `temper engine patch --undo` cannot restore it: %s\n"
                  "(restore it from your version control, e.g. `git checkout -- %s` in %s)\n",
                  r.patched_version, r.undo_problem.c_str(), r.tree.mmvq.lexically_relative(r.tree.root).string().c_str(),
                  r.tree.root.string().c_str());
    else if (r.applies) {
      for (const engine::HookFamily& f : engine::hook_families())
        if (f.name == r.family) std::printf("family %s (hook/families.txt): %s\n", f.name.c_str(), engine::hook_family_row(f).c_str());
      std::printf("the hook (v%d) applies: %zu mmvq types; same-input groups: %s; pipelined launches: %s; the norm's q8_1 "
                  "activations: %s\n",
                  engine::kHookVersion, r.types.size(),
                  r.group_hooks ? "yes (ggml-cuda.cu's three places found)" : ("no: " + r.group_problem).c_str(),
                  r.pipeline_hooks ? "yes" : "no (this mmvq.cu's kernel does not wait for its predecessor)",
                  r.norm_hooks == (engine::kNormHookEvaluate | engine::kNormHookRead) ? "yes" : "no (this tree has not both of its places)");
    } else
      std::printf("the hook does not apply: %s\n", r.problem.c_str());
    if (r.state == engine::HookState::Patched)
      std::printf("same-input groups: %s; pipelined launches: %s; the norm's q8_1 activations: %s\n",
                  r.group_hooks ? "patched into ggml-cuda.cu" : "not in this tree's hook",
                  r.pipeline_hooks ? "compiled in" : "not in this tree's hook",
                  r.norm_hooks == (engine::kNormHookEvaluate | engine::kNormHookRead) ? "patched in" : "not in this tree's hook");
  }
  return r.applies || r.state == engine::HookState::Patched ? 0 : 2;
}

int run_patch(const Options& o) {
  if (o.dry_run) {
    const std::string diff = engine::dry_run(o.dir, engine::kernel_set(o.probe.kernel_set));
    std::fwrite(diff.data(), 1, diff.size(), stdout);
    return 0;
  }
  if (o.undo) {
    engine::undo(o.dir);
    std::printf("restored %s byte for byte; the hook's files are removed (re-run cmake's configure step)\n",
                engine::find_tree(o.dir).mmvq.string().c_str());
    return 0;
  }
  const int group_hooks = engine::patch(o.dir, engine::kernel_set(o.probe.kernel_set));
  std::printf("patched %s (hook v%d%s). Re-run cmake's configure step (the hook adds .cu files), then build as usual;\n"
              "the engine loads TEMPER_PROFILE, else ~/.config/temper/engine-profile.json. Undo: temper engine patch %s --undo\n",
              engine::find_tree(o.dir).mmvq.string().c_str(), engine::kHookVersion,
              group_hooks ? "; ggml-cuda.cu too, for same-input groups" : "; same-input groups left out: see temper engine check",
              o.dir.c_str());
  return 0;
}

// The arch to build for: --arch, else the first GPU this machine has.
std::string arch_to_build(const std::string& arch) {
  if (!arch.empty()) return arch;
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  if (list.devices.empty())
    fail(ErrorKind::NoDevice, list.why_none + "; name the target with --arch sm_90 (NVIDIA) or --arch gfx90a (AMD)");
  return list.devices.front().info.arch;
}

// The build of DIR's engine for --arch / --kernel-set (platform and compiler version filled in).
engine::BuildOptions build_options(const EngineProbeArgs& e) { return engine::build_options(arch_to_build(e.arch), e.kernel_set); }

// Build progress on stderr: a line per message, a counter redrawn in place for the steps.
void print_build_step(const engine::BuildStep& s) {
  if (s.total == 0) {
    std::fprintf(stderr, "engine build: %s\n", s.line.c_str());
  } else {
    const double eta = s.done > 0 ? s.elapsed_s / s.done * (s.total - s.done) : 0;
    std::fprintf(stderr, "\rengine build: %d/%d steps, %.0f s elapsed, ETA %.0f s   ", s.done, s.total, s.elapsed_s, eta);
    if (s.done == s.total) std::fprintf(stderr, "\n");
  }
}

int run_build(const Options& o) {
  engine::BuildOptions b = build_options(o.probe);
  b.jobs = o.jobs;
  if (!o.cache.empty()) b.cache_root = o.cache;
  const engine::BuildResult r = engine::build(o.dir, b, [&](const engine::BuildStep& s) {
    if (!o.json) print_build_step(s);
  });
  if (o.json) {
    nlohmann::json j = {{"probe", r.probe.string()}, {"dir", r.dir.string()}, {"log", r.log.string()},
                        {"hash", r.hash}, {"cached", r.cached}, {"arch", b.arch},
                        {"platform", engine::platform_name(b.platform)}, {"kernel_set", b.set.name},
                        {"commit", r.tree.commit}, {"hook_version", engine::kHookVersion}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s engine for %s: %s\n", r.cached ? "cached" : "built", b.arch.c_str(), r.probe.string().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace cmd_engine

void add_engine_probe(CLI::App& app, EngineProbeArgs& e, bool with_arch) {
  app.add_option("--probe", e.probe,
                 "time the engine's own mmvq through this temper-probe (built against a hooked ggml, docs/engine.md)")
      ->type_name("PATH");
  app.add_option("--engine-src", e.engine_src,
                 "build (or find in the cache) the hooked engine of this ggml / llama.cpp tree and use its temper-probe")
      ->type_name("DIR");
  if (with_arch)
    app.add_option("--arch", e.arch, "with --engine-src: the arch to build for (default: this machine's first GPU)")
        ->type_name("ARCH");
  app.add_option("--kernel-set", e.kernel_set, "with --engine-src: the hook's kernel instantiations (default full)")
      ->check(checked_by([](const std::string& v) { (void)engine::kernel_set(v); }));
}

void add_bench_args(CLI::App& app, BenchArgs& b, bool required) {
  b.tests = engine::kDefaultBenchTests;
  CLI::Option* lb = app.add_option("--llama-bench", b.llama_bench, "llama-bench built from the patched tree (the profile arm)")
                        ->type_name("PATH");
  if (required) lb->required();
  app.add_option("--stock-bench", b.stock_bench, "an unpatched llama-bench for the stock arm (default: --llama-bench with TEMPER_PROFILE=)")
      ->type_name("PATH");
  app.add_option("--tests", b.tests, "tgN (generated tokens) and ppW (prompt batches W = 1..8 wide) (default tg128,pp2,pp4,pp8)")
      ->type_name("LIST")
      ->check(checked_by([](const std::string& t) { engine::parse_bench_tests(t); }));
  app.add_option("--rounds", b.rounds, "llama-bench runs per arm and test, interleaved (default 3)")->check(integer_in(1, 1000));
  app.add_option("--repetitions", b.repetitions, "llama-bench -r: samples per run (default 5)")->check(integer_in(1, 1000));
  app.add_option("--bench-timeout", b.timeout_s, "seconds one llama-bench run may take before it is stopped (default 3600)")
      ->check(integer_in(1, 1 << 30));
  app.add_option("--bench-args", b.extra, "more llama-bench arguments for both arms, e.g. \"-ngl 99 -fa 1\"")->type_name("ARGS");
}

engine::BenchOptions bench_options(const BenchArgs& a) {
  engine::BenchOptions b;
  b.llama_bench = a.llama_bench;
  b.stock_bench = a.stock_bench;
  b.tests = a.tests;
  b.rounds = a.rounds;
  b.repetitions = a.repetitions;
  b.run_timeout = std::chrono::seconds(a.timeout_s);
  std::istringstream words(a.extra);
  for (std::string w; words >> w;) b.extra_args.push_back(w);
  return b;
}

engine::ProbeOptions engine_probe_options(const EngineProbeArgs& e) {
  engine::ProbeOptions o;
  if (!e.probe.empty()) {
    o.probe = e.probe;
    return o;
  }
  if (e.engine_src.empty()) fail(ErrorKind::BadInput, "expected --probe PATH or --engine-src DIR (see `temper help engine`)");
  return engine::probe_options(e.engine_src, engine::build(e.engine_src, cmd_engine::build_options(e), cmd_engine::print_build_step));
}

namespace cmd_engine {
namespace {

// --path TYPE[:mul_mat_id]=mmvq|mmq: ggml's mmvq/mmq pick forced for TYPE's MUL_MAT (or MUL_MAT_ID).
engine::ReplayOptions::ForcedPath parse_forced_path(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    fail(ErrorKind::BadInput, "--path \"" + text + "\": " + why + " (expected TYPE[:mul_mat_id]=mmvq|mmq, e.g. q4_K=mmq)");
  };
  const size_t eq = text.find('=');
  if (eq == std::string::npos) bad("no '='");
  std::string type = text.substr(0, eq);
  Launch launch = Launch::MulMat;
  if (const size_t colon = type.find(':'); colon != std::string::npos) {
    const auto l = parse_launch(type.substr(colon + 1));
    if (!l || (*l != Launch::MulMat && *l != Launch::MulMatId)) bad("the launch is mul_mat or mul_mat_id");
    launch = *l;
    type.resize(colon);
  }
  const auto t = parse_type(type);
  if (!t) bad("unknown ggml type \"" + type + "\"");
  const auto path = parse_mat_path(text.substr(eq + 1));
  if (!path) bad("the path is mmvq or mmq");
  return {*t, launch, *path};
}

int run_replay(const Options& o) {
  if (o.profile.empty()) fail(ErrorKind::BadInput, "--profile PATH: the profile to replay against stock");
  engine::ReplayOptions ro;
  ro.profile = o.profile;
  ro.tokens = o.tokens;
  ro.rounds = o.rounds;
  ro.ncols = o.ncols;
  for (const std::string& p : o.paths) ro.forced_paths.push_back(parse_forced_path(p));
  if (!o.group.empty()) ro.group = engine::parse_group_setting(o.group, "--group");
  if (!o.pipeline.empty()) {
    if (o.pipeline != "on" && o.pipeline != "off") fail(ErrorKind::BadInput, "--pipeline: \"" + o.pipeline + "\": expected on or off");
    ro.pipeline = o.pipeline == "on";
  }
  const GgufFile file = GgufFile::open(o.model);
  const engine::ReplayPlan plan = engine::plan_replay(file);
  engine::EngineDevice device(engine_probe_options(o.probe));
  const bool json_out = o.json;
  const engine::ReplayReport r = engine::run_replay(device, file, plan, ro, [&](int done, int total) {
    if (!json_out) std::fprintf(stderr, "\rreplay: %d/%d runs   %s", done, total, done == total ? "\n" : "");
  });
  int64_t gemvs = 0;
  for (const auto& n : plan.launches.launches) gemvs += n.gemvs();
  const size_t launches = plan.launches.launches.size();
  if (json_out) {
    nlohmann::json j = {{"model", path_text(o.model)}, {"device", device.info().name}, {"arch", device.info().arch},
                        {"profile", path_text(ro.profile)}, {"launches_per_token", launches}, {"gemvs_per_token", gemvs},
                        {"notes", plan.launches.notes}, {"kernel", "engine"}, {"probe", path_text(device.options().probe)},
                        {"forced_paths", o.paths}};
    if (!o.group.empty()) j["group"] = o.group;
    if (!o.pipeline.empty()) j["pipeline"] = o.pipeline;
    j.update(engine::replay_report_json(r));
    std::printf("%s\n", j.dump(2).c_str());
    return r.differences.empty() ? 0 : 5;  // a tuned launch computes something else: verification failed
  }
  std::printf("decode replay of %s on %s (kernel: the engine's; %s weights)\n", o.model.c_str(), device.info().name.c_str(),
              r.real_bytes ? "the file's" : "random valid");
  if (r.ncols > 1 || !ro.forced_paths.empty()) {
    std::string forced;
    for (const std::string& p : o.paths) forced += (forced.empty() ? "" : ", ") + p;
    std::printf("  batch width %d (every launch reads %d columns)%s%s; mmvq/mmq decisions changed per token: %lld stock arm, %lld profile arm\n",
                r.ncols, r.ncols, forced.empty() ? "" : ", forced in both arms: ", forced.c_str(),
                static_cast<long long>(r.stock.path_changes), static_cast<long long>(r.profiled.path_changes));
  }
  std::printf("  %zu launches in the plan, %lld GEMVs per token; mmvq launches per token: %lld stock, %lld with the profile (%lld tuned)\n",
              launches, static_cast<long long>(gemvs), static_cast<long long>(r.stock.launches),
              static_cast<long long>(r.profiled.launches), static_cast<long long>(r.profiled.tuned));
  if (ro.group || r.profiled.group_launches > 0)
    std::printf("  same-input groups (%s in the profile arm; off in the stock arm): %lld group launches per token, the plan has %d runs\n",
                ro.group ? ("--group " + o.group).c_str() : "the profile's entries",
                static_cast<long long>(r.profiled.group_launches), plan.launches.group_runs_per_token());
  if (ro.pipeline || r.profiled.pipelined_launches > 0)
    std::printf("  pipelined launches (%s in the profile arm; none in the stock arm): %lld per token\n",
                ro.pipeline ? ("--pipeline " + o.pipeline).c_str() : "TEMPER_MMVQ_PIPELINE",
                static_cast<long long>(r.profiled.pipelined_launches));
  std::printf("  GEMV time per token, stock:   %.1f µs [%.1f, %.1f] (%zu tokens)\n", r.stock.median, r.stock.ci_low,
              r.stock.ci_high, r.stock.token_us.size());
  std::printf("  GEMV time per token, profile: %.1f µs [%.1f, %.1f]\n", r.profiled.median, r.profiled.ci_low, r.profiled.ci_high);
  if (r.ncols == 1)
    std::printf("  measured speedup %.3f [%.3f, %.3f]; the profile predicts %.3f (%d entries hit, %.1f µs saved per token)\n",
                r.speedup, r.speedup_low, r.speedup_high, r.predicted_speedup, r.profile_entries_hit, r.predicted_saving_us);
  else
    std::printf("  measured speedup %.3f [%.3f, %.3f]; no prediction at %d columns (the profile's evidence is of one)\n",
                r.speedup, r.speedup_low, r.speedup_high, r.ncols);
  if (r.differences.empty())
    std::printf("  outputs: all %d launches agree between the arms\n", r.launches_compared);
  for (const auto& d : r.differences)
    std::printf("  OUTPUT DIFFERS: launch %d (%s): max |stock - profile| %g, stock rms %g\n", d.index, d.role.c_str(),
                d.max_abs_difference, d.scale);
  if (!r.breakdown.empty()) {
    std::printf("\n  where a token's GEMV time goes (each shape's launches on their own; copy bandwidth %.0f GB/s):\n",
                r.copy_bandwidth_gbs);
    std::printf("  %-40s %8s %11s %11s %9s %11s\n", "launch shape", "launches", "stock µs", "profile µs", "% copy", "µs/launch+");
    for (const auto& s : r.breakdown)
      std::printf("  %-40s %8lld %11.1f %11.1f %8.0f%% %11.2f\n", shape_text(s).c_str(), static_cast<long long>(s.launches),
                  s.stock_us, s.profiled_us, s.percent_of_copy, s.overhead_us_per_launch);
  }
  return r.differences.empty() ? 0 : 5;
}

int run_bench(const Options& o) {
  engine::BenchOptions b = bench_options(o.bench);
  b.model = o.model;
  b.profile = o.profile.empty() ? engine::default_engine_profile() : std::filesystem::path(o.profile);
  CancelOnSigint sigint;
  b.cancel = sigint.flag();
  engine::BenchEvents events;
  events.progress = [](const engine::BenchProgress& p) {
    if (p.done == p.total) return;
    std::fprintf(stderr, "bench: run %d/%d (%s)%s\n", p.done + 1, p.total, p.current.c_str(),
                 p.done > 0 ? (", ETA " + std::to_string(int(p.eta_s + 0.5)) + " s").c_str() : "");
  };
  engine::BenchResult r;
  try {
    r = engine::run_bench(b, events);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) fail(ErrorKind::Cancelled, "bench cancelled (Ctrl-C); nothing was recorded");
    throw;
  }
  for (const auto& n : r.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  bool recorded = false;
  if (!o.no_record) {  // into the profile's provenance: the profile file as it is now, plus this record
    Profile p = load_profile(b.profile);
    add_bench_record(p, r.record);
    save_profile(p, b.profile);
    recorded = true;
  }
  if (o.json) {
    nlohmann::json j = to_json(r.record);
    j["profile"] = path_text(b.profile);
    j["recorded"] = recorded;
    j["notes"] = r.notes;
    std::printf("%s\n", j.dump(2).c_str());
  } else if (o.csv) {
    std::printf("%s", terminal_text(bench_csv(r.record)).c_str());
  } else if (o.md) {
    std::printf("%s", terminal_text(bench_report_markdown(r.record)).c_str());
  } else {
    std::printf("%s", terminal_text(bench_report_markdown(r.record)).c_str());
    if (recorded) std::printf("\nrecorded in %s (its bench record; `temper profile export --format ggml-table` carries it)\n", b.profile.c_str());
  }
  return 0;
}

// The sub-commands of `temper engine`, each with its options.
Action define_engine(CLI::App& app) {
  auto o = std::make_shared<Options>();
  std::vector<std::pair<CLI::App*, Action>> subs;
  auto sub = [&](const char* name, const char* summary, int (*run)(const Options&)) {
    CLI::App* s = app.add_subcommand(name, summary);
    subs.emplace_back(s, [o, run] { return run(*o); });
    s->add_option("DIR", o->dir, "a ggml or llama.cpp source tree")->required();
    return s;
  };
  auto kernel_set = [&](CLI::App* s) {
    s->add_option("--kernel-set", o->probe.kernel_set, "the hook's kernel instantiations (default full)")
        ->check(checked_by([](const std::string& v) { (void)engine::kernel_set(v); }));
  };
  add_json(*sub("check", "whether Temper's tuning hook applies to DIR (exit 2 when it does not)", run_check), o->json);
  CLI::App* patch = sub("patch", "apply the hook to DIR in place (or --undo it)", run_patch);
  CLI::Option* undo = patch->add_flag("--undo", o->undo, "restore mmvq.cu byte for byte and remove the hook's files");
  patch->add_flag("--dry-run", o->dry_run, "print the unified diff patching would make (`patch -p1` in DIR applies it); change nothing")
      ->excludes(undo);
  kernel_set(patch);
  CLI::App* build = sub("build", "a private hooked build of DIR's ggml with temper-probe, in Temper's cache", run_build);
  build->add_option("--arch", o->probe.arch, "the arch to build for (default: this machine's first GPU)")->type_name("ARCH");
  kernel_set(build);
  build->add_option("--jobs", o->jobs, "parallel build jobs (default: the build tool's)")->check(integer_in(1, 1024));
  build->add_option("--cache", o->cache, "the build cache (default ~/.cache/temper/engine)")->type_name("DIR");
  add_json(*build, o->json);
  CLI::App* replay = app.add_subcommand("replay", "one decode token's GEMVs in the engine, stock vs a profile");
  subs.emplace_back(replay, [o] { return run_replay(*o); });
  replay->add_option("MODEL", o->model, "a GGUF file")->required();
  add_engine_probe(*replay, o->probe);
  replay->add_option("--profile", o->profile, "the profile to replay against stock")->type_name("PATH");
  replay->add_option("--tokens", o->tokens, "decode tokens per round (default 40)")->check(integer_in(1, 1 << 20));
  replay->add_option("--rounds", o->rounds, "rounds, stock and profile in turn (default 5)")->check(integer_in(1, 1 << 20));
  replay->add_option("--ncols", o->ncols, "batch width: every launch reads N columns (default 1; 2..8 needs probe protocol 4)")
      ->check(integer_in(1, 8));
  replay->add_option("--group", o->group,
                     "same-input groups in the profile arm: W:R forces that group config (W 2|4|8, R 1|2|4), off forces "
                     "them off (default: the profile's entries decide; needs probe protocol 5)");
  replay->add_option("--pipeline", o->pipeline,
                     "pipelined launches in the profile arm: on, every tuned one-column launch runs pipelined (the next "
                     "kernel may launch as its blocks start; they prefetch their rows to L2), off none (default: the profile's "
                     "*_pipelined entries decide; needs hook v6, probe protocol 6)")
      ->type_name("on|off");
  replay->add_option("--path", o->paths, "force ggml's mmvq/mmq pick in both arms: TYPE[:mul_mat_id]=mmvq|mmq (repeatable; needs --ncols 2..8)")
      ->type_name("TYPE=PATH");
  add_json(*replay, o->json);
  CLI::App* bench = app.add_subcommand("bench", "your llama-bench with the profile and without it, interleaved");
  subs.emplace_back(bench, [o] { return run_bench(*o); });
  bench->add_option("MODEL", o->model, "a GGUF file")->required();
  add_bench_args(*bench, o->bench, true);
  bench->add_option("--profile", o->profile, "the profile (default: where the engine looks, ~/.config/temper/engine-profile.json)")
      ->type_name("PATH");
  bench->add_flag("--no-record", o->no_record, "leave the profile as it is (default: add the result to its bench records)");
  CLI::Option* bj = add_json(*bench, o->json);
  CLI::Option* bm = bench->add_flag("--md", o->md, "print the markdown (compare-llama-bench's table shape) only");
  CLI::Option* bc = bench->add_flag("--csv", o->csv, "print every sample as CSV: test,llama_bench_test,n_ubatch,arm,round,repetition,tokens_per_s");
  bj->excludes(bm)->excludes(bc);
  bm->excludes(bc);
  return [subs] {
    for (const auto& [s, run] : subs)
      if (s->parsed()) return run();
    fail(ErrorKind::BadInput, "expected a sub-command: check, patch, build, replay or bench (see `temper help engine`)");
  };
}

const Registrar reg{{"engine", "the tuning hook on your ggml / llama.cpp tree; the engine build Temper times",
                     "temper engine check DIR [--json]\n"
                     "    What tree DIR is (standalone ggml or a llama.cpp checkout, ggml commit from .git) and whether\n"
                     "    Temper's tuning hook applies to its src/ggml-cuda/mmvq.cu: its upstream family and what the\n"
                     "    hook gives that family (hook/families.txt). Exit 0 when it applies (or is\n"
                     "    applied already), 2 when it does not.\n"
                     "temper engine patch DIR [--kernel-set full|all|ncols1|ci] [--undo|--dry-run]\n"
                     "    Applies the hook in place, atomically (nothing is written when an anchor has moved), so your\n"
                     "    own build launches the approved configs of a Temper profile (TEMPER_PROFILE=path, else\n"
                     "    ~/.config/temper/engine-profile.json). --undo restores mmvq.cu byte for byte. --dry-run\n"
                     "    prints the unified diff it would make instead (`patch -p1` in DIR applies it; the undo\n"
                     "    record under .temper-hook/ is not part of it) and changes nothing.\n"
                     "temper engine build DIR [--arch sm_90|gfx90a] [--kernel-set full|all|ncols1|ci] [--jobs N] [--cache DIR] [--json]\n"
                     "    A private hooked copy of DIR's ggml in Temper's cache, built for one arch (this machine's\n"
                     "    first GPU unless --arch) with FlashAttention and NCCL off, plus temper-probe. Cached by\n"
                     "    source hash; progress on stderr; a failure ends with the compiler's first error and the\n"
                     "    log's path (exit 6). HIP needs ROCm 6.1+ (Debian's hipcc 5.2 cannot build ggml).\n"
                     "temper engine replay MODEL.gguf --probe P|--engine-src DIR --profile P [--tokens 40] [--rounds 5]\n"
                     "                    [--ncols N] [--path TYPE[:mul_mat_id]=mmvq|mmq ...] [--group W:R|off]\n"
                     "                    [--pipeline on|off] [--json]\n"
                     "    One decode token's GEMVs in the model's order (fused gate/up, MUL_MAT_ID for experts, the\n"
                     "    head) as one graph in the hooked engine, timed per token, stock and with the profile in\n"
                     "    turn: medians with 95% CI, the measured speedup and the profile's prediction beside it.\n"
                     "    --ncols N replays N columns (tokens) per launch; --path forces ggml's mmvq/mmq pick for a\n"
                     "    type in both arms (hook v4, probe protocol 4).\n"
                     "temper engine bench MODEL.gguf --llama-bench PATH [--profile P] [--stock-bench PATH] [--tests tg128,pp2,pp4,pp8]\n"
                     "                   [--rounds 3] [--repetitions 5] [--bench-args ARGS] [--no-record] [--json|--md|--csv]\n"
                     "    Your llama-bench (built from the patched tree) with the profile (TEMPER_PROFILE=P) and without\n"
                     "    it (TEMPER_PROFILE= empty, or --stock-bench), the arms interleaved run by run; per test the\n"
                     "    median tokens/s of each arm and the speedup with a 95% CI (percentile bootstrap within runs),\n"
                     "    the device, both builds and the engine's own line. ppW runs a 128-token prompt in W-token\n"
                     "    micro-batches (-p 128 -n 0 -ub W), the mmvq batch width W. The result is added to the\n"
                     "    profile's bench records (the ggml-table export carries it). Exit 2 when llama-bench is missing\n"
                     "    or not executable, or prints no `temper: profile` line (not patched); 4 when a run fails.\n",
                     define_engine}};

}  // namespace
}  // namespace cmd_engine
}  // namespace temper::cli
