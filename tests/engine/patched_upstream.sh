# Sourced by the hook's compile tests (hook_nvcc_test.sh, hook_hipcc_test.sh): patched_upstream TEMPER
# OUT makes a writable copy of $TEMPER_UPSTREAM/ggml-d99724f's include/ and src/ (what a compiler
# reads) in OUT/ggml-d99724f, patches it with the CI kernel set, and sets $tree to it; the original
# tree is never touched. Exit 77 (skipped) without the tree.
patched_upstream() {
  if [ -z "${TEMPER_UPSTREAM:-}" ]; then echo "SKIPPED: TEMPER_UPSTREAM is not set (a folder of extracted upstream trees)"; exit 77; fi
  upstream="$TEMPER_UPSTREAM/ggml-d99724f"
  if [ ! -d "$upstream/src/ggml-cuda" ]; then echo "SKIPPED: no upstream tree $upstream"; exit 77; fi
  rm -rf "$2" && mkdir -p "$2/ggml-d99724f"
  tree="$2/ggml-d99724f"
  cp -R "$upstream/include" "$upstream/src" "$tree/"
  chmod -R u+w "$tree"
  "$1" engine patch "$tree" --kernel-set ci
}
