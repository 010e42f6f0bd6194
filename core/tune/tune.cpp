// `temper tune`: the steps in order, each skipped while its input is unchanged, in one journal.
#include "temper/tune.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "steps.h"

#include "temper/engine.h"
#include "temper/error.h"
#include "temper/fileio.h"
#include "temper/input.h"

namespace temper::tune {
namespace fs = std::filesystem;
using nlohmann::json;

std::string_view step_name(Step s) {
  switch (s) {
    case Step::Check: return "check";
    case Step::Patch: return "patch";
    case Step::Build: return "build";
    case Step::Sweep: return "sweep";
    case Step::Approve: return "approve";
    case Step::Install: return "install";
    case Step::Crossover: return "crossover";
    case Step::Groups: return "groups";
    case Step::Pipeline: return "pipeline";
    case Step::Replay: return "replay";
    case Step::Token: return "token";
    case Step::Bench: return "bench";
  }
  return "?";
}

namespace {

constexpr std::string_view kMagic = "temper-tune-journal";
constexpr int kVersion = 1;

// A path as text for journals and messages (bytes that are not UTF-8 as \xNN: JSON takes only UTF-8).
std::string absolute_text(const fs::path& p) { return p.empty() ? std::string() : path_text(fs::absolute(p).lexically_normal()); }

// An exclusive lock on a state folder (flock on its "tune.lock"), held while the tune runs.
class StateLock {
 public:
  explicit StateLock(const fs::path& dir) {
    const fs::path path = dir / "tune.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) fail(ErrorKind::Io, "cannot open " + path_text(path) + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fail(ErrorKind::BadInput, "another temper tune of this model and engine is running (its state folder " +
                                    path_text(dir) + " is locked): wait for it to end, or stop it");
    }
  }
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;
  ~StateLock() { ::close(fd_); }

 private:
  int fd_ = -1;
};

// Tune reads the profile back and rewrites it in place several times: it must be a regular file (or
// a new path) in a folder that takes a file; anything else is refused before the first step.
void check_profile_output(const fs::path& profile) {
  struct stat st{};
  if (::stat(profile.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(ErrorKind::BadInput, path_text(profile) + " is " + node_kind(st.st_mode) +
                                  ": tune's profile must be a regular file (it is read back and merged as tune goes)");
  std::error_code ec;
  if (const fs::path dir = profile.parent_path(); !dir.empty()) fs::create_directories(dir, ec);
  check_output(profile);
}

// The arch of the sweep's (one) device.
std::string session_arch(const Session& s) { return s.devices.empty() ? std::string() : s.devices.front().info.arch; }

// Options refused before anything runs, each in one line.
void check_options(const TuneOptions& o) {
  if (o.model.empty()) fail(ErrorKind::BadInput, "expected a model file (MODEL.gguf)");
  if (o.engine_src.empty() == o.probe.empty())
    fail(ErrorKind::BadInput, "expected --engine-src DIR (a ggml / llama.cpp tree) or --probe PATH (a ready temper-probe), one of them");
  if (o.patch && o.engine_src.empty()) fail(ErrorKind::BadInput, "--patch needs --engine-src DIR (the tree to patch)");
  if (!o.probe.empty()) ::close(open_input(o.probe, detail::kMaxProbeBytes, "temper-probe").fd);  // a FIFO or a device: refused now
  if (o.bench) {  // before the long steps, not after them
    engine::check_bench_binaries(*o.bench);
    engine::parse_bench_tests(o.bench->tests);
  }
}

}  // namespace

fs::path state_dir(const TuneOptions& o) {
  return user_cache_dir("tune") / detail::digest({absolute_text(o.model), absolute_text(o.engine_src.empty() ? o.probe : o.engine_src)});
}

Profile install_profile(const Profile& current, const Profile& tuned, const Session& session) {
  std::set<ProfileKey> measured;
  for (const Verdict& v : session.verdicts)
    if (const SessionDevice* d = find_device(session, v.device))
      measured.insert(ProfileKey(d->info.arch, v, v.ncols, profile_device(d->info)));
  Profile p = current;
  std::erase_if(p.entries, [&](const ProfileEntry& e) { return measured.count(e.key) || find_entry(tuned, e.key); });
  p.entries.insert(p.entries.end(), tuned.entries.begin(), tuned.entries.end());
  std::sort(p.entries.begin(), p.entries.end(), [](const ProfileEntry& a, const ProfileEntry& b) { return a.key < b.key; });
  for (const auto& s : tuned.sessions)
    if (std::find(p.sessions.begin(), p.sessions.end(), s) == p.sessions.end()) p.sessions.push_back(s);
  // "model" is informative: the names of the models whose entries the file holds, once each.
  std::vector<std::string> models;
  std::stringstream names(p.model);
  for (std::string m; std::getline(names, m, ',');)
    if (const size_t b = m.find_first_not_of(' '); b != std::string::npos) models.push_back(m.substr(b));
  if (std::find(models.begin(), models.end(), tuned.model) == models.end()) models.push_back(tuned.model);
  p.model.clear();
  for (const auto& m : models) p.model += (p.model.empty() ? "" : ", ") + m;
  p.source = std::string(kSourceTemper);
  return p;
}

namespace {

// The tune: its state folder locked, its journal open, then the steps in order (steps.h).
TuneReport run_steps(const TuneOptions& o, const TuneEvents& ev) {
  using namespace detail;
  check_options(o);
  const std::atomic<bool> never{false};
  const GgufFile file = GgufFile::open(o.model);
  const ModelIdentity identity = model_identity(describe_model(file));

  TuneReport report;
  report.state_dir = state_dir(o);
  ensure_private_dir(report.state_dir.parent_path());
  ensure_private_dir(report.state_dir);
  // One tune per (model, engine) at a time: the second is refused at once, in one line.
  const StateLock state_lock(report.state_dir);
  report.journal = report.state_dir / "tune.journal";
  report.session = report.state_dir / "sweep.session.json";
  report.profile = o.output.empty() ? engine::default_engine_profile() : o.output;
  check_profile_output(report.profile);
  TuneLog log(report.journal, json{{"journal", kMagic}, {"journal_version", kVersion}, {"model", absolute_text(o.model)},
                                   {"engine", absolute_text(o.engine_src.empty() ? o.probe : o.engine_src)}});
  TuneContext c{o, ev, o.cancel ? *o.cancel : never, file, identity, report, log};

  run_step(c, Step::Check, "the engine tree", check_step);
  run_step(c, Step::Patch, "the tree in place", patch_step);
  run_step(c, Step::Build, "the hooked engine and temper-probe", build_step);
  c.grid = sweep_grid(o);  // a bad --ncols is refused before the sweep starts
  run_step(c, Step::Sweep, "every launch config of the model's launches in the engine", sweep_step);
  c.arch = session_arch(c.session);
  run_step(c, Step::Approve, std::string("winners by policy (") + (o.approve_all ? "all" : "significant") + ")", approve_step);
  run_step(c, Step::Install, "the profile where the engine reads it", install_step);
  run_step(c, Step::Crossover, "mmvq or mmq per type at batch widths 2..8, in the engine", crossover_step);
  note_other_models_paths(c);
  run_step(c, Step::Groups, "same-input groups (q, k, v as one launch) at batch widths 1..4, in the engine", groups_step);
  run_step(c, Step::Replay, "one decode token's GEMVs in the engine, stock vs the profile", replay_step);
  run_step(c, Step::Pipeline,
           "every one-column launch pipelined (the next kernel launches early, rows prefetched to L2): outputs in the replay, "
           "llama-bench decides",
           pipeline_step);
  run_step(c, Step::Token, "the heaviest launch families confirmed or changed by whole tokens in the engine's graph; the tg prediction",
           token_step);
  c.device.reset();  // the probe is done: llama-bench gets the GPU to itself
  run_step(c, Step::Bench, "llama-bench with and without the profile", bench_step);
  return report;
}

}  // namespace

TuneReport run_tune(const TuneOptions& o, const TuneEvents& ev) {
  // A journal record that does not read (damaged, or edited by hand) is one line naming the folder
  // whose removal starts the tune afresh.
  std::string what;
  try {
    return run_steps(o, ev);
  } catch (const nlohmann::json::exception& e) {
    what = "tune journal: a record that does not read: " + std::string(e.what());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::BadInput || std::string_view(e.what()).find("tune journal") == std::string_view::npos) throw;
    what = e.what();
  }
  fail(ErrorKind::BadInput, what + " (the tune's state folder " + path_text(state_dir(o)) +
                                " is damaged: delete it to start this tune afresh)");
}

}  // namespace temper::tune
