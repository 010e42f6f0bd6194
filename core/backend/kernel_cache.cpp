// Run-time compilation of mmvq instantiations into an on-disk cache (see temper/kernel_cache.h).
#include "temper/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "kernel_sources.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/mmvq_group.h"
#include "temper/process.h"

namespace temper {
namespace fs = std::filesystem;
namespace {

// The loadable wrapper around one (type, ncols) is the build's own instance template plus C entry
// points the backend finds with dlsym (gpu_backend.cpp); a group unit (KernelPair::group_b) is its
// own template. Both are embedded kernel sources, so part of the source hash.
constexpr std::string_view kEntryPoints = "kernels/rtc_entry_points.hip.in";
constexpr std::string_view kGroupUnit = "kernels/rtc_group_unit.hip.in";

uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
constexpr uint64_t kFnvBasis = 14695981039346656037ull;

std::string hex8(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 8);
}

const char* toolchain_name(KernelToolchain t) { return t == KernelToolchain::Hip ? "hip" : "cuda"; }

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string_view embedded(std::string_view path) {
  for (size_t i = 0; i < detail::kKernelSourceCount; ++i)
    if (detail::kKernelSources[i].path == path) return detail::kKernelSources[i].text;
  fail(ErrorKind::Internal, "kernel source " + std::string(path) + " is not embedded in this build");
}

uint64_t source_hash() {
  uint64_t h = kFnvBasis;
  for (size_t i = 0; i < detail::kKernelSourceCount; ++i)
    h = fnv1a(fnv1a(h, detail::kKernelSources[i].path), detail::kKernelSources[i].text);
  return h;
}

bool executable(const fs::path& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); }

std::optional<fs::path> on_path(const std::string& name, std::initializer_list<const char*> extra) {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty() && executable(fs::path(dir) / name)) return fs::path(dir) / name;
  }
  for (const char* dir : extra)
    if (executable(fs::path(dir) / name)) return fs::path(dir) / name;
  return std::nullopt;
}

// Runs argv in its own process group with output to `log` and TMPDIR=`tmpdir` (hipcc leaves an empty
// directory in TMPDIR per compile: never in the user's); a cancel stops the whole group.
// Returns the exit status, or kCancelled.
int run_compiler(const std::vector<std::string>& argv, const fs::path& log, const fs::path& tmpdir,
                 const std::atomic<bool>* cancel) {
  ProcessOptions o;
  o.env = {"TMPDIR=" + tmpdir.string()};
  o.log = log;
  o.truncate_log = true;
  o.cancel = cancel;
  o.own_group = true;
  return run_process(argv, o);
}

std::string first_lines(const fs::path& log, int count) {
  std::ifstream in(log);
  std::string out, line;
  for (int i = 0; i < count && std::getline(in, line);) {
    if (line.rfind("$ ", 0) == 0) continue;  // the command itself, as run_process logs it
    if (line.find("error") == std::string::npos && !out.empty()) continue;
    out += (out.empty() ? "" : "\n  ") + line;
    ++i;
  }
  return out;
}

// Targets newer than an old clang knows, with the first upstream clang that knows them and a ROCm
// whose compiler does (docs/occupancy.md, "Targets Debian's toolchain lacks").
struct NewerTarget {
  std::string_view arch, family;
  int clang;
  std::string_view rocm;
};
constexpr NewerTarget kNewerTargets[] = {
    {"gfx941", "CDNA3", 17, "6.0"},    {"gfx942", "CDNA3", 17, "6.0"},    {"gfx950", "CDNA4", 20, "7.0"},
    {"gfx1150", "RDNA3.5", 17, "6.3"}, {"gfx1151", "RDNA3.5", 17, "6.3"}, {"gfx1152", "RDNA3.5", 19, "6.4"},
    {"gfx1153", "RDNA3.5", 20, "7.0"}, {"gfx1200", "RDNA4", 18, "6.3"},     {"gfx1201", "RDNA4", 18, "6.3"}};

[[noreturn]] void unknown_target(const std::string& arch, const std::string& dry_run) {
  const size_t v = dry_run.find("clang version ");
  const std::string clang = v == std::string::npos ? "clang" : dry_run.substr(v, dry_run.find('\n', v) - v);
  std::string msg = arch + ": this hipcc's compiler (" + clang + ") does not know the target";
  for (const NewerTarget& t : kNewerTargets)
    if (t.arch == arch)
      msg += " (" + std::string(t.family) + "); clang " + std::to_string(t.clang) + " or later knows it, e.g. ROCm " +
             std::string(t.rocm) + "'s";
  fail(ErrorKind::BadInput, msg + " (TEMPER_HIPCC selects another hipcc)");
}

// The ISA-version library for `arch`, made from `template_bc` (any installed oclc_isa_version_*.bc:
// a module holding one constant) by replacing that constant, in `dir` (written aside, renamed).
void make_isa_version_bc(const fs::path& tools, const fs::path& template_bc, const std::string& arch,
                         const fs::path& dir) {
  const fs::path out = dir / ("oclc_isa_version_" + arch.substr(3) + ".bc");
  if (fs::is_regular_file(out)) return;
  // llvm-dis and llvm-as beside the compiler's clang (hipcc's llvm-15); where neither is (clang-19 comes
  // without the llvm tools) that clang itself, which reads and writes bitcode and IR as well.
  const bool own_tools = executable(tools / "llvm-dis") && executable(tools / "llvm-as");
  const bool no_tools = !executable(tools / "llvm-dis") && !executable(tools / "llvm-as");
  if (!own_tools && !(no_tools && executable(tools / "clang")))
    for (const char* tool : {"llvm-dis", "llvm-as"})
      if (!executable(tools / tool))
        fail(ErrorKind::NoDevice, "compiling " + arch + " needs a ROCm device library this ROCm lacks; Temper makes it " +
                                      "with " + tool + ", which is not in " + tools.string() +
                                      " (Debian: package llvm-15)");
  const std::string unique = "." + std::to_string(::getpid());  // callers hold device_libs_mutex()
  const fs::path ll = dir / (arch + unique + ".ll"), bc = out.string() + unique + ".tmp";
  const fs::path log = dir / (arch + unique + ".log");
  std::error_code ec;
  const auto cleanup = [&] { fs::remove(ll, ec), fs::remove(bc, ec), fs::remove(log, ec); };
  const auto step = [&](std::vector<std::string> argv) {
    if (run_compiler(argv, log, dir, nullptr) != 0) {
      const std::string why = first_lines(log, 3);
      cleanup();
      fail(ErrorKind::Internal, "making " + out.string() + " failed (" + argv[0] + "): " + why);
    }
  };
  const std::string clang = (tools / "clang").string();
  const std::vector<std::string> clang_ir = {"-target", "amdgcn-amd-amdhsa", "-nogpulib", "-O0", "-emit-llvm"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) { return a.insert(a.end(), b.begin(), b.end()), a; };
  step(own_tools ? std::vector<std::string>{(tools / "llvm-dis").string(), template_bc.string(), "-o", ll.string()}
                 : with(with({clang}, clang_ir), {"-S", template_bc.string(), "-o", ll.string()}));
  static const std::regex constant(R"(@__oclc_ISA_version\b[^\n]*constant i32 (\d+))");
  std::string text = read_file(ll);
  std::smatch m;
  if (!std::regex_search(text, m, constant)) {
    cleanup();
    fail(ErrorKind::Internal, template_bc.string() + " defines no __oclc_ISA_version: cannot make " + out.string());
  }
  text.replace(size_t(m.position(1)), size_t(m.length(1)), std::to_string(amd_isa_version(arch)));
  write_file_atomic(ll, text);
  step(own_tools ? std::vector<std::string>{(tools / "llvm-as").string(), ll.string(), "-o", bc.string()}
                 : with(with({clang}, clang_ir), {"-c", ll.string(), "-o", bc.string()}));
  fs::rename(bc, out, ec);
  cleanup();
  if (!fs::is_regular_file(out)) fail(ErrorKind::Io, "cannot write " + out.string() + ": " + ec.message());
}

// Held while a device-library folder is looked up or made (make_isa_version_bc's files are per process).
std::mutex& device_libs_mutex() {
  static std::mutex m;
  return m;
}

// One folder per installed library set and clang, in the kernel cache: links to every installed library
// (`installed`), plus `arch`'s ISA-version library made with the clang tools in `tools` (once, by whichever
// process comes first).
fs::path device_lib_folder(const fs::path& installed, const fs::path& tools, const std::string& arch) {
  std::vector<std::string> names;
  fs::path template_bc;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(installed, ec))
    if (e.path().extension() == ".bc") {
      names.push_back(e.path().filename().string());
      const bool isa = names.back().rfind("oclc_isa_version_", 0) == 0;
      if (isa && (template_bc.empty() || names.back() < template_bc.filename().string())) template_bc = e.path();
    }
  std::sort(names.begin(), names.end());
  uint64_t key = fnv1a(fnv1a(kFnvBasis, installed.string()), tools.string());
  for (const auto& n : names) key = fnv1a(key, n);
  if (template_bc.empty())
    fail(ErrorKind::NoDevice, installed.string() + " holds no oclc_isa_version_*.bc to make " + arch + "'s from");
  const fs::path dir = kernel_cache_root() / ("rocm-device-libs-" + hex8(key));
  ensure_private_dir(kernel_cache_root());
  if (!fs::is_directory(dir)) {
    const fs::path tmp = dir.string() + ".tmp." + std::to_string(::getpid());
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    for (const auto& n : names) fs::create_symlink(installed / n, tmp / n, ec);
    if (ec) fail(ErrorKind::Io, "cannot fill " + tmp.string() + ": " + ec.message());
    fs::rename(tmp, dir, ec);  // another process may have won the race: then its folder is used
    if (ec) fs::remove_all(tmp, ec);
  }
  make_isa_version_bc(tools, template_bc, arch, dir);
  return dir;
}

}  // namespace

int amd_isa_version(std::string_view arch) {
  const std::string_view digits = arch.substr(std::min<size_t>(3, arch.size()));
  if (arch.substr(0, 3) != "gfx" || digits.size() < 3 || digits.size() > 4 ||
      digits.find_first_not_of("0123456789abcdef") != std::string_view::npos ||
      digits.substr(0, digits.size() - 2).find_first_not_of("0123456789") != std::string_view::npos)
    fail(ErrorKind::BadInput, "'" + std::string(arch) + "' is not an AMD arch name like gfx1100 or gfx90a");
  const auto hex = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  const size_t n = digits.size();
  return std::stoi(std::string(digits.substr(0, n - 2))) * 1000 + hex(digits[n - 2]) * 100 + hex(digits[n - 1]);
}

std::optional<fs::path> hip_device_lib_dir(const fs::path& hipcc, const std::string& arch) {
  static std::map<std::pair<fs::path, std::string>, std::optional<fs::path>> known;
  std::lock_guard lock(device_libs_mutex());
  if (auto it = known.find({hipcc, arch}); it != known.end()) return it->second;
  // What the driver would run, without running it: the libraries it links, or why it cannot.
  const std::string dry = process_output({hipcc.string(), "-x", "hip", "--offload-arch=" + arch, "--cuda-device-only",
                                          "-c", "/dev/null", "-o", "/dev/null", "-###"})
                              .value_or("");
  if (dry.find("invalid target ID") != std::string::npos ||
      dry.find("nsupported CUDA gpu architecture") != std::string::npos)  // older clangs' wording
    unknown_target(arch, dry);
  std::optional<fs::path> dir;
  if (dry.find("cannot find ROCm device library") != std::string::npos) {
    // The driver still names the libraries it found (hip.bc) and the clang it runs ("-cc1").
    static const std::regex hip_bc(R"re("([^"]*)/hip\.bc")re"), cc1(R"re("([^"]*)/clang[^"/]*" "-cc1")re");
    std::smatch lib, clang;
    if (!std::regex_search(dry, lib, hip_bc) || !std::regex_search(dry, clang, cc1))
      fail(ErrorKind::NoDevice, "hipcc finds no ROCm device library for " + arch +
                                    " and does not say where its others are:\n  " +
                                    dry.substr(0, dry.find('\n', dry.find("error"))));
    dir = device_lib_folder(lib[1].str(), clang[1].str(), arch);
  }
  return known[{hipcc, arch}] = dir;
}

bool prefers_newer_clang(std::string_view arch) {
  return std::any_of(std::begin(kNewerTargets), std::end(kNewerTargets),
                     [&](const NewerTarget& t) { return t.arch == arch && t.clang <= 19; });
}

std::optional<fs::path> kernel_newer_clang() {
  std::optional<fs::path> clang;
  if (const char* env = std::getenv("TEMPER_HIP_CLANG"); env && *env)
    clang = executable(env) ? std::optional<fs::path>(env) : std::nullopt;
  else if (!(clang = on_path("clang++-19", {})) && executable("/usr/lib/llvm-19/bin/clang++"))
    clang = "/usr/lib/llvm-19/bin/clang++";
  std::error_code ec;
  if (clang && !executable(fs::canonical(*clang, ec).parent_path() / "ld.lld")) return std::nullopt;  // lld-19
  return clang;
}

fs::path clang_device_lib_dir(const fs::path& clang, const std::string& arch) {
  std::lock_guard lock(device_libs_mutex());
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("TEMPER_ROCM_DEVICE_LIBS"); env && *env) {
    candidates.push_back(env);
  } else {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/usr/lib", ec))  // Debian: /usr/lib/<multiarch>/amdgcn/bitcode
      if (e.is_directory(ec)) candidates.push_back(e.path() / "amdgcn" / "bitcode");
    std::sort(candidates.begin(), candidates.end());
    candidates.push_back("/opt/rocm/amdgcn/bitcode");
  }
  const auto found = std::find_if(candidates.begin(), candidates.end(),
                                  [](const fs::path& d) { return fs::is_regular_file(d / "hip.bc"); });
  if (found == candidates.end())
    fail(ErrorKind::NoDevice, "compiling " + arch + " needs ROCm's device libraries (hip.bc), found in none of " +
                                  candidates.front().string() + (candidates.size() > 1 ? ", ..." : "") +
                                  " (Debian: package rocm-device-libs; or set TEMPER_ROCM_DEVICE_LIBS)");
  if (fs::is_regular_file(*found / ("oclc_isa_version_" + arch.substr(3) + ".bc"))) return *found;
  std::error_code ec;
  return device_lib_folder(*found, fs::canonical(clang, ec).parent_path(), arch);
}

bool kernel_type_supported(GgmlType type) {
  static constexpr uint32_t ids[] = {TEMPER_KERNEL_TYPE_IDS};
  return std::find(std::begin(ids), std::end(ids), static_cast<uint32_t>(type)) != std::end(ids);
}

std::vector<KernelPair> all_kernel_pairs(std::span<const int> ncols) {
  std::vector<KernelPair> out;
  for (const TypeInfo& t : all_types())
    if (kernel_type_supported(t.type))
      for (int n : ncols) out.push_back({t.type, n});
  return out;
}

std::optional<fs::path> kernel_compiler(KernelToolchain toolchain) {
  const bool hip = toolchain == KernelToolchain::Hip;
  if (const char* env = std::getenv(hip ? "TEMPER_HIPCC" : "TEMPER_NVCC"); env && *env)
    return executable(env) ? std::optional<fs::path>(env) : std::nullopt;
  const fs::path built = hip ? TEMPER_BUILD_HIPCC : TEMPER_BUILD_NVCC;
  if (executable(built)) return built;
  return hip ? on_path("hipcc", {"/opt/rocm/bin"}) : on_path("nvcc", {"/usr/local/cuda/bin"});
}

fs::path kernel_cache_root() {
  if (const char* env = std::getenv("TEMPER_KERNEL_CACHE"); env && *env) return env;
  return user_cache_dir("kernels");
}

KernelCache::KernelCache(KernelToolchain toolchain, std::string arch, KernelArtifact artifact)
    : toolchain_(toolchain), arch_(std::move(arch)), artifact_(artifact) {
  if (arch_.empty() || arch_.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
    fail(ErrorKind::BadInput, "kernel arch '" + arch_ + "': expected a name like gfx90a or sm_90");
  if (artifact_ == KernelArtifact::CodeObject && toolchain_ != KernelToolchain::Hip)
    fail(ErrorKind::Internal, "code objects for static analysis exist for AMD (HIP) only");
  const bool hip = toolchain_ == KernelToolchain::Hip;
  const char* hipcc_env = std::getenv("TEMPER_HIPCC");
  wants_newer_clang_ = hip && artifact_ == KernelArtifact::CodeObject && prefers_newer_clang(arch_) && !(hipcc_env && *hipcc_env);
  auto compiler = wants_newer_clang_ ? kernel_newer_clang() : std::nullopt;
  newer_clang_ = compiler.has_value();
  if (!compiler) compiler = kernel_compiler(toolchain_);  // a ROCm hipcc may know the target: ensure() asks it
  if (!compiler)
    fail(ErrorKind::NoDevice, std::string("compiling ") + arch_ + " kernels needs " + (hip ? "hipcc" : "nvcc") +
                                  ", which is not installed (set " + (hip ? "TEMPER_HIPCC" : "TEMPER_NVCC") +
                                  " to its path)");
  compiler_ = *compiler;
  // The compiler's identity: its path and version text (a new ROCm or CUDA gets new entries).
  // Running `hipcc --version` costs seconds, so its hash is kept on disk per (path, size, mtime).
  static std::mutex m;
  static std::vector<std::pair<fs::path, uint64_t>> versions;
  uint64_t compiler_hash = 0;
  {
    std::lock_guard lock(m);
    auto it = std::find_if(versions.begin(), versions.end(), [&](const auto& v) { return v.first == compiler_; });
    if (it == versions.end()) {
      std::error_code ec;
      const fs::path real = fs::canonical(compiler_, ec);
      const auto size = fs::file_size(real, ec);
      const auto mtime = fs::last_write_time(real, ec).time_since_epoch().count();
      const std::string stat_key = real.string() + ":" + std::to_string(size) + ":" + std::to_string(mtime);
      const fs::path memo = kernel_cache_root() / ("compiler-" + hex8(fnv1a(kFnvBasis, stat_key)) + ".id");
      std::ifstream in(memo);
      std::string known;
      if (!(in >> known) || known.size() != 16) {
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(
            fnv1a(kFnvBasis, compiler_.string()), process_output({compiler_.string(), "--version"}).value_or(""))));
        known = buf;
        try {
            ensure_private_dir(memo.parent_path());
            write_file_atomic(memo, known + "\n");
          } catch (const Error&) {  // a read-only cache still works, only slower
          }
      }
      it = versions.insert(versions.end(), {compiler_, std::stoull(known, nullptr, 16)});
    }
    compiler_hash = it->second;
  }
  static const uint64_t sources = source_hash();
  dir_ = kernel_cache_root() / (std::string(toolchain_name(toolchain_)) + "-" + arch_ + "-" + hex8(compiler_hash) + "-" +
                                hex8(sources));
  sources_ = dir_ / "src";
}

std::string kernel_pair_name(const KernelPair& p) {
  return std::string(type_name(p.type)) + (p.group_b ? "+" + std::string(type_name(*p.group_b)) + " group" : "") +
         " ncols " + std::to_string(p.ncols);
}

namespace {
std::string unit_stem(const KernelPair& p) {
  const std::string id = std::to_string(static_cast<uint32_t>(p.type)), nc = std::to_string(p.ncols);
  return p.group_b ? "mmvq_group_" + id + "_" + std::to_string(static_cast<uint32_t>(*p.group_b)) + "_nc" + nc
                   : "mmvq_" + id + "_nc" + nc;
}
}  // namespace

fs::path KernelCache::path(KernelPair pair) const {
  return dir_ / (unit_stem(pair) + (artifact_ == KernelArtifact::SharedLibrary ? ".so" : ".co"));
}

bool KernelCache::cached(KernelPair pair) const {
  std::error_code ec;
  return fs::is_regular_file(path(pair), ec);
}

std::vector<std::string> KernelCache::command(KernelPair pair, const fs::path& src, const fs::path& out) const {
  (void)pair;
  const std::string inc = sources_.string();
  std::vector<std::string> c{compiler_.string()};
  if (toolchain_ == KernelToolchain::Hip) {
    c.insert(c.end(), {"-x", "hip", "-std=c++20", "-O3", "-DNDEBUG", "--offload-arch=" + arch_});
    if (device_libs_) c.push_back("--rocm-device-lib-path=" + device_libs_->string());
    if (artifact_ == KernelArtifact::SharedLibrary)
      c.insert(c.end(), {"-fPIC", "-shared"});
    else
      c.insert(c.end(), {"--cuda-device-only", "-c"});
    if (newer_clang_) c.push_back("--no-gpu-bundle-output");  // a bare code object: clang-19 has no bundler
  } else {
    c.insert(c.end(), {"-x", "cu", "-std=c++17", "-O3", "-DNDEBUG", "-DTEMPER_GPU_CUDA", "-arch=" + arch_,
                       "-Xcompiler", "-fPIC", "-shared", "-cudart", "shared"});
  }
  c.insert(c.end(), {"-I" + inc, "-I" + inc + "/kernels", "-I" + inc + "/core/common/include", "-I" + inc + "/core/quant/include",
                     src.string(), "-o", out.string()});
  return c;
}

std::vector<fs::path> KernelCache::ensure(std::span<const KernelPair> pairs, const CompileProgressFn& progress,
                                          const std::atomic<bool>* cancel, int jobs) {
  const auto start = std::chrono::steady_clock::now();
  // Nothing is loaded from, compiled into or run out of a folder another user could have planted.
  ensure_private_dir(dir_.parent_path());
  ensure_private_dir(dir_);
  std::vector<fs::path> out;
  std::vector<KernelPair> missing;
  for (const KernelPair& p : pairs) {
    if (!kernel_type_supported(p.type) || (p.group_b && !kernel_type_supported(*p.group_b)) || p.ncols < 1 ||
        p.ncols > (p.group_b ? mmvq::kGroupMaxNcols : 8))
      fail(ErrorKind::BadInput, "no mmvq kernel source for " + kernel_pair_name(p));
    out.push_back(path(p));
    if (!cached(p) && std::find(missing.begin(), missing.end(), p) == missing.end()) missing.push_back(p);
  }
  // Before any progress: a target the compiler does not know is one line, not a started compile.
  if (!missing.empty() && toolchain_ == KernelToolchain::Hip) try {
      device_libs_ = newer_clang_ ? clang_device_lib_dir(compiler_, arch_) : hip_device_lib_dir(compiler_, arch_);
    } catch (const Error& e) {
      const auto t = std::find_if(std::begin(kNewerTargets), std::end(kNewerTargets), [&](const NewerTarget& n) { return n.arch == arch_; });
      if (!wants_newer_clang_ || e.kind() != ErrorKind::BadInput || t == std::end(kNewerTargets)) throw;
      const char* env = std::getenv("TEMPER_HIP_CLANG");
      fail(ErrorKind::BadInput, arch_ + " (" + std::string(t->family) + "): the installed hipcc does not know this target; " +
                                    "Debian 12's packages clang-19 and lld-19 compile its code objects (apt-get install " +
                                    "clang-19 lld-19" +
                                    (env && *env ? std::string("; TEMPER_HIP_CLANG=") + env + " is not a clang++ with ld.lld beside it"
                                                 : std::string()) + ")");
    }
  const int n = std::max(1, std::min<int>(jobs > 0 ? jobs : int(std::max(1u, std::thread::hardware_concurrency())),
                                          int(missing.size())));
  // Until the first unit is done, the ETA comes from how long one unit took in the last compile here.
  const fs::path unit_seconds = kernel_cache_root() / "unit-seconds";
  double known_unit_s = 0;
  std::ifstream(unit_seconds) >> known_unit_s;
  CompileProgress state;
  state.total = int(pairs.size());
  state.done = state.cached = int(pairs.size() - missing.size());
  if (known_unit_s > 0) state.eta_s = known_unit_s * double((missing.size() + size_t(n) - 1) / size_t(n));
  if (progress) progress(state);
  if (missing.empty()) return out;

  // The embedded sources, once per source hash (written aside, then renamed into place).
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail(ErrorKind::Io, "cannot create the kernel cache " + dir_.string() + ": " + ec.message());
  if (!fs::is_regular_file(sources_ / ".complete", ec)) {
    const fs::path tmp = dir_ / ("src.tmp." + std::to_string(::getpid()));
    fs::remove_all(tmp, ec);
    for (size_t i = 0; i < detail::kKernelSourceCount; ++i) {
      const fs::path f = tmp / detail::kKernelSources[i].path;
      fs::create_directories(f.parent_path(), ec);
      write_file_atomic(f, detail::kKernelSources[i].text);
    }
    write_file_atomic(tmp / ".complete", "");
    fs::rename(tmp, sources_, ec);  // another process may have won the race: then its copy is used
    if (ec) fs::remove_all(tmp, ec);
  }

  const std::string instance = std::string(embedded("kernels/mmvq_instance.hip.in"));
  const std::string ext = toolchain_ == KernelToolchain::Hip ? ".hip" : ".cu";
  std::mutex m;
  std::atomic<size_t> next{0};
  std::string failure;
  bool cancelled = false;
  double unit_total_s = 0;  // wall seconds of the units compiled, each on its own
  int unit_count = 0;
  auto compile_all = [&] {
    for (size_t i; (i = next++) < missing.size();) {
      {
        std::lock_guard lock(m);
        if (!failure.empty() || cancelled) return;
      }
      const KernelPair p = missing[i];
      const std::string id = std::to_string(static_cast<uint32_t>(p.type)), nc = std::to_string(p.ncols);
      const std::string stem = unit_stem(p);
      const fs::path src = sources_ / (stem + ext);
      if (!fs::is_regular_file(src) && p.group_b)
        write_file_atomic(src, replace_all(replace_all(replace_all(std::string(embedded(kGroupUnit)), "@A@", id), "@B@",
                                                       std::to_string(static_cast<uint32_t>(*p.group_b))),
                                           "@NC@", nc));
      else if (!fs::is_regular_file(src))
        write_file_atomic(src, replace_all(replace_all(instance, "@TEMPER_TYPE_ID@", id), "@TEMPER_NCOLS@", nc) +
                                   "#define TEMPER_RTC_NCOLS " + nc + "\n#define TEMPER_RTC_TABLE temper::kernels::mmvq_table_" +
                                   id + "_" + nc + "\n" + std::string(embedded(kEntryPoints)));
      const std::string unique = "." + std::to_string(::getpid()) + "." + std::to_string(i);
      const fs::path final_path = path(p), tmp = final_path.string() + unique + ".tmp", log = dir_ / (stem + unique + ".log");
      const fs::path tmpdir = dir_ / (stem + unique + ".tmpdir");
      std::error_code e;
      fs::create_directories(tmpdir, e);
      const auto unit_start = std::chrono::steady_clock::now();
      const int rc = run_compiler(command(p, src, tmp), log, tmpdir, cancel);
      fs::remove_all(tmpdir, e);
      std::lock_guard lock(m);
      if (rc == 0) {
        unit_total_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - unit_start).count();
        ++unit_count;
        fs::rename(tmp, final_path, e);
        fs::remove(log, e);
        ++state.done;
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const int compiled = state.done - state.cached, left = state.total - state.done;
        state.elapsed_s = elapsed;
        state.eta_s = compiled > 0 ? elapsed / compiled * left : 0;
        state.current = kernel_pair_name(p);
        if (progress) progress(state);
      } else {
        fs::remove(tmp, e);
        if (rc < 0) {
          cancelled = true;
          fs::remove(log, e);
        } else if (failure.empty()) {
          failure = "compiling the " + kernel_pair_name(p) + " kernels for " + arch_ +
                    " failed (" + compiler_.filename().string() + " exit " + std::to_string(rc) + ", log " +
                    log.string() + "):\n  " + first_lines(log, 6);
        }
      }
    }
  };
  auto worker = [&] {  // an exception must not leave a thread: it becomes the failure
    try {
      compile_all();
    } catch (const std::exception& e) {
      std::lock_guard lock(m);
      if (failure.empty()) failure = std::string("kernel compilation for ") + arch_ + ": " + e.what();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (cancelled || (cancel && cancel->load())) fail(ErrorKind::Cancelled, "kernel compilation cancelled");
  if (!failure.empty()) fail(ErrorKind::Internal, failure);
  if (unit_count > 0) try {
      write_file_atomic(unit_seconds, std::to_string(unit_total_s / unit_count) + "\n");
    } catch (const Error&) {  // a read-only cache only loses the first ETA
    }
  return out;
}

std::string compile_progress_text(const CompileProgress& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d/%d kernels compiled%s, %.0f s%s", p.done, p.total,
                p.cached ? (" (" + std::to_string(p.cached) + " cached)").c_str() : "", p.elapsed_s,
                p.done < p.total && p.eta_s > 0 ? (", about " + std::to_string(int(p.eta_s + 0.5)) + " s left").c_str()
                                                : "");
  return buf;
}

}  // namespace temper
