// `temper inspect MODEL.gguf`: what decode asks of the GEMV kernel for one model — its distinct
// shapes, calls and bytes per token, and the bandwidth-bound ceiling on a GPU.
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "temper/error.h"
#include "temper/gguf.h"
#include "temper/gpus.h"
#include "temper/model.h"

namespace temper::cli {
namespace cmd_inspect {  // own namespace: the commands are compiled together (unity build)
namespace {

using json = nlohmann::ordered_json;  // keys in the documented order

// Reference GPUs for the ceiling when --gpu is not given: one per common class of card.
constexpr std::string_view kDefaultGpus[] = {"h100-sxm", "mi300x", "rtx4090", "rx7900xtx"};
constexpr uint64_t kArrayPreview = 8;  // array elements shown by --metadata

const GpuSpec& resolve_gpu(const std::string& query) {
  if (const GpuSpec* g = find_gpu(query)) return *g;
  const auto hits = find_gpus(query);
  std::string msg = "--gpu " + query + ": ";
  if (hits.empty()) {
    msg += "not in the GPU database (known:";
    for (const auto& g : gpu_database()) msg += " " + g.id;
    msg += ")";
  } else {
    msg += "ambiguous (";
    for (size_t i = 0; i < hits.size(); ++i) msg += (i ? ", " : "") + hits[i]->id;
    msg += ")";
  }
  fail(ErrorKind::BadInput, msg);
}

std::vector<const GpuSpec*> ceiling_gpus(const std::string& query) {
  if (!query.empty()) return {&resolve_gpu(query)};
  std::vector<const GpuSpec*> out;
  for (auto id : kDefaultGpus)
    if (const GpuSpec* g = find_gpu(id)) out.push_back(g);
  return out;
}

json value_json(const GgufValue& v, bool preview) {
  switch (v.type()) {
    case GgufType::String: return std::string(*v.to_string());
    case GgufType::Bool: return *v.to_bool();
    case GgufType::F32: case GgufType::F64: return *v.to_f64();
    case GgufType::U64: return *v.to_u64();
    case GgufType::Array: {
      json items = json::array();
      uint64_t i = 0;
      for (const GgufValue e : v) {
        if (preview && i++ == kArrayPreview) break;
        items.push_back(value_json(e, preview));
      }
      return json{{"element_type", gguf_type_name(v.element_type())}, {"size", v.size()}, {"items", items}};
    }
    default: return *v.to_i64();
  }
}

std::string value_text(const GgufValue& v) {
  if (v.type() == GgufType::String) {
    std::string s(*v.to_string());
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (v.type() == GgufType::Array) {
    std::string out = "[" + std::string(gguf_type_name(v.element_type())) + " x " + std::to_string(v.size()) + "]";
    if (v.size() == 0) return out;
    out += " ";
    uint64_t i = 0;
    for (const GgufValue e : v) {
      if (i++ == 4) return out + ", ...";
      out += (i > 1 ? ", " : "") + value_text(e);
    }
    return out;
  }
  if (v.type() == GgufType::F32) {  // shortest text that reads back as the same float: 1e-05, not 9.999999747378752e-06
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(*v.to_f64()));
    return std::string(buf, r.ptr);
  }
  return value_json(v, true).dump();
}

// "8.03 B", "1.24 M", "4096": a tiny model is not "0.00 B".
std::string parameters_text(uint64_t n) {
  char buf[32];
  if (n >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(n) / 1e9);
  else if (n >= 1'000'000) std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(n) / 1e6);
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

std::string dims_text(const TensorInfo& t) {
  std::string out;
  for (uint32_t d = 0; d < t.n_dims; ++d) out += (d ? " x " : "") + std::to_string(t.dims[d]);
  return out;
}

std::string bytes_text(uint64_t b) {
  char buf[32];
  if (b >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  else if (b >= 1'000'000) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  return buf;
}

double share(uint64_t part, uint64_t whole) { return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; }

json model_json(const Model& m, const GgufFile& file, const std::vector<const GpuSpec*>& gpus, bool tensors, bool metadata) {
  json j;
  j["schema"] = "temper.inspect/1";
  j["path"] = m.path.string();
  j["file_name"] = m.path.filename().string();
  j["file_size"] = m.file_size;
  j["gguf_version"] = m.gguf_version;
  j["header_hash"] = hex64(m.header_hash);
  j["architecture"] = m.architecture;
  j["known_architecture"] = m.known_architecture;
  j["layers"] = m.layers;
  j["parameters"] = m.parameters;
  j["experts"] = m.experts;
  j["experts_used"] = m.experts_used;
  json mix = json::array();
  for (const auto& q : m.quant_mix)
    mix.push_back({{"type", type_name(q.type)}, {"tensors", q.tensors}, {"bytes", q.bytes}, {"share", share(q.bytes, m.file_size)}});
  j["quant_mix"] = mix;
  j["bytes_per_token"] = m.bytes_per_token;
  json shapes = json::array();
  for (const Shape& s : m.shapes)
    shapes.push_back({{"type", type_name(s.type)}, {"n", s.n}, {"k", s.k}, {"calls_per_token", s.calls_per_token},
                      {"bytes_per_token", s.bytes_per_token}, {"share", share(s.bytes_per_token, m.bytes_per_token)},
                      {"tensors", s.tensors}});
  j["shapes"] = shapes;
  json ceilings = json::array();
  for (const GpuSpec* g : gpus)
    ceilings.push_back({{"gpu", g->id}, {"name", g->names.at(0)}, {"bandwidth_gbs", g->memory_bandwidth_gbs},
                        {"tokens_per_s", decode_ceiling_tokens_per_s(m.bytes_per_token, g->memory_bandwidth_gbs)}});
  j["ceilings"] = ceilings;
  j["notes"] = m.notes;
  if (tensors) {
    json list = json::array();
    for (const TensorInfo& t : file.tensors())
      list.push_back({{"name", t.name}, {"type", type_name(t.type)},
                      {"dims", std::vector<uint64_t>(t.dims.begin(), t.dims.begin() + t.n_dims)},
                      {"offset", t.offset}, {"bytes", t.bytes}});
    j["tensors"] = list;
    json unknown = json::array();
    for (const UnknownTensor& t : file.unknown_tensors())
      unknown.push_back({{"name", t.name}, {"type_id", t.type_id},
                         {"dims", std::vector<uint64_t>(t.dims.begin(), t.dims.begin() + t.n_dims)}, {"offset", t.offset}});
    j["unknown_type_tensors"] = unknown;
  }
  if (metadata) {
    json list = json::array();
    for (const GgufKv& kv : file.metadata())
      list.push_back({{"key", kv.key}, {"type", gguf_type_name(kv.value.type())}, {"value", value_json(kv.value, true)}});
    j["metadata"] = list;
  }
  return j;
}

void print_text(const Model& m, const GgufFile& file, const std::vector<const GpuSpec*>& gpus, bool tensors, bool metadata) {
  std::printf("model       %s (%s, GGUF v%u, header %s)\n", m.path.filename().c_str(), bytes_text(m.file_size).c_str(),
              m.gguf_version, hex64(m.header_hash).c_str());
  std::printf("arch        %s%s, %" PRIu64 " layers, %s parameters", m.architecture.empty() ? "(none)" : m.architecture.c_str(),
              m.known_architecture ? "" : " (generic rule)", m.layers, parameters_text(m.parameters).c_str());
  if (m.experts) std::printf(", %" PRIu64 " experts (%" PRIu64 " used)", m.experts, m.experts_used);
  std::printf("\nquant mix  ");
  for (size_t i = 0; i < m.quant_mix.size(); ++i) {
    const auto& q = m.quant_mix[i];
    std::printf("%s %s %" PRIu64 " tensors %s (%.1f%%)", i ? "," : "", std::string(type_name(q.type)).c_str(), q.tensors,
                bytes_text(q.bytes).c_str(), 100 * share(q.bytes, m.file_size));
  }
  std::printf("\ndecode      %s of weights read per token in %zu GEMV shapes\n", bytes_text(m.bytes_per_token).c_str(), m.shapes.size());
  for (const GpuSpec* g : gpus)
    std::printf("ceiling     %.0f tokens/s on %s (%.0f GB/s peak; bandwidth-bound estimate)\n",
                decode_ceiling_tokens_per_s(m.bytes_per_token, g->memory_bandwidth_gbs), g->names.at(0).c_str(),
                g->memory_bandwidth_gbs);

  std::printf("\n%-8s %8s %8s %12s %10s %9s  %s\n", "type", "N", "K", "calls/token", "MB/token", "% decode", "tensors");
  for (const Shape& s : m.shapes) {
    std::string names = s.tensors.front();
    if (s.tensors.size() > 1) names += " (+" + std::to_string(s.tensors.size() - 1) + ")";
    std::printf("%-8s %8" PRId64 " %8" PRId64 " %12" PRId64 " %10.1f %8.1f%%  %s\n", std::string(type_name(s.type)).c_str(), int64_t(s.n),
                int64_t(s.k), s.calls_per_token, s.bytes_per_token / 1e6, 100 * share(s.bytes_per_token, m.bytes_per_token), names.c_str());
  }
  if (!m.notes.empty()) {
    std::printf("\nnotes\n");
    for (const auto& n : m.notes) std::printf("  - %s\n", n.c_str());
  }
  if (metadata) {
    std::printf("\nmetadata (%zu keys)\n", file.metadata().size());
    for (const GgufKv& kv : file.metadata())
      std::printf("  %-44.*s %-6s %s\n", static_cast<int>(kv.key.size()), kv.key.data(),
                  std::string(gguf_type_name(kv.value.type())).c_str(), value_text(kv.value).c_str());
  }
  if (tensors) {
    std::printf("\ntensors (%zu, data at byte %" PRIu64 ")\n", file.tensors().size(), file.data_offset());
    for (const TensorInfo& t : file.tensors())
      std::printf("  %-40.*s %-7s %-26s %12" PRIu64 " bytes\n", static_cast<int>(t.name.size()), t.name.data(),
                  std::string(type_name(t.type)).c_str(), dims_text(t).c_str(), t.bytes);
    for (const UnknownTensor& t : file.unknown_tensors())
      std::printf("  %-40.*s type id %u: not supported by this Temper (left out)\n", static_cast<int>(t.name.size()),
                  t.name.data(), t.type_id);
  }
}

struct Options {
  std::string path, gpu;
  bool json = false, tensors = false, metadata = false;
};

int run(const Options& o) {
  const auto gpus = ceiling_gpus(o.gpu);
  const bool tensors = o.tensors, metadata = o.metadata;

  // An input that cannot be opened is bad input for this command (exit 2), like a damaged one.
  std::optional<GgufFile> file;
  try {
    file.emplace(GgufFile::open(o.path));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Io) throw;
    fail(ErrorKind::BadInput, e.what());
  }
  const Model m = describe_model(*file);
  if (o.json)
    std::cout << model_json(m, *file, gpus, tensors, metadata).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  else
    print_text(m, *file, gpus, tensors, metadata);
  return 0;
}

const Registrar reg{Command{
    "inspect", "a model's decode GEMV shapes, bytes per token and bandwidth ceiling",
    "Opens a GGUF file (v2 or v3; tensor data is mapped, never read) and prints the model summary\n"
    "(architecture, layers, parameters, file size, quant mix), the distinct GEMV shapes of decode\n"
    "(type, N rows, K row length, calls per token, MB per token, share of decode bytes) largest\n"
    "first, and the bandwidth-bound decode ceiling (peak bandwidth / bytes per token: an estimate).\n\n"
    "A damaged or unreadable file exits with code 2 and one line naming the file, byte offset and field.",
    [](CLI::App& app) {
      auto o = std::make_shared<Options>();
      app.add_option("MODEL", o->path, "a GGUF file")->required();
      add_json(app, o->json)->description("one JSON document on stdout (schema temper.inspect/1, docs/json.md)");
      app.add_option("--gpu", o->gpu,
                     "the ceiling for this GPU (id, arch or name from the GPU database; default: h100-sxm, mi300x, "
                     "rtx4090, rx7900xtx)")
          ->type_name("NAME");
      app.add_flag("--tensors", o->tensors, "also list every tensor (name, type, dims, bytes)");
      app.add_flag("--metadata", o->metadata, "also list every metadata key (arrays: kind, size and first elements)");
      return [o] { return run(*o); };
    }}};

}  // namespace
}  // namespace cmd_inspect
}  // namespace temper::cli
