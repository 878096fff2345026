// CommandExecutor on the dram engine, driven through the real parser: request bytes in,
// reply bytes out, with a manual clock. Socket behaviour is covered by tests/integration.
#include "server/command_executor.h"

#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "engine/open_store.h"
#include "protocol/parser.h"

namespace pmcached::server {
namespace {

engine::StoreConfig dram_config() {
  engine::StoreConfig config;
  config.engine = "dram";
  return config;
}

// A manual clock that can also tick one second on every reading: the worst case of a command
// whose clock readings straddle a second boundary.
class TestClock final : public engine::Clock {
 public:
  [[nodiscard]] std::int64_t now() const noexcept override {
    return ticking_ ? now_.fetch_add(1) : now_.load();
  }
  void advance(std::int64_t seconds) noexcept { now_.fetch_add(seconds); }
  void tick_on_every_reading() noexcept { ticking_ = true; }

 private:
  mutable std::atomic<std::int64_t> now_{1'700'000'000};
  bool ticking_ = false;
};

class CommandExecutorTest : public ::testing::Test {
 protected:
  CommandExecutorTest()
      : opened_(engine::open_store(dram_config(), clock_)),
        stats_(1),
        context_{opened_->store(), stats_, options_, clock_.now(), {}, {}, nullptr},
        executor_(context_, stats_.thread(0)) {}

  // Feeds `request` through the parser and executor; returns every reply byte.
  std::string run(std::string_view request) {
    std::string out;
    protocol::Command command;
    while (!request.empty()) {
      const protocol::ParseResult result = parser_.parse(request, command);
      if (result.status == protocol::ParseStatus::kNeedMore) {
        ADD_FAILURE() << "incomplete request: " << request;
        break;
      }
      if (result.status == protocol::ParseStatus::kComplete) {
        last_action_ = executor_.execute(command, out);
      } else if (result.status == protocol::ParseStatus::kError) {
        out.append(result.error_reply);
      }
      request.remove_prefix(result.consumed);
    }
    return out;
  }

  TestClock clock_;
  config::Options options_;
  std::unique_ptr<engine::OpenStore> opened_;
  ServerStats stats_;
  ServerContext context_;
  CommandExecutor executor_;
  protocol::Parser parser_;
  AfterCommand last_action_ = AfterCommand::kContinue;
};

TEST_F(CommandExecutorTest, SetThenGetReturnsValueAndFlags) {
  EXPECT_EQ(run("set k 42 0 5\r\nhello\r\n"), "STORED\r\n");
  EXPECT_EQ(run("get k\r\n"), "VALUE k 42 5\r\nhello\r\nEND\r\n");
}

TEST_F(CommandExecutorTest, GetsReturnsCasThatCasAccepts) {
  EXPECT_EQ(run("set k 0 0 1\r\na\r\n"), "STORED\r\n");
  EXPECT_EQ(run("gets k\r\n"), "VALUE k 0 1 1\r\na\r\nEND\r\n");
  EXPECT_EQ(run("cas k 0 0 1 1\r\nb\r\n"), "STORED\r\n");
  EXPECT_EQ(run("cas k 0 0 1 1\r\nc\r\n"), "EXISTS\r\n");
  EXPECT_EQ(run("cas missing 0 0 1 1\r\nc\r\n"), "NOT_FOUND\r\n");
}

TEST_F(CommandExecutorTest, MultiGetSkipsMissingKeys) {
  run("set a 0 0 1\r\n1\r\nset c 0 0 1\r\n3\r\n");
  EXPECT_EQ(run("get a b c\r\n"), "VALUE a 0 1\r\n1\r\nVALUE c 0 1\r\n3\r\nEND\r\n");
}

TEST_F(CommandExecutorTest, NoreplySuppressesReplies) {
  EXPECT_EQ(run("set k 0 0 1 noreply\r\na\r\nincr k 1 noreply\r\ndelete k noreply\r\n"), "");
  EXPECT_EQ(run("get k\r\n"), "END\r\n");
}

TEST_F(CommandExecutorTest, IncrDecrAndNonNumeric) {
  run("set n 0 0 2\r\n10\r\nset s 0 0 1\r\nx\r\n");
  EXPECT_EQ(run("incr n 5\r\n"), "15\r\n");
  EXPECT_EQ(run("decr n 100\r\n"), "0\r\n");
  EXPECT_EQ(run("incr s 1\r\n"),
            "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  EXPECT_EQ(run("incr missing 1\r\n"), "NOT_FOUND\r\n");
}

TEST_F(CommandExecutorTest, TouchAndExpiryFollowTheClock) {
  run("set k 0 10 1\r\na\r\n");
  EXPECT_EQ(run("touch k 100\r\n"), "TOUCHED\r\n");
  clock_.advance(50);
  EXPECT_EQ(run("get k\r\n"), "VALUE k 0 1\r\na\r\nEND\r\n");
  clock_.advance(51);
  EXPECT_EQ(run("get k\r\n"), "END\r\n");
  EXPECT_EQ(run("touch k 10\r\n"), "NOT_FOUND\r\n");
}

TEST_F(CommandExecutorTest, MetaGetEchoesFlagsInRequestOrder) {
  run("set k 7 0 2\r\nhi\r\n");
  EXPECT_EQ(run("mg k s v f Oxyz t\r\n"), "VA 2 s2 f7 Oxyz t-1\r\nhi\r\n");
  EXPECT_EQ(run("mg missing v\r\n"), "EN\r\n");
  EXPECT_EQ(run("mg missing v q\r\nmn\r\n"), "MN\r\n");
}

// memcached reads its clock once per command, so mg T50 t shows t50 and ma N50 t shows t50
// however the seconds tick while the command runs.
TEST_F(CommandExecutorTest, MetaTtlIsShownAgainstTheClockReadingItsRequestUsed) {
  run("set k 0 0 1\r\na\r\n");
  clock_.tick_on_every_reading();
  EXPECT_EQ(run("mg k T50 t\r\n"), "HD t50\r\n");
  EXPECT_EQ(run("mg k T50 t v\r\n"), "VA 1 t50\r\na\r\n");
  EXPECT_EQ(run("ma n N50 t\r\n"), "HD t50\r\n");
  EXPECT_EQ(run("ma n T50 t\r\n"), "HD t50\r\n");
}

TEST_F(CommandExecutorTest, MetaSetModesAndQuietMode) {
  EXPECT_EQ(run("ms k 2 T0 F5\r\nab\r\n"), "HD\r\n");
  EXPECT_EQ(run("ms k 2 ME\r\ncd\r\n"), "NS\r\n");
  EXPECT_EQ(run("ms k 2 MA q\r\ncd\r\n"), "");
  EXPECT_EQ(run("mg k v f\r\n"), "VA 4 f5\r\nabcd\r\n");
}

TEST_F(CommandExecutorTest, MetaArithmeticVivifiesAndReturnsValue) {
  EXPECT_EQ(run("ma n N0 J10 v\r\n"), "VA 2\r\n10\r\n");
  EXPECT_EQ(run("ma n D5 v\r\n"), "VA 2\r\n15\r\n");
  EXPECT_EQ(run("ma n MD D20 v\r\n"), "VA 1\r\n0\r\n");
  EXPECT_EQ(run("ma missing\r\n"), "NF\r\n");
}

TEST_F(CommandExecutorTest, FlushAllHidesEverything) {
  run("set a 0 0 1\r\n1\r\n");
  EXPECT_EQ(run("flush_all\r\n"), "OK\r\n");
  EXPECT_EQ(run("get a\r\n"), "END\r\n");
}

TEST_F(CommandExecutorTest, StatsEngineNamesTheEngine) {
  const std::string reply = run("stats engine\r\n");
  const std::size_t at = reply.find("STAT engine dram\r\n");
  EXPECT_NE(at, std::string::npos) << reply;
  EXPECT_EQ(reply.find("STAT engine ", at + 1), std::string::npos) << "named twice: " << reply;
  EXPECT_TRUE(reply.ends_with("END\r\n"));
}

TEST_F(CommandExecutorTest, StatsCountItemsAndUnknownGroupIsAnError) {
  run("set a 0 0 1\r\n1\r\n");
  const std::string reply = run("stats\r\n");
  EXPECT_NE(reply.find("STAT curr_items 1\r\n"), std::string::npos) << reply;
  EXPECT_EQ(run("stats nonsense\r\n"), "ERROR\r\n");
  EXPECT_EQ(run("stats reset\r\n"), "RESET\r\n");
}

TEST_F(CommandExecutorTest, ShutdownNeedsTheFlag) {
  EXPECT_EQ(run("shutdown\r\n"), "ERROR: shutdown not enabled\r\n");
  EXPECT_EQ(last_action_, AfterCommand::kContinue);
  options_.enable_shutdown = true;
  EXPECT_EQ(run("shutdown\r\n"), "");
  EXPECT_EQ(last_action_, AfterCommand::kShutdown);
}

TEST_F(CommandExecutorTest, QuitClosesTheConnection) {
  EXPECT_EQ(run("quit\r\n"), "");
  EXPECT_EQ(last_action_, AfterCommand::kClose);
}

}  // namespace
}  // namespace pmcached::server

namespace pmcached::server {
namespace {

// config/ cannot see the engine registry, so the two defaults are checked against each other.
TEST(Defaults, ConfigDefaultEngineIsTheRegistryDefault) {
  EXPECT_EQ(config::Options{}.engine, engine::kDefaultEngine);
  EXPECT_NE(engine::find_engine(config::Options{}.engine), nullptr);
}

}  // namespace
}  // namespace pmcached::server
