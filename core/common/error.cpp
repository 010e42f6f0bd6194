#include "temper/error.h"

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

}  // namespace temper
