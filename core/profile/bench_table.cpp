// A bench record as tables: compare-llama-bench.py's markdown shape, and every sample as CSV.
#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "temper/format.h"
#include "temper/profile.h"

namespace temper {
namespace {

// Text from llama-bench or a path inside a table cell or code span: no line breaks, no cell
// separator, no backtick.
std::string cell(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '|') c = ' ';
    else if (c == '`') c = '\'';
  return s;
}

std::string fixed(double v, const char* format = "%.2f") { return format_number(format, v); }

// llama-bench's own name of a test: pp128, tg128, pp512+tg128.
std::string llama_test_name(const BenchTest& t) {
  if (t.n_prompt > 0 && t.n_gen == 0) return "pp" + std::to_string(t.n_prompt);
  if (t.n_gen > 0 && t.n_prompt == 0) return "tg" + std::to_string(t.n_gen);
  return "pp" + std::to_string(t.n_prompt) + "+tg" + std::to_string(t.n_gen);
}

// compare-llama-bench's display rules: vendor prefixes off GPU names, quant-size suffixes shortened.
std::string gpu_name(std::string s) {
  for (const char* prefix : {"NVIDIA GeForce ", "Tesla ", "AMD Radeon ", "AMD Instinct "})
    for (size_t at; (at = s.find(prefix)) != std::string::npos;) s.erase(at, std::string(prefix).size());
  return s;
}
std::string model_name(std::string s) {
  for (const auto& [from, to] : {std::pair{" - Small", "_S"}, {" - Medium", "_M"}, {" - Large", "_L"}})
    if (const size_t at = s.find(from); at != std::string::npos) s.replace(at, std::string(from).size(), to);
  return s;
}

// A markdown pipe table with padded columns; `right` marks the numeric (right-aligned) ones.
std::string pipe_table(const std::vector<std::string>& head, const std::vector<bool>& right,
                       const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(head.size());
  // Display width: UTF-8 continuation bytes take no column.
  auto cols = [](const std::string& s) { return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; })); };
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = std::max<size_t>(cols(head[c]), 3);
    for (const auto& r : rows) width[c] = std::max(width[c], cols(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cols(cells[c]), ' ');
      s += " " + (right[c] ? pad + cells[c] : cells[c] + pad) + " |";
    }
    return s + "\n";
  };
  std::string out = line(head) + "|";
  for (size_t c = 0; c < head.size(); ++c)
    out += right[c] ? std::string(width[c] + 1, '-') + ":|" : ":" + std::string(width[c] + 1, '-') + "|";
  out += "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace

std::string bench_markdown(const BenchRecord& r) {
  std::set<int64_t> ubatches;
  for (const auto& t : r.tests) ubatches.insert(t.n_ubatch);
  const bool show_ubatch = ubatches.size() > 1;  // compare-llama-bench shows what differs
  std::vector<std::string> head = {"GPU", "Model"};
  std::vector<bool> right = {false, false};
  if (show_ubatch) head.push_back("Microbatch size"), right.push_back(true);
  for (const char* h : {"Test", "t/s stock", "t/s profile", "Speedup", "95 % CI"}) head.push_back(h);
  right.insert(right.end(), {false, true, true, true, false});
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r.tests) {
    std::vector<std::string> row = {cell(gpu_name(r.device)), cell(model_name(r.model_type))};
    if (show_ubatch) row.push_back(std::to_string(t.n_ubatch));
    row.insert(row.end(), {llama_test_name(t), fixed(t.stock_ts), fixed(t.profiled_ts), fixed(t.speedup, "%.3f"),
                           "[" + fixed(t.speedup_low, "%.3f") + ", " + fixed(t.speedup_high, "%.3f") + "]"});
    rows.push_back(std::move(row));
  }
  return pipe_table(head, right, rows);
}

std::string bench_report_markdown(const BenchRecord& r) {
  auto build = [](const BenchArm& a) {
    return "`" + cell(a.binary) + "` (build " + (a.build_commit.empty() ? std::string("unknown") : cell(a.build_commit)) + ", " +
           std::to_string(a.build_number) + ")";
  };
  std::ostringstream o;
  o << "llama-bench of " << cell(r.model) << " (" << cell(r.model_type) << ") on " << cell(r.device)
    << (r.arch.empty() ? std::string() : " (" + cell(r.arch) + ")") << ", " << cell(r.date) << ":\n\n"
    << "- stock: " << build(r.stock) << " with `TEMPER_PROFILE=` (empty: no profile)\n"
    << "- profile: " << build(r.profiled) << " with the profile; the engine said: `" << cell(r.engine_line) << "`\n"
    << "- " << r.rounds << " runs per arm and test of " << r.repetitions
    << " repetitions each, the arms interleaved (stock, profile, stock, ...); t/s is the median over every sample of "
       "the arm; the speedup (profile / stock) has a 95 % percentile-bootstrap CI, samples resampled within their run\n\n"
    << bench_markdown(r);
  return o.str();
}

std::string bench_csv(const BenchRecord& r) {
  std::ostringstream o;
  o << "test,llama_bench_test,n_ubatch,arm,round,repetition,tokens_per_s\n";
  for (const auto& t : r.tests)
    for (const auto& [arm, runs] : {std::pair{"stock", &t.stock_runs}, {"profile", &t.profiled_runs}})
      for (size_t round = 0; round < runs->size(); ++round)
        for (size_t rep = 0; rep < (*runs)[round].size(); ++rep)
          o << t.name << "," << llama_test_name(t) << "," << t.n_ubatch << "," << arm << "," << round + 1 << ","
            << rep + 1 << "," << fixed((*runs)[round][rep], "%.6f") << "\n";
  return o.str();
}

}  // namespace temper
