// What a benchmark prints about where it ran: CPU count and model (/proc/cpuinfo), the build
// type it was compiled with and the load average around it.
//
// Thread safety: pure functions.
#pragma once

#include <string>

namespace pmcached::bench {

[[nodiscard]] std::string cpu_model();  // "unknown" where /proc/cpuinfo does not say
[[nodiscard]] unsigned cpu_count();
[[nodiscard]] std::string build_type();  // CMAKE_BUILD_TYPE, plus "+asserts" without NDEBUG
// "1.2 1.5 1.4": the 1, 5 and 15 minute load averages, "unknown" without /proc/loadavg.
[[nodiscard]] std::string load_average();

}  // namespace pmcached::bench
