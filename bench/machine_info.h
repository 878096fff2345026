// What a benchmark prints about where it ran: CPU count and model (/proc/cpuinfo) and the build
// type it was compiled with.
//
// Thread safety: pure functions.
#pragma once

#include <string>

namespace pmcached::bench {

[[nodiscard]] std::string cpu_model();  // "unknown" where /proc/cpuinfo does not say
[[nodiscard]] unsigned cpu_count();
[[nodiscard]] std::string build_type();  // CMAKE_BUILD_TYPE, plus "+asserts" without NDEBUG

}  // namespace pmcached::bench
