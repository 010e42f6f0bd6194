#pragma once
// Test stand-in for clang < 17 only (passed with -include for gfx1100): clang 15 rejects __bf16 on
// AMDGPU, which upstream's RDNA3 WMMA code in mma.cuh uses (ROCm >= 6.1, as ggml's CMake requires);
// its WMMA bf16 builtins take 16-bit integer vectors instead. Spelling __bf16 so lets the rest of the
// translation unit (Temper's hook included) be compiled for RDNA3; nothing built with it is run.
#define __bf16 short
