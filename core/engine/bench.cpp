// `temper engine bench`: the user's llama-bench, stock and with the profile, interleaved run by run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "temper/engine_bench.h"
#include "temper/error.h"
#include "temper/input.h"
#include "temper/process.h"
#include "temper/stats.h"

namespace temper::engine {
namespace fs = std::filesystem;
using nlohmann::json;

std::filesystem::path default_engine_profile() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return fs::path(x) / "temper" / "engine-profile.json";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".config" / "temper" / "engine-profile.json";
  fail(ErrorKind::BadInput, "neither XDG_CONFIG_HOME nor HOME is set: give the profile's path");
}

std::vector<BenchTest> parse_bench_tests(std::string_view list) {
  std::vector<BenchTest> tests;
  std::stringstream in{std::string(list)};
  for (std::string item; std::getline(in, item, ',');) {
    static const std::regex kTest(R"(^(tg|pp)([0-9]{1,6})$)");
    std::smatch m;
    const std::string why = "bench test '" + item + "': ";
    if (!std::regex_match(item, m, kTest))
      fail(ErrorKind::BadInput, why + "expected tgN (N generated tokens) or ppW (prompt batches W = 1..8 wide), e.g. tg128,pp2,pp4,pp8");
    const int n = std::stoi(m[2]);
    BenchTest t;
    t.name = item;
    if (m[1] == "tg") {
      if (n < 1) fail(ErrorKind::BadInput, why + "at least one generated token");
      t.args = {"-p", "0", "-n", std::to_string(n)};
      t.n_gen = n;
    } else {
      if (n < 1 || n > 8)
        fail(ErrorKind::BadInput, why + "a profile changes only mmvq launches, which run prompt batches 1..8 tokens wide; "
                                        "expected pp1..pp8 (larger prompts take other kernels: time them with llama-bench itself)");
      t.args = {"-p", "128", "-n", "0", "-ub", std::to_string(n)};
      t.n_prompt = 128;
      t.n_ubatch = n;
    }
    if (std::any_of(tests.begin(), tests.end(), [&](const BenchTest& o) { return o.name == t.name; }))
      fail(ErrorKind::BadInput, why + "given twice");
    tests.push_back(std::move(t));
  }
  if (tests.empty()) fail(ErrorKind::BadInput, "no bench test given (tg128,pp2,pp4,pp8, say)");
  return tests;
}

namespace {

int64_t int_field(const json& o, const char* key, const std::string& where) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) fail(ErrorKind::BadInput, where + ": \"" + key + "\": expected an integer");
  return it->get<int64_t>();
}
std::string string_field(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

LlamaBenchRow read_row(const json& o, const std::string& where) {
  if (!o.is_object()) fail(ErrorKind::BadInput, where + ": expected a JSON object per test");
  LlamaBenchRow r;
  r.build_commit = string_field(o, "build_commit");
  r.gpu_info = string_field(o, "gpu_info");
  r.model_filename = string_field(o, "model_filename");
  r.model_type = string_field(o, "model_type");
  r.build_number = o.contains("build_number") ? int_field(o, "build_number", where) : 0;
  r.n_prompt = int_field(o, "n_prompt", where);
  r.n_gen = int_field(o, "n_gen", where);
  r.n_ubatch = o.contains("n_ubatch") ? int_field(o, "n_ubatch", where) : 0;
  const auto number_list = [&](const char* key) {
    std::vector<double> v;
    const json& a = o.at(key);
    if (!a.is_array()) fail(ErrorKind::BadInput, where + ": \"" + key + "\": expected an array");
    for (const auto& x : a) {
      if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>()))
        fail(ErrorKind::BadInput, where + ": \"" + key + "\": expected positive numbers");
      v.push_back(x.get<double>());
    }
    return v;
  };
  if (o.contains("samples_ts")) {
    r.samples_ts = number_list("samples_ts");
  } else if (o.contains("samples_ns")) {  // tokens/s as llama-bench derives it
    for (double ns : number_list("samples_ns")) r.samples_ts.push_back(1e9 * double(r.n_prompt + r.n_gen) / ns);
  } else {
    fail(ErrorKind::BadInput, where + ": no \"samples_ts\" nor \"samples_ns\" (a llama-bench too old to report its samples)");
  }
  if (r.samples_ts.empty()) fail(ErrorKind::BadInput, where + ": \"samples_ts\" is empty");
  return r;
}

}  // namespace

std::vector<LlamaBenchRow> parse_llama_bench_json(std::string_view text, const std::string& where) {
  std::vector<LlamaBenchRow> rows;
  const json whole = json::parse(text, nullptr, false);
  if (!whole.is_discarded()) {
    if (whole.is_object()) return {read_row(whole, where)};  // -o jsonl of one test
    if (!whole.is_array()) fail(ErrorKind::BadInput, where + ": expected llama-bench's JSON array (-o json)");
    for (size_t i = 0; i < whole.size(); ++i) rows.push_back(read_row(whole[i], where + "[" + std::to_string(i) + "]"));
    return rows;
  }
  // -o jsonl: an object a line.
  std::stringstream in{std::string(text)};
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json o = json::parse(line, nullptr, false);
    if (o.is_discarded())
      fail(ErrorKind::BadInput, where + ":" + std::to_string(line_no) + ": not llama-bench's JSON (-o json or jsonl)");
    rows.push_back(read_row(o, where + ":" + std::to_string(line_no)));
  }
  if (rows.empty()) fail(ErrorKind::BadInput, where + ": no result (llama-bench printed nothing on stdout)");
  return rows;
}

std::string find_engine_line(std::string_view text) {
  std::string found;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, nl - pos);
    if (line.rfind("temper: profile ", 0) == 0) found = std::string(line);  // the last one: one per device
    pos = nl + 1;
  }
  return found;
}

// The hook's line: "...: D entries for NAME (ARCH, device I), A for ARCH; ignored ..." (the device's
// own entries, then the arch's); hooks before v3 wrote "...: N entries for ARCH (device I); ...".
namespace {
const std::regex kEngineLine(R"(: ([0-9]+) entries for .+ \((\S+), device [0-9]+\), ([0-9]+) for \S+;)");
const std::regex kEngineLineV2(R"(: ([0-9]+) entries for (\S+) \(device [0-9]+\))");
}  // namespace

std::string engine_line_arch(const std::string& line) {
  std::smatch m;
  if (std::regex_search(line, m, kEngineLine)) return m[2].str();
  return std::regex_search(line, m, kEngineLineV2) ? m[2].str() : std::string();
}

int engine_line_entries(const std::string& line) {
  std::smatch m;
  if (std::regex_search(line, m, kEngineLine)) return std::stoi(m[1]) + std::stoi(m[3]);
  return std::regex_search(line, m, kEngineLineV2) ? std::stoi(m[1]) : -1;
}

std::vector<BenchSlot> bench_sequence(int rounds, int tests) {
  std::vector<BenchSlot> seq;
  for (int r = 0; r < rounds; ++r)
    for (int t = 0; t < tests; ++t)
      for (bool second : {false, true}) seq.push_back({r, t, second != (r % 2 == 1)});
  return seq;
}

namespace {

struct RunOutput {
  int status = 0;  // exit code, or 128 + signal
  std::string out, err;
};

// Runs `exe` with `args`, TEMPER_PROFILE set to `profile` in its environment, in its own process
// group (Ctrl-C on Temper's terminal reaches Temper, which ends the child), dying with Temper (a
// killed tune leaves no llama-bench running beside the one that resumes it). Stdout and stderr are
// captured whole, apart; `cancel` stops the child (SIGTERM, SIGKILL 2 s later) and throws Error(Cancelled).
RunOutput run_captured(const fs::path& exe, std::vector<std::string> args, const std::string& profile,
                       const std::atomic<bool>* cancel) {
  // The file itself, never one of that name on PATH.
  args.insert(args.begin(), exe.has_parent_path() ? exe.string() : "./" + exe.string());
  RunOutput r;
  ProcessOptions o;
  o.env = {"TEMPER_PROFILE=" + profile};
  o.capture = &r.out;
  o.capture_stderr = &r.err;
  o.cancel = cancel;
  o.kill_after = std::chrono::seconds(2);
  o.own_group = true;
  o.die_with_parent = true;
  try {
    r.status = run_process(args, o);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Io) throw;
    fail(ErrorKind::BadInput, e.what());  // a binary that cannot start is the user's to fix
  }
  if (r.status == kCancelled) fail(ErrorKind::Cancelled, "bench cancelled");
  return r;
}

// The last lines of a run's stderr, for the one-line error a failed run ends with.
std::string last_lines(const std::string& text, int count) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > size_t(count) ? lines.size() - size_t(count) : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out.empty() ? "(nothing on stderr)" : out;
}

void require_executable(const fs::path& p, const char* what) {
  std::error_code ec;
  if (!fs::exists(p, ec)) fail(ErrorKind::BadInput, std::string(what) + " " + p.string() + ": no such file");
  if (fs::is_directory(p, ec) || ::access(p.c_str(), X_OK) != 0)
    fail(ErrorKind::BadInput, std::string(what) + " " + p.string() + ": not an executable file");
}

std::string describe(const LlamaBenchRow& r) {
  return "n_prompt " + std::to_string(r.n_prompt) + ", n_gen " + std::to_string(r.n_gen) + ", n_ubatch " +
         std::to_string(r.n_ubatch);
}

}  // namespace

void check_bench_binaries(const BenchOptions& o) {
  require_executable(o.llama_bench, "llama-bench");
  if (!o.stock_bench.empty()) require_executable(o.stock_bench, "stock llama-bench");
}

BenchResult run_bench(const BenchOptions& o, const BenchEvents& events, const std::vector<BenchRunDone>& done) {
  check_bench_binaries(o);
  if (o.rounds < 1 || o.repetitions < 1) fail(ErrorKind::BadInput, "--rounds and --repetitions must be at least 1");
  std::vector<BenchTest> tests = parse_bench_tests(o.tests);
  {
    const InputFile model = open_input(o.model, 0, "model");  // one clear line when it is missing
    ::close(model.fd);
  }
  const Profile profile = load_profile(o.profile);
  const fs::path stock_bin = o.stock_bench.empty() ? o.llama_bench : o.stock_bench;
  const std::vector<BenchSlot> seq = bench_sequence(o.rounds, int(tests.size()));
  if (done.size() > seq.size()) fail(ErrorKind::BadInput, "more journaled bench runs than the bench has");

  BenchResult result;
  BenchRecord& rec = result.record;
  rec.model = o.model.filename().string();
  rec.stock.binary = fs::absolute(stock_bin).lexically_normal().string();
  rec.profiled.binary = fs::absolute(o.llama_bench).lexically_normal().string();
  rec.rounds = o.rounds;
  rec.repetitions = o.repetitions;
  for (auto& t : tests) t.stock_runs.assign(size_t(o.rounds), {}), t.profiled_runs.assign(size_t(o.rounds), {});
  const std::string profile_path = fs::absolute(o.profile).lexically_normal().string();
  const std::string stock_profile_path = o.stock_profile.empty() ? std::string() : fs::absolute(o.stock_profile).lexically_normal().string();

  // One run's result into the record, with the checks that make the comparison fair.
  auto absorb = [&](const BenchSlot& slot, const LlamaBenchRow& row, const std::string& line, const std::string& where) {
    BenchTest& t = tests[size_t(slot.test)];
    (slot.profiled ? t.profiled_runs : t.stock_runs)[size_t(slot.round)] = row.samples_ts;
    BenchArm& a = slot.profiled ? rec.profiled : rec.stock;
    a.build_commit = row.build_commit;
    a.build_number = row.build_number;
    if (t.n_ubatch == 0) t.n_ubatch = row.n_ubatch;
    if (rec.device.empty()) rec.device = row.gpu_info, rec.model_type = row.model_type;
    if (row.gpu_info != rec.device)
      fail(ErrorKind::BadInput, where + " ran on " + row.gpu_info + ", the other arm on " + rec.device +
                                    ": both arms must run on the same GPU");
    if (!slot.profiled) {
      if (!line.empty() && o.stock_bench.empty() && o.stock_profile.empty())
        fail(ErrorKind::BadInput, where + ": the stock arm loaded a profile although TEMPER_PROFILE was empty (" + line + ")");
      return;
    }
    if (line.empty())
      fail(ErrorKind::BadInput, o.llama_bench.string() + " printed no `temper: profile` line: it is not built from a tree "
                                "with Temper's hook (temper engine patch TREE, re-configure, rebuild), so the profile "
                                "arm would run stock");
    if (engine_line_entries(line) < 0) fail(ErrorKind::BadInput, "the engine did not use the profile: " + line);
    rec.engine_line = line;
  };

  const auto t0 = std::chrono::steady_clock::now();
  int measured = 0;  // runs made here (for the ETA)
  for (size_t i = 0; i < seq.size(); ++i) {
    const BenchSlot& slot = seq[i];
    const BenchTest& t = tests[size_t(slot.test)];
    const std::string current = "round " + std::to_string(slot.round + 1) + "/" + std::to_string(o.rounds) + " · " +
                                t.name + " · " + (slot.profiled ? "profile" : "stock");
    const std::string where = "llama-bench (" + current + ")";
    if (i < done.size()) {
      absorb(slot, done[i].row, done[i].engine_line, where);
      continue;
    }
    if (events.progress) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double eta = measured > 0 ? elapsed / measured * double(seq.size() - i) : 0;
      events.progress({int(i), int(seq.size()), current, eta});
    }
    std::vector<std::string> args = {"-m", o.model.string()};
    args.insert(args.end(), t.args.begin(), t.args.end());
    args.insert(args.end(), {"-r", std::to_string(o.repetitions), "-o", "json"});
    args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
    const RunOutput run = run_captured(slot.profiled ? o.llama_bench : stock_bin, std::move(args),
                                       slot.profiled ? profile_path : stock_profile_path, o.cancel);
    ++measured;
    if (run.status != 0)
      fail(ErrorKind::GpuFault, where + " exited with status " + std::to_string(run.status) + ": " + last_lines(run.err, 3));
    const std::vector<LlamaBenchRow> rows = parse_llama_bench_json(run.out, where);
    const auto match = std::find_if(rows.begin(), rows.end(), [&](const LlamaBenchRow& r) {
      return r.n_prompt == t.n_prompt && r.n_gen == t.n_gen && (t.n_ubatch == 0 || r.n_ubatch == t.n_ubatch);
    });
    if (match == rows.end())
      fail(ErrorKind::BadInput, where + ": no result for " + t.name + " among its " + std::to_string(rows.size()) +
                                    " (first: " + describe(rows.front()) + ")");
    const std::string line = find_engine_line(run.err);
    absorb(slot, *match, line, where);
    if (events.run_done) events.run_done({int(i), *match, line});
  }
  if (events.progress) events.progress({int(seq.size()), int(seq.size()), "done", 0});
  rec.arch = engine_line_arch(rec.engine_line);
  rec.profile_fingerprint = approved_fingerprint(profile, rec.arch);
  if (engine_line_entries(rec.engine_line) == 0)
    result.notes.push_back("the engine found no entry of this profile it can use on " + rec.arch +
                           ": the profile arm ran stock (" + rec.engine_line + ")");
  for (auto& t : tests) {
    const RatioCi ci = bootstrap_median_ratio(t.stock_runs, t.profiled_runs);
    std::vector<double> s, p;
    for (const auto& r : t.stock_runs) s.insert(s.end(), r.begin(), r.end());
    for (const auto& r : t.profiled_runs) p.insert(p.end(), r.begin(), r.end());
    t.stock_ts = summarize(s).median;
    t.profiled_ts = summarize(p).median;
    t.speedup = ci.ratio, t.speedup_low = ci.low, t.speedup_high = ci.high;
  }
  rec.tests = std::move(tests);
  rec.date = utc_now_iso8601();
  rec.tool_version = TEMPER_VERSION;
  return result;
}

}  // namespace temper::engine
