#pragma once
// Static resource usage of AMD GPU kernels, read from compiled code objects: the AMDGPU ELF's
// NT_AMDGPU_METADATA note (MessagePack), parsed by Temper's own ELF and MessagePack readers.
// Accepts a bare code object, a clang offload bundle (what hipcc --cuda-device-only writes) and
// a host ELF carrying a .hip_fatbin section (a HIP executable or object file).
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "temper/backend.h"
#include "temper/occupancy.h"

namespace temper {

struct CodeObjectKernel {
  std::string name;                  // mangled kernel name (.name)
  std::string symbol;                // kernel descriptor symbol (.symbol, "<name>.kd")
  KernelResources resources;         // .vgpr_count, .agpr_count, .sgpr_count, LDS, scratch, spills, wave size
  int max_flat_workgroup_size = 0;   // the launch bound the kernel was compiled for
  bool uses_dynamic_stack = false;
};

struct CodeObject {
  std::string source;   // file (and bundle entry) it came from, for messages
  std::string target;   // amdhsa.target: "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
  std::string arch;     // "gfx90a"
  std::vector<CodeObjectKernel> kernels;
};

// Every code object in `bytes`; Error(BadInput) naming `where`, the byte offset and what was expected.
std::vector<CodeObject> read_code_objects(std::span<const std::byte> bytes, const std::string& where);
// A file, or every device code object (AMDGPU ELF or offload bundle) under a directory, recursively;
// other files are skipped in a directory (host objects included) and an error when named directly.
std::vector<CodeObject> load_code_objects(const std::filesystem::path& path);

// A MessagePack document as JSON (maps with string keys; binary data as an array of bytes).
nlohmann::json parse_msgpack(std::span<const std::byte> bytes, const std::string& where);

// Temper's mmvq instantiation named by a kernel symbol (mangled or demangled):
// temper::kernels::mmvq<TYPE, NCOLS, NWARPS, ROWS_PER_BLOCK[, VARIANT]>(...), VARIANT an
// mmvq::KernelVariant. nullopt for other kernels.
struct MmvqInstance {
  GgmlType type = GgmlType::Q4_0;
  int ncols = 1;
  Config config;
};
std::optional<MmvqInstance> parse_mmvq_symbol(std::string_view symbol);
// Temper's same-input group kernel (kernels/mmvq_group.h) named by a kernel symbol:
// temper::kernels::mmvq_group<TYPE_A, TYPE_B, NCOLS, NWARPS, ROWS_PER_BLOCK>(...). The instance's type
// is A; nullopt for other kernels.
struct MmvqGroupInstance {
  MmvqInstance instance;
  GgmlType type_b = GgmlType::Q4_0;
};
std::optional<MmvqGroupInstance> parse_mmvq_group_symbol(std::string_view symbol);
std::string demangle(std::string_view mangled);  // the input itself when it does not demangle

// One mmvq instantiation's static occupancy on a GPU.
struct ConfigOccupancy {
  MmvqInstance instance;
  std::optional<GgmlType> group_b;  // a group kernel of instance.type and group_b
  std::string kernel;          // mangled name
  KernelResources resources;
  Occupancy occupancy;         // at nwarps × wave size threads per block
};
// Every mmvq instantiation compiled for `gpu.arch` in `objects`, sorted by type, ncols, nwarps,
// rows_per_block (the first code object wins where several hold the same instantiation).
std::vector<ConfigOccupancy> static_mmvq_occupancy(const GpuSpec& gpu, std::span<const CodeObject> objects);
// The same for the group kernels in `objects` (group_b set), sorted the same way.
std::vector<ConfigOccupancy> static_group_occupancy(const GpuSpec& gpu, std::span<const CodeObject> objects);
nlohmann::json to_json(const ConfigOccupancy& c);

// Where this build keeps its per-arch code objects: $TEMPER_CODEOBJ_DIR, else an installed Temper's
// <prefix>/share/temper/codeobj, else the build tree's codeobj/ directory (kernels/ writes
// <dir>/<gfxarch>/*.co when TEMPER_HIP=ON; the install copies them).
std::filesystem::path default_codeobj_dir();
// Code objects for `arch` from `dir`: <dir>/<arch>/ when it exists, else every code object under
// `dir` whose target is `arch`. Empty when there are none.
std::vector<CodeObject> load_code_objects_for(const std::filesystem::path& dir, std::string_view arch);
// The AMD arches `dir` holds code objects for (its gfx* subdirectories, else the targets of the
// code objects under it), sorted; empty when there are none. For an arch picker.
std::vector<std::string> code_object_archs(const std::filesystem::path& dir);

}  // namespace temper
