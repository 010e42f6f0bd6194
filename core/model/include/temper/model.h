#pragma once
// What a model asks of the GEMV kernel per decoded token: its distinct shapes, how often each is
// called and how many weight bytes each reads, derived from a GGUF file's tensor table.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "temper/keys.h"
#include "temper/types.h"

namespace temper {

class GgufFile;

// One distinct decode GEMV: dst[N] = W[N×K] · x[K] with W of `type`.
// n: rows (GGUF ne[1]); k: row length (GGUF ne[0]).
struct Shape : ShapeKey {
  int64_t calls_per_token = 0;      // dense: one per tensor; MoE experts: experts_used per layer
  uint64_t bytes_per_token = 0;     // weight bytes read per decoded token (all calls)
  std::vector<std::string> tensors; // the tensors that make up this shape
};

struct QuantShare {
  GgmlType type = GgmlType::F32;
  uint64_t bytes = 0;    // bytes of all tensors of this type in the file
  uint64_t tensors = 0;  // how many tensors
};

// A model's summary: the decode GEMVs and the facts around them.
struct Model {
  std::filesystem::path path;
  std::string architecture;     // general.architecture ("" when absent)
  bool known_architecture = false;
  uint32_t gguf_version = 0;
  uint64_t file_size = 0;
  uint64_t header_hash = 0;     // GgufFile::header_hash
  uint64_t layers = 0;          // <arch>.block_count
  uint64_t parameters = 0;      // elements of every tensor
  uint64_t experts = 0;         // <arch>.expert_count (0: dense)
  uint64_t experts_used = 0;    // <arch>.expert_used_count
  std::vector<QuantShare> quant_mix;  // largest first
  std::vector<Shape> shapes;          // one plain GEMV per weight matrix, largest bytes_per_token first
  // What a sweep of the engine's kernel measures: its launch plan's shapes (temper/plan.h,
  // sweep_shapes at ncols 1, 2, 4, 8); empty when mmvq runs nothing of the model.
  std::vector<Shape> launches;
  uint64_t bytes_per_token = 0;       // sum over shapes
  std::vector<std::string> notes;     // assumptions and skipped tensors, one sentence each
  // Tensors of ggml types this Temper does not know (a newer ggml's): left out of everything above.
  struct UnknownTypeTensor {
    std::string name;
    uint32_t type_id = 0;
  };
  std::vector<UnknownTypeTensor> unknown_type_tensors;
};

// Architectures with dedicated knowledge (others get the generic rule, with a note).
const std::vector<std::string>& known_architectures();

// Derives the decode GEMVs: every 2-D `blk.N.*.weight` with a matrix role, MoE expert slices
// (`*_exps`, counted experts_used times per layer), the output head (or `token_embd` when tied).
// Error(BadInput) when the model's own metadata contradicts its tensors (e.g. experts without
// `<arch>.expert_used_count`).
Model describe_model(const GgufFile& file);
// Opens, describes and closes.
Model open_model(const std::filesystem::path& path);

// The bandwidth-bound ceiling of decode in tokens/s: bandwidth / bytes_per_token (an estimate).
double decode_ceiling_tokens_per_s(uint64_t bytes_per_token, double bandwidth_gbs);

// "0123456789abcdef": 16 lower-case hex digits.
std::string hex64(uint64_t value);

}  // namespace temper
