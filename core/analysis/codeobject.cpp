#include "temper/codeobject.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>

#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/install.h"
#include "temper/mmvq_group.h"
#include "temper/mmvq_traits.h"

namespace temper {
namespace {

using nlohmann::json;

// Bounds-checked little-endian (ELF, bundles) and big-endian (MessagePack) reads over a byte span;
// every failure names the file and the byte offset.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& where) : b_(bytes), where_(where) {}
  size_t size() const { return b_.size(); }
  [[noreturn]] void bad(size_t at, const std::string& what) const {
    fail(ErrorKind::BadInput, where_ + " at byte " + std::to_string(at) + ": " + what);
  }
  void need(size_t at, size_t n, const char* what) const {
    if (at > b_.size() || n > b_.size() - at) bad(at, std::string("truncated ") + what);
  }
  template <class T>
  T le(size_t at, const char* what) const {
    need(at, sizeof(T), what);
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>(v | (static_cast<T>(b_[at + i]) << (8 * i)));
    return v;
  }
  uint64_t be(size_t at, size_t n, const char* what) const {
    need(at, n, what);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(b_[at + i]);
    return v;
  }
  std::string str(size_t at, size_t n, const char* what) const {
    need(at, n, what);
    return std::string(reinterpret_cast<const char*>(b_.data() + at), n);
  }
  std::span<const std::byte> sub(size_t at, size_t n, const char* what) const {
    need(at, n, what);
    return b_.subspan(at, n);
  }
  const std::string& where() const { return where_; }

 private:
  std::span<const std::byte> b_;
  std::string where_;
};

// ---- MessagePack -----------------------------------------------------------------------------

class MsgpackParser {
 public:
  explicit MsgpackParser(const Reader& r) : r_(r) {}
  json parse_document() {
    json v = value(0);
    if (pos_ != r_.size()) r_.bad(pos_, "trailing bytes after the MessagePack value");
    return v;
  }

 private:
  const Reader& r_;
  size_t pos_ = 0;

  uint64_t take(size_t n) {
    const uint64_t v = r_.be(pos_, n, "MessagePack value");
    pos_ += n;
    return v;
  }
  size_t count(size_t n, size_t min_bytes_each) {
    const size_t at = pos_;
    const uint64_t c = take(n);
    // Each element needs at least one byte: a corrupt count cannot make us allocate or loop for long.
    if (c > (r_.size() - pos_) / min_bytes_each) r_.bad(at, "MessagePack length " + std::to_string(c) + " exceeds the data");
    return static_cast<size_t>(c);
  }
  std::string string(size_t len) {
    std::string s = r_.str(pos_, len, "MessagePack string");
    pos_ += len;
    return s;
  }
  json array(size_t n, int depth) {
    json a = json::array();
    for (size_t i = 0; i < n; ++i) a.push_back(value(depth + 1));
    return a;
  }
  json map(size_t n, int depth) {
    json m = json::object();
    for (size_t i = 0; i < n; ++i) {
      json key = value(depth + 1);
      std::string k = key.is_string() ? key.get<std::string>() : key.dump();
      m[k] = value(depth + 1);
    }
    return m;
  }
  json bytes(size_t n) {
    json a = json::array();
    for (size_t i = 0; i < n; ++i) a.push_back(take(1));
    return a;
  }
  template <class Signed>
  json signed_int(size_t n) {
    const uint64_t u = take(n);
    return static_cast<int64_t>(static_cast<Signed>(u));
  }

  json value(int depth) {
    if (depth > 64) r_.bad(pos_, "MessagePack nesting deeper than 64");
    const size_t at = pos_;
    const auto tag = static_cast<uint8_t>(take(1));
    if (tag <= 0x7f) return tag;
    if (tag >= 0xe0) return static_cast<int64_t>(static_cast<int8_t>(tag));
    if ((tag & 0xf0) == 0x80) return map(tag & 0x0f, depth);
    if ((tag & 0xf0) == 0x90) return array(tag & 0x0f, depth);
    if ((tag & 0xe0) == 0xa0) return string(tag & 0x1f);
    switch (tag) {
      case 0xc0: return nullptr;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return bytes(count(1, 1));
      case 0xc5: return bytes(count(2, 1));
      case 0xc6: return bytes(count(4, 1));
      case 0xca: {
        const auto u = static_cast<uint32_t>(take(4));
        float f;
        std::memcpy(&f, &u, 4);
        return f;
      }
      case 0xcb: {
        const uint64_t u = take(8);
        double d;
        std::memcpy(&d, &u, 8);
        return d;
      }
      case 0xcc: return take(1);
      case 0xcd: return take(2);
      case 0xce: return take(4);
      case 0xcf: return take(8);
      case 0xd0: return signed_int<int8_t>(1);
      case 0xd1: return signed_int<int16_t>(2);
      case 0xd2: return signed_int<int32_t>(4);
      case 0xd3: return signed_int<int64_t>(8);
      case 0xd9: return string(count(1, 1));
      case 0xda: return string(count(2, 1));
      case 0xdb: return string(count(4, 1));
      case 0xdc: return array(count(2, 1), depth);
      case 0xdd: return array(count(4, 1), depth);
      case 0xde: return map(count(2, 2), depth);
      case 0xdf: return map(count(4, 2), depth);
      default: break;
    }
    // Extension types (0xc7-0xc9, 0xd4-0xd8) never appear in AMDGPU metadata.
    r_.bad(at, "unsupported MessagePack tag 0x" + [&] {
      char buf[3];
      std::snprintf(buf, sizeof buf, "%02x", tag);
      return std::string(buf);
    }());
  }
};

// ---- ELF -------------------------------------------------------------------------------------

constexpr uint16_t kEmAmdgpu = 224;
constexpr uint32_t kShtNote = 7, kPtNote = 4;
constexpr uint32_t kNtAmdgpuMetadata = 32;
constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kCompressedBundleMagic = "CCOB";

bool is_elf(std::span<const std::byte> b) {
  return b.size() >= 4 && std::memcmp(b.data(), "\x7f" "ELF", 4) == 0;
}
bool starts_with_bytes(std::span<const std::byte> b, std::string_view magic) {
  return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
}

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
};

std::vector<Section> elf_sections(const Reader& r) {
  if (r.size() < 64) r.bad(0, "ELF header truncated");
  if (r.le<uint8_t>(4, "ELF class") != 2) r.bad(4, "expected a 64-bit ELF");
  if (r.le<uint8_t>(5, "ELF data") != 1) r.bad(5, "expected a little-endian ELF");
  const auto shoff = r.le<uint64_t>(40, "e_shoff");
  const auto shentsize = r.le<uint16_t>(58, "e_shentsize");
  const auto shnum = r.le<uint16_t>(60, "e_shnum");
  const auto shstrndx = r.le<uint16_t>(62, "e_shstrndx");
  std::vector<Section> out;
  if (shnum == 0) return out;
  if (shentsize < 64) r.bad(58, "section header size " + std::to_string(shentsize) + " < 64");
  r.need(shoff, uint64_t{shnum} * shentsize, "section header table");
  for (uint32_t i = 0; i < shnum; ++i) {
    const size_t h = shoff + size_t{i} * shentsize;
    Section s;
    s.name = std::to_string(r.le<uint32_t>(h, "sh_name"));  // resolved below
    s.type = r.le<uint32_t>(h + 4, "sh_type");
    s.offset = r.le<uint64_t>(h + 24, "sh_offset");
    s.size = r.le<uint64_t>(h + 32, "sh_size");
    out.push_back(s);
  }
  if (shstrndx < out.size() && out[shstrndx].type != 8 /*SHT_NOBITS*/) {
    const Section strtab = out[shstrndx];
    r.need(strtab.offset, strtab.size, "section name table");
    for (auto& s : out) {
      const uint64_t at = std::stoull(s.name);
      if (at >= strtab.size) r.bad(strtab.offset, "section name offset beyond the name table");
      const size_t start = strtab.offset + at;
      size_t end = start;
      while (end < strtab.offset + strtab.size && r.le<uint8_t>(end, "section name") != 0) ++end;
      s.name = r.str(start, end - start, "section name");
    }
  }
  return out;
}

// The NT_AMDGPU_METADATA descriptor in note data [at, at + size), if any.
std::optional<std::span<const std::byte>> find_metadata_note(const Reader& r, uint64_t at, uint64_t size) {
  r.need(at, size, "note section");
  const uint64_t end = at + size;
  auto align4 = [](uint64_t v) { return (v + 3) & ~uint64_t{3}; };
  while (at + 12 <= end) {
    const auto namesz = r.le<uint32_t>(at, "note namesz");
    const auto descsz = r.le<uint32_t>(at + 4, "note descsz");
    const auto type = r.le<uint32_t>(at + 8, "note type");
    const uint64_t name_at = at + 12, desc_at = name_at + align4(namesz);
    if (desc_at + descsz > end) r.bad(at, "note runs past its section");
    const std::string name = r.str(name_at, namesz, "note name");
    if (type == kNtAmdgpuMetadata && name.rfind("AMDGPU", 0) == 0) return r.sub(desc_at, descsz, "metadata note");
    if (type == 10 && name.rfind("AMD", 0) == 0)
      r.bad(at, "code object v2 (YAML HSA metadata) is not supported: rebuild with code object v4 or later");
    at = desc_at + align4(descsz);
  }
  return std::nullopt;
}

int int_field(const json& k, const char* key, const std::string& where, bool required = true) {
  auto it = k.find(key);
  if (it == k.end()) {
    if (required) fail(ErrorKind::BadInput, where + ": kernel metadata lacks " + key);
    return 0;
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
    fail(ErrorKind::BadInput, where + ": " + key + " is not a non-negative integer");
  return static_cast<int>(it->get<int64_t>());
}

CodeObject code_object_from_metadata(const json& md, const std::string& where) {
  if (!md.is_object()) fail(ErrorKind::BadInput, where + ": AMDGPU metadata is not a map");
  CodeObject co;
  co.source = where;
  if (auto t = md.find("amdhsa.target"); t != md.end() && t->is_string()) co.target = t->get<std::string>();
  const size_t dashes = co.target.find("--");
  if (dashes == std::string::npos) fail(ErrorKind::BadInput, where + ": metadata lacks amdhsa.target");
  co.arch = co.target.substr(dashes + 2);
  co.arch = co.arch.substr(0, co.arch.find(':'));
  auto ks = md.find("amdhsa.kernels");
  if (ks == md.end()) return co;  // a code object without kernels
  if (!ks->is_array()) fail(ErrorKind::BadInput, where + ": amdhsa.kernels is not an array");
  for (const auto& k : *ks) {
    if (!k.is_object() || !k.contains(".name") || !(*k.find(".name")).is_string())
      fail(ErrorKind::BadInput, where + ": a kernel in amdhsa.kernels has no .name");
    CodeObjectKernel kernel;
    kernel.name = k[".name"].get<std::string>();
    const std::string at = where + ": kernel " + kernel.name;
    kernel.symbol = k.value(".symbol", kernel.name + ".kd");
    KernelResources& r = kernel.resources;
    r.vgprs = int_field(k, ".vgpr_count", at);
    r.agprs = int_field(k, ".agpr_count", at, false);
    r.sgprs = int_field(k, ".sgpr_count", at);
    r.lds_bytes = int_field(k, ".group_segment_fixed_size", at);
    r.scratch_bytes = int_field(k, ".private_segment_fixed_size", at);
    r.wave_size = int_field(k, ".wavefront_size", at);
    r.vgpr_spills = int_field(k, ".vgpr_spill_count", at, false);
    r.sgpr_spills = int_field(k, ".sgpr_spill_count", at, false);
    kernel.max_flat_workgroup_size = int_field(k, ".max_flat_workgroup_size", at, false);
    if (auto d = k.find(".uses_dynamic_stack"); d != k.end() && d->is_boolean()) kernel.uses_dynamic_stack = d->get<bool>();
    if (r.wave_size != 32 && r.wave_size != 64) fail(ErrorKind::BadInput, at + ": .wavefront_size must be 32 or 64");
    co.kernels.push_back(std::move(kernel));
  }
  return co;
}

void read_into(std::span<const std::byte> bytes, const std::string& where, std::vector<CodeObject>& out);

// A clang offload bundle: magic, u64 entry count, entries (u64 offset, u64 size, u64 triple length,
// triple); offsets are relative to the bundle's start. Returns the bundle's extent.
size_t read_bundle(std::span<const std::byte> bytes, const std::string& where, std::vector<CodeObject>& out) {
  const Reader r(bytes, where);
  const auto n = r.le<uint64_t>(kBundleMagic.size(), "bundle entry count");
  if (n > 4096) r.bad(kBundleMagic.size(), "implausible bundle entry count " + std::to_string(n));
  size_t at = kBundleMagic.size() + 8, extent = at;
  for (uint64_t i = 0; i < n; ++i) {
    const auto offset = r.le<uint64_t>(at, "bundle entry offset");
    const auto size = r.le<uint64_t>(at + 8, "bundle entry size");
    const auto triple_len = r.le<uint64_t>(at + 16, "bundle triple length");
    const std::string triple = r.str(at + 24, triple_len, "bundle triple");
    at += 24 + triple_len;
    extent = std::max<size_t>(extent, at);
    if (size == 0 || triple.find("amdgcn") == std::string::npos) continue;  // the (empty) host entry
    const auto entry = r.sub(offset, size, "bundle entry");
    extent = std::max<size_t>(extent, offset + size);
    read_into(entry, where + " [" + triple + "]", out);
  }
  return extent;
}

void read_host_elf(const Reader& r, std::vector<CodeObject>& out) {
  // A host binary: device code lives in .hip_fatbin as one or more offload bundles.
  for (const Section& s : elf_sections(r)) {
    if (s.name != ".hip_fatbin" || s.type == 8) continue;
    const auto sec = r.sub(s.offset, s.size, ".hip_fatbin");
    size_t at = 0;
    while (at + kBundleMagic.size() <= sec.size()) {
      const auto rest = sec.subspan(at);
      const auto hit = std::search(rest.begin(), rest.end(), reinterpret_cast<const std::byte*>(kBundleMagic.data()),
                                    reinterpret_cast<const std::byte*>(kBundleMagic.data() + kBundleMagic.size()));
      if (hit == rest.end()) break;
      at += static_cast<size_t>(hit - rest.begin());
      at += read_bundle(sec.subspan(at), r.where() + " (.hip_fatbin+" + std::to_string(at) + ")", out);
    }
  }
}

void read_into(std::span<const std::byte> bytes, const std::string& where, std::vector<CodeObject>& out) {
  if (starts_with_bytes(bytes, kBundleMagic)) {
    read_bundle(bytes, where, out);
    return;
  }
  if (starts_with_bytes(bytes, kCompressedBundleMagic))
    fail(ErrorKind::BadInput, where + ": compressed offload bundle (CCOB) is not supported; build without --offload-compress");
  if (!is_elf(bytes)) fail(ErrorKind::BadInput, where + ": not an ELF file or clang offload bundle");
  const Reader r(bytes, where);
  const auto sections = elf_sections(r);
  if (r.le<uint16_t>(18, "e_machine") != kEmAmdgpu) {
    read_host_elf(r, out);
    return;
  }
  std::optional<std::span<const std::byte>> note;
  for (const Section& s : sections)
    if (s.type == kShtNote && !note) note = find_metadata_note(r, s.offset, s.size);
  if (!note) {  // no section headers: the program headers' PT_NOTE segments
    const auto phoff = r.le<uint64_t>(32, "e_phoff");
    const auto phentsize = r.le<uint16_t>(54, "e_phentsize");
    const auto phnum = r.le<uint16_t>(56, "e_phnum");
    for (uint32_t i = 0; i < phnum && !note; ++i) {
      const size_t h = phoff + size_t{i} * phentsize;
      if (r.le<uint32_t>(h, "p_type") == kPtNote)
        note = find_metadata_note(r, r.le<uint64_t>(h + 8, "p_offset"), r.le<uint64_t>(h + 32, "p_filesz"));
    }
  }
  if (!note) fail(ErrorKind::BadInput, where + ": AMDGPU code object without an NT_AMDGPU_METADATA note");
  const Reader md(*note, where + " (metadata note)");
  out.push_back(code_object_from_metadata(MsgpackParser(md).parse_document(), where));
}

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Splits the template arguments of the first `mmvq<...>` in a demangled name at top-level commas.
std::optional<std::vector<std::string>> mmvq_template_args(std::string_view name, std::string_view kernel = "mmvq<") {
  const size_t open = name.find(kernel);
  if (open == std::string_view::npos) return std::nullopt;
  std::vector<std::string> args(1);
  int depth = 0;
  for (size_t i = open + kernel.size(); i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') {
      if (depth == 0) return args;
      --depth;
    }
    if (c == ',' && depth == 0) args.emplace_back();
    else if (c != ' ') args.back() += c;
  }
  return std::nullopt;
}

// "12", "12u", "(temper::GgmlType)12", "(unsigned int)12" → 12.
std::optional<long> template_int(std::string arg) {
  if (!arg.empty() && arg.front() == '(') {
    const size_t close = arg.find(')');
    if (close == std::string::npos) return std::nullopt;
    arg = arg.substr(close + 1);
  }
  while (!arg.empty() && (arg.back() == 'u' || arg.back() == 'l' || arg.back() == 'U' || arg.back() == 'L')) arg.pop_back();
  if (arg.empty()) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(arg.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

}  // namespace

json parse_msgpack(std::span<const std::byte> bytes, const std::string& where) {
  const Reader r(bytes, where);
  return MsgpackParser(r).parse_document();
}

std::vector<CodeObject> read_code_objects(std::span<const std::byte> bytes, const std::string& where) {
  std::vector<CodeObject> out;
  read_into(bytes, where, out);
  return out;
}

std::vector<CodeObject> load_code_objects(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    const std::string data = read_input(path, kMaxBinaryInputBytes, "code object");
    return read_code_objects(as_bytes(data), path.string());
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    // Files too big to be a code object (a build tree's archives) are not ours to judge here.
    if (it->is_regular_file(ec) && it->file_size(ec) <= kMaxBinaryInputBytes) files.push_back(it->path());
  if (ec) fail(ErrorKind::Io, path.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<CodeObject> out;
  for (const auto& f : files) {
    const std::string data = read_input(f, kMaxBinaryInputBytes, "code object");
    const auto bytes = as_bytes(data);
    const bool device = starts_with_bytes(bytes, kBundleMagic) ||
                        (is_elf(bytes) && data.size() > 20 && Reader(bytes, f.string()).le<uint16_t>(18, "e_machine") == kEmAmdgpu);
    if (!device) continue;  // build byproducts, host objects: not ours to judge here
    read_into(bytes, f.string(), out);
  }
  return out;
}

std::string demangle(std::string_view mangled) {
  int status = 0;
  const std::string in(mangled);
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(in.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : in;
}

std::optional<MmvqInstance> parse_mmvq_symbol(std::string_view symbol) {
  std::string_view s = symbol;
  if (s.size() > 3 && s.substr(s.size() - 3) == ".kd") s.remove_suffix(3);
  const std::string name = demangle(s);
  const auto args = mmvq_template_args(name);
  // TYPE, NCOLS, NWARPS, ROWS_PER_BLOCK and, since the kernel took one, the engine variant
  // (mmvq::KernelVariant, 0 or 1): the same compiled configuration to the analysis.
  if (!args || (args->size() != 4 && args->size() != 5)) return std::nullopt;
  if (args->size() == 5) {
    const auto variant = template_int((*args)[4]);
    if (!variant || *variant < 0 || *variant >= mmvq::kKernelVariants) return std::nullopt;
  }
  long v[4];
  for (size_t i = 0; i < 4; ++i) {
    const auto x = template_int((*args)[i]);
    if (!x) return std::nullopt;
    v[i] = *x;
  }
  if (v[0] < 0 || !find_type(static_cast<uint32_t>(v[0])) || v[1] < 1 || v[1] > 8 || v[2] < 1 || v[2] > 32 || v[3] < 1 || v[3] > 32)
    return std::nullopt;
  MmvqInstance m;
  m.type = static_cast<GgmlType>(v[0]);
  m.ncols = static_cast<int>(v[1]);
  m.config = {static_cast<int>(v[2]), static_cast<int>(v[3])};
  return m;
}

std::optional<MmvqGroupInstance> parse_mmvq_group_symbol(std::string_view symbol) {
  std::string_view s = symbol;
  if (s.size() > 3 && s.substr(s.size() - 3) == ".kd") s.remove_suffix(3);
  const auto args = mmvq_template_args(demangle(s), "mmvq_group<");
  if (!args || args->size() != 5) return std::nullopt;
  long v[5];
  for (size_t i = 0; i < 5; ++i) {
    const auto x = template_int((*args)[i]);
    if (!x) return std::nullopt;
    v[i] = *x;
  }
  for (int i : {0, 1})
    if (v[i] < 0 || !find_type(static_cast<uint32_t>(v[i]))) return std::nullopt;
  if (v[2] < 1 || v[2] > mmvq::kGroupMaxNcols || !mmvq::group_config_in_grid(int(v[3]), int(v[4]))) return std::nullopt;
  MmvqGroupInstance g;
  g.instance = {static_cast<GgmlType>(v[0]), int(v[2]), {int(v[3]), int(v[4])}};
  g.type_b = static_cast<GgmlType>(v[1]);
  return g;
}

}  // namespace temper

namespace temper {

namespace {
void sort_occupancy(std::vector<ConfigOccupancy>& out) {
  std::sort(out.begin(), out.end(), [](const ConfigOccupancy& a, const ConfigOccupancy& b) {
    const auto key = [](const ConfigOccupancy& c) {
      return std::tuple(static_cast<uint32_t>(c.instance.type), static_cast<uint32_t>(c.group_b.value_or(c.instance.type)),
                        c.instance.ncols, c.instance.config.nwarps, c.instance.config.rows_per_block);
    };
    return key(a) < key(b);
  });
}
}  // namespace

std::vector<ConfigOccupancy> static_group_occupancy(const GpuSpec& gpu, std::span<const CodeObject> objects) {
  std::vector<ConfigOccupancy> out;
  for (const CodeObject& co : objects) {
    if (co.arch != gpu.arch) continue;
    for (const CodeObjectKernel& k : co.kernels) {
      const auto g = parse_mmvq_group_symbol(k.name);
      if (!g) continue;
      const bool seen = std::any_of(out.begin(), out.end(), [&](const ConfigOccupancy& c) {
        return c.instance.type == g->instance.type && c.group_b == g->type_b && c.instance.ncols == g->instance.ncols &&
               c.instance.config == g->instance.config;
      });
      if (seen) continue;
      ConfigOccupancy c;
      c.instance = g->instance;
      c.group_b = g->type_b;
      c.kernel = k.name;
      c.resources = k.resources;
      c.occupancy = compute_occupancy(gpu, k.resources, g->instance.config.nwarps * k.resources.wave_size);
      out.push_back(std::move(c));
    }
  }
  sort_occupancy(out);
  return out;
}

std::vector<ConfigOccupancy> static_mmvq_occupancy(const GpuSpec& gpu, std::span<const CodeObject> objects) {
  std::vector<ConfigOccupancy> out;
  for (const CodeObject& co : objects) {
    if (co.arch != gpu.arch) continue;
    for (const CodeObjectKernel& k : co.kernels) {
      const auto m = parse_mmvq_symbol(k.name);
      // Configs the kernel set cannot launch at this wave size compile to trap stubs: not configs.
      if (!m || !mmvq::launchable(m->ncols, m->config.nwarps, m->config.rows_per_block, k.resources.wave_size)) continue;
      const bool seen = std::any_of(out.begin(), out.end(), [&](const ConfigOccupancy& c) {
        return c.instance.type == m->type && c.instance.ncols == m->ncols && c.instance.config == m->config;
      });
      if (seen) continue;
      ConfigOccupancy c;
      c.instance = *m;
      c.kernel = k.name;
      c.resources = k.resources;
      c.occupancy = compute_occupancy(gpu, k.resources, m->config.nwarps * k.resources.wave_size);
      out.push_back(std::move(c));
    }
  }
  sort_occupancy(out);
  return out;
}

nlohmann::json to_json(const ConfigOccupancy& c) {
  const KernelResources& r = c.resources;
  const Occupancy& o = c.occupancy;
  nlohmann::json j = {
      {"type", std::string(type_name(c.instance.type))}, {"ncols", c.instance.ncols},
      {"nwarps", c.instance.config.nwarps}, {"rows_per_block", c.instance.config.rows_per_block},
      {"kernel", c.kernel}, {"threads_per_block", o.threads_per_block}, {"wave_size", o.wave_size},
      {"vgprs", r.vgprs}, {"agprs", r.agprs}, {"sgprs", r.sgprs}, {"lds_bytes", r.lds_bytes},
      {"scratch_bytes", r.scratch_bytes}, {"vgpr_spills", r.vgpr_spills}, {"sgpr_spills", r.sgpr_spills},
      {"blocks_per_cu", o.blocks_per_cu}, {"waves_per_simd", o.waves_per_simd},
      {"max_waves_per_simd", o.max_waves_per_simd}, {"occupancy", o.occupancy},
      {"limiter", std::string(limiter_name(o.limiter))}};
  if (!o.why.empty()) j["why"] = o.why;
  if (c.group_b) j["group"] = std::string(type_name(c.instance.type)) + "+" + std::string(type_name(*c.group_b));
  return j;
}

std::filesystem::path default_codeobj_dir() {
  if (const char* env = std::getenv("TEMPER_CODEOBJ_DIR"); env && *env) return env;
  if (const auto data = installed_data_dir()) return *data / "codeobj";  // an install never reads its build tree
  return TEMPER_BUILD_CODEOBJ_DIR;
}

std::vector<CodeObject> load_code_objects_for(const std::filesystem::path& dir, std::string_view arch) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  const auto per_arch = dir / std::string(arch);
  auto all = load_code_objects(std::filesystem::is_directory(per_arch, ec) ? per_arch : dir);
  std::erase_if(all, [&](const CodeObject& co) { return co.arch != arch; });
  return all;
}

std::vector<std::string> code_object_archs(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> archs;
  if (!fs::is_directory(dir, ec)) return archs;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec) && name.rfind("gfx", 0) == 0 && !load_code_objects(e.path()).empty()) archs.push_back(name);
  }
  if (archs.empty())
    for (const auto& co : load_code_objects(dir))
      if (std::find(archs.begin(), archs.end(), co.arch) == archs.end()) archs.push_back(co.arch);
  std::sort(archs.begin(), archs.end());
  return archs;
}

}  // namespace temper
