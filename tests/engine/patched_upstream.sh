# Sourced by the hook's compile tests (hook_nvcc_test.sh, hook_hipcc_test.sh): patched_upstream TEMPER
# OUT [NAME] makes a writable copy of $TEMPER_UPSTREAM/NAME's (default ggml-d99724f) include/ and src/
# (what a compiler reads) in OUT/NAME, patches it with the CI kernel set, and sets $tree and
# $upstream; the original tree is never touched. OUT is emptied unless NAME is given. Exit 77
# (skipped) without the tree.
patched_upstream() {
  if [ -z "${TEMPER_UPSTREAM:-}" ]; then echo "SKIPPED: TEMPER_UPSTREAM is not set (a folder of extracted upstream trees)"; exit 77; fi
  name=${3:-ggml-d99724f}
  upstream="$TEMPER_UPSTREAM/$name"
  if [ ! -d "$upstream/src/ggml-cuda" ]; then echo "SKIPPED: no upstream tree $upstream"; exit 77; fi
  [ -n "${3:-}" ] || rm -rf "$2"
  rm -rf "$2/$name" && mkdir -p "$2/$name"
  tree="$2/$name"
  cp -R "$upstream/include" "$upstream/src" "$tree/"
  chmod -R u+w "$tree"
  "$1" engine patch "$tree" --kernel-set ci
}
