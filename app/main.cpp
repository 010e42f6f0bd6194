#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/types.h"
#include "temper/verify.h"

namespace temper::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

namespace {
// "" when TEXT is a decimal integer in lo..hi, else what was expected.
std::string integer_error(std::string_view text, int64_t lo, uint64_t hi) {
  bool ok = false;
  if (!text.empty() && text[0] == '-') {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    ok = ec == std::errc() && end == text.data() + text.size() && v >= lo;
  } else {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    ok = !text.empty() && ec == std::errc() && end == text.data() + text.size() && v <= hi && (lo <= 0 || v >= uint64_t(lo));
  }
  if (ok) return "";
  return "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + std::string(text) + "'";
}
}  // namespace

int64_t parse_integer(std::string_view text, std::string_view what, int64_t lo, int64_t hi) {
  if (const auto why = integer_error(text, lo, uint64_t(hi)); !why.empty()) fail(ErrorKind::BadInput, std::string(what) + ": " + why);
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

CLI::Validator integer_in(int64_t lo, uint64_t hi) {
  return CLI::Validator([lo, hi](std::string& text) { return integer_error(text, lo, hi); },
                        std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator seconds_up_to(double hi) {
  return CLI::Validator(
      [hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > hi)
          return "expected seconds in (0, " + std::to_string(int(hi)) + "], got '" + text + "'";
        return "";
      },
      "");
}

CLI::Validator one_of(std::vector<std::string> words) {
  std::string list;
  for (const auto& w : words) list += (list.empty() ? "" : ", ") + w;
  return CLI::Validator(
      [words, list](std::string& text) -> std::string {
        if (std::find(words.begin(), words.end(), text) != words.end()) return "";
        return "expected one of " + list + ", got '" + text + "'";
      },
      "{" + list + "}");
}

CLI::Validator checked_by(std::function<void(const std::string&)> parse) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
        } catch (const Error& e) {
          return e.what();
        }
        return "";
      },
      "");
}

CLI::Option* add_json(CLI::App& app, bool& json) {
  return app.add_flag("--json", json, "print one JSON document on stdout (docs/json.md)");
}

CLI::Option* add_output(CLI::App& app, std::string& path, std::string what) {
  return app.add_option("-o,--output", path, std::move(what))->type_name("FILE");
}

CLI::Option* add_force(CLI::App& app, bool& force) {
  return app.add_flag("--force", force, "replace an output file even when it is read-only");
}

CLI::Option* add_device(CLI::App& app, int& device) {
  return app.add_option("--device", device, "device number as `temper devices` lists them (default 0)")
      ->check(integer_in(0, 1 << 20))
      ->type_name("N");
}

CLI::Option* add_type(CLI::App& app, std::string& type, std::string what) {
  return app.add_option("--type", type, std::move(what))->type_name("T")->check(checked_by([](const std::string& t) {
    if (!parse_type(t)) fail(ErrorKind::BadInput, "not a ggml type name (q4_0, q4_K, iq4_xs, ...), got '" + t + "'");
  }));
}

CLI::Option* add_types(CLI::App& app, std::string& list) {
  return app.add_option("--types", list, "only these types, e.g. q4_K,q6_K")
      ->type_name("LIST")
      ->check(checked_by([](const std::string& t) { parse_type_list(t); }));
}

CLI::Option* add_ncols(CLI::App& app, std::string& list) {
  return app.add_option("--ncols", list, "batch widths, e.g. 1,2,4,8 or 1-8")
      ->type_name("LIST")
      ->check(checked_by([](const std::string& t) { parse_ncols_list(t); }));
}

CLI::Option* add_engine(CLI::App& app, std::string& engine) {
  std::vector<std::string> known;
  for (auto e : defaults::known_engines()) known.emplace_back(e);
  engine = known.front();
  return app.add_option("--engine", engine, "whose default tables are the baseline (default " + known.front() + ")")
      ->type_name("VERSION")
      ->check(one_of(known));
}

}  // namespace temper::cli

namespace {

using namespace temper::cli;

constexpr const char* kExitCodes =
    "exit codes: 0 ok, 1 internal, 2 bad input, 3 no device, 4 GPU fault, 5 verification failed, 6 I/O, 7 cancelled";

void print_help() {
  std::printf("temper %s: profile and tune quantized GEMV (mmvq) kernels for LLM decode\n\n", TEMPER_VERSION);
  std::printf("usage: temper COMMAND [ARGS]\n\ncommands:\n");
  auto cmds = registry();
  std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  for (const auto& c : cmds) std::printf("  %-12.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.summary.size()), c.summary.data());
  std::printf("  %-12s %s\n  %-12s %s\n", "help", "this list, or `temper help COMMAND`", "--version", "print the version");
  std::printf("\n%s\n", kExitCodes);
}

// "temper sweep", "temper profile export": the deepest subcommand the parser reached.
std::string command_path(const CLI::App& app) {
  std::string path = "temper";
  for (const CLI::App* a = &app; a;) {
    const auto subs = a->get_subcommands();
    a = subs.empty() ? nullptr : subs.front();
    if (a) path += " " + a->get_name();
  }
  return path;
}

// Names newer CLI11 releases refuse when an option is declared (from 2.2: whitespace in a
// positional's name throws BadNameString, before any parsing): checked on every build, so the
// help tests catch them whatever CLI11 this machine has.
void check_option_names(CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    const std::string name = o->get_name(true, false);
    if (name.find_first_of(" \t\n") != std::string::npos)
      throw CLI::BadNameString("option name '" + name + "' of '" + app.get_name() + "' has whitespace");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_option_names(*sub);
}
}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto find = [](std::string_view name) {
    const auto& r = registry();
    const auto it = std::find_if(r.begin(), r.end(), [&](const Command& c) { return c.name == name; });
    return it == r.end() ? nullptr : &*it;
  };
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || (args[0] == "help" && args.size() == 1)) {
    print_help();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::printf("temper %s\n", TEMPER_VERSION);
    return 0;
  }
  const bool help = args[0] == "help";
  const std::string name = help ? args[1] : args[0];
  const Command* cmd = find(name);
  if (!cmd) {
    std::fprintf(stderr, "temper: %s command '%s' (see `temper help`)\n", help ? "no" : "unknown", name.c_str());
    return 2;
  }

  CLI::App app("temper", "temper");
  app.get_formatter()->column_width(28);
  app.set_help_flag();  // help of a command, never of the root (main prints that)
  CLI::App* sub = app.add_subcommand(std::string(cmd->name), std::string(cmd->summary));
  sub->footer(std::string(cmd->details) + "\n\n" + kExitCodes);
  sub->set_help_flag("-h,--help", "print this help");
  Action action;
  try {
    action = cmd->define(*sub);
    check_option_names(*sub);
    if (help) {
      std::cout << sub->help("temper");
      return 0;
    }
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\n", command_path(app).c_str(), e.what());
    return 2;
  } catch (const CLI::ConstructionError& e) {  // a command's options as this CLI11 cannot declare them
    std::fprintf(stderr, "temper %s: internal error: %s\n", name.c_str(), e.what());
    return 1;
  }
  try {
    return action();
  } catch (const temper::Error& e) {
    std::fprintf(stderr, "temper %s: %s\n", name.c_str(), e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "temper %s: internal error: %s\n", name.c_str(), e.what());
    return 1;
  }
}
