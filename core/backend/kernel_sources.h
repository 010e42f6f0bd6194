#pragma once
// The kernel sources embedded at build time (generated kernel_sources.cpp, cmake/TemperEmbed.cmake),
// so run-time compilation works from any directory: paths relative to the source tree's root
// ("kernels/mmvq.h", "core/common/include/temper/mmvq_traits.h", "kernels/iq_tables.h").
#include <cstddef>

namespace temper::detail {
struct EmbeddedSource {
  const char* path;
  const char* text;
};
extern const EmbeddedSource kKernelSources[];
extern const size_t kKernelSourceCount;
}  // namespace temper::detail
