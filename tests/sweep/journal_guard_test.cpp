// Issue 19 (12, 13): one sweep per journal, and journal lines checked like session results; issue 32
// (8): duplicate keys and impossible confirmations refused.
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

// Issue 32 (8): a header with a duplicate key was read (nlohmann keeps the last one silently).
TEST(JournalGuard, AHeaderWithADuplicateKeyIsRefused) {
  const fs::path dir = temp_dir("duplicate");
  const fs::path path = dir / "d.journal";
  { Journal j = Journal::create(path, header()); }
  std::string text = read_file(path);
  const std::string head = "{\"journal\":\"temper-sweep-journal\",";
  ASSERT_EQ(text.rfind(head, 0), 0u) << text.substr(0, 80);
  text.replace(0, head.size(), head + "\"journal_version\":1,");
  write_file_atomic(path, text);
  try {
    read_journal(path);
    ADD_FAILURE() << "a header with a duplicate key was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("d.journal:1: duplicate key \"journal_version\""), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// Issue 32 (8): confirmation lines with negative medians were accepted (and so were confirmed
// verdicts whose CIs overlap).
TEST(JournalGuard, ConfirmationsAreValidated) {
  const fs::path dir = temp_dir("confirmations");
  const fs::path path = dir / "c.journal";
  const Result def = test::ok_result(GgmlType::Q4_K, 14336, 4096, 1, {4, 1}, 100.0, 0.5, true);
  const Result cand = test::ok_result(GgmlType::Q4_K, 14336, 4096, 1, {2, 1}, 90.0, 0.4);
  Confirmation good;
  static_cast<GroupKey&>(good) = def.group();
  good.default_config = def.config;
  good.config = cand.config;
  good.default_us = def.time_us;
  good.candidate_us = cand.time_us;
  good.converged = good.confirmed = true;
  const auto refused = [&](const Confirmation& c, const std::string& fragment) {
    {
      Journal j = Journal::create(path, header());
      j.append(c);
    }
    try {
      read_journal(path);
      ADD_FAILURE() << "accepted: " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::BadInput);
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  {
    Journal j = Journal::create(path, header());
    j.append(good);
  }
  EXPECT_EQ(read_journal(path).confirmations.size(), 1u);
  Confirmation negative = good;
  negative.default_us.median = -100;
  refused(negative, "c.journal:2: confirmation.default_us.median: expected a finite number > 0");
  Confirmation overlapping = good;
  overlapping.candidate_us.ci_high = 101;
  overlapping.candidate_us.max = 102;
  refused(overlapping, "confirmed: true, but the candidate's CI is not wholly below the default's");
  Confirmation failed = good;
  failed.failure = "GpuFault: lost";
  failed.default_us = failed.candidate_us = {};
  refused(failed, "a confirmation that failed (\"failure\" set) cannot confirm");
  failed.confirmed = failed.converged = false;
  {
    Journal j = Journal::create(path, header());
    j.append(failed);
  }
  EXPECT_EQ(read_journal(path).confirmations.size(), 1u);  // a failed re-measure carries no numbers
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
