// The run-time kernel cache with the real nvcc: the embedded sources must compile into a loadable
// library for every variant the sweep asks for. (A wrapper that called the wrong launch compiled for
// ncols 1 only and failed on the H100 at ncols 2; the stand-in compiler of kernel_cache_test cannot
// see that.) A group unit (the same-input group kernels) at the widest group width too.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "temper/error.h"
#include "temper/kernel_cache.h"

namespace temper {
namespace {
namespace fs = std::filesystem;

TEST(KernelCacheNvcc, EmbeddedSourcesCompileForEveryNcolsGroup) {
  if (!kernel_compiler(KernelToolchain::Cuda)) GTEST_SKIP() << "no nvcc";
  const fs::path dir = fs::temp_directory_path() / ("temper-kcache-nvcc-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("TEMPER_KERNEL_CACHE", dir.c_str(), 1);
  KernelCache cache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  const KernelPair pairs[] = {{GgmlType::Q4_K, 1}, {GgmlType::Q4_K, 2}, {GgmlType::Q6_K, 8}, {GgmlType::Q4_K, 4, GgmlType::Q6_K}};
  std::vector<fs::path> built;
  try {
    built = cache.ensure(pairs, {}, nullptr, 2);
  } catch (const Error& e) {
    fs::remove_all(dir);
    FAIL() << e.what();
  }
  ASSERT_EQ(built.size(), std::size(pairs));
  for (const fs::path& so : built) {
    std::ifstream in(so, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool group = so.filename().string().rfind("mmvq_group_", 0) == 0;
    EXPECT_NE(bytes.find(group ? "temper_rtc_group_launch" : "temper_rtc_launch"), std::string::npos) << so << " lacks the entry point";
  }
  ::unsetenv("TEMPER_KERNEL_CACHE");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace temper
