// The decode replay's plan: the engine's launch plan at one token, and the buffers it needs.
#include <set>

#include "temper/engine_replay.h"
#include "temper/gguf.h"

namespace temper::engine {

ReplayPlan plan_replay(const GgufFile& file) {
  ReplayPlan r;
  r.launches = plan_launches(file, 1);
  std::set<std::string> counted;
  for (const PlannedLaunch& l : r.launches.launches) {
    for (const std::string& name : l.tensors)
      if (counted.insert(name).second) r.weight_bytes += file.find_tensor(name)->bytes;
    // Each launch writes its own slice (the fused kinds also keep gate and up apart, for ggml's
    // range checks): outputs × rows × columns, padded.
    const int64_t outputs = launch_is_fused(l.launch) ? 3 : 1;
    const int64_t columns = launch_has_ids(l.launch) ? l.used : 1;
    r.output_bytes += uint64_t(outputs * l.n * columns * 4 + 256 * outputs);
  }
  return r;
}

}  // namespace temper::engine
