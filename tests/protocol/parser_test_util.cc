#include "tests/protocol/parser_test_util.h"

#include <charconv>
#include <sstream>

namespace pmcached::protocol::test {

namespace {

void append_meta(std::ostringstream& out, const MetaFlags& m) {
  out << " flags=[";
  for (const MetaFlag& flag : m.in_order) out << flag.letter << flag.token << ';';
  out << "] b" << m.base64_key << " c" << m.return_cas << " f" << m.return_flags << " h"
      << m.return_hit << " k" << m.return_key << " l" << m.return_last_access << " q" << m.quiet
      << " s" << m.return_size << " t" << m.return_ttl << " u" << m.no_bump << " v"
      << m.return_value << " I" << m.invalidate;
  if (m.has_opaque) out << " O=" << m.opaque;
  if (m.has_compare_cas) out << " C=" << m.compare_cas;
  if (m.has_client_flags) out << " F=" << m.client_flags;
  if (m.has_ttl) out << " T=" << m.ttl;
  if (m.has_vivify) out << " N=" << m.vivify_ttl;
  if (m.has_recache) out << " R=" << m.recache_ttl;
  if (m.has_initial) out << " J=" << m.initial;
  out << " D=" << m.delta;
  if (m.mode != 0) out << " M=" << m.mode;
}

}  // namespace

std::string describe(const Command& c) {
  std::ostringstream out;
  out << "kind=" << static_cast<int>(c.kind) << " key=" << c.key << " keys=[";
  for (std::string_view key : c.keys) out << key << ';';
  out << "] flags=" << c.client_flags << " exptime=" << c.exptime << " cas=" << c.cas_unique
      << " delta=" << c.delta << " delay=" << c.delay << " verbosity=" << c.verbosity
      << " noreply=" << c.noreply << " too_large=" << c.too_large << " data=" << c.data.size()
      << ':' << c.data << " stats=" << c.stats_group;
  append_meta(out, c.meta);
  return out.str();
}

StreamResult run_stream(std::string_view input, std::size_t chunk, ParserLimits limits,
                        std::size_t split_at) {
  StreamResult out;
  Parser parser(limits);
  Command command;
  std::string buffer;
  std::size_t fed = 0;
  while (fed < input.size() && !out.closed) {
    std::size_t take = input.size() - fed;
    if (split_at != 0) {
      take = fed < split_at ? split_at - fed : take;
    } else if (chunk != 0) {
      take = std::min(chunk, take);
    }
    buffer.append(input.substr(fed, take));
    fed += take;
    for (;;) {
      const bool was_swallowing = parser.swallowing();
      const ParseResult r = parser.parse(buffer, command);
      if (r.status == ParseStatus::kNeedMore) {
        EXPECT_EQ(r.consumed, 0u);
        break;
      }
      EXPECT_GT(r.consumed, 0u);
      EXPECT_LE(r.consumed, buffer.size());
      if (was_swallowing && r.status != ParseStatus::kSkipped) {
        // The answer that ends a swallow also drops its last bytes: count them as skipped,
        // so the events do not depend on how the input was split.
        if (!out.events.empty() && out.events.back().starts_with("S ")) {
          const std::size_t before = std::stoul(out.events.back().substr(2));
          out.events.back() = "S " + std::to_string(before + r.consumed);
        } else {
          out.events.push_back("S " + std::to_string(r.consumed));
        }
      }
      switch (r.status) {
        case ParseStatus::kComplete: {
          const std::string text = describe(command);
          if (command.too_large) {
            // Refused after its block was swallowed: the server answers as memcached does.
            if (!command.noreply) out.replies += "SERVER_ERROR object too large for cache\r\n";
            out.events.push_back("T " + text);
            break;
          }
          out.commands.push_back(text);
          out.events.push_back("C " + text);
          if (command.kind == CommandKind::kMetaNoop) out.replies += "MN\r\n";
          break;
        }
        case ParseStatus::kError:
          out.replies.append(r.error_reply);
          out.events.push_back("E " + std::string(r.error_reply));
          out.closed = r.close_connection;
          break;
        case ParseStatus::kSkipped:
          // Merge runs of skipped bytes: how they are split depends on the reads.
          if (!out.events.empty() && out.events.back().starts_with("S ")) {
            const std::size_t before = std::stoul(out.events.back().substr(2));
            out.events.back() = "S " + std::to_string(before + r.consumed);
          } else {
            out.events.push_back("S " + std::to_string(r.consumed));
          }
          break;
        case ParseStatus::kNeedMore: break;
      }
      buffer.erase(0, r.consumed);
      if (out.closed) break;
    }
  }
  return out;
}

std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' && text.substr(i).starts_with("{{")) {
      const std::size_t close = text.find("}}", i);
      const std::size_t star = text.find('*', i);
      if (close != std::string_view::npos && star == i + 3) {
        std::size_t count = 0;
        std::from_chars(text.data() + star + 1, text.data() + close, count);
        out.append(count, text[i + 2]);
        i = close + 1;
        continue;
      }
    }
    if (c != '\\' || i + 1 == text.size()) {
      out.push_back(c);
      continue;
    }
    const char e = text[++i];
    switch (e) {
      case 'r': out.push_back('\r'); break;
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'x': {
        unsigned value = 0;
        std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
        out.push_back(static_cast<char>(value));
        i += 2;
        break;
      }
      default: out.push_back(e); break;
    }
  }
  return out;
}

ParseResult parse_one(std::string_view input, Command& command, ParserLimits limits) {
  Parser parser(limits);
  return parser.parse(input, command);
}

void expect_complete(std::string_view input, Command& command) {
  const ParseResult r = parse_one(input, command);
  ASSERT_EQ(r.status, ParseStatus::kComplete) << input;
  EXPECT_EQ(r.consumed, input.size());
}

}  // namespace pmcached::protocol::test
