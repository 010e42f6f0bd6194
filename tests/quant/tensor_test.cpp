// Byte-level round trip through a GGUF file: blocks written by the quantizer (and by the random
// generator), stored by the GGUF writer, read back by the reader and dequantized, give exactly the
// floats of the in-memory blocks. Also the row-range parser and dequantize_tensor's errors.
#include <cstring>
#include <filesystem>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "quant_test_util.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/quant/tensor.h"

using namespace temper::quant;
using namespace quant_test;
using temper::GgmlType;

namespace {

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("temper_quant_" + std::to_string(::getpid()) + "_" + name);
}

std::vector<float> floats_of(const std::string& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

class GgufRoundTrip : public ::testing::TestWithParam<GgmlType> {};

}  // namespace

TEST_P(GgufRoundTrip, QuantizedBlocksReadBackBitIdentical) {
  const GgmlType type = GetParam();
  const int64_t k = 512, rows = 3;
  const uint64_t row_bytes = *temper::row_bytes(type, k);
  std::string blocks(row_bytes * rows, '\0');
  if (has_quantizer(type)) {
    std::vector<float> x(size_t(k * rows));
    fill_random_activations(x.data(), int64_t(x.size()), 21);
    for (int64_t r = 0; r < rows; ++r) quantize_row(type, x.data() + r * k, blocks.data() + r * row_bytes, k);
  } else {
    fill_random(type, blocks.data(), rows, k, 21);
  }
  std::vector<float> expected(size_t(k * rows));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(type, blocks.data() + r * row_bytes, expected.data() + r * k, k);

  temper::GgufWriter writer;
  writer.add("general.architecture", temper::GgufWriter::Value::string("test"));
  writer.add_tensor("other", GgmlType::F32, {4}, std::string(16, '\0'));  // the tensor under test is not first
  writer.add_tensor("blk.0.ffn_down.weight", type, {uint64_t(k), uint64_t(rows)}, blocks);
  const auto path = temp_file(std::string(temper::type_name(type)) + ".gguf");
  writer.write(path);

  {
    const auto model = temper::GgufFile::open(path);
    const temper::TensorInfo* t = model.find_tensor("blk.0.ffn_down.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, type);
    ASSERT_EQ(t->data.size(), blocks.size());
    EXPECT_EQ(std::memcmp(t->data.data(), blocks.data(), blocks.size()), 0);  // bytes survive the file

    std::ostringstream all;
    dequantize_tensor(*t, {0, tensor_rows(*t)}, all);
    const auto got = floats_of(all.str());
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * 4), 0);  // identical floats, bit for bit

    std::ostringstream middle;
    dequantize_tensor(*t, parse_row_range("1:2", tensor_rows(*t)), middle);
    const auto row1 = floats_of(middle.str());
    ASSERT_EQ(row1.size(), size_t(k));
    EXPECT_EQ(std::memcmp(row1.data(), expected.data() + k, size_t(k) * 4), 0);
  }
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Quant, GgufRoundTrip, ::testing::ValuesIn(supported_types().begin(), supported_types().end()),
                         type_label);

TEST(Tensor, FloatTypesAndUnsupportedType) {
  temper::GgufWriter writer;
  const float values[4] = {1.5f, -2.0f, 0.25f, 3.0f};
  std::string f32(reinterpret_cast<const char*>(values), 16);
  const uint16_t halves[4] = {0x3E00, 0xC000, 0x3400, 0x4200};  // 1.5 -2 0.25 3
  const uint16_t bf16[4] = {0x3FC0, 0xC000, 0x3E80, 0x4040};
  writer.add_tensor("f32", GgmlType::F32, {2, 2}, f32);
  writer.add_tensor("f16", GgmlType::F16, {2, 2}, std::string(reinterpret_cast<const char*>(halves), 8));
  writer.add_tensor("bf16", GgmlType::BF16, {2, 2}, std::string(reinterpret_cast<const char*>(bf16), 8));
  writer.add_tensor("tq", GgmlType::TQ2_0, {256}, std::string(66, '\0'));
  const auto path = temp_file("floats.gguf");
  writer.write(path);
  {
    const auto model = temper::GgufFile::open(path);
    for (const char* name : {"f32", "f16", "bf16"}) {
      std::ostringstream out;
      dequantize_tensor(*model.find_tensor(name), {0, 2}, out);
      EXPECT_EQ(floats_of(out.str()), std::vector<float>(values, values + 4)) << name;
    }
    std::ostringstream out;
    try {
      dequantize_tensor(*model.find_tensor("tq"), {0, 1}, out);
      FAIL();
    } catch (const temper::Error& e) {
      EXPECT_EQ(e.kind(), temper::ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find("tq2_0"), std::string::npos) << e.what();
    }
    EXPECT_THROW(dequantize_tensor(*model.find_tensor("f32"), {1, 3}, out), temper::Error);
  }
  std::filesystem::remove(path);
}

TEST(Tensor, RowRanges) {
  EXPECT_EQ(parse_row_range("2:5", 10).begin, 2u);
  EXPECT_EQ(parse_row_range("2:5", 10).end, 5u);
  EXPECT_EQ(parse_row_range("7:", 10).end, 10u);
  EXPECT_EQ(parse_row_range(":3", 10).begin, 0u);
  EXPECT_EQ(parse_row_range("4", 10).end, 5u);
  for (const char* bad : {"5:5", "6:2", "0:11", "10", "a:b", "1:2:3", "-1:2", ""})
    EXPECT_THROW(parse_row_range(bad, 10), temper::Error) << bad;
}
