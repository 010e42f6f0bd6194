#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "temper/defaults.h"
#include "temper/error.h"
#include "temper/format.h"
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

CLI::Validator fraction_up_to(int hi, const std::string& example) {
  return CLI::Validator(
      [hi, example](std::string& t) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(t.c_str(), &end);
        return !t.empty() && *end == '\0' && v >= 0 && v <= hi
                   ? ""
                   : "expected a fraction 0.." + std::to_string(hi) + " (" + example + "), got '" + t + "'";
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

CLI::Option* add_min_speedup(CLI::App& app, double& min_speedup) {
  return app.add_option("--min-speedup", min_speedup, "least speedup --approve significant accepts (0.03 = 3%)")
      ->type_name("FRACTION")
      ->check(fraction_up_to(10, "0.03 = 3%"));
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

// Levenshtein distance: how many single-character edits turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The known word a typo most likely meant ("" when none is close): at most two edits, and fewer
// than half the word.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = 3;
  for (const auto& k : known) {
    const size_t d = edit_distance(word, k);
    if (d < best_d && 2 * d < word.size()) best = k, best_d = d;
  }
  return best;
}

// The deepest sub-command the parser reached ("profile" → "export").
CLI::App* deepest(CLI::App& app) {
  CLI::App* a = &app;
  for (auto subs = a->get_subcommands(); !subs.empty(); subs = a->get_subcommands()) a = subs.front();
  return a;
}

// For arguments the parser did not know: the option each unknown `--word` probably meant and, where
// words were left over (`extras`), the sub-command each one probably meant.
std::string suggestions(CLI::App& app, const std::vector<std::string>& args, bool extras) {
  CLI::App* at = deepest(app);
  std::vector<std::string> options, subcommands;
  for (const CLI::App* a = at; a; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      for (const auto& name : o->get_lnames()) options.push_back("--" + name);
  for (const CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; })) subcommands.push_back(sub->get_name());
  std::string out;
  for (const auto& arg : args) {
    const std::string word = arg.substr(0, arg.find('='));
    if (word.rfind("--", 0) == 0 && std::find(options.begin(), options.end(), word) == options.end()) {
      if (const std::string m = did_you_mean(word, options); !m.empty()) out += "; did you mean " + m + " for " + word + "?";
    } else if (extras && word.rfind("-", 0) != 0) {
      if (const std::string m = did_you_mean(word, subcommands); !m.empty() && m != word)
        out += "; did you mean '" + m + "' for '" + word + "'?";
    }
  }
  return out;
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
    std::vector<std::string> names;
    for (const auto& c : registry()) names.emplace_back(c.name);
    const std::string guess = did_you_mean(name, names);
    std::fprintf(stderr, "temper: %s command '%s'%s (see `temper help`)\n", help ? "no" : "unknown", name.c_str(),
                 guess.empty() ? "" : ("; did you mean '" + guess + "'?").c_str());
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
    const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;  // words typed but not known
    std::fprintf(stderr, "%s: %s%s\n", command_path(app).c_str(), e.what(), suggestions(app, args, extras).c_str());
    return 2;
  } catch (const CLI::ConstructionError& e) {  // a command's options as this CLI11 cannot declare them
    std::fprintf(stderr, "temper %s: internal error: %s\n", name.c_str(), e.what());
    return 1;
  }
  try {
    return action();
  } catch (const temper::Error& e) {
    std::fprintf(stderr, "temper %s: %s\n", name.c_str(), temper::terminal_text(e.what()).c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "temper %s: internal error: %s\n", name.c_str(), temper::terminal_text(e.what()).c_str());
    return 1;
  }
}
