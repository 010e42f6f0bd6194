// Decode shapes from real model layouts: known answers computed by hand from the dims and types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "fixtures/fixtures.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/model.h"

namespace temper {
namespace {

namespace fx = fixtures;
using V = GgufWriter::Value;

const Shape* find_shape(const Model& m, GgmlType type, int64_t n, int64_t k) {
  for (const Shape& s : m.shapes)
    if (s.type == type && s.n == n && s.k == k) return &s;
  return nullptr;
}

void expect_shape(const Model& m, GgmlType type, int64_t n, int64_t k, int64_t calls, uint64_t bytes) {
  const Shape* s = find_shape(m, type, n, k);
  ASSERT_TRUE(s) << type_name(type) << " " << n << "x" << k;
  EXPECT_EQ(s->calls_per_token, calls) << type_name(type) << " " << n << "x" << k;
  EXPECT_EQ(s->bytes_per_token, bytes) << type_name(type) << " " << n << "x" << k;
  EXPECT_FALSE(s->tensors.empty());
}

bool has_note(const Model& m, std::string_view fragment) {
  return std::any_of(m.notes.begin(), m.notes.end(), [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

Model describe(const GgufWriter& w) { return describe_model(GgufFile::from_bytes(w.image(), "synthetic.gguf")); }

TEST(Shapes, Llama3_8B_Q4_K_M) {
  const Model m = open_model(fx::path(fx::Fixture::Llama3_8B_Q4_K_M));
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_TRUE(m.known_architecture);
  EXPECT_EQ(m.layers, 32u);
  EXPECT_EQ(m.experts, 0u);
  EXPECT_EQ(m.parameters, 8'030'261'248u);  // Meta-Llama-3-8B's parameter count
  ASSERT_EQ(m.shapes.size(), 7u);
  // Row bytes: q4_K 144 per 256 values, q6_K 210 per 256.
  expect_shape(m, GgmlType::Q4_K, 14336, 4096, 64, 64ull * 14336 * 2304);  // ffn_gate + ffn_up
  expect_shape(m, GgmlType::Q6_K, 4096, 14336, 16, 16ull * 4096 * 11760);  // ffn_down, use_more_bits layers
  expect_shape(m, GgmlType::Q4_K, 4096, 4096, 64, 64ull * 4096 * 2304);    // attn_q + attn_output
  expect_shape(m, GgmlType::Q4_K, 4096, 14336, 16, 16ull * 4096 * 8064);   // the other ffn_down
  expect_shape(m, GgmlType::Q6_K, 128256, 4096, 1, 128256ull * 3360);      // output head
  expect_shape(m, GgmlType::Q4_K, 1024, 4096, 48, 48ull * 1024 * 2304);    // attn_k + 16 attn_v
  expect_shape(m, GgmlType::Q6_K, 1024, 4096, 16, 16ull * 1024 * 3360);    // the other attn_v
  EXPECT_EQ(m.bytes_per_token, 4'616'331'264u);
  // Sorted by bytes, largest first; token_embd is a lookup, not a GEMV, when output.weight exists.
  EXPECT_TRUE(std::is_sorted(m.shapes.begin(), m.shapes.end(),
                             [](const Shape& a, const Shape& b) { return a.bytes_per_token > b.bytes_per_token; }));
  for (const Shape& s : m.shapes)
    EXPECT_EQ(std::count(s.tensors.begin(), s.tensors.end(), "token_embd.weight"), 0);
  EXPECT_EQ(find_shape(m, GgmlType::Q6_K, 128256, 4096)->tensors, std::vector<std::string>{"output.weight"});
  EXPECT_EQ(find_shape(m, GgmlType::Q4_K, 1024, 4096)->tensors.size(), 48u);
  // Quant mix: q4_K is the largest share of the file.
  ASSERT_FALSE(m.quant_mix.empty());
  EXPECT_EQ(m.quant_mix.front().type, GgmlType::Q4_K);
  EXPECT_EQ(m.quant_mix.front().tensors, 193u);
  EXPECT_NE(m.header_hash, 0u);
  EXPECT_GT(m.file_size, m.bytes_per_token);
}

TEST(Shapes, Qwen3_30B_A3B_CountsUsedExpertsOnly) {
  const Model m = open_model(fx::path(fx::Fixture::Qwen3_30B_A3B));
  EXPECT_EQ(m.architecture, "qwen3moe");
  EXPECT_EQ(m.experts, 128u);
  EXPECT_EQ(m.experts_used, 8u);
  EXPECT_EQ(m.layers, 48u);
  // Experts: 8 of 128 slices per layer; gate and up share one shape.
  expect_shape(m, GgmlType::Q4_K, 768, 2048, 2 * 8 * 48, 2ull * 8 * 48 * 768 * 8 * 144);
  expect_shape(m, GgmlType::Q6_K, 2048, 768, 8 * 24, 8ull * 24 * 2048 * 3 * 210);  // ffn_down_exps, use_more_bits layers
  expect_shape(m, GgmlType::Q4_K, 2048, 768, 8 * 24, 8ull * 24 * 2048 * 3 * 144);
  expect_shape(m, GgmlType::F32, 128, 2048, 48, 48ull * 128 * 2048 * 4);  // the router
  expect_shape(m, GgmlType::Q4_K, 4096, 2048, 48, 48ull * 4096 * 8 * 144);  // attn_q
  expect_shape(m, GgmlType::Q4_K, 2048, 4096, 48, 48ull * 2048 * 16 * 144);  // attn_output
  expect_shape(m, GgmlType::Q4_K, 512, 2048, 48 + 24, 72ull * 512 * 8 * 144);  // attn_k + attn_v
  expect_shape(m, GgmlType::Q6_K, 512, 2048, 24, 24ull * 512 * 8 * 210);
  expect_shape(m, GgmlType::Q6_K, 151936, 2048, 1, 151936ull * 8 * 210);
  EXPECT_EQ(m.shapes.size(), 9u);
  // About 3B parameters are active: decode reads far less than the 30B file.
  EXPECT_LT(m.bytes_per_token * 8, m.file_size);
  EXPECT_TRUE(has_note(m, "MoE: 128 experts, 8 used per token"));
  const Shape* up = find_shape(m, GgmlType::Q4_K, 768, 2048);
  EXPECT_EQ(up->tensors.size(), 96u);  // one name per layer and role, not per call
}

TEST(Shapes, Llama70BClass) {
  const Model m = open_model(fx::path(fx::Fixture::Llama_70B_Class));
  EXPECT_EQ(m.layers, 80u);
  EXPECT_NEAR(static_cast<double>(m.parameters), 70.55e9, 0.01e9);
  expect_shape(m, GgmlType::Q4_K, 28672, 8192, 160, 160ull * 28672 * 32 * 144);
  expect_shape(m, GgmlType::Q5_K, 1024, 8192, 40, 40ull * 1024 * 32 * 176);  // 70B rule: attn_v q4_K -> q5_K
  expect_shape(m, GgmlType::Q6_K, 1024, 8192, 40, 40ull * 1024 * 32 * 210);
}

TEST(Shapes, TiedEmbeddingIsTheOutputHead) {
  GgufWriter w;
  w.add("general.architecture", V::string("gemma3"));
  w.add("gemma3.block_count", V::u32(1));
  w.add_sparse_tensor("token_embd.weight", GgmlType::Q6_K, {256, 1000});
  w.add_sparse_tensor("blk.0.attn_q.weight", GgmlType::Q4_0, {256, 256});
  w.add_sparse_tensor("blk.0.post_attention_norm.weight", GgmlType::F32, {256});
  w.add_sparse_tensor("blk.0.attn_q_norm.weight", GgmlType::F32, {256});
  const Model m = describe(w);
  EXPECT_TRUE(m.known_architecture);
  ASSERT_EQ(m.shapes.size(), 2u);
  expect_shape(m, GgmlType::Q6_K, 1000, 256, 1, 1000 * 210);
  EXPECT_TRUE(has_note(m, "tied"));
}

// Rewrites the ggml type id of tensor `name` in a GGUF image (as a newer ggml would have written it).
std::string with_type_id(std::string image, std::string_view name, uint32_t id) {
  const GgufFile f = GgufFile::from_bytes(image, "original.gguf");
  const TensorInfo* t = f.find_tensor(name);
  const uint64_t at = t->info_offset + 8 + name.size() + 4 + 8 * t->n_dims;
  std::memcpy(image.data() + at, &id, 4);
  return image;
}

// Issue 19 (1): one tensor of a type newer than this Temper used to refuse the whole file.
TEST(Shapes, UnknownTypesAreListedAndLeftOutTheRestIsUsable) {
  GgufWriter w;
  w.add("general.architecture", V::string("llama"));
  w.add("llama.block_count", V::u32(1));
  w.add_sparse_tensor("blk.0.attn_q.weight", GgmlType::Q4_0, {256, 256});
  w.add_sparse_tensor("blk.0.attn_k.weight", GgmlType::Q2_0, {256, 64});
  w.add_sparse_tensor("blk.0.attn_v.weight", GgmlType::Q4_0, {256, 64});
  w.add_sparse_tensor("blk.0.ffn_up.weight", GgmlType::Q4_0, {256, 512});
  std::string image = with_type_id(w.image(), "blk.0.attn_v.weight", 77);
  image = with_type_id(std::move(image), "blk.0.ffn_up.weight", 200);
  const GgufFile f = GgufFile::from_bytes(image, "newer.gguf");
  EXPECT_EQ(f.tensors().size(), 2u);
  ASSERT_EQ(f.unknown_tensors().size(), 2u);
  EXPECT_EQ(f.unknown_tensors()[0].name, "blk.0.attn_v.weight");
  EXPECT_EQ(f.unknown_tensors()[0].type_id, 77u);
  EXPECT_EQ(f.unknown_tensors()[1].dims[1], 512u);
  EXPECT_EQ(f.find_tensor("blk.0.attn_v.weight"), nullptr);
  const Model m = describe_model(f);
  ASSERT_EQ(m.shapes.size(), 2u);
  expect_shape(m, GgmlType::Q4_0, 256, 256, 1, 256 * 8 * 18);
  expect_shape(m, GgmlType::Q2_0, 64, 256, 1, 64 * 4 * 18);  // q2_0: 64 values in 18 bytes
  ASSERT_EQ(m.unknown_type_tensors.size(), 2u);
  EXPECT_EQ(m.unknown_type_tensors[1].type_id, 200u);
  EXPECT_TRUE(has_note(m, "1 tensor of ggml type id 77 (not supported by this Temper) left out: blk.0.attn_v.weight"));
  EXPECT_TRUE(has_note(m, "type id 200"));
}

// A file with one tensor of every type ggml d99724f knows (ids 0..42 less the retired ones) opens
// with every tensor known, q2_0 (id 42) included.
TEST(Shapes, EveryTypeOfGgmlD99724fIsKnown) {
  GgufWriter w;
  w.add("general.architecture", V::string("llama"));
  const uint32_t retired[] = {4, 5, 31, 32, 33, 36, 37, 38};
  size_t expected = 0;
  for (uint32_t id = 0; id <= 42; ++id) {
    if (std::find(std::begin(retired), std::end(retired), id) != std::end(retired)) continue;
    const TypeInfo* t = find_type(id);
    ASSERT_TRUE(t) << "ggml type id " << id;
    w.add_sparse_tensor("t." + std::string(t->name), t->type, {uint64_t{t->block_size} * 4, 2});
    ++expected;
  }
  const GgufFile f = GgufFile::from_bytes(w.image(), "every-type.gguf");
  EXPECT_EQ(f.tensors().size(), expected);
  EXPECT_TRUE(f.unknown_tensors().empty());
  EXPECT_EQ(find_type(42)->name, "q2_0");
  EXPECT_EQ(find_type(42)->block_size, 64u);
  EXPECT_EQ(find_type(42)->type_size, 18u);
}

TEST(Shapes, UnknownTypeTensorsAreStillCheckedForPlacementAndNames) {
  GgufWriter w;
  w.add_sparse_tensor("a", GgmlType::Q4_0, {32, 1});
  w.add_sparse_tensor("b", GgmlType::Q4_0, {32, 1});
  std::string image = with_type_id(w.image(), "b", 99);
  const GgufFile parsed_b = GgufFile::from_bytes(w.image(), "x");  // find_tensor points into it: keep it
  const TensorInfo* b = parsed_b.find_tensor("b");
  const uint64_t offset_at = b->info_offset + 8 + 1 + 4 + 8 * b->n_dims + 4;
  const uint64_t far = uint64_t{1} << 40;
  std::string beyond = image;
  std::memcpy(beyond.data() + offset_at, &far, 8);
  try {
    GgufFile::from_bytes(beyond, "far.gguf");
    FAIL() << "an unknown-type tensor placed beyond the file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("far.gguf: byte " + std::to_string(offset_at) + ": tensor \"b\": offset"), std::string::npos)
        << e.what();
  }
  // The same name once known and once unknown is a duplicate.
  GgufWriter d;
  d.add_sparse_tensor("a", GgmlType::Q4_0, {32, 1});
  d.add_sparse_tensor("c", GgmlType::Q4_0, {32, 1});
  std::string dup = with_type_id(d.image(), "c", 99);
  const GgufFile parsed_c = GgufFile::from_bytes(d.image(), "x");  // find_tensor points into it: keep it
  const TensorInfo* c = parsed_c.find_tensor("c");
  dup[c->info_offset + 8] = 'a';
  EXPECT_THROW(GgufFile::from_bytes(dup, "dup.gguf"), Error);
}

TEST(Shapes, UnknownArchitectureUsesTheGenericRuleAndSaysSo) {
  GgufWriter w;
  w.add("general.architecture", V::string("futurenet"));
  w.add_sparse_tensor("token_embd.weight", GgmlType::F16, {64, 100});
  w.add_sparse_tensor("output.weight", GgmlType::Q8_0, {64, 100});
  w.add_sparse_tensor("blk.0.mixer_in.weight", GgmlType::Q8_0, {64, 128});
  w.add_sparse_tensor("blk.1.mixer_in.weight", GgmlType::Q8_0, {64, 128});
  w.add_sparse_tensor("blk.1.mixer_in.bias", GgmlType::F32, {128});
  w.add_sparse_tensor("blk.0.conv.weight", GgmlType::F32, {4, 64, 2});
  const Model m = describe(w);
  EXPECT_FALSE(m.known_architecture);
  EXPECT_EQ(m.layers, 2u);  // counted from names
  expect_shape(m, GgmlType::Q8_0, 128, 64, 2, 2 * 128 * 68);
  expect_shape(m, GgmlType::Q8_0, 100, 64, 1, 100 * 68);
  EXPECT_TRUE(has_note(m, "architecture futurenet not known; generic rule used"));
  EXPECT_TRUE(has_note(m, "generic rule (role not known): mixer_in"));
  EXPECT_TRUE(has_note(m, "blk.0.conv.weight"));
}

TEST(Shapes, LegacyMixtralAndDeepseekMla) {
  GgufWriter w;
  w.add("general.architecture", V::string("llama"));
  w.add("llama.expert_count", V::u32(4));
  w.add("llama.expert_used_count", V::u32(2));
  for (int e = 0; e < 4; ++e) w.add_sparse_tensor("blk.0.ffn_up." + std::to_string(e) + ".weight", GgmlType::Q4_0, {64, 96});
  const Model mixtral = describe(w);
  ASSERT_EQ(mixtral.shapes.size(), 1u);
  expect_shape(mixtral, GgmlType::Q4_0, 96, 64, 2, 2 * 96 * 36);
  EXPECT_EQ(mixtral.shapes[0].tensors.size(), 4u);

  GgufWriter d;
  d.add("general.architecture", V::string("deepseek2"));
  d.add("deepseek2.expert_count", V::u32(8));
  d.add("deepseek2.expert_used_count", V::u32(3));
  d.add_sparse_tensor("blk.0.attn_kv_b.weight", GgmlType::Q8_0, {64, 256});
  d.add_sparse_tensor("blk.0.attn_k_b.weight", GgmlType::Q8_0, {32, 64, 4});   // per head
  d.add_sparse_tensor("blk.0.ffn_down_exps.weight", GgmlType::Q4_0, {64, 32, 8});
  d.add_sparse_tensor("blk.0.ffn_down_shexp.weight", GgmlType::Q4_0, {64, 32});
  const Model ds = describe(d);
  expect_shape(ds, GgmlType::Q8_0, 64, 32, 4, 4 * 64 * 34);
  expect_shape(ds, GgmlType::Q4_0, 32, 64, 3 + 1, 4 * 32 * 36);  // 3 experts + the shared expert
  EXPECT_FALSE(find_shape(ds, GgmlType::Q8_0, 256, 64));       // attn_kv_b replaced by absorbed MLA
  EXPECT_TRUE(has_note(ds, "attn_kv_b not counted"));
}

TEST(Shapes, ExpertsUsedBeyondExpertsIsBadInput) {
  GgufWriter w;
  w.add("general.architecture", V::string("qwen3moe"));
  w.add("qwen3moe.expert_used_count", V::u32(9));
  w.add_sparse_tensor("blk.0.ffn_up_exps.weight", GgmlType::Q4_0, {64, 32, 8});
  try {
    describe(w);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("expert_used_count: expected at most 8"), std::string::npos) << e.what();
  }
}

TEST(Shapes, DecodeCeilingAndHex) {
  EXPECT_DOUBLE_EQ(decode_ceiling_tokens_per_s(4'000'000'000, 3350), 837.5);
  EXPECT_EQ(decode_ceiling_tokens_per_s(0, 3350), 0.0);
  EXPECT_EQ(hex64(0x0123456789abcdefull), "0123456789abcdef");
  EXPECT_EQ(hex64(0), "0000000000000000");
}

}  // namespace
}  // namespace temper
