#!/bin/sh
# Issue 30: errors a user meets first read as plain words. A file of the wrong kind says what it is
# and which command takes it; outputs are named as the user wrote them; typos get a suggestion; the
# GUI's --help and --version work without a display.
# usage: plain_errors_test.sh TEMPER DEMO_SESSION OUTDIR [TEMPER_GUI]
set -u
temper=$1 demo=$2 out=$3 gui=${4:-}
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
fails=0
check() {  # check EXPECTED_CODE DESCRIPTION COMMAND...
  want=$1 what=$2; shift 2
  "$@" >stdout 2>stderr; got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; cat stdout stderr; fails=$((fails + 1))
  fi
}
has() {  # has FILE TEXT DESCRIPTION
  grep -qF -- "$2" "$1" || { echo "FAIL: $3: '$2' not in $1:"; cat "$1"; fails=$((fails + 1)); }
}
lacks() {  # lacks FILE TEXT DESCRIPTION
  ! grep -qF -- "$2" "$1" || { echo "FAIL: $3: '$2' in $1:"; cat "$1"; fails=$((fails + 1)); }
}

# The wrong kind of file: what it is and which command takes it, never a parser's dump.
printf 'GGUF\003\000\000\000\000\000\000\000' > model.gguf
printf '\211PNG\r\n\032\n\000\000\000\rIHDR' > shot.png
check 2 "a model given to session" "$temper" session model.gguf
has stderr "model.gguf: not JSON: this is a GGUF model (\`temper inspect\` and \`temper sweep\` take it" "says it is a model"
lacks stderr "last read" "no parser dump"
check 2 "an image given to profile show" "$temper" profile show shot.png
has stderr "shot.png: not JSON: this is a PNG image" "says it is an image"

# Outputs named as written, never by the hidden temporary beside them.
check 6 "export into a missing folder" "$temper" profile export "$demo" --format ggml-table -o missing/table.h
has stderr "cannot write missing/table.h: missing: No such file or directory" "the path as the user wrote it"
lacks stderr ".tmp" "no temporary name"

# Typos: a suggestion for commands, sub-commands and options.
check 2 "a mistyped command" "$temper" swep
has stderr "unknown command 'swep'; did you mean 'sweep'?" "command suggestion"
check 2 "a mistyped option" "$temper" profile export "$demo" --formt temper -o p.json
has stderr "did you mean --format for --formt?" "option suggestion"
check 2 "a mistyped sub-command" "$temper" profile exprot "$demo"
has stderr "did you mean 'export' for 'exprot'?" "sub-command suggestion"

# profile diff exits as diff(1); show does not invent a kernel-anvil file's date.
check 0 "profile from the demo" "$temper" profile export "$demo" --format temper -o a.json
check 0 "another approval policy" "$temper" profile export "$demo" --format temper --approve all -o b.json
check 0 "diff: same" "$temper" profile diff a.json a.json
check 1 "diff: different" "$temper" profile diff a.json b.json
check 2 "diff: trouble" "$temper" profile diff a.json nope.json
printf '{"configs": {"12": {"3,2": {"nwarps": 4, "rows_per_block": 4}}}}' > anvil.json
check 0 "show a kernel-anvil file" "$temper" profile show anvil.json --arch sm_90
has stdout "no creation date recorded" "no invented date"

# The GUI's --help and --version need no display (they used to abort with exit 134).
if [ -n "$gui" ]; then
  check 0 "temper-gui --help without a display" env -u DISPLAY -u WAYLAND_DISPLAY QT_QPA_PLATFORM=xcb "$gui" --help
  has stdout "--screenshot" "gui help lists its options"
  has stdout "a tuning profile" "gui help names profiles among the files it opens"
  check 0 "temper-gui --version without a display" env -u DISPLAY -u WAYLAND_DISPLAY QT_QPA_PLATFORM=xcb "$gui" --version
  has stdout "temper-gui" "gui version"
  # A profile `temper tune` wrote opens from the command line (issue 49: it was refused as "not a
  # sweep session"), and --screenshot captures the tune view and the comparison beside the rest.
  tuned=$(dirname "$demo")/../bench/profiles/h200-llama3-qwen3-pipelined.json
  check 0 "temper-gui opens a tuned profile" env XDG_CONFIG_HOME="$out/config" XDG_DATA_HOME="$out/data" \
    XDG_CACHE_HOME="$out/cache" QT_QPA_PLATFORM=offscreen "$gui" --screenshot shots "$tuned"
  has stdout "main-tune-result.png" "the tune view is captured"
  has stdout "main-tune-comparison.png" "the comparison is captured"
fi

[ "$fails" -eq 0 ] && echo "all plain-error checks passed"
exit "$fails"
