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
  std::string ranks = "all";
  std::map<std::string, std::uint64_t> loop_trip_counts;

  template <class V>
  void fields(V& v) {
    v("file", file, "StableHLO text (.mlir) or a Chakra trace prefix.");
    v("ranks", ranks, "Global ranks that run this program: 'all', or ranges like '0-3,8-11'.");
    v("loop_trip_counts", loop_trip_counts,
      "Trip counts for while loops whose count cannot be derived, by loop name as `inspect` prints it.");
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
