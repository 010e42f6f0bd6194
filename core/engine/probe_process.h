#pragma once
// A temper-probe child process and the framing of core/engine/probe_protocol.h: one request, one
// answer, each wait bounded by a timeout. The child's stdin and stdout are one end of a Unix socket
// pair (so a dead child is an error on send, never SIGPIPE); its stderr goes to a log file.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "probe_protocol.h"

namespace temper::engine {

struct ProbeAnswer {
  int32_t status = 0;  // probe::ProbeStatus
  std::vector<uint8_t> payload;
};

class ProbeProcess {
 public:
  // Error(BadInput) for a missing or non-executable file; Error(GpuFault) when it cannot start.
  ProbeProcess(const std::filesystem::path& exe, const std::vector<std::string>& args, std::filesystem::path log,
               double timeout_s);
  ~ProbeProcess();  // Quit, then a short wait, then SIGKILL
  ProbeProcess(const ProbeProcess&) = delete;
  ProbeProcess& operator=(const ProbeProcess&) = delete;

  // Sends one request and waits for its answer. A death, a hang past the timeout or a garbled frame
  // kills the probe and throws Error(GpuFault) naming `what`, the last stderr lines and the log;
  // every later call throws that same error.
  ProbeAnswer request(uint32_t op, const std::vector<uint8_t>& payload, const std::string& what);

  const std::filesystem::path& log() const { return log_; }
  const std::filesystem::path& exe() const { return exe_; }
  // "; last stderr: ...; log: PATH" for error messages; the log is then kept.
  std::string stderr_context() const;
  bool dead() const { return !dead_reason_.empty(); }

 private:
  [[noreturn]] void die(const std::string& why);
  void send_all(const uint8_t* data, size_t size, double deadline, const std::string& what);
  void recv_all(uint8_t* data, size_t size, double deadline, const std::string& what);
  std::string exit_text();  // "exited with status 3" / "killed by signal 11" / "still running"

  std::filesystem::path exe_, log_;
  bool own_log_;                   // the default log: removed at the end unless an error named it
  mutable bool keep_log_ = false;  // set by stderr_context()
  double timeout_s_;
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::string dead_reason_;
};

}  // namespace temper::engine
