// The parse loop makes no heap allocation per command once its buffers are warm.
//
// This replaces the global operator new to count allocations, so it is its own executable
// and is not built with sanitizers (they replace operator new themselves).
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include <gtest/gtest.h>

#include "protocol/parser.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace pmcached::protocol {
namespace {

TEST(ParserAllocation, ParsingMakesNoHeapAllocationOnceWarm) {
  const std::string input =
      "set a 0 0 5\r\nhello\r\nget a b c\r\ngats 0 a b\r\ncas a 0 0 1 12345\r\nq\r\n"
      "incr n 5\r\ndelete a noreply\r\nflush_all 10\r\nstats items\r\n"
      "mg foo v s f t c k Oabc\r\nms Zm9v 2 b F1 T60 MA\r\nhi\r\nmd foo q C5\r\n"
      "ma foo N0 J1 D2 MD v\r\nmn\r\nget " +
      std::string(40, 'k') + " b c d e f g h i j\r\n";
  Parser parser;
  Command c;
  auto parse_all = [&] {
    std::string_view rest = input;
    while (!rest.empty()) {
      const ParseResult r = parser.parse(rest, c);
      ASSERT_EQ(r.status, ParseStatus::kComplete) << rest;
      rest.remove_prefix(r.consumed);
    }
  };
  parse_all();  // warm-up: the keys, flags and decoded-key buffers grow once
  const long before = g_allocations.load();
  parse_all();
  EXPECT_EQ(g_allocations.load() - before, 0);
}

}  // namespace
}  // namespace pmcached::protocol
