// Issue 19 (12, 13): one sweep per journal, and journal lines checked like session results.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "sample_session.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/sweep.h"

namespace temper {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("temper-journal-guard-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

Session header() {
  Session s = test::sample_session();
  s.results.clear();
  s.status = "running";
  return s;
}

// Two `sweep --resume` of one journal both measured everything and both exited 0.
TEST(JournalGuard, ASecondWriterIsRefusedWhileTheFirstHoldsIt) {
  const fs::path dir = temp_dir("lock");
  const fs::path path = dir / "s.json.journal";
  {
    Journal first = Journal::create(path, header());
    const JournalContents contents = read_journal(path);
    try {
      Journal second = Journal::reopen(path, contents);
      ADD_FAILURE() << "a second writer of a journal in use was allowed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find("is in use by another temper sweep"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Journal::create(path, header()), Error);  // nor replaced by a new sweep
  }
  // Once the first is gone, resuming works.
  const JournalContents contents = read_journal(path);
  EXPECT_NO_THROW(Journal::reopen(path, contents));
  fs::remove_all(dir);
}

TEST(JournalGuard, ResultLinesAreValidated) {
  const fs::path dir = temp_dir("lines");
  const fs::path path = dir / "j.journal";
  {
    Journal j = Journal::create(path, header());
    Result r = test::ok_result(GgmlType::Q4_K, 14336, 4096, 1, {4, 1}, 100.0, 0.5, true);
    r.device = 7;
    j.append(r);
  }
  try {
    read_journal(path);
    ADD_FAILURE() << "a result of a device the journal does not have was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("j.journal:2: device 7 is not in the journal's session"), std::string::npos) << e.what();
  }
  {
    Journal j = Journal::create(path, header());
    Result r = test::ok_result(GgmlType::Q4_K, 14336, 4096, 1, {4, 1}, 100.0, 0.5, true);
    r.time_us.median = -1;
    j.append(r);
  }
  EXPECT_THROW(read_journal(path), Error);
  fs::remove_all(dir);
}

// Every input the journal fuzzer found (tests/fuzz/regressions/journal/) is refused as bad input,
// never an escaped library exception. The first: a header whose "session" is a number.
TEST(JournalGuard, FuzzerFindingsAreRefusedAsBadInput) {
  const fs::path dir = fs::path(TEMPER_SOURCE_DIR) / "tests/fuzz/regressions/journal";
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++replayed;
    try {
      read_journal(entry.path());
      ADD_FAILURE() << entry.path() << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput) << entry.path() << ": " << e.what();
    }
  }
  EXPECT_GE(replayed, 1);
  try {
    read_journal(dir / "header-session-not-object.journal");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":1: journal header's \"session\" is number, expected an object"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace temper
