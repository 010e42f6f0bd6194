// `temper session`: what a saved session says (devices, counts, winners, estimate), without a GPU.
#include <iostream>

#include "cli.h"
#include "temper/error.h"
#include "temper/sweep.h"

namespace temper::cli {
namespace {

int run_session_command(const Args& args) {
  reject_unknown(args, {"--json"});
  const auto pos = positionals(args, {});
  if (pos.size() != 1) fail(ErrorKind::BadInput, "usage: temper session SESSION.json [--json]");
  Session s = load_session(pos[0]);
  if (s.winners.empty() && !s.results.empty()) finish_session(s);  // a session saved mid-way
  if (has_flag(args, "--json"))
    std::cout << summary_json(s).dump(2) << "\n";
  else
    std::cout << format_summary(s);
  return 0;
}

const Registrar reg{{"session", "summarise a saved sweep session (devices, winners, estimate)",
                     "usage: temper session SESSION.json [--json]\n\n"
                     "Prints a session's devices, result counts, verification failures, the per-shape table\n"
                     "(default µs, best µs ± CI, config, speedup with its CI, % of copy bandwidth, verdict)\n"
                     "and the estimate of the GEMV share of decode tokens/s. No GPU needed.\n"
                     "--json prints the same as JSON: id, status, model, devices (without plans),\n"
                     "result_counts, winners, estimates (fields as in docs/session-format.md).",
                     run_session_command}};

}  // namespace
}  // namespace temper::cli
