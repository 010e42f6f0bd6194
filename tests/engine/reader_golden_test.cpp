// The profile readers of hooks in the field (v3, v4, v6: v5 and v6 share one) as golden data: their
// verdicts on every corpus profile (tests/engine/reader-golden/hook-vN.txt, written by generate.cpp
// from the readers as they were). Against them, the current reader (hook/src/temper-mmvq-profile.h)
// and Temper's validation: what a fielded hook launches from a profile the current reader loads, the
// current reader launches alike; a profile Temper accepts that a fielded hook refuses whole comes
// with a warning from `temper profile validate`.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <string>

#include "temper-mmvq-profile.h"  // the current reader, hook/src/
#include "support/profile_type_facts.h"
#include "temper/error.h"
#include "temper/mmvq_traits.h"
#include "temper/profile.h"

namespace temper {
namespace {

namespace fs = std::filesystem;
namespace tp = temper_profile;
const fs::path kCorpus = fs::path(TEMPER_SOURCE_DIR) / "tests/profile/corpus";
const fs::path kGolden = fs::path(TEMPER_SOURCE_DIR) / "tests/engine/reader-golden";
const int kFieldedHooks[] = {3, 4, 6};

// One reader's verdict on one profile: its error, and per mode ("all", "v3-grid") its line and table rows.
struct Verdict {
  std::string error;
  std::map<std::string, std::string> line;
  std::map<std::string, std::set<std::string>> rows;
};

std::map<std::string, Verdict> golden(int hook) {
  std::map<std::string, Verdict> out;
  std::ifstream in(kGolden / ("hook-v" + std::to_string(hook) + ".txt"));
  EXPECT_TRUE(in) << "no golden verdicts of hook v" << hook;
  Verdict* v = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0) v = &out[line.substr(3)];
    else if (v == nullptr) ADD_FAILURE() << "hook-v" << hook << ".txt: a line before the first profile: " << line;
    else if (line.rfind("error: ", 0) == 0) v->error = line.substr(7);
    else if (line.rfind("entries: ", 0) == 0) continue;
    else if (const size_t colon = line.find(": "); colon != std::string::npos) {
      const std::string mode = line.substr(0, colon), rest = line.substr(colon + 2);
      if (rest.rfind("temper: ", 0) == 0) v->line[mode] = rest;
      else v->rows[mode].insert(rest);
    }
  }
  return out;
}

bool in(std::initializer_list<int> values, int v) { return std::find(values.begin(), values.end(), v) != values.end(); }
bool v3_grid(int, int, int ncols, int nwarps, int rows) {
  return in({1, 2, 4, 8, 16}, nwarps) && in({1, 2, 4, 8}, rows) && mmvq::launchable(ncols, nwarps, rows, 32);
}

// The current reader's verdict, in the golden files' form.
Verdict current(const fs::path& file) {
  const tp::Profile p = tp::read(file.string(), [](const std::string& n) { return test::profile_type_facts<tp::TypeFacts>(n); });
  Verdict v;
  v.error = p.error;
  if (!p.error.empty()) return v;
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  const std::pair<const char*, tp::Compiled> modes[] = {{"all", [](int, int, int, int, int) { return true; }}, {"v3-grid", v3_grid}};
  for (const auto& [mode, compiled] : modes) {
    const tp::Choices c = tp::choose(p, h100, compiled);
    v.line[mode] = tp::line("/p.json", c, h100);
    for (const auto& [k, cfg] : c.table)
      v.rows[mode].insert(std::to_string(k.launch) + " " + std::to_string(k.type) + " " + std::to_string(k.n) + " " + std::to_string(k.k) +
                          " " + std::to_string(k.ncols) + " -> " + std::to_string(cfg.nwarps) + " " + std::to_string(cfg.rows));
  }
  return v;
}

TEST(ReaderGolden, EveryFieldedHookHasVerdictsOnProfilesOfTheCorpus) {
  for (int hook : kFieldedHooks) {
    SCOPED_TRACE("hook v" + std::to_string(hook));
    const auto verdicts = golden(hook);
    EXPECT_GE(verdicts.size(), 100u);
    for (const auto& [name, v] : verdicts) {
      EXPECT_TRUE(fs::exists(kCorpus / name)) << name << ": a verdict on a profile the corpus no longer has";
      if (v.error.empty()) {
        EXPECT_EQ(v.line.size(), 2u) << name;
      }
    }
  }
}

// The kinds, fields and rules a newer hook added are skipped by an older one entry by entry; what an
// older hook does launch, the current one launches with the same config (the table rows are
// launch kind, type, n, k, ncols -> nwarps, rows), on every profile the current reader loads.
TEST(ReaderGolden, WhatAFieldedHookLaunchesTheCurrentReaderLaunchesAlike) {
  int compared = 0;
  for (int hook : kFieldedHooks) {
    for (const auto& [name, old] : golden(hook)) {
      if (!old.error.empty()) continue;
      const Verdict now = current(kCorpus / name);
      if (!now.error.empty()) continue;  // a rule newer than that hook refuses the file now
      for (const auto& [mode, rows] : old.rows)
        for (const std::string& row : rows) {
          EXPECT_TRUE(now.rows.count(mode) && now.rows.at(mode).count(row))
              << name << " (" << mode << "): hook v" << hook << " launches " << row << ", the current reader does not";
          ++compared;
        }
    }
  }
  EXPECT_GE(compared, 100);
}

// A Temper profile Temper accepts (loads and validates) that a fielded hook refuses whole (it then runs stock):
// `temper profile validate` warns of it, so no one ships it unawares.
TEST(ReaderGolden, AProfileAFieldedHookRefusesIsOneTemperWarnsOf) {
  int accepted_but_refused = 0;
  for (int hook : kFieldedHooks) {
    for (const auto& [name, old] : golden(hook)) {
      if (old.error.empty()) continue;
      Profile p;
      try {
        p = load_profile(kCorpus / name, "");
      } catch (const Error&) {
        continue;  // Temper refuses it too
      }
      if (p.source != kSourceTemper || !validate_profile(p).empty()) continue;  // an import (kernel-anvil) is not the engine's
      ++accepted_but_refused;
      EXPECT_FALSE(profile_warnings(p).empty()) << name << ": hook v" << hook << " refuses it (\"" << old.error
                                                << "\"), and Temper accepts it without a warning";
    }
  }
  EXPECT_GE(accepted_but_refused, 1);  // valid-groups-older-hooks-collide.json, at least
}

}  // namespace
}  // namespace temper
