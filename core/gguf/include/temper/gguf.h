#pragma once
// GGUF files (v2 and v3, little-endian): a bounds-checked reader over a read-only mapping, and a
// writer. The reader never copies tensor data and decodes metadata arrays only when asked, so
// opening a model with a 128k-entry vocabulary costs one pass over the header.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "temper/types.h"

namespace temper {

// Metadata value kinds, with their ids in the file.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string_view gguf_type_name(GgufType type);  // "u8", ..., "string", "array", "f64"

// A view of one metadata value inside a mapping (valid while its GgufFile lives). Scalars and
// strings are read when asked; arrays keep only element kind, count and position.
class GgufValue {
 public:
  GgufType type() const { return type_; }
  uint64_t offset() const { return offset_; }  // file offset of the value's payload

  bool is_integer() const;
  // Conversions return nullopt when the kind or the value does not fit: to_u64 accepts any
  // integer kind holding a non-negative value, to_i64 any integer kind within int64 range,
  // to_f64 any integer or float kind.
  std::optional<uint64_t> to_u64() const;
  std::optional<int64_t> to_i64() const;
  std::optional<double> to_f64() const;
  std::optional<bool> to_bool() const;
  std::optional<std::string_view> to_string() const;

  // Arrays (element_type and size are meaningful only when type() == Array).
  GgufType element_type() const { return element_type_; }
  uint64_t size() const { return count_; }
  // Element i: constant time for fixed-size kinds, a walk over earlier elements for strings
  // and nested arrays (iterate instead when reading them all).
  GgufValue operator[](uint64_t i) const;

  class Iterator {
   public:
    using value_type = GgufValue;
    using difference_type = std::ptrdiff_t;
    GgufValue operator*() const;
    Iterator& operator++();
    Iterator operator++(int) { Iterator old = *this; ++*this; return old; }
    bool operator==(const Iterator& o) const { return index_ == o.index_; }

   private:
    friend class GgufValue;
    GgufType element_type_ = GgufType::U8;
    const uint8_t* at_ = nullptr;  // the current element
    uint64_t offset_ = 0;          // its file offset
    uint64_t index_ = 0;
  };
  Iterator begin() const;
  Iterator end() const;

 private:
  friend class GgufFile;
  friend class GgufParser;
  GgufValue(GgufType type, const uint8_t* payload, uint64_t offset) : type_(type), payload_(payload), offset_(offset) {}
  static GgufValue at(GgufType type, const uint8_t* payload, uint64_t offset);  // decodes array headers

  GgufType type_ = GgufType::U8;
  const uint8_t* payload_ = nullptr;  // arrays: the first element
  uint64_t offset_ = 0;
  GgufType element_type_ = GgufType::U8;
  uint64_t count_ = 0;
};

struct GgufKv {
  std::string_view key;
  GgufValue value;
  uint64_t offset;  // file offset of the key's length field
};

struct TensorInfo {
  std::string_view name;
  GgmlType type;
  uint32_t n_dims;
  std::array<uint64_t, 4> dims;  // ggml's ne[0..3]: ne[0] is the row length K; unused dims are 1
  uint64_t offset;               // relative to the data section
  uint64_t bytes;
  std::span<const std::byte> data;  // inside the mapping (never copied)
  uint64_t info_offset;             // file offset of this tensor's entry in the header

  uint64_t elements() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

// A tensor whose ggml type id this Temper does not know (a newer ggml's): listed so callers can say
// so, never read (its byte size is unknown, so its data is only checked to start inside the file).
struct UnknownTensor {
  std::string_view name;
  uint32_t type_id;
  uint32_t n_dims;
  std::array<uint64_t, 4> dims;
  uint64_t offset;       // relative to the data section
  uint64_t info_offset;  // file offset of this tensor's entry in the header
};

// An opened GGUF file, mapped read-only. Move-only; views handed out stay valid while it lives.
// Every malformed input throws Error(BadInput) "<file>: byte <offset>: <field>: expected <what>, got <what>".
class GgufFile {
 public:
  static GgufFile open(const std::filesystem::path& path);
  // Parses a file image held in memory (tests, fuzzing); `name` stands for the path in messages.
  static GgufFile from_bytes(std::string bytes, const std::string& name);
  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::filesystem::path& path() const;
  uint32_t version() const;
  uint64_t file_size() const;
  uint64_t data_offset() const;  // start of the data section (aligned)
  uint32_t alignment() const;
  // FNV-1a (64-bit) over the header bytes [0, end of tensor infos) taken as little-endian 8-byte
  // words, the tail zero-padded: identifies a model's header cheaply (about 1 ms for 8 MB).
  uint64_t header_hash() const;

  std::span<const GgufKv> metadata() const;
  const GgufValue* find(std::string_view key) const;
  // Typed getters: nullopt when the key is absent; Error(BadInput) naming key and offset when it is
  // present with a kind that does not convert (any integer kind converts to u64/i64 when in range).
  std::optional<uint64_t> get_u64(std::string_view key) const;
  std::optional<int64_t> get_i64(std::string_view key) const;
  std::optional<double> get_f64(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<GgufValue> get_array(std::string_view key) const;

  std::span<const TensorInfo> tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;
  // Tensors of unknown ggml types, in file order; absent from tensors().
  std::span<const UnknownTensor> unknown_tensors() const;

 private:
  struct State;
  friend class GgufParser;
  explicit GgufFile(std::unique_ptr<State> state);
  // The typed getters' one rule: nullopt when `key` is absent, `to`'s value when its kind converts,
  // else Error(BadInput) naming the file, byte, key, `expected` and what is there.
  template <class To>
  auto typed(std::string_view key, To to, std::string_view expected) const;
  const GgufKv* find_kv(std::string_view key) const;
  std::unique_ptr<State> state_;
};

// Builds a GGUF file. Tensors are laid out in the order added, each at an aligned offset;
// "sparse" tensors get no bytes written: the file is extended with ftruncate, so fixtures of
// 70B-class models cost only their header on disk. "Filled" tensors are made while writing, chunk
// by chunk on several threads, so a multi-gigabyte file streams to disk without being held in memory.
class GgufWriter {
 public:
  // An owned, encoded metadata value.
  class Value {
   public:
    static Value u8(uint8_t v);
    static Value i8(int8_t v);
    static Value u16(uint16_t v);
    static Value i16(int16_t v);
    static Value u32(uint32_t v);
    static Value i32(int32_t v);
    static Value f32(float v);
    static Value boolean(bool v);
    static Value string(std::string_view v);
    static Value u64(uint64_t v);
    static Value i64(int64_t v);
    static Value f64(double v);
    // Elements must all be of kind `element` (Array for nested arrays); Error(BadInput) otherwise.
    static Value array(GgufType element, std::span<const Value> items);
    static Value strings(std::span<const std::string> items);
    static Value i32s(std::span<const int32_t> items);
    static Value f32s(std::span<const float> items);
    GgufType type() const { return type_; }

   private:
    Value(GgufType type, std::string encoded) : type_(type), encoded_(std::move(encoded)) {}
    friend class GgufWriter;
    GgufType type_;
    std::string encoded_;  // payload after the kind tag (arrays: element kind, count, elements)
  };

  // Makes bytes [first_byte, first_byte + out.size()) of one tensor, from nothing but its arguments
  // (the file is then the same whatever the thread count). Called from several threads at once, for
  // disjoint chunks of whole blocks starting at multiples of fill_chunk_bytes(type).
  using Fill = std::function<void(std::span<std::byte> out, uint64_t first_byte)>;
  static uint64_t fill_chunk_bytes(GgmlType type);  // about 4 MiB, a whole number of blocks

  struct WriteOptions {
    unsigned threads = 0;  // threads running Fill; 0: one per hardware thread
    // Bytes of filled tensors written so far and in all; called by one thread at a time.
    std::function<void(uint64_t done, uint64_t total)> progress;
  };

  explicit GgufWriter(uint32_t version = 3);

  // Adding "general.alignment" (u32, a power of two) also sets the alignment of tensor data.
  void add(std::string key, Value value);
  // `data` must hold exactly the tensor's bytes. dims are ggml's ne[0..n_dims-1].
  void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims, std::string data);
  void add_sparse_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims);
  void add_filled_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims, Fill fill);

  // The header as it will be written (magic to the end of the tensor infos, unpadded).
  std::string header() const;
  uint64_t data_offset() const;  // where the data section will start
  uint64_t file_size() const;
  // The whole file in memory (sparse tensors as zeros): for small files, tests and fuzz seeds.
  std::string image() const;
  // Temporary sibling, fsync, rename: the target is replaced whole or not at all (Error(Io), or
  // whatever a Fill threw).
  void write(const std::filesystem::path& path, const WriteOptions& options) const;
  void write(const std::filesystem::path& path) const { write(path, WriteOptions()); }

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t bytes;
    std::optional<std::string> data;  // neither data nor fill: sparse
    Fill fill;
  };
  void add_tensor_impl(std::string name, GgmlType type, std::vector<uint64_t> dims, std::optional<std::string> data,
                       Fill fill = {});
  std::vector<uint64_t> tensor_offsets() const;  // relative to the data section
  struct Chunk {
    size_t tensor;
    uint64_t first_byte, bytes;
  };
  std::vector<Chunk> fill_chunks() const;  // every filled tensor's chunks, in file order
  void write_filled(int fd, uint64_t data_at, const std::filesystem::path& tmp, const WriteOptions& options) const;

  uint32_t version_;
  uint32_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> kvs_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> names_;
};

}  // namespace temper
