// store_bench's option parsing: engine specs with a page table and a b2tree threshold, and key
// files as scripts/make-keysets.py writes them (and what they must refuse).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "bench/engine_spec.h"
#include "bench/key_file.h"

namespace pmcached::bench {
namespace {

TEST(EngineSpec, PlainEngineIsNotPagedAndHasNoThreshold) {
  const EngineSpec spec = parse_engine_spec("dram");
  EXPECT_EQ(spec.engine, "dram");
  EXPECT_EQ(spec.label, "dram");
  EXPECT_FALSE(spec.paged);
  EXPECT_FALSE(spec.b2_threshold);
}

TEST(EngineSpec, PagedEngineTakesPageTableAndThresholdInEitherOrder) {
  const EngineSpec a = parse_engine_spec("bptree:swizzle:t16");
  EXPECT_TRUE(a.paged);
  EXPECT_EQ(a.engine, "bptree");
  EXPECT_EQ(a.page_table, buffer::PageTableKind::kSwizzle);
  EXPECT_EQ(a.b2_threshold, 16u);
  const EngineSpec b = parse_engine_spec("bptree:t128");
  EXPECT_EQ(b.page_table, buffer::PageTableKind::kHash);
  EXPECT_EQ(b.b2_threshold, 128u);
  EXPECT_EQ(parse_engine_spec("bptree:t8:swizzle").page_table, buffer::PageTableKind::kSwizzle);
}

TEST(EngineSpec, RefusesUnknownEngineOptionsOfVolatileEnginesAndBadThresholds) {
  EXPECT_THROW((void)parse_engine_spec("nosuch"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("dram:hash"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("bptree:t1"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("bptree:t99999"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("bptree:tx"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("bptree:t8:t16"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("bptree:hash:swizzle"), std::invalid_argument);
  EXPECT_THROW((void)parse_engine_spec("bptree:"), std::invalid_argument);
}

class KeyFile : public ::testing::Test {
 protected:
  void write(const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_ = ::testing::TempDir() + "key_file_test." + std::to_string(::getpid());
};

TEST_F(KeyFile, ReadsKeysInOrderWithHighBytesAndWithoutFinalNewline) {
  write("https://a.org/x\nList_of_b\n\xC3\xA9t\xFF~");
  const auto keys = read_key_file(path_);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], "https://a.org/x");
  EXPECT_EQ(keys[1], "List_of_b");
  EXPECT_EQ(keys[2], "\xC3\xA9t\xFF~");
}

TEST_F(KeyFile, LimitTakesTheFirstKeys) {
  write("a\nb\nc\n");
  EXPECT_EQ(read_key_file(path_, 2), (std::vector<std::string>{"a", "b"}));
}

TEST_F(KeyFile, RefusesKeysMemcachedCannotCarry) {
  for (const std::string& bad :
       {std::string("a\n\nb\n"), std::string("a b\n"), std::string("a\r\n"), std::string("a\x7f\n"),
        std::string(251, 'k') + "\n", std::string("x\ny\nx\n"), std::string("")}) {
    write(bad);
    EXPECT_THROW((void)read_key_file(path_), std::runtime_error) << bad;
  }
  write(std::string(250, 'k') + "\n");
  EXPECT_EQ(read_key_file(path_).size(), 1u);
}

TEST(KeyFileMissing, IsAnError) {
  EXPECT_THROW((void)read_key_file("/nonexistent/keys"), std::runtime_error);
}

}  // namespace
}  // namespace pmcached::bench
