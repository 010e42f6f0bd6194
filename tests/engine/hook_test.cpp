// The tuning hook against upstream's own mmvq.cu of both ggml versions and a llama.cpp checkout
// ($TEMPER_UPSTREAM; skipped without it): it applies to a copy, it undoes byte for byte, and it
// refuses (writing nothing) where an anchor has moved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/upstream_tree.h"
#include "temper/engine.h"
#include "temper/engine_build.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/mmvq_traits.h"

namespace fs = std::filesystem;
using namespace temper;

namespace {

using test::UpstreamCopy;

// The part of a tree the hook reads and writes: its ggml-cuda folder, copied alone.
const char* cuda_part(const std::string& tree) { return tree == "llama.cpp" ? "ggml/src/ggml-cuda" : "src/ggml-cuda"; }

// Every file under cuda_dir, by path relative to it, with its bytes.
std::string snapshot(const fs::path& cuda_dir) {
  std::string all;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(cuda_dir)) if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) all += f.lexically_relative(cuda_dir).string() + "\n" + read_file(f);
  return all;
}

// A private copy of the named tree's ggml-cuda folder as `var`; the test skips without the tree.
#define COPY_OR_SKIP(var, name)                    \
  const UpstreamCopy var(name, {cuda_part(name)}); \
  if (var.root().empty()) GTEST_SKIP() << "SKIPPED: " << var.why()

class HookOn : public ::testing::TestWithParam<std::string> {};

TEST_P(HookOn, AppliesAndUndoesByteForByte) {
  COPY_OR_SKIP(copy, GetParam());
  const fs::path& tree = copy.root();
  const fs::path cuda = tree / cuda_part(GetParam());
  const std::string original = read_file(cuda / "mmvq.cu");

  engine::CheckReport c = engine::check(tree);
  EXPECT_TRUE(c.applies) << c.problem;
  EXPECT_EQ(c.state, engine::HookState::Stock);
  EXPECT_EQ(c.tree.kind, GetParam() == "llama.cpp" ? engine::TreeKind::LlamaCpp : engine::TreeKind::Ggml);
  EXPECT_NE(std::find(c.types.begin(), c.types.end(), "Q4_K"), c.types.end());
  // Hook v5: every tested tree has ggml-cuda.cu's three places.
  EXPECT_EQ(c.group_hooks, engine::kGroupHookEvaluate | engine::kGroupHookOrder) << c.group_problem;
  // Hook v8: the norm's q8_1 activations in the ggml-halve-iters family, before and after the patch.
  const int norm = GetParam() == "ggml-7180759" ? 0 : engine::kNormHookEvaluate | engine::kNormHookRead;
  EXPECT_EQ(c.norm_hooks, norm);

  EXPECT_EQ(engine::patch(tree, engine::kernel_set("ci")), engine::kGroupHookEvaluate | engine::kGroupHookOrder);
  EXPECT_EQ(engine::check(tree).norm_hooks, norm);
  EXPECT_NE(read_file(cuda / "ggml-cuda.cu").find("temper_mmvq_try_group(*cuda_ctx, cgraph, i)"), std::string::npos);
  const std::string patched = read_file(cuda / "mmvq.cu");
  EXPECT_EQ(patched.rfind("// temper-hook v" + std::to_string(engine::kHookVersion), 0), 0u);
  // Hook v6: a third parameter where the kernel waits for its predecessor (d99724f), none in 7180759.
  EXPECT_NE(patched.find(GetParam() == "ggml-7180759" ? "int temper_nwarps = 0, int temper_rows = 0>"
                                                      : "int temper_nwarps = 0, int temper_rows = 0, int temper_pipe = 0>"),
            std::string::npos);
  EXPECT_NE(patched.find("temper_mmvq_try_launch(type, ncols_dst, temper_args)"), std::string::npos);
  EXPECT_NE(patched.find("temper_nwarps > 0 ? temper_nwarps : calc_nwarps"), std::string::npos);
  EXPECT_NE(patched.find("temper_rows > 0 ? temper_rows : calc_rows_per_block"), std::string::npos);
  for (const char* f : {"temper-mmvq.cuh", "temper-mmvq-api.h", "temper-mmvq-runtime.cu", "temper-mmvq-profile.h", "temper-mmvq-registry.cu", "temper-mmvq-q4_k-1.cu",
                        "temper-mmvq-q4_0-1.cu"})
    EXPECT_TRUE(fs::exists(cuda / f)) << f;
  EXPECT_FALSE(fs::exists(cuda / "temper-mmvq-q4_k-2-4.cu"));  // the ci set stops at ncols 1
  // Upstream's stock instantiations are untouched: their config parameters default to the table.
  const std::string unit = read_file(cuda / "temper-mmvq-q4_k-1.cu");
  EXPECT_NE(unit.find("#define TEMPER_MMVQ_KERNELS_ONLY"), std::string::npos);
  EXPECT_NE(unit.find("temper_mmvq_register(GGML_TYPE_Q4_K, 1, 8, 4, &launch<1, 8, 4>"), std::string::npos);

  c = engine::check(tree);
  EXPECT_EQ(c.state, engine::HookState::Patched);
  EXPECT_EQ(c.patched_version, engine::kHookVersion);
  EXPECT_FALSE(c.applies);

  // A second patch is refused and changes nothing.
  try {
    engine::patch(tree, engine::kernel_set("ci"));
    ADD_FAILURE() << "patched twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("already patched"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(cuda / "mmvq.cu"), patched);

  engine::undo(tree);
  EXPECT_EQ(read_file(cuda / "mmvq.cu"), original);
  EXPECT_EQ(snapshot(cuda), snapshot(test::upstream_tree(GetParam()) / cuda_part(GetParam())));
}

TEST_P(HookOn, FullSetCoversEveryTypeAndNcols) {
  std::string why;
  const fs::path tree = test::upstream_tree(GetParam(), &why);  // read only: no copy
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const std::string source = read_file(tree / cuda_part(GetParam()) / "mmvq.cu");
  const auto has = [](const engine::Patch& p, const std::string& name) {
    return std::any_of(p.files.begin(), p.files.end(), [&](const auto& f) { return f.first == name; });
  };
  // all: one unit per type and ncols group (1, 2-4, 5-8), the registry, the header, its C interface, the run time,
  // its profile reader and the group header ggml-cuda.cu includes (no ggml-cuda.cu given: no group units).
  const engine::Patch all = engine::make_patch(source, engine::kernel_set("all"));
  EXPECT_EQ(all.files.size(), all.types.size() * 3 + 6);
  const auto unit = std::find_if(all.files.begin(), all.files.end(), [](const auto& f) { return f.first == "temper-mmvq-q6_k-5-8.cu"; });
  ASSERT_NE(unit, all.files.end());
  EXPECT_NE(unit->second.find("temper_mmvq_register(GGML_TYPE_Q6_K, 8, 2, 2, &launch<8, 2, 2>"), std::string::npos);
  // Host and device cannot disagree on a block's shape: one template pair (W, R) sets the block
  // (warp_size x W), the grid (N / R) and the kernel instantiation (its __launch_bounds__ and rows).
  EXPECT_NE(unit->second.find("const dim3 block_nums((a.nrows_x + R - 1) / R, a.nchannels_dst, a.nsamples_dst);"),
            std::string::npos);
  EXPECT_NE(unit->second.find("const dim3 block_dims(a.warp_size, W, 1);"), std::string::npos);
  EXPECT_NE(unit->second.find("mul_mat_vec_q_switch_fusion<GGML_TYPE_Q6_K, C, "), std::string::npos);
  EXPECT_NE(unit->second.find(all.pipeline_hooks ? ", W, R, P>(\n" : ", W, R>(\n"), std::string::npos);
  EXPECT_EQ(all.pipeline_hooks, GetParam() == "ggml-7180759" ? 0 : 1);  // hook v6: d99724f's kernel waits for its predecessor
  EXPECT_NE(all.mmvq.find("__launch_bounds__((temper_nwarps > 0 ? temper_nwarps : "), std::string::npos);
  EXPECT_NE(all.mmvq.find("temper_rows > 0 ? temper_rows : calc_rows_per_block"), std::string::npos);
  EXPECT_GE(all.types.size(), 21u);
  // full: the 13 tier-1 types at every ncols group, the others at ncols 1 only.
  const engine::Patch full = engine::make_patch(source, engine::kernel_set("full"));
  EXPECT_EQ(full.files.size(), 13 * 3 + (full.types.size() - 13) + 6);
  EXPECT_TRUE(has(full, "temper-mmvq-mxfp4-5-8.cu"));
  EXPECT_TRUE(has(full, "temper-mmvq-iq4_xs-2-4.cu"));
  EXPECT_TRUE(has(full, "temper-mmvq-iq2_xxs-1.cu"));
  EXPECT_FALSE(has(full, "temper-mmvq-iq2_xxs-2-4.cu"));
  EXPECT_EQ(full.mmvq, all.mmvq);  // the set changes only the generated units
  // The engine reports the hook version written into its header (the probe's hello, sessions).
  const auto header = std::find_if(all.files.begin(), all.files.end(), [](const auto& f) { return f.first == "temper-mmvq.cuh"; });
  ASSERT_NE(header, all.files.end());
  EXPECT_NE(header->second.find("#define TEMPER_MMVQ_HOOK_VERSION " + std::to_string(engine::kHookVersion) + "\n"),
            std::string::npos);
  EXPECT_EQ(all.halve_iters, GetParam() != "ggml-7180759");  // llama.cpp's mmvq.cu is d99724f's
  // Hook v4: d99724f defines both mmvq/mmq decisions in mmvq.cu; 7180759 only MUL_MAT_ID's cap.
  EXPECT_EQ(all.path_hooks, GetParam() == "ggml-7180759" ? engine::kPathHookMulMatId : engine::kPathHookMulMat | engine::kPathHookMulMatId);
  EXPECT_NE(header->second.find("#define TEMPER_MMVQ_PATH_HOOKS " + std::to_string(all.path_hooks) + "\n"), std::string::npos);
  EXPECT_NE(all.mmvq.find("return temper_mmvq_mmid_max_batch((int) type, temper_stock_mmvq_mmid_max_batch(type, cc));"), std::string::npos);
  // ncols1 (bench/fidelity.sh): the 13 tier-1 types, one ncols-1 unit each, the grid's configs that
  // launch at ncols 1: 30 less (16, 16), (32, 8) (the fused twin's shared memory) and (32, 16).
  const engine::Patch n1 = engine::make_patch(source, engine::kernel_set("ncols1"));
  EXPECT_EQ(n1.files.size(), 13u + 6u);
  const auto mx = std::find_if(n1.files.begin(), n1.files.end(), [](const auto& f) { return f.first == "temper-mmvq-mxfp4-1.cu"; });
  ASSERT_NE(mx, n1.files.end());
  size_t registered = 0;
  for (size_t at = 0; (at = mx->second.find("temper_mmvq_register(GGML_TYPE_MXFP4, 1,", at)) != std::string::npos; ++at) ++registered;
  EXPECT_EQ(registered, 27u);
  // nwarps 32 is CUDA's only (a HIP build's units serve wave-64 targets too); rows 16 is everyone's.
  EXPECT_NE(mx->second.find("#if !defined(GGML_USE_HIP)\n    temper_mmvq_register(GGML_TYPE_MXFP4, 1, 32, 4, "), std::string::npos);
  EXPECT_EQ(mx->second.find("temper_mmvq_register(GGML_TYPE_MXFP4, 1, 32, 8, "), std::string::npos);
  EXPECT_NE(mx->second.find("\n    temper_mmvq_register(GGML_TYPE_MXFP4, 1, 8, 16, "), std::string::npos);
  EXPECT_EQ(mx->second.find("#if !defined(GGML_USE_HIP)\n    temper_mmvq_register(GGML_TYPE_MXFP4, 1, 8, 16, "), std::string::npos);
  EXPECT_FALSE(has(n1, "temper-mmvq-iq2_xxs-1.cu"));
}

// Both ggml versions, and a llama.cpp checkout (ggml/ inside) whose mmvq.cu is d99724f's.
INSTANTIATE_TEST_SUITE_P(Upstream, HookOn, ::testing::Values("ggml-7180759", "ggml-d99724f", "llama.cpp"),
                         [](const auto& test_info) {  // "llama.cpp" -> llama_cpp: test names take [A-Za-z0-9_]
                           std::string name = test_info.param;
                           for (char& c : name) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// The run time indexes its instantiations by Temper's grid: the same values, or a profile's config
// that the units registered would read as "not compiled in".
TEST(Hook, TheRunTimesGridIsTempersGrid) {
  const std::string runtime(engine::hook_runtime());
  const auto values = [&](const std::string& name) {
    std::smatch m;
    const std::regex re("constexpr int " + name + R"(\[\] = \{([0-9, ]*)\};)");
    EXPECT_TRUE(std::regex_search(runtime, m, re)) << name;
    std::vector<int> out;
    std::istringstream in(m[1].str());
    for (std::string v; std::getline(in, v, ',');) out.push_back(std::stoi(v));
    return out;
  };
  EXPECT_EQ(values("kNwarps"), std::vector<int>(std::begin(mmvq::kGridNwarps), std::end(mmvq::kGridNwarps)));
  EXPECT_EQ(values("kRows"), std::vector<int>(std::begin(mmvq::kGridRowsPerBlock), std::end(mmvq::kGridRowsPerBlock)));
}

TEST(Hook, RefusesAMovedAnchorAndWritesNothing) {
  COPY_OR_SKIP(copy, "ggml-d99724f");
  const fs::path& tree = copy.root();
  const fs::path mmvq = tree / "src/ggml-cuda/mmvq.cu";
  std::string text = read_file(mmvq);
  // A newer upstream that renamed the kernel's rows-per-block constant.
  const std::string anchor = "constexpr int rows_per_cuda_block = calc_rows_per_block(";
  text.replace(text.find(anchor), anchor.size(), "constexpr int rows_per_block = calc_rows_per_block(");
  write_file_atomic(mmvq, text);
  const std::string before = snapshot(mmvq.parent_path());
  try {
    engine::patch(tree, engine::kernel_set("ci"));
    ADD_FAILURE() << "a damaged mmvq.cu was patched";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("anchor not found: constexpr int rows_per_cuda_block"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was written"), std::string::npos);
  }
  EXPECT_EQ(snapshot(mmvq.parent_path()), before);
  const engine::CheckReport c = engine::check(tree);
  EXPECT_FALSE(c.applies);
  EXPECT_NE(c.problem.find("rows_per_cuda_block"), std::string::npos);
}

TEST(Hook, RefusesATruncatedFile) {
  COPY_OR_SKIP(copy, "ggml-7180759");
  const fs::path& tree = copy.root();
  const fs::path mmvq = tree / "src/ggml-cuda/mmvq.cu";
  const std::string text = read_file(mmvq);
  write_file_atomic(mmvq, text.substr(0, text.size() / 2));
  EXPECT_THROW(engine::patch(tree, engine::kernel_set("ci")), Error);
  EXPECT_FALSE(fs::exists(tree / "src/ggml-cuda/temper-mmvq.cuh"));
  EXPECT_FALSE(fs::exists(tree / "src/ggml-cuda/.temper-hook"));
}

TEST(Hook, UndoLeavesAFileEditedSinceAlone) {
  COPY_OR_SKIP(copy, "ggml-d99724f");
  const fs::path& tree = copy.root();
  const fs::path mmvq = tree / "src/ggml-cuda/mmvq.cu";
  engine::patch(tree, engine::kernel_set("ci"));
  const std::string edited = read_file(mmvq) + "// the user's own line\n";
  write_file_atomic(mmvq, edited);
  try {
    engine::undo(tree);
    ADD_FAILURE() << "undo overwrote an edited file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("changed since Temper patched it"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(mmvq), edited);
}

TEST(Hook, FindsALlamaCppCheckoutAndItsCommit) {
  COPY_OR_SKIP(copy, "llama.cpp");
  const fs::path& root = copy.root();
  // A checkout's .git with a branch ref, as git leaves it (the commit is read back as written).
  fs::create_directories(root / ".git/refs/heads");
  std::ofstream(root / ".git/HEAD") << "ref: refs/heads/master\n";
  std::ofstream(root / ".git/refs/heads/master") << "0123456789abcdef0123456789abcdef01234567\n";
  const engine::Tree t = engine::find_tree(root);
  EXPECT_EQ(t.kind, engine::TreeKind::LlamaCpp);
  EXPECT_EQ(t.ggml_root, root / "ggml");
  EXPECT_EQ(t.commit, "0123456789abcdef0123456789abcdef01234567");
  // Its ggml/ given alone is at the checkout's commit too.
  EXPECT_EQ(engine::find_tree(root / "ggml").commit, t.commit);
  // A tree without a .git of its own, copied into another repository's folder, is at no commit
  // (not at that repository's: the H100 run named Temper's own commit for a copied tree).
  fs::rename(root / ".git", root.parent_path() / ".git");
  EXPECT_EQ(engine::find_tree(root).commit, "");
  fs::rename(root.parent_path() / ".git", root / ".git");
  engine::patch(root, engine::kernel_set("ci"));
  EXPECT_TRUE(fs::exists(root / "ggml/src/ggml-cuda/temper-mmvq.cuh"));
  engine::undo(root);
  EXPECT_FALSE(fs::exists(root / "ggml/src/ggml-cuda/temper-mmvq.cuh"));
}

TEST(Hook, RefusesAFolderWithoutGgml) {
  const fs::path dir = fs::temp_directory_path() / ("temper-hook-empty-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  try {
    engine::find_tree(dir);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("neither a ggml tree"), std::string::npos);
  }
  fs::remove_all(dir);
}

TEST(Hook, AKernelSetOfTypesBuildsJustThoseAtEveryNcols) {
  const engine::KernelSet s = engine::kernel_set("q4_K,Q6_K,q4_K");
  EXPECT_EQ(s.types, (std::vector<std::string>{"Q4_K", "Q6_K"}));
  EXPECT_EQ(s.ncols_of("Q6_K").size(), 8u);
  EXPECT_TRUE(s.ncols_of("Q4_0").empty());
  for (const char* bad : {"q4_K,", "q4_K,q9_Z", "f32"}) EXPECT_THROW(engine::kernel_set(bad), Error) << bad;
}

TEST(Hook, KernelSetNamesAreChecked) {
  EXPECT_EQ(engine::kernel_set("ci").ncols, std::vector<int>{1});
  EXPECT_EQ(engine::kernel_set("full").ncols_of("Q6_K"), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(engine::kernel_set("full").ncols_of("IQ3_S"), std::vector<int>{1});
  EXPECT_EQ(engine::kernel_set("all").ncols_of("IQ3_S").size(), 8u);
  EXPECT_TRUE(engine::kernel_set("ci").ncols_of("Q6_K").empty());
  EXPECT_EQ(engine::kernel_set("ncols1").ncols_of("Q6_K"), std::vector<int>{1});
  EXPECT_TRUE(engine::kernel_set("ncols1").ncols_of("IQ3_S").empty());
  try {
    engine::kernel_set("most");
    ADD_FAILURE() << "an unknown set was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected full|all|ncols1|ci"), std::string::npos) << e.what();
  }
}

// A tree patched by hook v1 (no hash in its manifest; its "full" set was today's "all") still undoes.
TEST(Hook, UndoesATreePatchedByHookV1) {
  COPY_OR_SKIP(copy, "ggml-d99724f");
  const fs::path& tree = copy.root();
  const fs::path cuda = tree / "src/ggml-cuda";
  const std::string before = snapshot(cuda);
  const std::string original = read_file(cuda / "mmvq.cu");
  const engine::Patch v1 = engine::make_patch(original, engine::kernel_set("all"), 1);
  fs::create_directories(cuda / ".temper-hook");
  write_file_atomic(cuda / ".temper-hook/mmvq.cu.orig", original);
  std::string manifest = "set=full\n";
  for (const auto& [name, content] : v1.files) {
    write_file_atomic(cuda / name, content);
    manifest += name + "\n";
  }
  write_file_atomic(cuda / ".temper-hook/manifest.txt", manifest);
  write_file_atomic(cuda / "mmvq.cu", v1.mmvq);
  EXPECT_EQ(engine::check(tree).patched_version, 1);
  engine::undo(tree);
  EXPECT_EQ(snapshot(cuda), before);
}

// ---- hook v4: ggml's mmvq/mmq decisions, on Temper's own stand-in mmvq.cu files (CI has no upstream) ----

const fs::path kFixtures = fs::path(TEMPER_SOURCE_DIR) / "tests/engine/fixtures";

std::string generated(const engine::Patch& p, const std::string& name) {
  for (const auto& [n, content] : p.files)
    if (n == name) return content;
  ADD_FAILURE() << name << " not generated";
  return {};
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
  return n;
}

TEST(HookPaths, WrapsBothDecisionsWhereMmvqCuDefinesThem) {
  const engine::Patch p = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(p.path_hooks, engine::kPathHookMulMat | engine::kPathHookMulMatId);
  // ggml's functions keep their names as Temper's wrappers; their bodies run renamed, unchanged.
  EXPECT_NE(p.mmvq.find("static bool temper_stock_should_use_mmvq(enum ggml_type type, int cc, int64_t ne11);\n\n"
                        "// Temper's tuning hook: the profile's or the probe's mmvq/mmq choice, else ggml's own (renamed below).\n"
                        "bool ggml_cuda_should_use_mmvq(enum ggml_type type, int cc, int64_t ne11) {\n"
                        "    return temper_mmvq_use_mmvq((int) type, (long long) ne11, temper_stock_should_use_mmvq(type, cc, ne11));\n"
                        "}\n\n"
                        "static bool temper_stock_should_use_mmvq(enum ggml_type type, int cc, int64_t ne11) {\n"
                        "    return ggml_is_quantized(type) && cc >= 0 && ne11 <= 8;  // placeholder policy\n}\n"),
            std::string::npos)
      << p.mmvq;
  EXPECT_NE(p.mmvq.find("static int temper_stock_mmvq_mmid_max_batch(ggml_type type, int cc);\n\n"
                        "// Temper's tuning hook: the profile's or the probe's mmvq/mmq choice, else ggml's own (renamed below).\n"
                        "int get_mmvq_mmid_max_batch(ggml_type type, int cc) {\n"
                        "    return temper_mmvq_mmid_max_batch((int) type, temper_stock_mmvq_mmid_max_batch(type, cc));\n"
                        "}\n\n"
                        "static int temper_stock_mmvq_mmid_max_batch(ggml_type type, int cc) {\n"
                        "    return type == GGML_TYPE_Q4_K && cc < 0 ? 4 : 8;  // placeholder policy\n}\n"),
            std::string::npos);
  EXPECT_EQ(count(p.mmvq, "bool ggml_cuda_should_use_mmvq("), 1u);
  EXPECT_EQ(count(p.mmvq, "int get_mmvq_mmid_max_batch("), 1u);
  // The wrappers precede the kernels-only cut, so the instantiation units hold them renamed (no
  // second definition of ggml's symbols in the library).
  EXPECT_LT(p.mmvq.find("temper_mmvq_use_mmvq"), p.mmvq.find("#ifndef TEMPER_MMVQ_KERNELS_ONLY"));
  const std::string unit = generated(p, "temper-mmvq-q4_k-1.cu");
  EXPECT_NE(unit.find("#define ggml_cuda_should_use_mmvq temper_unused_ggml_cuda_should_use_mmvq_q4_k_1\n"), std::string::npos);
  EXPECT_NE(unit.find("#define get_mmvq_mmid_max_batch temper_unused_get_mmvq_mmid_max_batch_q4_k_1\n"), std::string::npos);
  // The header says what was wrapped; the run time declares what the wrappers call.
  const std::string header = generated(p, "temper-mmvq.cuh");
  EXPECT_NE(header.find("#define TEMPER_MMVQ_PATH_HOOKS 3\n"), std::string::npos);
  EXPECT_NE(header.find("bool temper_mmvq_use_mmvq(int type, long long ne11, bool stock);"), std::string::npos);
  EXPECT_NE(header.find("int temper_mmvq_mmid_max_batch(int type, int stock_cap);"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-runtime.cu").find("bool temper_mmvq_use_mmvq(int type, long long ne11, bool stock) {"),
            std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-api.h").find("void temper_mmvq_set_path_override(int launch, int type, int ncols, int path);"),
            std::string::npos);
}

TEST(HookPaths, ATreeWithoutMulMatsDecisionWrapsTheMoeCapOnly) {
  const engine::Patch p = engine::make_patch(read_file(kFixtures / "mmvq-paths-7180759.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(p.path_hooks, engine::kPathHookMulMatId);
  EXPECT_FALSE(p.halve_iters);
  EXPECT_EQ(p.mmvq.find("temper_mmvq_use_mmvq"), std::string::npos);
  EXPECT_NE(p.mmvq.find("    return temper_mmvq_mmid_max_batch((int) type, temper_stock_mmvq_mmid_max_batch(type, cc));\n"),
            std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_PATH_HOOKS 2\n"), std::string::npos);
  // Neither function: nothing wrapped, the rest of the hook as before.
  std::string neither = read_file(kFixtures / "mmvq-paths-7180759.cu");
  const size_t at = neither.find("int get_mmvq_mmid_max_batch(");
  neither.erase(at, neither.find("}\n", at) + 2 - at);
  const engine::Patch bare = engine::make_patch(neither, engine::kernel_set("ci"));
  EXPECT_EQ(bare.path_hooks, 0);
  EXPECT_NE(generated(bare, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_PATH_HOOKS 0\n"), std::string::npos);
}

TEST(HookPaths, ATwiceDefinedDecisionIsRefusedAndAnOlderHookWrapsNothing) {
  const std::string source = read_file(kFixtures / "mmvq-paths.cu");
  const std::string def = "bool ggml_cuda_should_use_mmvq(enum ggml_type type, int cc, int64_t ne11) {\n";
  std::string twice = source;
  twice.insert(twice.find(def), def + "    return false;\n}\n\n");
  try {
    engine::make_patch(twice, engine::kernel_set("ci"));
    ADD_FAILURE() << "patched a file with two definitions";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("bool ggml_cuda_should_use_mmvq(enum ggml_type type, int cc, int64_t ne11) (found more than once)"),
              std::string::npos)
        << e.what();
  }
  // What hook v3 wrote (undo regenerates an older patch to recognise it): no wrapper.
  const engine::Patch v3 = engine::make_patch(source, engine::kernel_set("ci"), 3);
  EXPECT_EQ(v3.path_hooks, 0);
  EXPECT_EQ(v3.mmvq.find("temper_stock_"), std::string::npos);
}

// engine build's private copy of a tree an older hook patched: today's probe calls what hook v3's
// run time lacks, so the copy starts from the original v3 kept and is patched again; the user's
// tree is not touched. A tree of this hook is copied as it is.
TEST(HookPaths, ABuildOfATreeAnOlderHookPatchedGetsThisHook) {
  const fs::path root = fs::temp_directory_path() / ("temper-hook-copy-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path tree = root / "tree", cuda = tree / "src/ggml-cuda";
  fs::create_directories(cuda / ".temper-hook");
  const std::string original = read_file(kFixtures / "mmvq-paths.cu");
  const engine::Patch v3 = engine::make_patch(original, engine::kernel_set("ci"), 3);
  for (const auto& [name, content] : v3.files) write_file_atomic(cuda / name, content);
  write_file_atomic(cuda / "temper-mmvq-q6_k-1.cu", "// a unit of v3's set this set does not have\n");
  write_file_atomic(cuda / ".temper-hook/mmvq.cu.orig", original);
  write_file_atomic(cuda / "mmvq.cu", v3.mmvq);
  const std::string before = snapshot(cuda);
  engine::hooked_copy(engine::find_tree(tree), root / "copy", engine::kernel_set("ci"));
  const fs::path copy = root / "copy/src/ggml-cuda";
  EXPECT_EQ(read_file(copy / "mmvq.cu").rfind("// temper-hook v" + std::to_string(engine::kHookVersion), 0), 0u);
  EXPECT_NE(read_file(copy / "mmvq.cu").find("temper_mmvq_use_mmvq"), std::string::npos);
  EXPECT_NE(read_file(copy / "temper-mmvq.cuh").find("#define TEMPER_MMVQ_PATH_HOOKS 3\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(copy / "temper-mmvq-q6_k-1.cu"));
  EXPECT_EQ(snapshot(cuda), before);
  // This hook's tree: as it is.
  fs::remove_all(root / "copy");
  const engine::Patch v4 = engine::make_patch(original, engine::kernel_set("ci"));
  write_file_atomic(cuda / "mmvq.cu", v4.mmvq);
  engine::hooked_copy(engine::find_tree(tree), root / "copy", engine::kernel_set("ci"));
  EXPECT_EQ(read_file(copy / "mmvq.cu"), v4.mmvq);
  EXPECT_TRUE(fs::exists(copy / "temper-mmvq-q6_k-1.cu"));
  // An older hook's tree without its original: one line, what to do.
  fs::remove_all(root / "copy");
  write_file_atomic(cuda / "mmvq.cu", v3.mmvq);
  fs::remove(cuda / ".temper-hook/mmvq.cu.orig");
  try {
    engine::hooked_copy(engine::find_tree(tree), root / "copy", engine::kernel_set("ci"));
    ADD_FAILURE() << "copied a v3 tree without its original";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("patched by hook v3 and its original"), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}

// Patched and undone in place on a tree made of the stand-in: byte for byte.
TEST(HookPaths, PatchAndUndoOnTheStandInTree) {
  const fs::path tree = fs::temp_directory_path() / ("temper-hook-paths-" + std::to_string(::getpid()));
  fs::remove_all(tree);
  fs::create_directories(tree / "src/ggml-cuda");
  const std::string original = read_file(kFixtures / "mmvq-paths.cu");
  write_file_atomic(tree / "src/ggml-cuda/mmvq.cu", original);
  engine::patch(tree, engine::kernel_set("ci"));
  EXPECT_NE(read_file(tree / "src/ggml-cuda/mmvq.cu").find("temper_mmvq_use_mmvq"), std::string::npos);
  EXPECT_NE(read_file(tree / "src/ggml-cuda/temper-mmvq.cuh").find("#define TEMPER_MMVQ_PATH_HOOKS 3\n"), std::string::npos);
  engine::undo(tree);
  EXPECT_EQ(read_file(tree / "src/ggml-cuda/mmvq.cu"), original);
  EXPECT_EQ(std::distance(fs::directory_iterator(tree / "src/ggml-cuda"), fs::directory_iterator()), 1);
  fs::remove_all(tree);
}


// ---- hook v5: same-input groups, on Temper's stand-in ggml-cuda.cu (the three anchor lines only) ----

// The stand-in mmvq.cu with Q6_K added to its dispatch, so a k-quant pair can be compiled.
std::string mmvq_with_q6_k() {
  std::string s = read_file(kFixtures / "mmvq-paths.cu");
  const std::string q4k = "        case GGML_TYPE_Q4_K: return vec_dot_q4_K_q8_1;\n";
  s.insert(s.find(q4k) + q4k.size(), "        case GGML_TYPE_Q6_K: return vec_dot_q6_K_q8_1;\n");
  return s;
}

// p.cuda without the hook's insertions.
std::string without_group_hook(std::string t) {
  static const std::regex launch(
      R"(                if \(const int temper_run = temper_mmvq_try_group[^\n]*\n                    i \+= temper_run - 1;\n                    continue;\n                \}\n)");
  static const std::regex line(R"([^\n]*temper_mmvq_group_order[^\n]*\n|#include "ggml-cuda/temper-mmvq-group.h"[^\n]*\n)");
  return std::regex_replace(std::regex_replace(t, launch, ""), line, "");
}

TEST(HookGroups, PatchesGgmlCudasThreePlacesAndCompilesTheGroupUnits) {
  const std::string cuda = read_file(kFixtures / "ggml-cuda-groups.cu");
  const engine::Patch p = engine::make_patch(mmvq_with_q6_k(), engine::kernel_set("q4_K,q6_K"), engine::kHookVersion, &cuda);
  EXPECT_EQ(p.group_hooks, engine::kGroupHookEvaluate | engine::kGroupHookOrder);
  EXPECT_EQ(p.group_problem, "");
  EXPECT_NE(p.cuda.find("#include \"ggml-cuda/common.cuh\"\n#include \"ggml-cuda/temper-mmvq-group.h\""), std::string::npos);
  EXPECT_NE(p.cuda.find("ggml_cgraph * cgraph) {\n    temper_mmvq_group_order(((ggml_backend_cuda_context *) backend->context)->device, cgraph);"),
            std::string::npos);
  // The group launch comes right before ggml's compute_forward and skips the run's other nodes.
  const size_t group = p.cuda.find("if (const int temper_run = temper_mmvq_try_group(*cuda_ctx, cgraph, i); temper_run > 0)");
  ASSERT_NE(group, std::string::npos);
  EXPECT_NE(p.cuda.find("i += temper_run - 1;\n                    continue;\n                }\n                bool ok = ggml_cuda_compute_forward", group),
            std::string::npos);
  EXPECT_EQ(without_group_hook(p.cuda), cuda);  // nothing else changed
  // A unit per type and one for the k-quant pair, at batch widths 1..4 only; the registry calls them.
  const std::string pair = generated(p, "temper-mmvq-group-q4_k-q6_k.cu");
  EXPECT_NE(pair.find("#include \"mmvq.cu\"\n#include \"temper-mmvq-group.cuh\""), std::string::npos);
  for (int nc = 1; nc <= 4; ++nc)
    EXPECT_NE(pair.find("temper_mmvq_group_register_width<GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, " + std::to_string(nc) + ">();"),
              std::string::npos);
  EXPECT_EQ(pair.find(", 5>();"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-group-q4_k.cu").find("<GGML_TYPE_Q4_K, GGML_TYPE_Q4_K, 4>"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-group-q6_k.cu").find("<GGML_TYPE_Q6_K, GGML_TYPE_Q6_K, 1>"), std::string::npos);
  for (const auto& [name, _] : p.files) EXPECT_EQ(name.find("group-q4_0"), std::string::npos) << name;  // Q4_0 is not in this set
  const std::string registry = generated(p, "temper-mmvq-registry.cu");
  for (const char* f : {"temper_mmvq_register_group_q4_k();", "temper_mmvq_register_group_q6_k();", "temper_mmvq_register_group_q4_k_q6_k();"})
    EXPECT_NE(registry.find(std::string("    ") + f), std::string::npos) << f;
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_GROUP_HOOKS 3\n"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-group.cuh").find("temper_mmvq_group_register_width"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-group.h").find("int temper_mmvq_try_group(ggml_backend_cuda_context & ctx, ggml_cgraph * cgraph, int i);"),
            std::string::npos);
  // The ci set (ncols 1): the uniform units at one column, no pair.
  const engine::Patch ci = engine::make_patch(mmvq_with_q6_k(), engine::kernel_set("ci"), engine::kHookVersion, &cuda);
  const std::string q4k = generated(ci, "temper-mmvq-group-q4_k.cu");
  EXPECT_NE(q4k.find("<GGML_TYPE_Q4_K, GGML_TYPE_Q4_K, 1>"), std::string::npos);
  EXPECT_EQ(q4k.find("<GGML_TYPE_Q4_K, GGML_TYPE_Q4_K, 2>"), std::string::npos);
  for (const auto& [name, _] : ci.files) EXPECT_EQ(name.find("q4_k-q6_k"), std::string::npos) << name;
}

TEST(HookGroups, AMissingPlaceLeavesGgmlCudaAloneAndSaysWhich) {
  const std::string cuda = read_file(kFixtures / "ggml-cuda-groups.cu");
  const std::string anchor = "                bool ok = ggml_cuda_compute_forward(*cuda_ctx, node);\n";
  for (const std::string& broken : {std::string(cuda).replace(cuda.find(anchor), anchor.size(), "                bool ok = true;\n"),
                                    cuda + "\nstatic void ggml_backend_cuda_graph_optimize(ggml_backend_t backend, ggml_cgraph * cgraph) {\n}\n"}) {
    const engine::Patch p = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"), engine::kHookVersion, &broken);
    EXPECT_EQ(p.group_hooks, 0);
    EXPECT_EQ(p.cuda, "");
    EXPECT_NE(p.group_problem.find("ggml-cuda.cu: "), std::string::npos);
    EXPECT_NE(p.group_problem.find("(the rest of the hook applies)"), std::string::npos) << p.group_problem;
    EXPECT_NE(p.mmvq.find("temper_mmvq_try_launch"), std::string::npos);  // the rest of the hook is there
    EXPECT_NE(generated(p, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_GROUP_HOOKS 0\n"), std::string::npos);
    for (const auto& [name, _] : p.files) EXPECT_EQ(name.find("temper-mmvq-group-"), std::string::npos) << name;
  }
  const std::string carrying = cuda + "#include \"ggml-cuda/temper-mmvq-group.h\"\n";
  EXPECT_NE(engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"), engine::kHookVersion, &carrying)
                .group_problem.find("carries Temper's group hook already"),
            std::string::npos);
  // An older hook (what undo regenerates) never touched ggml-cuda.cu.
  const engine::Patch v4 = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"), 4, &cuda);
  EXPECT_EQ(v4.group_hooks, 0);
  EXPECT_EQ(v4.cuda, "");
}

// In place on a stand-in tree with both files: patch, check, undo byte for byte; an undo stopped
// between the two files finishes; a ggml-cuda.cu edited since is the user's and stops undo.
TEST(HookGroups, PatchAndUndoBothFilesInPlace) {
  const fs::path tree = fs::temp_directory_path() / ("temper-hook-groups-" + std::to_string(::getpid()));
  fs::remove_all(tree);
  const fs::path dir = tree / "src/ggml-cuda";
  fs::create_directories(dir);
  const std::string mmvq = read_file(kFixtures / "mmvq-paths.cu"), cuda = read_file(kFixtures / "ggml-cuda-groups.cu");
  write_file_atomic(dir / "mmvq.cu", mmvq);
  write_file_atomic(dir / "ggml-cuda.cu", cuda);
  engine::CheckReport c = engine::check(tree);
  EXPECT_EQ(c.group_hooks, engine::kGroupHookEvaluate | engine::kGroupHookOrder) << c.group_problem;
  EXPECT_EQ(engine::patch(tree, engine::kernel_set("ci")), engine::kGroupHookEvaluate | engine::kGroupHookOrder);
  const std::string patched_cuda = read_file(dir / "ggml-cuda.cu");
  EXPECT_NE(patched_cuda.find("temper_mmvq_try_group"), std::string::npos);
  EXPECT_EQ(read_file(dir / ".temper-hook/ggml-cuda.cu.orig"), cuda);
  EXPECT_NE(read_file(dir / ".temper-hook/manifest.txt").find("\ncuda_orig="), std::string::npos);
  c = engine::check(tree);
  EXPECT_EQ(c.state, engine::HookState::Patched);
  EXPECT_EQ(c.group_hooks, engine::kGroupHookEvaluate | engine::kGroupHookOrder);
  EXPECT_TRUE(c.undoable) << c.undo_problem;

  // Edited since: undo refuses and changes nothing.
  write_file_atomic(dir / "ggml-cuda.cu", patched_cuda + "// the user's line\n");
  const std::string before = snapshot(dir);
  try {
    engine::undo(tree);
    ADD_FAILURE() << "undid over the user's edit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("ggml-cuda.cu: changed since Temper patched it"), std::string::npos) << e.what();
  }
  EXPECT_EQ(snapshot(dir), before);
  write_file_atomic(dir / "ggml-cuda.cu", patched_cuda);

  engine::undo(tree);
  EXPECT_EQ(read_file(dir / "mmvq.cu"), mmvq);
  EXPECT_EQ(read_file(dir / "ggml-cuda.cu"), cuda);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);

  // Stopped after ggml-cuda.cu was restored, before mmvq.cu: the next undo finishes.
  engine::patch(tree, engine::kernel_set("ci"));
  write_file_atomic(dir / "ggml-cuda.cu", cuda);
  engine::undo(tree);
  EXPECT_EQ(read_file(dir / "mmvq.cu"), mmvq);
  EXPECT_EQ(read_file(dir / "ggml-cuda.cu"), cuda);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
  fs::remove_all(tree);
}

}  // namespace

// ---- hook v6: pipelined launches, on Temper's stand-in mmvq.cu ----

TEST(HookPipeline, ATreeWhoseKernelWaitsForItsPredecessorGetsPipelinedOneColumnInstantiations) {
  const engine::Patch p = engine::make_patch(mmvq_with_q6_k(), engine::kernel_set("q4_K,q6_K"));
  EXPECT_EQ(p.pipeline_hooks, 1);
  // The kernel and its launch helper take temper_pipe after the config (default 0: stock unchanged) ...
  EXPECT_NE(p.mmvq.find(", int temper_nwarps = 0, int temper_rows = 0, int temper_pipe = 0>\n__launch_bounds__("), std::string::npos);
  EXPECT_NE(p.mmvq.find(", int temper_nwarps = 0, int temper_rows = 0, int temper_pipe = 0>\nstatic void mul_mat_vec_q_switch_fusion("),
            std::string::npos);
  EXPECT_EQ(count(p.mmvq, "small_k, halve_iters, temper_nwarps, temper_rows, temper_pipe>"), 2u);
  // ... and the pipeline step comes right before the wait for the previous kernel, once.
  EXPECT_EQ(count(p.mmvq, "temper_mmvq_pipeline<type, temper_pipe, has_fusion>("), 1u);
  EXPECT_NE(p.mmvq.find("stride_channel_x, sample_ratio, stride_sample_x);\n    ggml_cuda_pdl_sync();\n    channel_x  = "),
            std::string::npos);
  // Each type's unit gives its block bytes and registers every config plain, and pipelined (both
  // bits, NVIDIA only) at one column only.
  const std::string q6k = generated(p, "temper-mmvq-q6_k-1.cu");
  EXPECT_NE(q6k.find("template <> struct temper_block_bytes<GGML_TYPE_Q6_K> { static constexpr int value = sizeof(block_q6_K); };"),
            std::string::npos);
  EXPECT_NE(q6k.find("    temper_mmvq_register(GGML_TYPE_Q6_K, 1, 4, 2, &launch<1, 4, 2>, &attributes<1, 4, 2>);\n"
                     "#if !defined(GGML_USE_HIP)\n    temper_mmvq_register_pipelined(GGML_TYPE_Q6_K, 1, 4, 2, 3, &launch<1, 4, 2, 3>, "
                     "&attributes<1, 4, 2>);\n#endif\n"),
            std::string::npos);
  EXPECT_EQ(count(q6k, "temper_mmvq_register_pipelined("), count(q6k, "temper_mmvq_register(GGML_TYPE_Q6_K, 1,"));
  EXPECT_NE(q6k.find("template <int C, int W, int R, int P = 0>\nvoid launch("), std::string::npos);
  const std::string q4k_wide = generated(p, "temper-mmvq-q4_k-2-4.cu");
  EXPECT_NE(q4k_wide.find("temper_mmvq_register(GGML_TYPE_Q4_K, 2, "), std::string::npos);
  EXPECT_EQ(q4k_wide.find("temper_mmvq_register_pipelined("), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_PIPELINE_HOOKS 1\n"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-api.h").find("void temper_mmvq_set_pipeline_override(int on);"), std::string::npos);
}

TEST(HookPipeline, AKernelWithoutTheWaitAndAnOlderHookLeaveTheKernelAsBefore) {
  // 7180759's kernel has no wait for its predecessor: nothing to pipeline.
  const engine::Patch old_tree = engine::make_patch(read_file(kFixtures / "mmvq-paths-7180759.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(old_tree.pipeline_hooks, 0);
  EXPECT_EQ(old_tree.mmvq.find("temper_pipe"), std::string::npos);
  EXPECT_NE(generated(old_tree, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_PIPELINE_HOOKS 0\n"), std::string::npos);
  EXPECT_EQ(generated(old_tree, "temper-mmvq-q4_k-1.cu").find("temper_mmvq_register_pipelined"), std::string::npos);
  // Hook v5's patch of a tree that has the wait (what `engine check` recognises of an older Temper) is v5's.
  const engine::Patch v5 = engine::make_patch(mmvq_with_q6_k(), engine::kernel_set("q4_K,q6_K"), 5);
  EXPECT_EQ(v5.pipeline_hooks, 0);
  EXPECT_EQ(v5.mmvq.find("temper_pipe"), std::string::npos);
  EXPECT_EQ(v5.mmvq.find("temper_mmvq_pipeline"), std::string::npos);
}

// Hook v8: in the ggml-halve-iters family the graph evaluation may run a norm that writes its GEMVs' q8_1
// activations (before ggml's own fusions) and mmvq's launcher reads that copy; 7180759 has neither place.
TEST_P(HookOn, TheNormWritesItsGemvsActivationsInTheHalveItersFamilyOnly) {
  std::string why;
  const fs::path tree = test::upstream_tree(GetParam(), &why);  // read only: no copy
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const fs::path dir = tree / cuda_part(GetParam());
  const std::string mmvq = read_file(dir / "mmvq.cu"), cuda = read_file(dir / "ggml-cuda.cu");
  const engine::Patch p = engine::make_patch(mmvq, engine::kernel_set("ci"), engine::kHookVersion, &cuda);
  const bool family = GetParam() != "ggml-7180759";
  EXPECT_EQ(p.norm_hooks, family ? engine::kNormHookEvaluate | engine::kNormHookRead : 0);
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find(family ? "#define TEMPER_MMVQ_NORM_HOOKS 3\n" : "#define TEMPER_MMVQ_NORM_HOOKS 0\n"),
            std::string::npos);
  EXPECT_EQ(count(p.mmvq, "temper_norm_q8"), family ? 4u : 0u);  // declared, guarding the quantizer, passed on (twice)
  EXPECT_EQ(count(p.cuda, "temper_mmvq_try_norm(*cuda_ctx, cgraph, i)"), family ? 1u : 0u);
  if (family)
    EXPECT_LT(p.cuda.find("temper_mmvq_try_norm("), p.cuda.find("int nodes_to_skip = ggml_cuda_try_fuse(cuda_ctx, cgraph, i);"));
  EXPECT_GT(p.group_hooks, 0);  // groups keep their places either way
  // What hook v7 wrote has none of it.
  const engine::Patch v7 = engine::make_patch(mmvq, engine::kernel_set("ci"), 7, &cuda);
  EXPECT_EQ(v7.norm_hooks, 0);
  EXPECT_EQ(v7.mmvq.find("temper_norm_q8"), std::string::npos);
  EXPECT_EQ(v7.cuda.find("temper_mmvq_try_norm"), std::string::npos);
}

TEST(HookNorm, AnMmvqWithoutTheQuantizersPlaceLeavesTheNormOut) {
  // Temper's stand-in mmvq.cu has no src1_q8_1 quantization in a launcher: the structure is not patched in.
  const engine::Patch p = engine::make_patch(mmvq_with_q6_k(), engine::kernel_set("q4_K,q6_K"));
  EXPECT_EQ(p.norm_hooks, 0);
  EXPECT_EQ(p.mmvq.find("temper_norm_q8"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find("#define TEMPER_MMVQ_NORM_HOOKS 0\n"), std::string::npos);
}

TEST(HookPipeline, BlockStructsAreGgmlsNames) {
  const engine::Patch p = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"));
  EXPECT_NE(generated(p, "temper-mmvq-q4_0-1.cu").find("sizeof(block_q4_0)"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq-q4_k-1.cu").find("sizeof(block_q4_K)"), std::string::npos);
}

// Hook v13: a tuned fused launch tests its gate once. The edit goes before mul_mat_vec_q's k loop, keeps
// that loop for stock instantiations (the `else` branch), and is absent from what v12 wrote and from a
// tree whose loop reads otherwise.
TEST(HookGateOnce, TheTunedFusedLoopGoesBeforeTheStockOne) {
  const engine::Patch p = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"));
  const std::string loop = "    for (int kbx = tid / (qi/vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {\n"
                           "        const int kby = kbx * (qk/QK8_1); // y block index that aligns with kbx\n";
  const size_t gate = p.mmvq.find("    if constexpr (has_fusion && temper_nwarps > 0 && temper_mmvq_gate_once) {\n        if (use_gate) {\n");
  ASSERT_NE(gate, std::string::npos) << p.mmvq;
  EXPECT_EQ(count(p.mmvq, loop), 1u);
  EXPECT_NE(p.mmvq.find("    } else\n" + loop), std::string::npos);
  EXPECT_LT(gate, p.mmvq.find("    } else\n" + loop));
  EXPECT_EQ(count(p.mmvq, "tmp_gate[j][i] += vec_dot_q_cuda(vgate,"), 1u);  // the gate's loop only
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find("constexpr bool temper_mmvq_gate_once = true;"), std::string::npos);
  const engine::Patch v12 = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"), 12);
  EXPECT_EQ(v12.mmvq.find("temper_mmvq_gate_once"), std::string::npos);
  EXPECT_EQ(count(v12.mmvq, loop), 1u);
  const engine::Patch other = engine::make_patch(read_file(kFixtures / "mmvq-paths-7180759.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(other.mmvq.find("temper_mmvq_gate_once"), std::string::npos);
}

TEST_P(HookOn, BothFamiliesTestTheGateOnceAndThePipelinedOneHasBiasOnlyTwins) {
  std::string why;
  const fs::path tree = test::upstream_tree(GetParam(), &why);  // read only: no copy
  if (tree.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  const engine::Patch p = engine::make_patch(read_file(tree / cuda_part(GetParam()) / "mmvq.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(count(p.mmvq, "if constexpr (has_fusion && temper_nwarps > 0 && temper_mmvq_gate_once) {"), 1u);
  EXPECT_EQ(count(p.mmvq, "    } else\n    for (int kbx = tid / (qi/vdr); kbx < blocks_per_row_x; kbx += blocks_per_iter) {\n"), 1u);
  // Hook v14's bias-only twins where the kernel can be pipelined (not 7180759's).
  const bool pipelined = GetParam() != "ggml-7180759";
  EXPECT_EQ(count(p.mmvq, "(temper_pipe & 4) == 0 && fusion.gate != nullptr;"), pipelined ? 1u : 0u);
  EXPECT_EQ(generated(p, "temper-mmvq-q4_k-1.cu").find("temper_mmvq_register_bias_only(") != std::string::npos, pipelined);
}

// Hook v14: a pipelined kernel's temper_pipe bit 4 compiles it without its gate, and each one-column
// config's unit registers that bias-only twin, plain and pipelined, for NVIDIA. Neither where the kernel
// cannot be pipelined, nor in what v13 wrote.
TEST(HookBiasOnly, TheUnitsRegisterEachOneColumnConfigsTwinWhereTheKernelTakesBit4) {
  const engine::Patch p = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(count(p.mmvq, "        use_gate      = (temper_pipe & 4) == 0 && fusion.gate != nullptr;"), 1u) << p.mmvq;
  const std::string q4k = generated(p, "temper-mmvq-q4_k-1.cu");
  EXPECT_NE(q4k.find("#if !defined(GGML_USE_HIP)\n"
                     "    temper_mmvq_register_bias_only(GGML_TYPE_Q4_K, 8, 4, 0, &launch_bias<8, 4, 0>);\n"
                     "    temper_mmvq_register_bias_only(GGML_TYPE_Q4_K, 8, 4, 3, &launch_bias<8, 4, 3>);\n#endif\n"),
            std::string::npos)
      << q4k;
  EXPECT_EQ(count(q4k, "temper_mmvq_register_bias_only("), 2 * count(q4k, "temper_mmvq_register(GGML_TYPE_Q4_K, 1,"));
  EXPECT_NE(q4k.find("mul_mat_vec_q<GGML_TYPE_Q4_K, 1, true, false, false, W, R, P | 4>,"), std::string::npos);
  // Wider batches have no fusion: no twins there.
  const engine::Patch wide = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("q4_K"));
  EXPECT_EQ(generated(wide, "temper-mmvq-q4_k-2-4.cu").find("register_bias_only"), std::string::npos);
  EXPECT_NE(generated(p, "temper-mmvq.cuh").find("void temper_mmvq_register_bias_only(int type, int nwarps, int rows, int pipe,"),
            std::string::npos);
  const engine::Patch v13 = engine::make_patch(read_file(kFixtures / "mmvq-paths.cu"), engine::kernel_set("ci"), 13);
  EXPECT_EQ(v13.mmvq.find("temper_pipe & 4"), std::string::npos);
  EXPECT_EQ(generated(v13, "temper-mmvq-q4_k-1.cu").find("register_bias_only"), std::string::npos);
  const engine::Patch old_tree = engine::make_patch(read_file(kFixtures / "mmvq-paths-7180759.cu"), engine::kernel_set("ci"));
  EXPECT_EQ(generated(old_tree, "temper-mmvq-q4_k-1.cu").find("register_bias_only"), std::string::npos);
}
