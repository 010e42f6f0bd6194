#!/bin/sh
# scripts/check-layers on planted trees: it passes a tree whose includes point down, and catches an
# upward include, an include of no module's header, and a core folder that is no layer.
# usage: layers_violation_test.sh CHECK_LAYERS OUTDIR
set -u
check=$1 out=$2
fails=0
plant() {  # plant ROOT: one header per layer, each layer's source including the header below it
  rm -rf "$1"
  prev=""
  for m in common gguf quant model backend sweep analysis profile engine tune; do
    mkdir -p "$1/core/$m/include/temper"
    echo '#pragma once' >"$1/core/$m/include/temper/$m.h"
    { echo "#include \"temper/$m.h\""; [ -n "$prev" ] && echo "#include \"temper/$prev.h\""; } >"$1/core/$m/$m.cpp"
    prev=$m
  done
}
expect() {  # expect CODE TEXT ROOT WHAT
  python3 "$check" --root "$3" >"$out/log" 2>&1; got=$?
  if [ "$got" -ne "$1" ] || ! grep -qF -- "$2" "$out/log"; then
    echo "FAIL: $4: exit $got (want $1), want '$2' in:"; cat "$out/log"; fails=$((fails + 1))
  fi
}
mkdir -p "$out"
plant "$out/clean"
expect 0 "no upward include" "$out/clean" "a tree whose includes point down"

plant "$out/up"
printf '#include <vector>\n#include "temper/sweep.h"\n' >>"$out/up/core/backend/backend.cpp"
expect 1 "core/backend/backend.cpp:4: backend includes temper/sweep.h of sweep, a higher layer" "$out/up" "backend -> sweep"

plant "$out/engine"
echo '#include "temper/engine.h"' >>"$out/engine/core/profile/profile.cpp"
expect 1 "core/profile/profile.cpp:3: profile includes temper/engine.h of engine, a higher layer" "$out/engine" "profile -> engine"

plant "$out/header"
echo '#include "temper/analysis.h"' >>"$out/header/core/gguf/include/temper/gguf.h"
expect 1 "core/gguf/include/temper/gguf.h:2: gguf includes temper/analysis.h of analysis, a higher layer" "$out/header" "a header pointing up"

plant "$out/unknown"
echo '#include "temper/nowhere.h"' >>"$out/unknown/core/model/model.cpp"
expect 1 "temper/nowhere.h is no module's public header" "$out/unknown" "an include of no module's header"

plant "$out/folder"
mkdir -p "$out/folder/core/include/temper"
expect 1 "core/include: not a layer" "$out/folder" "a flat include folder left behind"

[ "$fails" -eq 0 ] && echo "check-layers catches every planted violation"
exit "$fails"
