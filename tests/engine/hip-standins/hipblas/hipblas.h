#pragma once
// Test stand-in for hipBLAS, which Debian 12 does not package: only the declarations ggml-cuda's
// headers name (common.cuh's error strings and its per-stream handle). Nothing here is linked or run.
#include <hip/hip_runtime.h>

typedef struct hipblasContext* hipblasHandle_t;
typedef enum {
  HIPBLAS_STATUS_SUCCESS,
  HIPBLAS_STATUS_NOT_INITIALIZED,
  HIPBLAS_STATUS_ALLOC_FAILED,
  HIPBLAS_STATUS_INVALID_VALUE,
  HIPBLAS_STATUS_MAPPING_ERROR,
  HIPBLAS_STATUS_EXECUTION_FAILED,
  HIPBLAS_STATUS_INTERNAL_ERROR,
  HIPBLAS_STATUS_NOT_SUPPORTED,
  HIPBLAS_STATUS_ARCH_MISMATCH
} hipblasStatus_t;

hipblasStatus_t hipblasCreate(hipblasHandle_t* handle);
hipblasStatus_t hipblasSetStream(hipblasHandle_t handle, hipStream_t stream);
hipblasStatus_t hipblasSetWorkspace(hipblasHandle_t handle, void* workspace, size_t bytes);
