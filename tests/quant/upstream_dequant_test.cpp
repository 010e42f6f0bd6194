// Issue 19: every type Temper dequantizes (tiers 1 and 2, q1_0, q2_0) gives exactly ggml's floats.
// Upstream's own ggml-quants.c ($TEMPER_UPSTREAM/ggml-d99724f, read in place; test data only) is
// compiled at test time with tests/quant/upstream/dequant_harness.c and run over the same random
// blocks; skipped when the tree or a C compiler is absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "support/upstream_tree.h"
#include "temper/fileio.h"
#include "temper/quant/reference.h"
#include "temper/types.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

class UpstreamDequant : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path root = test::upstream_tree("ggml-d99724f", &skip_);
    if (root.empty()) return;
    if (std::system("command -v cc >/dev/null 2>&1") != 0) {
      skip_ = "no C compiler (cc)";
      return;
    }
    dir_ = fs::temp_directory_path() / ("temper-upstream-dequant-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const std::string compile = "cc -O1 -std=gnu11 -w -I '" + (root / "include").string() + "' -I '" + (root / "src").string() +
                                "' '" + TEMPER_SOURCE_DIR + "/tests/quant/upstream/dequant_harness.c' '" +
                                (root / "src" / "ggml-quants.c").string() + "' -o '" + (dir_ / "harness").string() + "' -lm";
    built_ = std::system(compile.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(built_) << "could not compile upstream's ggml-quants.c with the harness";
  }

  // Upstream's floats for `blocks` of `type` holding `values` values.
  static std::vector<float> upstream(GgmlType type, const std::vector<uint8_t>& blocks, int64_t values) {
    const fs::path in = dir_ / "blocks.bin", out = dir_ / "floats.bin";
    write_file_atomic(in, std::string_view(reinterpret_cast<const char*>(blocks.data()), blocks.size()));
    const std::string cmd = "'" + (dir_ / "harness").string() + "' " + std::to_string(static_cast<uint32_t>(type)) + " " +
                            std::to_string(values) + " < '" + in.string() + "' > '" + out.string() + "'";
    if (std::system(cmd.c_str()) != 0) return {};
    const std::string bytes = read_file(out);
    std::vector<float> f(bytes.size() / sizeof(float));
    std::memcpy(f.data(), bytes.data(), f.size() * sizeof(float));
    return f;
  }

  static inline std::string skip_;
  static inline bool built_ = false;
  static inline fs::path dir_;
};

TEST_F(UpstreamDequant, EveryTypeIsBitIdenticalToGgml) {
  ASSERT_EQ(quant::supported_types().size(), 23u);  // 21 of tiers 1 and 2, q1_0, q2_0
  for (GgmlType type : quant::supported_types()) {
    SCOPED_TRACE(std::string(type_name(type)));
    const int64_t k = 4096, rows = 16;
    std::vector<uint8_t> blocks(*row_bytes(type, k) * rows);
    quant::fill_random(type, blocks.data(), rows, k, 19 + static_cast<uint64_t>(type));
    std::vector<float> ours(static_cast<size_t>(k * rows));
    quant::dequantize_row(type, blocks.data(), ours.data(), k * rows);
    const std::vector<float> theirs = upstream(type, blocks, k * rows);
    ASSERT_EQ(theirs.size(), ours.size());
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < ours.size(); ++i)
      if (std::memcmp(&ours[i], &theirs[i], sizeof(float)) != 0 && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << "first at value " << first << ": ours " << ours[first] << ", ggml " << theirs[first];
  }
}

}  // namespace
}  // namespace temper
