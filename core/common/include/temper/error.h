#pragma once
// Typed errors shared by every part of core. The kind doubles as the CLI's exit code.
#include <stdexcept>
#include <string>

namespace temper {

enum class ErrorKind : int {
  Internal = 1,      // a bug in Temper
  BadInput = 2,      // unreadable or invalid file, option or value
  NoDevice = 3,      // no HIP or CUDA device (or the one asked for does not exist)
  GpuFault = 4,      // a runtime call or kernel failed on the device
  Verification = 5,  // a kernel's output disagreed with the CPU reference
  Io = 6,            // a file could not be read or written
  Cancelled = 7,     // the user stopped long work
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

[[noreturn]] void fail(ErrorKind kind, const std::string& what);

// strerror(errno) as a string, for the message of a failed system call.
std::string errno_text();

}  // namespace temper
