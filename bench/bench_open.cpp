// Opening a model and extracting its decode shapes (issue 3's goal: the 70B-class header with a
// 128k vocabulary and 280k merges in <= 20 ms on the 2-core machine, memory far below the file).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "fixtures/fixtures.h"
#include "temper/gguf.h"
#include "temper/model.h"

namespace {

using temper::fixtures::Fixture;

double max_rss_mb() {
  struct rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void open_and_describe(benchmark::State& state, Fixture f) {
  const auto& path = temper::fixtures::path(f);  // written once, outside the timed loop
  uint64_t file_size = 0;
  for (auto _ : state) {
    const temper::GgufFile file = temper::GgufFile::open(path);
    const temper::Model m = temper::describe_model(file);
    benchmark::DoNotOptimize(m.bytes_per_token);
    file_size = file.file_size();
  }
  state.counters["file_GB"] = static_cast<double>(file_size) / 1e9;
  state.counters["max_rss_MB"] = max_rss_mb();
}

void open_only(benchmark::State& state, Fixture f) {
  const auto& path = temper::fixtures::path(f);
  for (auto _ : state) {
    const temper::GgufFile file = temper::GgufFile::open(path);
    benchmark::DoNotOptimize(file.tensors().size());
  }
}

BENCHMARK_CAPTURE(open_and_describe, llama_70b_class, Fixture::Llama_70B_Class)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(open_only, llama_70b_class, Fixture::Llama_70B_Class)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(open_and_describe, llama3_8b_q4_k_m, Fixture::Llama3_8B_Q4_K_M)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(open_and_describe, qwen3_30b_a3b, Fixture::Qwen3_30B_A3B)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
