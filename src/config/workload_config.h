// The `workload` section: programs and which ranks run each.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

struct ProgramConfig {
  FilePath file;
  std::uint32_t module = 0;
  std::string ranks = "all";
  std::uint32_t replicas = 0;
  std::map<std::string, std::uint64_t> loop_trip_counts;
  std::string missing_hint;

  template <class V>
  void fields(V& v) {
    v("file", file, "StableHLO text (.mlir).");
    v("module", module, "Which module of a multi-module file (`// -----` separated), from 0.");
    v("ranks", ranks,
      "Global ranks that run this program, one per device id of the program in order: 'all' (the "
      "program's devices, when it is the only program), or ids and ranges like '0-3,8-11'.");
    v("replicas", replicas,
      "Run a data-parallel program on this many replicas instead of its own mhlo.num_replicas (weak "
      "scaling: the per-device batch stays); every collective must span all replicas and keeps its "
      "model-sized buffer (an all-reduce's input, a reduce-scatter's input, an all-gather's output: gradients and "
      "parameters do not grow with replicas), so each device's shard of it shrinks. 0: as written. At most "
      "2^26, the most endpoints a topology has.",
      between(0, 1 << 26));
    v("loop_trip_counts", loop_trip_counts,
      "Trip counts for while loops whose count cannot be derived, by loop name as `inspect` prints it.");
    v("missing_hint", missing_hint, "Explanation printed when the file cannot be read (e.g. where to get it).");
  }
  void validate(Problems& problems) const {
    if (file.empty()) {
      problems.add("file", "a program needs a file");
    }
  }
};

enum class BranchRuleConfig { kLargest, kFirst, kLast };
inline std::span<const EnumName<BranchRuleConfig>> enum_names(BranchRuleConfig) {
  static constexpr EnumName<BranchRuleConfig> kNames[] = {{BranchRuleConfig::kLargest, "largest"},
                                                          {BranchRuleConfig::kFirst, "first"},
                                                          {BranchRuleConfig::kLast, "last"}};
  return kNames;
}

struct WorkloadConfig {
  std::vector<ProgramConfig> programs;
  std::uint32_t steps = 1;
  BranchRuleConfig branch = BranchRuleConfig::kLargest;

  template <class V>
  void fields(V& v) {
    v("programs", programs, "Programs (one per pipeline stage or rank group).");
    v("steps", steps, "Training steps run back to back.", at_least(1));
    v("branch", branch,
      "Which branch of an if/case runs: the largest (most ops, nested included), the first or the last.");
  }
};

}  // namespace orrery::config
