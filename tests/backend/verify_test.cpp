#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "host_device.h"
#include "temper/error.h"
#include "temper/quant/fp.h"
#include "temper/verify.h"

namespace temper {
namespace {

using testing::HostDevice;

TEST(HalfUlp, CountsAcrossZero) {
  EXPECT_EQ(half_ulp_distance(0x3C00, 0x3C00), 0);
  EXPECT_EQ(half_ulp_distance(0x3C00, 0x3C01), 1);
  EXPECT_EQ(half_ulp_distance(0x0000, 0x8000), 0);  // +0 and -0
  EXPECT_EQ(half_ulp_distance(0x0001, 0x8001), 2);  // smallest subnormals of both signs
  EXPECT_EQ(half_ulp_distance(0x3C00, 0x3BFF), 1);  // 1.0 and the half below it
}

quant::BlockQ8_1 block(float d, float s, int8_t q0) {
  quant::BlockQ8_1 b{};
  b.d = quant::fp32_to_fp16(d);
  b.s = quant::fp32_to_fp16(s);
  for (int i = 0; i < 32; ++i) b.qs[i] = int8_t(i);
  b.qs[0] = q0;
  return b;
}

TEST(CompareQ8_1, ExactPassesOneUlpPassesMoreFails) {
  std::vector<quant::BlockQ8_1> ref{block(0.5f, 3.0f, 7), block(0.25f, -1.0f, 7)};
  auto dev = ref;
  EXPECT_TRUE(compare_q8_1(dev, ref).passed());
  dev[1].d = uint16_t(dev[1].d + 1);  // 1 ulp: allowed
  auto c = compare_q8_1(dev, ref);
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.worst_ulps, 1);
  dev[1].s = uint16_t(dev[1].s + 2);  // 2 ulps: not
  c = compare_q8_1(dev, ref);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.sum_mismatches, 1);
  EXPECT_NE(c.first_failure.find("block 1: s ="), std::string::npos) << c.first_failure;
  dev = ref;
  dev[0].qs[5] = 99;
  c = compare_q8_1(dev, ref);
  EXPECT_EQ(c.quant_mismatches, 1);
  EXPECT_EQ(c.first_failure, "block 0: q[5] = 99, expected 5");
  EXPECT_THROW(compare_q8_1(std::span(dev).first(1), ref), Error);
}

TEST(CompareOutputs, ClassifiesEveryFailure) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Two columns of three rows.
  std::vector<Expected> e(6, Expected{1.0, 1e-3, 1.0, 0.1});
  std::vector<float> ok{1.0f, 1.0005f, 0.9995f, 1.0f, 1.0f, 1.0f};
  auto c = compare_outputs(ok, e, 3);
  EXPECT_TRUE(c.passed());
  EXPECT_NEAR(c.max_abs_error, 5e-4, 1e-6);
  EXPECT_NEAR(c.worst_ratio, 0.5, 1e-3);

  std::vector<float> bad{1.0f, nan, 1.01f, INFINITY, 1.0f, 1.2f};
  c = compare_outputs(bad, e, 3);
  EXPECT_FALSE(c.passed());
  EXPECT_EQ(c.values, 6);
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.nonfinite, 1);
  EXPECT_EQ(c.wrong, 2);      // 1.01 and 1.2 are outside ±1e-3
  EXPECT_EQ(c.wrong_f64, 1);  // only 1.2 is outside ±0.1
  EXPECT_EQ(c.first_failure.rfind("row 1 column 0: not written", 0), 0u) << c.first_failure;
}

TEST(ParseLists, TypesAndNcols) {
  EXPECT_EQ(parse_type_list("q4_0,Q4_K,q4_0"), (std::vector<GgmlType>{GgmlType::Q4_0, GgmlType::Q4_K}));
  EXPECT_THROW(parse_type_list("q4_0,,q8_0"), Error);
  EXPECT_THROW(parse_type_list("q9_9"), Error);
  try {
    parse_type_list("f16");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("not a quantized type"), std::string::npos);
  }
  EXPECT_EQ(parse_ncols_list("1-3,8,2"), (std::vector<int>{1, 2, 3, 8}));
  EXPECT_THROW(parse_ncols_list("0"), Error);
  EXPECT_THROW(parse_ncols_list("9"), Error);
  EXPECT_THROW(parse_ncols_list("4-2"), Error);
  EXPECT_THROW(parse_ncols_list("1,x"), Error);
  using V = mmvq::KernelVariant;
  EXPECT_EQ(parse_variant_list("d99724f-pipelined,d99724f,d99724f"), (std::vector<V>{V::GgmlD99724fPipelined, V::GgmlD99724f}));
  EXPECT_EQ(parse_variant_list("all"), (std::vector<V>{V::Ggml7180759, V::GgmlD99724f, V::GgmlD99724fPipelined}));
  EXPECT_THROW(parse_variant_list("pipelined"), Error);
  EXPECT_THROW(parse_variant_list("d99724f,"), Error);
}

TEST(ParseLists, NormRowLengths) {
  EXPECT_EQ(parse_norm_list("2048,4096,2048"), (std::vector<int>{2048, 4096}));
  for (const std::string bad : {"", "48", "0", "-32", "4096x", "2048,,4096", "2097152"}) EXPECT_THROW(parse_norm_list(bad), Error) << bad;
}

TEST(ParseLists, Groups) {
  using T = GgmlType;
  EXPECT_EQ(parse_group_list("q4_K+q4_K+q6_K,q8_0+q8_0"),
            (std::vector<std::vector<T>>{{T::Q4_K, T::Q4_K, T::Q6_K}, {T::Q8_0, T::Q8_0}}));
  for (const char* bad : {"q4_K", "q4_K+", "+q4_K", "q4_K+q5_K+q6_K", "q4_K+q4_K+q4_K+q4_K+q4_K", "q4_K+q9_9", "q4_K+f16",
                          "q4_K+q6_K,"}) {
    try {
      parse_group_list(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << bad;
    }
  }
  try {
    parse_group_list("q4_K+q5_K+q6_K");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "group 'q4_K+q5_K+q6_K': 3 members of 3 types; a group launch takes 2..4 members of at most 2 types");
  }
}

VerifyOptions small() {
  VerifyOptions o;
  o.shapes = {{5, 512}, {3, 0}};
  o.ncols = {1, 3};
  o.seed = 42;
  return o;
}

TEST(RunVerification, CorrectKernelsPassEverywhere) {
  HostDevice dev;
  size_t last_done = 0, last_total = 0;
  const VerifyReport r = run_verification(dev, small(), [&](size_t d, size_t t) {
    last_done = d;
    last_total = t;
  });
  EXPECT_TRUE(r.passed()) << format_report(r);
  // 2 shapes × 2 types × 2 ncols × 4 configs.
  EXPECT_EQ(r.cases.size(), 32u);
  EXPECT_EQ(last_done, 32u);
  EXPECT_EQ(last_total, 32u);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_FALSE(r.quantizer.empty());
  for (const auto& q : r.quantizer) EXPECT_TRUE(q.passed());
  // K = 0 means the type's smallest K: 256 for these 32-value types.
  EXPECT_EQ(r.cases.back().k, 256);
  const std::string text = format_report(r);
  EXPECT_NE(text.find("32/32 instantiations passed"), std::string::npos) << text;
  EXPECT_NE(text.find("q4_0"), std::string::npos);
  EXPECT_NE(text.find("8/8"), std::string::npos) << text;  // per cell: 2 shapes × 4 configs
  const auto j = to_json(r);
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_EQ(j["cases"].size(), 32u);
}

// The norm that writes q8_1 (issue 48's structure in Temper's kernel library): each row length at 1, 3
// and 8 rows; its float output against the float64 reference within the rounding bound, its q8_1 copy
// against the CPU quantizer of that output; a wrong value or quant fails naming the launch; a device
// without the kernel or a row length not of whole q8_1 blocks is one clear error.
TEST(RunVerification, TheNormWritingQ8_1IsCheckedValueAndQuant) {
  HostDevice dev;
  VerifyOptions o = small();
  o.norms = {64, 4096};
  VerifyReport r = run_verification(dev, o);
  EXPECT_TRUE(r.passed()) << format_report(r);
  ASSERT_EQ(r.norm_cases.size(), 6u);
  EXPECT_EQ(r.norm_cases[5].k, 4096);
  EXPECT_EQ(r.norm_cases[5].rows, 8);
  EXPECT_EQ(r.norm_cases[5].check.values, 8 * 4096);
  EXPECT_EQ(r.norm_cases[5].q8.blocks, 8 * 4096 / 32);
  EXPECT_GT(r.norm_cases[5].check.worst_ratio, 0.0);  // a float evaluation is not the float64 one
  EXPECT_NE(format_report(r).find("norm with q8_1: 6/6 launches passed"), std::string::npos) << format_report(r);
  EXPECT_EQ(to_json(r)["norms"].size(), 6u);

  dev.norm_bug = HostDevice::NormBug::WrongValue;  // value 5 of row 1, 1 % off
  r = run_verification(dev, o);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(r.norm_cases[0].passed());  // one row: no row 1
  EXPECT_EQ(r.norm_cases[1].check.wrong, 1) << r.norm_cases[1].check.first_failure;
  EXPECT_NE(format_report(r).find("FAIL norm with q8_1 k=64 rows=3"), std::string::npos) << format_report(r);

  dev.norm_bug = HostDevice::NormBug::WrongQuant;
  r = run_verification(dev, o);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(r.norm_cases[0].check.passed());
  EXPECT_EQ(r.norm_cases[0].q8.quant_mismatches, 1);
  EXPECT_NE(format_report(r).find("q8_1 block 1: q[3]"), std::string::npos) << format_report(r);

  o.norms = {48};
  EXPECT_THROW(run_verification(dev, o), Error);
  o.norms = {64};
  dev.norm = false;
  try {
    run_verification(dev, o);
    FAIL() << "a device without the norm kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("no kernel for the norm"), std::string::npos) << e.what();
  }
}

// Every variant asked for runs every config, the pipelined one at one column only, and a variant's
// wrong outputs are reported under its name.
TEST(RunVerification, RunsEachVariantAndNamesTheOneThatFails) {
  HostDevice dev;
  dev.variant_bugs[mmvq::KernelVariant::GgmlD99724fPipelined] = HostDevice::Bug::Wrong;
  VerifyOptions o = small();
  o.variants = parse_variant_list("all");
  const VerifyReport r = run_verification(dev, o);
  EXPECT_FALSE(r.passed());
  // 2 shapes × 2 types × 4 configs × (3 variants at ncols 1 + 2 at ncols 3).
  ASSERT_EQ(r.cases.size(), 80u);
  int failed = 0;
  for (const auto& c : r.cases) {
    const bool pipelined = c.variant == mmvq::KernelVariant::GgmlD99724fPipelined;
    EXPECT_TRUE(!pipelined || c.ncols == 1);
    EXPECT_EQ(c.passed(), !pipelined) << variant_name(c.variant) << " ncols " << c.ncols;
    failed += !c.passed();
  }
  EXPECT_EQ(failed, 16);
  EXPECT_EQ(dev.variants, (std::set<mmvq::KernelVariant>{mmvq::KernelVariant::Ggml7180759, mmvq::KernelVariant::GgmlD99724f,
                                                          mmvq::KernelVariant::GgmlD99724fPipelined}));
  const std::string text = format_report(r);
  EXPECT_NE(text.find("64/80 instantiations passed"), std::string::npos) << text;
  EXPECT_NE(text.find(", d99724f-pipelined): row 1"), std::string::npos) << text;
  const auto j = to_json(r);
  EXPECT_EQ(j["cases"][2]["variant"], "d99724f-pipelined");
  EXPECT_FALSE(j["cases"][2]["passed"].get<bool>());
}

// Groups run every group config at widths up to 4 with members of n, n/2, n/3 rows; a member's wrong
// or unwritten outputs fail its launch, and the report names the member.
TEST(RunVerification, GroupsCheckEveryMemberAndNameTheOneThatFails) {
  HostDevice dev;
  dev.group_bugs[{4, 2}] = {2, HostDevice::Bug::SkipLastRow};
  dev.group_bugs[{8, 4}] = {1, HostDevice::Bug::Wrong};
  VerifyOptions o = small();
  o.types = {GgmlType::Q4_0};
  o.ncols = {1, 3, 8};  // 8: no group launch
  o.variants = parse_variant_list("all");  // groups have no pipelined launch
  o.groups = parse_group_list("q4_0+q4_0+q8_0");
  size_t last_total = 0;
  const VerifyReport r = run_verification(dev, o, [&](size_t, size_t t) { last_total = t; });
  // 2 shapes × 2 widths × 9 configs × 2 variants.
  ASSERT_EQ(r.group_cases.size(), 72u);
  EXPECT_EQ(last_total, r.cases.size() + 72u);
  EXPECT_EQ(dev.group_calls, 72);
  int failed = 0;
  for (const auto& c : r.group_cases) {
    ASSERT_EQ(c.problem.members.size(), 3u);
    EXPECT_EQ(c.problem.members[1].n, c.problem.members[0].n / 2);
    EXPECT_EQ(c.problem.members[2].type, GgmlType::Q8_0);
    EXPECT_NE(c.problem.variant, mmvq::KernelVariant::GgmlD99724fPipelined);
    const bool bug = c.config == Config{4, 2} || c.config == Config{8, 4};
    EXPECT_EQ(c.passed(), !bug) << config_words(c.config);
    if (c.config == Config{4, 2}) {
      EXPECT_EQ(c.check.unwritten, c.problem.ncols);
    }
    failed += !c.passed();
  }
  EXPECT_EQ(failed, 16);
  EXPECT_FALSE(r.passed());
  const std::string text = format_report(r, 100);
  EXPECT_NE(text.find("group q4_0+q4_0+q8_0: 56/72 launches passed"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL group q4_0 5x512 + q4_0 2x512 + q8_0 1x512 ncols=1 (nwarps 4, rows_per_block 2, 7180759): member 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("member 1 row 0"), std::string::npos) << text;
  const auto j = to_json(r);
  ASSERT_EQ(j["groups"].size(), 72u);
  EXPECT_EQ(j["groups"][0]["members"][2]["type"], "q8_0");
}

TEST(RunVerification, CatchesUnwrittenWrongAndInfiniteOutputs) {
  HostDevice dev;
  dev.bugs[{2, 1}] = HostDevice::Bug::SkipLastRow;
  dev.bugs[{4, 1}] = HostDevice::Bug::Wrong;
  dev.bugs[{4, 4}] = HostDevice::Bug::Infinite;
  VerifyOptions o = small();
  o.types = {GgmlType::Q8_0};
  const VerifyReport r = run_verification(dev, o);
  EXPECT_FALSE(r.passed());
  int unwritten = 0, wrong = 0, inf = 0, ok = 0;
  for (const auto& c : r.cases) {
    if (c.passed()) {
      ++ok;
      EXPECT_EQ(c.config, (Config{1, 1}));
    }
    if (c.config == Config{2, 1}) unwritten += c.check.unwritten == c.ncols;
    if (c.config == Config{4, 1}) wrong += c.check.wrong > 0;
    if (c.config == Config{4, 4}) inf += c.check.nonfinite == c.ncols;
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(unwritten, 4);
  EXPECT_EQ(wrong, 4);
  EXPECT_EQ(inf, 4);
  const std::string text = format_report(r, 3);
  EXPECT_NE(text.find("FAIL q8_0"), std::string::npos) << text;
  EXPECT_NE(text.find("more failures"), std::string::npos) << text;
}

TEST(RunVerification, FaultStopsTheRunAndKeepsWhatWasChecked) {
  HostDevice dev;
  dev.bugs[{4, 1}] = HostDevice::Bug::Fault;
  VerifyOptions o = small();
  o.types = {GgmlType::Q4_0};
  o.ncols = {1};
  const VerifyReport r = run_verification(dev, o);
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.fault.find("unusable"), std::string::npos) << r.fault;
  ASSERT_EQ(r.cases.size(), 3u);  // {1,1} and {2,1} passed, {4,1} faulted, nothing after
  EXPECT_TRUE(r.cases[0].passed());
  EXPECT_NE(r.cases[2].error.find("illegal memory access"), std::string::npos);
  EXPECT_NE(format_report(r).find("STOPPED"), std::string::npos);
}

TEST(RunVerification, CancelStopsEarly) {
  HostDevice dev;
  std::atomic<bool> cancel{true};
  const VerifyReport r = run_verification(dev, small(), {}, &cancel);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(r.cases.empty());
}

TEST(RunVerification, RejectsTypesWithoutReferenceAndBadShapes) {
  HostDevice dev;
  VerifyOptions o = small();
  o.ncols = {9};
  EXPECT_THROW(run_verification(dev, o), Error);
  o = small();
  o.shapes = {{4, 100}};  // not a multiple of 32
  try {
    run_verification(dev, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
  }
}

TEST(InstantiatedConfigs, AreWhatTheDeviceHas) {
  HostDevice dev;
  EXPECT_EQ(instantiated_configs(dev, GgmlType::Q4_0, 1), dev.configs);
  EXPECT_TRUE(instantiated_configs(dev, GgmlType::Q6_K, 1).empty());
  EXPECT_EQ(verifiable_types(dev), dev.types);
}

}  // namespace
}  // namespace temper
