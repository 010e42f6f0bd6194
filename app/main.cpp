#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "temper/error.h"

namespace temper::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

bool has_flag(const Args& args, std::string_view flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

std::optional<std::string> option(const Args& args, std::string_view name) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == name) {
      if (i + 1 >= args.size()) fail(ErrorKind::BadInput, std::string(name) + " needs a value");
      return args[i + 1];
    }
    if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=')
      return a.substr(name.size() + 1);
  }
  return std::nullopt;
}

std::vector<std::string> positionals(const Args& args, std::vector<std::string_view> valued) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      if (std::find(valued.begin(), valued.end(), a) != valued.end()) ++i;
      continue;
    }
    out.push_back(a);
  }
  return out;
}

void reject_unknown(const Args& args, std::vector<std::string_view> known) {
  for (const auto& a : args) {
    if (a.size() < 2 || a[0] != '-') continue;
    const std::string_view key = std::string_view(a).substr(0, a.find('='));
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail(ErrorKind::BadInput, "unknown option " + std::string(key));
  }
}

}  // namespace temper::cli

namespace {

using namespace temper::cli;

void print_help() {
  std::printf("temper %s: profile and tune quantized GEMV (mmvq) kernels for LLM decode\n\n", TEMPER_VERSION);
  std::printf("usage: temper COMMAND [ARGS]\n\ncommands:\n");
  auto cmds = registry();
  std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  for (const auto& c : cmds) std::printf("  %-12.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.summary.size()), c.summary.data());
  std::printf("  %-12s %s\n  %-12s %s\n", "help", "this list, or `temper help COMMAND`", "--version", "print the version");
  std::printf("\nexit codes: 0 ok, 1 internal, 2 bad input, 3 no device, 4 GPU fault, 5 verification failed, 6 I/O, 7 cancelled\n");
}

const Command* find(std::string_view name) {
  for (const auto& c : registry())
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    if (args.size() > 1) {
      if (const Command* c = find(args[1])) {
        std::cout << c->usage << "\n";
        return 0;
      }
      std::fprintf(stderr, "temper: no command '%s' (see `temper help`)\n", args[1].c_str());
      return 2;
    }
    print_help();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::printf("temper %s\n", TEMPER_VERSION);
    return 0;
  }
  const Command* cmd = find(args[0]);
  if (!cmd) {
    std::fprintf(stderr, "temper: unknown command '%s' (see `temper help`)\n", args[0].c_str());
    return 2;
  }
  const Args rest(args.begin() + 1, args.end());
  if (has_flag(rest, "--help") || has_flag(rest, "-h")) {
    std::cout << cmd->usage << "\n";
    return 0;
  }
  try {
    return cmd->run(rest);
  } catch (const temper::Error& e) {
    std::fprintf(stderr, "temper %s: %s\n", args[0].c_str(), e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "temper %s: internal error: %s\n", args[0].c_str(), e.what());
    return 1;
  }
}
