// GGUF writer: header in memory, tensor data written in place, sparse tensors left as holes,
// filled tensors made chunk by chunk by a few threads that each write what they made.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "temper/error.h"
#include "temper/gguf.h"

namespace temper {
namespace {

template <class T>
void put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.append(s);
}

std::string array_header(GgufType element, uint64_t count) {
  std::string out;
  put<uint32_t>(out, static_cast<uint32_t>(element));
  put<uint64_t>(out, count);
  return out;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

[[noreturn]] void io_fail(const std::string& what, const std::filesystem::path& p) {
  fail(ErrorKind::Io, what + " " + p.string() + ": " + std::strerror(errno));
}

void pwrite_all(int fd, std::span<const char> data, uint64_t at, const std::filesystem::path& p) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) io_fail("cannot write", p);
    data = data.subspan(static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
}

}  // namespace

// ---- Value ----

using V = GgufWriter::Value;
#define TEMPER_SCALAR(fn, T, kind) \
  V V::fn(T v) {                   \
    std::string e;                 \
    put<T>(e, v);                  \
    return V(GgufType::kind, e);   \
  }
TEMPER_SCALAR(u8, uint8_t, U8)
TEMPER_SCALAR(i8, int8_t, I8)
TEMPER_SCALAR(u16, uint16_t, U16)
TEMPER_SCALAR(i16, int16_t, I16)
TEMPER_SCALAR(u32, uint32_t, U32)
TEMPER_SCALAR(i32, int32_t, I32)
TEMPER_SCALAR(f32, float, F32)
TEMPER_SCALAR(u64, uint64_t, U64)
TEMPER_SCALAR(i64, int64_t, I64)
TEMPER_SCALAR(f64, double, F64)
#undef TEMPER_SCALAR

V V::boolean(bool v) { return V(GgufType::Bool, std::string(1, v ? '\1' : '\0')); }

V V::string(std::string_view v) {
  std::string e;
  put_string(e, v);
  return V(GgufType::String, e);
}

V V::array(GgufType element, std::span<const Value> items) {
  std::string e = array_header(element, items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].type_ != element)
      fail(ErrorKind::BadInput, "GGUF array of " + std::string(gguf_type_name(element)) + ": element " + std::to_string(i) +
                                    " is " + std::string(gguf_type_name(items[i].type_)));
    e += items[i].encoded_;
  }
  return V(GgufType::Array, e);
}

V V::strings(std::span<const std::string> items) {
  std::string e = array_header(GgufType::String, items.size());
  for (const auto& s : items) put_string(e, s);
  return V(GgufType::Array, e);
}

V V::i32s(std::span<const int32_t> items) {
  std::string e = array_header(GgufType::I32, items.size());
  for (int32_t x : items) put<int32_t>(e, x);
  return V(GgufType::Array, e);
}

V V::f32s(std::span<const float> items) {
  std::string e = array_header(GgufType::F32, items.size());
  for (float x : items) put<float>(e, x);
  return V(GgufType::Array, e);
}

// ---- GgufWriter ----

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3) fail(ErrorKind::BadInput, "GGUF writer: version must be 2 or 3, got " + std::to_string(version));
}

void GgufWriter::add(std::string key, Value value) {
  for (const auto& kv : kvs_)
    if (kv.first == key) fail(ErrorKind::BadInput, "GGUF writer: duplicate key \"" + key + "\"");
  if (key == "general.alignment") {
    uint32_t a = 0;
    if (value.type_ == GgufType::U32) std::memcpy(&a, value.encoded_.data(), 4);
    if (a == 0 || (a & (a - 1)) != 0) fail(ErrorKind::BadInput, "GGUF writer: general.alignment must be a u32 power of two");
    alignment_ = a;
  }
  kvs_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims, std::string data) {
  add_tensor_impl(std::move(name), type, std::move(dims), std::move(data));
}

void GgufWriter::add_sparse_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims) {
  add_tensor_impl(std::move(name), type, std::move(dims), std::nullopt);
}

void GgufWriter::add_filled_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims, Fill fill) {
  if (!fill) fail(ErrorKind::Internal, "GGUF writer: tensor \"" + name + "\": empty fill");
  add_tensor_impl(std::move(name), type, std::move(dims), std::nullopt, std::move(fill));
}

uint64_t GgufWriter::fill_chunk_bytes(GgmlType type) {
  const uint64_t block = type_info(type).type_size;
  return std::max<uint64_t>(1, (4u << 20) / block) * block;
}

void GgufWriter::add_tensor_impl(std::string name, GgmlType type, std::vector<uint64_t> dims, std::optional<std::string> data,
                                 Fill fill) {
  const std::string what = "GGUF writer: tensor \"" + name + "\": ";
  if (names_.count(name)) fail(ErrorKind::BadInput, what + "duplicate name");
  if (dims.empty() || dims.size() > 4) fail(ErrorKind::BadInput, what + "expected 1 to 4 dims, got " + std::to_string(dims.size()));
  uint64_t elements = 1;
  for (uint64_t d : dims) {
    if (d == 0 || d > static_cast<uint64_t>(INT64_MAX) / elements) fail(ErrorKind::BadInput, what + "zero or overflowing dims");
    elements *= d;
  }
  const TypeInfo& info = type_info(type);
  if (dims[0] % info.block_size != 0)
    fail(ErrorKind::BadInput, what + "ne[0] = " + std::to_string(dims[0]) + " is not a multiple of the block size " +
                                  std::to_string(info.block_size));
  const uint64_t bytes = elements / info.block_size * info.type_size;
  if (data && data->size() != bytes)
    fail(ErrorKind::BadInput, what + "expected " + std::to_string(bytes) + " bytes of data, got " + std::to_string(data->size()));
  names_.emplace(name, tensors_.size());
  tensors_.push_back(Tensor{std::move(name), type, std::move(dims), bytes, std::move(data), std::move(fill)});
}

std::vector<uint64_t> GgufWriter::tensor_offsets() const {
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (const auto& t : tensors_) {
    offsets.push_back(at);
    at = align_up(at + t.bytes, alignment_);
  }
  return offsets;
}

std::string GgufWriter::header() const {
  std::string out;
  out.append("GGUF", 4);
  put<uint32_t>(out, version_);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size());
  for (const auto& [key, value] : kvs_) {
    put_string(out, key);
    put<uint32_t>(out, static_cast<uint32_t>(value.type_));
    out += value.encoded_;
  }
  const auto offsets = tensor_offsets();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offsets[i]);
  }
  return out;
}

uint64_t GgufWriter::data_offset() const { return align_up(header().size(), alignment_); }

uint64_t GgufWriter::file_size() const {
  if (tensors_.empty()) return header().size();
  return data_offset() + align_up(tensor_offsets().back() + tensors_.back().bytes, alignment_);
}

std::vector<GgufWriter::Chunk> GgufWriter::fill_chunks() const {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensors_[i].fill) continue;
    const uint64_t step = fill_chunk_bytes(tensors_[i].type);
    for (uint64_t at = 0; at < tensors_[i].bytes; at += step) chunks.push_back({i, at, std::min(step, tensors_[i].bytes - at)});
  }
  return chunks;
}

std::string GgufWriter::image() const {
  std::string out = header();
  const uint64_t data_at = align_up(out.size(), alignment_);
  const auto offsets = tensor_offsets();
  out.resize(file_size(), '\0');
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].data) out.replace(data_at + offsets[i], tensors_[i].data->size(), *tensors_[i].data);
  for (const Chunk& c : fill_chunks())
    tensors_[c.tensor].fill(std::as_writable_bytes(std::span(out).subspan(data_at + offsets[c.tensor] + c.first_byte, c.bytes)),
                            c.first_byte);
  return out;
}

void GgufWriter::write_filled(int fd, uint64_t data_at, const std::filesystem::path& tmp, const WriteOptions& options) const {
  const auto chunks = fill_chunks();
  if (chunks.empty()) return;
  const auto offsets = tensor_offsets();
  uint64_t total = 0;
  for (const Chunk& c : chunks) total += c.bytes;
  const unsigned threads = std::clamp<unsigned>(options.threads ? options.threads : std::thread::hardware_concurrency(), 1,
                                                static_cast<unsigned>(std::min<size_t>(chunks.size(), 256)));
  std::atomic<size_t> next{0};
  std::mutex mutex;  // guards error, done and the progress callback
  std::exception_ptr error;
  uint64_t done = 0;
  // Each thread makes one chunk at a time and writes it at its place: memory stays at a chunk per thread.
  auto work = [&] {
    std::vector<char> buffer;
    for (size_t j; (j = next++) < chunks.size();) {
      const Chunk& c = chunks[j];
      try {
        buffer.resize(c.bytes);
        tensors_[c.tensor].fill(std::as_writable_bytes(std::span(buffer)), c.first_byte);
        pwrite_all(fd, buffer, data_at + offsets[c.tensor] + c.first_byte, tmp);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        next = chunks.size();
        return;
      }
      const std::lock_guard lock(mutex);
      done += c.bytes;
      if (options.progress && !error) options.progress(done, total);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

void GgufWriter::write(const std::filesystem::path& path, const WriteOptions& options) const {
  const std::string head = header();
  const uint64_t data_at = align_up(head.size(), alignment_);
  const auto offsets = tensor_offsets();
  const uint64_t size = tensors_.empty() ? head.size() : data_at + align_up(offsets.back() + tensors_.back().bytes, alignment_);

  std::random_device rd;
  std::ostringstream tmp_name;
  tmp_name << "." << path.filename().string() << ".tmp-" << std::hex << rd() << rd();
  const std::filesystem::path tmp = path.parent_path() / tmp_name.str();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("cannot create", tmp);
  try {
    pwrite_all(fd, head, 0, tmp);
    for (size_t i = 0; i < tensors_.size(); ++i)
      if (tensors_[i].data) pwrite_all(fd, *tensors_[i].data, data_at + offsets[i], tmp);
    write_filled(fd, data_at, tmp, options);
    // Padding and sparse tensors: the file grows with holes that read as zeros.
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) io_fail("cannot extend", tmp);
    if (::fsync(fd) != 0) io_fail("cannot sync", tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    io_fail("cannot close", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    io_fail("cannot rename " + tmp.string() + " to", path);
  }
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace temper
