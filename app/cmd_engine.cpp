// `temper engine check|patch|build DIR`: the tuning hook on a user's ggml / llama.cpp tree, and the
// private hooked build with temper-probe that `temper sweep --engine-src` times (docs/engine.md).
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/engine.h"
#include "temper/engine_build.h"
#include "temper/engine_device.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/gpu_backend.h"

namespace temper::cli {
namespace {

// Every engine sub-command's options; each declares the ones it takes.
struct Options {
  std::string dir, model, profile, cache;
  EngineProbeArgs probe;
  int jobs = 0, tokens = 40, rounds = 5;
  bool json = false, undo = false;
};

int run_check(const Options& o) {
  const engine::CheckReport r = engine::check(o.dir);
  if (o.json) {
    nlohmann::json j = {{"path", r.tree.root.string()}, {"kind", engine::tree_kind_name(r.tree.kind)},
                        {"ggml_root", r.tree.ggml_root.string()}, {"mmvq", r.tree.mmvq.string()},
                        {"commit", r.tree.commit}, {"patched", r.state == engine::HookState::Patched},
                        {"patched_version", r.patched_version}, {"applies", r.applies}, {"problem", r.problem},
                        {"undoable", r.undoable}, {"undo_problem", r.undo_problem},
                        {"types", r.types}, {"hook_version", engine::kHookVersion}};
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
    else if (r.applies)
      std::printf("the hook (v%d) applies: %zu mmvq types\n", engine::kHookVersion, r.types.size());
    else
      std::printf("the hook does not apply: %s\n", r.problem.c_str());
  }
  return r.applies || r.state == engine::HookState::Patched ? 0 : 2;
}

int run_patch(const Options& o) {
  if (o.undo) {
    engine::undo(o.dir);
    std::printf("restored %s byte for byte; the hook's files are removed (re-run cmake's configure step)\n",
                engine::find_tree(o.dir).mmvq.string().c_str());
    return 0;
  }
  engine::patch(o.dir, engine::kernel_set(o.probe.kernel_set));
  std::printf("patched %s (hook v%d). Re-run cmake's configure step (the hook adds .cu files), then build as usual;\n"
              "the engine loads TEMPER_PROFILE, else ~/.config/temper/engine-profile.json. Undo: temper engine patch %s --undo\n",
              engine::find_tree(o.dir).mmvq.string().c_str(), engine::kHookVersion, o.dir.c_str());
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

engine::ProbeOptions engine_probe_options(const EngineProbeArgs& e) {
  engine::ProbeOptions o;
  if (!e.probe.empty()) {
    o.probe = e.probe;
    return o;
  }
  if (e.engine_src.empty()) fail(ErrorKind::BadInput, "expected --probe PATH or --engine-src DIR (see `temper help engine`)");
  return engine::probe_options(e.engine_src, engine::build(e.engine_src, build_options(e), print_build_step));
}

namespace {

int run_replay(const Options& o) {
  if (o.profile.empty()) fail(ErrorKind::BadInput, "--profile PATH: the profile to replay against stock");
  engine::ReplayOptions ro;
  ro.profile = o.profile;
  ro.tokens = o.tokens;
  ro.rounds = o.rounds;
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
    auto arm = [](const engine::ReplayArm& a) {
      return nlohmann::json{{"median_us", a.median}, {"ci_low_us", a.ci_low}, {"ci_high_us", a.ci_high},
                            {"tokens", a.token_us.size()}, {"mmvq_launches", a.launches}, {"tuned_launches", a.tuned}};
    };
    nlohmann::json j = {{"model", o.model}, {"device", device.info().name}, {"arch", device.info().arch},
                        {"profile", ro.profile.string()}, {"launches_per_token", launches}, {"gemvs_per_token", gemvs},
                        {"real_bytes", r.real_bytes}, {"stock", arm(r.stock)}, {"profiled", arm(r.profiled)},
                        {"speedup", r.speedup}, {"speedup_low", r.speedup_low}, {"speedup_high", r.speedup_high},
                        {"predicted_saving_us", r.predicted_saving_us}, {"predicted_speedup", r.predicted_speedup},
                        {"profile_entries_hit", r.profile_entries_hit}, {"notes", plan.launches.notes},
                        {"kernel", "engine"}, {"probe", device.options().probe.string()},
                        {"copy_bandwidth_gbs", r.copy_bandwidth_gbs}, {"launches_compared", r.launches_compared}};
    nlohmann::json breakdown = nlohmann::json::array(), differences = nlohmann::json::array();
    for (const auto& s : r.breakdown)
      breakdown.push_back({{"kind", std::string(launch_name(s.launch))}, {"type", std::string(type_name(s.type))},
                           {"n", s.n}, {"k", s.k}, {"experts", s.experts}, {"experts_used", s.used},
                           {"launches_per_token", s.launches}, {"bytes_per_token", s.bytes},
                           {"stock_us", s.stock_us}, {"profiled_us", s.profiled_us}, {"ideal_us", s.ideal_us},
                           {"percent_of_copy_bandwidth", s.percent_of_copy},
                           {"overhead_us_per_launch", s.overhead_us_per_launch}});
    for (const auto& d : r.differences)
      differences.push_back({{"launch", d.index}, {"role", d.role},
                             {"max_abs_difference", std::isnan(d.max_abs_difference) ? nlohmann::json(nullptr) : nlohmann::json(d.max_abs_difference)},
                             {"stock_rms", d.scale}});
    j["breakdown"] = breakdown;
    j["differences"] = differences;
    std::printf("%s\n", j.dump(2).c_str());
    return r.differences.empty() ? 0 : 5;  // a tuned launch computes something else: verification failed
  }
  std::printf("decode replay of %s on %s (kernel: the engine's; %s weights)\n", o.model.c_str(), device.info().name.c_str(),
              r.real_bytes ? "the file's" : "random valid");
  std::printf("  %zu launches in the plan, %lld GEMVs per token; mmvq launches per token: %lld stock, %lld with the profile (%lld tuned)\n",
              launches, static_cast<long long>(gemvs), static_cast<long long>(r.stock.launches),
              static_cast<long long>(r.profiled.launches), static_cast<long long>(r.profiled.tuned));
  std::printf("  GEMV time per token, stock:   %.1f µs [%.1f, %.1f] (%zu tokens)\n", r.stock.median, r.stock.ci_low,
              r.stock.ci_high, r.stock.token_us.size());
  std::printf("  GEMV time per token, profile: %.1f µs [%.1f, %.1f]\n", r.profiled.median, r.profiled.ci_low, r.profiled.ci_high);
  std::printf("  measured speedup %.3f [%.3f, %.3f]; the profile predicts %.3f (%d entries hit, %.1f µs saved per token)\n",
              r.speedup, r.speedup_low, r.speedup_high, r.predicted_speedup, r.profile_entries_hit, r.predicted_saving_us);
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
  patch->add_flag("--undo", o->undo, "restore mmvq.cu byte for byte and remove the hook's files");
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
  add_json(*replay, o->json);
  return [subs] {
    for (const auto& [s, run] : subs)
      if (s->parsed()) return run();
    fail(ErrorKind::BadInput, "expected a sub-command: check, patch, build or replay (see `temper help engine`)");
  };
}

const Registrar reg{{"engine", "the tuning hook on your ggml / llama.cpp tree; the engine build Temper times",
                     "temper engine check DIR [--json]\n"
                     "    What tree DIR is (standalone ggml or a llama.cpp checkout, ggml commit from .git) and whether\n"
                     "    Temper's tuning hook applies to its src/ggml-cuda/mmvq.cu. Exit 0 when it applies (or is\n"
                     "    applied already), 2 when it does not.\n"
                     "temper engine patch DIR [--kernel-set full|all|ncols1|ci] [--undo]\n"
                     "    Applies the hook in place, atomically (nothing is written when an anchor has moved), so your\n"
                     "    own build launches the approved configs of a Temper profile (TEMPER_PROFILE=path, else\n"
                     "    ~/.config/temper/engine-profile.json). --undo restores mmvq.cu byte for byte.\n"
                     "temper engine build DIR [--arch sm_90|gfx90a] [--kernel-set full|all|ncols1|ci] [--jobs N] [--cache DIR] [--json]\n"
                     "    A private hooked copy of DIR's ggml in Temper's cache, built for one arch (this machine's\n"
                     "    first GPU unless --arch) with FlashAttention and NCCL off, plus temper-probe. Cached by\n"
                     "    source hash; progress on stderr; a failure ends with the compiler's first error and the\n"
                     "    log's path (exit 6). HIP needs ROCm 6.1+ (Debian's hipcc 5.2 cannot build ggml).\n"
                     "temper engine replay MODEL.gguf --probe P|--engine-src DIR --profile P [--tokens 40] [--rounds 5] [--json]\n"
                     "    One decode token's GEMVs in the model's order (fused gate/up, MUL_MAT_ID for experts, the\n"
                     "    head) as one graph in the hooked engine, timed per token, stock and with the profile in\n"
                     "    turn: medians with 95% CI, the measured speedup and the profile's prediction beside it.\n",
                     define_engine}};

}  // namespace
}  // namespace temper::cli
