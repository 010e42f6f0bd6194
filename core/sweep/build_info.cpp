#include "temper/session.h"

// Filled in by core/sweep/CMakeLists.txt at configure time.
#ifndef TEMPER_GIT_COMMIT
#define TEMPER_GIT_COMMIT "unknown"
#endif
#ifndef TEMPER_BUILD_COMPILER
#define TEMPER_BUILD_COMPILER "unknown"
#endif
#ifndef TEMPER_BUILD_TYPE
#define TEMPER_BUILD_TYPE ""
#endif
#ifndef TEMPER_BUILD_FLAGS
#define TEMPER_BUILD_FLAGS ""
#endif
#ifndef TEMPER_BUILD_HIP_ARCHS
#define TEMPER_BUILD_HIP_ARCHS ""
#endif
#ifndef TEMPER_BUILD_CUDA_ARCHS
#define TEMPER_BUILD_CUDA_ARCHS ""
#endif
#ifndef TEMPER_BUILD_KERNEL_SET
#define TEMPER_BUILD_KERNEL_SET ""
#endif

namespace temper {

const BuildIdentity& this_build() {
  static const BuildIdentity build{TEMPER_GIT_COMMIT,      TEMPER_BUILD_COMPILER,   TEMPER_BUILD_TYPE,
                                   TEMPER_BUILD_FLAGS,     TEMPER_BUILD_HIP_ARCHS, TEMPER_BUILD_CUDA_ARCHS,
                                   TEMPER_BUILD_KERNEL_SET};
  return build;
}

}  // namespace temper
