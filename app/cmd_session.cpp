// `temper session`: what a saved session says (devices, counts, winners, estimate), without a GPU.
#include <iostream>

#include "cli.h"
#include "temper/error.h"
#include "temper/sweep.h"

namespace temper::cli {
namespace cmd_session {  // own namespace: the commands are compiled together (unity build)
namespace {

struct Options {
  std::string path, compare;
  bool json = false;
};

int run_session_command(const Options& o) {
  const Session s = read_session(o.path);
  if (!o.compare.empty()) {
    const Session other = read_session(o.compare);
    const SessionComparison c = compare_sessions(s, other);
    // Two different models used to compare as "0 of 0 agree; median 0.00 %".
    if (c.winners_compared == 0 && c.medians_compared == 0)
      fail(ErrorKind::BadInput, o.path + " and " + o.compare + " have no shapes in common (different models?): nothing to compare");
    if (o.json)
      std::cout << to_json(c).dump(2) << "\n";
    else
      std::cout << format_comparison(c);
    return 0;
  }
  if (o.json)
    std::cout << summary_json(s).dump(2) << "\n";
  else
    std::cout << format_summary(s);
  return 0;
}

const Registrar reg{{"session", "summarise a saved sweep session (devices, winners, estimate)",
                     "Prints a session's devices, result counts, verification failures, the per-shape table\n"
                     "(default µs, best µs ± CI, config, speedup with its CI, % of copy bandwidth, verdict)\n"
                     "and the estimate of the GEMV share of decode tokens/s. No GPU needed. The verdict says\n"
                     "whether a winner was confirmed by the sweep's interleaved re-measure (\"winner, confirmed\"),\n"
                     "was never re-measured (--no-confirm, older sessions), or lost it (\"default stays (not\n"
                     "confirmed)\", with the paired medians below the table).\n"
                     "--json prints the same as JSON: id, status, model, devices (without plans),\n"
                     "result_counts, winners (with confirmed and note), confirmations, estimates (fields as\n"
                     "in docs/session-format.md).\n"
                     "--compare: two sweeps of the same shapes (e.g. the same sweep run twice): how many winners\n"
                     "agree (same verdict and config) and the spread of the medians, |a - b| / mean, over the\n"
                     "results timed in both (median, p90, max), and how many winners each had confirmed.",
                     [](CLI::App& app) {
                       auto o = std::make_shared<Options>();
                       app.add_option("SESSION", o->path, "a session file")->required();
                       app.add_option("--compare", o->compare, "a second sweep of the same shapes")->type_name("OTHER");
                       add_json(app, o->json);
                       return [o] { return run_session_command(*o); };
                     }}};

}  // namespace
}  // namespace cmd_session
}  // namespace temper::cli
