// Replays every input the GGUF fuzzer ever found (tests/fuzz/regressions/gguf/) and the seed
// corpus through the fuzz target's own entry, so findings stay fixed without a fuzzing build.
#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures/fixtures.h"
#include "fuzz/gguf_input.h"
#include "temper/fileio.h"

namespace temper {
namespace {

TEST(GgufFuzzRegressions, EveryRecordedInputIsHandled) {
  const std::filesystem::path dir = std::filesystem::path(TEMPER_SOURCE_DIR) / "tests/fuzz/regressions/gguf";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string bytes = read_file(entry.path());
    SCOPED_TRACE(entry.path().string());
    fuzz::gguf_one_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());  // aborts on a finding
    ++replayed;
  }
  EXPECT_GE(replayed, 1);
}

TEST(GgufFuzzRegressions, SeedsPassThroughTheFuzzEntry) {
  namespace fx = fixtures;
  for (fx::Fixture f : {fx::Fixture::MiniLlama, fx::Fixture::MiniMoe}) {
    const std::string bytes = fx::bytes(f);
    fuzz::gguf_one_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
}

}  // namespace
}  // namespace temper
