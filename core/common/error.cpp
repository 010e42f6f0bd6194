#include "temper/error.h"

#include <cerrno>
#include <cstring>

namespace temper {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Internal: return "internal error";
    case ErrorKind::BadInput: return "bad input";
    case ErrorKind::NoDevice: return "no device";
    case ErrorKind::GpuFault: return "GPU fault";
    case ErrorKind::Verification: return "verification failed";
    case ErrorKind::Io: return "I/O error";
    case ErrorKind::Cancelled: return "cancelled";
  }
  return "error";
}

void fail(ErrorKind kind, const std::string& what) { throw Error(kind, what); }

std::string errno_text() { return std::strerror(errno); }

}  // namespace temper
