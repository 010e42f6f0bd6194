// `temper engine bench`: the user's llama-bench, stock and with the profile, interleaved run by run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "temper/engine_bench.h"
#include "temper/error.h"
#include "temper/format.h"
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

// What is read from llama-bench is bounded: a real run prints a few KB of JSON (one row a test, -r
// samples a row) and a few hundred KB of log on stderr.
constexpr size_t kMaxBenchOutputBytes = size_t{16} << 20, kMaxBenchRows = 1024, kMaxBenchSamples = 10000;
constexpr size_t kMaxEngineLineBytes = 16384;  // the hook's line: a profile path and a GPU name
// Tokens per second outside this range is no measurement.
constexpr double kMinTokensPerSecond = 1e-6, kMaxTokensPerSecond = 1e9;

int64_t int_field(const json& o, const char* key, const std::string& where) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) fail(ErrorKind::BadInput, where + ": \"" + key + "\": expected an integer");
  return it->get<int64_t>();
}
std::string string_field(const json& o, const char* key, const std::string& where) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return {};
  std::string v = it->get<std::string>();
  if (v.size() > 1024) fail(ErrorKind::BadInput, where + ": \"" + key + "\": " + std::to_string(v.size()) + " characters (at most 1024)");
  return v;
}

LlamaBenchRow read_row(const json& o, const std::string& where) {
  if (!o.is_object()) fail(ErrorKind::BadInput, where + ": expected a JSON object per test");
  LlamaBenchRow r;
  r.build_commit = string_field(o, "build_commit", where);
  r.gpu_info = string_field(o, "gpu_info", where);
  r.model_filename = string_field(o, "model_filename", where);
  r.model_type = string_field(o, "model_type", where);
  r.build_number = o.contains("build_number") ? int_field(o, "build_number", where) : 0;
  r.n_prompt = int_field(o, "n_prompt", where);
  r.n_gen = int_field(o, "n_gen", where);
  r.n_ubatch = o.contains("n_ubatch") ? int_field(o, "n_ubatch", where) : 0;
  const auto number_list = [&](const char* key) {
    std::vector<double> v;
    const json& a = o.at(key);
    if (!a.is_array()) fail(ErrorKind::BadInput, where + ": \"" + key + "\": expected an array");
    if (a.size() > kMaxBenchSamples)
      fail(ErrorKind::BadInput, where + ": \"" + key + "\": " + std::to_string(a.size()) + " samples (at most " +
                                    std::to_string(kMaxBenchSamples) + " are read)");
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
  for (double ts : r.samples_ts)
    if (!(ts >= kMinTokensPerSecond && ts <= kMaxTokensPerSecond))
      fail(ErrorKind::BadInput, where + ": a sample of " + format_number("%g", ts) + " tokens/s (expected " +
                                    format_number("%g", kMinTokensPerSecond) + " to " + format_number("%g", kMaxTokensPerSecond) + ")");
  if (r.n_prompt < 0 || r.n_gen < 0 || r.n_ubatch < 0 || r.n_prompt + r.n_gen <= 0 || r.n_prompt > (int64_t{1} << 40) ||
      r.n_gen > (int64_t{1} << 40))
    fail(ErrorKind::BadInput, where + ": \"n_prompt\" " + std::to_string(r.n_prompt) + ", \"n_gen\" " + std::to_string(r.n_gen) +
                                  ": expected token counts, not both zero");
  return r;
}

}  // namespace

std::vector<LlamaBenchRow> parse_llama_bench_json(std::string_view text, const std::string& where) {
  if (text.size() > kMaxBenchOutputBytes)
    fail(ErrorKind::BadInput, where + ": " + std::to_string(text.size()) + " bytes of output (at most " +
                                  std::to_string(kMaxBenchOutputBytes) + " are read)");
  std::vector<LlamaBenchRow> rows;
  const auto add = [&](const json& o, const std::string& at) {
    if (rows.size() == kMaxBenchRows)
      fail(ErrorKind::BadInput, where + ": more than " + std::to_string(kMaxBenchRows) + " results");
    rows.push_back(read_row(o, at));
  };
  // Parsed without exceptions; a document nested deeper than any llama-bench output is refused.
  const auto parse = [](std::string_view t) {
    bool too_deep = false;
    json j = json::parse(t, [&](int depth, json::parse_event_t, json&) { return !(too_deep = too_deep || depth > 8); }, false);
    return too_deep ? json(json::value_t::discarded) : j;
  };
  const json whole = parse(text);
  if (!whole.is_discarded()) {
    if (whole.is_object()) {  // -o jsonl of one test
      add(whole, where);
      return rows;
    }
    if (!whole.is_array()) fail(ErrorKind::BadInput, where + ": expected llama-bench's JSON array (-o json)");
    for (size_t i = 0; i < whole.size(); ++i) add(whole[i], where + "[" + std::to_string(i) + "]");
  } else {
    // -o jsonl: an object a line.
    size_t pos = 0;
    for (int line_no = 1; pos < text.size(); ++line_no) {
      const size_t nl = std::min(text.find('\n', pos), text.size());
      const std::string_view line = text.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      const json o = parse(line);
      if (o.is_discarded())
        fail(ErrorKind::BadInput, where + ":" + std::to_string(line_no) + ": not llama-bench's JSON (-o json or jsonl)");
      add(o, where + ":" + std::to_string(line_no));
    }
  }
  if (rows.empty()) fail(ErrorKind::BadInput, where + ": no result (llama-bench printed no test on stdout)");
  return rows;
}

std::string find_engine_line(std::string_view text) {
  std::string found;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, nl - pos);
    // The last one: one per device. A line longer than the hook ever writes is not its line.
    if (line.rfind("temper: profile ", 0) == 0 && line.size() <= kMaxEngineLineBytes) found = std::string(line);
    pos = nl + 1;
  }
  return found;
}

// The hook's line: "...: D entries for NAME (ARCH, device I), A for ARCH; ignored ..." (the device's
// own entries, then the arch's); hooks before v3 wrote "...: N entries for ARCH (device I); ...".
// Read by hand, not by std::regex (whose recursion a long line overflows), every count bounded.
namespace {

struct EngineLine {
  std::string arch;
  int entries = -1;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The decimal number at `at` (advanced past it); nullopt when there is none or it exceeds 10^9.
std::optional<int> read_count(std::string_view s, size_t& at) {
  const size_t begin = at;
  int64_t v = 0;
  while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
    v = v * 10 + (s[at++] - '0');
    if (v > 1000000000) return std::nullopt;
  }
  return at == begin ? std::nullopt : std::optional<int>(int(v));
}

// A run of non-space characters at `at` ending right before `stop` (advanced past the stop).
std::optional<std::string> read_word(std::string_view s, size_t& at, std::string_view stop) {
  const size_t begin = at;
  while (at < s.size() && !is_space(s[at]) && s.substr(at, stop.size()) != stop) ++at;
  if (at == begin || s.substr(at, stop.size()) != stop) return std::nullopt;
  const std::string word(s.substr(begin, at - begin));
  at += stop.size();
  return word;
}

bool skip(std::string_view s, size_t& at, std::string_view what) {
  if (s.substr(at, what.size()) != what) return false;
  at += what.size();
  return true;
}

EngineLine parse_engine_line(std::string_view line) {
  // Each ": N entries for ": the path before the first is the user's, and may hold anything.
  constexpr std::string_view kEntries = " entries for ";
  const auto each_count = [&](const std::function<bool(int own, size_t after)>& read) {
    for (size_t e = line.find(kEntries); e != std::string_view::npos; e = line.find(kEntries, e + 1)) {
      size_t digits = e;
      while (digits > 0 && line[digits - 1] >= '0' && line[digits - 1] <= '9') --digits;
      if (digits == e || digits < 2 || line.substr(digits - 2, 2) != ": ") continue;
      size_t at = digits;
      const std::optional<int> own = read_count(line, at);
      if (own && read(*own, e + kEntries.size())) return;
    }
  };
  EngineLine out;
  // v3 and later: "NAME (ARCH, device I), A for ARCH;", NAME holding anything: the last such tail.
  each_count([&](int own, size_t after) {
    for (size_t open = line.rfind(" ("); open != std::string_view::npos && open > after;
         open = line.rfind(" (", open - 1)) {
      size_t p = open + 2;
      const std::optional<std::string> arch = read_word(line, p, ", device ");
      if (!arch || !read_count(line, p) || !skip(line, p, "), ")) continue;
      const std::optional<int> for_arch = read_count(line, p);
      if (!for_arch || !skip(line, p, " for ") || !read_word(line, p, ";")) continue;
      out = {*arch, own + *for_arch};
      return true;
    }
    return false;
  });
  if (out.entries >= 0) return out;
  // Before v3: "N entries for ARCH (device I)".
  each_count([&](int own, size_t after) {
    size_t p = after;
    const std::optional<std::string> arch = read_word(line, p, " (device ");
    if (!arch || !read_count(line, p) || !skip(line, p, ")")) return false;
    out = {*arch, own};
    return true;
  });
  return out;
}

}  // namespace

std::string engine_line_arch(const std::string& line) { return parse_engine_line(line).arch; }

int engine_line_entries(const std::string& line) { return parse_engine_line(line).entries; }

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
                       const std::atomic<bool>* cancel, std::chrono::seconds timeout, const std::string& where) {
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
  o.timeout = timeout;
  o.max_capture = kMaxBenchOutputBytes;
  try {
    r.status = run_process(args, o);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Io) throw;
    fail(ErrorKind::BadInput, e.what());  // a binary that cannot start is the user's to fix
  }
  if (r.status == kCancelled) fail(ErrorKind::Cancelled, "bench cancelled");
  if (r.status == kTimedOut)
    fail(ErrorKind::GpuFault, where + " ran longer than " + std::to_string(timeout.count()) +
                                  " s and was stopped (--bench-timeout sets the limit)");
  if (r.status == kOutputTooLarge)
    fail(ErrorKind::BadInput, where + " printed more than " + std::to_string(kMaxBenchOutputBytes >> 20) +
                                  " MiB and was stopped: not llama-bench's output");
  return r;
}

// The last lines of a run's stderr, for the one-line error a failed run ends with.
std::string last_lines(const std::string& text, int count) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(l.size() > 300 ? l.substr(0, 300) + "..." : l);
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
  rec.model = path_text(o.model.filename());
  rec.stock.binary = path_text(fs::absolute(stock_bin).lexically_normal());
  rec.profiled.binary = path_text(fs::absolute(o.llama_bench).lexically_normal());
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
      fail(ErrorKind::BadInput, where + " ran on " + terminal_text(row.gpu_info) + ", the other arm on " +
                                    terminal_text(rec.device) + ": both arms must run on the same GPU");
    if (!slot.profiled) {
      if (!line.empty() && o.stock_bench.empty() && o.stock_profile.empty())
        fail(ErrorKind::BadInput, where + ": the stock arm loaded a profile although TEMPER_PROFILE was empty (" +
                                      terminal_text(line) + ")");
      return;
    }
    if (line.empty())
      fail(ErrorKind::BadInput, o.llama_bench.string() + " printed no `temper: profile` line: it is not built from a tree "
                                "with Temper's hook (temper engine patch TREE, re-configure, rebuild), so the profile "
                                "arm would run stock");
    if (engine_line_entries(line) < 0) fail(ErrorKind::BadInput, "the engine did not use the profile: " + terminal_text(line));
    rec.engine_line = line;
  };

  const auto t0 = std::chrono::steady_clock::now();
  int measured = 0;  // runs made here (for the ETA)
  std::vector<BenchRunDone> kept = done;  // dropped when llama-bench now runs on another GPU than they did
  const std::vector<BenchTest> no_runs = tests;
  const BenchRecord no_record = rec;
  for (size_t i = 0; i < seq.size(); ++i) {
    const BenchSlot& slot = seq[i];
    const BenchTest& t = tests[size_t(slot.test)];
    const std::string current = "round " + std::to_string(slot.round + 1) + "/" + std::to_string(o.rounds) + " · " +
                                t.name + " · " + (slot.profiled ? "profile" : "stock");
    const std::string where = "llama-bench (" + current + ")";
    if (i < kept.size()) {
      absorb(slot, kept[i].row, kept[i].engine_line, where);
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
                                       slot.profiled ? profile_path : stock_profile_path, o.cancel, o.run_timeout, where);
    ++measured;
    if (run.status != 0)
      fail(ErrorKind::GpuFault, where + " exited with status " + std::to_string(run.status) + ": " + terminal_text(last_lines(run.err, 3)));
    const std::vector<LlamaBenchRow> rows = parse_llama_bench_json(run.out, where);
    const auto match = std::find_if(rows.begin(), rows.end(), [&](const LlamaBenchRow& r) {
      return r.n_prompt == t.n_prompt && r.n_gen == t.n_gen && (t.n_ubatch == 0 || r.n_ubatch == t.n_ubatch);
    });
    if (match == rows.end())
      fail(ErrorKind::BadInput, where + ": no result for " + t.name + " among its " + std::to_string(rows.size()) +
                                    " (first: " + describe(rows.front()) + ")");
    if (match->samples_ts.size() > size_t(o.repetitions))
      fail(ErrorKind::BadInput, where + ": " + std::to_string(match->samples_ts.size()) + " samples for -r " +
                                    std::to_string(o.repetitions) + ": not llama-bench's output");
    if (!kept.empty() && match->gpu_info != kept.front().row.gpu_info) {
      // A bench resumed on another GPU: its journaled runs cannot be compared with these; it starts over.
      const std::string why = "the " + std::to_string(kept.size()) + " runs journaled before ran on " +
                              terminal_text(kept.front().row.gpu_info) + ", llama-bench now runs on " +
                              terminal_text(match->gpu_info) + ": the bench starts again from its first run";
      result.notes.push_back(why);
      if (events.restarted) events.restarted(why);
      kept.clear();
      tests = no_runs;
      rec = no_record;
      i = size_t(-1);  // the loop's ++i: the first run again
      continue;
    }
    const std::string line = find_engine_line(run.err);
    absorb(slot, *match, line, where);
    if (events.run_done) events.run_done({int(i), *match, line});
  }
  if (events.progress) events.progress({int(seq.size()), int(seq.size()), "done", 0});
  rec.arch = engine_line_arch(rec.engine_line);
  rec.profile_fingerprint = approved_fingerprint(profile, rec.arch);
  if (engine_line_entries(rec.engine_line) == 0)
    result.notes.push_back("the engine found no entry of this profile it can use on " + rec.arch +
                           ": the profile arm ran stock (" + terminal_text(rec.engine_line) + ")");
  for (auto& t : tests) {
    const RatioCi ci = bootstrap_median_ratio(t.stock_runs, t.profiled_runs);
    std::vector<double> s, p;
    for (const auto& r : t.stock_runs) s.insert(s.end(), r.begin(), r.end());
    for (const auto& r : t.profiled_runs) p.insert(p.end(), r.begin(), r.end());
    t.stock_ts = summarize(s).median;
    t.profiled_ts = summarize(p).median;
    t.speedup = ci.ratio, t.speedup_low = ci.low, t.speedup_high = ci.high;
    if (!std::isfinite(t.speedup) || !std::isfinite(t.speedup_low) || !std::isfinite(t.speedup_high) || !(t.speedup > 0))
      fail(ErrorKind::BadInput, "llama-bench " + t.name + ": a speedup of " + format_number("%g", t.speedup) +
                                    " from its samples: not a measurement (nothing was recorded)");
  }
  rec.tests = std::move(tests);
  rec.date = utc_now_iso8601();
  rec.tool_version = TEMPER_VERSION;
  return result;
}

}  // namespace temper::engine
