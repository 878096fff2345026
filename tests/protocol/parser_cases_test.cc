// Runs every case of malformed_cases.txt (verified against memcached 1.6.18 by
// verify_cases_against_memcached.py): the parser's replies to the case followed by "mn"
// must be memcached's, byte for byte, whether the input arrives whole or byte by byte.
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/protocol/parser_test_util.h"

namespace pmcached::protocol::test {
namespace {

struct Case {
  int line = 0;
  std::string source;
  std::string input;
  std::string expected;
};

// gtest prints a failing parameter with this.
void PrintTo(const Case& c, std::ostream* os) {
  *os << "malformed_cases.txt:" << c.line << " " << c.source.substr(0, 80);
}

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  std::ifstream file(PMCACHED_MALFORMED_CASES);
  std::string line;
  int number = 0;
  while (std::getline(file, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    cases.push_back(Case{number, line.substr(0, tab), unescape(line.substr(0, tab)),
                         unescape(line.substr(tab + 1))});
  }
  return cases;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = load_cases();
  return cases;
}

TEST(MalformedCases, FileHasCases) { EXPECT_GE(all_cases().size(), 150u); }

class MalformedCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedCaseTest, RepliesLikeMemcachedWholeAndByteByByte) {
  const Case& c = GetParam();
  SCOPED_TRACE("malformed_cases.txt:" + std::to_string(c.line) + ": " + c.source.substr(0, 80));
  const std::string input = c.input + "mn\r\n";
  const StreamResult whole = run_stream(input, 0);
  EXPECT_EQ(whole.replies, c.expected + "MN\r\n");
  EXPECT_FALSE(whole.closed);
  ASSERT_EQ(whole.commands.size(), 1u) << "only the trailing mn may parse as a command";
  const StreamResult bytewise = run_stream(input, 1);
  EXPECT_EQ(bytewise.events, whole.events);
}

INSTANTIATE_TEST_SUITE_P(File, MalformedCaseTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return "line" + std::to_string(param_info.param.line);
                         });

}  // namespace
}  // namespace pmcached::protocol::test
