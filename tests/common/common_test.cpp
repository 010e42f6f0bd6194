#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/types.h"

using namespace temper;
namespace fs = std::filesystem;

TEST(Types, KnownSizesMatchGgml) {
  EXPECT_EQ(type_info(GgmlType::Q4_0).type_size, 18u);
  EXPECT_EQ(type_info(GgmlType::Q4_K).type_size, 144u);
  EXPECT_EQ(type_info(GgmlType::Q6_K).type_size, 210u);
  EXPECT_EQ(type_info(GgmlType::IQ4_XS).type_size, 136u);
  EXPECT_EQ(type_info(GgmlType::MXFP4).type_size, 17u);
  EXPECT_EQ(type_info(GgmlType::Q4_K).block_size, 256u);
  EXPECT_EQ(find_type(4), nullptr);  // retired Q4_2
  EXPECT_EQ(find_type(1000), nullptr);
}

TEST(Types, ParseIsCaseInsensitiveAndRoundTrips) {
  for (const auto& t : all_types()) {
    auto parsed = parse_type(t.name);
    ASSERT_TRUE(parsed) << t.name;
    EXPECT_EQ(*parsed, t.type);
  }
  EXPECT_EQ(parse_type("Q4_K"), GgmlType::Q4_K);
  EXPECT_EQ(parse_type("IQ4_XS"), GgmlType::IQ4_XS);
  EXPECT_FALSE(parse_type("q4_2"));
}

TEST(Types, RowBytes) {
  EXPECT_EQ(row_bytes(GgmlType::Q4_K, 4096), 16u * 144u);
  EXPECT_EQ(row_bytes(GgmlType::F16, 3), 6u);
  EXPECT_FALSE(row_bytes(GgmlType::Q4_K, 100));             // not a whole block
  EXPECT_FALSE(row_bytes(GgmlType::Q8_0, UINT64_MAX - 31));  // overflow
}

TEST(FileIo, AtomicWriteReplacesAndLeavesNoTemp) {
  const fs::path dir = fs::temp_directory_path() / ("temper-io-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "out.json";
  write_file_atomic(file, "first");
  write_file_atomic(file, "second");
  EXPECT_EQ(read_file(file), "second");
  int entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

TEST(FileIo, FailedWriteKeepsPreviousFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const fs::path dir = fs::temp_directory_path() / ("temper-ro-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "keep.txt";
  write_file_atomic(file, "precious");
  ::chmod(dir.c_str(), 0555);
  EXPECT_THROW(write_file_atomic(file, "lost"), Error);
  ::chmod(dir.c_str(), 0755);
  EXPECT_EQ(read_file(file), "precious");
  fs::remove_all(dir);
}

TEST(FileIo, MissingFileIsIoError) {
  try {
    read_file("/nonexistent/temper/file");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/temper/file"), std::string::npos);
  }
}
