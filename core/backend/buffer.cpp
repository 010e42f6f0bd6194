#include "temper/backend.h"

namespace temper {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (owner_ && ptr_) owner_->release(ptr_);
  owner_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace temper
