// AlignedBuffer: bytes aligned to kIoAlignment, as O_DIRECT reads and writes need them.
//
// Thread safety: none of its own; a plain owned byte array.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "engine/buffer/page_file.h"

namespace pmcached::buffer {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // `bytes` zeroed bytes; `bytes` is rounded up to a multiple of kIoAlignment.
  explicit AlignedBuffer(std::size_t bytes) : size_(round_up(bytes)) {
    if (size_ == 0) return;
    void* p = std::aligned_alloc(kIoAlignment, size_);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, size_);
    data_.reset(static_cast<std::byte*>(p));
  }

  [[nodiscard]] std::byte* data() const noexcept { return data_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  static std::size_t round_up(std::size_t n) noexcept {
    return (n + kIoAlignment - 1) / kIoAlignment * kIoAlignment;
  }

  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
};

}  // namespace pmcached::buffer
