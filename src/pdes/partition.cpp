#include "pdes/partition.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <set>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::pdes {

PartitionMap::PartitionMap(std::vector<ProcessId> owners, ProcessId num_processes)
    : owners_(std::move(owners)), num_processes_(num_processes) {
  ORRERY_ASSERT(num_processes_ > 0, "a partition needs at least one process");
  for (const ProcessId owner : owners_) {
    ORRERY_ASSERT(owner < num_processes_, "partition assigns an LP to a process out of range");
  }
}

std::vector<LpId> PartitionMap::lps_of(ProcessId process) const {
  std::vector<LpId> lps;
  for (LpId lp = 0; lp < num_lps(); ++lp) {
    if (owners_[lp] == process) {
      lps.push_back(lp);
    }
  }
  return lps;
}

PartitionMap BlockPartitioner::assign(LpId num_lps, ProcessId num_processes) const {
  std::vector<ProcessId> owners(num_lps);
  const LpId base = num_lps / num_processes;
  const LpId extra = num_lps % num_processes;
  LpId lp = 0;
  for (ProcessId p = 0; p < num_processes; ++p) {
    const LpId count = base + (p < extra ? 1 : 0);
    for (LpId i = 0; i < count; ++i) {
      owners[lp++] = p;
    }
  }
  return PartitionMap(std::move(owners), num_processes);
}

PartitionMap RoundRobinPartitioner::assign(LpId num_lps, ProcessId num_processes) const {
  std::vector<ProcessId> owners(num_lps);
  for (LpId lp = 0; lp < num_lps; ++lp) {
    owners[lp] = lp % num_processes;
  }
  return PartitionMap(std::move(owners), num_processes);
}

std::unique_ptr<Partitioner> make_basic_partitioner(std::string_view name) {
  if (name == "block") {
    return std::make_unique<BlockPartitioner>();
  }
  if (name == "round-robin" || name == "round_robin") {
    return std::make_unique<RoundRobinPartitioner>();
  }
  throw OrreryError(ErrorCode::kConfig,
                    fmt::format("unknown partitioner '{}' (known: block, round-robin)", name));
}

std::string PartitionReport::describe() const {
  std::string counts;
  for (std::size_t p = 0; p < lps_per_process.size(); ++p) {
    counts += fmt::format("{}{}", p == 0 ? "" : "/", lps_per_process[p]);
  }
  return fmt::format("partition {}: LPs per process {}, imbalance {:.3f}, cut channels {} of {}",
                     partitioner, counts, imbalance, cut_channels, channels);
}

void ChannelTable::add(LpRange from, LpRange to, SimTime min_latency, std::string name) {
  channels_.push_back(ChannelSpec{from, to, min_latency, std::move(name)});
}

namespace {

// Processes owning at least one LP of the range, sorted.
std::vector<ProcessId> owners_of(LpRange range, const PartitionMap& partition) {
  ORRERY_ASSERT(range.end() <= partition.num_lps(), "channel range beyond the partition's LPs");
  std::vector<bool> seen(partition.num_processes(), false);
  std::vector<ProcessId> owners;
  for (LpId lp = range.first; lp < range.end(); ++lp) {
    const ProcessId p = partition.owner(lp);
    if (!seen[p]) {
      seen[p] = true;
      owners.push_back(p);
      if (owners.size() == partition.num_processes()) {
        break;
      }
    }
  }
  std::sort(owners.begin(), owners.end());
  return owners;
}

}  // namespace

CrossingAnalysis analyse_crossings(const ChannelTable& table, const PartitionMap& partition) {
  CrossingAnalysis analysis;
  std::vector<std::set<ProcessId>> neighbour_sets(partition.num_processes());
  for (const ChannelSpec& channel : table.channels()) {
    const auto from = owners_of(channel.from, partition);
    const auto to = owners_of(channel.to, partition);
    bool crosses = false;
    for (const ProcessId p : from) {
      for (const ProcessId q : to) {
        if (p != q) {
          crosses = true;
          neighbour_sets[p].insert(q);
          neighbour_sets[q].insert(p);
        }
      }
    }
    if (!crosses) {
      continue;
    }
    ++analysis.cut_channels;
    if (channel.min_latency == SimTime::zero()) {
      throw OrreryError(
          ErrorCode::kModel,
          fmt::format("channel '{}' (LPs {}..{} -> {}..{}) crosses processes with zero minimum "
                      "latency; conservative synchronisation needs a positive lookahead (keep "
                      "its LPs on one process or give it a latency)",
                      channel.name, channel.from.first, channel.from.end() - 1, channel.to.first,
                      channel.to.end() - 1));
    }
    if (channel.min_latency < analysis.lookahead) {
      analysis.lookahead = channel.min_latency;
      analysis.lookahead_channel = &channel;
    }
  }
  analysis.neighbours.resize(partition.num_processes());
  for (ProcessId p = 0; p < partition.num_processes(); ++p) {
    analysis.neighbours[p].assign(neighbour_sets[p].begin(), neighbour_sets[p].end());
  }
  return analysis;
}

PartitionReport report_partition(std::string_view partitioner, const PartitionMap& map,
                                 const ChannelTable& channels) {
  PartitionReport report;
  report.partitioner = std::string(partitioner);
  report.lps_per_process.assign(map.num_processes(), 0);
  for (LpId lp = 0; lp < map.num_lps(); ++lp) {
    ++report.lps_per_process[map.owner(lp)];
  }
  const double mean = static_cast<double>(map.num_lps()) / map.num_processes();
  const LpId max_lps = *std::max_element(report.lps_per_process.begin(), report.lps_per_process.end());
  report.imbalance = mean > 0 ? max_lps / mean : 1.0;
  report.channels = channels.channels().size();
  report.cut_channels = analyse_crossings(channels, map).cut_channels;
  return report;
}

}  // namespace orrery::pdes
