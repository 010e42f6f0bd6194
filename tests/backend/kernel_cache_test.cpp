// The run-time kernel cache: cache keys, progress, failure and cancel with a stand-in compiler (a
// shell script), and one real hipcc compile of embedded sources into code objects when hipcc exists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "temper/codeobject.h"
#include "temper/error.h"
#include "temper/kernel_cache.h"
#include "support/test_dir.h"

namespace temper {
namespace {
namespace fs = std::filesystem;

// A temporary cache directory and stand-in nvcc (behaviour chosen by the script's body).
class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_test_dir("temper-kcache");
    ::setenv("TEMPER_KERNEL_CACHE", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("TEMPER_KERNEL_CACHE");
    ::unsetenv("TEMPER_NVCC");
    test::remove_test_dir(dir_);
  }
  // body runs with $out = the -o argument; every call appends a line to calls.txt.
  void fake_nvcc(const std::string& body) {
    const fs::path script = dir_ / "nvcc";
    std::ofstream(script) << "#!/bin/sh\n[ \"$1\" = --version ] && { echo fake nvcc 1; exit 0; }\n"
                          << "echo x >> '" << (dir_ / "calls.txt").string() << "'\n"
                          << "out=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                          << body << "\n";
    fs::permissions(script, fs::perms::owner_all);
    ::setenv("TEMPER_NVCC", script.c_str(), 1);
  }
  int calls() const {
    std::ifstream in(dir_ / "calls.txt");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  fs::path dir_;
};

const KernelPair kPairs[] = {{GgmlType::Q4_0, 1}, {GgmlType::Q4_K, 1}, {GgmlType::Q6_K, 2}};

// hipcc leaves an empty <stem>-XXXXXX directory in TMPDIR per compile; the stand-in does the same.
// The compiler gets a private TMPDIR inside the cache, removed afterwards: the user's stays empty.
TEST_F(KernelCacheTest, CompilesLeaveNothingInTheTempDirectory) {
  fake_nvcc("mktemp -d >/dev/null && echo built > \"$out\"");
  const fs::path user_tmp = dir_ / "tmp";
  fs::create_directories(user_tmp);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", user_tmp.c_str(), 1);
  KernelCache cache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  const auto paths = cache.ensure(kPairs, nullptr, nullptr, 2);
  old ? (void)::setenv("TMPDIR", saved.c_str(), 1) : (void)::unsetenv("TMPDIR");
  for (const auto& p : paths) EXPECT_TRUE(fs::is_regular_file(p)) << p;
  EXPECT_EQ(calls(), 3);
  EXPECT_TRUE(fs::directory_iterator(user_tmp) == fs::directory_iterator()) << "the compiler left files in TMPDIR";
  for (const auto& e : fs::directory_iterator(cache.directory()))
    EXPECT_EQ(e.path().string().find(".tmpdir"), std::string::npos) << e.path();
}

TEST_F(KernelCacheTest, CompilesMissingOnceThenServesFromCache) {
  fake_nvcc("echo built > \"$out\"");
  KernelCache cache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  EXPECT_NE(cache.directory().filename().string().find("cuda-sm_90-"), std::string::npos);
  std::vector<CompileProgress> seen;
  const auto paths = cache.ensure(kPairs, [&](const CompileProgress& p) { seen.push_back(p); }, nullptr, 2);
  ASSERT_EQ(paths.size(), 3u);
  for (const auto& p : paths) EXPECT_TRUE(fs::is_regular_file(p)) << p;
  EXPECT_EQ(paths[2].filename(), "mmvq_14_nc2.so");
  EXPECT_EQ(calls(), 3);
  ASSERT_EQ(seen.size(), 4u);  // the start, then one per compiled pair
  EXPECT_EQ(seen.back().done, 3);
  EXPECT_EQ(seen.back().cached, 0);
  // The generated source holds the instance and the entry points.
  std::ifstream src(cache.directory() / "src" / "mmvq_12_nc1.cu");
  const std::string text((std::istreambuf_iterator<char>(src)), {});
  EXPECT_NE(text.find("mmvq_table_12_1"), std::string::npos);
  EXPECT_NE(text.find("temper_rtc_launch"), std::string::npos);
  EXPECT_TRUE(fs::is_regular_file(cache.directory() / "src" / "kernels" / "mmvq.h"));
  EXPECT_TRUE(fs::is_regular_file(cache.directory() / "src" / "kernels" / "iq_tables.h"));

  seen.clear();
  KernelCache again(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  EXPECT_EQ(again.ensure(kPairs, [&](const CompileProgress& p) { seen.push_back(p); }), paths);
  EXPECT_EQ(calls(), 3);  // nothing compiled the second time
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].cached, 3);
  // Another arch is another key.
  EXPECT_NE(KernelCache(KernelToolchain::Cuda, "sm_89", KernelArtifact::SharedLibrary).directory(), cache.directory());
}

TEST_F(KernelCacheTest, CompilerFailureNamesThePairAndTheError) {
  fake_nvcc("echo 'mmvq.h(12): error: something broke' >&2; exit 3");
  KernelCache cache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  try {
    cache.ensure(std::span(kPairs, 1), {}, nullptr, 1);
    FAIL() << "a failing compiler was not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_NE(std::string(e.what()).find("q4_0 ncols 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("something broke"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(cache.cached(kPairs[0]));
}

TEST_F(KernelCacheTest, CancelStopsTheCompilerAndLeavesNothing) {
  fake_nvcc("sleep 30; echo built > \"$out\"");
  KernelCache cache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    cache.ensure(kPairs, {}, &cancel, 2);
    ADD_FAILURE() << "cancel was ignored";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Cancelled);
  }
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (const auto& e : fs::directory_iterator(cache.directory()))
    EXPECT_TRUE(e.is_directory()) << "left behind: " << e.path();
}

TEST_F(KernelCacheTest, BadArchAndMissingCompilerAreClearErrors) {
  fake_nvcc("exit 0");
  EXPECT_THROW(KernelCache(KernelToolchain::Cuda, "sm_90; rm", KernelArtifact::SharedLibrary), Error);
  ::setenv("TEMPER_NVCC", (dir_ / "no-such-nvcc").c_str(), 1);
  try {
    KernelCache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
    FAIL() << "a missing compiler was not reported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoDevice);
    EXPECT_NE(std::string(e.what()).find("nvcc"), std::string::npos);
  }
}

// Before the first unit is done, the ETA is the last compile's time per unit times the units ahead of
// each job; the compile then records its own time per unit for the next.
TEST_F(KernelCacheTest, FirstEtaComesFromTheLastCompilesTimePerUnit) {
  fake_nvcc("echo built > \"$out\"");
  fs::create_directories(kernel_cache_root());
  std::ofstream(kernel_cache_root() / "unit-seconds") << "10\n";
  KernelCache cache(KernelToolchain::Cuda, "sm_90", KernelArtifact::SharedLibrary);
  std::vector<CompileProgress> seen;
  cache.ensure(kPairs, [&](const CompileProgress& p) { seen.push_back(p); }, nullptr, 2);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].done, 0);
  EXPECT_DOUBLE_EQ(seen[0].eta_s, 20);  // 3 units on 2 jobs: two rounds of 10 s
  EXPECT_NE(compile_progress_text(seen[0]).find("0/3 kernels compiled, 0 s, about 20 s left"), std::string::npos)
      << compile_progress_text(seen[0]);
  double recorded = -1;
  std::ifstream(kernel_cache_root() / "unit-seconds") >> recorded;
  EXPECT_GE(recorded, 0);
  EXPECT_LT(recorded, 10);  // the stand-in's own time, not the old value
}

// The AMD targets Debian's hipcc lacks: their code objects come from clang-19 ($TEMPER_HIP_CLANG here, a
// stand-in beside a stand-in ld.lld and clang), bare (--no-gpu-bundle-output), with the installed device
// libraries ($TEMPER_ROCM_DEVICE_LIBS) plus the ISA-version library made by that clang in the cache.
class NewerClangTest : public KernelCacheTest {
 protected:
  void SetUp() override {
    KernelCacheTest::SetUp();
    bin_ = dir_ / "llvm-19" / "bin";
    fs::create_directories(bin_);
    fs::create_directories(dir_ / "bitcode");
    for (const char* lib : {"hip.bc", "ocml.bc"}) std::ofstream(dir_ / "bitcode" / lib) << lib;
    std::ofstream(dir_ / "bitcode" / "oclc_isa_version_1010.bc")
        << "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 10100, align 4\n";
    // clang++: records its arguments, writes the -o file; clang: -S copies bitcode to IR, -c IR to bitcode.
    script(bin_ / "clang++", "[ \"$1\" = --version ] && { echo 'Debian clang version 19.1.7'; exit 0; }\n"
                             "echo \"$*\" >> '" + (dir_ / "calls.txt").string() + "'\n"
                             "out=; prev=; for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                             "echo code object > \"$out\"");
    script(bin_ / "clang", "in=; out=; prev=; for a in \"$@\"; do case $a in *.bc|*.ll) [ \"$prev\" = -o ] || in=$a;; esac;"
                           " [ \"$prev\" = -o ] && out=$a; prev=$a; done\ncp \"$in\" \"$out\"");
    script(bin_ / "ld.lld", "exit 0");
    ::setenv("TEMPER_HIP_CLANG", (bin_ / "clang++").c_str(), 1);
    ::setenv("TEMPER_ROCM_DEVICE_LIBS", (dir_ / "bitcode").c_str(), 1);
    ::unsetenv("TEMPER_HIPCC");
    path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
  }
  void TearDown() override {
    ::setenv("PATH", path_.c_str(), 1);
    ::unsetenv("TEMPER_HIP_CLANG");
    ::unsetenv("TEMPER_ROCM_DEVICE_LIBS");
    ::unsetenv("TEMPER_HIPCC");
    KernelCacheTest::TearDown();
  }
  void script(const fs::path& p, const std::string& body) {
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
  }
  std::string last_call() const {
    std::ifstream in(dir_ / "calls.txt");
    std::string line, last;
    while (std::getline(in, line)) last = line;
    return last;
  }
  fs::path bin_;
  std::string path_;
};

TEST_F(NewerClangTest, TheTargetsHipccLacksPreferIt) {
  for (const char* arch : {"gfx942", "gfx941", "gfx1150", "gfx1151", "gfx1152", "gfx1200", "gfx1201"})
    EXPECT_TRUE(prefers_newer_clang(arch)) << arch;
  for (const char* arch : {"gfx906", "gfx90a", "gfx940", "gfx1030", "gfx1100", "gfx1103", "gfx1153", "gfx950", "sm_90"})
    EXPECT_FALSE(prefers_newer_clang(arch)) << arch;  // hipcc's, or newer than clang 19
  EXPECT_EQ(kernel_newer_clang(), bin_ / "clang++");
  fs::remove(bin_ / "ld.lld");  // clang-19 without lld-19 cannot link a code object
  EXPECT_FALSE(kernel_newer_clang());
  ::setenv("TEMPER_HIP_CLANG", (dir_ / "no-such-clang").c_str(), 1);
  EXPECT_FALSE(kernel_newer_clang());
}

TEST_F(NewerClangTest, CompilesBareCodeObjectsWithTheMadeIsaVersionLibrary) {
  KernelCache cache(KernelToolchain::Hip, "gfx1151", KernelArtifact::CodeObject);
  const KernelPair q4_k{GgmlType::Q4_K, 1};
  const auto paths = cache.ensure(std::span(&q4_k, 1));
  ASSERT_TRUE(fs::is_regular_file(paths.at(0)));
  const std::string call = last_call();
  EXPECT_NE(call.find("--offload-arch=gfx1151"), std::string::npos) << call;
  EXPECT_NE(call.find("--cuda-device-only"), std::string::npos) << call;
  EXPECT_NE(call.find("--no-gpu-bundle-output"), std::string::npos) << call;
  const size_t at = call.find("--rocm-device-lib-path=");
  ASSERT_NE(at, std::string::npos) << call;
  const fs::path libs = call.substr(at + 23, call.find(' ', at) - at - 23);
  EXPECT_EQ(libs.parent_path(), kernel_cache_root());
  EXPECT_EQ(fs::read_symlink(libs / "hip.bc"), dir_ / "bitcode" / "hip.bc");
  std::ifstream in(libs / "oclc_isa_version_1151.bc");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("addrspace(4) constant i32 11501, align 4"), std::string::npos) << text;
  // Loadable kernels stay hipcc's (the build's, else one on PATH): Debian's HIP runtime cannot run these
  // GPUs anyway. The cache key is the compiler's: another directory.
  script(dir_ / "hipcc", "echo fake hipcc");
  ::setenv("PATH", (dir_.string() + ":" + path_).c_str(), 1);
  EXPECT_NE(KernelCache(KernelToolchain::Hip, "gfx1151", KernelArtifact::SharedLibrary).directory(), cache.directory());
  EXPECT_EQ(KernelCache(KernelToolchain::Hip, "gfx1151", KernelArtifact::CodeObject).directory(), cache.directory());
}

// Without clang-19, a hipcc that does not know the target (Debian's) gives one line naming the Debian
// packages, as a BadInput (exit 2), before anything compiles.
TEST_F(NewerClangTest, WithoutClang19OneLineNamesThePackages) {
  ::setenv("TEMPER_HIP_CLANG", (dir_ / "no-such-clang").c_str(), 1);
  script(dir_ / "hipcc", "echo 'Debian clang version 15.0.6'\necho \"clang: error: invalid target ID 'gfx1201'\"");
  ::setenv("TEMPER_HIPCC", (dir_ / "hipcc").c_str(), 1);
  ::setenv("PATH", (dir_.string() + ":" + std::getenv("PATH")).c_str(), 1);
  // With TEMPER_HIPCC set hipcc is asked (the message names the clang and ROCm that know the target) ...
  KernelCache explicit_hipcc(KernelToolchain::Hip, "gfx1201", KernelArtifact::CodeObject);
  const KernelPair q4_k{GgmlType::Q4_K, 1};
  try {
    explicit_hipcc.ensure(std::span(&q4_k, 1));
    FAIL() << "gfx1201 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not know the target (RDNA4); clang 18 or later"), std::string::npos) << e.what();
  }
  // ... without it, the build's hipcc (Debian's, else the stand-in on PATH); when that does not know the
  // target, the line names clang-19.
  ::unsetenv("TEMPER_HIPCC");
  KernelCache cache(KernelToolchain::Hip, "gfx1201", KernelArtifact::CodeObject);
  try {
    cache.ensure(std::span(&q4_k, 1));
    FAIL() << "gfx1201 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_EQ(std::string(e.what()), "gfx1201 (RDNA4): the installed hipcc does not know this target; Debian 12's packages "
                                     "clang-19 and lld-19 compile its code objects (apt-get install clang-19 lld-19; "
                                     "TEMPER_HIP_CLANG=" + (dir_ / "no-such-clang").string() +
                                     " is not a clang++ with ld.lld beside it)");
  }
  EXPECT_EQ(calls(), 0);
}

TEST(KernelCacheText, ProgressLine) {
  CompileProgress p;
  p.done = 3, p.total = 7, p.cached = 2, p.elapsed_s = 12, p.eta_s = 19.6;
  EXPECT_EQ(compile_progress_text(p), "3/7 kernels compiled (2 cached), 12 s, about 20 s left");
  EXPECT_TRUE(kernel_type_supported(GgmlType::Q4_K));
  EXPECT_FALSE(kernel_type_supported(GgmlType::F32));
}

TEST(KernelCacheText, AmdIsaVersions) {
  EXPECT_EQ(amd_isa_version("gfx1100"), 11000);
  EXPECT_EQ(amd_isa_version("gfx1103"), 11003);
  EXPECT_EQ(amd_isa_version("gfx1030"), 10300);
  EXPECT_EQ(amd_isa_version("gfx90a"), 9010);  // ROCm's oclc_isa_version_90a.bc
  EXPECT_EQ(amd_isa_version("gfx906"), 9006);
  for (const char* bad : {"sm_90", "gfx", "gfx9", "gfx11000", "gfxa00", "gfx11g0"})
    EXPECT_THROW(amd_isa_version(bad), Error) << bad;
}

// A stand-in hipcc answers the device-library dry run (-###) as clang does: gfx1030's library
// installed, gfx1100's missing (the installed ones named through hip.bc, the clang through -cc1),
// gfx1151 and gfx1234 unknown; llvm-dis/llvm-as stand-ins beside its clang treat the "bitcode" as text.
class DeviceLibsTest : public KernelCacheTest {
 protected:
  void SetUp() override {
    KernelCacheTest::SetUp();
    fs::create_directories(dir_ / "bitcode");
    fs::create_directories(dir_ / "llvm");
    for (const char* lib : {"hip.bc", "ocml.bc", "oclc_wavefrontsize64_off.bc"})
      std::ofstream(dir_ / "bitcode" / lib) << lib;
    std::ofstream(dir_ / "bitcode" / "oclc_isa_version_1030.bc")
        << "target triple = \"amdgcn-amd-amdhsa\"\n@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr "
           "addrspace(4) constant i32 10300, align 4\n";
    script(dir_ / "llvm" / "clang", "exit 0");
    script(dir_ / "llvm" / "llvm-dis", "cat \"$1\" > \"$3\"");
    script(dir_ / "llvm" / "llvm-as", "cp \"$1\" \"$3\"");
    const std::string bc = (dir_ / "bitcode").string(), clang = (dir_ / "llvm" / "clang").string();
    hipcc_ = dir_ / "hipcc";
    script(hipcc_, "echo 'Debian clang version 15.0.6'\n"
                   "case \"$*\" in\n"
                   "  *gfx1030*) echo ' \"" + clang + "\" \"-cc1\" \"-mlink-builtin-bitcode\" \"" + bc +
                       "/oclc_isa_version_1030.bc\"' ;;\n"
                   "  *gfx1100*) echo \"clang: error: cannot find ROCm device library for gfx1100; provide its path\"\n"
                   "             echo ' \"" + clang + "\" \"-cc1\" \"-mlink-builtin-bitcode\" \"" + bc + "/hip.bc\"' ;;\n"
                   "  *) echo \"clang: error: invalid target ID 'x'; format is a processor name\" ;;\n"
                   "esac\n");
  }
  void script(const fs::path& p, const std::string& body) {
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
  }
  fs::path hipcc_;
};

TEST_F(DeviceLibsTest, InstalledLibrariesAreUsedAsTheyAre) { EXPECT_FALSE(hip_device_lib_dir(hipcc_, "gfx1030")); }

TEST_F(DeviceLibsTest, TheMissingIsaVersionIsMadeInTheCache) {
  const auto dir = hip_device_lib_dir(hipcc_, "gfx1100");
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->parent_path(), kernel_cache_root());
  EXPECT_EQ(dir->filename().string().rfind("rocm-device-libs-", 0), 0u) << *dir;
  for (const char* lib : {"hip.bc", "ocml.bc", "oclc_wavefrontsize64_off.bc", "oclc_isa_version_1030.bc"}) {
    EXPECT_TRUE(fs::is_symlink(*dir / lib)) << lib;
    EXPECT_EQ(fs::read_symlink(*dir / lib), dir_ / "bitcode" / lib);
  }
  std::ifstream in(*dir / "oclc_isa_version_1100.bc");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("addrspace(4) constant i32 11000, align 4"), std::string::npos) << text;
  EXPECT_NE(text.find("target triple = \"amdgcn-amd-amdhsa\""), std::string::npos) << text;
  for (const auto& e : fs::directory_iterator(*dir))  // nothing half-made left beside it
    EXPECT_EQ(e.path().extension(), ".bc") << e.path();
  EXPECT_EQ(hip_device_lib_dir(hipcc_, "gfx1100"), dir);
}

TEST_F(DeviceLibsTest, UnknownTargetsAreOneLineNamingTheClangThatKnowsThem) {
  try {
    hip_device_lib_dir(hipcc_, "gfx1151");
    FAIL() << "gfx1151 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_EQ(std::string(e.what()),
              "gfx1151: this hipcc's compiler (clang version 15.0.6) does not know the target (RDNA3.5); clang 17 or later "
              "knows it, e.g. ROCm 6.3's (TEMPER_HIPCC selects another hipcc)");
  }
  try {
    hip_device_lib_dir(hipcc_, "gfx1234");
    FAIL() << "gfx1234 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gfx1234: this hipcc's compiler (clang version 15.0.6) does not know the target"),
              std::string::npos) << e.what();
  }
}

TEST_F(DeviceLibsTest, MissingLlvmAsIsNamed) {
  fs::remove(dir_ / "llvm" / "llvm-as");
  try {
    hip_device_lib_dir(hipcc_, "gfx1100");
    FAIL() << "no llvm-as went unnoticed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NoDevice);
    EXPECT_NE(std::string(e.what()).find("llvm-as"), std::string::npos) << e.what();
  }
}

// The embedded sources really compile: q4_0 at ncols 1 for gfx90a, as code objects with every
// config of the grid (about 20 s of hipcc).
TEST_F(KernelCacheTest, HipccCompilesEmbeddedSourcesToCodeObjects) {
  if (!kernel_compiler(KernelToolchain::Hip)) GTEST_SKIP() << "no hipcc";
  KernelCache cache(KernelToolchain::Hip, "gfx90a", KernelArtifact::CodeObject);
  const KernelPair q4_0{GgmlType::Q4_0, 1};
  const auto paths = cache.ensure(std::span(&q4_0, 1));
  const auto objects = load_code_objects(paths.at(0));
  ASSERT_FALSE(objects.empty());
  EXPECT_EQ(objects[0].arch, "gfx90a");
  int mmvq = 0;
  for (const auto& k : objects[0].kernels)
    if (const auto m = parse_mmvq_symbol(k.name); m && m->type == GgmlType::Q4_0 && m->ncols == 1) ++mmvq;
  EXPECT_EQ(mmvq, 30);  // 6 nwarps × 5 rows_per_block: every config, the unlaunchable ones as traps
}

// Temper's same-input group kernel compiles for AMD too, and static analysis reads it: one group unit
// (q4_K members with q6_K ones, ncols 1) holds the 9 group configs, each with its registers, its LDS
// for the warps' partial sums and the launch bound of its block (wave 64 on gfx90a).
TEST_F(KernelCacheTest, HipccCompilesTheGroupKernelToCodeObjects) {
  if (!kernel_compiler(KernelToolchain::Hip)) GTEST_SKIP() << "no hipcc";
  KernelCache cache(KernelToolchain::Hip, "gfx90a", KernelArtifact::CodeObject);
  const KernelPair unit{GgmlType::Q4_K, 1, GgmlType::Q6_K};
  EXPECT_EQ(kernel_pair_name(unit), "q4_K+q6_K group ncols 1");
  const auto paths = cache.ensure(std::span(&unit, 1));
  EXPECT_EQ(paths.at(0).filename(), "mmvq_group_12_14_nc1.co");
  const auto objects = load_code_objects(paths.at(0));
  ASSERT_EQ(objects.size(), 1u);
  std::map<int, int> by_block;  // launch bound → kernels
  for (const auto& k : objects[0].kernels) {
    const auto g = parse_mmvq_group_symbol(k.name);
    if (!g) continue;
    EXPECT_EQ(g->instance.type, GgmlType::Q4_K);
    EXPECT_EQ(g->type_b, GgmlType::Q6_K);
    EXPECT_EQ(k.max_flat_workgroup_size, g->instance.config.nwarps * 64);
    ++by_block[k.max_flat_workgroup_size];
    EXPECT_GT(k.resources.vgprs, 0) << k.name;
    EXPECT_EQ(k.resources.scratch_bytes, 0) << k.name << " spills";
  }
  EXPECT_EQ(by_block, (std::map<int, int>{{128, 3}, {256, 3}, {512, 3}}));  // nwarps 2, 4, 8 × rows 1, 2, 4
}

}  // namespace
}  // namespace temper
