// The checksum in every page's PageHeader: the low 32 bits of XXH3-64 of the whole page with the
// checksum field taken as 0 (page file layout version 2; XXH32 before, at less than half the
// speed: a checkpoint checksums every page it writes). The buffer manager stamps it on every
// write-back and checks it on every read.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmcached::buffer {

[[nodiscard]] std::uint32_t page_checksum(const std::byte* page, std::size_t size) noexcept;

// Whether every byte of [bytes, bytes + size) is zero. A page the file was extended with but that
// was never written is all zero: it has no valid checksum and is read as an empty page (kind 0,
// LSN 0), as replay may meet such a page. A page logged whole leaves out its zero blocks
// (mini_transaction.h).
[[nodiscard]] bool all_zero(const std::byte* bytes, std::size_t size) noexcept;

}  // namespace pmcached::buffer
