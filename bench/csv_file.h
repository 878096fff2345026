// open_csv: a benchmark's CSV output file, created with its header line; says on stderr why it
// could not be.
//
// Thread safety: a plain function; the FILE* is the caller's (fclose it).
#pragma once

#include <cstdio>
#include <string>

namespace pmcached::bench {

// nullptr (after one line on stderr) if `path` cannot be written.
[[nodiscard]] inline std::FILE* open_csv(const std::string& path, const char* header) {
  std::FILE* csv = std::fopen(path.c_str(), "w");
  if (csv == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return nullptr;
  }
  std::fputs(header, csv);
  return csv;
}

}  // namespace pmcached::bench
