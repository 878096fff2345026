// Spread: the median and the range of a benchmark figure over its repetitions, and the text
// "median [min-max]" the buffer benchmark prints in its tables.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace pmcached::bench {

struct Spread {
  double median = 0, min = 0, max = 0;
};

// `values` must not be empty.
[[nodiscard]] Spread spread(std::vector<double> values);

// "median [min-max]", each number printed with `fmt` (a printf format for one double).
[[nodiscard]] std::string format_spread(const Spread& s, const char* fmt);

}  // namespace pmcached::bench
