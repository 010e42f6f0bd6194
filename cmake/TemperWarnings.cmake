# Warnings for Temper's own targets (never global flags).
add_library(temper_warnings INTERFACE)
target_compile_options(temper_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
