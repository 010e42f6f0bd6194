// Upstream trees for tests that check Temper against ggml / llama.cpp's own sources. They are never
// in the repository: $TEMPER_UPSTREAM names a folder of extracted trees (ggml-d99724f/,
// ggml-7180759/, llama.cpp/); without it (CI) those tests skip. Tests read a tree in place and
// patch only a private copy: $TEMPER_UPSTREAM itself may be read-only and is never written.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

namespace temper::test {

// $TEMPER_UPSTREAM/<name>; empty, with the reason to skip in *why, when it is not there.
inline std::filesystem::path upstream_tree(const std::string& name, std::string* why = nullptr) {
  const char* env = std::getenv("TEMPER_UPSTREAM");
  std::string reason;
  std::filesystem::path tree;
  if (env == nullptr || *env == '\0') {
    reason = "TEMPER_UPSTREAM is not set (a folder of extracted upstream trees: ggml-d99724f/, ggml-7180759/, llama.cpp/)";
  } else if (std::error_code ec; !std::filesystem::is_directory(tree = std::filesystem::path(env) / name, ec)) {
    reason = "no upstream tree " + tree.string() + " (TEMPER_UPSTREAM=" + env + ")";
    tree.clear();
  }
  if (why != nullptr) *why = reason;
  return tree;
}

// A writable copy of an upstream tree (all of it, or only the given folders and files, laid out as
// in the original) in a fresh temp folder, removed when the copy goes out of scope.
class UpstreamCopy {
 public:
  explicit UpstreamCopy(const std::string& name, std::initializer_list<const char*> parts = {}) {
    const std::filesystem::path source = upstream_tree(name, &why_);
    if (source.empty()) return;
    static std::atomic<int> serial{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("temper-upstream-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    std::filesystem::remove_all(dir_);
    root_ = dir_ / name;
    constexpr auto options = std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks;
    if (parts.size() == 0) {
      std::filesystem::create_directories(dir_);
      std::filesystem::copy(source, root_, options);
    }
    for (const char* part : parts) {
      std::filesystem::create_directories((root_ / part).parent_path());
      std::filesystem::copy(source / part, root_ / part, options);
    }
    // Writable even where $TEMPER_UPSTREAM is read-only (the permissions are copied too).
    std::filesystem::permissions(root_, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root_))
      if (!e.is_symlink()) std::filesystem::permissions(e.path(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  }
  ~UpstreamCopy() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  UpstreamCopy(const UpstreamCopy&) = delete;
  UpstreamCopy& operator=(const UpstreamCopy&) = delete;

  // The copy's root (empty when the tree is not there) and, then, why.
  const std::filesystem::path& root() const { return root_; }
  const std::string& why() const { return why_; }

 private:
  std::filesystem::path dir_, root_;
  std::string why_;
};

}  // namespace temper::test
