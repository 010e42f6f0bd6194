// GGUF reader: one bounds-checked pass over the header of a read-only mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <numeric>
#include <type_traits>
#include <unordered_set>

#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/input.h"

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace temper {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxArrayDepth = 4;        // arrays nested deeper than this are rejected
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, kind, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, one dim, type, offset
constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;
// Hostile-input limits (docs/reliability.md): far above any real model, low enough that the
// parsed tables stay small. Counts beyond what the file's bytes could hold are rejected first.
constexpr uint64_t kMaxMetadata = 65536;       // real models: < 100 keys
constexpr uint64_t kMaxTensors = 1u << 20;     // real models: < 10,000 tensors
constexpr uint64_t kMaxNameBytes = 65535;      // keys and tensor names (ggml's own limit is 63)

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Bytes of a fixed-size kind; 0 for string and array.
uint64_t fixed_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::String: case GgufType::Array: return 0;
  }
  return 0;
}

bool valid_kind(uint32_t id) { return id <= static_cast<uint32_t>(GgufType::F64); }

// Encoded size of an already validated value starting at p.
uint64_t encoded_size(GgufType t, const uint8_t* p) {
  if (uint64_t s = fixed_size(t)) return s;
  if (t == GgufType::String) return 8 + load<uint64_t>(p);
  const auto elem = static_cast<GgufType>(load<uint32_t>(p));
  const uint64_t count = load<uint64_t>(p + 4);
  if (uint64_t s = fixed_size(elem)) return 12 + count * s;
  uint64_t total = 12;
  for (uint64_t i = 0; i < count; ++i) total += encoded_size(elem, p + total);
  return total;
}

std::string printable(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 64) out += "...";
  return out + "\"";
}

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  static constexpr std::string_view names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                               "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < std::size(names) ? names[i] : "unknown";
}

// ---- GgufValue ----

GgufValue GgufValue::at(GgufType type, const uint8_t* payload, uint64_t offset) {
  GgufValue v(type, payload, offset);
  if (type == GgufType::Array) {
    v.element_type_ = static_cast<GgufType>(load<uint32_t>(payload));
    v.count_ = load<uint64_t>(payload + 4);
    v.payload_ = payload + 12;
  }
  return v;
}

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
    default: return false;
  }
}

std::optional<int64_t> GgufValue::to_i64() const {
  switch (type_) {
    case GgufType::U8: return load<uint8_t>(payload_);
    case GgufType::I8: return load<int8_t>(payload_);
    case GgufType::U16: return load<uint16_t>(payload_);
    case GgufType::I16: return load<int16_t>(payload_);
    case GgufType::U32: return load<uint32_t>(payload_);
    case GgufType::I32: return load<int32_t>(payload_);
    case GgufType::I64: return load<int64_t>(payload_);
    case GgufType::U64: {
      const auto v = load<uint64_t>(payload_);
      if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(v);
    }
    default: return std::nullopt;
  }
}

std::optional<uint64_t> GgufValue::to_u64() const {
  if (type_ == GgufType::U64) return load<uint64_t>(payload_);
  const auto v = to_i64();
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

std::optional<double> GgufValue::to_f64() const {
  if (type_ == GgufType::F32) return load<float>(payload_);
  if (type_ == GgufType::F64) return load<double>(payload_);
  if (type_ == GgufType::U64) return static_cast<double>(load<uint64_t>(payload_));
  if (const auto v = to_i64()) return static_cast<double>(*v);
  return std::nullopt;
}

std::optional<bool> GgufValue::to_bool() const {
  if (type_ != GgufType::Bool) return std::nullopt;
  return load<uint8_t>(payload_) != 0;
}

std::optional<std::string_view> GgufValue::to_string() const {
  if (type_ != GgufType::String) return std::nullopt;
  const auto len = load<uint64_t>(payload_);
  return std::string_view(reinterpret_cast<const char*>(payload_ + 8), len);
}

GgufValue GgufValue::operator[](uint64_t i) const {
  if (type_ != GgufType::Array || i >= count_)
    fail(ErrorKind::Internal, "GGUF array index " + std::to_string(i) + " out of range (size " + std::to_string(count_) + ")");
  if (const uint64_t s = fixed_size(element_type_)) return at(element_type_, payload_ + i * s, offset_ + 12 + i * s);
  uint64_t skip = 0;
  for (uint64_t j = 0; j < i; ++j) skip += encoded_size(element_type_, payload_ + skip);
  return at(element_type_, payload_ + skip, offset_ + 12 + skip);
}

GgufValue::Iterator GgufValue::begin() const {
  Iterator it;
  it.element_type_ = element_type_;
  it.at_ = payload_;
  it.offset_ = offset_ + 12;
  it.index_ = 0;
  return it;
}

GgufValue::Iterator GgufValue::end() const {
  Iterator it;
  it.index_ = type_ == GgufType::Array ? count_ : 0;
  return it;
}

GgufValue GgufValue::Iterator::operator*() const { return GgufValue::at(element_type_, at_, offset_); }

GgufValue::Iterator& GgufValue::Iterator::operator++() {
  const uint64_t s = encoded_size(element_type_, at_);
  at_ += s;
  offset_ += s;
  ++index_;
  return *this;
}

// ---- parsing ----

struct GgufFile::State {
  std::filesystem::path path;
  std::string file;  // path as text, for messages
  const uint8_t* map = nullptr;
  uint64_t size = 0;
  uint32_t version = 0;
  uint32_t alignment = 32;
  uint64_t header_end = 0;
  uint64_t data_offset = 0;
  std::vector<GgufKv> kvs;
  std::unordered_map<std::string_view, size_t> kv_index;
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string_view, size_t> tensor_index;
  std::vector<UnknownTensor> unknown;
  std::unordered_set<std::string_view> unknown_names;
  std::vector<uint64_t> unknown_offset_fields;  // file offset of each unknown tensor's offset field
  std::string owned;  // from_bytes: the file's bytes (else `map` is a mapping)

  ~State() {
    if (map && owned.empty()) ::munmap(const_cast<uint8_t*>(map), size);
  }
};

class GgufParser {
 public:
  explicit GgufParser(GgufFile::State& s) : s_(s) {}

  void parse() {
    read_header();
    read_metadata();
    read_tensor_infos();
    place_tensor_data();
  }

 private:
  [[noreturn]] void bad(uint64_t at, std::string_view field, std::string_view expected, std::string_view got) const {
    fail(ErrorKind::BadInput, s_.file + ": byte " + std::to_string(at) + ": " + std::string(field) + ": expected " +
                                  std::string(expected) + ", got " + std::string(got));
  }

  uint64_t remaining() const { return s_.size - pos_; }

  // Field names are built only when a message needs them: `field` is text or a callable returning it.
  template <class F>
  static std::string text(const F& field) {
    if constexpr (std::is_invocable_v<const F&>) return field();
    else return std::string(field);
  }

  template <class F>
  void need(uint64_t n, const F& field) const {
    if (remaining() < n)
      bad(pos_, text(field), std::to_string(n) + " bytes", std::to_string(remaining()) + " bytes before the end of the file");
  }

  template <class T, class F>
  T read(const F& field) {
    need(sizeof(T), field);
    T v = load<T>(s_.map + pos_);
    pos_ += sizeof(T);
    return v;
  }

  template <class F>
  std::string_view read_string(const F& field) {
    const uint64_t at = pos_;
    const auto len = read<uint64_t>(field);
    if (len > remaining())
      bad(at, text(field), "a length of at most " + std::to_string(remaining()) + " (bytes left in the file)", std::to_string(len));
    std::string_view s(reinterpret_cast<const char*>(s_.map + pos_), len);
    pos_ += len;
    return s;
  }

  // Keys and tensor names: strings with a length limit.
  template <class F>
  std::string_view read_name(const F& field) {
    if (remaining() >= 8) {
      const auto len = load<uint64_t>(s_.map + pos_);
      if (len > kMaxNameBytes) bad(pos_, text(field), "a length of at most " + std::to_string(kMaxNameBytes), std::to_string(len));
    }
    return read_string(field);
  }

  template <class F>
  GgufType read_kind(const F& field) {
    const uint64_t at = pos_;
    const auto id = read<uint32_t>(field);
    if (!valid_kind(id)) bad(at, text(field), "a value kind 0..12", std::to_string(id));
    return static_cast<GgufType>(id);
  }

  // Where a nested value sits ("tokenizer.ggml.tokens[7][2]"), spelled out only for a message.
  struct FieldPath {
    const std::string* root = nullptr;
    const FieldPath* parent = nullptr;
    uint64_t index = 0;
    std::string operator()() const {
      return parent ? (*parent)() + "[" + std::to_string(index) + "]" : *root;
    }
    FieldPath child(uint64_t i) const { return FieldPath{root, this, i}; }
    auto suffixed(std::string_view what) const {
      return [this, what] { return (*this)() + std::string(what); };
    }
  };

  // Checks a value's encoding and moves past it; arrays are walked, never decoded.
  void skip_value(GgufType kind, const FieldPath& field, int depth) {
    if (const uint64_t s = fixed_size(kind)) {
      need(s, field);
      if (kind == GgufType::Bool && s_.map[pos_] > 1)
        bad(pos_, field(), "a bool of 0 or 1", std::to_string(s_.map[pos_]));
      pos_ += s;
      return;
    }
    if (kind == GgufType::String) {
      read_string(field);
      return;
    }
    if (depth >= kMaxArrayDepth)
      bad(pos_, field(), "arrays nested at most " + std::to_string(kMaxArrayDepth) + " deep", "deeper nesting");
    const GgufType elem = read_kind(field.suffixed(": element kind"));
    const uint64_t count_at = pos_;
    const auto count = read<uint64_t>(field.suffixed(": element count"));
    const uint64_t min_size = fixed_size(elem) ? fixed_size(elem) : elem == GgufType::String ? 8 : 12;
    if (count > remaining() / min_size)
      bad(count_at, field() + ": element count", "at most " + std::to_string(remaining() / min_size) + " " +
          std::string(gguf_type_name(elem)) + " elements (bytes left in the file)", std::to_string(count));
    if (elem == GgufType::Bool) {
      for (uint64_t i = 0; i < count; ++i)
        if (s_.map[pos_ + i] > 1) bad(pos_ + i, field.child(i)(), "a bool of 0 or 1", std::to_string(s_.map[pos_ + i]));
    }
    if (fixed_size(elem)) {
      pos_ += count * min_size;
      return;
    }
    for (uint64_t i = 0; i < count; ++i) {
      if (elem == GgufType::String) {
        // Inline string walk: this loop runs once per vocabulary entry.
        if (remaining() < 8) need(8, field.child(i));
        const auto len = load<uint64_t>(s_.map + pos_);
        if (len > remaining() - 8)
          bad(pos_, field.child(i)(), "a string length of at most " + std::to_string(remaining() - 8) +
              " (bytes left in the file)", std::to_string(len));
        pos_ += 8 + len;
      } else {
        skip_value(elem, field.child(i), depth + 1);
      }
    }
  }

  void read_header() {
    if (s_.size < 4) bad(0, "magic", "\"GGUF\"", std::to_string(s_.size) + " bytes of file");
    const auto magic = read<uint32_t>("magic");
    if (magic != kMagic) {
      std::string got(reinterpret_cast<const char*>(s_.map), 4);
      bad(0, "magic", "\"GGUF\"", printable(got));
    }
    const uint64_t version_at = pos_;
    s_.version = read<uint32_t>("version");
    if (s_.version != 2 && s_.version != 3) {
      const bool big_endian = s_.version == 0x02000000 || s_.version == 0x03000000;
      bad(version_at, "version", "2 or 3 (little-endian)",
          big_endian ? "a big-endian file" : std::to_string(s_.version) + (s_.version == 1 ? " (GGUF v1 is not supported)" : ""));
    }
    tensor_count_at_ = pos_;
    tensor_count_ = read<uint64_t>("tensor count");
    kv_count_at_ = pos_;
    kv_count_ = read<uint64_t>("metadata count");
    // Absurd counts: every entry needs at least a few bytes, so the counts are bounded by the file,
    // and by fixed limits that keep the tables small whatever the file's size.
    if (kv_count_ > kMaxMetadata)
      bad(kv_count_at_, "metadata count", "at most " + std::to_string(kMaxMetadata), std::to_string(kv_count_));
    if (tensor_count_ > kMaxTensors)
      bad(tensor_count_at_, "tensor count", "at most " + std::to_string(kMaxTensors), std::to_string(tensor_count_));
    if (kv_count_ > remaining() / kMinKvBytes)
      bad(kv_count_at_, "metadata count", "at most " + std::to_string(remaining() / kMinKvBytes) + " (bytes left in the file)",
          std::to_string(kv_count_));
    if (tensor_count_ > remaining() / kMinTensorInfoBytes ||
        kv_count_ * kMinKvBytes + tensor_count_ * kMinTensorInfoBytes > remaining())
      bad(tensor_count_at_, "tensor count",
          "at most " + std::to_string((remaining() - kv_count_ * kMinKvBytes) / kMinTensorInfoBytes) + " (bytes left in the file)",
          std::to_string(tensor_count_));
  }

  void read_metadata() {
    s_.kvs.reserve(std::min<uint64_t>(kv_count_, 4096));
    for (uint64_t i = 0; i < kv_count_; ++i) {
      const uint64_t at = pos_;
      auto index = [i] { return "metadata[" + std::to_string(i) + "]"; };
      const std::string_view key = read_name([&] { return index() + ": key"; });
      // Messages name the value by its key; only keys short enough to read are copied.
      const std::string field = key.empty() ? index() : std::string(key.substr(0, 256));
      const GgufType kind = read_kind([&] { return field + ": value kind"; });
      const uint64_t value_at = pos_;
      skip_value(kind, FieldPath{&field}, 0);
      if (!s_.kv_index.emplace(key, s_.kvs.size()).second)
        bad(at, index() + ": key", "a key not seen before", "duplicate " + printable(key));
      s_.kvs.push_back(GgufKv{key, GgufValue::at(kind, s_.map + value_at, value_at), at});
    }
    if (const auto it = s_.kv_index.find("general.alignment"); it != s_.kv_index.end()) {
      const GgufKv& kv = s_.kvs[it->second];
      const auto a = kv.value.to_u64();
      if (!a || *a == 0 || *a > kMaxAlignment || (*a & (*a - 1)) != 0)
        bad(kv.value.offset(), "general.alignment", "a power of two up to 2^30",
            a ? std::to_string(*a) : std::string(gguf_type_name(kv.value.type())));
      s_.alignment = static_cast<uint32_t>(*a);
    }
  }

  void read_tensor_infos() {
    s_.tensors.reserve(std::min<uint64_t>(tensor_count_, 65536));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      TensorInfo t{};
      t.info_offset = pos_;
      t.name = read_name([i] { return "tensor[" + std::to_string(i) + "]: name"; });
      auto field = [&t](std::string_view what) { return "tensor " + printable(t.name) + ": " + std::string(what); };

      const uint64_t dims_at = pos_;
      t.n_dims = read<uint32_t>([&] { return field("n_dims"); });
      if (t.n_dims < 1 || t.n_dims > 4) bad(dims_at, field("n_dims"), "1 to 4", std::to_string(t.n_dims));
      t.dims = {1, 1, 1, 1};
      uint64_t elements = 1;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t at = pos_;
        auto dim_field = [&] { return field("ne[" + std::to_string(d) + "]"); };
        t.dims[d] = read<uint64_t>(dim_field);
        if (t.dims[d] == 0) bad(at, dim_field(), "a positive size", "0");
        if (t.dims[d] > static_cast<uint64_t>(INT64_MAX) / elements)
          bad(at, dim_field(), "an element count below 2^63 in total", std::to_string(t.dims[d]) + " (the product overflows)");
        elements *= t.dims[d];
      }

      const auto type_id = read<uint32_t>([&] { return field("type"); });
      const TypeInfo* info = find_type(type_id);
      if (!info) {  // a newer ggml's type: keep the file usable, list the tensor
        const uint64_t offset_at = pos_;
        const uint64_t offset = read<uint64_t>([&] { return field("offset"); });
        if (s_.tensor_index.contains(t.name) || !s_.unknown_names.insert(t.name).second)
          bad(t.info_offset, field("name"), "a name not seen before", "a duplicate");
        s_.unknown.push_back({t.name, type_id, t.n_dims, t.dims, offset, t.info_offset});
        s_.unknown_offset_fields.push_back(offset_at);
        continue;
      }
      t.type = info->type;
      if (t.dims[0] % info->block_size != 0)
        bad(dims_at + 4, field("ne[0]"), "a multiple of " + std::to_string(info->block_size) + " (the " +
            std::string(info->name) + " block size)", std::to_string(t.dims[0]));
      const uint64_t blocks = elements / info->block_size;
      if (blocks > UINT64_MAX / info->type_size)
        bad(dims_at, field("dims"), "a byte size below 2^64", std::to_string(blocks) + " blocks");
      t.bytes = blocks * info->type_size;

      offset_fields_.push_back(pos_);
      t.offset = read<uint64_t>([&] { return field("offset"); });
      if (s_.unknown_names.contains(t.name) || !s_.tensor_index.emplace(t.name, s_.tensors.size()).second)
        bad(t.info_offset, field("name"), "a name not seen before", "a duplicate");
      s_.tensors.push_back(t);
    }
    s_.header_end = pos_;
  }

  void place_tensor_data() {
    const uint64_t a = s_.alignment;
    if (s_.header_end > UINT64_MAX - a) bad(s_.header_end, "data section", "an offset below 2^64", "overflow");
    s_.data_offset = (s_.header_end + a - 1) / a * a;
    const uint64_t data_size = s_.size > s_.data_offset ? s_.size - s_.data_offset : 0;
    for (size_t i = 0; i < s_.tensors.size(); ++i) {
      TensorInfo& t = s_.tensors[i];
      auto field = [&t] { return "tensor " + printable(t.name) + ": offset"; };
      if (t.offset % a != 0)
        bad(offset_fields_[i], field(), "a multiple of the alignment " + std::to_string(a), std::to_string(t.offset));
      if (t.offset > data_size || t.bytes > data_size - t.offset)
        bad(offset_fields_[i], field(), "data inside the file (data section of " + std::to_string(data_size) + " bytes at byte " +
            std::to_string(s_.data_offset) + ")", std::to_string(t.offset) + " + " + std::to_string(t.bytes) + " bytes");
      t.data = {reinterpret_cast<const std::byte*>(s_.map + s_.data_offset + t.offset), t.bytes};
    }
    for (size_t i = 0; i < s_.unknown.size(); ++i) {
      const UnknownTensor& t = s_.unknown[i];
      const std::string field = "tensor " + printable(t.name) + ": offset";
      if (t.offset % a != 0)
        bad(s_.unknown_offset_fields[i], field, "a multiple of the alignment " + std::to_string(a), std::to_string(t.offset));
      if (t.offset >= data_size)
        bad(s_.unknown_offset_fields[i], field, "data inside the file (data section of " + std::to_string(data_size) + " bytes)",
            std::to_string(t.offset));
    }
    std::vector<size_t> order(s_.tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return s_.tensors[x].offset < s_.tensors[y].offset; });
    for (size_t j = 1; j < order.size(); ++j) {
      const TensorInfo& prev = s_.tensors[order[j - 1]];
      const TensorInfo& t = s_.tensors[order[j]];
      if (t.offset < prev.offset + prev.bytes)
        bad(offset_fields_[order[j]], "tensor " + printable(t.name) + ": offset",
            "data not overlapping tensor " + printable(prev.name) + " (which ends at " + std::to_string(prev.offset + prev.bytes) + ")",
            std::to_string(t.offset));
    }
  }

  GgufFile::State& s_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0, kv_count_ = 0;
  uint64_t tensor_count_at_ = 0, kv_count_at_ = 0;
  std::vector<uint64_t> offset_fields_;  // file offset of each tensor's offset field
};

// ---- GgufFile ----

GgufFile::GgufFile(std::unique_ptr<State> state) : state_(std::move(state)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& path) {
  auto s = std::make_unique<State>();
  s->path = path;
  s->file = path.string();
  const auto [fd, size] = open_input(path, 0, "model");
  s->size = size;
  if (s->size > 0) {
    void* p = ::mmap(nullptr, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      fail(ErrorKind::Io, "cannot map " + s->file + ": " + std::strerror(e));
    }
    s->map = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  GgufParser(*s).parse();
  return GgufFile(std::move(s));
}

GgufFile GgufFile::from_bytes(std::string bytes, const std::string& name) {
  auto s = std::make_unique<State>();
  s->path = name;
  s->file = name;
  s->owned = std::move(bytes);
  s->size = s->owned.size();
  s->map = s->owned.empty() ? nullptr : reinterpret_cast<const uint8_t*>(s->owned.data());
  GgufParser(*s).parse();
  return GgufFile(std::move(s));
}

const std::filesystem::path& GgufFile::path() const { return state_->path; }
uint32_t GgufFile::version() const { return state_->version; }
uint64_t GgufFile::file_size() const { return state_->size; }
uint64_t GgufFile::data_offset() const { return state_->data_offset; }
uint32_t GgufFile::alignment() const { return state_->alignment; }

uint64_t GgufFile::header_hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  const uint64_t prime = 0x100000001b3ull;
  const uint8_t* p = state_->map;
  const uint64_t n = state_->header_end;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) h = (h ^ load<uint64_t>(p + i)) * prime;
  if (i < n) {
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    h = (h ^ tail) * prime;
  }
  return h;
}

std::span<const GgufKv> GgufFile::metadata() const { return state_->kvs; }

const GgufKv* GgufFile::find_kv(std::string_view key) const {
  const auto it = state_->kv_index.find(key);
  return it == state_->kv_index.end() ? nullptr : &state_->kvs[it->second];
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const GgufKv* kv = find_kv(key);
  return kv ? &kv->value : nullptr;
}

template <class To>
auto GgufFile::typed(std::string_view key, To to, std::string_view expected) const {
  using Result = decltype(std::invoke(to, std::declval<const GgufValue&>()));
  const GgufKv* kv = find_kv(key);
  if (!kv) return Result();
  if (Result v = std::invoke(to, kv->value)) return v;
  std::string got(gguf_type_name(kv->value.type()));
  if (const auto v = kv->value.to_i64()) got += " " + std::to_string(*v);
  fail(ErrorKind::BadInput, state_->file + ": byte " + std::to_string(kv->value.offset()) + ": " + std::string(kv->key) +
                                ": expected " + std::string(expected) + ", got " + got);
}

std::optional<uint64_t> GgufFile::get_u64(std::string_view key) const { return typed(key, &GgufValue::to_u64, "a non-negative integer"); }
std::optional<int64_t> GgufFile::get_i64(std::string_view key) const { return typed(key, &GgufValue::to_i64, "an integer"); }
std::optional<double> GgufFile::get_f64(std::string_view key) const { return typed(key, &GgufValue::to_f64, "a number"); }
std::optional<bool> GgufFile::get_bool(std::string_view key) const { return typed(key, &GgufValue::to_bool, "a bool"); }
std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  return typed(key, &GgufValue::to_string, "a string");
}
std::optional<GgufValue> GgufFile::get_array(std::string_view key) const {
  return typed(key, [](const GgufValue& v) { return v.type() == GgufType::Array ? std::optional(v) : std::nullopt; }, "an array");
}

std::span<const TensorInfo> GgufFile::tensors() const { return state_->tensors; }
std::span<const UnknownTensor> GgufFile::unknown_tensors() const { return state_->unknown; }

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = state_->tensor_index.find(name);
  return it == state_->tensor_index.end() ? nullptr : &state_->tensors[it->second];
}

}  // namespace temper
