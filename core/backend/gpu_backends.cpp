// temper::gpu_backends(): the GPU backends this build compiled in. Lives in the small
// temper_backends library so temper_core never depends on the backends (which depend on it).
#include "temper/backend.h"

namespace temper {

#if defined(TEMPER_WITH_HIP)
std::unique_ptr<Backend> make_hip_backend();
#endif
#if defined(TEMPER_WITH_CUDA)
std::unique_ptr<Backend> make_cuda_backend();
#endif

std::vector<std::unique_ptr<Backend>> gpu_backends() {
  std::vector<std::unique_ptr<Backend>> out;
#if defined(TEMPER_WITH_HIP)
  out.push_back(make_hip_backend());
#endif
#if defined(TEMPER_WITH_CUDA)
  out.push_back(make_cuda_backend());
#endif
  return out;
}

}  // namespace temper
