// `temper engine check|patch|build DIR`: the tuning hook on a user's ggml / llama.cpp tree, and the
// private hooked build with temper-probe that `temper sweep --engine-src` times (docs/engine.md).
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

std::string one_dir(const Args& args, std::vector<std::string_view> valued, const char* sub) {
  const auto pos = positionals(args, std::move(valued));
  if (pos.size() != 2) fail(ErrorKind::BadInput, std::string("expected `temper engine ") + sub + " DIR` (see `temper help engine`)");
  return pos[1];
}

int run_check(const Args& args) {
  reject_unknown(args, {"--json"});
  const engine::CheckReport r = engine::check(one_dir(args, {}, "check"));
  if (has_flag(args, "--json")) {
    nlohmann::json j = {{"path", r.tree.root.string()}, {"kind", engine::tree_kind_name(r.tree.kind)},
                        {"ggml_root", r.tree.ggml_root.string()}, {"mmvq", r.tree.mmvq.string()},
                        {"commit", r.tree.commit}, {"patched", r.state == engine::HookState::Patched},
                        {"patched_version", r.patched_version}, {"applies", r.applies}, {"problem", r.problem},
                        {"types", r.types}, {"hook_version", engine::kHookVersion}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s tree at %s (ggml commit %s)\n", std::string(engine::tree_kind_name(r.tree.kind)).c_str(),
                r.tree.root.string().c_str(), r.tree.commit.empty() ? "unknown: no .git" : r.tree.commit.substr(0, 12).c_str());
    if (r.state == engine::HookState::Patched)
      std::printf("mmvq.cu carries Temper's hook v%d (undo: temper engine patch %s --undo)\n", r.patched_version,
                  r.tree.root.string().c_str());
    else if (r.applies)
      std::printf("the hook (v%d) applies: %zu mmvq types\n", engine::kHookVersion, r.types.size());
    else
      std::printf("the hook does not apply: %s\n", r.problem.c_str());
  }
  return r.applies || r.state == engine::HookState::Patched ? 0 : 2;
}

int run_patch(const Args& args) {
  reject_unknown(args, {"--undo", "--kernel-set"});
  const std::string dir = one_dir(args, {"--kernel-set"}, "patch");
  if (has_flag(args, "--undo")) {
    engine::undo(dir);
    std::printf("restored %s byte for byte; the hook's files are removed (re-run cmake's configure step)\n",
                engine::find_tree(dir).mmvq.string().c_str());
    return 0;
  }
  engine::patch(dir, engine::kernel_set(option(args, "--kernel-set").value_or("full")));
  std::printf("patched %s (hook v%d). Re-run cmake's configure step (the hook adds .cu files), then build as usual;\n"
              "the engine loads TEMPER_PROFILE, else ~/.config/temper/engine-profile.json. Undo: temper engine patch %s --undo\n",
              engine::find_tree(dir).mmvq.string().c_str(), engine::kHookVersion, dir.c_str());
  return 0;
}

// The arch to build for: --arch, else the first GPU this machine has.
std::string arch_to_build(const Args& args) {
  if (auto a = option(args, "--arch")) return *a;
  gpu::DeviceList list = gpu::list_devices(gpu_backends());
  if (list.devices.empty())
    fail(ErrorKind::NoDevice, list.why_none + "; name the target with --arch sm_90 (NVIDIA) or --arch gfx90a (AMD)");
  return list.devices.front().info.arch;
}

int run_build(const Args& args) {
  reject_unknown(args, {"--arch", "--kernel-set", "--jobs", "--cache", "--json"});
  const std::string dir = one_dir(args, {"--arch", "--kernel-set", "--jobs", "--cache"}, "build");
  engine::BuildOptions o = engine::build_options(arch_to_build(args), option(args, "--kernel-set").value_or("full"));
  if (auto j = option(args, "--jobs")) o.jobs = std::atoi(j->c_str());
  if (auto c = option(args, "--cache")) o.cache_root = *c;
  const bool json_out = has_flag(args, "--json");
  const engine::BuildResult r = engine::build(dir, o, [&](const engine::BuildStep& s) {
    if (json_out) return;
    if (s.total == 0) {
      std::fprintf(stderr, "engine build: %s\n", s.line.c_str());
    } else {
      const double eta = s.done > 0 ? s.elapsed_s / s.done * (s.total - s.done) : 0;
      std::fprintf(stderr, "\rengine build: %d/%d steps, %.0f s elapsed, ETA %.0f s   ", s.done, s.total, s.elapsed_s, eta);
      if (s.done == s.total) std::fprintf(stderr, "\n");
    }
  });
  if (json_out) {
    nlohmann::json j = {{"probe", r.probe.string()}, {"dir", r.dir.string()}, {"log", r.log.string()},
                        {"hash", r.hash}, {"cached", r.cached}, {"arch", o.arch},
                        {"platform", engine::platform_name(o.platform)}, {"kernel_set", o.set.name},
                        {"commit", r.tree.commit}, {"hook_version", engine::kHookVersion}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s engine for %s: %s\n", r.cached ? "cached" : "built", o.arch.c_str(), r.probe.string().c_str());
  }
  return 0;
}

}  // namespace

engine::ProbeOptions engine_probe_options(const Args& args) {
  engine::ProbeOptions o;
  if (auto p = option(args, "--probe")) {
    o.probe = *p;
    return o;
  }
  const auto src = option(args, "--engine-src");
  if (!src) fail(ErrorKind::BadInput, "expected --probe PATH or --engine-src DIR (see `temper help engine`)");
  const engine::BuildOptions b = engine::build_options(arch_to_build(args), option(args, "--kernel-set").value_or("full"));
  const engine::BuildResult r = engine::build(*src, b, [](const engine::BuildStep& s) {
    if (s.total == 0) std::fprintf(stderr, "engine build: %s\n", s.line.c_str());
    else std::fprintf(stderr, "\rengine build: %d/%d steps, ETA %.0f s   %s", s.done, s.total,
                      s.done > 0 ? s.elapsed_s / s.done * (s.total - s.done) : 0.0, s.done == s.total ? "\n" : "");
  });
  return engine::probe_options(*src, r);
}

namespace {

int run_replay(const Args& args) {
  reject_unknown(args, {"--probe", "--engine-src", "--arch", "--kernel-set", "--profile", "--tokens", "--rounds", "--json"});
  const auto pos = positionals(args, {"--probe", "--engine-src", "--arch", "--kernel-set", "--profile", "--tokens", "--rounds"});
  if (pos.size() != 2) fail(ErrorKind::BadInput, "expected `temper engine replay MODEL.gguf --probe P|--engine-src DIR --profile P`");
  const auto profile = option(args, "--profile");
  if (!profile) fail(ErrorKind::BadInput, "--profile PATH: the profile to replay against stock");
  engine::ReplayOptions ro;
  ro.profile = *profile;
  if (auto t = option(args, "--tokens")) ro.tokens = std::atoi(t->c_str());
  if (auto r = option(args, "--rounds")) ro.rounds = std::atoi(r->c_str());
  if (ro.tokens < 1 || ro.rounds < 1) fail(ErrorKind::BadInput, "--tokens and --rounds must be positive");
  const GgufFile file = GgufFile::open(pos[1]);
  const engine::ReplayPlan plan = engine::plan_replay(file);
  engine::EngineDevice device(engine_probe_options(args));
  const bool json_out = has_flag(args, "--json");
  const engine::ReplayReport r = engine::run_replay(device, file, plan, ro, [&](int done, int total) {
    if (!json_out) std::fprintf(stderr, "\rreplay: %d/%d runs   %s", done, total, done == total ? "\n" : "");
  });
  int64_t gemvs = 0;
  for (const auto& n : plan.nodes) gemvs += n.gemvs();
  if (json_out) {
    auto arm = [](const engine::ReplayArm& a) {
      return nlohmann::json{{"median_us", a.median}, {"ci_low_us", a.ci_low}, {"ci_high_us", a.ci_high},
                            {"tokens", a.token_us.size()}, {"mmvq_launches", a.launches}, {"tuned_launches", a.tuned}};
    };
    nlohmann::json j = {{"model", pos[1]}, {"device", device.info().name}, {"arch", device.info().arch},
                        {"profile", ro.profile.string()}, {"graph_nodes", plan.nodes.size()}, {"gemvs_per_token", gemvs},
                        {"real_bytes", r.real_bytes}, {"stock", arm(r.stock)}, {"profiled", arm(r.profiled)},
                        {"speedup", r.speedup}, {"speedup_low", r.speedup_low}, {"speedup_high", r.speedup_high},
                        {"predicted_saving_us", r.predicted_saving_us}, {"predicted_speedup", r.predicted_speedup},
                        {"profile_entries_hit", r.profile_entries_hit}, {"notes", plan.notes},
                        {"kernel", "engine"}, {"probe", device.options().probe.string()}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("decode replay of %s on %s (kernel: the engine's; %s weights)\n", pos[1].c_str(), device.info().name.c_str(),
              r.real_bytes ? "the file's" : "random valid");
  std::printf("  %zu graph nodes, %lld GEMVs per token; mmvq launches per token: %lld stock, %lld with the profile (%lld tuned)\n",
              plan.nodes.size(), static_cast<long long>(gemvs), static_cast<long long>(r.stock.launches),
              static_cast<long long>(r.profiled.launches), static_cast<long long>(r.profiled.tuned));
  std::printf("  GEMV time per token, stock:   %.1f µs [%.1f, %.1f] (%zu tokens)\n", r.stock.median, r.stock.ci_low,
              r.stock.ci_high, r.stock.token_us.size());
  std::printf("  GEMV time per token, profile: %.1f µs [%.1f, %.1f]\n", r.profiled.median, r.profiled.ci_low, r.profiled.ci_high);
  std::printf("  measured speedup %.3f [%.3f, %.3f]; the profile predicts %.3f (%d entries hit, %.1f µs saved per token)\n",
              r.speedup, r.speedup_low, r.speedup_high, r.predicted_speedup, r.profile_entries_hit, r.predicted_saving_us);
  return 0;
}

int run_engine(const Args& args) {
  if (args.empty() || args[0] == "--help") {
    std::printf("%s", "usage: temper engine check|patch|build|replay ... (see `temper help engine`)\n");
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "check") return run_check(args);
  if (args[0] == "patch") return run_patch(args);
  if (args[0] == "build") return run_build(args);
  if (args[0] == "replay") return run_replay(args);
  fail(ErrorKind::BadInput, "unknown `temper engine` command \"" + args[0] + "\" (expected check, patch, build or replay)");
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
                     run_engine}};

}  // namespace
}  // namespace temper::cli
