// Crashes around a restart. See recovery_crash.h.
#include "tests/index/recovery_crash.h"

#include <exception>
#include <memory>

#include <gtest/gtest.h>

#include "engine/pm/crash_simulator.h"

namespace pmcached::engine::testing {

std::string stat_of(const IndexEngine& engine, std::string_view name) {
  for (const EngineStat& s : engine.stats()) {
    if (s.name == name) return s.value;
  }
  return "";
}

std::uint64_t stat_number(const IndexEngine& engine, std::string_view name) {
  const std::string value = stat_of(engine, name);
  if (value.empty()) {
    ADD_FAILURE() << "no statistic " << name;
    return 0;
  }
  return std::stoull(value);
}

std::vector<std::size_t> ops_changing_stat(const std::string& engine, const std::vector<Op>& ops,
                                           std::string_view name) {
  Harness h(engine, kCrashRegionBytes);
  Model model;
  std::vector<std::size_t> changed;
  std::string before = stat_of(h.engine(), name);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].put) {
      (void)h.put(ops[i].key, model);
    } else {
      (void)h.del(ops[i].key, model);
    }
    std::string now = stat_of(h.engine(), name);
    if (now != before) changed.push_back(i);
    before = std::move(now);
  }
  return changed;
}

RecoveryCrashResult crash_recovery_everywhere(const std::string& engine, const std::vector<Op>& ops,
                                              std::uint64_t k, bool adversarial) {
  RecoveryCrashResult result;
  pm::CrashSimulator sim(kCrashRegionBytes);
  Trace t;
  {
    Harness h(engine, kCrashRegionBytes, &sim);
    sim.crash_at(k, adversarial, /*seed=*/k * 7919 + 3);
    t = run_ops(h, sim, ops);
  }
  if (!sim.crash_image()) {
    ADD_FAILURE() << engine << ": crash point " << k << " not reached";
    ++result.failures;
    return result;
  }
  const std::vector<char>& image = *sim.crash_image();
  std::size_t done = 0;
  while (done < ops.size() && t.end[done] <= sim.durable_point()) ++done;
  const Model before = model_after(ops, t, done);
  const Model after =
      done < ops.size() && t.begin[done] < k ? model_after(ops, t, done + 1) : before;
  {
    pm::CrashSimulator counting(kCrashRegionBytes);
    Harness restart(engine, image, &counting);
    result.restart_points = counting.persistence_points();
  }
  for (std::uint64_t j = 1; j <= result.restart_points; ++j) {
    for (bool adversarial_restart : {false, true}) {
      pm::CrashSimulator restart_sim(kCrashRegionBytes);
      restart_sim.crash_at(j, adversarial_restart, /*seed=*/j * 104729 + k);
      std::string problems;
      try {
        { Harness crashed_restart(engine, image, &restart_sim); }
        if (!restart_sim.crash_image()) {
          problems = "restart point not reached; ";
        } else {
          Harness second(engine, *restart_sim.crash_image());
          problems = second.restart_problems() + second.check();
          const Model got = second.contents();
          if (got != before && got != after) problems += "contents are neither before nor after; ";
        }
      } catch (const std::exception& e) {
        problems += std::string("restart failed: ") + e.what();
      }
      if (!problems.empty()) {
        ++result.failures;
        ADD_FAILURE() << engine << ": crash at point " << k << (adversarial ? " (adversarial)" : "")
                      << ", then the restart crashed at its point " << j
                      << (adversarial_restart ? " (adversarial)" : "") << ": " << problems;
      }
    }
  }
  return result;
}

}  // namespace pmcached::engine::testing
