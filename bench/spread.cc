#include "bench/spread.h"

#include <algorithm>
#include <cstdio>

namespace pmcached::bench {

Spread spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {median, values.front(), values.back()};
}

std::string format_spread(const Spread& s, const char* fmt) {
  char m[32], lo[32], hi[32], out[112];
  std::snprintf(m, sizeof m, fmt, s.median);
  std::snprintf(lo, sizeof lo, fmt, s.min);
  std::snprintf(hi, sizeof hi, fmt, s.max);
  std::snprintf(out, sizeof out, "%s [%s-%s]", m, lo, hi);
  return out;
}

}  // namespace pmcached::bench
