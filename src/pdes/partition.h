// Which process runs which LP. A PartitionMap is a dense owner table; Partitioners produce them.
// Block and round-robin live here; the network layer adds topology-aware partitioners (whole
// dragonfly groups, fat-tree pods, scale-up domains per process) through the same interface.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pdes/channel.h"
#include "pdes/types.h"

namespace orrery::pdes {

class PartitionMap {
 public:
  PartitionMap(std::vector<ProcessId> owners, ProcessId num_processes);

  [[nodiscard]] ProcessId owner(LpId lp) const { return owners_[lp]; }
  [[nodiscard]] LpId num_lps() const { return static_cast<LpId>(owners_.size()); }
  [[nodiscard]] ProcessId num_processes() const { return num_processes_; }
  [[nodiscard]] std::vector<LpId> lps_of(ProcessId process) const;

 private:
  std::vector<ProcessId> owners_;
  ProcessId num_processes_;
};

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual PartitionMap assign(LpId num_lps, ProcessId num_processes) const = 0;
};

// LPs [0, n) cut into num_processes contiguous blocks whose sizes differ by at most one.
class BlockPartitioner final : public Partitioner {
 public:
  [[nodiscard]] std::string_view name() const override { return "block"; }
  [[nodiscard]] PartitionMap assign(LpId num_lps, ProcessId num_processes) const override;
};

// LP i on process i mod num_processes.
class RoundRobinPartitioner final : public Partitioner {
 public:
  [[nodiscard]] std::string_view name() const override { return "round-robin"; }
  [[nodiscard]] PartitionMap assign(LpId num_lps, ProcessId num_processes) const override;
};

// "block" or "round-robin"; throws OrreryError(kConfig) for other names.
std::unique_ptr<Partitioner> make_basic_partitioner(std::string_view name);

// Balance and cut of a partition: what the partitioner reports.
struct PartitionReport {
  std::string partitioner;
  std::vector<LpId> lps_per_process;
  double imbalance = 1.0;            // max LPs per process / mean LPs per process
  std::uint64_t channels = 0;        // declared channels
  std::uint64_t cut_channels = 0;    // channels whose ends lie on more than one process
  [[nodiscard]] std::string describe() const;
};

PartitionReport report_partition(std::string_view partitioner, const PartitionMap& map,
                                 const ChannelTable& channels);

}  // namespace orrery::pdes
