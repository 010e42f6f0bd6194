#pragma once
// The `temper` command line: each sub-command lives in its own cmd_*.cpp and registers itself.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace temper::cli {

using Args = std::vector<std::string>;  // the sub-command's arguments (after its name)

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `temper help`
  std::string_view usage;    // full usage text for `temper help NAME`
  std::function<int(const Args&)> run;  // returns the exit code; may throw temper::Error
};

std::vector<Command>& registry();

struct Registrar {
  explicit Registrar(Command c) { registry().push_back(std::move(c)); }
};

// Small helpers shared by commands.
bool has_flag(const Args& args, std::string_view flag);
// Value after `--name` or in `--name=value`; empty optional when absent.
std::optional<std::string> option(const Args& args, std::string_view name);
// Arguments that are neither options nor option values; `valued` lists options that take a value.
std::vector<std::string> positionals(const Args& args, std::vector<std::string_view> valued);
// Throws Error(BadInput) naming the first option not in `known` (flags and valued together).
void reject_unknown(const Args& args, std::vector<std::string_view> known);

}  // namespace temper::cli

namespace temper::engine {
struct ProbeOptions;
}
namespace temper::cli {
// The engine probe a command talks to: `--probe PATH`, else the hooked engine built (or found in
// the cache) from `--engine-src DIR` for `--arch` (default: this machine's first GPU) and
// `--kernel-set`, with the provenance a session records. Defined in cmd_engine.cpp.
engine::ProbeOptions engine_probe_options(const Args& args);
}  // namespace temper::cli
