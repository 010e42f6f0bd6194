#pragma once
// `temper engine build`: a private hooked copy of a user's ggml tree, built for one GPU arch with
// FlashAttention and NCCL off, plus temper-probe linked against it. Cached under
// $XDG_CACHE_HOME/temper/engine/<hash> (~/.cache/... when unset), the hash covering the tree's
// CMake inputs, the hook, the probe, the arch and the kernel set: a second build of the same
// inputs returns at once.
#include <atomic>
#include <filesystem>
#include <functional>
#include <string>

#include "temper/engine.h"

namespace temper::engine {

enum class Platform { Cuda, Hip };
std::string_view platform_name(Platform p);
// sm_NN → CUDA, gfxN → HIP, for the archs ggml builds for; Error(BadInput) naming them for anything
// else (an arch is passed to CMake and the compilers, so nothing else may reach them).
Platform platform_for_arch(const std::string& arch);
std::string known_archs_text();  // "sm_50, sm_52, ..., gfx1201"

struct BuildOptions {
  std::string arch;            // "sm_90", "gfx90a"
  Platform platform = Platform::Cuda;
  std::string hip_version;     // the hipcc that would build it ("5.2.21153"); checked for HIP
  KernelSet set = kernel_set("full");
  std::filesystem::path cache_root;  // empty: the default above
  std::string generator = "Ninja";
  int jobs = 0;                // 0: the build tool's default
  // Set (from another thread): the build stops at its next output line, Error(Cancelled); the
  // cache entry stays unfinished and the next build starts it again.
  const std::atomic<bool>* cancel = nullptr;
};

// The version of the hipcc first on PATH ("5.2.21153"), empty when there is none.
std::string hipcc_version();
// Options for building for `arch` (sm_NN or gfxN: its platform; for HIP, the hipcc on PATH) with
// the named kernel set ("full" or "ci"). Error(BadInput) for another arch or set.
BuildOptions build_options(const std::string& arch, const std::string& kernel_set = "full");

struct BuildStep {
  int done = 0, total = 0;     // build steps (0/0 while configuring)
  std::string line;
  double elapsed_s = 0;
  std::filesystem::path log;   // the build log being written
};
using BuildProgress = std::function<void(const BuildStep&)>;

struct BuildResult {
  Tree tree;
  std::string hash;
  std::filesystem::path dir, probe, log;
  bool cached = false;
};

std::string source_hash(const Tree& tree, const BuildOptions& options);
// The hash of temper-probe's own sources, kept beside a built probe (probe.hash): a cache entry
// whose probe is older is rebuilt.
std::string probe_hash();

// Error(BadInput) for an unusable tree or a HIP too old for ggml; Error(Io) when configuring or
// building fails, with the compiler's first error and the log's path.
BuildResult build(const std::filesystem::path& dir, const BuildOptions& options, const BuildProgress& progress = {});

// The private copy a build compiles: `tree`'s ggml sources copied into `src`, hooked. A tree the
// user patched with this hook is copied as it is; one an older hook patched starts from the
// original that hook kept (.temper-hook/mmvq.cu.orig), without the older hook's files (its run time
// lacks what today's probe calls), and is patched again.
void hooked_copy(const Tree& tree, const std::filesystem::path& src, const KernelSet& set);

// The wire protocol header (core/engine/probe_protocol.h), written beside the probe's source.
std::string_view probe_protocol_source();

}  // namespace temper::engine
