// Crash-test machinery for the persistent index engines. See index_crash.h.
#include "tests/index/index_crash.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <random>

#include <gtest/gtest.h>

namespace pmcached::engine::testing {
namespace {

std::string describe_difference(const Model& got, const Model& want) {
  for (const auto& [key, ref] : want) {
    const auto it = got.find(key);
    if (it == got.end()) return "missing key of " + std::to_string(key.size()) + " bytes";
    if (it->second != ref) return "a key has the wrong item";
  }
  return got.size() != want.size() ? "an extra key" : "";
}

}  // namespace

Trace run_ops(Harness& h, const pm::CrashSimulator& sim, const std::vector<Op>& ops) {
  Trace t;
  Model ignored;
  for (const Op& op : ops) {
    t.begin.push_back(sim.persistence_points());
    if (op.put) {
      EXPECT_NE(h.put(op.key, ignored), UpsertStatus::kOutOfMemory);
      t.refs.push_back(ignored[op.key]);
    } else {
      (void)h.del(op.key, ignored);
      t.refs.push_back(kNoItem);
    }
    t.end.push_back(sim.persistence_points());
  }
  return t;
}

Model model_after(const std::vector<Op>& ops, const Trace& t, std::size_t count) {
  Model m;
  for (std::size_t i = 0; i < count; ++i) {
    if (ops[i].put) {
      m[ops[i].key] = t.refs[i];
    } else {
      m.erase(ops[i].key);
    }
  }
  return m;
}

std::unique_ptr<Harness> restart_checked(const std::string& engine, const pm::CrashSimulator& sim,
                                         std::string& problems) {
  std::unique_ptr<Harness> restarted;
  try {
    restarted = std::make_unique<Harness>(engine, *sim.crash_image());
  } catch (const std::exception& e) {
    problems += std::string("restart failed: ") + e.what();
    return nullptr;
  }
  problems += restarted->restart_problems() + restarted->check();
  return restarted;
}

std::string crash_and_check(const std::string& engine, const std::vector<Op>& ops, std::uint64_t k,
                            bool adversarial) {
  pm::CrashSimulator sim(kCrashRegionBytes);
  Harness h(engine, kCrashRegionBytes, &sim);
  sim.crash_at(k, adversarial, /*seed=*/k * 7919 + 1);
  const Trace t = run_ops(h, sim, ops);
  if (!sim.crash_image()) return "crash point not reached";
  std::size_t done = 0;
  while (done < ops.size() && t.end[done] <= sim.durable_point()) ++done;
  const Model before = model_after(ops, t, done);
  const bool in_flight = done < ops.size() && t.begin[done] < k;
  const Model after = in_flight ? model_after(ops, t, done + 1) : before;

  std::string problems;
  const std::unique_ptr<Harness> restarted = restart_checked(engine, sim, problems);
  if (!restarted) return problems;
  Harness& r = *restarted;
  Model got = r.contents();
  if (got != before && got != after) {
    problems += "after op " + std::to_string(done) + (in_flight ? " (in flight)" : "") + ": " +
                describe_difference(got, after) + " / " + describe_difference(got, before) + "; ";
  }
  // A further round on the recovered tree.
  for (int i = 0; i < 12; ++i)
    (void)r.put(numbered("after-", static_cast<std::uint64_t>(i * 37)), got);
  std::size_t n = 0;
  for (const auto& entry : Model(got)) {
    if (n++ % 2 == 0) (void)r.del(entry.first, got);
  }
  for (const auto& [key, ref] : got) {
    if (r.engine().lookup(key) != ref) problems += "lookup after the further round; ";
  }
  if (r.contents() != got) problems += "contents after the further round; ";
  problems += r.check();
  return problems;
}

PointRange traced_run(const std::string& engine, const std::vector<Op>& ops, Trace* trace) {
  pm::CrashSimulator sim(kCrashRegionBytes);
  Harness h(engine, kCrashRegionBytes, &sim);
  PointRange range;
  range.first = sim.persistence_points();
  Trace t = run_ops(h, sim, ops);
  range.last = sim.persistence_points();
  if (trace != nullptr) *trace = std::move(t);
  return range;
}

int crash_everywhere(const std::string& engine, const std::vector<Op>& ops,
                     const CrashOptions& options) {
  Trace t;
  const PointRange range = traced_run(engine, ops, &t);
  std::vector<std::uint64_t> points;
  if (options.crash_ops.empty()) {
    for (std::uint64_t k = range.first + 1; k <= range.last; ++k) points.push_back(k);
  } else {
    for (std::size_t i : options.crash_ops) {
      for (std::uint64_t k = t.begin.at(i) + 1; k <= t.end.at(i); ++k) points.push_back(k);
    }
  }
  EXPECT_FALSE(points.empty()) << "the workload reaches no persistence point";
  int failures = 0;
  for (std::uint64_t k : points) {
    for (bool adversarial : {false, true}) {
      const std::string problems = crash_and_check(engine, ops, k, adversarial);
      if (problems.empty()) continue;
      ++failures;
      if (!options.quiet) {
        const auto op = std::upper_bound(t.end.begin(), t.end.end(), k - 1) - t.end.begin();
        ADD_FAILURE() << engine << ": crash at point " << k << " of " << range.first + 1 << ".."
                      << range.last << " (inside op " << op << ")"
                      << (adversarial ? " (adversarial)" : "") << ": " << problems;
      }
    }
  }
  return failures;
}

std::vector<Op> puts(const std::vector<std::string>& keys) {
  std::vector<Op> ops;
  for (const std::string& k : keys) ops.push_back({true, k});
  return ops;
}

std::vector<Op> split_workload() {
  return puts({be64(0x1122334455667788), be64(0x1122334455667799), be64(0x1122334455660000),
               be64(0x1122330000000000), be64(0x2000000000000000), be64(0x1100000000000000),
               be64(0x3000000000000001), be64(0x3000000000000002), be64(0x3000000000100000),
               be64(0x3000000000000001), be64(0x1122334455667788), be64(0x3100000000000000)});
}

std::vector<Op> delete_workload() {
  std::vector<Op> ops =
      puts({be64(0x1000000000000000), be64(0x1100000000000000), be64(0x1100000000000001),
            be64(0x1100000000000002), be64(0x1100000000000100), be64(0x1200000000000000)});
  for (std::uint64_t v : {0x1200000000000000ull, 0x1000000000000000ull, 0x1100000000000100ull,
                          0x1100000000000001ull, 0x1100000000000002ull, 0x1100000000000000ull}) {
    ops.push_back({false, be64(v)});
  }
  ops.push_back({true, be64(0x4242)});
  ops.push_back({true, be64(0x4243)});
  ops.push_back({false, be64(0x4242)});
  return ops;
}

std::vector<Op> leaf_split_workload() {
  std::vector<std::uint64_t> values;
  for (std::uint64_t i = 1; i <= 130; ++i) values.push_back(i * 0x10001);
  std::shuffle(values.begin(), values.end(), std::mt19937_64(42));
  std::vector<Op> ops;
  for (std::uint64_t v : values) ops.push_back({true, be64(v)});
  return ops;
}

}  // namespace pmcached::engine::testing
