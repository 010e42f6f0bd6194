#include "temper/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "temper/error.h"
#include "temper/fileio.h"

namespace temper {
namespace {

std::string mib(uint64_t bytes) {
  return bytes % (uint64_t{1} << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

bool utf8_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence at s[i], 0 when there is none.
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t j = 1; j < n; ++j)
    if (!utf8_continuation(static_cast<unsigned char>(s[i + j]))) return 0;
  if (n == 2 && c < 0xC2) return 0;  // overlong
  return n;
}

}  // namespace

InputFile open_input(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  const std::string name = path_text(path);
  const std::string kind = what.empty() ? "" : " (" + std::string(what) + ")";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::BadInput, "cannot open " + name + kind + ": " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(ErrorKind::Io, "cannot stat " + name + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorKind::BadInput, name + ": not a regular file (" + node_kind(st.st_mode) + ")");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (max_bytes != 0 && size > max_bytes) {
    ::close(fd);
    fail(ErrorKind::BadInput, name + ": " + std::to_string(size) + " bytes, more than the " + mib(max_bytes) +
                                  " a" + (what.empty() ? "n input" : " " + std::string(what)) + " may have");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return {fd, size};
}

std::string read_input(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what) {
  const InputFile in = open_input(path, max_bytes, what);
  // Reads the size seen at opening: a file that grows meanwhile (a journal being appended to) is
  // read as it was, never without end.
  std::string text(in.size, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(in.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(in.fd);
      fail(ErrorKind::Io, "cannot read " + path_text(path) + ": " + std::strerror(e));
    }
    if (n == 0) break;  // shrank meanwhile
    got += static_cast<size_t>(n);
  }
  ::close(in.fd);
  text.resize(got);
  return text;
}

std::string file_kind_by_content(std::string_view head) {
  auto starts = [&](std::string_view magic) { return head.substr(0, magic.size()) == magic; };
  if (starts("GGUF")) return "a GGUF model (`temper inspect` and `temper sweep` take it; temper-gui opens it)";
  if (starts("\x89PNG")) return "a PNG image";
  if (starts("\xff\xd8\xff")) return "a JPEG image";
  if (starts("%PDF")) return "a PDF document";
  if (starts("\x7f" "ELF")) return "an ELF binary (a program or a code object; `temper occupancy` reads code objects)";
  if (starts("\x1f\x8b")) return "a gzip archive";
  if (starts("PK\x03\x04")) return "a zip archive";
  if (starts("<svg") || starts("<?xml")) return "an SVG or XML file";
  // A sweep journal is JSON Lines: one object per line, so the second line is where JSON stops.
  const size_t line = head.find('\n');
  if (starts("{") && line != std::string_view::npos && head.substr(line + 1, 1) == "{")
    return "a sweep journal (one JSON object per line; `temper sweep --resume` takes it)";
  return "";
}

namespace {
// nullopt for text that is not JSON at all when `lenient`; duplicate keys and out-of-range numbers
// are always errors.
std::optional<nlohmann::json> parse_checked(std::string_view text, const std::string& name, bool lenient) {
  using nlohmann::json;
  // nlohmann ends its input at a NUL byte and ignores the rest: JSON text never holds one.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    if (lenient) return std::nullopt;
    if (const std::string kind = file_kind_by_content(text.substr(0, 256)); !kind.empty())
      fail(ErrorKind::BadInput, name + ": not JSON: this is " + kind);
    fail(ErrorKind::BadInput, name + ": not valid JSON (byte " + std::to_string(nul + 1) + "): a NUL byte");
  }
  // Keys seen in each object being parsed, innermost last; arrays and objects open.
  std::vector<std::set<std::string>> keys;
  int depth = 0;
  std::string duplicate;
  const auto deeper = [&] {
    if (++depth > kMaxJsonDepth)
      fail(ErrorKind::BadInput, name + ": not usable JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  };
  const json::parser_callback_t reject_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: keys.emplace_back(); deeper(); break;
      case json::parse_event_t::object_end: keys.pop_back(); --depth; break;
      case json::parse_event_t::array_start: deeper(); break;
      case json::parse_event_t::array_end: --depth; break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) duplicate = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  // nlohmann's text without its "[json.exception.parse_error.101] " tag, which means nothing to a user.
  const auto plain = [](const json::exception& e) {
    const std::string w = e.what();
    const size_t tag = w.rfind("[json.exception.", 0) == 0 ? w.find("] ") : std::string::npos;
    return tag == std::string::npos ? w : w.substr(tag + 2);
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), reject_duplicates);
  } catch (const json::parse_error& e) {
    if (lenient && duplicate.empty()) return std::nullopt;
    if (!duplicate.empty()) fail(ErrorKind::BadInput, name + ": duplicate key \"" + duplicate.substr(0, 64) + "\" in one object (which one is meant?)");
    // The wrong kind of file altogether says what it is, not where a JSON parser gave up on it.
    if (const std::string kind = file_kind_by_content(text.substr(0, 256)); !kind.empty())
      fail(ErrorKind::BadInput, name + ": not JSON: this is " + kind);
    fail(ErrorKind::BadInput, name + ": not valid JSON (byte " + std::to_string(e.byte) + "): " + plain(e));
  } catch (const json::exception& e) {  // 1e999, a 5000-digit integer: out of range
    fail(ErrorKind::BadInput, name + ": not usable JSON: a number out of range (" + plain(e) + ")");
  }
  if (!duplicate.empty())
    fail(ErrorKind::BadInput, name + ": duplicate key \"" + duplicate.substr(0, 64) + "\" in one object (which one is meant?)");
  return j;
}
}  // namespace

nlohmann::json parse_json_input(std::string_view text, const std::string& name) { return *parse_checked(text, name, false); }

std::optional<nlohmann::json> parse_json_line(std::string_view text, const std::string& name) {
  return parse_checked(text, name, true);
}

nlohmann::json read_json_input(const std::filesystem::path& path, std::string_view what, uint64_t max_bytes) {
  return parse_json_input(read_input(path, max_bytes, what), path_text(path));
}

void refuse_overwriting_inputs(const std::filesystem::path& output, const std::vector<std::filesystem::path>& inputs,
                               std::string_view option) {
  struct stat out{};
  const bool out_exists = ::stat(output.c_str(), &out) == 0;
  std::error_code ec;
  const auto out_resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(output, ec), ec);
  for (const auto& input : inputs) {
    if (input.empty()) continue;
    struct stat in{};
    bool same = out_exists && ::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino;
    std::error_code ec2;
    const auto in_resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(input, ec2), ec2);
    same = same || (!ec && !ec2 && in_resolved == out_resolved);
    if (same)
      fail(ErrorKind::BadInput, std::string(option) + " " + path_text(output) + " is the input " + path_text(input) +
                                    ": refusing to overwrite it (choose another output)");
  }
}

std::string path_text(const std::filesystem::path& path) {
  const std::string& s = path.native();
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = utf8_length(s, i)) {
      out.append(s, i, n);
      i += n;
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      const auto c = static_cast<unsigned char>(s[i++]);
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string file_identity(const std::filesystem::path& p) {
  namespace fs = std::filesystem;
  if (p.empty()) return "-";
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
  return path_text(fs::absolute(p).lexically_normal()) + " " + std::to_string(size) + " " + std::to_string(mtime);
}

}  // namespace temper
