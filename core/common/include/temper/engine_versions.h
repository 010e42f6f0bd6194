#pragma once
// The upstream ggml versions Temper models, oldest first: the one place in C++ that names their
// commits. Each is the tested commit of one hook family, the row of hook/families.txt of the same
// name (engine_hook_component_test checks the two agree). The first row is the default engine,
// the one the sweep compares against.
#include <string_view>

#include "temper/mmvq_traits.h"

namespace temper {

// A version by the hook family its tree belongs to; the index of its row in kEngineVersions.
enum class EngineFamily { SmallK, HalveIters };

struct EngineVersion {
  EngineFamily family;
  std::string_view family_name;  // hook/families.txt's: "ggml-small-k"
  std::string_view name;         // as profiles, sessions and --engine name it: "ggml-7180759"
  std::string_view commit;       // short, as --variants names its kernel: "7180759"
  std::string_view full_commit;  // ggml-org/ggml's
  mmvq::KernelVariant variant;   // the compiled kernel that models its mmvq
};

inline constexpr EngineVersion kEngineVersions[] = {
    // MUL_MAT's mmvq/mmq choice decided inline in ggml-cuda.cu (mmvq up to 8 columns everywhere); no
    // TURING or GB10 table; restrict-qualified kernel, plain launch; 22 mmvq types.
    {EngineFamily::SmallK, "ggml-small-k", "ggml-7180759", "7180759", "7180759cb71625b8bb0eb60a88483f817e31508a",
     mmvq::KernelVariant::Ggml7180759},
    // ggml_cuda_should_use_mmvq's per-arch cutoffs; TURING and GB10 tables and GB10's should_halve_iters;
    // RDNA3_0 q4_K and q6_K narrower; programmatic dependent launch on Hopper and newer (the hook can
    // pipeline one-column launches); 23 mmvq types (q2_0).
    {EngineFamily::HalveIters, "ggml-halve-iters", "ggml-d99724f", "d99724f", "d99724f2b141fed9e1a9f402213506c081433465",
     mmvq::KernelVariant::GgmlD99724f},
};

constexpr const EngineVersion& engine_version(EngineFamily family) { return kEngineVersions[static_cast<int>(family)]; }
constexpr const EngineVersion& default_engine_version() { return kEngineVersions[0]; }

// The row `name` names ("ggml-7180759"), nullptr when none does.
constexpr const EngineVersion* find_engine_version(std::string_view name) {
  for (const EngineVersion& v : kEngineVersions)
    if (v.name == name) return &v;
  return nullptr;
}

static_assert(engine_version(EngineFamily::SmallK).family == EngineFamily::SmallK &&
              engine_version(EngineFamily::HalveIters).family == EngineFamily::HalveIters);

}  // namespace temper
