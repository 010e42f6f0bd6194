// GGUF reader and writer: every value kind round-trips, the fixtures read back with their real
// layout, and the reader answers typed questions about metadata.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "fixtures/fixtures.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/gguf.h"

namespace temper {
namespace {

using V = GgufWriter::Value;
namespace fx = fixtures;

std::string pattern(size_t n, uint8_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

GgufWriter every_kind_writer(uint32_t version) {
  GgufWriter w(version);
  w.add("general.architecture", V::string("llama"));
  w.add("general.alignment", V::u32(64));
  w.add("k.u8", V::u8(200));
  w.add("k.i8", V::i8(-100));
  w.add("k.u16", V::u16(60000));
  w.add("k.i16", V::i16(-30000));
  w.add("k.u32", V::u32(4000000000u));
  w.add("k.i32", V::i32(-2000000000));
  w.add("k.f32", V::f32(1.5f));
  w.add("k.bool", V::boolean(true));
  w.add("k.string", V::string("h\xc3\xa9llo"));
  w.add("k.u64", V::u64(UINT64_MAX));
  w.add("k.i64", V::i64(INT64_MIN));
  w.add("k.f64", V::f64(-2.25));
  w.add("k.empty_string", V::string(""));
  const std::vector<std::string> words{"alpha", "", "gamma"};
  w.add("k.strings", V::strings(words));
  const std::vector<int32_t> ints{1, -2, 3};
  w.add("k.i32s", V::i32s(ints));
  const std::vector<V> bools{V::boolean(false), V::boolean(true)};
  w.add("k.bools", V::array(GgufType::Bool, bools));
  const std::vector<V> inner1{V::u16(1), V::u16(2)}, inner2{V::u16(3)};
  const std::vector<V> nested{V::array(GgufType::U16, inner1), V::array(GgufType::U16, inner2), V::array(GgufType::U16, {})};
  w.add("k.nested", V::array(GgufType::Array, nested));
  const std::vector<V> empty;
  w.add("k.empty_array", V::array(GgufType::F64, empty));
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q4_K, {256, 3}, pattern(3 * 144, 1));
  w.add_tensor("blk.0.attn_norm.weight", GgmlType::F32, {5}, pattern(20, 2));
  w.add_tensor("three_d", GgmlType::Q8_0, {64, 2, 3}, pattern(2 * 34 * 6, 3));
  w.add_tensor("four_d", GgmlType::F16, {2, 1, 3, 2}, pattern(2 * 12, 4));
  return w;
}

void expect_every_kind(const GgufFile& f, uint32_t version) {
  EXPECT_EQ(f.version(), version);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.metadata().size(), 20u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_u64("k.u8"), 200u);
  EXPECT_EQ(f.get_i64("k.i8"), -100);
  EXPECT_EQ(f.get_u64("k.u16"), 60000u);
  EXPECT_EQ(f.get_i64("k.i16"), -30000);
  EXPECT_EQ(f.get_u64("k.u32"), 4000000000u);
  EXPECT_EQ(f.get_i64("k.i32"), -2000000000);
  EXPECT_EQ(f.get_f64("k.f32"), 1.5);
  EXPECT_EQ(f.get_bool("k.bool"), true);
  EXPECT_EQ(f.get_string("k.string"), "h\xc3\xa9llo");
  EXPECT_EQ(f.get_u64("k.u64"), UINT64_MAX);
  EXPECT_EQ(f.get_i64("k.i64"), INT64_MIN);
  EXPECT_EQ(f.get_f64("k.f64"), -2.25);
  EXPECT_EQ(f.get_string("k.empty_string"), "");
  EXPECT_EQ(f.find("k.u64")->type(), GgufType::U64);

  const auto strings = f.get_array("k.strings");
  ASSERT_TRUE(strings);
  EXPECT_EQ(strings->element_type(), GgufType::String);
  ASSERT_EQ(strings->size(), 3u);
  EXPECT_EQ((*strings)[2].to_string(), "gamma");
  std::vector<std::string_view> seen;
  for (const GgufValue v : *strings) seen.push_back(*v.to_string());
  EXPECT_EQ(seen, (std::vector<std::string_view>{"alpha", "", "gamma"}));

  const auto ints = f.get_array("k.i32s");
  ASSERT_TRUE(ints && ints->size() == 3);
  EXPECT_EQ((*ints)[1].to_i64(), -2);
  EXPECT_EQ((*f.get_array("k.bools"))[1].to_bool(), true);

  const auto nested = f.get_array("k.nested");
  ASSERT_TRUE(nested && nested->size() == 3);
  EXPECT_EQ(nested->element_type(), GgufType::Array);
  EXPECT_EQ((*nested)[0].size(), 2u);
  EXPECT_EQ((*nested)[0][1].to_u64(), 2u);
  EXPECT_EQ((*nested)[1][0].to_u64(), 3u);
  EXPECT_EQ((*nested)[2].size(), 0u);
  EXPECT_EQ(f.get_array("k.empty_array")->size(), 0u);

  ASSERT_EQ(f.tensors().size(), 4u);
  const TensorInfo* q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->type, GgmlType::Q4_K);
  EXPECT_EQ(q->n_dims, 2u);
  EXPECT_EQ(q->dims, (std::array<uint64_t, 4>{256, 3, 1, 1}));
  EXPECT_EQ(q->bytes, 3u * 144u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(q->data.data()), q->data.size()), pattern(3 * 144, 1));
  const TensorInfo* d4 = f.find_tensor("four_d");
  ASSERT_TRUE(d4);
  EXPECT_EQ(d4->n_dims, 4u);
  EXPECT_EQ(d4->elements(), 12u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d4->data.data()), d4->data.size()), pattern(24, 4));
  EXPECT_EQ(f.find_tensor("three_d")->bytes, 12u * 34u);  // 2 blocks per row, 6 rows
  for (const TensorInfo& t : f.tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
  EXPECT_FALSE(f.find_tensor("missing"));
  EXPECT_FALSE(f.find("missing"));
  EXPECT_FALSE(f.get_u64("missing"));
}

TEST(GgufReader, EveryValueKindRoundTripsInMemoryV3AndV2) {
  for (uint32_t version : {3u, 2u}) {
    SCOPED_TRACE(version);
    expect_every_kind(GgufFile::from_bytes(every_kind_writer(version).image(), "mem.gguf"), version);
  }
}

TEST(GgufWriter, WrittenFileEqualsImageAndReadsBack) {
  const auto dir = std::filesystem::temp_directory_path() / ("temper-gguf-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = dir / "every.gguf";
  const GgufWriter w = every_kind_writer(3);
  w.write(p);
  EXPECT_EQ(read_file(p), w.image());
  EXPECT_EQ(std::filesystem::file_size(p), w.file_size());
  {
    const GgufFile f = GgufFile::open(p);
    expect_every_kind(f, 3);
    EXPECT_EQ(f.path(), p);
    EXPECT_EQ(f.file_size(), w.file_size());
  }
  std::filesystem::remove_all(dir);
}

// Two tensors of 2.1 M floats (three fill chunks each) whose float i is i + tag: a misplaced or
// missing chunk shows.
constexpr std::pair<const char*, float> kFilled[] = {{"big_a", 0.5f}, {"big_b", 0.25f}};

GgufWriter filled_writer(std::mutex& m, std::set<uint64_t>& starts) {
  GgufWriter w;
  w.add("general.architecture", V::string("llama"));
  w.add_tensor("small", GgmlType::F32, {3}, pattern(12, 5));
  w.add_sparse_tensor("hole", GgmlType::Q4_K, {256, 7});
  for (const auto& entry : kFilled) {
    const float tag = entry.second;
    w.add_filled_tensor(entry.first, GgmlType::F32, {1024, 2100}, [&m, &starts, tag](std::span<std::byte> out, uint64_t first) {
      for (size_t i = 0; i < out.size() / 4; ++i) {
        const float v = float(first / 4 + i) + tag;
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      const std::lock_guard lock(m);
      starts.insert(first);
    });
  }
  return w;
}

TEST(GgufWriter, FilledTensorsAreTheSameBytesOnAnyThreadCount) {
  const auto dir = std::filesystem::temp_directory_path() / ("temper-gguf-fill-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mutex m;
  std::set<uint64_t> starts;
  const GgufWriter w = filled_writer(m, starts);
  const std::string image = w.image();
  const uint64_t chunk = GgufWriter::fill_chunk_bytes(GgmlType::F32);
  EXPECT_EQ(chunk, 4u << 20);
  EXPECT_EQ(starts, (std::set<uint64_t>{0, chunk, 2 * chunk}));  // 8.4 MB in 4 MiB chunks
  for (const unsigned threads : {1u, 4u}) {
    SCOPED_TRACE(threads);
    std::vector<std::pair<uint64_t, uint64_t>> progress;
    GgufWriter::WriteOptions options;
    options.threads = threads;
    options.progress = [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); };
    w.write(dir / "filled.gguf", options);
    EXPECT_TRUE(read_file(dir / "filled.gguf") == image);
    ASSERT_EQ(progress.size(), 6u);  // one call per chunk, growing to the total
    const uint64_t total = 2 * 1024 * 2100 * 4;
    EXPECT_EQ(progress.back(), std::make_pair(total, total));
    for (size_t i = 1; i < progress.size(); ++i) EXPECT_GT(progress[i].first, progress[i - 1].first);
  }
  const GgufFile f = GgufFile::open(dir / "filled.gguf");
  for (const auto& [name, tag] : kFilled) {
    const TensorInfo* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    for (const uint64_t i : {uint64_t(0), chunk / 4 - 1, chunk / 4, uint64_t(1024 * 2100 - 1)}) {
      float v;
      std::memcpy(&v, t->data.data() + 4 * i, 4);
      EXPECT_EQ(v, float(i) + tag) << name << " float " << i;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(GgufWriter, AFailingFillLeavesNoFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("temper-gguf-fail-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  GgufWriter w;
  w.add_filled_tensor("t", GgmlType::F32, {1024, 3000}, [](std::span<std::byte> out, uint64_t first) {
    if (first > 0) fail(ErrorKind::BadInput, "chunk at byte " + std::to_string(first) + " refused");
    std::fill(out.begin(), out.end(), std::byte{1});
  });
  GgufWriter::WriteOptions options;
  options.threads = 3;
  try {
    w.write(dir / "x.gguf", options);
    ADD_FAILURE() << "write succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // neither the target nor the temporary file
  EXPECT_THROW(w.add_filled_tensor("u", GgmlType::F32, {4}, {}), Error);
  std::filesystem::remove_all(dir);
}

TEST(GgufWriter, RejectsInvalidInput) {
  GgufWriter w;
  w.add("a", V::u8(1));
  EXPECT_THROW(w.add("a", V::u8(2)), Error);
  EXPECT_THROW(w.add("general.alignment", V::u32(48)), Error);
  EXPECT_THROW(w.add_tensor("t", GgmlType::Q4_K, {100, 2}, ""), Error);       // not whole blocks
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {4}, std::string(15, 'x')), Error);  // wrong byte count
  EXPECT_THROW(w.add_sparse_tensor("t", GgmlType::F32, {1, 1, 1, 1, 1}), Error);
  EXPECT_THROW(w.add_sparse_tensor("t", GgmlType::F32, {0}), Error);
  w.add_sparse_tensor("t", GgmlType::F32, {4});
  EXPECT_THROW(w.add_sparse_tensor("t", GgmlType::F32, {4}), Error);
  const std::vector<V> mixed{V::u8(1), V::i8(1)};
  EXPECT_THROW(V::array(GgufType::U8, mixed), Error);
  EXPECT_THROW(GgufWriter(1), Error);
}

TEST(GgufReader, GetterOfWrongKindNamesKeyAndOffset) {
  GgufWriter w;
  w.add("general.architecture", V::string("llama"));
  w.add("llama.block_count", V::i32(-3));
  const GgufFile f = GgufFile::from_bytes(w.image(), "m.gguf");
  try {
    f.get_u64("general.architecture");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("m.gguf: byte "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("general.architecture: expected a non-negative integer, got string"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f.get_u64("llama.block_count"), Error);  // negative
  EXPECT_EQ(f.get_i64("llama.block_count"), -3);
  EXPECT_THROW(f.get_string("llama.block_count"), Error);
  EXPECT_THROW(f.get_array("llama.block_count"), Error);
}

// Issue 19 (15): an input that cannot be opened is bad input (exit 2) for every reader.
TEST(GgufReader, MissingFileIsBadInput) {
  try {
    GgufFile::open("/nonexistent/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
  EXPECT_THROW(GgufFile::open("/"), Error);  // a directory
}

TEST(GgufFixtures, Llama3_8BHasItsRealLayoutAndMix) {
  const GgufFile f = GgufFile::open(fx::path(fx::Fixture::Llama3_8B_Q4_K_M));
  EXPECT_EQ(f.tensors().size(), 291u);
  std::map<GgmlType, int> mix;
  for (const TensorInfo& t : f.tensors()) ++mix[t.type];
  EXPECT_EQ(mix[GgmlType::Q4_K], 193);  // as llama.cpp reports for Meta-Llama-3-8B Q4_K_M
  EXPECT_EQ(mix[GgmlType::Q6_K], 33);
  EXPECT_EQ(mix[GgmlType::F32], 65);
  EXPECT_EQ(f.find_tensor("output.weight")->dims, (std::array<uint64_t, 4>{4096, 128256, 1, 1}));
  EXPECT_EQ(f.find_tensor("blk.31.ffn_down.weight")->dims, (std::array<uint64_t, 4>{14336, 4096, 1, 1}));
  EXPECT_EQ(f.find_tensor("blk.0.attn_v.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(f.find_tensor("blk.4.attn_v.weight")->type, GgmlType::Q4_K);
  EXPECT_EQ(f.find_tensor("blk.6.attn_v.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens")->size(), 128256u);
  // Sparse: gigabytes of file, a few megabytes on disk.
  EXPECT_GT(f.file_size(), 4'000'000'000u);
  EXPECT_EQ(f.file_size(), fx::writer(fx::Fixture::Llama3_8B_Q4_K_M).file_size());
}

TEST(GgufFixtures, VocabularyIsReadLazilyAndCompletely) {
  const GgufFile f = GgufFile::open(fx::path(fx::Fixture::Llama_70B_Class));
  const auto tokens = f.get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  uint64_t n = 0;
  for (const GgufValue v : *tokens) {
    if (n == 0 || n == 128255) {
      EXPECT_EQ(*v.to_string(), "tok" + std::to_string(n));
    }
    ++n;
  }
  EXPECT_EQ(n, 128256u);
  EXPECT_EQ((*tokens)[1000].to_string(), "tok1000");
  EXPECT_EQ(f.get_array("tokenizer.ggml.merges")->size(), 280147u);
  EXPECT_EQ(f.tensors().size(), 80u * 9 + 3);
}

TEST(GgufFixtures, HeaderHashIdentifiesTheHeader) {
  const GgufFile a = GgufFile::from_bytes(fx::bytes(fx::Fixture::MiniLlama), "a");
  const GgufFile b = GgufFile::from_bytes(fx::bytes(fx::Fixture::MiniLlama), "b");
  const GgufFile c = GgufFile::from_bytes(fx::bytes(fx::Fixture::MiniMoe), "c");
  EXPECT_EQ(a.header_hash(), b.header_hash());
  EXPECT_NE(a.header_hash(), c.header_hash());
  fx::Options v2;
  v2.version = 2;
  EXPECT_NE(a.header_hash(), GgufFile::from_bytes(fx::bytes(fx::Fixture::MiniLlama, v2), "d").header_hash());
}

}  // namespace
}  // namespace temper
