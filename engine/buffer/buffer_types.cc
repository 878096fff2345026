#include "engine/buffer/buffer_types.h"

#include <array>
#include <utility>

namespace pmcached::buffer {
namespace {

constexpr std::array<std::pair<std::string_view, PageTableKind>, 2> kPageTables{{
    {"hash", PageTableKind::kHash},
    {"swizzle", PageTableKind::kSwizzle},
}};

constexpr std::array<std::pair<std::string_view, EvictionKind>, 5> kEvictions{{
    {"random", EvictionKind::kRandom},
    {"clock", EvictionKind::kClock},
    {"gclock", EvictionKind::kGClock},
    {"car", EvictionKind::kCar},
    {"lru", EvictionKind::kLru},
}};

template <typename Kind, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, Kind>, N>& names,
                         Kind kind) noexcept {
  for (const auto& [name, value] : names) {
    if (value == kind) return name;
  }
  return "?";
}

template <typename Kind, std::size_t N>
std::optional<Kind> parse(const std::array<std::pair<std::string_view, Kind>, N>& names,
                          std::string_view text) noexcept {
  for (const auto& [name, value] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view page_table_name(PageTableKind kind) noexcept { return name_of(kPageTables, kind); }
std::optional<PageTableKind> parse_page_table(std::string_view name) noexcept {
  return parse(kPageTables, name);
}
std::string_view eviction_name(EvictionKind kind) noexcept { return name_of(kEvictions, kind); }
std::optional<EvictionKind> parse_eviction(std::string_view name) noexcept {
  return parse(kEvictions, name);
}

}  // namespace pmcached::buffer
