#!/bin/sh
# `cmake --install` of this build into a temporary prefix, then the installed programs run as a user
# runs them, from another directory, with the build tree out of their way: `temper inspect`,
# `temper occupancy` (installed AMD code objects, and a kernel compiled at run time from the
# sources the binary carries), `temper-gui` started by its desktop entry's Exec line (offscreen,
# first paint), the desktop entry and AppStream metainfo validated, the man pages cover every command.
# usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR FIXTURE_TOOL APP_ID GUI(ON|OFF) BUILT_ARCH RTC_ARCH [HIPCC]
#   BUILT_ARCH: an AMD arch whose code objects the build installs ("" for none); RTC_ARCH: one it
#   does not, compiled at run time by HIPCC ("" without hipcc).
set -eu
cmake=$1 build=$2 src=$3 fixture=$4 app_id=$5 gui=$6 built_arch=$7 rtc_arch=$8 hipcc=${9:-}
# Outside the build and source trees, kept for a look when the test fails.
work=$(mktemp -d "${TMPDIR:-/tmp}/temper-install-test.XXXXXX")
prefix=$work/prefix
fail() { echo "install_test: $* (files in $work)" >&2; exit 1; }
need() { command -v "$1" >/dev/null || fail "$1 not found: install $2 (scripts/setup)"; }
need desktop-file-validate desktop-file-utils
need appstreamcli appstream
need groff groff-base

mkdir -p "$work/elsewhere" "$work/home"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install failed"; }
cd "$work/elsewhere"
# Nothing points back at the build: no TEMPER_* overrides, a fresh home and cache, PATH to the prefix.
unset TEMPER_CODEOBJ_DIR TEMPER_KERNEL_CACHE TEMPER_HIPCC TEMPER_NVCC
export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" XDG_CONFIG_HOME="$work/home/.config"
export XDG_DATA_HOME="$work/home/.local/share" PATH="$prefix/bin:$PATH"
[ "$(command -v temper)" = "$prefix/bin/temper" ] || fail "temper on PATH is $(command -v temper), not the installed one"

expect() {  # expect NAME REGEX COMMAND...: COMMAND exits 0 and prints a line matching REGEX
  name=$1 regex=$2
  shift 2
  rc=0
  "$@" >"$work/$name.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$work/$name.out"; fail "$name: '$*' exited $rc"; }
  grep -Eq -- "$regex" "$work/$name.out" || { cat "$work/$name.out"; fail "$name: no line matching '$regex'"; }
}

expect version "^temper [0-9]+\.[0-9]+\.[0-9]+$" temper --version
"$fixture" mini-llama model.gguf
expect inspect "^arch +llama, 2 layers" temper inspect model.gguf

# The code objects of this build, read from the prefix (HIP builds install them).
if [ -n "$built_arch" ]; then
  expect occupancy "^source: code objects in $prefix/share/temper/codeobj \(static\)" \
    temper occupancy --arch "$built_arch" --type q4_K
  grep -Eq "^q4_K +1 " "$work/occupancy.out" || { cat "$work/occupancy.out"; fail "occupancy: no q4_K row"; }
fi
# A kernel compiled at run time by the installed binary (an arch the install has no code objects
# for): its sources are the ones the binary carries, written into the kernel cache; the compiler
# (a wrapper logging its arguments) is never pointed at the build or source tree.
if [ -n "$rtc_arch" ]; then
  cat >"$work/hipcc" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >>"$work/hipcc.args"
exec "$hipcc" "\$@"
EOF
  chmod +x "$work/hipcc"
  expect compile "^source: code objects compiled on demand in $work/home/.cache/temper/kernels/hip-$rtc_arch-" \
    env TEMPER_HIPCC="$work/hipcc" temper occupancy --arch "$rtc_arch" --type q4_K --ncols 1
  grep -Eq "^q4_K +1 " "$work/compile.out" || { cat "$work/compile.out"; fail "compile: no q4_K row"; }
  grep -F -e "$build" -e "$src" "$work/hipcc.args" && fail "the run-time compile read the build or source tree"
fi

# Man pages: one section per command `temper --help` lists, and groff finds nothing to warn about.
man_dir=$prefix/share/man/man1
for cmd in $(temper --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' | grep -v '^help$'); do
  gzip -dc "$man_dir/temper.1.gz" | grep -q "^\.SS \"temper $cmd\"" || fail "temper.1 has no section for '$cmd'"
done
for page in "$man_dir"/*.1.gz; do
  warnings=$(gzip -dc "$page" | groff -k -man -ww -z 2>&1) || true
  [ -z "$warnings" ] || fail "$page: groff: $warnings"
done

if [ "$gui" = ON ]; then
  desktop=$prefix/share/applications/$app_id.desktop
  metainfo=$prefix/share/metainfo/$app_id.metainfo.xml
  remarks=$(desktop-file-validate "$desktop" 2>&1) || fail "desktop-file-validate: $remarks"
  [ -z "$remarks" ] || fail "desktop-file-validate: $remarks"
  expect metainfo_valid "Validation was successful" appstreamcli validate --no-net "$metainfo"
  icons=$prefix/share/icons/hicolor
  for f in scalable/apps/$app_id.svg 16x16/apps/$app_id.png 48x48/apps/$app_id.png 256x256/apps/$app_id.png; do
    [ -s "$icons/$f" ] || fail "icon $f not installed"
  done
  grep -qx "Icon=$app_id" "$desktop" || fail "$desktop does not name the installed icon $app_id"
  # temper-gui as the menu starts it: the program of the entry's Exec line, the installed one.
  exe=$(sed -n 's/^Exec="\(.*\)" %f$/\1/p' "$desktop")
  [ "$exe" = "$prefix/bin/temper-gui" ] || fail "$desktop runs '$exe', not $prefix/bin/temper-gui"
  expect gui "^first paint: [0-9]+ ms$" env QT_QPA_PLATFORM=offscreen "$exe" --demo --first-paint
fi
echo "install_test: installed into a temporary prefix and checked from another directory: all good"
rm -rf "$work"
