# `cmake --install` and the Debian package (CPack DEB): the executables, the data they read at
# run time, the docs, man pages generated from the programs' own help, and temper-gui's desktop
# entry, icons and AppStream metainfo (docs/install.md). Included after the targets exist.

install(TARGETS temper RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET temper-gui)
  install(TARGETS temper-gui RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Run-time data, found from the executable (temper::installed_data_dir). The JSON schemas of what
# Temper writes; the AMD code objects this build compiled (`temper occupancy`, the GUI's occupancy
# view), the exact list of this configuration's instantiations, never a stale one left in codeobj/.
install(FILES resources/session.schema.json resources/profile.schema.json resources/gpus.schema.json
        DESTINATION ${TEMPER_INSTALL_DATADIR}/schemas)
get_property(_codeobjects GLOBAL PROPERTY TEMPER_CODEOBJ_FILES)
foreach(_co IN LISTS _codeobjects)
  get_filename_component(_arch_dir ${_co} DIRECTORY)
  get_filename_component(_arch ${_arch_dir} NAME)
  install(FILES ${_co} DESTINATION ${TEMPER_INSTALL_DATADIR}/codeobj/${_arch})
endforeach()

install(FILES README.md DESTINATION ${TEMPER_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${TEMPER_INSTALL_DOCDIR}/docs)

# Man pages from `temper --help` and every command's help (and `temper-gui --help`), regenerated
# whenever the program is relinked: a changed or added command is in the page at the next build.
find_program(TEMPER_GZIP gzip REQUIRED)
set(_man_dir ${CMAKE_BINARY_DIR}/man)
set(_man_pages)
macro(_temper_man_page exe)
  set(_page ${_man_dir}/${exe}.1)
  add_custom_command(OUTPUT ${_page} ${_page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_man_dir}
    COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
            ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${exe}> -DNAME=${exe} -DVERSION=${PROJECT_VERSION} -DOUT=${_page}
            "-DSEE_ALSO=${ARGN}" -P ${PROJECT_SOURCE_DIR}/cmake/TemperManPage.cmake
    COMMAND ${TEMPER_GZIP} -9nf -k ${_page}
    DEPENDS ${exe} ${PROJECT_SOURCE_DIR}/cmake/TemperManPage.cmake
    COMMENT "Man page ${exe}(1) from its --help" VERBATIM)
  list(APPEND _man_pages ${_page}.gz)
  install(FILES ${_page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endmacro()
if(TARGET temper-gui)
  _temper_man_page(temper temper-gui)
  _temper_man_page(temper-gui temper)
else()
  _temper_man_page(temper)
endif()
add_custom_target(temper_man_pages ALL DEPENDS ${_man_pages})

# The desktop face: entry, icon theme and AppStream metainfo, all named by the application id.
if(TARGET temper-gui)
  set(_desktop ${CMAKE_BINARY_DIR}/desktop)
  configure_file(resources/desktop/temper.metainfo.xml.in ${_desktop}/${TEMPER_APP_ID}.metainfo.xml @ONLY)
  install(FILES ${_desktop}/${TEMPER_APP_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  # The entry runs temper-gui by its installed path, known only at install time (`--prefix`): the
  # menu starts this install's temper-gui whether or not its bindir is on PATH.
  file(CONFIGURE OUTPUT ${_desktop}/install_entry.cmake @ONLY CONTENT [[
set(TEMPER_APP_ID "@TEMPER_APP_ID@")
set(TEMPER_GUI_EXE "${CMAKE_INSTALL_PREFIX}/@CMAKE_INSTALL_BINDIR@/temper-gui")
set(_entry "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/@CMAKE_INSTALL_DATADIR@/applications/@TEMPER_APP_ID@.desktop")
message(STATUS "Installing: ${_entry}")
configure_file("@PROJECT_SOURCE_DIR@/resources/desktop/temper-gui.desktop.in" "${_entry}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_entry}")
]])
  install(SCRIPT ${_desktop}/install_entry.cmake)
  install(FILES resources/icons/temper.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps
          RENAME ${TEMPER_APP_ID}.svg)
  # PNG sizes rendered from the one SVG at build time (for menus and docks that take no SVG).
  set(_pngs)
  foreach(_size 16 24 32 48 64 128 256)
    set(_png ${_desktop}/icons/${_size}/${TEMPER_APP_ID}.png)
    add_custom_command(OUTPUT ${_png}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_desktop}/icons/${_size}
      COMMAND temper_render_icon ${PROJECT_SOURCE_DIR}/resources/icons/temper.svg ${_size} ${_png}
      DEPENDS temper_render_icon resources/icons/temper.svg COMMENT "Icon ${_size}x${_size}" VERBATIM)
    list(APPEND _pngs ${_png})
    install(FILES ${_png} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${_size}x${_size}/apps)
  endforeach()
  add_custom_target(temper_icons ALL DEPENDS ${_pngs})
endif()

# The Debian package: `cmake --workflow --preset package` (docs/install.md). Dependencies are the
# shared libraries the executables really link (dpkg-shlibdeps: Qt 6, the HIP runtime and rocm-smi
# only when this build has them), plus what Temper runs as programs: hipcc compiles AMD kernels at
# run time, cmake builds a hooked engine.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME temper)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${TEMPER_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "profile and tune quantized GEMV kernels for LLM decode")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Temper profiles and tunes the quantized matrix-vector kernels (llama.cpp's mmvq)
that dominate LLM decode, on AMD GPUs (ROCm/HIP) and NVIDIA ones: it reads a GGUF model's GEMV
shapes, sweeps the kernel's launch configurations with a kernel verified against an exact CPU
reference and timed on the card, and exports the winners as a profile an engine can load.
Ships the temper command line and the temper-gui desktop application.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "hipcc")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cmake")
include(CPack)
