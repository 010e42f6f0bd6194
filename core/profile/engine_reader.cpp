// The engine's profile reader (hook/src/temper-mmvq-profile.h) compiled into core: what a patched
// llama.cpp makes of a profile file is what `temper profile validate` checks last.
#include "temper-mmvq-profile.h"
#include "temper/profile.h"
#include "temper/types.h"

namespace temper {
namespace {

// Temper's type facts in the reader's form, as the hooked engine gives it ggml's.
temper_profile::TypeFacts type_facts(const std::string& name) {
  temper_profile::TypeFacts f;
  if (const auto t = parse_type(name)) {
    const TypeInfo& ti = type_info(*t);
    f.id = int(*t);
    f.mmvq = ti.quantized && *t != GgmlType::Q8_1 && *t != GgmlType::Q8_K;  // the run time's rule
    f.block = int(ti.block_size);
  }
  return f;
}

}  // namespace

std::vector<std::string> engine_reader_problems(const std::filesystem::path& file) {
  const temper_profile::Profile p = temper_profile::read(file.string(), type_facts);
  if (!p.error.empty()) return {"the engine refuses it: " + p.error};
  std::vector<std::string> out;
  for (size_t i = 0; i < p.entries.size(); ++i)
    if (!p.entries[i].problem.empty()) out.push_back("entry " + std::to_string(i) + ": the engine skips it: " + p.entries[i].problem);
  for (size_t i = 0; i < p.paths.size(); ++i)
    if (!p.paths[i].problem.empty()) out.push_back("path choice " + std::to_string(i) + ": the engine skips it: " + p.paths[i].problem);
  return out;
}

}  // namespace temper
