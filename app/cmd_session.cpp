// `temper session`: what a saved session says (devices, counts, winners, estimate), without a GPU.
#include <iostream>

#include "cli.h"
#include "temper/error.h"
#include "temper/sweep.h"

namespace temper::cli {
namespace {

int run_session_command(const Args& args) {
  reject_unknown(args, {"--json", "--compare"});
  const auto pos = positionals(args, {"--compare"});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "usage: temper session SESSION.json [--compare OTHER.json] [--json]");
  const Session s = read_session(pos[0]);
  if (const auto other_path = option(args, "--compare")) {
    const Session other = read_session(*other_path);
    const SessionComparison c = compare_sessions(s, other);
    // Two different models used to compare as "0 of 0 agree; median 0.00 %".
    if (c.winners_compared == 0 && c.medians_compared == 0)
      fail(ErrorKind::BadInput, pos[0] + " and " + *other_path + " have no shapes in common (different models?): nothing to compare");
    if (has_flag(args, "--json"))
      std::cout << to_json(c).dump(2) << "\n";
    else
      std::cout << format_comparison(c);
    return 0;
  }
  if (has_flag(args, "--json"))
    std::cout << summary_json(s).dump(2) << "\n";
  else
    std::cout << format_summary(s);
  return 0;
}

const Registrar reg{{"session", "summarise a saved sweep session (devices, winners, estimate)",
                     "usage: temper session SESSION.json [--json]\n"
                     "       temper session A.json --compare B.json [--json]\n\n"
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
                     run_session_command}};

}  // namespace
}  // namespace temper::cli
