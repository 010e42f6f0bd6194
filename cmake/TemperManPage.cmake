# cmake -DEXE=<program> -DNAME=<temper|temper-gui> -DVERSION=<x.y.z> -DOUT=<NAME.1> [-DSEE_ALSO=<pages>]
#       -P TemperManPage.cmake
# Writes a man page from the program's own --help, so the page cannot drift from the CLI: the
# root help becomes DESCRIPTION; when it lists "commands:" (temper), each command's help
# (`NAME help CMD`) is a subsection, and so is each of its subcommands (`NAME CMD SUB --help`,
# the "Subcommands:" of CLI11's help).

function(_help out)
  execute_process(COMMAND ${EXE} ${ARGN} OUTPUT_VARIABLE _text ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${NAME} ${ARGN}: exit ${_rc}\n${_err}")
  endif()
  string(STRIP "${_text}" _text)
  string(REPLACE "${EXE}" "${NAME}" _text "${_text}")  # Qt's usage line names argv[0]
  set(${out} "${_text}" PARENT_SCOPE)
endfunction()

# The names listed in the block of `text` under the line `header` (up to the next blank line), one
# per line indented by exactly two spaces (wrapped descriptions are indented further).
function(_listed_names out text header)
  string(REGEX MATCH "(^|\n)${header}\n[^\n]+(\n[^\n]+)*" _list "${text}")
  string(REGEX MATCHALL "\n  [a-z][a-z0-9_-]*" _hits "${_list}")
  set(_names)
  foreach(_h IN LISTS _hits)
    string(STRIP "${_h}" _h)
    list(APPEND _names ${_h})
  endforeach()
  set(${out} ${_names} PARENT_SCOPE)
endfunction()

# Text as a troff no-fill block: backslashes and minus signs escaped, control characters at the
# start of a line neutralised.
function(_block out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

_help(_root --help)
# NAME: the first line that is not the usage, after its "<program ...>: " prefix.
string(REGEX MATCH "(^|\n)[^U\n][^\n]*" _summary "${_root}")
string(STRIP "${_summary}" _summary)
string(REGEX REPLACE "^[^:]*: " "" _summary "${_summary}")
string(TOUPPER "${NAME}" _title)
string(REPLACE "-" "\\-" _name "${NAME}")
string(REPLACE "-" "\\-" _summary "${_summary}")
_block(_desc "${_root}")
set(_page ".\\\" Generated from `${NAME} --help` by cmake/TemperManPage.cmake: do not edit.
.TH ${_title} 1 \"\" \"${NAME} ${VERSION}\" \"User Commands\"
.SH NAME
${_name} \\- ${_summary}
.SH DESCRIPTION
${_desc}")

_listed_names(_commands "${_root}" "commands:")
list(REMOVE_ITEM _commands help)
if(_commands)
  string(APPEND _page ".SH COMMANDS\n")
  foreach(_c IN LISTS _commands)
    _help(_text help ${_c})
    _block(_b "${_text}")
    string(APPEND _page ".SS \"${_name} ${_c}\"\n${_b}")
    _listed_names(_subs "${_text}" "[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:")
    foreach(_s IN LISTS _subs)
      _help(_text ${_c} ${_s} --help)
      _block(_b "${_text}")
      string(APPEND _page ".SS \"${_name} ${_c} ${_s}\"\n${_b}")
    endforeach()
  endforeach()
endif()
string(APPEND _page ".SH SEE ALSO\n")
foreach(_see IN LISTS SEE_ALSO)
  string(REPLACE "-" "\\-" _see "${_see}")
  string(APPEND _page ".BR ${_see} (1)\n")
endforeach()
string(APPEND _page "Temper's documentation: README.md and docs/ in share/doc/temper/ of the install prefix.\n")
file(WRITE "${OUT}.tmp" "${_page}")
file(RENAME "${OUT}.tmp" "${OUT}")
