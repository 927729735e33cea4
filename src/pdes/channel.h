// Channels: the declared minimum latency between sets of LPs (STYLE.md, rule 8). A model declares
// its channels when it is built; the engine derives the lookahead from the channels that cross
// processes under the partition, and the neighbour set of each process from the same analysis.
// A send to another process below the lookahead, or to a process with no declared channel, is a
// model error.
#pragma once

#include <string>
#include <vector>

#include "pdes/types.h"

namespace orrery::pdes {

class PartitionMap;

struct ChannelSpec {
  LpRange from;
  LpRange to;
  SimTime min_latency;
  std::string name;  // for diagnostics, e.g. "phold" or "router 3 -> router 9"
};

class ChannelTable {
 public:
  void add(LpRange from, LpRange to, SimTime min_latency, std::string name);
  [[nodiscard]] const std::vector<ChannelSpec>& channels() const { return channels_; }

 private:
  std::vector<ChannelSpec> channels_;
};

struct CrossingAnalysis {
  SimTime lookahead = SimTime::max();  // max(): no channel crosses processes
  const ChannelSpec* lookahead_channel = nullptr;  // the channel that sets it (diagnostics)
  std::vector<std::vector<ProcessId>> neighbours;  // per process, sorted, symmetric
  std::uint64_t cut_channels = 0;
};

// Throws OrreryError(kModel) if a crossing channel declares a zero minimum latency.
CrossingAnalysis analyse_crossings(const ChannelTable& table, const PartitionMap& partition);

}  // namespace orrery::pdes
