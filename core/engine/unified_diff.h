#pragma once
// A unified diff of two texts by lines (Myers' shortest edit script), as `diff -u` writes it and
// `patch -p1` reads it: `engine patch --dry-run` prints what patching would change.
#include <string>
#include <string_view>

namespace temper::engine {

// The hunks turning `before` into `after` under the headers "--- OLD_NAME" / "+++ NEW_NAME" (old
// "/dev/null" for a new file), 3 lines of context; empty when the texts are equal.
std::string unified_diff(std::string_view before, std::string_view after, const std::string& old_name,
                         const std::string& new_name);

}  // namespace temper::engine
