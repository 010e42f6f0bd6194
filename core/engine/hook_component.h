#pragma once
// The hook component (hook/ in Temper's source, embedded at build time): the families table, each
// family's edit lists and unit values, the unit templates, and the applier of an edit list.
// hook/README.md describes the files.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "temper/engine.h"

namespace temper::engine::hook_component {

namespace detail {
// hook/'s files as embedded (core/engine/hook_files.cpp.in).
struct EmbeddedFile {
  const char* path;  // relative to hook/
  const char* text;
};
extern const EmbeddedFile kFiles[];
extern const size_t kFileCount;
}  // namespace detail

// hook/<path> as embedded; Error(Internal) when there is none.
std::string_view file(std::string_view path);

// A row of hook/families.txt.
using Family = HookFamily;
const std::vector<Family>& families();  // in the order they are tried
// "ggml@<commit>, llama.cpp@<commit>" (commits shortened to 7 digits): where a family is tested, for messages.
std::string tested_text(const Family& f);

struct Edit {
  enum class Op { Replace, InsertBefore, InsertAfter, Append };
  enum class Find { Once, First, Optional };
  std::string name;  // what "anchor not found" names
  Op op = Op::Replace;
  Find find = Find::Once;
  std::string anchor, text;
  std::string after;   // search from where that (earlier) edit's anchor is
  std::string within;  // the anchor must come before the first `within` from there
  bool line_start = false;
  int since = 0;         // the oldest hook version that makes this edit
  std::string feature;   // the anchor's presence turns this feature on (and the edit applies only then)
  std::string when, unless;  // applies only with / without this feature
  std::string flag;      // "paths", "groups", "pipeline": bits this edit gives when applied
  int bits = 0;
  bool kernels_only_from = false;  // the text from this anchor on is host code the units leave out
};
// hook/families/FAMILY/FILE.edits ("mmvq.cu", "ggml-cuda.cu"); empty when the family has none.
const std::vector<Edit>& edits(const std::string& family, const std::string& file);
// hook/families/FAMILY/units.vars.
const std::map<std::string, std::string>& vars(const std::string& family);

// The outcome of an edit list on one file's text.
struct Applied {
  bool ok = false;
  std::string text;
  std::string failed;          // the anchor that stopped it ("NAME" or "NAME (found more than once)")
  size_t reached = 0;          // how many edits applied before it stopped
  size_t present = 0;          // how many of the list's anchors the text has at all (how near it is to the family)
  std::map<std::string, int> flags;  // "paths" -> bits, ...
  std::string before_kernels_only;   // the text before the kernels-only anchor, as it was then
};
// Applies the edits meant for hook_version to `text`, in order.
Applied apply(const std::string& text, const std::vector<Edit>& edits, int hook_version);

// Section `section` of template hook/templates/<name>, its {{placeholders}} filled (each one must be given).
std::string fill(std::string_view name, std::string_view section, const std::map<std::string, std::string>& values);

}  // namespace temper::engine::hook_component
