#pragma once
// Run-time compilation of the mmvq kernels: only the (type, ncols) instantiations a job needs, only
// for the GPU arch at hand, with the same compiler (hipcc / nvcc) and the kernel sources embedded in
// the binary at build time. Results are cached on disk, keyed by arch, compiler and source hash:
//   $TEMPER_KERNEL_CACHE, else $XDG_CACHE_HOME/temper/kernels, else ~/.cache/temper/kernels
//     <toolchain>-<arch>-<compiler hash>-<source hash>/mmvq_<type>_nc<ncols>.{so,co}
//                                                       mmvq_group_<type>_<type b>_nc<ncols>.{so,co}
// so a second run is immediate. Compiles run in parallel, report progress and honour a cancel flag.
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "temper/types.h"

namespace temper {

enum class KernelToolchain { Hip, Cuda };

// What to produce: a loadable shared library (every config of the grid for one (type, ncols), with
// a C entry point, see gpu_backend.cpp), or AMD device code objects for static analysis.
enum class KernelArtifact { SharedLibrary, CodeObject };

// One translation unit: every config of the grid for (type, ncols), or with group_b set the same-input
// group kernels (kernels/mmvq_group.h) of members of `type` and `group_b` at ncols 1..4.
struct KernelPair {
  GgmlType type = GgmlType::Q4_0;
  int ncols = 1;
  std::optional<GgmlType> group_b;
  KernelPair() = default;
  KernelPair(GgmlType t, int n, std::optional<GgmlType> b = std::nullopt) : type(t), ncols(n), group_b(b) {}
  bool operator==(const KernelPair&) const = default;
};
// "q4_K ncols 1", "q4_K+q6_K group ncols 1".
std::string kernel_pair_name(const KernelPair& p);

struct CompileProgress {
  int done = 0, total = 0;  // translation units (one per (type, ncols)); cached ones count as done
  int cached = 0;           // of `done`, found in the cache
  double elapsed_s = 0, eta_s = 0;  // eta_s before a unit is done: the last compile's seconds per unit (0: unknown)
  std::string current;      // "q4_K ncols 1" just finished
};
using CompileProgressFn = std::function<void(const CompileProgress&)>;

// Whether the device code has a vec_dot for `type` (the kernel build's type list).
bool kernel_type_supported(GgmlType type);
// Every supported type at ncols 1..8: what `temper occupancy` analyses by default.
std::vector<KernelPair> all_kernel_pairs(std::span<const int> ncols);

// The compiler for a toolchain: $TEMPER_HIPCC / $TEMPER_NVCC, else the one this build used, else
// PATH and /opt/rocm/bin, /usr/local/cuda/bin. nullopt when none exists.
std::optional<std::filesystem::path> kernel_compiler(KernelToolchain toolchain);
std::filesystem::path kernel_cache_root();

// The number ROCm's oclc_isa_version_<n>.bc defines for an AMD arch: gfx1100 → 11000, gfx90a → 9010.
int amd_isa_version(std::string_view arch);

// The ROCm device-library folder `hipcc` needs for `arch` (asked of the compiler itself, one dry
// run): nullopt when the installed libraries cover the arch; else a folder in the kernel cache with
// the installed libraries plus the arch's oclc_isa_version_<n>.bc, made from one of them with
// llvm-dis/llvm-as beside the compiler's clang (Debian 12's ROCm 5.2 libraries stop at gfx1036,
// while its clang 15 compiles gfx1100-gfx1103). Error(BadInput) in one line, naming the clang and
// ROCm versions that know it, when the compiler does not know `arch`.
std::optional<std::filesystem::path> hip_device_lib_dir(const std::filesystem::path& hipcc, const std::string& arch);

// AMD targets whose code objects come from kernel_newer_clang() when there is one: those Debian's hipcc
// (clang 15) does not know and clang 19 does — gfx941, gfx942 (CDNA3), gfx1150-gfx1152 (RDNA3.5), gfx1200,
// gfx1201 (RDNA4). RDNA3 stays hipcc's: there clang 15 compiles Temper's kernel and upstream's to the same
// registers, clang 19 not (docs/perf-notes.md).
bool prefers_newer_clang(std::string_view arch);
// The clang++ that compiles those: $TEMPER_HIP_CLANG (a path that is not an executable counts as none), else
// clang++-19 on PATH or /usr/lib/llvm-19/bin/clang++ (Debian 12: packages clang-19 and lld-19), with an ld.lld
// beside its clang. nullopt when there is none.
std::optional<std::filesystem::path> kernel_newer_clang();
// The ROCm device-library folder that clang++ (which finds no ROCm on Debian by itself) compiles `arch` with:
// the installed libraries ($TEMPER_ROCM_DEVICE_LIBS, else /usr/lib/<multiarch>/amdgcn/bitcode, else
// /opt/rocm/amdgcn/bitcode) when they have the arch's ISA-version library, else a folder in the kernel cache
// with them plus that library, made with the compiler's own clang (or llvm-dis/llvm-as beside it).
std::filesystem::path clang_device_lib_dir(const std::filesystem::path& clang, const std::string& arch);

class KernelCache {
 public:
  // Throws Error(NoDevice) naming the missing compiler. arch: "gfx90a", "sm_90". AMD code objects for a
  // prefers_newer_clang() arch come from kernel_newer_clang() unless $TEMPER_HIPCC names a hipcc; without
  // one, from hipcc where it knows the arch (ROCm 6), else ensure() fails with Error(BadInput) in one line
  // naming the Debian packages that give it.
  KernelCache(KernelToolchain toolchain, std::string arch, KernelArtifact artifact);

  // Where (type, ncols) lives once compiled (it may not exist yet).
  std::filesystem::path path(KernelPair pair) const;
  bool cached(KernelPair pair) const;
  const std::filesystem::path& directory() const { return dir_; }
  const std::string& arch() const { return arch_; }

  // Compiles every pair not cached yet, `jobs` at a time (0: one per core), and returns their paths
  // in order. Error(Cancelled) when `cancel` becomes true (running compilers are stopped, nothing
  // half-written stays), Error(Internal) with the compiler's first error lines when one fails.
  std::vector<std::filesystem::path> ensure(std::span<const KernelPair> pairs, const CompileProgressFn& progress = {},
                                            const std::atomic<bool>* cancel = nullptr, int jobs = 0);

 private:
  KernelToolchain toolchain_;
  std::string arch_;
  KernelArtifact artifact_;
  std::filesystem::path compiler_;
  std::filesystem::path dir_;      // this key's cache directory
  std::filesystem::path sources_;  // the embedded sources, written out once per source hash
  bool wants_newer_clang_ = false;                    // code objects of a prefers_newer_clang() arch, no TEMPER_HIPCC
  bool newer_clang_ = false;                          // compiler_ is kernel_newer_clang(), not hipcc
  std::optional<std::filesystem::path> device_libs_;  // HIP: hip_device_lib_dir(), once compiling
  std::vector<std::string> command(KernelPair pair, const std::filesystem::path& src,
                                   const std::filesystem::path& out) const;
};

// "3/7 kernels compiled (2 cached), 12 s, about 20 s left" — for the CLI's progress line.
std::string compile_progress_text(const CompileProgress& p);

}  // namespace temper
