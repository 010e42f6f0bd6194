// Writes the verdicts of one engine profile reader (temper-mmvq-profile.h, by include path) on every
// profile of tests/profile/corpus/: the golden data of tests/engine/reader-golden/hook-vN.txt. The
// readers of hooks in the field are history, not code of Temper's; regenerate a file (after adding to
// the corpus) from the commit before the one that removed that reader, e.g. for hook v3:
//   mkdir /tmp/v3 && git show $(git log -1 --format=%h -- tests/engine/hook-v3)^:tests/engine/hook-v3/temper-mmvq-profile.h \
//       > /tmp/v3/temper-mmvq-profile.h
//   c++ -std=c++20 -I/tmp/v3 -Itests -Icore/common/include tests/engine/reader-golden/generate.cpp \
//       build-test/core/common/libtemper_common.a -o /tmp/gen && /tmp/gen tests/profile/corpus > hook-v3.txt
// Per profile: the reader's error, its entry count, and for an H100 with every config compiled ("all") and with hook v3's grid ("v3-grid")
// the engine's one line and the table it launches from (launch type n k ncols -> nwarps rows).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "temper-mmvq-profile.h"
#include "support/profile_type_facts.h"
#include "temper/mmvq_traits.h"

namespace tp = temper_profile;

namespace {
bool in(std::initializer_list<int> values, int v) { return std::find(values.begin(), values.end(), v) != values.end(); }
// Hook v3's units: nwarps {1, 2, 4, 8, 16} x rows {1, 2, 4, 8} that launch at 32-wide waves.
bool v3_grid(int, int, int ncols, int nwarps, int rows) {
  return in({1, 2, 4, 8, 16}, nwarps) && in({1, 2, 4, 8}, rows) && temper::mmvq::launchable(ncols, nwarps, rows, 32);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const tp::Device h100{"sm_90", "NVIDIA H100 80GB HBM3", 132, 0};
  for (const auto& f : files) {
    const tp::Profile p = tp::read(f.string(), [](const std::string& n) { return temper::test::profile_type_facts<tp::TypeFacts>(n); });
    std::printf("== %s\nerror: %s\nentries: %zu\n", f.filename().string().c_str(), p.error.c_str(), p.entries.size());
    if (!p.error.empty()) continue;
    const std::pair<const char*, tp::Compiled> modes[] = {{"all", [](int, int, int, int, int) { return true; }}, {"v3-grid", v3_grid}};
    for (const auto& [mode, compiled] : modes) {
      const tp::Choices c = tp::choose(p, h100, compiled);
      std::printf("%s: %s\n", mode, tp::line("/p.json", c, h100).c_str());
      for (const auto& [k, cfg] : c.table)
        std::printf("%s: %d %d %lld %lld %lld -> %d %d\n", mode, k.launch, k.type, k.n, k.k, k.ncols, cfg.nwarps, cfg.rows);
    }
  }
}
