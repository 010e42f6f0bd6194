// core/quant throughput on one core: dequantization, the random-block generator (goal: >= 1 GB/s of
// blocks so a sweep fills device buffers quickly), q8_1 quantization and the reference dots.
// Bytes/s counts quantized block bytes (the generator's output, dequant's input).
#include <vector>

#include <benchmark/benchmark.h>

#include "temper/quant/reference.h"

namespace {

using namespace temper::quant;
using temper::GgmlType;

constexpr int64_t kK = 4096, kRows = 256;  // 1M values: a few hundred KB to 1 MB of blocks per type

std::vector<uint8_t> random_rows(GgmlType type, int64_t rows) {
  std::vector<uint8_t> buf(*temper::row_bytes(type, kK) * rows);
  fill_random(type, buf.data(), rows, kK, 1);
  return buf;
}

void BM_Dequantize(benchmark::State& state, GgmlType type) {
  const auto blocks = random_rows(type, kRows);
  const uint64_t row_bytes = *temper::row_bytes(type, kK);
  std::vector<float> out(kK);
  for (auto _ : state)
    for (int64_t r = 0; r < kRows; ++r) {
      dequantize_row(type, blocks.data() + r * row_bytes, out.data(), kK);
      benchmark::DoNotOptimize(out.data());
    }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(blocks.size()));
  state.counters["values/s"] = benchmark::Counter(double(state.iterations()) * double(kK * kRows), benchmark::Counter::kIsRate);
}

void BM_Generate(benchmark::State& state, GgmlType type) {
  const int64_t rows = 2048;  // several MB: past the caches, as when filling device buffers
  std::vector<uint8_t> buf(*temper::row_bytes(type, kK) * rows);
  uint64_t seed = 0;
  for (auto _ : state) {
    fill_random(type, buf.data(), rows, kK, ++seed);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(buf.size()));
}

void BM_QuantizeQ8_1(benchmark::State& state) {
  std::vector<float> x(kK * 64);
  fill_random_activations(x.data(), int64_t(x.size()), 1);
  std::vector<BlockQ8_1> y(x.size() / 32);
  for (auto _ : state) {
    quantize_q8_1(x.data(), y.data(), int64_t(x.size()));
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(x.size() * sizeof(float)));
}

void BM_DotQ8_1(benchmark::State& state, GgmlType type) {
  const auto row = random_rows(type, 1);
  std::vector<float> x(kK);
  fill_random_activations(x.data(), kK, 2);
  std::vector<BlockQ8_1> y(kK / 32);
  quantize_q8_1(x.data(), y.data(), kK);
  for (auto _ : state) benchmark::DoNotOptimize(dot_q8_1(type, row.data(), y.data(), kK));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(row.size()));
}

const bool registered = [] {
  for (GgmlType type : supported_types()) {
    const std::string name(temper::type_name(type));
    benchmark::RegisterBenchmark(("dequantize/" + name).c_str(), BM_Dequantize, type)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("generate/" + name).c_str(), BM_Generate, type)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("dot_q8_1/" + name).c_str(), BM_DotQ8_1, type)->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("quantize_q8_1", BM_QuantizeQ8_1)->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
