// The code-object reader: on real hipcc output (cross-checked against the compiler's own
// resource-usage remarks), on MessagePack produced by an independent writer, and on damaged input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "temper/codeobject.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gpus.h"
#include "temper/occupancy.h"

namespace temper {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::span<const std::byte> bytes_of(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

// ---- MessagePack: our reader against nlohmann's independent writer ----

TEST(Msgpack, ReadsWhatAnIndependentWriterWrites) {
  const json doc = {
      {"amdhsa.version", {1, 2}},
      {"small", 5}, {"u8", 200}, {"u16", 60000}, {"u32", 4000000000u}, {"u64", 1ull << 40},
      {"neg_fix", -5}, {"i8", -100}, {"i16", -30000}, {"i32", -2000000000}, {"i64", -(1ll << 40)},
      {"f64", 0.1}, {"t", true}, {"f", false}, {"nil", nullptr},
      {"long string", std::string(300, 'x')}, {"s", std::string(40, 'y')},
      {"big array", json(std::vector<int>(20, 7))},
      {"nested", {{"a", {{"b", {{"c", "deep"}}}}}}},
  };
  const std::vector<uint8_t> packed = json::to_msgpack(doc);
  const auto* p = reinterpret_cast<const std::byte*>(packed.data());
  EXPECT_EQ(parse_msgpack({p, packed.size()}, "test"), doc);
  // A map with more than 15 entries takes the map16 form.
  json wide = json::object();
  for (int i = 0; i < 40; ++i) wide["k" + std::to_string(i)] = i * 1000;
  const auto w = json::to_msgpack(wide);
  EXPECT_EQ(parse_msgpack({reinterpret_cast<const std::byte*>(w.data()), w.size()}, "test"), wide);
}

TEST(Msgpack, RejectsDamage) {
  const auto packed = json::to_msgpack(json{{"key", "value"}, {"n", 70000}});
  const auto* p = reinterpret_cast<const std::byte*>(packed.data());
  for (size_t cut = 0; cut < packed.size(); ++cut) {
    try {
      parse_msgpack({p, cut}, "cut.bin");
      ADD_FAILURE() << "truncation at " << cut << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find("cut.bin at byte"), std::string::npos) << e.what();
    }
  }
  // An array claiming 2^32-1 elements in a 6-byte document must fail fast, not allocate.
  const std::string huge = "\xdd\xff\xff\xff\xff\x01";
  EXPECT_THROW(parse_msgpack(bytes_of(huge), "huge"), Error);
  const std::string ext = "\xd4\x01\x02";  // fixext: never in AMDGPU metadata
  EXPECT_THROW(parse_msgpack(bytes_of(ext), "ext"), Error);
  std::string deep(100, '\x91');  // 100 nested one-element arrays
  deep += '\x01';
  EXPECT_THROW(parse_msgpack(bytes_of(deep), "deep"), Error);
}

// ---- mmvq symbols ----

TEST(MmvqSymbol, ParsesMangledAndDemangledNames) {
  auto m = parse_mmvq_symbol("_ZN6temper7kernels4mmvqILj12ELi8ELi2ELi8EEEvPKfS3_Pfi");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, GgmlType::Q4_K);
  EXPECT_EQ(m->ncols, 8);
  EXPECT_EQ(m->config, (Config{2, 8}));
  m = parse_mmvq_symbol("_ZN6temper7kernels4mmvqILj2ELi1ELi4ELi1EEEvPKfS3_Pfi.kd");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, GgmlType::Q4_0);
  EXPECT_EQ(m->config, (Config{4, 1}));
  m = parse_mmvq_symbol("void temper::kernels::mmvq<(temper::GgmlType)14, 4, 8, 4>(void const*, void const*, float*, int)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, GgmlType::Q6_K);
  EXPECT_EQ(m->ncols, 4);
  // The kernel's engine variant as a fifth argument (what hipcc names Temper's kernels now).
  m = parse_mmvq_symbol("_ZN6temper7kernels4mmvqILj3ELi1ELi2ELi2ELNS_4mmvq13KernelVariantE0EEEvPKvS5_PKiPfj5uint3jjjS9_jjjS9_jjj");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, GgmlType::Q4_1);
  EXPECT_EQ(m->config, (Config{2, 2}));
  // With upstream's kernel-argument layout (the unused fusion arguments and ids_stride, issue 50): the
  // name mmvq_symbol spells for AMD code objects.
  m = parse_mmvq_symbol(
      "_ZN6temper7kernels4mmvqILj11ELi1ELi4ELi8ELNS_4mmvq13KernelVariantE0EEEvPKvS5_PKiNS0_14MmvqFusionArgsEPfj15HIP_"
      "vector_typeIjLj3EEjjjSB_jjjSB_jjjj");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, GgmlType::Q3_K);
  EXPECT_EQ(m->ncols, 1);
  EXPECT_EQ(m->config, (Config{4, 8}));
  m = parse_mmvq_symbol("void temper::kernels::mmvq<3u, 1, 2, 2, (temper::mmvq::KernelVariant)1>(void const*, void const*)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->config, (Config{2, 2}));
  m = parse_mmvq_symbol("temper::kernels::mmvq<3u, 1, 2, 2, (temper::mmvq::KernelVariant)2>(int)");  // the pipelined one
  ASSERT_TRUE(m);
  EXPECT_EQ(m->ncols, 1);
  EXPECT_FALSE(parse_mmvq_symbol("temper::kernels::mmvq<3u, 1, 2, 2, (temper::mmvq::KernelVariant)3>(int)"));  // no such variant
  EXPECT_FALSE(parse_mmvq_symbol("temper::kernels::mmvq<3u, 1, 2, 2, 0, 0>(int)"));  // six arguments
  EXPECT_FALSE(parse_mmvq_symbol("spiller"));
  EXPECT_FALSE(parse_mmvq_symbol("temper::kernels::mmvq<2u, 1, 4>(int)"));        // three arguments
  EXPECT_FALSE(parse_mmvq_symbol("temper::kernels::mmvq<5u, 1, 4, 1>(int)"));     // 5: a retired type id
  EXPECT_FALSE(parse_mmvq_symbol("temper::kernels::mmvq<2u, 9, 4, 1>(int)"));     // ncols > 8
  EXPECT_FALSE(parse_mmvq_symbol("temper::kernels::quantize_q8_1<32>(float const*)"));
}

// Group kernels are told apart from mmvq and read with both types (HIP's mangling of
// temper::kernels::mmvq_group<12u, 14u, 1, 4, 2>, as in the kernel cache's group code objects).
TEST(MmvqSymbol, ParsesGroupKernels) {
  const char* mangled = "_ZN6temper7kernels10mmvq_groupILj12ELj14ELi1ELi4ELi2EEEvNS0_16MmvqGroupMembersEPKvj";
  EXPECT_FALSE(parse_mmvq_symbol(mangled));
  auto g = parse_mmvq_group_symbol(mangled);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->instance.type, GgmlType::Q4_K);
  EXPECT_EQ(g->type_b, GgmlType::Q6_K);
  EXPECT_EQ(g->instance.ncols, 1);
  EXPECT_EQ(g->instance.config, (Config{4, 2}));
  g = parse_mmvq_group_symbol("void temper::kernels::mmvq_group<8u, 8u, 4, 8, 4>(temper::kernels::MmvqGroupMembers, void const*, unsigned int)");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->type_b, GgmlType::Q8_0);
  EXPECT_EQ(g->instance.ncols, 4);
  EXPECT_FALSE(parse_mmvq_group_symbol("temper::kernels::mmvq_group<8u, 8u, 5, 8, 4>(int)"));   // width past 4
  EXPECT_FALSE(parse_mmvq_group_symbol("temper::kernels::mmvq_group<8u, 8u, 1, 16, 4>(int)"));  // not a group config
  EXPECT_FALSE(parse_mmvq_group_symbol("temper::kernels::mmvq_group<8u, 5u, 1, 2, 1>(int)"));   // 5: a retired type id
  EXPECT_FALSE(parse_mmvq_group_symbol("temper::kernels::mmvq<3u, 1, 2, 2>(int)"));
}

// ---- Real code objects from hipcc ----

#ifdef TEMPER_CODEOBJ_FIXTURE_DIR
const fs::path kFixtures = TEMPER_CODEOBJ_FIXTURE_DIR;
#define REQUIRE_FIXTURES() (void)0
#else
const fs::path kFixtures;
#define REQUIRE_FIXTURES() GTEST_SKIP() << "hipcc was not found at configure time: no code objects to read"
#endif

// The compiler's report: kernel name → {"VGPRs": n, "AGPRs": n, ...}.
std::map<std::string, std::map<std::string, int>> read_remarks(const fs::path& file) {
  std::map<std::string, std::map<std::string, int>> out;
  std::istringstream in(read_file(file));
  const std::regex name(R"(remark: Function Name: (\S+))"), field(R"(remark:\s+([A-Za-z ]+?)(?: \[[^\]]*\])?: (\d+) \[)");
  std::string line, current;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, name)) current = m[1];
    else if (!current.empty() && std::regex_search(line, m, field)) out[current][m[1]] = std::stoi(m[2]);
  }
  return out;
}

struct Variant {
  const char* file;
  const char* arch;
  const char* gpu;
  int wave;
};
const Variant kVariants[] = {{"gfx906.co", "gfx906", "mi50", 64},        {"gfx908.co", "gfx908", "mi100", 64},
                             {"gfx90a.co", "gfx90a", "mi210", 64},       {"gfx1030.co", "gfx1030", "rx6900xt", 32},
                             {"host-gfx906.o", "gfx906", "mi50", 64}};

// Compiled by clang-19 (the targets Debian's hipcc lacks): CDNA3's unified file with AGPRs, RDNA3.5 with
// the 1024-VGPR file (gfx1150) and the 1.5x one (gfx1151), RDNA4.
const Variant kNewerVariants[] = {{"gfx942.co", "gfx942", "mi300x", 64},
                                  {"gfx1150.co", "gfx1150", "radeon-890m", 32},
                                  {"gfx1151.co", "gfx1151", "radeon-8060s", 32},
                                  {"gfx1201.co", "gfx1201", "rx9070xt", 32}};

std::vector<Variant> fixture_variants() {
  std::vector<Variant> v(std::begin(kVariants), std::end(kVariants));
#ifdef TEMPER_NEWER_CLANG_FIXTURES
  v.insert(v.end(), std::begin(kNewerVariants), std::end(kNewerVariants));
#endif
  return v;
}

TEST(CodeObject, AgreesWithTheCompilersResourceReport) {
  REQUIRE_FIXTURES();
  for (const Variant& v : fixture_variants()) {
    SCOPED_TRACE(v.file);
    const auto objects = load_code_objects(kFixtures / v.file);
    ASSERT_EQ(objects.size(), 1u);
    const CodeObject& co = objects[0];
    EXPECT_EQ(co.arch, v.arch);
    const GpuSpec& gpu = *find_gpu(v.gpu);
    const fs::path remarks_file = kFixtures / (fs::path(v.file).stem().string() + ".remarks");
    const auto remarks = read_remarks(remarks_file);
    ASSERT_FALSE(remarks.empty()) << "no remarks in " << remarks_file;
    EXPECT_EQ(co.kernels.size(), remarks.size());
    for (const auto& k : co.kernels) {
      SCOPED_TRACE(k.name);
      ASSERT_TRUE(remarks.count(k.name));
      const auto& r = remarks.at(k.name);
      const KernelResources& res = k.resources;
      const int agprs = r.count("AGPRs") ? r.at("AGPRs") : 0;
      EXPECT_EQ(res.vgprs, allocated_vgprs(gpu, r.at("VGPRs"), agprs));
      EXPECT_EQ(res.agprs, agprs);
      EXPECT_EQ(res.sgprs, r.at("SGPRs"));
      EXPECT_EQ(res.lds_bytes, r.at("LDS Size"));
      EXPECT_EQ(res.scratch_bytes, r.at("ScratchSize"));
      EXPECT_EQ(res.vgpr_spills, r.at("VGPRs Spill"));
      EXPECT_EQ(res.sgpr_spills, r.at("SGPRs Spill"));
      EXPECT_EQ(res.wave_size, v.wave);
      EXPECT_EQ(k.symbol, k.name + ".kd");
      // Registers alone: our rule and the compiler's occupancy agree when nothing else binds.
      const Occupancy o = compute_occupancy(gpu, res, k.max_flat_workgroup_size);
      if (res.lds_bytes == 0) {
        EXPECT_EQ(o.register_waves_per_simd, r.at("Occupancy"));
      }
    }
  }
}

#ifdef TEMPER_NEWER_CLANG_FIXTURES
// clang-19's code objects: gfx942's matrix kernel keeps its accumulators in AGPRs of the unified file (counted
// in .vgpr_count), and the same heavy kernel is limited harder by gfx1150's 1024-VGPR file than by gfx1151's
// 1.5x one.
TEST(CodeObject, NewerTargetsFromClang19) {
  auto find = [](const CodeObject& co, const std::string& name) -> const CodeObjectKernel& {
    for (const auto& k : co.kernels)
      if (k.name == name) return k;
    throw std::runtime_error("no kernel " + name);
  };
  const auto gfx942 = load_code_objects(kFixtures / "gfx942.co").at(0);
  EXPECT_EQ(gfx942.arch, "gfx942");
  const auto& mfma = find(gfx942, "mfma");
  EXPECT_GT(mfma.resources.agprs, 0);
  EXPECT_GE(mfma.resources.vgprs, mfma.resources.agprs);
  EXPECT_EQ(mfma.resources.wave_size, 64);
  const std::string heavy = "_ZN6temper7kernels4mmvqILj12ELi8ELi2ELi8EEEvPKfS3_Pfi";  // mmvq<12u, 8, 2, 8>
  const auto gfx1150 = load_code_objects(kFixtures / "gfx1150.co").at(0);
  const auto gfx1151 = load_code_objects(kFixtures / "gfx1151.co").at(0);
  const auto& k1150 = find(gfx1150, heavy);
  const auto& k1151 = find(gfx1151, heavy);
  ASSERT_GT(k1150.resources.vgprs, 96);  // beyond 1536 / 16: both files limit, differently (98: 9 vs 12 waves)
  EXPECT_EQ(k1150.resources.wave_size, 32);
  const Occupancy o1150 = compute_occupancy(*find_gpu("gfx1150"), k1150.resources, 64);
  const Occupancy o1151 = compute_occupancy(*find_gpu("gfx1151"), k1151.resources, 64);
  EXPECT_EQ(o1150.register_granule, 16);
  EXPECT_EQ(o1151.register_granule, 24);
  EXPECT_LT(o1150.register_waves_per_simd, o1151.register_waves_per_simd);
}
#endif

TEST(CodeObject, FindsTheFixtureKernelsAndTheirFeatures) {
  REQUIRE_FIXTURES();
  auto find = [](const CodeObject& co, const std::string& name) -> const CodeObjectKernel& {
    for (const auto& k : co.kernels)
      if (k.name == name) return k;
    throw std::runtime_error("no kernel " + name);
  };
  const auto gfx908 = load_code_objects(kFixtures / "gfx908.co").at(0);
  EXPECT_GT(find(gfx908, "mfma").resources.agprs, 0);  // matrix accumulators live in AGPRs
  const auto gfx906 = load_code_objects(kFixtures / "gfx906.co").at(0);
  const auto& spiller = find(gfx906, "spiller");
  EXPECT_GT(spiller.resources.vgpr_spills, 0);
  EXPECT_GT(spiller.resources.scratch_bytes, 0);
  EXPECT_EQ(spiller.max_flat_workgroup_size, 1024);
  int mmvq = 0;
  for (const auto& k : gfx906.kernels)
    if (const auto m = parse_mmvq_symbol(k.name)) {
      ++mmvq;
      EXPECT_EQ(k.max_flat_workgroup_size, m->config.nwarps * 64);
      // (nwarps - 1) × ncols × rows_per_block × wave floats of partial sums.
      EXPECT_EQ(k.resources.lds_bytes, std::max(m->config.nwarps - 1, 1) * m->ncols * m->config.rows_per_block * 64 * 4);
    }
  EXPECT_EQ(mmvq, 4);
  // A directory: every device code object under it (host objects are read only when named).
  EXPECT_EQ(load_code_objects(kFixtures).size(), fixture_variants().size() - 1);  // the host object is skipped
  std::vector<std::string> archs{"gfx1030", "gfx906", "gfx908", "gfx90a"};
#ifdef TEMPER_NEWER_CLANG_FIXTURES
  archs = {"gfx1030", "gfx1150", "gfx1151", "gfx1201", "gfx906", "gfx908", "gfx90a", "gfx942"};
#endif
  EXPECT_EQ(code_object_archs(kFixtures), archs);
  // The per-arch layout kernels/ writes: <dir>/<arch>/*.co.
  const fs::path tree = fs::path(::testing::TempDir()) / "temper_codeobj_tree";
  fs::remove_all(tree);
  fs::create_directories(tree / "gfx90a");
  fs::copy_file(kFixtures / "gfx90a.co", tree / "gfx90a" / "mmvq_q4_0_nc1.co");
  EXPECT_EQ(code_object_archs(tree), std::vector<std::string>{"gfx90a"});
  const auto objs = load_code_objects_for(tree, "gfx90a");
  ASSERT_EQ(objs.size(), 1u);
  const auto rows = static_mmvq_occupancy(*find_gpu("gfx90a"), objs);
  ASSERT_EQ(rows.size(), 4u);  // sorted by type id: q4_0 (1×1, 4×1), q4_K, q6_K
  EXPECT_EQ(rows[0].instance.type, GgmlType::Q4_0);
  EXPECT_EQ(rows[1].instance.config, (Config{4, 1}));
  EXPECT_EQ(rows[3].instance.type, GgmlType::Q6_K);
  EXPECT_EQ(rows[1].occupancy.threads_per_block, 256);
  EXPECT_TRUE(load_code_objects_for(tree, "gfx906").empty());
  EXPECT_TRUE(code_object_archs(tree / "missing").empty());
  fs::remove_all(tree);
}

TEST(CodeObject, RejectsDamagedFiles) {
  REQUIRE_FIXTURES();
  const std::string good = read_file(kFixtures / "gfx90a.co");
  // Cut inside the bundle header, inside the ELF header, and inside the section table.
  for (size_t cut : {size_t{10}, size_t{40}, size_t{200}, good.size() / 2, good.size() - 1}) {
    try {
      read_code_objects(bytes_of(good.substr(0, cut)), "cut.co");
      ADD_FAILURE() << "truncation at " << cut << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << e.what();
    }
  }
  EXPECT_THROW(read_code_objects(bytes_of("plain text, not a code object"), "text"), Error);
  EXPECT_THROW(load_code_objects(kFixtures / "missing.co"), Error);
}

}  // namespace
}  // namespace temper
