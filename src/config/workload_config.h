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

// MLCommons Chakra execution traces instead of programs (docs/chakra.md).
struct ChakraConfig {
  FilePath prefix;
  std::uint32_t ranks = 0;
  FilePath comm_groups;
  double roofline_peak_tflops = 0.0;
  double roofline_memory_gbps = 0.0;

  template <class V>
  void fields(V& v) {
    v("prefix", prefix,
      "Path prefix of the per-rank traces <prefix>.<rank>.et (ASTRA-sim's --workload-configuration); empty: "
      "use `programs`.");
    v("ranks", ranks, "Ranks (trace files) of the job; 0: every <prefix>.N.et from N = 0 up to the first missing one.");
    v("comm_groups", comm_groups,
      "Communicator-group JSON ({\"id\": [ranks]}) naming the ranks of each pg_name (ASTRA-sim's "
      "--comm-group-configuration); empty: none.");
    v("roofline_peak_TFLOPS", roofline_peak_tflops,
      "Peak rate for COMP nodes costed from num_ops and tensor_size (no duration); 0: the hardware preset's bf16 "
      "matrix peak.",
      nonnegative());
    v("roofline_memory_GBps", roofline_memory_gbps,
      "Memory bandwidth for such nodes and for MEM_LOAD/STORE nodes (GB/s, 1e9 B/s); 0: the preset's.", nonnegative());
  }
};

struct WorkloadConfig {
  std::vector<ProgramConfig> programs;
  ChakraConfig chakra;
  std::uint32_t steps = 1;
  BranchRuleConfig branch = BranchRuleConfig::kLargest;

  template <class V>
  void fields(V& v) {
    v("programs", programs, "Programs (one per pipeline stage or rank group).");
    v("chakra", chakra, "Chakra execution traces to run instead of `programs`.");
    v("steps", steps, "Training steps run back to back.", at_least(1));
    v("branch", branch,
      "Which branch of an if/case runs: the largest (most ops, nested included), the first or the last.");
  }
  void validate(Problems& problems) const {
    if (!programs.empty() && !chakra.prefix.empty()) {
      problems.add("chakra", "give either `programs` or `chakra`, not both");
    }
  }
};

}  // namespace orrery::config
