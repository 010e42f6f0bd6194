#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <tuple>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/validate.h"
#include "temper/sweep.h"

namespace temper {
namespace {

using nlohmann::json;

constexpr std::string_view kJournalMagic = "temper-sweep-journal";
// 2: lines may also be {"confirmation": {...}} (version 1 journals hold results only, and read as before).
constexpr int kJournalVersion = 2;
constexpr const char* kConfirmationKey = "confirmation";

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, std::string_view data, const std::filesystem::path& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(ErrorKind::Io, "cannot append to journal " + path.string() + ": " + errno_text());
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void sync(int fd, const std::filesystem::path& path) {
  if (::fsync(fd) != 0) fail(ErrorKind::Io, "cannot sync journal " + path.string() + ": " + errno_text());
}

std::string header_line(const Session& header) {
  json h = to_json(header);
  // The header is the run's identity; results live on the lines after it.
  h.erase("results");
  h.erase("winners");
  h.erase("estimates");
  h.erase("confirmations");
  return json{{"journal", kJournalMagic}, {"journal_version", kJournalVersion}, {"session", h}}.dump() + "\n";
}

// One sweep per journal: an exclusive lock for as long as the journal is open, so a second
// `sweep --resume` of it (or a new sweep writing the same journal) is refused instead of measuring
// everything twice. Closes `fd` when refusing.
void lock_journal(int fd, const std::filesystem::path& path) {
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return;
  const int e = errno;
  ::close(fd);
  if (e == EWOULDBLOCK)
    fail(ErrorKind::BadInput, "journal " + path_text(path) + " is in use by another temper sweep (let it finish, or stop it first)");
  fail(ErrorKind::Io, "cannot lock journal " + path_text(path) + ": " + std::strerror(e));
}

}  // namespace

Journal::Journal(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

Journal::Journal(Journal&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Journal Journal::create(const std::filesystem::path& path, const Session& header, const WriteOptions& options) {
  ignore_file_size_signal();
  // Appended to and read back on --resume: only a regular file can be a journal.
  if (written_in_place(path))
    fail(ErrorKind::BadInput, "journal " + path_text(path) + " is not a regular file (a FIFO or a device); give --journal a file path");
  // Never replace a journal another sweep is still writing.
  if (const int old = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); old >= 0) {
    lock_journal(old, path);
    ::close(old);
  }
  // The header goes in atomically, so a journal is never seen without one.
  write_file_atomic(path, header_line(header), options);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::Io, "cannot open journal " + path.string() + ": " + errno_text());
  lock_journal(fd, path);
  return Journal(path, fd);
}

Journal Journal::reopen(const std::filesystem::path& path, const JournalContents& contents) {
  ignore_file_size_signal();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorKind::Io, "cannot open journal " + path.string() + ": " + errno_text());
  lock_journal(fd, path);
  Journal j(path, fd);
  // Cut a torn last line off, so new lines start clean.
  if (::ftruncate(fd, static_cast<off_t>(contents.valid_bytes)) != 0)
    fail(ErrorKind::Io, "cannot truncate journal " + path.string() + ": " + errno_text());
  if (::lseek(fd, 0, SEEK_END) < 0) fail(ErrorKind::Io, "cannot seek journal " + path.string() + ": " + errno_text());
  if (contents.missing_newline) write_all(fd, "\n", path);
  sync(fd, path);
  // From here on, appends.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_APPEND) != 0)
    fail(ErrorKind::Io, "cannot set append mode on journal " + path.string() + ": " + errno_text());
  return j;
}

void Journal::append(const Result& r) { append_line(to_json(r).dump() + "\n"); }

void Journal::append(const Confirmation& c) {
  append_line(json{{kConfirmationKey, to_json(c)}}.dump() + "\n");
}

void Journal::append_line(const std::string& line) {
  std::lock_guard lock(mutex_);
  // One write per line: a kill -9 leaves at most this line torn, never an earlier one.
  write_all(fd_, line, path_);
  sync(fd_, path_);
}

JournalContents read_journal(const std::filesystem::path& path) { return parse_journal(read_input(path, kMaxJournalInputBytes, "journal"), path_text(path)); }

JournalContents parse_journal(std::string_view text, const std::string& name) {
  JournalContents out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    const bool last = nl == std::string::npos || nl + 1 == text.size();
    const size_t end = nl == std::string::npos ? text.size() : nl;
    const std::string_view line(text.data() + pos, end - pos);
    const std::string where = name + ":" + std::to_string(line_no);
    // A duplicate key is damage, never a torn write: refused like any other (nlohmann keeps the last).
    const std::optional<json> parsed = parse_json_line(line, where);
    json j = parsed ? *parsed : json();
    if (!parsed || !j.is_object()) {
      if (line_no == 1) fail(ErrorKind::BadInput, where + ": not a Temper sweep journal (the first line is not a JSON header)");
      if (!last) fail(ErrorKind::BadInput, where + ": garbled journal line (only the last line may be torn by a crash)");
      out.dropped_last_line = true;  // torn by a crash: that result is measured again
      break;
    }
    if (line_no == 1) {
      if (!j.contains("journal") || j["journal"] != kJournalMagic)
        fail(ErrorKind::BadInput, where + ": not a Temper sweep journal (no \"journal\": \"" + std::string(kJournalMagic) + "\")");
      const json& v = j.value("journal_version", json());
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kJournalVersion)
        fail(ErrorKind::BadInput, where + ": journal_version " + (v.is_primitive() ? v.dump() : v.type_name()) +
                                      " unsupported (this build reads 1.." +
                                      std::to_string(kJournalVersion) + ")");
      if (!j.contains("session")) fail(ErrorKind::BadInput, where + ": journal header has no \"session\"");
      if (!j["session"].is_object())
        fail(ErrorKind::BadInput, where + ": journal header's \"session\" is " + j["session"].type_name() +
                                      ", expected an object");
      json s = j["session"];
      s["results"] = json::array();
      s["winners"] = json::array();
      s["estimates"] = json::array();
      s.erase("confirmations");
      out.header = session_from_json(s, where + ": session");
    } else if (j.contains(kConfirmationKey)) {
      Confirmation c = confirmation_from_json(j[kConfirmationKey], where + ": confirmation");
      validate_confirmation(c, where + ": confirmation");
      if (!find_device(out.header, c.device)) fail(ErrorKind::BadInput, where + ": device " + std::to_string(c.device) + " is not in the journal's session");
      out.confirmations.push_back(std::move(c));
    } else {
      // A whole line that parses as JSON but not as a result is damage, not a torn write: refused.
      Result r = result_from_json(j, where);
      validate_result(r, where);
      if (!find_device(out.header, r.device)) fail(ErrorKind::BadInput, where + ": device " + std::to_string(r.device) + " is not in the journal's session");
      out.results.push_back(std::move(r));
    }
    out.valid_bytes = nl == std::string::npos ? text.size() : nl + 1;
    out.missing_newline = nl == std::string::npos;
    pos = end + 1;
  }
  if (line_no == 0) fail(ErrorKind::BadInput, name + ": empty journal (no header line)");
  return out;
}

Session resume_session(const JournalContents& contents) {
  Session s = contents.header;
  s.verdicts.clear();
  s.estimates.clear();
  s.status = "running";
  s.finished.clear();
  for (auto& d : s.devices) d.error.clear();
  // A result journaled twice keeps its first copy: a key is measured once per session.
  std::set<std::pair<GroupKey, Config>> seen;
  s.results.clear();
  for (const auto& r : contents.results)
    if (seen.insert({r.group(), r.config}).second) s.results.push_back(r);
  // Likewise a group is confirmed once: a second line for it (never written by Temper) is ignored.
  std::set<GroupKey> confirmed;
  s.confirmations.clear();
  for (const auto& c : contents.confirmations)
    if (confirmed.insert(c.group()).second) s.confirmations.push_back(c);
  return s;
}

}  // namespace temper
