// Known answers for llama.cpp's mmvq default tables (temper/defaults.h), read off mmvq.cu at the two
// engine commits, plus the grid's validity rule.
#include "temper/defaults.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <map>
#include <regex>

#include "support/upstream_tree.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/mmvq_traits.h"

namespace temper::defaults {
namespace {

constexpr std::string_view kOld = "ggml-7180759";
constexpr std::string_view kNew = "ggml-d99724f";
using T = GgmlType;

TEST(Defaults, EnginesAreVersionedAndOldestFirst) {
  ASSERT_EQ(known_engines().size(), 2u);
  EXPECT_EQ(known_engines()[0], kOld);
  EXPECT_EQ(known_engines()[1], kNew);
  EXPECT_TRUE(is_known_engine(kNew));
  EXPECT_FALSE(is_known_engine("ggml-head"));
  try {
    table_for("ggml-head", "sm_90");
    FAIL() << "unknown engine accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("ggml-7180759"), std::string::npos) << e.what();
  }
}

// The engine version picks the kernel variant too: d99724f's is the PDL / no-restrict kernel.
TEST(Defaults, EngineSelectsKernelVariant) {
  EXPECT_EQ(kernel_variant(kOld), mmvq::KernelVariant::Ggml7180759);
  EXPECT_EQ(kernel_variant(kNew), mmvq::KernelVariant::GgmlD99724f);
  EXPECT_EQ(kernel_variant(""), kernel_variant(known_engines().front()));  // a session naming none
  try {
    kernel_variant("ggml-head");
    FAIL() << "unknown engine accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("ggml-head"), std::string::npos) << e.what();
  }
}

TEST(Defaults, TableChosenPerArchitecture) {
  EXPECT_EQ(table_for(kOld, "sm_90"), Table::Generic);
  EXPECT_EQ(table_for(kNew, "sm_90"), Table::Generic);  // H100 keeps GENERIC in both
  EXPECT_EQ(table_for(kOld, "sm_75"), Table::Generic);
  EXPECT_EQ(table_for(kNew, "sm_75"), Table::Turing);
  EXPECT_EQ(table_for(kNew, "sm_86"), Table::Generic);
  EXPECT_EQ(table_for(kNew, "sm_121"), Table::Gb10);
  EXPECT_EQ(table_for(kOld, "sm_121"), Table::Generic);
  EXPECT_EQ(table_for(kOld, "gfx906"), Table::Gcn);
  EXPECT_EQ(table_for(kOld, "gfx90a:sramecc+:xnack-"), Table::Gcn);  // CDNA uses the GCN table
  EXPECT_EQ(table_for(kOld, "gfx942"), Table::Gcn);
  EXPECT_EQ(table_for(kOld, "gfx1010"), Table::Generic);  // RDNA1 falls through to GENERIC
  EXPECT_EQ(table_for(kOld, "gfx1030"), Table::Rdna2);
  EXPECT_EQ(table_for(kOld, "gfx1100"), Table::Rdna3_0);
  EXPECT_EQ(table_for(kOld, "gfx1151"), Table::Rdna2);  // RDNA3.5 uses RDNA2's
  EXPECT_EQ(table_for(kOld, "gfx1201"), Table::Rdna4);
  EXPECT_EQ(table_for(kOld, "fake"), Table::Generic);
  EXPECT_EQ(table_name(Table::Rdna3_0), "RDNA3_0");
  DeviceInfo mi300;
  mi300.arch = "gfx942";
  mi300.warp_size = 64;
  EXPECT_EQ(table_name(kNew, mi300), "GCN");
  EXPECT_EQ(engine_warp_size("gfx906"), 64);
  EXPECT_EQ(engine_warp_size("gfx1100"), 32);
  EXPECT_EQ(engine_warp_size("sm_90"), 32);
}

TEST(Defaults, GenericTable) {
  for (auto e : known_engines()) {
    EXPECT_EQ(default_config(e, "sm_90", T::Q4_0, 1, 14336), (Config{4, 1}));
    for (int n = 2; n <= 4; ++n) EXPECT_EQ(default_config(e, "sm_90", T::Q4_0, n, 14336), (Config{4, 2}));
    for (int n = 5; n <= 8; ++n) EXPECT_EQ(default_config(e, "sm_90", T::Q6_K, n, 14336), (Config{2, 2}));
  }
}

TEST(Defaults, SmallKRule) {
  // q4_0 at wave 32, 4 warps: one pass covers 4·(2·32/4) = 64 blocks = 2048 values.
  EXPECT_EQ(default_config(kOld, "sm_90", T::Q4_0, 1, 2048), (Config{4, 1}));
  EXPECT_EQ(default_config(kOld, "sm_90", T::Q4_0, 1, 2016), (Config{4, 4}));
  EXPECT_TRUE(small_k_applies(kOld, "sm_90", T::Q4_0, 1, 1024, 32));
  EXPECT_EQ(small_k_variant(kOld, "sm_90", T::Q4_0, 1), (Config{4, 4}));
  EXPECT_EQ(small_k_variant(kOld, "sm_90", T::Q4_0, 2), std::nullopt);  // ncols 1 only
  EXPECT_EQ(default_config(kOld, "sm_90", T::Q4_0, 2, 1024), (Config{4, 2}));
  // q4_K: one pass of 4 warps is 4·(2·32/32) = 8 super-blocks.
  EXPECT_EQ(default_config(kOld, "sm_90", T::Q4_K, 1, 2048), (Config{4, 1}));
  EXPECT_EQ(default_config(kOld, "sm_90", T::Q4_K, 1, 1792), (Config{4, 4}));
  // GCN: 2 warps of 64 lanes cover 2·(2·64/4) = 64 q4_0 blocks.
  EXPECT_EQ(default_config(kOld, "gfx906", T::Q4_0, 1, 4096), (Config{2, 1}));
  EXPECT_EQ(default_config(kOld, "gfx906", T::Q4_0, 1, 1024), (Config{2, 2}));
  // Off for slow IQ types (except on Turing+ where only iq3_xxs / iq3_s are excluded) ...
  EXPECT_EQ(small_k_variant(kOld, "gfx90a", T::IQ4_XS, 1), std::nullopt);
  EXPECT_EQ(default_config(kOld, "gfx90a", T::IQ4_XS, 1, 256), (Config{2, 1}));
  EXPECT_EQ(small_k_variant(kOld, "sm_90", T::IQ4_XS, 1), (Config{4, 4}));
  EXPECT_EQ(small_k_variant(kOld, "sm_90", T::IQ3_S, 1), std::nullopt);
  EXPECT_EQ(small_k_variant(kOld, "sm_70", T::IQ2_XXS, 1), std::nullopt);  // Volta is not Turing+
  // ... for iq3_s, q2_K, q3_K before Volta, and on every RDNA.
  EXPECT_EQ(small_k_variant(kOld, "sm_61", T::Q2_K, 1), std::nullopt);
  EXPECT_EQ(small_k_variant(kOld, "sm_61", T::Q4_K, 1), (Config{4, 4}));
  EXPECT_EQ(small_k_variant(kOld, "gfx1201", T::Q4_0, 1), std::nullopt);
  EXPECT_EQ(default_config(kOld, "gfx1201", T::Q4_0, 1, 256), (Config{8, 1}));
  EXPECT_EQ(small_k_variant(kOld, "gfx1010", T::Q4_0, 1), std::nullopt);  // RDNA1: GENERIC table, no small-K
  // No variant when the table entry has one warp.
  EXPECT_EQ(small_k_variant(kOld, "gfx1030", T::Q4_0, 1), std::nullopt);
}

TEST(Defaults, RdnaTables) {
  EXPECT_EQ(default_config(kOld, "gfx1030", T::Q4_0, 1, 4096), (Config{1, 1}));
  EXPECT_EQ(default_config(kOld, "gfx1100", T::Q4_K, 1, 4096), (Config{8, 1}));
  EXPECT_EQ(default_config(kNew, "gfx1100", T::Q4_K, 1, 4096), (Config{1, 1}));  // fell back in d99724f
  EXPECT_EQ(default_config(kOld, "gfx1100", T::Q6_K, 1, 4096), (Config{8, 1}));
  EXPECT_EQ(default_config(kNew, "gfx1100", T::Q6_K, 1, 4096), (Config{2, 1}));
  EXPECT_EQ(default_config(kNew, "gfx1100", T::Q8_0, 1, 4096), (Config{8, 1}));
  EXPECT_EQ(default_config(kOld, "gfx1100", T::Q2_K, 1, 4096), (Config{1, 1}));
  EXPECT_EQ(default_config(kOld, "gfx1201", T::Q2_K, 1, 4096), (Config{8, 1}));
  EXPECT_EQ(default_config(kOld, "gfx1201", T::IQ4_XS, 1, 4096), (Config{8, 1}));
  EXPECT_EQ(default_config(kOld, "gfx1201", T::Q3_K, 1, 4096), (Config{1, 1}));
  EXPECT_EQ(default_config(kOld, "gfx1201", T::Q4_0, 2, 4096), (Config{1, 1}));
  EXPECT_EQ(default_config(kOld, "gfx906", T::Q4_0, 3, 4096), (Config{2, 2}));
  EXPECT_EQ(default_config(kOld, "gfx906", T::Q4_0, 5, 4096), (Config{1, 2}));
}

TEST(Defaults, TuringAndGb10Tables) {
  EXPECT_EQ(default_config(kNew, "sm_75", T::Q4_K, 1, 14336), (Config{2, 1}));
  EXPECT_EQ(default_config(kNew, "sm_75", T::Q4_0, 1, 14336), (Config{4, 1}));
  EXPECT_EQ(default_config(kNew, "sm_75", T::Q4_K, 3, 14336), (Config{4, 2}));
  EXPECT_EQ(default_config(kNew, "sm_75", T::Q4_K, 6, 14336), (Config{2, 2}));
  EXPECT_EQ(small_k_variant(kNew, "sm_75", T::Q4_K, 1), (Config{2, 2}));
  // GB10 doubles nwarps when the wider block's idle tail is at most 1/8: q4_0 at K=14336 has 448
  // blocks, 7 trips of 64 or 4 of 128 (one idle half-trip in 8) → 8 warps.
  EXPECT_EQ(default_config(kNew, "sm_121", T::Q4_0, 1, 14336), (Config{8, 1}));
  EXPECT_EQ(default_config(kNew, "sm_121", T::Q4_0, 1, 4096), (Config{8, 1}));
  EXPECT_EQ(default_config(kNew, "sm_121", T::Q4_0, 1, 6144), (Config{4, 1}));  // 3 trips vs 2: too idle
  EXPECT_EQ(default_config(kNew, "sm_121", T::Q2_K, 1, 14336), (Config{4, 1}));  // not promoted
  EXPECT_EQ(default_config(kNew, "sm_121", T::Q4_0, 1, 1024), (Config{4, 4}));   // small-K first
  EXPECT_EQ(default_config(kNew, "sm_121", T::Q4_0, 2, 14336), (Config{4, 2}));
}

TEST(Defaults, EveryDefaultIsInTheKernelGrid) {
  const char* archs[] = {"sm_61", "sm_70", "sm_75", "sm_90", "sm_121", "gfx906", "gfx90a", "gfx1010", "gfx1030",
                         "gfx1100", "gfx1151", "gfx1201"};
  const int ks[] = {256, 1024, 2048, 4096, 6144, 14336};
  int checked = 0;
  for (auto e : known_engines())
    for (const char* a : archs)
      for (const TypeInfo& ti : all_types()) {
        if (!mmvq::type_supported(static_cast<uint32_t>(ti.type))) continue;
        for (int n = 1; n <= 8; ++n)
          for (int k : ks) {
            if (k % static_cast<int>(ti.block_size) != 0) continue;
            const int ws = engine_warp_size(a);
            const Config c = default_config(e, a, ti.type, n, k);
            EXPECT_EQ(config_invalid_reason(ti.type, n, c, ws), "") << e << " " << a << " " << ti.name << " " << n;
            if (auto v = small_k_variant(e, a, ti.type, n)) {
              EXPECT_EQ(config_invalid_reason(ti.type, n, *v, ws), "");
            }
            ++checked;
          }
      }
  EXPECT_GT(checked, 2000);
}

TEST(Defaults, DefaultConfigRejectsTypesWithoutKernel) {
  EXPECT_THROW(default_config(kOld, "sm_90", T::F16, 1, 4096), Error);
  EXPECT_THROW(default_config(kOld, "sm_90", T::Q4_0, 9, 4096), Error);
}

TEST(Defaults, ConfigInvalidReasons) {
  const auto reason = [](T t, int n, Config c, int ws) { return config_invalid_reason(t, n, c, ws); };
  EXPECT_EQ(reason(T::Q4_0, 1, {16, 1}, 64), "");  // 1024 threads, 15·64·4 = 3840 B of partial sums
  EXPECT_EQ(reason(T::Q4_0, 8, {4, 8}, 32), "");   // 3·8·8·32·4 = 24576 B
  EXPECT_EQ(reason(T::Q4_0, 8, {4, 8}, 64), "");   // exactly 48 KiB
  EXPECT_NE(reason(T::Q4_0, 8, {8, 8}, 32).find("57344 bytes of shared memory"), std::string::npos);
  EXPECT_NE(reason(T::Q6_K, 8, {8, 4}, 64).find("shared memory"), std::string::npos);
  EXPECT_NE(reason(T::Q4_0, 1, {64, 1}, 32).find("nwarps 64 is outside"), std::string::npos);
  EXPECT_NE(reason(T::Q4_0, 1, {4, 32}, 32).find("rows_per_block 32 is outside"), std::string::npos);
  // The grid's largest (issue 29): nwarps 32 at 32-wide waves only, up to 8 partial sums a thread;
  // rows 16 up to 32; else 64 (ncols 8 × rows 8).
  EXPECT_EQ(reason(T::Q4_0, 8, {32, 1}, 32), "");  // 31·8·32·4 = 31744 B
  EXPECT_NE(reason(T::Q4_0, 1, {32, 1}, 64).find("2048 threads exceeds 1024"), std::string::npos);
  EXPECT_NE(reason(T::Q4_0, 3, {32, 4}, 32).find("12 partial sums per thread exceed 8"), std::string::npos);
  EXPECT_EQ(reason(T::Q6_K, 2, {8, 16}, 32), "");  // 32 partial sums, 7·2·16·32·4 = 28672 B
  EXPECT_NE(reason(T::Q6_K, 3, {1, 16}, 32).find("48 partial sums per thread exceed 32"), std::string::npos);
  EXPECT_EQ(reason(T::Q6_K, 8, {1, 8}, 32), "");   // 64
  EXPECT_NE(reason(T::Q6_K, 8, {1, 16}, 32).find("exceed 32"), std::string::npos);
  // At ncols 1 the engine's fused gate/up twin holds twice the partial sums: 2·31·8·32·4 = 63488 B.
  EXPECT_NE(reason(T::Q4_0, 1, {32, 8}, 32).find("fused gate/up kernel at ncols 1 needs twice the 31744 bytes"),
            std::string::npos);
  EXPECT_NE(reason(T::Q4_0, 1, {16, 16}, 32).find("over the 48 KiB limit"), std::string::npos);
  EXPECT_EQ(reason(T::Q4_0, 2, {32, 4}, 32), "");   // no fused twin beyond ncols 1
  EXPECT_EQ(reason(T::Q4_0, 1, {16, 8}, 64), "");   // twice 30720 B fits the 64 KiB LDS at wave 64
  EXPECT_EQ(reason(T::Q4_0, 1, {8, 16}, 64), "");   // twice 28672 B
  EXPECT_NE(reason(T::Q4_0, 1, {16, 16}, 64).find("61440 bytes"), std::string::npos);
  EXPECT_NE(reason(T::F16, 1, {4, 1}, 32).find("f16 has no mmvq kernel"), std::string::npos);
  EXPECT_NE(reason(T::Q4_0, 0, {4, 1}, 32).find("ncols 0"), std::string::npos);
  EXPECT_NE(reason(T::Q4_0, 1, {4, 1}, 48).find("wave size 48"), std::string::npos);
}


// ggml's own mmvq-or-mmq pick at batch widths 2..8 (mmvq.cu ggml_cuda_should_use_mmvq and
// get_mmvq_mmid_max_batch at d99724f), as tune's crossover takes it for its stock arm.
TEST(Defaults, StockMmvqOrMmqPick) {
  using defaults::stock_uses_mmvq;
  const std::string_view d = "ggml-d99724f", old = "ggml-7180759";
  for (int n = 1; n <= 8; ++n) {  // H100: mmvq at every width, MUL_MAT and MUL_MAT_ID
    EXPECT_TRUE(stock_uses_mmvq(d, "sm_90", GgmlType::Q4_K, false, n));
    EXPECT_TRUE(stock_uses_mmvq(d, "sm_90", GgmlType::Q2_K, true, n));
  }
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "sm_89", GgmlType::Q4_K), 7);  // Ada
  EXPECT_FALSE(stock_uses_mmvq(d, "sm_89", GgmlType::Q4_K, false, 8));
  EXPECT_FALSE(stock_uses_mmvq(d, "sm_89", GgmlType::Q2_K, false, 5));
  EXPECT_TRUE(stock_uses_mmvq(d, "sm_89", GgmlType::Q6_K, false, 8));
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "sm_120", GgmlType::Q6_K), 7);  // Blackwell
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "sm_120", GgmlType::Q4_K), 5);
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "sm_121", GgmlType::Q2_K), 6);  // GB10
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "sm_100", GgmlType::Q4_K), 8);  // not listed: the plain limit
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "gfx908", GgmlType::Q4_K), 2);  // CDNA1
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "gfx90a", GgmlType::Q4_K), 3);  // CDNA2 and later
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "gfx942", GgmlType::Q6_K), 5);
  EXPECT_EQ(defaults::mmvq_max_ncols(d, "gfx1100", GgmlType::Q4_K), 8);
  EXPECT_EQ(defaults::mmvq_max_ncols(old, "sm_89", GgmlType::Q4_K), 8);  // 7180759: inline, the plain limit
  // MUL_MAT_ID's cap.
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("sm_89", GgmlType::Q3_K), 8);   // Ada and newer: always mmvq
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("sm_70", GgmlType::Q3_K), 8);   // Volta too
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("sm_86", GgmlType::Q3_K), 5);   // Turing..Ampere
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("sm_86", GgmlType::Q4_K), 8);
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("sm_61", GgmlType::Q4_K), 5);   // Pascal
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("gfx1201", GgmlType::Q8_0), 7); // RDNA4
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("gfx1100", GgmlType::Q6_K), 4); // RDNA3
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("gfx1030", GgmlType::Q5_K), 6); // RDNA2
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("gfx90a", GgmlType::IQ3_S), 4); // CDNA
  EXPECT_EQ(defaults::mmvq_mmid_max_batch("gfx906", GgmlType::Q4_0), 5);  // GCN
  EXPECT_FALSE(stock_uses_mmvq(d, "sm_86", GgmlType::Q3_K, true, 6));
  EXPECT_TRUE(stock_uses_mmvq(d, "sm_86", GgmlType::Q3_K, true, 5));
  EXPECT_THROW(defaults::mmvq_max_ncols("ggml-0000000", "sm_90", GgmlType::Q4_K), Error);
}


// The per-type limits of one of upstream's switch statements: "case GGML_TYPE_X:" labels take the
// value of the next "return N;" or "return ne11 <= N;" (MMVQ_MAX_BATCH_SIZE is 8).
std::map<std::string, int> switch_limits(const std::string& body) {
  std::map<std::string, int> out;
  std::vector<std::string> pending;
  static const std::regex token(R"(case GGML_TYPE_(\w+):|return (?:ne11 <= )?(\w+);)");
  for (std::sregex_iterator it(body.begin(), body.end(), token), end; it != end; ++it) {
    if ((*it)[1].matched) {
      pending.push_back((*it)[1]);
      continue;
    }
    const std::string v = (*it)[2];
    for (const auto& t : pending) out[t] = v == "MMVQ_MAX_BATCH_SIZE" ? 8 : std::stoi(v);
    pending.clear();
  }
  return out;
}
std::string between(const std::string& text, const std::string& from, const std::string& to) {
  const size_t a = text.find(from);
  if (a == std::string::npos) return {};
  const size_t b = text.find(to, a + from.size());
  return b == std::string::npos ? std::string() : text.substr(a, b - a);
}

// The stock pick's tables against upstream's mmvq.cu at d99724f ($TEMPER_UPSTREAM; skipped without):
// every type with an mmvq kernel, on one arch of each branch of the two functions.
TEST(Defaults, StockMmvqOrMmqPickIsUpstreamsOwn) {
  std::string why;
  const std::filesystem::path tree = test::upstream_tree("ggml-d99724f", &why);
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const std::string mmvq = read_file(tree / "src/ggml-cuda/mmvq.cu");
  auto check = [&](const std::string& body, const std::function<int(GgmlType)>& ours, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_FALSE(body.empty());
    const std::map<std::string, int> upstream = switch_limits(body);
    ASSERT_FALSE(upstream.empty());
    for (const TypeInfo& t : all_types()) {
      if (!mmvq::type_supported(uint32_t(t.type))) continue;
      std::string upper(t.name);
      for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
      const auto it = upstream.find(upper);
      EXPECT_EQ(ours(t.type), it == upstream.end() ? 8 : it->second) << t.name;
    }
  };
  for (const auto& [suffix, arch] : std::initializer_list<std::pair<const char*, const char*>>{
           {"pascal_older", "sm_61"}, {"turing_plus", "sm_75"}, {"gcn", "gfx906"}, {"cdna", "gfx90a"},
           {"rdna1_rdna2", "gfx1030"}, {"rdna3", "gfx1100"}, {"rdna4", "gfx1201"}})
    check(between(mmvq, std::string("int get_mmvq_mmid_max_batch_") + suffix + "(", "\n}\n"),
          [arch = std::string(arch)](GgmlType t) { return mmvq_mmid_max_batch(arch, t); }, std::string("mmid cap ") + suffix);
  const std::string use = between(mmvq, "bool ggml_cuda_should_use_mmvq(", "\n}\n");
  for (const auto& [marker, arch] : std::initializer_list<std::pair<const char*, const char*>>{
           {"cc == GGML_CUDA_CC_ADA_LOVELACE)", "sm_89"}, {"cc == GGML_CUDA_CC_BLACKWELL)", "sm_120"},
           {"cc == GGML_CUDA_CC_DGX_SPARK)", "sm_121"}, {"GGML_CUDA_CC_IS_CDNA1(cc)", "gfx908"},
           {"tuned for CDNA2", "gfx90a"}})
    check(between(use, marker, "default:"), [arch = std::string(arch)](GgmlType t) { return mmvq_max_ncols(kNew, arch, t); },
          std::string("should_use_mmvq on ") + arch);
}

}  // namespace
}  // namespace temper::defaults
