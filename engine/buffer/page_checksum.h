// The checksum in every page's PageHeader: XXH32 of the whole page with the checksum field
// taken as 0. The buffer manager stamps it on every write-back and checks it on every read.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pmcached::buffer {

[[nodiscard]] std::uint32_t page_checksum(const std::byte* page, std::size_t size) noexcept;

// A page the file was extended with but that was never written: every byte zero. It has no
// valid checksum and is read as an empty page (kind 0, LSN 0): replay may meet such a page.
[[nodiscard]] bool page_is_zero(const std::byte* page, std::size_t size) noexcept;

}  // namespace pmcached::buffer
