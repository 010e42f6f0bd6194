// The tuning hook's applier: identifies the tree's family (hook/families.txt), applies its edit lists,
// fills the unit templates (hook/templates/), and patches, checks, shows and undoes that in a tree.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <system_error>
#include <thread>

#include "temper/content_hash.h"
#include "temper/device_bench.h"
#include "temper/engine.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"
#include "temper/mmvq_traits.h"
#include "hook_component.h"
#include "unified_diff.h"

namespace temper::engine {
namespace fs = std::filesystem;

namespace {

const char* const kMarkerPrefix = "// temper-hook v";
const char* const kBackupDir = ".temper-hook";
const char* const kManifest = "manifest.txt";

std::string marker_line(int hook_version) {
  return std::string(kMarkerPrefix) + std::to_string(hook_version) +
         ": patched by Temper (temper engine patch); restore with `temper engine patch DIR --undo`\n";
}

namespace hc = hook_component;

// Where the hook applies, from the families table: "ggml@<commit> (ggml-halve-iters); ...".
std::string families_text() {
  std::string out;
  for (const hc::Family& f : hc::families()) out += (out.empty() ? "" : "; ") + hc::tested_text(f) + " (" + f.name + ")";
  return out;
}

[[noreturn]] void missing(const std::string& anchor) {
  fail(ErrorKind::BadInput, "mmvq.cu: anchor not found: " + anchor + " (the hook applies to upstream's mmvq.cu as in " +
                                families_text() + "; this one differs there); nothing was written");
}

// Names of non-static functions defined at file scope in `text` (mmvq.cu's host entry points).
std::vector<std::string> external_functions(const std::string& text) {
  static const std::regex def(R"(^(?:int|bool|void|float|size_t)\s+([A-Za-z_]\w*)\s*\()");
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, def)) out.push_back(m[1]);
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct GridConfig {
  int nwarps, rows;
  bool wave64;  // also launchable with 64-wide waves (GCN/CDNA under HIP)
};

std::vector<GridConfig> grid(int ncols) {
  std::vector<GridConfig> out;
  for (int w : mmvq::kGridNwarps)
    for (int r : mmvq::kGridRowsPerBlock)
      if (mmvq::launchable(ncols, w, r, 32)) out.push_back({w, r, mmvq::launchable(ncols, w, r, 64)});
  return out;
}

// ggml's block struct of a type, as ggml-common.h names them: block_q4_0, block_q4_K, block_iq2_xxs.
std::string block_struct(const std::string& type) {
  std::string b = "block_" + lower(type);
  if (b.size() > 2 && b.compare(b.size() - 2, 2, "_k") == 0) b.back() = 'K';
  return b;
}

// #define lines renaming mmvq.cu's non-static host functions in a unit, so they cannot collide.
std::string renames(const std::string& tmpl, const std::vector<std::string>& externals, const std::string& suffix) {
  std::string out;
  for (const auto& f : externals) out += hc::fill(tmpl, "rename", {{"function", f}, {"suffix", suffix}});
  return out;
}

// One translation unit: every grid config of one (type, ncols), compiled from mmvq.cu itself (hook v6:
// with its pipelined twins at one column where `pipeline`; hook v14: and its bias-only twins where `bias_only`).
std::string instance_unit(const std::string& type, const std::vector<int>& ncols_group, const std::vector<std::string>& externals,
                          const std::string& launch_flags, bool pipeline, bool bias_only) {
  const std::string tmpl = "instance-unit.cu.in";
  std::string suffix = lower(type);
  for (int nc : ncols_group) suffix += "_" + std::to_string(nc);
  std::string registrations;
  for (int ncols : ncols_group) {
    for (const GridConfig& c : grid(ncols)) {
      const std::string config = std::to_string(ncols) + ", " + std::to_string(c.nwarps) + ", " + std::to_string(c.rows);
      const std::string call = hc::fill(tmpl, "register", {{"type", type}, {"config", config}});
      // Partial sums of this config exceed the static shared memory at 64-wide waves: CUDA only.
      registrations += c.wave64 ? call : hc::fill(tmpl, "cuda_only", {{"lines", call}});
      // Hook v6: its pipelined twin at one column (decode), where the dependent launch runs: NVIDIA only.
      if (pipeline && ncols == 1)
        registrations += hc::fill(tmpl, "cuda_only", {{"lines", hc::fill(tmpl, "register_pipelined", {{"type", type}, {"config", config}, {"bits", std::to_string(kPipelineBits)}})}});
      // Hook v14: its bias-only twins at one column, plain and pipelined: NVIDIA only, as the pipelined ones.
      if (bias_only && ncols == 1) {
        const std::string nwarps_rows = std::to_string(c.nwarps) + ", " + std::to_string(c.rows);
        std::string lines;
        for (int bits : {0, kPipelineBits})
          lines += hc::fill(tmpl, "register_bias", {{"type", type}, {"nwarps_rows", nwarps_rows}, {"bits", std::to_string(bits)}});
        registrations += hc::fill(tmpl, "cuda_only", {{"lines", lines}});
      }
    }
  }
  return hc::fill(tmpl, "unit",
                  {{"version", std::to_string(kHookVersion)}, {"type", type}, {"ncols_first", std::to_string(ncols_group.front())},
                   {"ncols_last", std::to_string(ncols_group.back())}, {"renames", renames(tmpl, externals, suffix)},
                   // The pipelined launch's L2 prefetch needs the weight block's bytes (hook v6).
                   {"block_bytes", pipeline ? hc::fill(tmpl, "block_bytes", {{"type", type}, {"block", block_struct(type)}}) : ""},
                   {"pipe_parameter", pipeline ? ", int P = 0" : ""}, {"pipe_argument", pipeline ? ", P" : ""},
                   {"bias_launcher", bias_only ? hc::fill(tmpl, "bias_launcher", {{"type", type}, {"launch_flags", launch_flags}}) : ""},
                   {"launch_flags", launch_flags}, {"suffix", suffix}, {"registrations", registrations}});
}

std::string registry_unit(const std::vector<std::string>& suffixes, const std::string& set_name) {
  const std::string tmpl = "registry.cu.in";
  std::string declarations, calls;
  for (const auto& s : suffixes) {
    declarations += hc::fill(tmpl, "declaration", {{"suffix", s}});
    calls += hc::fill(tmpl, "call", {{"suffix", s}});
  }
  return hc::fill(tmpl, "unit", {{"version", std::to_string(kHookVersion)}, {"declarations", declarations}, {"calls", calls}, {"set", set_name}});
}

std::string read_git_commit(const fs::path& dir) {
  // The tree's own .git, or for ggml/ inside a llama.cpp checkout that checkout's: never one further
  // up (a tree copied into another repository's folder is not at that repository's commit).
  const fs::path root = fs::absolute(dir).lexically_normal();
  std::vector<fs::path> candidates = {root};
  if (root.filename() == "ggml") candidates.push_back(root.parent_path());
  for (const fs::path& p : candidates) {
    const fs::path git = p / ".git";
    std::error_code ec;
    if (fs::is_directory(git, ec)) {
      std::ifstream head(git / "HEAD");
      std::string line;
      if (!std::getline(head, line)) return {};
      if (line.rfind("ref: ", 0) != 0) return line.substr(0, 40);
      const std::string ref = line.substr(5);
      std::ifstream loose(git / ref);
      if (std::getline(loose, line)) return line.substr(0, 40);
      std::ifstream packed(git / "packed-refs");
      while (std::getline(packed, line)) {
        if (line.size() > 41 && line.compare(41, std::string::npos, ref) == 0) return line.substr(0, 40);
      }
      return {};
    }
  }
  return {};
}

// ggml-cuda.cu's group hook, as hook v5 writes it: what marks a patched ggml-cuda.cu.
const char* const kCudaMarker = "ggml-cuda/temper-mmvq-group.h";
// Hook v14's use_gate in mul_mat_vec_q: a pipelined kernel's bit 4 compiles it without its gate.
const char* const kBiasOnlyGate = "use_gate      = (temper_pipe & 4) == 0 && fusion.gate != nullptr;";
// The call hook v6 puts in mul_mat_vec_q (pipelined launches): what `check` finds in a patched tree.
const char* const kPipelineCall = "    temper_mmvq_pipeline<type, temper_pipe, has_fusion>(";
// The calls hook v8 puts in mmvq.cu's launcher and ggml-cuda.cu's graph evaluation (the norm's q8_1 activations).
const char* const kNormRead = "temper_mmvq_norm_q8_1(src1, ne10_padded)";
const char* const kNormEvaluate = "temper_mmvq_try_norm(*cuda_ctx, cgraph, i)";

// ggml-cuda.cu's edits (same-input groups), all or none: where one anchor is missing the file is left
// as it is and group_problem says which.
void patch_cuda(const std::string& source, const std::string& family, int hook_version, Patch& out) {
  if (source.find(kCudaMarker) != std::string::npos) {
    out.group_problem = "ggml-cuda.cu carries Temper's group hook already (an interrupted patch? its original is in .temper-hook/ggml-cuda.cu.orig)";
    return;
  }
  const hc::Applied a = hc::apply(source, hc::edits(family, "ggml-cuda.cu"), hook_version);
  if (!a.ok) {
    const std::string twice = " (found more than once)";
    const bool more = a.failed.size() > twice.size() && a.failed.compare(a.failed.size() - twice.size(), twice.size(), twice) == 0;
    out.group_problem = "ggml-cuda.cu: " + (more ? a.failed.substr(0, a.failed.size() - twice.size()) + " found more than once" : a.failed + " not found") +
                        "; same-input groups need it (the rest of the hook applies)";
    return;
  }
  out.cuda = a.text;
  out.group_hooks = a.flags.count("groups") ? a.flags.at("groups") : 0;
  if (a.flags.count("norm")) out.norm_hooks |= a.flags.at("norm");
}

// The k-quant pairs of the _K_M mixes (llama.cpp's quantize puts these types side by side in a layer's
// q, k, v): a group of two types needs its pair compiled.
const char* const kGroupPairs[][2] = {{"Q2_K", "Q3_K"}, {"Q2_K", "Q4_K"}, {"Q3_K", "Q4_K"}, {"Q3_K", "Q5_K"},
                                      {"Q4_K", "Q5_K"}, {"Q4_K", "Q6_K"}, {"Q5_K", "Q6_K"}};

// One translation unit: the group grid of (A, B) at batch widths `ncols` (1..4).
std::string group_unit(const std::string& a, const std::string& b, const std::vector<int>& ncols,
                       const std::vector<std::string>& externals, const std::string& suffix) {
  const std::string tmpl = "group-unit.cu.in";
  std::string widths;
  for (int nc : ncols) widths += hc::fill(tmpl, "width", {{"a", a}, {"b", b}, {"ncols", std::to_string(nc)}});
  return hc::fill(tmpl, "unit",
                  {{"version", std::to_string(kHookVersion)}, {"a", a}, {"with_b", a == b ? std::string() : " with GGML_TYPE_" + b},
                   {"ncols_first", std::to_string(ncols.front())}, {"ncols_last", std::to_string(ncols.back())},
                   {"renames", renames(tmpl, externals, suffix)}, {"suffix", suffix}, {"widths", widths}});
}

int patched_version(const std::string& text) {
  if (text.rfind(kMarkerPrefix, 0) != 0) return 0;
  return std::atoi(text.c_str() + std::string(kMarkerPrefix).size());
}

}  // namespace

const std::vector<HookFamily>& hook_families() { return hc::families(); }

std::string hook_family_row(const HookFamily& f) {
  const auto yn = [](bool b) { return b ? "yes" : "no"; };
  return "types " + std::to_string(f.types) + " (at " + hc::tested_text(f) + "), same-input groups " + yn(f.groups) + ", pipelining " +
         yn(f.pipelining) + ", mul_mat path choice " + yn(f.mul_mat_path) + ", MoE cap " + yn(f.moe_cap);
}

std::string_view tree_kind_name(TreeKind kind) { return kind == TreeKind::LlamaCpp ? "llama.cpp" : "ggml"; }

Tree find_tree(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(ErrorKind::BadInput, dir.string() + ": not a folder");
  Tree t;
  t.root = dir;
  if (fs::exists(dir / "src" / "ggml-cuda" / "mmvq.cu", ec)) {
    t.ggml_root = dir;
  } else if (fs::exists(dir / "ggml" / "src" / "ggml-cuda" / "mmvq.cu", ec)) {
    t.ggml_root = dir / "ggml";
    t.kind = TreeKind::LlamaCpp;
  } else {
    fail(ErrorKind::BadInput, dir.string() +
                                  ": neither a ggml tree (src/ggml-cuda/mmvq.cu) nor a llama.cpp checkout "
                                  "(ggml/src/ggml-cuda/mmvq.cu)");
  }
  t.mmvq = t.ggml_root / "src" / "ggml-cuda" / "mmvq.cu";
  t.cuda = t.ggml_root / "src" / "ggml-cuda" / "ggml-cuda.cu";
  t.commit = read_git_commit(t.root);
  return t;
}

std::vector<int> KernelSet::ncols_of(const std::string& type) const {
  static const std::vector<int> every = {1, 2, 3, 4, 5, 6, 7, 8};
  if (types.empty() || std::find(types.begin(), types.end(), type) != types.end()) return ncols.empty() ? every : ncols;
  return other_ncols;
}

std::string_view kernel_set_names() { return "full|all|ncols1|ci|TYPE,TYPE,..."; }

namespace {
// The tier-1 types as upstream's enum names them ("Q4_K", "IQ4_NL", "MXFP4").
std::vector<std::string> tier1_upstream_names() {
  std::vector<std::string> names;
  for (GgmlType t : tier1_types()) {
    std::string upper(type_name(t));
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    names.push_back(upper);
  }
  return names;
}
}  // namespace

KernelSet kernel_set(const std::string& name) {
  if (name == "all") return {"all", {}, {}, {}};
  if (name == "ci") return {"ci", {1}, {"Q4_0", "Q4_K"}, {}};
  if (name == "full") return {"full", {}, tier1_upstream_names(), {1}};
  // The tier-1 types at ncols 1 only (bench/fidelity.sh): a fraction of the full build's time.
  if (name == "ncols1") return {"ncols1", {1}, tier1_upstream_names(), {}};
  // A list of ggml types ("q4_K,q6_K"): just the types of one's model, at ncols 1-8 — a fraction
  // of the full set's build time; shapes of other types run stock.
  KernelSet set{name, {}, {}, {}};
  for (size_t at = 0; at <= name.size();) {
    const size_t comma = std::min(name.find(',', at), name.size());
    const std::string item = name.substr(at, comma - at);
    const auto type = parse_type(item);
    if (!type || !mmvq::type_supported(uint32_t(*type)))
      fail(ErrorKind::BadInput, "kernel set \"" + name + "\": expected " + std::string(kernel_set_names()) +
                                    (item.empty() ? std::string() : " (\"" + item + "\" is not a type mmvq runs)"));
    std::string upper(type_name(*type));
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (std::find(set.types.begin(), set.types.end(), upper) == set.types.end()) set.types.push_back(upper);
    at = comma + 1;
  }
  return set;
}

Patch make_patch(const std::string& source, const KernelSet& set, int hook_version, const std::string* cuda_source) {
  if (int v = patched_version(source)) fail(ErrorKind::BadInput, "mmvq.cu: already patched (hook v" + std::to_string(v) + ")");
  if (const size_t cr = source.find("\r\n"); cr != std::string::npos)
    fail(ErrorKind::BadInput, "mmvq.cu: Windows (CRLF) line endings (line " +
                                  std::to_string(std::count(source.begin(), source.begin() + long(cr), '\n') + 1) +
                                  "); the hook's anchors are upstream's LF lines: check the tree out with LF endings "
                                  "(git config core.autocrlf false) or convert the file (dos2unix); nothing was written");
  Patch out;
  // The tree's family: the first whose edits all apply; else the failed anchor of the one nearest to it
  // (most of its anchors in the text, then most edits made).
  hc::Applied best;
  std::vector<std::string> externals;
  for (const hc::Family& f : hc::families()) {
    const auto& vars = hc::vars(f.name);
    std::vector<std::string> types;
    const std::regex type_case(vars.at("types"));
    for (auto it = std::sregex_iterator(source.begin(), source.end(), type_case); it != std::sregex_iterator(); ++it)
      types.push_back((*it)[1]);
    hc::Applied a;
    if (types.empty()) a.failed = vars.at("types_anchor");
    else a = hc::apply(source, hc::edits(f.name, "mmvq.cu"), hook_version);
    if (!a.ok) {
      if (best.failed.empty() || std::pair(a.present, a.reached) > std::pair(best.present, best.reached)) best = std::move(a);
      continue;
    }
    out.family = f.name;
    out.types = std::move(types);
    out.halve_iters = vars.at("halve_iters") == "yes";
    out.path_hooks = a.flags.count("paths") ? a.flags.at("paths") : 0;
    out.pipeline_hooks = a.flags.count("pipeline") ? a.flags.at("pipeline") : 0;
    out.norm_hooks = a.flags.count("norm") ? a.flags.at("norm") : 0;
    out.mmvq = marker_line(hook_version) + a.text;
    externals = external_functions(a.before_kernels_only);
    break;
  }
  if (out.family.empty()) missing(best.failed);
  const std::string& launch_flags = hc::vars(out.family).at("launch_flags");
  // Hook v14's bias-only twins, where its edit of the kernel's use_gate applied (a pipelined kernel's bit 4).
  const bool bias_only = out.pipeline_hooks != 0 && out.mmvq.find(kBiasOnlyGate) != std::string::npos;

  // The generated units.
  // A unit per type and ncols group {1}, {2-4}, {5-8}: each unit parses mmvq.cu once, so fewer
  // units build faster, and three per type still keep a many-core build busy.
  const auto group_of = [](int nc) { return nc == 1 ? 0 : nc <= 4 ? 1 : 2; };
  std::vector<std::string> suffixes;
  for (const auto& ty : out.types) {
    std::vector<std::vector<int>> groups;
    for (int nc : set.ncols_of(ty)) {
      if (groups.empty() || group_of(groups.back().back()) != group_of(nc)) groups.emplace_back();
      groups.back().push_back(nc);
    }
    for (const auto& group : groups) {
      std::string suffix = lower(ty), name = "temper-mmvq-" + lower(ty) + "-" + std::to_string(group.front());
      for (int nc : group) suffix += "_" + std::to_string(nc);
      if (group.size() > 1) name += "-" + std::to_string(group.back());
      suffixes.push_back(suffix);
      out.files.emplace_back(name + ".cu", instance_unit(ty, group, externals, launch_flags, out.pipeline_hooks != 0, bias_only));
    }
  }
  // Same-input groups (hook v5): ggml-cuda.cu's places, then a unit per type and per compiled k-quant pair.
  if (hook_version >= 5 && cuda_source) patch_cuda(*cuda_source, out.family, hook_version, out);
  if (out.group_hooks) {
    const auto group_ncols = [&](const std::string& ty) {
      std::vector<int> nc;
      for (int c : set.ncols_of(ty))
        if (c <= 4) nc.push_back(c);
      return nc;
    };
    const auto supported = [&](const std::string& ty) { return std::find(out.types.begin(), out.types.end(), ty) != out.types.end(); };
    const auto add_unit = [&](const std::string& a, const std::string& b) {
      std::vector<int> nc = group_ncols(a);
      if (a != b) {
        const std::vector<int> other = group_ncols(b);
        nc.erase(std::remove_if(nc.begin(), nc.end(), [&](int c) { return std::find(other.begin(), other.end(), c) == other.end(); }), nc.end());
      }
      if (nc.empty() || !supported(a) || !supported(b)) return;
      const std::string suffix = "group_" + lower(a) + (a == b ? std::string() : "_" + lower(b));
      suffixes.push_back(suffix);
      out.files.emplace_back("temper-mmvq-group-" + lower(a) + (a == b ? std::string() : "-" + lower(b)) + ".cu",
                             group_unit(a, b, nc, externals, suffix));
    };
    for (const auto& ty : out.types) add_unit(ty, ty);
    for (const auto& pair : kGroupPairs) add_unit(pair[0], pair[1]);
    out.files.emplace_back("temper-mmvq-group.cuh", std::string(hook_group_kernel()));
  }
  if (hook_version >= 5) out.files.emplace_back("temper-mmvq-group.h", std::string(hook_group_header()));
  out.files.emplace_back("temper-mmvq-registry.cu", registry_unit(suffixes, set.name));
  // The header carries what was patched, and the version the engine reports (temper_mmvq_hook_version), so it cannot drift.
  std::string header(hook_header());
  for (const auto& [placeholder, value] : {std::pair<std::string, int>{"TEMPER_HOOK_VERSION_WRITTEN_BY_PATCH", hook_version},
                                           {"TEMPER_PATH_HOOKS_WRITTEN_BY_PATCH", out.path_hooks},
                                           {"TEMPER_GROUP_HOOKS_WRITTEN_BY_PATCH", out.group_hooks},
                                           {"TEMPER_PIPELINE_HOOKS_WRITTEN_BY_PATCH", out.pipeline_hooks},
                                           {"TEMPER_NORM_HOOKS_WRITTEN_BY_PATCH", out.norm_hooks}})
    if (const size_t at = header.find(placeholder); at != std::string::npos) header.replace(at, placeholder.size(), std::to_string(value));
  out.files.emplace_back("temper-mmvq.cuh", header);
  out.files.emplace_back("temper-mmvq-api.h", std::string(hook_api()));
  out.files.emplace_back("temper-mmvq-runtime.cu", std::string(hook_runtime()));
  out.files.emplace_back("temper-mmvq-profile.h", std::string(hook_profile_reader()));
  return out;
}

namespace {

constexpr uint64_t kMaxMmvqBytes = uint64_t{4} << 20;   // upstream's mmvq.cu is about 50 KB
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 20;
constexpr auto kLockWait = std::chrono::seconds(30);
const char* const kManifestHead = "temper-hook manifest 2";

bool inside(const fs::path& path, const fs::path& folder) {
  const auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return f == folder.end();
}

// mmvq.cu and the folder Temper writes into must lie inside the tree the user named: a symbolic
// link leading out of it is refused, naming where it leads.
void refuse_links_leaving(const Tree& t) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(t.root), ec);
  for (const fs::path& p : {t.mmvq.parent_path(), t.mmvq, t.cuda}) {
    const fs::path real = fs::weakly_canonical(fs::absolute(p), ec);
    if (!ec && !inside(real, root))
      fail(ErrorKind::BadInput, path_text(p) + " leads to " + path_text(real) + " (a symbolic link), outside " +
                                    path_text(t.root) + "; Temper changes files inside the tree you name only (name the tree that holds it)");
  }
}

// mmvq.cu's text: a regular file of bounded size (a FIFO, a device or a huge file is refused at
// once, never read), inside the tree.
std::string read_mmvq(const Tree& t) {
  refuse_links_leaving(t);
  return read_input(t.mmvq, kMaxMmvqBytes, "mmvq.cu");
}

// One `engine patch` at a time per tree: an exclusive lock on the ggml-cuda folder itself (nothing is
// left in the tree), waited for up to kLockWait.
class TreeLock {
 public:
  explicit TreeLock(const fs::path& cuda_dir) {
    fd_ = ::open(cuda_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) fail(ErrorKind::Io, "cannot open " + path_text(cuda_dir) + ": " + std::strerror(errno));
    const auto until = std::chrono::steady_clock::now() + kLockWait;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        const int e = errno;
        ::close(fd_);
        fail(ErrorKind::Io, "cannot lock " + path_text(cuda_dir) + ": " + std::strerror(e));
      }
      if (std::chrono::steady_clock::now() > until) {
        ::close(fd_);
        fail(ErrorKind::BadInput, "another `temper engine patch` has been changing " + path_text(cuda_dir) +
                                      " for 30 s; try again when it has finished");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~TreeLock() { ::close(fd_); }
  TreeLock(const TreeLock&) = delete;
  TreeLock& operator=(const TreeLock&) = delete;

 private:
  int fd_ = -1;
};

// What lies at `p` itself (a symbolic link is not followed): its mode, 0 when nothing is there.
mode_t kind_at(const fs::path& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

constexpr uint64_t kMaxCudaBytes = uint64_t{32} << 20;  // upstream's ggml-cuda.cu is about 250 KB

// ggml-cuda.cu's text, or nothing when the tree has none (hook v5 then leaves groups out).
std::optional<std::string> read_cuda(const Tree& t) {
  if (kind_at(t.cuda) == 0) return std::nullopt;
  return read_input(t.cuda, kMaxCudaBytes, "ggml-cuda.cu");
}

// A file of the hook's own naming, directly in the ggml-cuda folder: what undo may remove.
bool hook_file_name(const std::string& name) {
  static const std::regex re(R"(temper-mmvq[A-Za-z0-9_.-]*\.(cu|cuh|h))");
  return std::regex_match(name, re) && name.find("..") == std::string::npos;
}

// Everything patch must find before it writes: the generated files' names free (no file, no
// dangling link to write through), the backup folder absent or a real folder.
void check_room(const fs::path& cuda_dir, const Patch& p) {
  for (const auto& [name, _] : p.files)
    if (kind_at(cuda_dir / name) != 0)
      fail(ErrorKind::BadInput, path_text(cuda_dir / name) + ": exists already; not overwriting it (nothing was written)");
  const mode_t backup = kind_at(cuda_dir / kBackupDir);
  if (backup != 0 && !S_ISDIR(backup))
    fail(ErrorKind::BadInput, path_text(cuda_dir / kBackupDir) + ": not a folder (a link or a file); nothing was written");
}

struct ManifestFile {
  std::string name, hash;  // hash empty: a manifest from before hashes were kept
};

struct Manifest {
  std::string set, mmvq_hash, orig_hash;
  std::string cuda_hash, cuda_orig_hash;  // hook v5: ggml-cuda.cu as patched and as it was (empty: not patched)
  std::vector<ManifestFile> files;
  bool hashed = false;  // "temper-hook manifest 2": every file with the hash of what was written
};

std::string manifest_text(const std::string& set, const std::string& original, const Patch& p, const std::string& cuda_original) {
  std::string m = std::string(kManifestHead) + "\nset=" + set + "\nmmvq=" + content_hash(p.mmvq) + "\norig=" + content_hash(original) + "\n";
  if (!p.cuda.empty()) m += "cuda=" + content_hash(p.cuda) + "\ncuda_orig=" + content_hash(cuda_original) + "\n";
  for (const auto& [name, content] : p.files) m += "file=" + content_hash(content) + " " + name + "\n";
  return m;
}

Manifest parse_manifest(const std::string& text, const fs::path& path) {
  Manifest m;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const auto bad = [&](const std::string& what) {
      fail(ErrorKind::BadInput, path_text(path) + ":" + std::to_string(line_no) + ": " + what + "; nothing was changed");
    };
    if (line_no == 1 && line == kManifestHead) m.hashed = true;
    else if (line.rfind("set=", 0) == 0) m.set = line.substr(4);
    else if (line.rfind("mmvq=", 0) == 0) m.mmvq_hash = line.substr(5);
    else if (line.rfind("orig=", 0) == 0) m.orig_hash = line.substr(5);
    else if (m.hashed && line.rfind("cuda=", 0) == 0) m.cuda_hash = line.substr(5);
    else if (m.hashed && line.rfind("cuda_orig=", 0) == 0) m.cuda_orig_hash = line.substr(10);
    else if (m.hashed && line.rfind("file=", 0) == 0) {
      const size_t space = line.find(' ');
      if (space == std::string::npos || space != 5 + 16) bad("expected \"file=<16 hex digits> <name>\"");
      m.files.push_back({line.substr(space + 1), line.substr(5, 16)});
    } else if (!m.hashed && !line.empty()) m.files.push_back({line, ""});
    else if (!line.empty()) bad("unexpected line \"" + path_text(line.substr(0, 80)) + "\"");
  }
  for (const auto& f : m.files)
    if (!hook_file_name(f.name))
      fail(ErrorKind::BadInput, path_text(path) + " lists \"" + path_text(f.name.substr(0, 200)) +
                                    "\", not a file the hook writes (temper-mmvq*.cu|.cuh|.h in this folder); nothing was changed");
  if (m.cuda_hash.empty() != m.cuda_orig_hash.empty()) fail(ErrorKind::BadInput, path_text(path) + ": incomplete (cuda= and cuda_orig= go together); nothing was changed");
  if (m.hashed && (m.mmvq_hash.empty() || m.orig_hash.empty())) fail(ErrorKind::BadInput, path_text(path) + ": incomplete; nothing was changed");
  return m;
}

// A file of the backup folder: a regular file (never a link), bounded.
std::string read_backup(const fs::path& p, uint64_t max_bytes) {
  const mode_t k = kind_at(p);
  if (k == 0) fail(ErrorKind::BadInput, path_text(p) + ": missing; the tree is not one Temper patched, or its record is damaged");
  if (!S_ISREG(k)) fail(ErrorKind::BadInput, path_text(p) + ": not a regular file (a link or a special file); nothing was changed");
  return read_input(p, max_bytes, "the hook's record");
}

// Everything undo will do, verified before any of it is done.
struct UndoPlan {
  Tree tree;
  std::string original;
  std::optional<std::string> cuda_original;  // hook v5: ggml-cuda.cu to restore (nullopt: nothing to do)
  std::vector<fs::path> remove;  // the hook's files, each matched against what was written
};

UndoPlan plan_undo(const fs::path& dir) {
  UndoPlan plan;
  plan.tree = find_tree(dir);
  const fs::path cuda_dir = plan.tree.mmvq.parent_path();
  const fs::path backup = cuda_dir / kBackupDir;
  const std::string current = read_mmvq(plan.tree);
  const std::string where = path_text(plan.tree.mmvq);
  if (!patched_version(current) || kind_at(backup) == 0)
    fail(ErrorKind::BadInput, where + ": not patched by Temper; nothing to undo");
  if (!S_ISDIR(kind_at(backup)))
    fail(ErrorKind::BadInput, path_text(backup) + ": not a folder (a link or a file); nothing was changed");
  plan.original = read_backup(backup / "mmvq.cu.orig", kMaxMmvqBytes);
  const Manifest m = parse_manifest(read_backup(backup / kManifest, kMaxManifestBytes), backup / kManifest);
  // Hook v1 manifests hold no hash; their "full" set is today's "all".
  const auto regenerate = [&] {
    return make_patch(plan.original, kernel_set(m.set == "full" && patched_version(current) == 1 ? "all" : m.set),
                      patched_version(current));
  };
  const bool unchanged = !m.mmvq_hash.empty() ? content_hash(current) == m.mmvq_hash : regenerate().mmvq == current;
  // The file as we wrote it: anything else means the user edited it since, and it is theirs.
  if (!unchanged)
    fail(ErrorKind::BadInput, where + ": changed since Temper patched it; not touching it (the original is in " +
                                  path_text(backup / "mmvq.cu.orig") + ")");
  if (!m.orig_hash.empty() && content_hash(plan.original) != m.orig_hash)
    fail(ErrorKind::BadInput, path_text(backup / "mmvq.cu.orig") + ": changed since Temper kept it; nothing was changed");
  // Hook v5: ggml-cuda.cu as Temper patched it is restored; as it was, it is restored already (an undo
  // stopped between the two files); anything else is the user's.
  if (!m.cuda_hash.empty()) {
    const fs::path cuda_backup = backup / "ggml-cuda.cu.orig";
    const std::string cuda_now = read_input(plan.tree.cuda, kMaxCudaBytes, "ggml-cuda.cu");
    const std::string kept = read_backup(cuda_backup, kMaxCudaBytes);
    if (content_hash(kept) != m.cuda_orig_hash)
      fail(ErrorKind::BadInput, path_text(cuda_backup) + ": changed since Temper kept it; nothing was changed");
    if (content_hash(cuda_now) == m.cuda_hash) plan.cuda_original = kept;
    else if (cuda_now != kept)
      fail(ErrorKind::BadInput, path_text(plan.tree.cuda) + ": changed since Temper patched it; not touching it (the original is in " +
                                    path_text(cuda_backup) + "); nothing was changed");
  }
  // Files without a recorded hash (older manifests) must at least be ones the hook writes for this mmvq.cu.
  std::vector<std::string> generated;
  if (!m.hashed)
    for (const auto& f : regenerate().files) generated.push_back(f.first);
  for (const auto& f : m.files) {
    const fs::path p = cuda_dir / f.name;
    const mode_t k = kind_at(p);
    if (k == 0) continue;  // removed already
    if (!S_ISREG(k)) fail(ErrorKind::BadInput, path_text(p) + ": not a regular file (a link or a special file); not Temper's, nothing was changed");
    if (m.hashed ? content_hash(read_input(p, kMaxMmvqBytes, "hook file")) != f.hash
                 : std::find(generated.begin(), generated.end(), f.name) == generated.end())
      fail(ErrorKind::BadInput, path_text(p) + ": changed since Temper wrote it (or not Temper's); nothing was changed (remove it yourself if it is)");
    plan.remove.push_back(p);
  }
  return plan;
}

}  // namespace

CheckReport check(const fs::path& dir) {
  CheckReport r;
  r.tree = find_tree(dir);
  const std::string text = read_mmvq(r.tree);
  r.patched_version = patched_version(text);
  if (r.patched_version) {
    r.state = HookState::Patched;
    if (const auto cuda = read_cuda(r.tree); cuda && cuda->find(kCudaMarker) != std::string::npos)
      r.group_hooks = kGroupHookEvaluate | kGroupHookOrder;
    r.pipeline_hooks = text.find(kPipelineCall) != std::string::npos;
    if (text.find(kNormRead) != std::string::npos) r.norm_hooks |= kNormHookRead;
    if (const auto cuda = read_cuda(r.tree); cuda && cuda->find(kNormEvaluate) != std::string::npos) r.norm_hooks |= kNormHookEvaluate;
    r.problem = "already patched (hook v" + std::to_string(r.patched_version) + ")";
    // Undo is suggested only where it will work.
    try {
      plan_undo(dir);
      r.undoable = true;
    } catch (const Error& e) {
      r.undo_problem = e.what();
    }
    return r;
  }
  try {
    const std::optional<std::string> cuda = read_cuda(r.tree);
    Patch p = make_patch(text, kernel_set("ci"), kHookVersion, cuda ? &*cuda : nullptr);
    check_room(r.tree.mmvq.parent_path(), p);
    r.applies = true;
    r.family = p.family;
    r.types = std::move(p.types);
    r.group_hooks = p.group_hooks;
    r.group_problem = cuda ? p.group_problem : "no ggml-cuda.cu in this tree";
    r.pipeline_hooks = p.pipeline_hooks;
    r.norm_hooks = p.norm_hooks;
  } catch (const Error& e) {
    r.problem = e.what();
  }
  return r;
}

int patch(const fs::path& dir, const KernelSet& set) {
  const Tree tree = find_tree(dir);
  const fs::path cuda_dir = tree.mmvq.parent_path();
  refuse_links_leaving(tree);
  const TreeLock lock(cuda_dir);
  const std::string original = read_mmvq(tree);
  const std::optional<std::string> cuda_original = read_cuda(tree);
  const Patch p = make_patch(original, set, kHookVersion, cuda_original ? &*cuda_original : nullptr);  // throws before anything is written
  check_room(cuda_dir, p);
  const fs::path backup = cuda_dir / kBackupDir;
  std::error_code ec;
  const bool backup_existed = kind_at(backup) != 0;
  fs::create_directory(backup, ec);
  if (ec) fail(ErrorKind::Io, path_text(backup) + ": " + ec.message());
  std::vector<fs::path> written;
  bool cuda_written = false;
  try {
    write_file_atomic(backup / "mmvq.cu.orig", original);
    if (!p.cuda.empty()) write_file_atomic(backup / "ggml-cuda.cu.orig", *cuda_original);
    for (const auto& [name, content] : p.files) {
      written.push_back(cuda_dir / name);
      write_file_atomic(cuda_dir / name, content);
    }
    // The hashes of what was written: undo removes only these files, unchanged.
    write_file_atomic(backup / kManifest, manifest_text(set.name, original, p, cuda_original.value_or("")));
    if (!p.cuda.empty()) {
      cuda_written = true;
      write_file_atomic(tree.cuda, p.cuda);
    }
    write_file_atomic(tree.mmvq, p.mmvq);  // the commit point
  } catch (...) {
    if (cuda_written) write_file_atomic(tree.cuda, *cuda_original);
    for (const auto& f : written) fs::remove(f, ec);
    fs::remove(backup / "mmvq.cu.orig", ec);
    fs::remove(backup / "ggml-cuda.cu.orig", ec);
    fs::remove(backup / kManifest, ec);
    if (!backup_existed) fs::remove(backup, ec);
    throw;
  }
  return p.group_hooks;
}

std::string dry_run(const fs::path& dir, const KernelSet& set) {
  const Tree tree = find_tree(dir);
  const fs::path cuda_dir = tree.mmvq.parent_path();
  const std::string original = read_mmvq(tree);
  const std::optional<std::string> cuda_original = read_cuda(tree);
  const Patch p = make_patch(original, set, kHookVersion, cuda_original ? &*cuda_original : nullptr);
  check_room(cuda_dir, p);
  // Paths as `patch -p1` in the tree's root reads them.
  const auto name = [&](const fs::path& f) { return f.lexically_relative(tree.root).generic_string(); };
  std::string out = unified_diff(original, p.mmvq, "a/" + name(tree.mmvq), "b/" + name(tree.mmvq));
  if (!p.cuda.empty()) out += unified_diff(*cuda_original, p.cuda, "a/" + name(tree.cuda), "b/" + name(tree.cuda));
  for (const auto& [file, content] : p.files) out += unified_diff("", content, "/dev/null", "b/" + name(cuda_dir / file));
  return out;
}

void undo(const fs::path& dir) {
  const Tree tree = find_tree(dir);
  refuse_links_leaving(tree);
  const TreeLock lock(tree.mmvq.parent_path());
  const UndoPlan plan = plan_undo(dir);  // every check before anything changes
  if (plan.cuda_original) write_file_atomic(plan.tree.cuda, *plan.cuda_original);  // before mmvq.cu: a stopped undo resumes
  write_file_atomic(plan.tree.mmvq, plan.original);  // the commit point
  std::error_code ec;
  fs::remove(plan.tree.mmvq.parent_path() / kBackupDir / "ggml-cuda.cu.orig", ec);
  for (const auto& f : plan.remove) fs::remove(f, ec);
  const fs::path backup = plan.tree.mmvq.parent_path() / kBackupDir;
  fs::remove(backup / "mmvq.cu.orig", ec);
  fs::remove(backup / kManifest, ec);
  fs::remove(backup, ec);  // only when empty: anything else in it is not Temper's
}

}  // namespace temper::engine
