#pragma once
// The one way Temper opens a file a user names as input (sessions, profiles, journals, code
// objects, models): it must be a regular file of bounded size, so a FIFO, a device or a directory is
// refused at once instead of hanging or reading without end. Exit codes follow one rule: an input
// that cannot be opened or is not acceptable is bad input (Error(BadInput), exit 2, naming the
// path); a read that fails after opening is Error(Io) (exit 6).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace temper {

// Size limits, far above any real file of the kind, low enough that parsing stays well under 1 GiB.
constexpr uint64_t kMaxJsonInputBytes = uint64_t{64} << 20;      // sessions, profiles, GPU lists
constexpr uint64_t kMaxJournalInputBytes = uint64_t{256} << 20;  // sweep journals (one line a result)
constexpr uint64_t kMaxBinaryInputBytes = uint64_t{512} << 20;   // code objects
constexpr uint64_t kMaxProfileBytes = uint64_t{16} << 20;        // profiles: the engine's loader reads the same
constexpr int kMaxJsonDepth = 64;  // arrays and objects inside each other (real files: 6 at most)

// An open regular file: the descriptor (close it with ::close) and its size at opening.
struct InputFile {
  int fd = -1;
  uint64_t size = 0;
};

// Opens `path` read-only without blocking (a FIFO cannot hang it) and checks it is a regular file
// of at most `max_bytes` (0: no limit). `what` names the kind in messages ("session").
InputFile open_input(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// open_input, then the whole content.
std::string read_input(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what);

// What a file is by its first bytes, for one that should have been JSON: "a GGUF model (...which
// command takes it)", "a PNG image", "a sweep journal (...)"; "" when nothing is recognised.
std::string file_kind_by_content(std::string_view head);

// JSON text as a document: Error(BadInput) "<name>: ..." for invalid JSON (a file of another kind
// says what it is; a NUL byte included, where nlohmann would stop reading), numbers out of range
// (1e999), nesting deeper than kMaxJsonDepth and duplicate object keys (which nlohmann would
// silently resolve to the last one).
nlohmann::json parse_json_input(std::string_view text, const std::string& name);

// The same for one line that may be torn (a journal's last line after a crash): nullopt when it is
// not JSON at all; duplicate keys and numbers out of range are still Error(BadInput).
std::optional<nlohmann::json> parse_json_line(std::string_view text, const std::string& name);

// read_input (max_bytes) + parse_json_input.
nlohmann::json read_json_input(const std::filesystem::path& path, std::string_view what, uint64_t max_bytes = kMaxJsonInputBytes);

// Error(BadInput) "<option> <output> is the input <input>: ..." when `output` names the same file as
// one of `inputs`: the same file (inode, so links and other spellings count) or the same resolved
// path. Commands call it before writing, so a mistyped -o never destroys what it was made from.
void refuse_overwriting_inputs(const std::filesystem::path& output, const std::vector<std::filesystem::path>& inputs,
                               std::string_view option = "-o");

// A path as text for messages and JSON: valid UTF-8 kept, other bytes as "\xNN".
std::string path_text(const std::filesystem::path& path);

// What identifies a file as an input whose content is too large to hash on every run (a binary, a
// library): its absolute path (as path_text), size and modification time; "-" for an empty path.
std::string file_identity(const std::filesystem::path& path);

}  // namespace temper
