// `temper plan MODEL.gguf`: the engine's launch plan — the mmvq launches ggml makes for one decode
// token (plain, fused gate/up, MUL_MAT_ID over the experts a token uses, the head), each with its
// weight bytes; the distinct launch shapes with launches and bytes per token.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/plan.h"

namespace temper::cli {
namespace cmd_plan {  // own namespace: the commands are compiled together (unity build)
namespace {

using json = nlohmann::ordered_json;

struct Options {
  std::string path;
  int ncols = 1;
  bool json = false;
  bool launches = false;
};

json key_json(const ShapeKey& s) {
  json j = {{"kind", std::string(launch_name(s.launch))}, {"type", std::string(type_name(s.type))}, {"n", s.n}, {"k", s.k}};
  j["experts"] = launch_has_ids(s.launch) ? json(s.experts) : json(nullptr);
  j["experts_used"] = launch_has_ids(s.launch) ? json(s.used) : json(nullptr);
  return j;
}

int run(const Options& o) {
  const GgufFile file = [&] {
    try {
      return GgufFile::open(o.path);
    } catch (const Error& e) {  // a missing or unreadable model is the user's input, as in `inspect`
      if (e.kind() != ErrorKind::Io) throw;
      fail(ErrorKind::BadInput, e.what());
    }
  }();
  const LaunchPlan plan = plan_launches(file, o.ncols);
  if (o.json) {
    json launches = json::array();
    for (const Shape& s : plan.shapes) {
      json j = key_json(s);
      j["ncols"] = plan.ncols;
      j["calls_per_token"] = s.calls_per_token;
      j["bytes_per_token"] = s.bytes_per_token;
      j["tensors"] = s.tensors;
      launches.push_back(std::move(j));
    }
    json order = json::array();
    for (const PlannedLaunch& l : plan.launches) {
      json j = key_json(l);
      j["layer"] = l.layer < 0 ? json(nullptr) : json(l.layer);
      j["role"] = l.role();
      j["bytes"] = l.bytes;
      if (l.shares_input) j["shares_input"] = true;
      order.push_back(std::move(j));
    }
    json groups = json::array();
    for (const PlanGroup& g : plan.groups) {
      json members = json::array();
      for (const auto& m : g.members) members.push_back({{"type", std::string(type_name(m.type))}, {"n", m.n}});
      groups.push_back({{"members", members}, {"k", g.k}, {"runs_per_token", g.runs_per_token}});
    }
    json out = {{"schema", "temper.plan/1"}, {"model", o.path}, {"ncols", plan.ncols},
                {"launches_per_token", plan.launches.size()}, {"bytes_per_token", plan.bytes_per_token},
                {"launches", launches}};
    if (o.launches) out["order"] = order;
    out["groups"] = groups;
    out["notes"] = plan.notes;
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::printf("%s: %zu mmvq launches per token at batch width %d, %.1f MB of weights per token\n", o.path.c_str(),
              plan.launches.size(), plan.ncols, double(plan.bytes_per_token) / 1e6);
  std::printf("  %-15s %-8s %8s %7s %9s %9s %11s %7s\n", "kind", "type", "n", "k", "experts", "launches", "MB/token", "share");
  for (const Shape& s : plan.shapes) {
    const std::string experts = launch_has_ids(s.launch) ? std::to_string(s.used) + "/" + std::to_string(s.experts) : "-";
    std::printf("  %-15s %-8s %8d %7d %9s %9lld %11.1f %6.1f%%\n", std::string(launch_name(s.launch)).c_str(),
                std::string(type_name(s.type)).c_str(), s.n, s.k, experts.c_str(), static_cast<long long>(s.calls_per_token),
                double(s.bytes_per_token) / 1e6, 100.0 * double(s.bytes_per_token) / double(plan.bytes_per_token));
  }
  if (!plan.groups.empty()) {
    std::printf("\n  same-input runs the hooked engine can launch as one group (%d per token):\n", plan.group_runs_per_token());
    for (const PlanGroup& g : plan.groups)
      std::printf("  %4d x %s (k %d)\n", g.runs_per_token, g.members_text().c_str(), g.k);
  }
  if (o.launches) {
    std::printf("\n  in order (+: reads the activations of the launch before):\n");
    for (const PlannedLaunch& l : plan.launches)
      std::printf("  %5s %s%-32s %s\n", l.layer < 0 ? "head" : std::to_string(l.layer).c_str(), l.shares_input ? "+" : " ",
                  l.role().c_str(), shape_text(l).c_str());
  }
  for (const auto& n : plan.notes) std::printf("  note: %s\n", n.c_str());
  return 0;
}

const Registrar reg{Command{
    "plan", "the engine's launch plan: the mmvq launches of one decode token, as ggml makes them",
    "Lists the GEMV launches llama.cpp's CUDA/HIP backend makes for one decode token of MODEL at batch\n"
    "width --ncols: plain MUL_MAT (attention, down, the head), the fused gate/up kernel (MUL_MAT,\n"
    "MUL_MAT, GLU as one launch; ggml fuses only at one token), MUL_MAT_ID over the experts a token\n"
    "uses (expert gate/up fused, then down), with launches and weight bytes per token (every matrix a\n"
    "launch reads). Sweeps of the engine's kernel, estimates, the replay and the exports count tokens\n"
    "from this plan (docs/plan.md). Tensors mmvq does not run (f32/f16 routers, norms) are left out\n"
    "with a note.",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("MODEL", o->path, "a GGUF file")->required();
      app.add_option("--ncols", o->ncols, "batch width 1..8 (default 1: decode)")->check(integer_in(1, 8));
      app.add_flag("--launches", o->launches, "also list every launch in the model's order");
      add_json(app, o->json)->description("one JSON document on stdout (schema temper.plan/1, docs/json.md)");
      return [o] { return run(*o); };
    }}};

}  // namespace
}  // namespace cmd_plan
}  // namespace temper::cli
