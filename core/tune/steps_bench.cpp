// Tune's steps that decide by whole tokens: pipelined launches (llama-bench decides), the token step
// (the token probe decides) and llama-bench with and without the profile.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "steps.h"

#include "temper/content_hash.h"
#include "temper/engine_replay.h"
#include "temper/error.h"
#include "temper/format.h"
#include "temper/input.h"
#include "temper/plan.h"
#include "temper/token_probe.h"

namespace temper::tune::detail {
namespace fs = std::filesystem;

namespace {

std::string bench_summary(const BenchRecord& b) {
  std::string s;
  for (const auto& t : b.tests)
    s += (s.empty() ? "" : "; ") + t.name + " " + fmt("%.3f", t.speedup) + " [" + fmt("%.3f", t.speedup_low) + ", " +
         fmt("%.3f", t.speedup_high) + "]";
  return "llama-bench speedup " + s;
}

json row_json(const engine::LlamaBenchRow& r) {
  return {{"build_commit", r.build_commit}, {"build_number", r.build_number}, {"gpu_info", r.gpu_info},
          {"model_filename", r.model_filename}, {"model_type", r.model_type}, {"n_prompt", r.n_prompt},
          {"n_gen", r.n_gen}, {"n_ubatch", r.n_ubatch}, {"samples_ts", r.samples_ts}};
}

bool decodes(const TuneOptions& o) { return std::find(o.ncols.begin(), o.ncols.end(), 1) != o.ncols.end(); }

}  // namespace

// ---- pipeline: every one-column launch pipelined at the config it runs; llama-bench decides ----
json pipeline_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  if (!decodes(o)) return r.not_asked("no batch width 1 in --ncols (pipelined launches are decode's)");
  if (!o.bench)
    return r.not_asked("needs --llama-bench: pipelining pays in the kernels between the GEMVs, which the replay does not run");
  // llama-bench decides (the replay cannot see the rest of the token) by the bench's tg test.
  const std::string test = tg_test(o).name;
  const std::string input =
      digest({"pipeline 2", c.probe_id, approved_fingerprint(without_pipelined(without_token(report.installed)), c.arch),
              c.identity.header_hash, std::to_string(o.replay_tokens), std::to_string(o.replay_rounds),
              fmt("%.6f", o.min_pipeline_gain),
              file_identity(o.bench->llama_bench) + " " + test + " " + std::to_string(o.bench->rounds) + " " +
                  std::to_string(o.bench->repetitions) + " " + json(o.bench->extra_args).dump()});
  const engine::ReplayPlan plan = engine::plan_replay(c.file);
  // The entries go in as the decision says; an unapproved decision removes this model's older ones.
  auto record = [&](const std::vector<ProfileEntry>& candidates, const PipelineDecision& d, const Provenance& evidence,
                    const std::string& when) {
    return c.install([&](Profile& p) {
      install_pipelined(p, candidates, d.approved ? pipeline_entries(candidates, plan.launches, d, evidence, when)
                                                  : std::vector<ProfileEntry>{});
      // The candidates are the replay's choices' (without_token); a launch a token step took back runs
      // pipelined at the engine's config, as that step left it.
      align_pipelined(p, c.arch);
    });
  };
  if (r.unchanged(input)) {
    const json& last = *r.last();
    const PipelineDecision d = decide_pipeline(pipeline_samples_from_json(last.at("samples")), o.min_pipeline_gain);
    report.pipeline = d;
    const ProfileDevice on = device_from_json(last.at("device"));
    const std::vector<ProfileEntry> candidates =
        pipeline_candidates(plan.launches, without_pipelined(without_token(report.installed)), c.arch, on, last.at("engine_version"));
    const bool again = record(candidates, d, evidence_from_json(last.at("evidence")), last.at("decided_at"));
    return r.kept(pipeline_text(d), again);
  }
  engine::EngineDevice& dev = c.engine_device();
  // A hook that compiled no pipelined launch (HIP, a ggml without the dependent-launch wait, a probe
  // before protocol 6) or reads no pipelined entries (before hook v7): nothing to measure, said once.
  const auto bits = dev.hello().find("pipeline_bits");
  std::string why_not;
  if (dev.protocol() < 6 || bits == dev.hello().end() || std::atoi(bits->second.c_str()) == 0)
    why_not = "the engine's hook compiles no pipelined launches (an AMD build, a ggml whose mmvq does not wait for its "
              "predecessor, or a probe before protocol 6; see temper engine check)";
  else if (const std::string& v = dev.kernel_source().hook_version;
           !v.empty() && std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) && std::stoi(v) < 7)
    why_not = "the engine's hook (v" + v + ") reads no pipelined entries: patch it with this Temper";
  if (!why_not.empty()) {
    c.note("no pipeline step: " + why_not);
    return r.not_asked(why_not);
  }
  const std::string engine_version = ggml_version(dev);
  const ProfileDevice on = profile_device(dev.info());
  const std::string device_name = dev.info().name, kernel = kernel_label(dev.kernel_source());
  const Profile off_profile = without_pipelined(without_token(report.installed));
  const std::vector<ProfileEntry> candidates = pipeline_candidates(plan.launches, off_profile, c.arch, on, engine_version);
  // The on arm's profile: every candidate approved, with placeholder times (the step's own file; the
  // installed one stays as it is until the decision).
  Profile on_profile = off_profile;
  PipelineDecision trial;
  trial.approved = true;
  trial.off_us = trial.off_ci_low = trial.off_ci_high = trial.on_us = trial.on_ci_low = trial.on_ci_high = 1;
  Provenance trial_evidence;
  trial_evidence.device_arch = c.arch;
  install_pipelined(on_profile, candidates, pipeline_entries(candidates, plan.launches, trial, trial_evidence, utc_now_iso8601()));
  const fs::path off_path = fs::absolute(report.state_dir / "pipeline-off.json"), on_path = fs::absolute(report.state_dir / "pipeline-on.json");
  save_profile(off_profile, off_path);
  save_profile(on_profile, on_path);
  PipelineSamples samples;
  {  // the replay: identical outputs, and the GEMVs' own time (its weights freed before llama-bench runs)
    engine::TokenReplayer token(dev, c.file, plan, 1);
    const PipelineReplay replay = [&](bool pipelined) {
      r.stop_if_cancelled("the pipeline step; run the same command again to go on");
      const engine::ReplayTokens t = token.run(token.plan_text(pipelined ? on_path : off_path, 1, {}, nullptr, std::nullopt,
                                                               pipelined ? std::nullopt : std::optional<bool>(false)),
                                               o.replay_tokens);
      return PipelineRun{t.token_us, t.pipelined_launches};
    };
    const auto identical = [&] {
      const std::vector<float> a = token.outputs(token.plan_text(off_path, 1, {}, nullptr, std::nullopt, false), 1);
      const std::vector<float> b = token.outputs(token.plan_text(on_path, 1, {}, nullptr), 1);
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    int runs = 0;
    samples = measure_pipeline(o.replay_rounds, replay, identical, [&] { r.progress(++runs, 2 * o.replay_rounds); });
  }
  // llama-bench: the profile without its pipelined entries against with them, the GPU to itself.
  if (samples.identical && samples.pipelined_launches > 0) {
    c.device.reset();
    engine::BenchOptions b = *o.bench;
    b.model = o.model;
    b.profile = on_path;
    b.stock_profile = off_path;
    b.tests = test;
    b.cancel = &c.cancel;
    engine::BenchEvents be;
    be.progress = c.ev.bench;
    const engine::BenchResult br = engine::run_bench(b, be);
    samples.test = test;
    samples.bench_off = br.record.tests.front().stock_runs;
    samples.bench_on = br.record.tests.front().profiled_runs;
  }
  const PipelineDecision d = decide_pipeline(samples, o.min_pipeline_gain);
  report.pipeline = d;
  Provenance evidence;
  evidence.session_id = "tune " + report.state_dir.filename().string();
  evidence.device_name = device_name;
  evidence.device_arch = c.arch;
  evidence.engine = "llama-bench " + test;
  evidence.kernel = kernel;
  const std::string when = utc_now_iso8601();
  record(candidates, d, evidence, when);
  r.summary = pipeline_text(d) + "; recorded in " + path_text(report.profile);
  return {{"input", input}, {"samples", to_json(samples)}, {"decided_at", when}, {"device", device_json(on)},
          {"engine_version", engine_version}, {"evidence", evidence_json(evidence)}};
}

// ---- token: the heaviest launch families decided by whole decode tokens in the engine's graph ----
json token_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  if (!decodes(o)) return r.not_asked("no batch width 1 in --ncols (decode's tokens are one column)");
  // The probe: a ready one, else built from the llama.cpp tree against llama-bench's libraries.
  fs::path token_exe = o.token_probe;
  std::string token_probe_id;
  if (token_exe.empty()) {
    std::string why_not;
    std::error_code ec;
    if (!o.bench) why_not = "needs --llama-bench (the token probe links that build's libraries) or --token-probe";
    else if (o.engine_src.empty())
      why_not = "a ready temper-probe and no --token-probe: the token probe is built from a llama.cpp --engine-src";
    else if (!fs::is_regular_file(o.engine_src / "include" / "llama.h", ec))
      why_not = "the engine tree is not a llama.cpp tree (no include/llama.h): nothing decodes a token";
    if (!why_not.empty()) return r.not_asked(why_not);
    engine::TokenProbeBuild b;
    b.llama_tree = o.engine_src;
    b.lib_dir = fs::absolute(o.bench->llama_bench).parent_path();
    b.out_dir = report.state_dir / "token-probe";
    b.cancel = &c.cancel;
    // A build the probe cannot link (static) or a llama.h it does not compile against (an older or
    // forked API): tune goes on without the step, said once.
    try {
      const engine::TokenProbeBuilt built = engine::build_token_probe(b);
      token_exe = built.exe;
      token_probe_id = built.hash;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::BadInput && e.kind() != ErrorKind::Io) throw;
      const std::string why = std::string("no token probe: ") + e.what();
      c.note(why);
      return r.not_asked(why);
    }
  } else {
    token_probe_id = content_hash(read_input(token_exe, kMaxProbeBytes, "token probe"));
  }
  c.device.reset();  // the token probe runs the engine itself: the GPU to itself
  // The sweep's best fused gate/up where the profile runs the unfused pair: one more option there.
  std::vector<ProfileEntry> fused;
  {
    Session fused_only = c.session;
    std::erase_if(fused_only.verdicts, [](const Verdict& v) { return launch_is_unfused(v.launch) || v.ncols != 1; });
    for (ProfileEntry& e : profile_from_session(fused_only).entries)
      if (e.key.launch == Launch::MulMatGlu || e.key.launch == Launch::MulMatIdGlu) fused.push_back(std::move(e));
  }
  // The bench's tg test is what the prediction measures (its N tokens a window).
  const int predict_tokens = int(tg_test(o).n_gen);
  const std::string settings =
      json{{"rounds", o.token_rounds}, {"tokens", o.token_tokens}, {"families", o.token_families}, {"greedy", o.token_greedy},
           {"min_gain", fmt("%.6f", o.min_token_gain)}, {"predict", predict_tokens}}.dump();
  // This model's one-column launches: a shared profile's other models' entries (and what their token
  // steps decided) are neither measured nor changed here.
  std::vector<ShapeKey> model_shapes;
  for (const PlannedLaunch& l : plan_launches(c.file, 1).launches) model_shapes.push_back(l.shape());
  const std::string input = digest({"token 6", token_probe_id, approved_fingerprint(without_token(report.installed, model_shapes), c.arch),
                                    c.identity.header_hash, settings});
  // A coordinate's option applied: a producer's own entry, or a launch family's entries.
  const auto with_choice = [&](const Profile& p, const TokenCoordinate& tc, size_t option, const std::string& why) {
    if (is_structure_kind(tc.kind)) {
      TokenCoordinate said = tc;
      said.why = why;
      return tc.kind == kPairGroupKind ? with_pair_group_option(p, c.arch, said, option) : with_producer_option(p, c.arch, said, option);
    }
    return with_token_option(p, c.arch, tc.kind, tc.options[option], why, fused, model_shapes);
  };
  // Skipped while the input (the replay's choices, the probe, the model, the settings) is the same.
  auto replay_decisions = [&](const json& record) {
    return c.install([&](Profile& p) {
      p = without_token(p, model_shapes);
      for (const json& j : record.at("coordinates")) {
        const TokenCoordinate tc = token_coordinate_from_json(j);
        report.token.push_back(tc);
        p = with_choice(p, tc, size_t(tc.chosen), tc.why);
      }
      if (record.contains("prediction")) report.token_prediction = token_prediction_from_json(record.at("prediction"));
    });
  };
  if (r.unchanged(input)) {
    const bool again = replay_decisions(*r.last());
    return r.kept(token_text(report.token, report.token_prediction ? &*report.token_prediction : nullptr), again);
  }
  // Coordinates journaled by an unfinished run of the same input are kept.
  std::vector<TokenCoordinate> done;
  r.resume(input, "token_coordinate", "token step", "launch families", [&](const json& j) {
    done.push_back(token_coordinate_from_json(j));
    return true;
  });
  if (done.empty()) r.start(input);
  const fs::path work = report.state_dir / "token";
  fs::create_directories(work);
  int probe_runs = 0, windows_before = 0, windows_total = 0;
  auto run_probe = [&](const std::vector<Profile>& arms, int tokens, int greedy, int rounds) {
    engine::TokenPlan plan;
    for (size_t i = 0; i < arms.size(); ++i) {
      const fs::path arm = fs::absolute(work / ("arm-" + std::to_string(i) + ".json"));
      save_profile(arms[i], arm);
      plan.arms.push_back(arm);
    }
    plan.tokens = tokens;
    plan.rounds = rounds;
    plan.greedy = greedy;
    plan.seed = uint32_t(++probe_runs);
    engine::TokenProbeOptions po;
    po.exe = token_exe;
    po.model = fs::absolute(o.model);
    po.work = work;
    po.timeout_s = o.token_timeout_s;
    po.cancel = &c.cancel;
    if (c.ev.token) po.progress = [&](int windows, int) { r.progress(windows_before + windows, windows_total); };
    engine::TokenRun run = engine::run_token_probe(po, plan);
    windows_before += int(run.windows.size());
    return run;
  };
  auto per_round = [&](const engine::TokenRun& run, int arm, int count) {
    std::vector<std::vector<double>> rounds(static_cast<size_t>(count));
    for (const engine::TokenWindow& w : run.windows)
      if (w.arm == arm) rounds[size_t(w.round)].push_back(w.us_per_token);
    return rounds;
  };
  // An engine whose hook cannot switch profiles answers the first run with hook 0: not asked, said once.
  const auto no_switch = [&](const engine::TokenRun& run) {
    if (run.hook_version != 0) return false;
    r.not_asked("the engine's hook cannot switch profiles while it runs (no temper_mmvq_load_profile: an engine patched before "
                "hook v4 or not patched): patch it with this Temper and rebuild");
    c.note("no token step: " + r.summary);
    return true;
  };
  // Decided anew from the replay's choices: an earlier token step's changes do not carry over.
  Profile working = without_token(report.installed, model_shapes);
  for (const TokenCoordinate& tc : done)
    working = with_choice(working, tc, size_t(tc.chosen), tc.why);
  std::vector<TokenCoordinate> todo;
  std::vector<TokenCoordinate> measured = token_coordinates(working, c.arch, o.token_families, model_shapes, fused);
  add_producer_coordinates(measured, model_shapes, o.ncols);
  add_pair_group_coordinate(measured, model_shapes);
  for (TokenCoordinate& tc : measured)
    if (std::none_of(done.begin(), done.end(), [&](const TokenCoordinate& d) { return d.kind == tc.kind; })) todo.push_back(std::move(tc));
  // Progress over the whole step: every family's windows, then the prediction's.
  // A structure's gain is a launch or two a layer (1-5 % of a token): it gets three times the rounds.
  const auto rounds_of = [&](const TokenCoordinate& tc) { return is_structure_kind(tc.kind) ? 3 * o.token_rounds : o.token_rounds; };
  windows_total = 2 * o.token_rounds;
  for (const TokenCoordinate& tc : todo) windows_total += int(tc.options.size()) * rounds_of(tc);
  for (TokenCoordinate tc : todo) {
    // The GLU's copy and the pair's group launch exist only where the profile (as decided so far) runs
    // the unfused pair; the GLU's also at a fused gate/up over experts.
    const bool no_pair = tc.kind == kGluKind ? !glu_applies(working, c.arch, tc, model_shapes) : tc.kind == kPairGroupKind && !unfused_pair(working, c.arch, tc.norm_k);
    if (no_pair) {
      windows_total -= int(tc.options.size()) * rounds_of(tc);
      tc.why = tc.kind == kGluKind ? "off kept (the profile runs no unfused gate/up pair of n " + std::to_string(tc.norm_k) +
                                         ": the GLU is inside the fused launch), not measured"
                                   : "off kept (the profile runs no unfused gate/up pair at one column), not measured";
      r.journal_item("token_coordinate", to_json(tc));
      done.push_back(std::move(tc));
      continue;
    }
    std::vector<Profile> arms;
    for (size_t i = 0; i < tc.options.size(); ++i)
      arms.push_back(with_choice(working, tc, i,
                                 tc.options[i] == "fused" ? "the fused gate/up is faster per token"
                                 : tc.options[i] == "on" && tc.kind == kPairGroupKind ? "the pair as one group launch is faster per token"
                                 : tc.options[i] == "on"  ? std::string(tc.kind == kGluKind ? "the GLU's" : "the norm's") +
                                                                " q8_1 activations are faster per token"
                                                          : "the engine's own config is faster per token"));
    const engine::TokenRun run = run_probe(arms, o.token_tokens, 0, rounds_of(tc));
    if (no_switch(run)) return {};
    for (size_t i = 0; i < tc.options.size(); ++i) tc.samples.push_back(per_round(run, int(i), rounds_of(tc)));
    decide_coordinate(tc, o.min_token_gain);
    working = with_choice(working, tc, size_t(tc.chosen), tc.why);
    r.journal_item("token_coordinate", to_json(tc));
    done.push_back(std::move(tc));
  }
  // The prediction: stock (no entries) against the final profile, tg N as the bench runs it, then greedy.
  const engine::TokenRun run = run_probe({Profile{}, working}, predict_tokens, o.token_greedy, o.token_rounds);
  if (no_switch(run)) return {};
  TokenPrediction pred;
  pred.tokens = predict_tokens;
  pred.stock = per_round(run, 0, o.token_rounds);
  pred.profile = per_round(run, 1, o.token_rounds);
  pred.greedy_steps = o.token_greedy;
  if (o.token_greedy > 0) {
    const engine::TokenGreedy* g[2] = {nullptr, nullptr};
    for (const engine::TokenGreedy& x : run.greedy) g[x.arm] = &x;
    pred.greedy_identical = g[0] && g[1] && g[0]->tokens == g[1]->tokens;
    pred.finite = g[0] && g[1] && g[0]->finite && g[1]->finite;
    if (!pred.greedy_identical)
      c.note("token step: greedy decoding with the profile chose other tokens than stock in " + std::to_string(o.token_greedy) +
             " steps (log: " + path_text(work / "token-probe.log") + ")");
    if (!pred.finite) c.note("token step: logits that are not finite in greedy decoding (log: " + path_text(work / "token-probe.log") + ")");
  }
  summarize_prediction(pred);
  report.token = done;
  report.token_prediction = pred;
  // Only now the profile changes: a failure above installs nothing.
  c.install([&](Profile& p) { p = working; });
  json coordinates = json::array();
  for (const TokenCoordinate& tc : done) coordinates.push_back(to_json(tc));
  for (const TokenCoordinate& tc : done)
    if (tc.chosen != 0) c.note("token step: " + tc.kind + " runs " + tc.options[size_t(tc.chosen)] + ", not the replay's choice: " + tc.why);
  r.summary = token_text(done, &pred);
  return {{"input", input}, {"coordinates", coordinates}, {"prediction", to_json(pred)}};
}

// ---- bench: llama-bench with and without the profile ----
json bench_step(TuneContext& c, StepRun& r) {
  const TuneOptions& o = c.o;
  TuneReport& report = c.report;
  if (!o.bench) return r.not_asked("not asked (--llama-bench PATH runs it)");
  engine::BenchOptions b = *o.bench;
  b.model = o.model;
  b.profile = report.profile;
  b.cancel = &c.cancel;
  // "bench 2": the arms take turns going first since 2026-11-28, so a journal of the older order
  // (index by index) is not resumed.
  const std::string input =
      digest({"bench 2", file_identity(b.llama_bench), file_identity(b.stock_bench), c.identity.header_hash,
              approved_fingerprint(report.installed, c.arch), b.tests, std::to_string(b.rounds), std::to_string(b.repetitions),
              json(b.extra_args).dump()});
  // A bench killed before: its runs journaled in order are taken as they are, the rest is run.
  std::vector<engine::BenchRunDone> done;
  r.resume(input, "bench_run", "bench", "llama-bench runs", [&](const json& run) {
    if (run.value("index", -1) != int(done.size())) return false;
    engine::LlamaBenchRow row =
        engine::parse_llama_bench_json("[" + run["row"].dump() + "]", "tune journal " + path_text(report.journal)).front();
    done.push_back({int(done.size()), row, run.value("engine_line", "")});
    return true;
  });
  if (done.empty()) r.start(input);
  engine::BenchEvents be;
  be.progress = c.ev.bench;
  be.run_done = [&](const engine::BenchRunDone& d) {
    r.journal_item("bench_run", {{"index", d.index}, {"row", row_json(d.row)}, {"engine_line", d.engine_line}});
  };
  be.restarted = [&](const std::string& why) {  // the runs journaled before no longer count
    c.note(why);
    r.start(input);
  };
  engine::BenchResult result = engine::run_bench(b, be, done);
  for (const auto& n : result.notes) c.note(n);
  add_bench_record(report.installed, result.record);
  c.write_installed();
  report.bench = result.record;
  r.summary = bench_summary(result.record) + "; recorded in " + path_text(report.profile);
  if (report.token_prediction)
    for (const BenchTest& t : result.record.tests)
      if (t.n_prompt == 0 && t.n_gen == report.token_prediction->tokens) {
        report.token_prediction->bench_speedup = t.speedup;
        r.summary += "; the token probe predicted " + fmt("%.3f", report.token_prediction->speedup);
        break;
      }
  return {{"input", input}};
}

}  // namespace temper::tune::detail
