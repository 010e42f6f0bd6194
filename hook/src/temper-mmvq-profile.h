#pragma once
// Temper's profile reader for the tuning hook (written into this tree by `temper engine patch`;
// docs/profile-format.md in Temper specifies what it reads). Plain C++17: no CUDA, no ggml, so
// Temper compiles this very file for the host too and runs its profile test corpus and a fuzzer
// through it, beside `temper profile validate` (the same rules, one specification).
//
// It never blocks, never throws and never allocates without bound: a profile is opened only as a
// regular file (O_NONBLOCK, then fstat), read up to kMaxBytes, parsed by a strict JSON reader that
// keeps only the fields it knows (nesting at most kMaxDepth). What `temper profile validate`
// refuses the whole file for, the engine ignores the whole file for (with the reason on its one
// line); what validate lists as an entry's problem makes that entry malformed (skipped, counted).
// The one difference is by design: an entry of a launch kind this reader does not know (written by
// a newer Temper than the hook's) is skipped and counted, where this Temper's validate refuses it.
#include <fcntl.h>
#include <locale.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace temper_profile {

constexpr size_t kMaxBytes = size_t{16} << 20;  // Temper's kMaxProfileBytes
constexpr int kMaxDepth = 64;                   // Temper's kMaxJsonDepth
constexpr int kSchemaVersion = 2;               // the newest schema this reader knows
constexpr int kMaxConfigValue = 32;             // nwarps, rows_per_block (Temper's kAnvilMaxValue)

// The launches an entry can tune (schema 2's "launch"; absent: mul_mat), as Temper names them
// (Launch in temper/keys.h); the hook's launch kinds use the same numbers.
// The *_unfused kinds are a fused gate/up launch as the hook runs it: two plain launches and the GLU.
// mul_mat_group (hook v5): 2..4 consecutive MUL_MATs of one input (q, k, v) as one launch after one
// quantization; its entries name their "members" and are looked up by Loader::group().
// The *_pipelined kinds (hook v6): the four engine launches at one column run as their pipelined
// instantiations (temper-mmvq.cuh's temper_mmvq_pipeline), each kind = its plain kind + kPipelinedBase.
// rms_norm_q8_1 (hook v8): not a GEMV; an RMS_NORM·MUL over rows of k floats at ncols columns that also
// writes the q8_1 activations of the mmvq launches reading it (type f32, n 1, config {0, 0}).
// glu_q8_1 (hook v9): likewise the GLU of an unfused gate/up pair over rows of k floats (k: the pair's n).
enum Launch : int {
  kMulMat = 0, kMulMatGlu = 1, kMulMatId = 2, kMulMatIdGlu = 3, kMulMatGluUnfused = 4, kMulMatIdGluUnfused = 5,
  kMulMatGroup = 6, kMulMatPipelined = 7, kMulMatGluPipelined = 8, kMulMatIdPipelined = 9, kMulMatIdGluPipelined = 10,
  kRmsNormQ8 = 11, kGluQ8 = 12, kLaunchKinds = 13, kUnknownLaunch = -1
};
constexpr int kPipelinedBase = kMulMatPipelined;
constexpr const char* kLaunchNames[kLaunchKinds] = {"mul_mat",        "mul_mat_glu",         "mul_mat_id",
                                                    "mul_mat_id_glu", "mul_mat_glu_unfused", "mul_mat_id_glu_unfused",
                                                    "mul_mat_group",  "mul_mat_pipelined",   "mul_mat_glu_pipelined",
                                                    "mul_mat_id_pipelined", "mul_mat_id_glu_pipelined", "rms_norm_q8_1",
                                                    "glu_q8_1"};
constexpr int kMaxGroupMembers = 4;  // a group's members: 2..4, of at most 2 distinct types
constexpr int kMaxGroupNcols = 4;    // a group runs at batch widths 1..4
inline bool group_nwarps(int w) { return w == 2 || w == 4 || w == 8; }   // the group kernel's grid
inline bool group_rows(int r) { return r == 1 || r == 2 || r == 4; }
inline bool launch_writes_q8(int l) { return l == kRmsNormQ8 || l == kGluQ8; }  // not a GEMV: a producer of q8_1
inline bool launch_is_fused(int l) {
  return l == kMulMatGlu || l == kMulMatIdGlu || l == kMulMatGluUnfused || l == kMulMatIdGluUnfused || l == kMulMatGluPipelined ||
         l == kMulMatIdGluPipelined;
}
inline bool launch_has_ids(int l) {
  return l == kMulMatId || l == kMulMatIdGlu || l == kMulMatIdGluUnfused || l == kMulMatIdPipelined || l == kMulMatIdGluPipelined;
}
inline bool launch_is_pipelined(int l) { return l >= kMulMatPipelined && l <= kMulMatIdGluPipelined; }

// What the reader needs to know of a ggml type, by name (case-insensitive): its id, whether mmvq has a
// kernel for it, its block size. id < 0: no such type.
struct TypeFacts {
  int id = -1;
  bool mmvq = false;
  int block = 0;
};
using TypeLookup = std::function<TypeFacts(const std::string& name)>;

struct Config {
  int nwarps = 0, rows = 0;
};

struct Entry {
  std::string arch;
  bool has_device = false;          // for one device (name + compute units), else for the arch
  std::string device_name;
  long long compute_units = 0;
  int launch = kMulMat;             // kUnknownLaunch: a launch kind this reader does not know
  std::string launch_name;          // as written ("mul_mat" when absent)
  int type = -1;
  long long n = 0, k = 0, ncols = 0;
  long long experts = 0, experts_used = 0;  // the ids kinds' (0 for the others)
  // mul_mat_group: its "members" in graph order (count may exceed kMaxGroupMembers in a malformed
  // entry: only the first ones are kept) and every member as "type id:n," (part of its key).
  int members = 0;
  int member_type[kMaxGroupMembers] = {-1, -1, -1, -1};
  long long member_n[kMaxGroupMembers] = {};
  std::string members_key;
  Config config;
  bool approved = false;
  std::string problem;              // empty: valid; else what `profile validate` objects to
};

// ggml's mmvq/mmq choice for one type at one batch width (the profile's "paths"; hook v4).
enum Path : int { kNoPath = 0, kMmvq = 1, kMmq = 2 };

struct PathRecord {
  std::string arch;
  bool has_device = false;          // for one device (name + compute units), else for the arch
  std::string device_name;
  long long compute_units = 0;
  int type = -1;
  int launch = kMulMat;             // kMulMat or kMulMatId; anything else is malformed (kUnknownLaunch)
  std::string launch_name;
  long long ncols = 0;
  int path = kNoPath, stock_path = kNoPath;
  bool approved = false;
  std::string problem;              // empty: valid; else what `profile validate` objects to
};

struct Profile {
  std::string error;                // not empty: the whole file is ignored, and why
  std::vector<Entry> entries;       // in file order
  std::vector<PathRecord> paths;    // in file order
};

// ---- the JSON text ------------------------------------------------------------------------------

namespace detail {

// A value the reader keeps: scalars whole, objects only where the schema descends into them
// (then their fields), arrays as a count of nothing (the schema's two arrays are read in place).
struct Field;
struct Value {
  enum Kind { Missing, Null, Bool, Integer, Unsigned, Float, String, Array, Object } kind = Missing;
  bool boolean = false;
  long long integer = 0;        // Integer: fits int64 (negative, or from strtoll)
  unsigned long long unsig = 0; // Unsigned: a non-negative integer that fits uint64
  double number = 0;            // every number, as a double
  std::string text;             // String
  std::vector<Field> fields;    // Object, where kept
  const Value& operator[](const char* key) const;
  bool is_number() const { return kind == Integer || kind == Unsigned || kind == Float; }
};
struct Field {
  std::string key;
  Value value;
};
inline const Value& Value::operator[](const char* key) const {
  static const Value missing;
  for (const Field& f : fields)
    if (f.key == key) return f.value;
  return missing;
}

// The fields of an entry and of its config, provenance and device objects: the only ones kept.
inline bool known_field(const std::string& key) {
  static const char* const kKnown[] = {
      "arch", "type", "n", "k", "ncols", "config", "default_config", "is_small_k", "bucketed", "approval", "decided_at", "note",
      "provenance", "launch", "device", "nwarps", "rows_per_block", "session_id", "device_name", "device_arch", "engine", "kernel",
      "default_us", "default_ci_low", "default_ci_high", "tuned_us", "tuned_ci_low", "tuned_ci_high", "speedup", "speedup_low",
      "speedup_high", "calls_per_token", "bytes_per_token", "name", "compute_units", "memory_mib", "experts", "experts_used",
      // a path choice's own, and its evidence's
      "path", "stock_path", "evidence", "source", "model", "stock_us", "stock_ci_low", "stock_ci_high", "path_us", "path_ci_low",
      "path_ci_high",
      // a same-input group's (mul_mat_group)
      "members"};
  for (const char* k : kKnown)
    if (key == k) return true;
  return false;
}

// A strict JSON reader with the acceptance of the reader Temper uses (nlohmann/json 3.11): RFC 8259
// text, an optional UTF-8 byte-order mark, strings of valid UTF-8, no duplicate key in any object,
// integers that do not fit 64 bits read as doubles and doubles that overflow refused; plus no NUL
// byte anywhere and no nesting deeper than kMaxDepth (which Temper's reader refuses too).
class Reader {
 public:
  Reader(const char* text, size_t size) : p_(text), begin_(text), end_(text + size) {}

  const std::string& error() const { return error_; }
  bool ok() const { return error_.empty(); }

  bool fail(const char* what) {
    if (error_.empty()) error_ = std::string(what) + " at byte " + std::to_string(p_ - begin_);
    return false;
  }

  bool start() {
    if (std::memchr(begin_, 0, size_t(end_ - begin_))) {
      p_ = static_cast<const char*>(std::memchr(begin_, 0, size_t(end_ - begin_)));
      return fail("a NUL byte");
    }
    if (end_ - p_ >= 1 && static_cast<unsigned char>(*p_) == 0xEF) {
      if (end_ - p_ < 3 || static_cast<unsigned char>(p_[1]) != 0xBB || static_cast<unsigned char>(p_[2]) != 0xBF)
        return fail("an incomplete byte-order mark");
      p_ += 3;
    }
    return true;
  }
  bool finish() {
    ws();
    return p_ == end_ || fail("text after the JSON value");
  }

  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool peek(char c) {
    ws();
    return p_ < end_ && *p_ == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++p_;
    return true;
  }

  // One value into `v`; objects keep their fields when keep > 0 (each field with keep - 1).
  bool value(Value& v, int keep, int depth) {
    ws();
    if (p_ >= end_) return fail("unexpected end of input");
    const char c = *p_;
    if (c == '{' || c == '[') {
      if (depth + 1 > kMaxDepth) return fail("nesting deeper than 64 levels");
      const bool object = c == '{';
      v.kind = object ? Value::Object : Value::Array;
      if (object) return members([&](const std::string& key) {
        if (keep <= 0 || !known_field(key)) {  // read, checked, not kept: memory stays bounded
          Value skipped;
          return value(skipped, 0, depth + 1);
        }
        v.fields.push_back(Field{key, Value()});
        return value(v.fields.back().value, keep - 1, depth + 1);
      });
      return elements([&] {
        Value skipped;
        return value(skipped, 0, depth + 1);
      });
    }
    if (c == '"') {
      v.kind = Value::String;
      return string(v.text);
    }
    if (literal("true")) { v.kind = Value::Bool; v.boolean = true; return true; }
    if (literal("false")) { v.kind = Value::Bool; return true; }
    if (literal("null")) { v.kind = Value::Null; return true; }
    return number(v);
  }

  // An object's members: `member(key)` reads each value; keys must be unique.
  template <class Member>
  bool members(Member&& member) {
    ++p_;  // '{'
    // The keys as they are in the text (16 bytes each, not a copy), decoded where escaped: the
    // duplicates are found when the object closes.
    std::vector<std::string_view> keys;
    std::vector<std::unique_ptr<std::string>> decoded;
    if (eat('}')) return true;
    for (;;) {
      ws();
      std::string key;
      if (p_ >= end_ || *p_ != '"') return fail("expected a string as a key");
      const char* raw = p_ + 1;
      if (!string(key)) return false;
      const std::string_view as_written(raw, size_t(p_ - 1 - raw));
      if (as_written.find('\\') == std::string_view::npos) {
        keys.push_back(as_written);
      } else {
        decoded.push_back(std::make_unique<std::string>(key));
        keys.push_back(*decoded.back());
      }
      if (!eat(':')) return fail("expected ':'");
      if (!member(key)) return false;
      if (eat(',')) continue;
      if (eat('}')) break;
      return fail("expected ',' or '}'");
    }
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) return fail("a duplicate key in one object");
    return true;
  }

  template <class Element>
  bool elements(Element&& element) {
    ++p_;  // '['
    if (eat(']')) return true;
    for (;;) {
      if (!element()) return false;
      if (eat(',')) continue;
      if (eat(']')) return true;
      return fail("expected ',' or ']'");
    }
  }

 private:
  bool literal(const char* s) {
    const size_t n = std::strlen(s);
    if (size_t(end_ - p_) < n || std::memcmp(p_, s, n) != 0) return false;
    p_ += n;
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(unsigned& out) {
    if (end_ - p_ < 4) return fail("a short \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) return fail("a \\u escape that is not hexadecimal");
      out = out * 16 + unsigned(h);
    }
    p_ += 4;
    return true;
  }
  static void utf8(unsigned cp, std::string& out) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  // A string (at its opening quote), decoded; valid UTF-8 only (RFC 3629: no overlong forms, no
  // surrogates, nothing above U+10FFFF), no raw control characters.
  bool string(std::string& out) {
    ++p_;
    for (;;) {
      if (p_ >= end_) return fail("an unterminated string");
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c < 0x20) return fail("a control character in a string");
      if (c == '\\') {
        if (++p_ >= end_) return fail("an unterminated string");
        const char e = *p_++;
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            unsigned cp = 0;
            if (!hex4(cp)) return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("a lone low surrogate");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              unsigned low = 0;
              if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail("a high surrogate without its low half");
              p_ += 2;
              if (!hex4(low)) return false;
              if (low < 0xDC00 || low > 0xDFFF) return fail("a high surrogate without its low half");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            utf8(cp, out);
            break;
          }
          default: return fail("an unknown escape");
        }
        continue;
      }
      // UTF-8: the length and the range of the second byte by the first (RFC 3629, table 3-7).
      int len = 0;
      unsigned char lo = 0x80, hi = 0xBF;
      if (c < 0x80) len = 1;
      else if (c >= 0xC2 && c <= 0xDF) len = 2;
      else if (c == 0xE0) len = 3, lo = 0xA0;
      else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
      else if (c == 0xED) len = 3, hi = 0x9F;
      else if (c == 0xF0) len = 4, lo = 0x90;
      else if (c >= 0xF1 && c <= 0xF3) len = 4;
      else if (c == 0xF4) len = 4, hi = 0x8F;
      else return fail("invalid UTF-8 in a string");
      if (end_ - p_ < len) return fail("invalid UTF-8 in a string");
      for (int i = 1; i < len; ++i) {
        const auto b = static_cast<unsigned char>(p_[i]);
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return fail("invalid UTF-8 in a string");
      }
      out.append(p_, size_t(len));
      p_ += len;
    }
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?: an integer when it has neither fraction nor
  // exponent and fits 64 bits (signed when negative), else a double, refused when not finite.
  bool number(Value& v) {
    const char* start = p_;
    const auto digits = [&] {
      const char* from = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      return p_ > from;
    };
    bool integral = true;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ < end_ && *p_ == '0') ++p_;
    else if (p_ >= end_ || *p_ < '1' || *p_ > '9' || !digits()) return fail("expected a JSON value");
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integral = false;
      if (!digits()) return fail("a number without digits after '.'");
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integral = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return fail("a number without digits in its exponent");
    }
    const std::string token(start, p_);
    char* stop = nullptr;
    if (integral) {
      errno = 0;
      if (token[0] == '-') {
        const long long x = std::strtoll(token.c_str(), &stop, 10);
        if (errno == 0) {
          v.kind = Value::Integer;
          v.integer = x;
          v.number = double(x);
          return true;
        }
      } else {
        const unsigned long long x = std::strtoull(token.c_str(), &stop, 10);
        if (errno == 0) {
          v.kind = Value::Unsigned;
          v.unsig = x;
          v.number = double(x);
          return true;
        }
      }
    }
    v.kind = Value::Float;
    // In the C locale whatever the engine's process set (a "," decimal point would cut 1.5 to 1).
    static const locale_t c_locale = ::newlocale(LC_NUMERIC_MASK, "C", locale_t(0));
    v.number = c_locale ? ::strtod_l(token.c_str(), &stop, c_locale) : std::strtod(token.c_str(), &stop);
    if (!std::isfinite(v.number)) return fail("a number out of range");
    return true;
  }

  const char* p_;
  const char* begin_;
  const char* end_;
  std::string error_;
};

// ---- the rules (docs/profile-format.md: "Reading a profile") -----------------------------------

inline bool arch_pattern(const std::string& a) {  // ^(sm_[0-9]{2,3}[a-z]?|gfx[0-9a-f]{3,4})$
  const auto all = [](std::string_view s, bool hex) {
    return std::all_of(s.begin(), s.end(), [&](char c) { return (c >= '0' && c <= '9') || (hex && c >= 'a' && c <= 'f'); });
  };
  const std::string_view rest = std::string_view(a).substr(std::min<size_t>(3, a.size()));
  if (a.rfind("sm_", 0) == 0) {
    const std::string_view digits = !rest.empty() && rest.back() >= 'a' && rest.back() <= 'z' ? rest.substr(0, rest.size() - 1) : rest;
    return (digits.size() == 2 || digits.size() == 3) && all(digits, false);
  }
  return a.rfind("gfx", 0) == 0 && (rest.size() == 3 || rest.size() == 4) && all(rest, true);
}

// An integer (4096, never 4096.0) within [lo, hi], as Temper's readers take one.
inline bool integer_in(const Value& v, long long lo, long long hi, long long* out = nullptr) {
  long long x = 0;
  if (v.kind == Value::Integer) x = v.integer;
  else if (v.kind == Value::Unsigned && v.unsig <= static_cast<unsigned long long>(INT64_MAX)) x = static_cast<long long>(v.unsig);
  else return false;
  if (x < lo || x > hi) return false;
  if (out) *out = x;
  return true;
}

inline int launch_kind(const Value& l) {
  if (l.kind == Value::Missing) return kMulMat;
  for (int i = 0; i < kLaunchKinds; ++i)
    if (l.text == kLaunchNames[i]) return i;
  return kUnknownLaunch;
}

// What refuses the whole file in one entry (Temper's read_entry): a field missing or of the wrong
// kind or range. nullptr when there is nothing.
inline const char* entry_structure(const Value& e) {
  if (e.kind != Value::Object) return "not an object";
  if (e["arch"].kind != Value::String) return "\"arch\" is not a string";
  const Value& d = e["device"];
  if (d.kind != Value::Missing &&
      (d.kind != Value::Object || d["name"].kind != Value::String || d["name"].text.empty() ||
       !integer_in(d["compute_units"], 1, 1 << 20) || !integer_in(d["memory_mib"], 0, INT64_MAX)))
    return "\"device\" is not {name, compute_units 1..1048576, memory_mib}";
  if (e["type"].kind != Value::String) return "\"type\" is not a string";
  if (!integer_in(e["n"], 1, INT32_MAX) || !integer_in(e["k"], 1, INT32_MAX)) return "n or k is not an integer 1..2147483647";
  const Value& l = e["launch"];
  if (l.kind != Value::Missing && l.kind != Value::String) return "\"launch\" is not a string";
  if (launch_has_ids(launch_kind(l))) {
    long long experts = 0;
    if (!integer_in(e["experts"], 1, INT32_MAX, &experts) || !integer_in(e["experts_used"], 1, experts))
      return "an expert launch without experts 1..2147483647 and experts_used 1..experts";
  }
  if (launch_kind(l) == kMulMatGroup && e["members"].kind != Value::String) return "\"members\" is not a string (mul_mat_group)";
  if (!integer_in(e["ncols"], 1, 1024)) return "ncols is not an integer 1..1024";
  for (const char* c : {"config", "default_config"})
    if (e[c].kind != Value::Object || !integer_in(e[c]["nwarps"], 0, 1024) || !integer_in(e[c]["rows_per_block"], 0, 1024))
      return "config or default_config is not {nwarps, rows_per_block} of integers 0..1024";
  if (e["is_small_k"].kind != Value::Bool || e["bucketed"].kind != Value::Bool) return "is_small_k or bucketed is not true or false";
  const Value& a = e["approval"];
  if (a.kind != Value::String || (a.text != "pending" && a.text != "approved" && a.text != "rejected"))
    return "approval is not \"pending\", \"approved\" or \"rejected\"";
  if (e["decided_at"].kind != Value::String || e["note"].kind != Value::String) return "decided_at or note is not a string";
  const Value& p = e["provenance"];
  if (p.kind == Value::Null) return nullptr;
  if (p.kind != Value::Object) return "provenance is neither null nor an object";
  for (const char* f : {"session_id", "device_name", "device_arch", "engine"})
    if (p[f].kind != Value::String) return "provenance lacks one of its strings (session_id, device_name, device_arch, engine)";
  if (p["kernel"].kind != Value::Missing && p["kernel"].kind != Value::String) return "provenance.kernel is not a string";
  for (const char* f : {"default_us", "default_ci_low", "default_ci_high", "tuned_us", "tuned_ci_low", "tuned_ci_high", "speedup",
                        "speedup_low", "speedup_high"})
    if (!p[f].is_number()) return "provenance lacks one of its numbers (times, CIs, speedups)";
  if (!integer_in(p["calls_per_token"], 0, INT64_MAX)) return "provenance.calls_per_token is not an integer >= 0";
  const Value& b = p["bytes_per_token"];
  if (b.kind != Value::Unsigned && !(b.kind == Value::Integer && b.integer >= 0)) return "provenance.bytes_per_token is not an integer >= 0";
  return nullptr;
}

inline std::string common_problem(const Value& e, const Entry& x, bool bucketed);

// What `temper profile validate` lists for one valid-looking entry (Temper's validate_profile): the
// first problem, empty when none. "no provenance" needs the root's "source": parse() adds it.
inline std::string entry_problem(const Value& e, const Entry& x, const TypeFacts& t) {
  const bool bucketed = e["bucketed"].boolean;
  if (x.arch.empty()) return "no arch";
  if (!arch_pattern(x.arch)) return "unknown arch (expected sm_NN or gfxNNN)";
  if (launch_writes_q8(x.launch)) {  // not a GEMV: its own rules, then the ones every kind shares
    const Value& d = e["default_config"];
    const std::string what = x.launch == kRmsNormQ8 ? "a norm entry" : "a glu entry";
    if (t.id != 0) return what + "'s type other than f32";
    if (x.n != 1) return what + "'s n other than 1";
    if (x.k % 32 != 0) return "k is not a whole number of q8_1 blocks";
    if (x.ncols > 8) return "ncols outside 1..8";
    if (x.config.nwarps != 0 || x.config.rows != 0 || !integer_in(d["nwarps"], 0, 0) || !integer_in(d["rows_per_block"], 0, 0))
      return what + " with a config";
    if (bucketed) return "a kernel-anvil bucket for a launch other than mul_mat";
    return common_problem(e, x, bucketed);
  }
  if (!t.mmvq) return "a type without an mmvq kernel";
  if (!bucketed && t.block > 0 && x.k % t.block != 0) return "k is not a whole number of blocks";
  if (x.ncols > 8) return "ncols outside 1..8";
  if (launch_is_fused(x.launch) && x.ncols != 1) return "a fused gate/up launch at ncols other than 1";
  if (launch_has_ids(x.launch) && x.ncols != 1) return "an expert launch at ncols other than 1";
  if (launch_is_pipelined(x.launch) && x.ncols != 1) return "a pipelined launch at ncols other than 1";
  if (bucketed && x.launch != kMulMat) return "a kernel-anvil bucket for a launch other than mul_mat";
  if (x.launch == kMulMatGroup) {
    if (x.members < 2 || x.members > kMaxGroupMembers) return "members: not 2..4 members";
    int distinct[2] = {x.member_type[0], -1};
    long long sum = 0;
    for (int i = 0; i < x.members; ++i) {
      const int m = x.member_type[i];
      if (m != distinct[0] && m != distinct[1]) {
        if (distinct[1] >= 0) return "members: more than 2 distinct types";
        distinct[1] = m;
      }
      sum += x.member_n[i];
    }
    if (x.type != (distinct[1] >= 0 ? distinct[1] : distinct[0]))
      return "type: not the members' type (theirs, or in a mix the one other than the first member's)";
    if (x.n != sum) return "n: not the sum of the members' N";
    if (x.ncols > kMaxGroupNcols) return "ncols: a group outside 1..4";
    if (!group_nwarps(x.config.nwarps) || !group_rows(x.config.rows)) return "config: a group outside nwarps 2|4|8, rows_per_block 1|2|4";
  }
  if (x.config.nwarps < 1 || x.config.nwarps > kMaxConfigValue || x.config.rows < 1 || x.config.rows > kMaxConfigValue)
    return "config values outside 1..32";
  if (x.config.nwarps * 32 > 1024 && x.arch.rfind("sm_", 0) == 0) return "more than 1024 threads per block";
  if (x.config.nwarps * 64 > 1024 && x.arch.rfind("gfx9", 0) == 0) return "more than 1024 threads per block (wave64)";
  return common_problem(e, x, bucketed);
}

// The rules every kind shares: provenance and decision time.
inline std::string common_problem(const Value& e, const Entry& x, bool bucketed) {
  const Value& p = e["provenance"];
  if (p.kind == Value::Object) {
    const auto n = [&](const char* f) { return p[f].number; };
    if (!(n("default_us") > 0) || !(n("tuned_us") > 0)) return "provenance times not > 0";
    if (!(n("default_ci_low") <= n("default_us") && n("default_us") <= n("default_ci_high")) ||
        !(n("tuned_ci_low") <= n("tuned_us") && n("tuned_us") <= n("tuned_ci_high")))
      return "a median outside its confidence interval";
    if (!(n("speedup_low") <= n("speedup") && n("speedup") <= n("speedup_high"))) return "a speedup outside its confidence interval";
    if (!p["device_arch"].text.empty() && p["device_arch"].text != x.arch) return "measured on another arch than its key's";
  }
  if (e["approval"].text != "pending" && e["decided_at"].text.empty() && !bucketed) return "a decision without a time";
  return {};
}

// Fields kept: an entry's own (1), and those of its config, provenance and device objects (2).
constexpr int kEntryKeep = 2;

inline int path_word(const Value& v) { return v.text == "mmvq" ? kMmvq : v.text == "mmq" ? kMmq : kNoPath; }

// What refuses the whole file in one path choice (Temper's read_path): a field missing or of the
// wrong kind or range. nullptr when there is nothing.
inline const char* path_structure(const Value& e) {
  if (e.kind != Value::Object) return "not an object";
  for (const char* f : {"arch", "type", "launch", "path", "stock_path", "approval", "decided_at", "note"})
    if (e[f].kind != Value::String) return "arch, type, launch, path, stock_path, approval, decided_at or note is not a string";
  const Value& d = e["device"];
  if (d.kind != Value::Missing &&
      (d.kind != Value::Object || d["name"].kind != Value::String || d["name"].text.empty() ||
       !integer_in(d["compute_units"], 1, 1 << 20) || !integer_in(d["memory_mib"], 0, INT64_MAX)))
    return "\"device\" is not {name, compute_units 1..1048576, memory_mib}";
  if (!integer_in(e["ncols"], 1, 1024)) return "ncols is not an integer 1..1024";
  if (path_word(e["path"]) == kNoPath || path_word(e["stock_path"]) == kNoPath) return "path or stock_path is not \"mmvq\" or \"mmq\"";
  const std::string& a = e["approval"].text;
  if (a != "pending" && a != "approved" && a != "rejected") return "approval is not \"pending\", \"approved\" or \"rejected\"";
  const Value& v = e["evidence"];
  if (v.kind == Value::Null) return nullptr;
  if (v.kind != Value::Object) return "evidence is neither null nor an object";
  for (const char* f : {"source", "device_name", "device_arch", "kernel", "model"})
    if (v[f].kind != Value::String) return "evidence lacks one of its strings (source, device_name, device_arch, kernel, model)";
  for (const char* f : {"stock_us", "stock_ci_low", "stock_ci_high", "path_us", "path_ci_low", "path_ci_high", "speedup",
                        "speedup_low", "speedup_high"})
    if (!v[f].is_number()) return "evidence lacks one of its numbers (times, CIs, speedups)";
  return nullptr;
}

// What `temper profile validate` lists for one path choice (Temper's validate_profile): the first
// problem, empty when none. "no evidence" needs the root's "source": parse() adds it.
inline std::string path_problem(const Value& e, const PathRecord& x, const TypeFacts& t) {
  if (x.arch.empty()) return "no arch";
  if (!arch_pattern(x.arch)) return "unknown arch (expected sm_NN or gfxNNN)";
  if (!t.mmvq) return "a type without an mmvq kernel";
  if (x.launch != kMulMat && x.launch != kMulMatId) return "a launch other than mul_mat or mul_mat_id";
  if (x.ncols < 2 || x.ncols > 8) return "ncols outside 2..8";
  if (x.path == x.stock_path) return "path equal to stock_path";
  const Value& v = e["evidence"];
  if (v.kind == Value::Object) {
    const auto n = [&](const char* f) { return v[f].number; };
    if (!(n("stock_us") > 0) || !(n("path_us") > 0)) return "evidence times not > 0";
    if (!(n("stock_ci_low") <= n("stock_us") && n("stock_us") <= n("stock_ci_high")) ||
        !(n("path_ci_low") <= n("path_us") && n("path_us") <= n("path_ci_high")))
      return "a median outside its confidence interval";
    if (!v["device_arch"].text.empty() && v["device_arch"].text != x.arch) return "measured on another arch than its key's";
  }
  if (e["approval"].text != "pending" && e["decided_at"].text.empty()) return "a decision without a time";
  return {};
}

// An entry's or path choice's optional "device" (its structure already checked).
inline void read_device(const Value& d, bool* has_device, std::string* name, long long* compute_units) {
  if (d.kind != Value::Object) return;
  *has_device = true;
  *name = d["name"].text;
  integer_in(d["compute_units"], 1, 1 << 20, compute_units);
}

struct ReadPath {
  std::string refuses;
  PathRecord path;
  bool lacks_evidence = false;  // a problem in a "temper" profile
};

inline ReadPath read_path(const Value& e, const TypeLookup& types) {
  ReadPath r;
  if (const char* why = path_structure(e)) {
    r.refuses = why;
    return r;
  }
  const TypeFacts t = types(e["type"].text);
  if (t.id < 0) {
    r.refuses = "unknown ggml type \"" + e["type"].text.substr(0, 32) + "\"";
    return r;
  }
  PathRecord& x = r.path;
  x.arch = e["arch"].text;
  read_device(e["device"], &x.has_device, &x.device_name, &x.compute_units);
  x.type = t.id;
  x.launch_name = e["launch"].text;
  x.launch = x.launch_name == kLaunchNames[kMulMat] ? kMulMat : x.launch_name == kLaunchNames[kMulMatId] ? kMulMatId : kUnknownLaunch;
  integer_in(e["ncols"], 1, 1024, &x.ncols);
  x.path = path_word(e["path"]);
  x.stock_path = path_word(e["stock_path"]);
  x.approved = e["approval"].text == "approved";
  x.problem = path_problem(e, x, t);
  r.lacks_evidence = e["evidence"].kind == Value::Null;
  return r;
}

// A mul_mat_group's "members": TYPE:N[,TYPE:N...], N an integer 1..2147483647 without sign or
// leading zero, TYPE a type this ggml knows (case as for "type"). Empty: read (into x's members);
// else what is wrong, which refuses the whole file as a bad "type" or "n" does. How many members,
// their types' kernels and the type and n rules are the entry's problems (entry_problem).
inline std::string read_members(const std::string& text, const TypeLookup& types, Entry* x) {
  x->members = 0;
  x->members_key.clear();
  size_t at = 0;
  for (;;) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string member = text.substr(at, comma - at);
    const size_t colon = member.find(':');
    if (colon == std::string::npos || colon == 0) return "member " + std::to_string(x->members) + " is not TYPE:N";
    const std::string name = member.substr(0, colon), digits = member.substr(colon + 1);
    const TypeFacts t = types(name);
    if (t.id < 0) return "unknown ggml type \"" + name.substr(0, 32) + "\"";
    if (digits.empty() || digits.size() > 10 || digits[0] == '0' ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::strtoll(digits.c_str(), nullptr, 10) > INT32_MAX)
      return "member " + std::to_string(x->members) + "'s N is not an integer 1..2147483647";
    const long long n = std::strtoll(digits.c_str(), nullptr, 10);
    if (x->members < kMaxGroupMembers) {
      x->member_type[x->members] = t.id;
      x->member_n[x->members] = n;
    }
    ++x->members;
    x->members_key += std::to_string(t.id) + ":" + std::to_string(n) + ",";
    if (comma == text.size()) return {};
    at = comma + 1;
  }
}

// The type name of member i of a "members" text read_members accepted.
inline std::string member_name(const std::string& text, int i) {
  size_t at = 0;
  for (; i > 0; --i) at = text.find(',', at) + 1;
  return text.substr(at, text.find(':', at) - at);
}

// One entry's value turned into an Entry at once, so the entries' JSON is never held: the reason
// that refuses the whole file, or the Entry (with its own problem, if any).
struct ReadEntry {
  std::string refuses;
  Entry entry;
  bool lacks_provenance = false;  // no provenance and not bucketed: a problem in a "temper" profile
};

inline ReadEntry read_entry(const Value& e, const TypeLookup& types) {
  ReadEntry r;
  if (const char* why = entry_structure(e)) {
    r.refuses = why;
    return r;
  }
  const TypeFacts t = types(e["type"].text);
  if (t.id < 0) {
    r.refuses = "unknown ggml type \"" + e["type"].text.substr(0, 32) + "\"";
    return r;
  }
  Entry& x = r.entry;
  x.arch = e["arch"].text;
  read_device(e["device"], &x.has_device, &x.device_name, &x.compute_units);
  x.type = t.id;
  integer_in(e["n"], 1, INT32_MAX, &x.n);
  integer_in(e["k"], 1, INT32_MAX, &x.k);
  x.launch = launch_kind(e["launch"]);
  x.launch_name = e["launch"].kind == Value::Missing ? kLaunchNames[kMulMat] : e["launch"].text;
  if (launch_has_ids(x.launch)) {
    integer_in(e["experts"], 1, INT32_MAX, &x.experts);
    integer_in(e["experts_used"], 1, x.experts, &x.experts_used);
  }
  integer_in(e["ncols"], 1, 1024, &x.ncols);
  long long w = 0, rows = 0;
  integer_in(e["config"]["nwarps"], 0, 1024, &w);
  integer_in(e["config"]["rows_per_block"], 0, 1024, &rows);
  x.config = {int(w), int(rows)};
  x.approved = e["approval"].text == "approved";
  if (x.launch == kMulMatGroup) {
    std::string why = read_members(e["members"].text, types, &x);
    if (!why.empty()) {
      r.refuses = "\"members\" is not TYPE:N,... (" + why + ")";
      return r;
    }
  }
  x.problem = entry_problem(e, x, t);
  if (x.problem.empty() && x.launch == kMulMatGroup)
    for (int i = 0; i < x.members; ++i) {
      const TypeFacts m = types(member_name(e["members"].text, i));
      if (!m.mmvq) x.problem = "members: a type without an mmvq kernel";
      else if (m.block > 0 && x.k % m.block != 0) x.problem = "k is not a whole number of blocks (a member's type)";
      if (!x.problem.empty()) break;
    }
  r.lacks_provenance = e["provenance"].kind == Value::Null && !e["bucketed"].boolean;
  return r;
}

inline Profile parse(const char* text, size_t size, const TypeLookup& types) {
  Profile out;
  if (size > kMaxBytes) {
    out.error = std::to_string(size) + " bytes, more than the 16 MiB a profile may have";
    return out;
  }
  Reader r(text, size);
  // The root's fields: the known scalars kept; "entries" read entry by entry; "sessions" checked
  // in place; anything else read and checked, not kept.
  static const char* const kRootFields[] = {"format", "schema_version", "created", "tool_version", "source", "model", "configs"};
  std::map<std::string, Value> root;
  std::string refuses;  // the first entry that refuses the whole file
  std::vector<bool> lacks_provenance, lacks_evidence;
  bool root_object = false, entries_array = false, sessions_array = false, sessions_strings = true;
  bool paths_given = false, paths_array = false;  // "paths" is optional
  if (r.start()) {
    if (r.peek('{')) {
      root_object = true;
      r.members([&](const std::string& key) {
        if (key == "entries" && (entries_array = r.peek('[')))
          return r.elements([&] {
            Value e;
            if (!r.value(e, kEntryKeep, 2)) return false;
            if (!refuses.empty()) return true;
            ReadEntry x = read_entry(e, types);
            if (!x.refuses.empty()) {
              refuses = "entry " + std::to_string(out.entries.size()) + ": " + x.refuses;
              return true;
            }
            out.entries.push_back(std::move(x.entry));
            lacks_provenance.push_back(x.lacks_provenance);
            return true;
          });
        if (key == "paths") paths_given = true;
        if (key == "paths" && (paths_array = r.peek('[')))
          return r.elements([&] {
            Value e;
            if (!r.value(e, kEntryKeep, 2)) return false;
            if (!refuses.empty()) return true;
            ReadPath x = read_path(e, types);
            if (!x.refuses.empty()) {
              refuses = "path choice " + std::to_string(out.paths.size()) + ": " + x.refuses;
              return true;
            }
            out.paths.push_back(std::move(x.path));
            lacks_evidence.push_back(x.lacks_evidence);
            return true;
          });
        if (key == "sessions" && (sessions_array = r.peek('[')))
          return r.elements([&] {
            Value session;
            if (!r.value(session, 0, 2)) return false;
            sessions_strings = sessions_strings && session.kind == Value::String;
            return true;
          });
        Value skipped;
        const bool kept = std::any_of(std::begin(kRootFields), std::end(kRootFields), [&](const char* f) { return key == f; });
        return r.value(kept ? root[key] : skipped, 0, 1);
      });
    } else {
      Value ignored;
      r.value(ignored, 0, 0);
    }
    if (r.ok()) r.finish();
  }
  const auto refuse = [&](const std::string& why) {
    Profile refused;
    refused.error = why;
    return refused;
  };
  if (!r.ok()) return refuse("not valid JSON: " + r.error());
  const auto field = [&](const char* k) -> const Value& {
    static const Value missing;
    const auto it = root.find(k);
    return it == root.end() ? missing : it->second;
  };
  if (!root_object) return refuse("not a Temper profile (not a JSON object)");
  if (root.count("configs") && !root.count("schema_version"))
    return refuse("a kernel-anvil file, not a Temper profile (`temper profile export --format temper` makes one)");
  if (field("format").kind != Value::String || field("format").text != "temper-profile")
    return refuse("not a Temper profile (\"format\" is not \"temper-profile\")");
  long long version = 0;
  if (!integer_in(field("schema_version"), INT32_MIN, INT32_MAX, &version) || version < 1)
    return refuse("\"schema_version\" is not a schema version");
  if (version > kSchemaVersion)
    return refuse("written by a newer Temper (schema version " + std::to_string(version) + "; this hook reads up to " +
                  std::to_string(kSchemaVersion) + ": patch the tree again with that Temper)");
  for (const char* f : {"created", "tool_version", "source", "model"})
    if (field(f).kind != Value::String) return refuse(std::string("\"") + f + "\" is not a string");
  const std::string& source = field("source").text;
  if (source != "temper" && source != "kernel-anvil") return refuse("\"source\" is neither \"temper\" nor \"kernel-anvil\"");
  if (!sessions_array || !sessions_strings) return refuse("\"sessions\" is not an array of strings");
  if (!entries_array) return refuse("no \"entries\" array");
  if (paths_given && !paths_array) return refuse("\"paths\" is not an array");
  if (!refuses.empty()) return refuse(refuses);
  // One entry per key: arch, device (name, compute units), type, n, k, launch, experts, ncols, members.
  std::set<std::tuple<std::string, std::string, long long, int, long long, long long, std::string, long long, long long, long long,
                      std::string>>
      seen;
  for (size_t i = 0; i < out.entries.size(); ++i) {
    Entry& x = out.entries[i];
    if (!seen.emplace(x.arch, x.device_name, x.compute_units, x.type, x.n, x.k, x.launch_name, x.experts, x.experts_used, x.ncols,
                      x.members_key)
             .second)
      return refuse("entry " + std::to_string(i) + ": a second entry for its key");
    if (x.problem.empty() && lacks_provenance[i] && source == "temper") x.problem = "no provenance";
  }
  // One path choice per key: arch, device (name, compute units), type, launch, ncols.
  std::set<std::tuple<std::string, std::string, long long, int, std::string, long long>> seen_paths;
  for (size_t i = 0; i < out.paths.size(); ++i) {
    PathRecord& x = out.paths[i];
    if (!seen_paths.emplace(x.arch, x.device_name, x.compute_units, x.type, x.launch_name, x.ncols).second)
      return refuse("path choice " + std::to_string(i) + ": a second path choice for its key");
    if (x.problem.empty() && lacks_evidence[i] && source == "temper") x.problem = "no evidence";
  }
  return out;
}

}  // namespace detail

using detail::parse;

// Reads `path`: a regular file only (opened without blocking, so a FIFO or a device is refused at
// once), at most kMaxBytes. Never throws (running out of memory is a reason like any other).
inline Profile read(const std::string& path, const TypeLookup& types) {
  Profile out;
  try {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      out.error = std::string("cannot open it: ") + std::strerror(errno);
      return out;
    }
    struct stat st{};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (!regular || static_cast<uint64_t>(st.st_size) > kMaxBytes) {
      ::close(fd);
      out.error = !regular ? "not a regular file (a FIFO, a device or a folder)"
                           : std::to_string(st.st_size) + " bytes, more than the 16 MiB a profile may have";
      return out;
    }
    std::string text(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, &text[got], text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // an error, or the file shrank: what was read is what there is
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    text.resize(got);
    return parse(text.data(), text.size(), types);
  } catch (...) {
    out = Profile();
    out.error = "out of memory reading it";
    return out;
  }
}

// ---- one device's choices ------------------------------------------------------------------------

struct Device {
  std::string arch, name;
  long long compute_units = 0;
  int index = 0;
};

// What the hook looks a launch up by.
struct Key {
  int launch = kMulMat, type = -1;
  long long n = 0, k = 0, ncols = 0;
  bool operator<(const Key& o) const { return std::tie(launch, type, n, k, ncols) < std::tie(o.launch, o.type, o.n, o.k, o.ncols); }
};

// What the hook looks a same-input group up by (hook v5): its batch width, K, and its members in
// graph order (type ids and N; only the first `count` of each array are read). An entry matches the
// same members in any order (hook v12): the group kernel computes each member alone, and an engine may
// order a layer's q, k and v otherwise than the model file (llama.cpp's graph runs q, v, k).
struct GroupKey {
  int ncols, k;
  int count;
  int type[4];
  int n[4];
};

// Whether the engine can launch that config: (launch kind, type, ncols, nwarps, rows). For a
// mul_mat_group entry: (kMulMatGroup, the entry's "type", ncols, nwarps, rows).
using Compiled = std::function<bool(int, int, int, int, int)>;

namespace detail {
// A group's key as one ordered value: ncols, k, count, then each member's type and n, the members
// sorted (an entry is found whatever order the engine runs its members in).
inline std::vector<long long> group_order(long long ncols, long long k, int count, const int* type, const long long* n) {
  std::vector<std::pair<long long, long long>> members;
  for (int i = 0; i < count && i < kMaxGroupMembers; ++i) members.emplace_back(type[i], n[i]);
  std::sort(members.begin(), members.end());
  std::vector<long long> v{ncols, k, count};
  for (const auto& [t, rows] : members) {
    v.push_back(t);
    v.push_back(rows);
  }
  return v;
}
inline std::vector<long long> group_order(const Entry& e) { return group_order(e.ncols, e.k, e.members, e.member_type, e.member_n); }
inline std::vector<long long> group_order(const GroupKey& g) {
  if (g.count < 0 || g.count > kMaxGroupMembers) return {};
  long long n[kMaxGroupMembers] = {};
  for (int i = 0; i < g.count; ++i) n[i] = g.n[i];
  return group_order(g.ncols, g.k, g.count, g.type, n);
}
}  // namespace detail

// A profile on one device: the configs it launches, and every entry counted once, in this order:
// malformed, not approved, a launch this hook lacks, another arch, another device, a config not
// compiled in; the rest are for this device or for its arch. For one key the device's own entry
// decides, whether it can be launched or not (as Temper's applied_entry: a device's own pending or
// rejected entry is not replaced by the arch's); an arch-level entry it overrides is still counted
// with the arch's.
// Path choices likewise (by launch, type, ncols): the device's own record decides, approved or not.
struct PathKey {
  int launch = kMulMat, type = -1;
  long long ncols = 0;
  bool operator<(const PathKey& o) const { return std::tie(launch, type, ncols) < std::tie(o.launch, o.type, o.ncols); }
  bool operator==(const PathKey& o) const { return std::tie(launch, type, ncols) == std::tie(o.launch, o.type, o.ncols); }
};
struct PathCounts {
  int for_device = 0, for_arch = 0, other = 0, malformed = 0, unapproved = 0;
  int launches = 0;  // bits (1 << launch) of the launches the applied choices are for
};

struct Choices {
  std::map<Key, Config> table;
  std::map<std::vector<long long>, Config> groups;  // mul_mat_group entries by detail::group_order
  int group_entries = 0;                            // of for_device + for_arch: mul_mat_group entries
  int pipelined_entries = 0;                        // of for_device + for_arch: the *_pipelined kinds' (hook v6)
  int norm_entries = 0;                             // of for_device + for_arch: rms_norm_q8_1 entries (hook v8)
  int glu_entries = 0;                              // of for_device + for_arch: glu_q8_1 entries (hook v9)
  int for_device = 0, for_arch = 0, other_arch = 0, other_device = 0, lacking_launch = 0, not_compiled = 0, malformed = 0,
      unapproved = 0;
  std::map<PathKey, int> paths;  // kMmvq or kMmq
  PathCounts path_counts;
};

inline Choices choose(const Profile& p, const Device& d, const Compiled& compiled) {
  Choices c;
  std::set<Key> own;                 // keys this device has an entry of its own for
  std::map<Key, Config> arch_level;
  std::set<std::vector<long long>> own_groups;
  std::map<std::vector<long long>, Config> arch_groups;
  for (const Entry& e : p.entries) {
    const Key key{e.launch, e.type, e.n, e.k, e.ncols};
    const bool group = e.launch == kMulMatGroup;
    const bool this_arch = e.launch != kUnknownLaunch && e.arch == d.arch;
    const bool this_device = e.has_device && e.device_name == d.name && e.compute_units == d.compute_units;
    if (this_arch && this_device) (group ? (void)own_groups.insert(detail::group_order(e)) : (void)own.insert(key));
    if (!e.problem.empty()) ++c.malformed;
    else if (!e.approved) ++c.unapproved;
    else if (e.launch == kUnknownLaunch) ++c.lacking_launch;
    else if (!this_arch) ++c.other_arch;
    else if (e.has_device && !this_device) ++c.other_device;
    else if (!compiled(e.launch, e.type, int(e.ncols), e.config.nwarps, e.config.rows)) ++c.not_compiled;
    else if (group) {
      ++(e.has_device ? c.for_device : c.for_arch);
      ++c.group_entries;
      (e.has_device ? c.groups : arch_groups).emplace(detail::group_order(e), e.config);
    } else {
      ++(e.has_device ? c.for_device : c.for_arch);
      c.pipelined_entries += launch_is_pipelined(e.launch);
      c.norm_entries += e.launch == kRmsNormQ8;
      c.glu_entries += e.launch == kGluQ8;
      (e.has_device ? c.table : arch_level).emplace(key, e.config);  // the first of one key (experts aside)
    }
  }
  for (const auto& [key, config] : arch_level)
    if (!own.count(key)) c.table.emplace(key, config);
  for (const auto& [key, config] : arch_groups)
    if (!own_groups.count(key)) c.groups.emplace(key, config);
  std::set<PathKey> own_paths;
  std::map<PathKey, int> arch_paths;
  PathCounts& n = c.path_counts;
  for (const PathRecord& x : p.paths) {
    const PathKey key{x.launch, x.type, x.ncols};
    const bool this_arch = x.arch == d.arch;
    const bool this_device = x.has_device && x.device_name == d.name && x.compute_units == d.compute_units;
    if (this_arch && this_device) own_paths.insert(key);
    if (!x.problem.empty()) ++n.malformed;
    else if (!x.approved) ++n.unapproved;
    else if (!this_arch || (x.has_device && !this_device)) ++n.other;
    else {
      ++(x.has_device ? n.for_device : n.for_arch);
      (x.has_device ? c.paths : arch_paths).emplace(key, x.path);
    }
  }
  for (const auto& [key, path] : arch_paths)
    if (!own_paths.count(key)) c.paths.emplace(key, path);
  for (const auto& [key, path] : c.paths) n.launches |= 1 << key.launch;
  return c;
}

// The one line the engine prints for a profile, once per device.
// path_hooks: the hook's TEMPER_MMVQ_PATH_HOOKS (bit 0 MUL_MAT's choice, bit 1 MUL_MAT_ID's cap
// wrapped); a choice for a decision this ggml does not have is said not applied.
inline std::string line(const std::string& path, const Choices& c, const Device& d, int path_hooks = 3) {
  char counts[400];
  std::snprintf(counts, sizeof counts,
                "%d for %s; ignored %d for other archs, %d for other devices, %d for launches this hook lacks, %d with a config "
                "not compiled in, %d malformed, %d not approved",
                c.for_arch, d.arch.c_str(), c.other_arch, c.other_device, c.lacking_launch, c.not_compiled, c.malformed, c.unapproved);
  std::string out = "temper: profile " + path + ": " + std::to_string(c.for_device) + " entries for " + d.name + " (" + d.arch +
                    ", device " + std::to_string(d.index) + "), " + counts;
  if (c.group_entries > 0)  // hook v5; without any the line is as before
    out += "; " + std::to_string(c.group_entries) + " of the entries for " + d.name + " and " + d.arch +
           " are same-input groups (mul_mat_group)";
  if (c.pipelined_entries > 0)  // hook v6; likewise
    out += "; " + std::to_string(c.pipelined_entries) + " of the entries for " + d.name + " and " + d.arch + " are pipelined launches";
  if (c.norm_entries > 0)  // hook v8; likewise
    out += "; " + std::to_string(c.norm_entries) + " of the entries for " + d.name + " and " + d.arch +
           " are norms writing their GEMVs' q8_1 activations";
  if (c.glu_entries > 0)  // hook v9; likewise
    out += "; " + std::to_string(c.glu_entries) + " of the entries for " + d.name + " and " + d.arch +
           " are GLUs writing their GEMVs' q8_1 activations";
  const PathCounts& n = c.path_counts;
  if (n.for_device + n.for_arch + n.other + n.malformed + n.unapproved == 0) return out;  // no "paths": the line as before
  out += "; " + std::to_string(n.for_device) + " path choices (mmvq/mmq) for " + d.name + ", " + std::to_string(n.for_arch) +
         " for " + d.arch;
  if (n.other + n.malformed + n.unapproved > 0)
    out += " (ignored " + std::to_string(n.other) + " for other archs or devices, " + std::to_string(n.malformed) + " malformed, " +
           std::to_string(n.unapproved) + " not approved)";
  if ((n.launches & (1 << kMulMat)) && !(path_hooks & 1)) out += "; path choices not applied: this ggml has no ggml_cuda_should_use_mmvq";
  if ((n.launches & (1 << kMulMatId)) && !(path_hooks & 2)) out += "; path choices not applied: this ggml has no get_mmvq_mmid_max_batch";
  return out;
}

inline std::string ignored_line(const std::string& path, const std::string& why) {
  return "temper: profile " + path + " ignored: " + why + "; mmvq runs stock";
}

// ---- the engine's side: load once, look up per launch ----------------------------------------------

// The profile the engine reads: TEMPER_PROFILE, else $XDG_CONFIG_HOME/temper/engine-profile.json
// (~/.config/...). TEMPER_PROFILE set but empty: none. Loading happens once, at the first lookup,
// on the thread that makes it; launches on other threads meanwhile run stock rather than wait. The
// file is read and parsed without any lock held; lines are printed after the lock is released.
class Loader {
 public:
  using Say = std::function<void(const std::string&)>;
  // `compiled`: what group() and has_groups() make a device's choices with when they are the first
  // to ask (lookup() and path() bring their own); without it they use the last one those brought,
  // and before any they answer false (stock).
  explicit Loader(TypeLookup types, Say say = [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); },
                  int path_hooks = 3, Compiled compiled = {})
      : types_(std::move(types)), say_(std::move(say)), path_hooks_(path_hooks), compiled_(std::move(compiled)) {}

  static std::string default_path() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return std::string(xdg) + "/temper/engine-profile.json";
    const char* home = std::getenv("HOME");
    return home && *home ? std::string(home) + "/.config/temper/engine-profile.json" : std::string();
  }

  // Loads now, replacing what was loaded: `path`, or with nullptr TEMPER_PROFILE, else the default
  // path (whose absence is no error: stock, silently). An unusable file says why, once.
  void load(const char* path) noexcept {
    try {
      const char* env = std::getenv("TEMPER_PROFILE");
      const std::string file = path ? path : env ? env : default_path();
      std::shared_ptr<const Profile> profile;
      struct stat st{};
      const bool quiet_absence = !path && !env && ::stat(file.c_str(), &st) != 0 && errno == ENOENT;
      if (!file.empty() && !quiet_absence) {
        auto read_one = std::make_shared<Profile>(read(file, types_));
        if (!read_one->error.empty()) say_(ignored_line(file, read_one->error));
        else profile = std::move(read_one);
      }
      std::lock_guard<std::mutex> lock(mutex_);
      path_ = file;
      loaded_any_.store(profile != nullptr);
      any_paths_.store(profile && !profile->paths.empty());
      profile_ = std::move(profile);
      devices_.clear();
      state_.store(kLoaded);
    } catch (...) {
      state_.store(kLoaded);  // stock from here on
    }
  }

  // The config the profile chose for this launch on `device`; false: run stock. The first lookup
  // loads the profile; the first on each device prints the profile's one line for it.
  bool lookup(const Device& device, const Compiled& compiled, const Key& key, Config* out) noexcept {
    return with_choices(device, compiled, [&](const Choices& c) {
      const auto it = c.table.find(key);
      if (it == c.table.end()) return false;
      *out = it->second;
      return true;
    });
  }

  // The profile's path choice for (launch, type, ncols) on `device`: kMmvq, kMmq, or kNoPath (ggml's own).
  int path(const Device& device, const Compiled& compiled, int launch, int type, int ncols) noexcept {
    int found = kNoPath;
    with_choices(device, compiled, [&](const Choices& c) {
      const auto it = c.paths.find(PathKey{launch, type, ncols});
      if (it != c.paths.end()) found = it->second;
      return true;
    });
    return found;
  }

  // Hook v5: the config the profile chose for this same-input group on `device`; false: run the
  // members as ggml would. The device's own entry beats the arch's, as for lookup().
  bool group(const Device& device, const GroupKey& key, Config* out) noexcept {
    try {
      const std::vector<long long> order = detail::group_order(key);
      if (order.empty()) return false;
      return with_choices(device, group_compiled(), [&](const Choices& c) {
        const auto it = c.groups.find(order);
        if (it == c.groups.end()) return false;
        *out = it->second;
        return true;
      });
    } catch (...) {
      return false;
    }
  }

  // Hooks v8, v9: whether the profile switches on, for `device`, the producer `launch` (kRmsNormQ8: the
  // norm; kGluQ8: an unfused pair's GLU) that writes the q8_1 activations of the GEMVs reading it, for
  // rows of k floats at ncols columns (an approved entry of that kind).
  bool writes_q8(int launch, const Device& device, const Compiled& compiled, long long k, long long ncols) noexcept {
    if (!any()) return false;
    Config unused;
    return lookup(device, compiled, Key{launch, 0, 1, k, ncols}, &unused);
  }

  // Whether the profile is loaded (loading it now if nobody is): false while another thread loads.
  bool ready() noexcept { return ensure_loaded(); }

  // Whether a profile is loaded at all (loading it at the first call): false lets the hook skip its
  // device query on the launch path.
  bool any() noexcept { return ensure_loaded() && loaded_any_.load(); }

  // Whether the profile holds any path choice, for any device. ggml asks for its mmvq/mmq decisions at
  // every graph it checks (once per decode token): without path choices the hook answers at once.
  bool any_paths() noexcept { return ensure_loaded() && any_paths_.load(); }

  // Hook v5: whether the profile holds any group config for `device` (an applied mul_mat_group entry).
  bool has_groups(const Device& device) noexcept {
    if (!any()) return false;  // no profile: no lock, no copy
    return with_choices(device, group_compiled(), [](const Choices& c) { return !c.groups.empty(); });
  }

 private:
  enum { kUnloaded, kLoading, kLoaded };
  TypeLookup types_;
  Say say_;
  std::atomic<int> state_{kUnloaded};
  std::atomic<bool> loaded_any_{false}, any_paths_{false};
  std::mutex mutex_;
  std::string path_;
  std::shared_ptr<const Profile> profile_;
  std::map<int, Choices> devices_;  // by device index: what the profile holds there
  int path_hooks_;
  Compiled compiled_;               // the constructor's, else the last lookup() or path() brought
  std::mutex compiled_mutex_;

  Compiled group_compiled() {
    std::lock_guard<std::mutex> lock(compiled_mutex_);
    return compiled_;
  }
  std::atomic<bool> have_compiled_{false};
  void remember(const Compiled& compiled) {
    if (have_compiled_.load(std::memory_order_relaxed)) return;  // the launch path takes no lock
    std::lock_guard<std::mutex> lock(compiled_mutex_);
    if (!compiled_) compiled_ = compiled;
    have_compiled_.store(true);
  }

  // Loads at the first use; false while another thread is loading (stock meanwhile).
  bool ensure_loaded() noexcept {
    if (state_.load() == kLoaded) return true;
    int expected = kUnloaded;
    if (!state_.compare_exchange_strong(expected, kLoading)) return false;
    load(nullptr);
    return true;
  }

  // Runs `use` on the device's choices (made, and said, at its first use); false without a profile.
  template <class Use>
  bool with_choices(const Device& device, const Compiled& compiled, Use&& use) noexcept {
    try {
      if (!compiled) return false;  // group() before the hook said what it compiled: stock
      remember(compiled);
      if (!ensure_loaded()) return false;
      if (!loaded_any_.load()) return false;  // no profile: stock, without taking the lock
      std::string said;
      bool result = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!profile_) return false;
        auto it = devices_.find(device.index);
        if (it == devices_.end()) {
          it = devices_.emplace(device.index, choose(*profile_, device, compiled)).first;
          said = line(path_, it->second, device, path_hooks_);
        }
        result = use(it->second);
      }
      if (!said.empty()) say_(said);
      return result;
    } catch (...) {
      return false;
    }
  }
};

}  // namespace temper_profile
