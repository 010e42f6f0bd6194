# Builds Temper's mmvq kernels from one HIP-dialect source for two toolchains:
#   temper_kernels_hip  — Debian/ROCm hipcc through add_custom_command (CMake's HIP language does
#                         not cope with Debian's layout), fat objects for every TEMPER_HIP_ARCHS,
#                         plus per-arch code objects in ${CMAKE_BINARY_DIR}/codeobj/<arch>/*.co for
#                         static occupancy analysis (TEMPER_CODEOBJ_DIR);
#   temper_kernels_cuda — nvcc through CMake's CUDA language, .cu wrappers including the same files.
# One translation unit per (type, ncols) so builds parallelise.
#
# Run as a script (cmake -P) it extracts the device code objects from one fat object instead.

if(CMAKE_SCRIPT_MODE_FILE)
  # -DOBJ=<fat object> -DOUT_DIR=<codeobj dir> -DNAME=<stem> -DBUNDLER=<clang-offload-bundler> -DOBJCOPY=<objcopy>
  set(_fatbin "${OBJ}.fatbin")
  execute_process(COMMAND ${OBJCOPY} --dump-section .hip_fatbin=${_fatbin} ${OBJ} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "objcopy could not read .hip_fatbin from ${OBJ}")
  endif()
  execute_process(COMMAND ${BUNDLER} --list --type=o --input=${_fatbin} OUTPUT_VARIABLE _targets RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "clang-offload-bundler --list failed on ${_fatbin}")
  endif()
  string(REPLACE "\n" ";" _targets "${_targets}")
  foreach(_t IN LISTS _targets)
    # hipv4-amdgcn-amd-amdhsa--gfx90a[:xnack-] -> gfx90a
    if(_t MATCHES "amdgcn-amd-amdhsa-[^-]*-(gfx[0-9a-f]+)")
      set(_arch ${CMAKE_MATCH_1})
      file(MAKE_DIRECTORY ${OUT_DIR}/${_arch})
      execute_process(COMMAND ${BUNDLER} --unbundle --type=o --input=${_fatbin} --targets=${_t}
                              --output=${OUT_DIR}/${_arch}/${NAME}.co RESULT_VARIABLE _rc)
      if(NOT _rc EQUAL 0)
        message(FATAL_ERROR "clang-offload-bundler could not extract ${_t} from ${_fatbin}")
      endif()
    endif()
  endforeach()
  file(REMOVE ${_fatbin})
  return()
endif()

# Types with a device vec_dot, as "name:ggml id".
set(TEMPER_KERNEL_TYPES_TIER1 q4_0:2 q4_1:3 q5_0:6 q5_1:7 q8_0:8 q2_K:10 q3_K:11 q4_K:12 q5_K:13 q6_K:14
    iq4_nl:20 iq4_xs:23 mxfp4:39)
set(TEMPER_KERNEL_TYPES_TIER2 iq2_xxs:16 iq2_xs:17 iq2_s:22 iq3_xxs:18 iq3_s:21 iq1_s:19 iq1_m:29 nvfp4:40 q1_0:41 q2_0:42)

# The IQ lookup tables as device-memory initialisers, generated from core/quant's grids (the CPU
# reference's own) into ${CMAKE_BINARY_DIR}/kernels/iq_tables.h. The generator compiles the few core
# sources it needs itself, so kernel builds need not wait for all of temper_core.
function(temper_add_iq_tables)
  add_executable(temper_gen_iq_tables ${PROJECT_SOURCE_DIR}/kernels/gen_iq_tables.cpp
                 ${PROJECT_SOURCE_DIR}/core/quant/iq_tier2.cpp ${PROJECT_SOURCE_DIR}/core/quant/fp.cpp
                 ${PROJECT_SOURCE_DIR}/core/common/error.cpp ${PROJECT_SOURCE_DIR}/core/common/types.cpp)
  target_include_directories(temper_gen_iq_tables PRIVATE ${PROJECT_SOURCE_DIR}/core/common/include
  ${PROJECT_SOURCE_DIR}/core/quant/include)
  set(_out ${CMAKE_BINARY_DIR}/kernels/iq_tables.h)
  add_custom_command(OUTPUT ${_out} COMMAND temper_gen_iq_tables ${_out} DEPENDS temper_gen_iq_tables
                     COMMENT "IQ lookup tables for the kernels" VERBATIM)
  add_custom_target(temper_iq_tables DEPENDS ${_out})
  set(TEMPER_IQ_TABLES_H ${_out} CACHE INTERNAL "Generated IQ tables header")
  set(TEMPER_IQ_TABLES_DIR ${CMAKE_BINARY_DIR}/kernels CACHE INTERNAL "Directory of iq_tables.h")
endfunction()

# The (type id, ncols) pairs of a kernel set: full = every type × ncols 1..8; ci = every type at
# ncols 1 plus all ncols for q4_0; none = no instantiation ahead of time (the run-time kernel cache).
function(temper_kernel_pairs set out)
  set(_pairs)
  if(set STREQUAL "none")
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  foreach(_entry IN LISTS TEMPER_KERNEL_TYPES_TIER1 TEMPER_KERNEL_TYPES_TIER2)
    string(REPLACE ":" ";" _e ${_entry})
    list(GET _e 0 _name)
    list(GET _e 1 _id)
    if(set STREQUAL "full" OR _name STREQUAL "q4_0")
      set(_ncols 1 2 3 4 5 6 7 8)
    elseif(set STREQUAL "ci")
      set(_ncols 1)
    else()
      message(FATAL_ERROR "TEMPER_KERNEL_SET must be full or ci, not '${set}'")
    endif()
    foreach(_n IN LISTS _ncols)
      list(APPEND _pairs "${_name}:${_id}:${_n}")
    endforeach()
  endforeach()
  set(${out} ${_pairs} PARENT_SCOPE)
endfunction()

# Writes the per-(type, ncols) sources (extension ext: hip or cu) and kernel_set.h into dir.
function(temper_generate_kernel_sources dir ext pairs out_sources)
  set(_sources)
  set(_set_h "// Generated: this build's mmvq kernel set (TEMPER_KERNEL_SET=${TEMPER_KERNEL_SET}).\n")
  foreach(_p IN LISTS pairs)
    string(REPLACE ":" ";" _e ${_p})
    list(GET _e 0 _name)
    list(GET _e 1 TEMPER_TYPE_ID)
    list(GET _e 2 TEMPER_NCOLS)
    set(_src ${dir}/mmvq_${_name}_nc${TEMPER_NCOLS}.${ext})
    configure_file(${PROJECT_SOURCE_DIR}/kernels/mmvq_instance.hip.in ${_src} @ONLY)
    list(APPEND _sources ${_src})
    string(APPEND _set_h "TEMPER_MMVQ_TABLE(${TEMPER_TYPE_ID}, ${TEMPER_NCOLS})\n")
  endforeach()
  file(CONFIGURE OUTPUT ${dir}/kernel_set.h CONTENT "${_set_h}")
  set(${out_sources} ${_sources} PARENT_SCOPE)
endfunction()

file(GLOB TEMPER_KERNEL_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*.h)
list(APPEND TEMPER_KERNEL_HEADERS ${PROJECT_SOURCE_DIR}/core/common/include/temper/mmvq_traits.h
     ${PROJECT_SOURCE_DIR}/core/quant/include/temper/quant/blocks.h)

function(temper_add_hip_kernels)
  find_program(TEMPER_OFFLOAD_BUNDLER NAMES clang-offload-bundler
               PATHS /opt/rocm/llvm/bin /usr/lib/llvm-17/bin /usr/lib/llvm-16/bin /usr/lib/llvm-15/bin REQUIRED)
  find_program(TEMPER_OBJCOPY NAMES objcopy llvm-objcopy REQUIRED)
  find_library(TEMPER_AMDHIP64 amdhip64 PATHS /opt/rocm/lib REQUIRED)

  set(_gen ${CMAKE_BINARY_DIR}/kernels/hip)
  set(_codeobj ${CMAKE_BINARY_DIR}/codeobj)
  temper_kernel_pairs(${TEMPER_KERNEL_SET} _pairs)
  temper_generate_kernel_sources(${_gen} hip "${_pairs}" _sources)
  # TEMPER_HIP_BATCH > 1: that many (type, ncols) sources per hipcc run. Each run parses the HIP headers
  # once per arch and once for the host, 20-45 % of a one-column unit's compile time (docs/perf-notes.md); a build whose
  # instantiations are few (the ci set) saves that parse on 2 cores, where more units buy no parallelism.
  if(TEMPER_HIP_BATCH GREATER 1)
    set(_batches)
    set(_i 0)
    foreach(_s IN LISTS _sources)
      math(EXPR _b "${_i} / ${TEMPER_HIP_BATCH}")
      math(EXPR _i "${_i} + 1")
      get_filename_component(_s ${_s} NAME)
      if(NOT _b IN_LIST _batches)
        list(APPEND _batches ${_b})
        set(_unit_${_b} "// Generated by cmake/TemperKernels.cmake: TEMPER_HIP_BATCH (type, ncols) sources, one hipcc run.\n")
      endif()
      string(APPEND _unit_${_b} "#include \"${_s}\"\n")
    endforeach()
    set(_sources)
    foreach(_b IN LISTS _batches)
      file(CONFIGURE OUTPUT ${_gen}/mmvq_batch_${_b}.hip CONTENT "${_unit_${_b}}")
      list(APPEND _sources ${_gen}/mmvq_batch_${_b}.hip)
    endforeach()
  endif()
  list(APPEND _sources ${PROJECT_SOURCE_DIR}/kernels/runtime.hip)

  set(_arch_flags)
  foreach(_a IN LISTS TEMPER_HIP_ARCHS)
    list(APPEND _arch_flags --offload-arch=${_a})
  endforeach()
  # hipcc (clang 14) leaves an empty <stem>-XXXXXX directory in TMPDIR per compile: keep them in the build tree.
  set(_tmp ${CMAKE_BINARY_DIR}/hipcc-tmp)
  file(MAKE_DIRECTORY ${_tmp})
  set(_objects)
  set(_codeobjects)
  foreach(_src IN LISTS _sources)
    get_filename_component(_stem ${_src} NAME_WE)
    set(_obj ${_gen}/${_stem}.o)
    set(_cos)
    foreach(_a IN LISTS TEMPER_HIP_ARCHS)
      list(APPEND _cos ${_codeobj}/${_a}/${_stem}.co)
    endforeach()
    add_custom_command(
      OUTPUT ${_obj} ${_cos}
      COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${_tmp} ${TEMPER_HIPCC} -c -x hip -std=c++20 -O3 -fPIC -DNDEBUG ${_arch_flags}
              -I${PROJECT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/kernels -I${PROJECT_SOURCE_DIR}/core/common/include
              -I${PROJECT_SOURCE_DIR}/core/quant/include -I${_gen}
              -I${TEMPER_IQ_TABLES_DIR} ${_src} -o ${_obj}
      COMMAND ${CMAKE_COMMAND} -DOBJ=${_obj} -DOUT_DIR=${_codeobj} -DNAME=${_stem} -DBUNDLER=${TEMPER_OFFLOAD_BUNDLER}
              -DOBJCOPY=${TEMPER_OBJCOPY} -P ${PROJECT_SOURCE_DIR}/cmake/TemperKernels.cmake
      DEPENDS ${_src} ${TEMPER_KERNEL_HEADERS} ${_gen}/kernel_set.h ${TEMPER_IQ_TABLES_H}
              ${PROJECT_SOURCE_DIR}/cmake/TemperKernels.cmake
      COMMENT "hipcc ${_stem} (${TEMPER_HIP_ARCHS})"
      VERBATIM)
    list(APPEND _objects ${_obj})
    list(APPEND _codeobjects ${_cos})
  endforeach()
  set_source_files_properties(${_objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)

  add_library(temper_kernels_hip STATIC ${_objects})
  set_target_properties(temper_kernels_hip PROPERTIES LINKER_LANGUAGE CXX)
  target_include_directories(temper_kernels_hip INTERFACE ${PROJECT_SOURCE_DIR})
  target_link_libraries(temper_kernels_hip PUBLIC ${TEMPER_AMDHIP64})
  add_custom_target(temper_codeobj DEPENDS ${_codeobjects})
  add_dependencies(temper_kernels_hip temper_codeobj)

  set(TEMPER_CODEOBJ_DIR ${_codeobj} CACHE INTERNAL "Per-arch AMD code objects of the mmvq kernels")
  set_property(GLOBAL PROPERTY TEMPER_CODEOBJ_DIR ${_codeobj})
  set_property(GLOBAL PROPERTY TEMPER_CODEOBJ_FILES ${_codeobjects})  # what an install copies
endfunction()

function(temper_add_cuda_kernels)
  set(_gen ${CMAKE_BINARY_DIR}/kernels/cuda)
  temper_kernel_pairs(${TEMPER_KERNEL_SET} _pairs)
  temper_generate_kernel_sources(${_gen} cu "${_pairs}" _sources)
  file(CONFIGURE OUTPUT ${_gen}/runtime.cu CONTENT "#include \"kernels/runtime.hip\"\n")
  list(APPEND _sources ${_gen}/runtime.cu)

  add_library(temper_kernels_cuda STATIC ${_sources})
  # UNITY_BUILD OFF: each unit is one (type, ncols) instantiation with its own macros.
  set_target_properties(temper_kernels_cuda PROPERTIES UNITY_BUILD OFF CUDA_ARCHITECTURES "${TEMPER_CUDA_ARCHS}" CUDA_STANDARD 17
                                                       CUDA_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON)
  target_compile_definitions(temper_kernels_cuda PRIVATE TEMPER_GPU_CUDA)
  target_include_directories(temper_kernels_cuda PRIVATE ${PROJECT_SOURCE_DIR}/kernels ${PROJECT_SOURCE_DIR}/core/common/include
    ${PROJECT_SOURCE_DIR}/core/quant/include
                                                         ${_gen} ${TEMPER_IQ_TABLES_DIR} PUBLIC ${PROJECT_SOURCE_DIR})
  add_dependencies(temper_kernels_cuda temper_iq_tables)
  # The shared runtime: one CUDA runtime in the process for the built-in kernels and the run-time
  # compiled ones (kernel cache libraries, linked with nvcc -cudart shared).
  target_link_libraries(temper_kernels_cuda PUBLIC CUDA::cudart)
endfunction()
