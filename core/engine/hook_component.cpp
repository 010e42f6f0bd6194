// The hook component's files, parsed once, and the applier of an edit list (hook/README.md).
#include "hook_component.h"

#include <algorithm>
#include <sstream>

#include "temper/error.h"

namespace temper::engine::hook_component {

namespace {

[[noreturn]] void bad(std::string_view path, int line, const std::string& what) {
  fail(ErrorKind::Internal, "hook/" + std::string(path) + ":" + std::to_string(line) + ": " + what);
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

bool yes_no(std::string_view path, int line, const std::string& v) {
  if (v == "yes") return true;
  if (v == "no") return false;
  bad(path, line, "expected yes or no, not \"" + v + "\"");
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// An edit list: `edit NAME`, options, the operation and the anchor's lines, `with`, the new lines, `end`.
std::vector<Edit> parse_edits(std::string_view path, std::string_view text) {
  std::vector<Edit> out;
  enum class State { Outside, Options, Anchor, Text } state = State::Outside;
  int n = 0;
  // A block line: "| text" is text and a newline, "|" an empty line, "\ text" text without one (last line only).
  const auto block_line = [&](const std::string& line, std::string& into) {
    if (!into.empty() && into.back() != '\n') bad(path, n, "a line after a \"\\ \" line (which ends the block without a newline)");
    if (line == "|") into += "\n";
    else if (starts(line, "| ")) into += line.substr(2) + "\n";
    else if (starts(line, "\\ ")) into += line.substr(2);
    else return false;
    return true;
  };
  for (const std::string& line : lines_of(text)) {
    ++n;
    if (state == State::Outside) {
      if (line.empty() || line[0] == '#') continue;
      if (!starts(line, "edit ")) bad(path, n, "expected `edit NAME`");
      out.emplace_back().name = line.substr(5);
      state = State::Options;
      continue;
    }
    Edit& e = out.back();
    if (state == State::Options) {
      const size_t sp = line.find(' ');
      const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
      if (line == "replace") e.op = Edit::Op::Replace, state = State::Anchor;
      else if (line == "insert-before") e.op = Edit::Op::InsertBefore, state = State::Anchor;
      else if (line == "insert-after") e.op = Edit::Op::InsertAfter, state = State::Anchor;
      else if (line == "append") e.op = Edit::Op::Append, state = State::Anchor;
      else if (line == "find first") e.find = Edit::Find::First;
      else if (line == "find optional") e.find = Edit::Find::Optional;
      else if (line == "line-start") e.line_start = true;
      else if (line == "kernels-only-from") e.kernels_only_from = true;
      else if (key == "after") e.after = value;
      else if (key == "within") e.within = unescape(value);
      else if (key == "since") e.since = std::stoi(value);
      else if (key == "feature") e.feature = value;
      else if (key == "when") e.when = value;
      else if (key == "unless") e.unless = value;
      else if (key == "flag" && value.find(' ') != std::string::npos) {
        e.flag = value.substr(0, value.find(' '));
        e.bits = std::stoi(value.substr(value.find(' ') + 1));
      } else bad(path, n, "unknown option \"" + line + "\"");
      continue;
    }
    if (state == State::Anchor) {
      if (line == "with") {
        if (e.anchor.empty() != (e.op == Edit::Op::Append)) bad(path, n, "an anchor is needed (and append takes none)");
        state = State::Text;
      } else if (!block_line(line, e.anchor)) bad(path, n, "expected an anchor line (\"| \" or \"\\ \") or `with`");
      continue;
    }
    if (line == "end") state = State::Outside;
    else if (!block_line(line, e.text)) bad(path, n, "expected a line (\"| \" or \"\\ \") or `end`");
  }
  if (state != State::Outside) bad(path, n, "the last edit has no `end`");
  return out;
}

std::vector<Family> parse_families() {
  const std::string_view path = "families.txt";
  std::vector<Family> out;
  int n = 0;
  for (const std::string& line : lines_of(file(path))) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    Family f;
    std::string tested, groups, pipelining, path_choice, moe;
    if (!(in >> f.name >> tested >> f.types >> groups >> pipelining >> path_choice >> moe))
      bad(path, n, "expected: family tested types groups pipelining mul_mat-path moe-cap");
    for (size_t at = 0; at <= tested.size();) {
      const size_t comma = std::min(tested.find(',', at), tested.size());
      f.tested.push_back(tested.substr(at, comma - at));
      at = comma + 1;
    }
    f.groups = yes_no(path, n, groups);
    f.pipelining = yes_no(path, n, pipelining);
    f.mul_mat_path = yes_no(path, n, path_choice);
    f.moe_cap = yes_no(path, n, moe);
    out.push_back(std::move(f));
  }
  if (out.empty()) bad(path, n, "no family");
  return out;
}

// The first occurrence of `needle` at or after `from` (that starts a line, with line_start).
size_t find_from(const std::string& t, const std::string& needle, size_t from, bool line_start) {
  for (size_t at = t.find(needle, from); at != std::string::npos; at = t.find(needle, at + 1))
    if (!line_start || at == 0 || t[at - 1] == '\n') return at;
  return std::string::npos;
}

bool meant_for(const Edit& e, int hook_version, const std::map<std::string, bool>& features) {
  const auto on = [&](const std::string& f) { return features.count(f) && features.at(f); };
  if (hook_version < e.since) return false;
  if (!e.feature.empty() && !on(e.feature)) return false;
  if (!e.when.empty() && !on(e.when)) return false;
  if (!e.unless.empty() && on(e.unless)) return false;
  return true;
}

}  // namespace

std::string_view file(std::string_view path) {
  for (size_t i = 0; i < detail::kFileCount; ++i)
    if (path == detail::kFiles[i].path) return detail::kFiles[i].text;
  fail(ErrorKind::Internal, "hook/" + std::string(path) + " is not embedded in this build of Temper");
}

const std::vector<Family>& families() {
  static const std::vector<Family> all = parse_families();
  return all;
}

std::string tested_text(const Family& f) {
  std::string out;
  for (const std::string& t : f.tested) {
    const size_t at = t.find('@');
    out += (out.empty() ? "" : ", ") + (at == std::string::npos ? t : t.substr(0, at + 1 + 7));
  }
  return out;
}

const std::vector<Edit>& edits(const std::string& family, const std::string& name) {
  static std::map<std::string, std::vector<Edit>> parsed;
  const std::string path = "families/" + family + "/" + name + ".edits";
  auto it = parsed.find(path);
  if (it == parsed.end()) {
    std::vector<Edit> list;
    for (size_t i = 0; i < detail::kFileCount; ++i)
      if (path == detail::kFiles[i].path) list = parse_edits(path, detail::kFiles[i].text);
    it = parsed.emplace(path, std::move(list)).first;
  }
  return it->second;
}

const std::map<std::string, std::string>& vars(const std::string& family) {
  static std::map<std::string, std::map<std::string, std::string>> parsed;
  auto it = parsed.find(family);
  if (it == parsed.end()) {
    const std::string path = "families/" + family + "/units.vars";
    std::map<std::string, std::string> v;
    int n = 0;
    for (const std::string& line : lines_of(file(path))) {
      ++n;
      if (line.empty() || line[0] == '#') continue;
      const size_t eq = line.find(" = ");
      if (eq == std::string::npos) bad(path, n, "expected `name = value`");
      v[line.substr(0, eq)] = line.substr(eq + 3);
    }
    it = parsed.emplace(family, std::move(v)).first;
  }
  return it->second;
}

Applied apply(const std::string& source, const std::vector<Edit>& list, int hook_version) {
  Applied r;
  for (const Edit& e : list) r.present += !e.anchor.empty() && source.find(e.anchor) != std::string::npos;
  std::string& t = r.text;
  t = source;
  // A feature is on where its edit's anchor follows the anchor of the edit it names (in the text as given).
  std::map<std::string, bool> features;
  for (const Edit& e : list) {
    if (e.feature.empty() || hook_version < e.since) continue;
    size_t from = 0;
    for (const Edit& a : list)
      if (a.name == e.after) {
        from = t.find(a.anchor);
        break;
      }
    features[e.feature] = from != std::string::npos && t.find(e.anchor, from) != std::string::npos;
  }
  std::map<std::string, size_t> where;  // each applied edit's anchor, as the text stands now
  const auto shift = [&](size_t at, long delta) {
    for (auto& [_, p] : where)
      if (p > at) p = size_t(long(p) + delta);
  };
  for (const Edit& e : list) {
    if (!meant_for(e, hook_version, features)) continue;
    if (e.op == Edit::Op::Append) {
      if (!t.empty() && t.back() != '\n') t += '\n';
      t += e.text;
      ++r.reached;
      continue;
    }
    const size_t from = e.after.empty() ? 0 : (where.count(e.after) ? where.at(e.after) : 0);
    const size_t at = find_from(t, e.anchor, from, e.line_start);
    if (at == std::string::npos) {
      if (e.find == Edit::Find::Optional) continue;
      r.failed = e.name;
      return r;
    }
    if (e.find != Edit::Find::First && t.find(e.anchor, at + 1) != std::string::npos) {
      r.failed = e.name + " (found more than once)";
      return r;
    }
    if (!e.within.empty()) {
      const size_t end = t.find(e.within, from);
      if (end == std::string::npos || at > end) {
        r.failed = e.name;
        return r;
      }
    }
    if (e.kernels_only_from) r.before_kernels_only = t.substr(0, at);
    switch (e.op) {
      case Edit::Op::Replace:
        t.replace(at, e.anchor.size(), e.text);
        shift(at, long(e.text.size()) - long(e.anchor.size()));
        where[e.name] = at;
        break;
      case Edit::Op::InsertBefore:
        t.insert(at, e.text);
        shift(at, long(e.text.size()));
        where[e.name] = at + e.text.size();
        break;
      case Edit::Op::InsertAfter:
        t.insert(at + e.anchor.size(), e.text);
        shift(at + e.anchor.size(), long(e.text.size()));
        where[e.name] = at;
        break;
      case Edit::Op::Append:
        break;
    }
    if (!e.flag.empty()) r.flags[e.flag] |= e.bits;
    ++r.reached;
  }
  r.ok = true;
  return r;
}

std::string fill(std::string_view name, std::string_view section, const std::map<std::string, std::string>& values) {
  const std::string path = "templates/" + std::string(name);
  const std::string_view text = file(path);
  const std::string head = "@@ " + std::string(section) + "\n";
  size_t at = text.rfind(head, 0) == 0 ? 0 : text.find("\n" + head);
  if (at == std::string_view::npos) fail(ErrorKind::Internal, "hook/" + path + ": no section " + std::string(section));
  at += (at == 0 ? 0 : 1) + head.size();
  size_t end = text.find("\n@@ ", at);
  end = end == std::string_view::npos ? text.size() : end + 1;
  std::string out(text.substr(at, end - at));
  for (size_t open = out.find("{{"); open != std::string::npos; open = out.find("{{", open)) {
    const size_t close = out.find("}}", open);
    const std::string key = out.substr(open + 2, close == std::string::npos ? 0 : close - open - 2);
    const auto v = values.find(key);
    if (close == std::string::npos || v == values.end())
      fail(ErrorKind::Internal, "hook/" + path + " [" + std::string(section) + "]: no value for {{" + key + "}}");
    out.replace(open, close + 2 - open, v->second);
    open += v->second.size();
  }
  return out;
}

}  // namespace temper::engine::hook_component
