// Writes the seed corpora of the fuzzers that read files Temper's own tests can make:
// fuzz_seeds CORPUS_ROOT  ->  CORPUS_ROOT/gguf/*.gguf
#include <cstdio>
#include <filesystem>

#include "fixtures/fixtures.h"
#include "temper/fileio.h"

int main(int argc, char** argv) {
  namespace fx = temper::fixtures;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds CORPUS_ROOT\n");
    return 2;
  }
  const std::filesystem::path gguf = std::filesystem::path(argv[1]) / "gguf";
  std::filesystem::create_directories(gguf);
  fx::Options v2;
  v2.version = 2;
  fx::Options no_vocab;
  no_vocab.vocab = false;
  temper::write_file_atomic(gguf / "mini-llama.gguf", fx::bytes(fx::Fixture::MiniLlama));
  temper::write_file_atomic(gguf / "mini-llama-v2.gguf", fx::bytes(fx::Fixture::MiniLlama, v2));
  temper::write_file_atomic(gguf / "mini-moe.gguf", fx::bytes(fx::Fixture::MiniMoe));
  // Headers of the real-size layouts (their data is absent, so they end in an error; the
  // fuzzer mutates the offsets and sizes from there).
  for (fx::Fixture f : {fx::Fixture::Llama3_8B_Q4_K_M, fx::Fixture::Qwen3_30B_A3B, fx::Fixture::Llama_70B_Class})
    temper::write_file_atomic(gguf / (std::string(fx::name(f)) + "-header.gguf"), fx::writer(f, no_vocab).header());
  return 0;
}
