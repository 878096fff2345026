#include "bench/machine_info.h"

#include <fstream>
#include <thread>

namespace pmcached::bench {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

unsigned cpu_count() { return std::thread::hardware_concurrency(); }

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

std::string build_type() {
#ifdef PMCACHED_BUILD_TYPE
  std::string type = PMCACHED_BUILD_TYPE;
#else
  std::string type = "unknown";
#endif
#ifndef NDEBUG
  type += "+asserts";
#endif
  return type;
}

}  // namespace pmcached::bench
