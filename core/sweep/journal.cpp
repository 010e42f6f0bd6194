#include <set>
#include <tuple>

#include "temper/append_log.h"
#include "temper/error.h"
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

std::string header_line(const Session& header) {
  json h = to_json(header);
  // The header is the run's identity; results live on the lines after it.
  h.erase("results");
  h.erase("winners");
  h.erase("estimates");
  h.erase("confirmations");
  return json{{"journal", kJournalMagic}, {"journal_version", kJournalVersion}, {"session", h}}.dump() + "\n";
}

constexpr std::string_view kKind = "journal", kOwner = "temper sweep";

}  // namespace

Journal::Journal(AppendLog log) : log_(std::move(log)) {}

Journal Journal::create(const std::filesystem::path& path, const Session& header, const WriteOptions& options) {
  return Journal(AppendLog::create(path, header_line(header), kKind, kOwner, options));
}

Journal Journal::reopen(const std::filesystem::path& path, const JournalContents& contents) {
  return Journal(AppendLog::reopen(path, contents.valid_bytes, contents.missing_newline, kKind, kOwner));
}

void Journal::append(const Result& r) { log_.append(to_json(r).dump() + "\n"); }

void Journal::append(const Confirmation& c) { log_.append(json{{kConfirmationKey, to_json(c)}}.dump() + "\n"); }

JournalContents read_journal(const std::filesystem::path& path) { return parse_journal(read_input(path, kMaxJournalInputBytes, "journal"), path_text(path)); }

JournalContents parse_journal(std::string_view text, const std::string& name) {
  JournalContents out;
  size_t line_no = 0;
  const LogLines read = split_log(text, name, "Temper sweep journal", [&](std::string_view line) {
    const std::string where = name + ":" + std::to_string(++line_no);
    // A duplicate key is damage, never a torn write: refused like any other (nlohmann keeps the last).
    const std::optional<json> parsed = parse_json_line(line, where);
    if (!parsed || !parsed->is_object()) return false;  // the last line: torn by a crash, measured again
    const json& j = *parsed;
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
    return true;
  });
  out.dropped_last_line = read.dropped_last_line;
  out.missing_newline = read.missing_newline;
  out.valid_bytes = read.valid_bytes;
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
