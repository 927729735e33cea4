// Everything about one program that its ranks share (DESIGN.md invariant 3): the IR, the
// execution graph, each op's duration on the hardware, and the collectives with their device
// groups resolved, interned and mapped to global ranks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "system/collective_plan.h"
#include "system/exec_graph.h"
#include "util/units.h"
#include "workload/collectives.h"
#include "workload/program.h"

namespace orrery::system {

// What the system layer needs from compute costing: per IR op, whether it is a compute op that
// takes time and how long it takes on one device. (The compute module's cost table provides it.)
class OpTimes {
 public:
  virtual ~OpTimes() = default;
  [[nodiscard]] virtual bool takes_time(workload::OpId op) const = 0;
  [[nodiscard]] virtual SimTime time(workload::OpId op) const = 0;
  // The op whose kernel does this op's work (a fused op, or a rename inside a fused kernel), or
  // kNoId. When the kernel op comes later in the block, the op runs with it (exec_graph.h).
  [[nodiscard]] virtual workload::OpId kernel_of(workload::OpId /*op*/) const { return workload::kNoId; }
  // What the kernel at this op is when it is more than the op ("fusion of 12 ops"), or empty.
  [[nodiscard]] virtual std::string kernel_label(workload::OpId /*op*/) const { return {}; }
  // Whether the op's results are stored where readers outside its kernel read them (false: the
  // kernels that read them recompute them; the memory estimate counts no buffer for them).
  [[nodiscard]] virtual bool stored(workload::OpId /*op*/) const { return true; }
};

// Device groups of collective ops, interned: ops with the same groups share one GroupSet.
// A joint set's groups also hold ranks of other programs (JointGroups): `groups` then lists only
// this program's devices of each group, and positions are those in the whole group (`ranks`).
struct GroupSet {
  std::vector<std::vector<std::uint32_t>> groups;  // local device ids, in group order
  std::vector<std::vector<std::uint32_t>> ranks;   // each group's members as global ranks, in group order
  std::vector<std::uint32_t> group_of;             // per local device: its group, or kNoGroup
  std::vector<std::uint32_t> position_of;          // per local device: its position in the group
  bool joint = false;                              // some group holds ranks of another program
  static constexpr std::uint32_t kNoGroup = 0xffffffffU;
};

// Collectives whose groups join ranks of several programs (workload/collectives.h): the system
// layer matches such ops across programs (simulation.cpp, "joint collectives"); they are never
// combined.
using JointGroups = workload::JointGroups;

struct CollectiveInfo {
  workload::OpId op = 0;        // the IR op (a combined collective: its last member)
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::uint64_t bytes = 0;      // the plan's n: all-reduce input, all-gather output, ... (summed if combined)
  std::uint32_t combined = 1;   // IR ops combined into this collective (XLA's collective combiners)
  std::uint32_t group_set = 0;  // for kPermute: one group of all the program's devices
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;  // kPermute: (source, target) devices
  std::vector<std::uint8_t> paired;  // kPermute: per device, 1 if it is a source or target of a pair
};

// A point-to-point send or recv op: its channel and, for sends, the target of each local device.
struct PeerInfo {
  std::int64_t channel = 0;
  std::uint64_t bytes = 0;
  std::vector<std::uint32_t> target_of;  // sends: per local device, the target device (or kNone)
  std::vector<std::uint32_t> source_of;  // recvs: per local device, the source device (or kNone)
  static constexpr std::uint32_t kNone = 0xffffffffU;
};

class ProgramModel {
 public:
  // `replicas`: 0 to run the program as written; otherwise the number of replicas of a
  // data-parallel program whose every collective spans all replicas (num_partitions 1), rescaled.
  // `joint`: ops whose groups span other programs' ranks (may be null: none).
  ProgramModel(std::shared_ptr<const workload::Program> program, std::string label,
               std::vector<std::uint32_t> ranks, const OpTimes& times, const ExecGraphOptions& graph_options,
               std::uint32_t replicas = 0, std::shared_ptr<const JointGroups> joint = nullptr);

  // Devices the program runs on: num_replicas x num_partitions, or the rescaled replica count.
  [[nodiscard]] std::uint32_t devices() const { return devices_; }

  [[nodiscard]] const workload::Program& program() const { return *program_; }
  [[nodiscard]] const std::string& label() const { return label_; }
  [[nodiscard]] const ExecGraph& graph() const { return graph_; }
  [[nodiscard]] std::uint32_t global_rank(std::uint32_t device) const { return ranks_[device]; }
  [[nodiscard]] const std::vector<std::uint32_t>& ranks() const { return ranks_; }
  [[nodiscard]] SimTime duration(std::uint32_t exec_op) const { return op_time_[graph_.op(exec_op).source]; }
  // What runs at a compute op: its kernel label (a fusion), or the op's name.
  [[nodiscard]] std::string kernel_label(workload::OpId id) const;
  [[nodiscard]] const CollectiveInfo& collective(std::uint32_t exec_op) const {
    if (const auto combined = combined_index_.find(exec_op); combined != combined_index_.end()) {
      return collectives_[combined->second];
    }
    return collectives_[collective_index_.at(graph_.op(exec_op).source)];
  }
  [[nodiscard]] const GroupSet& group_set(std::uint32_t id) const { return group_sets_[id]; }
  [[nodiscard]] const PeerInfo& peer(std::uint32_t exec_op) const { return peers_[peer_index_.at(graph_.op(exec_op).source)]; }
  [[nodiscard]] const std::vector<CollectiveInfo>& collectives() const { return collectives_; }
  [[nodiscard]] const std::vector<PeerInfo>& peers() const { return peers_; }
  // "file.mlir:12:5 stablehlo.all_reduce" for messages.
  [[nodiscard]] std::string describe_op(workload::OpId op) const;
  // The same, with the line found in `lines` (the program's source text indexed once: for many ops).
  [[nodiscard]] std::string describe_op(workload::OpId op, const workload::LineIndex& lines) const;
  // Bytes of an op's results.
  [[nodiscard]] std::uint64_t result_bytes(workload::OpId op) const;
  // Bytes of result `result` of an op as a buffer of the memory estimate (ExecGraph::buffers): 0
  // when its kernel's readers recompute it (OpTimes::stored).
  [[nodiscard]] std::uint64_t value_bytes(workload::OpId op, std::uint32_t result) const;
  [[nodiscard]] std::uint64_t argument_bytes() const;
  // Bytes of the entry arguments donated to the step's outputs (XLA's input-output aliasing):
  // those with a `tf.aliasing_output` or a true `jax.buffer_donor` argument attribute, as
  // jax.jit(..., donate_argnums=...) exports them.
  [[nodiscard]] std::uint64_t donated_argument_bytes() const;

 private:
  std::uint32_t intern_groups(const std::vector<std::vector<std::uint32_t>>& groups);
  // A joint op's groups (global ranks), keeping those that hold one of this program's ranks.
  std::uint32_t intern_joint_groups(workload::OpId id, const std::vector<std::vector<std::uint32_t>>& groups);
  // The device groups of a collective, interned; throws naming the op.
  std::uint32_t group_set_of(workload::OpId id, std::uint32_t replicas);
  // XLA's combiner key and size of a collective that may combine (exec_graph.h), or nullopt.
  std::optional<CombineKey> combine_key(workload::OpId id, std::uint32_t replicas);
  [[nodiscard]] std::uint64_t plan_bytes(workload::OpId id) const;

  std::shared_ptr<const workload::Program> program_;
  std::string label_;
  std::uint32_t devices_ = 0;
  std::vector<std::uint32_t> ranks_;
  ExecGraph graph_;
  std::vector<SimTime> op_time_;                                   // per IR op
  std::unordered_map<workload::OpId, std::string> kernel_labels_;  // fused kernels
  std::vector<bool> not_stored_;                                   // per IR op: !OpTimes::stored
  std::vector<CollectiveInfo> collectives_;
  std::unordered_map<workload::OpId, std::uint32_t> collective_index_;
  std::vector<GroupSet> group_sets_;
  std::map<std::vector<std::vector<std::uint32_t>>, std::uint32_t> group_set_ids_;
  std::map<std::vector<std::vector<std::uint32_t>>, std::uint32_t> joint_set_ids_;
  std::shared_ptr<const JointGroups> joint_;
  std::vector<PeerInfo> peers_;
  std::unordered_map<workload::OpId, std::uint32_t> peer_index_;
  std::unordered_map<std::uint32_t, std::uint32_t> combined_index_;  // combined exec op -> collectives_
  std::map<std::vector<std::uint64_t>, std::uint32_t> combine_keys_;  // interned combiner keys
  std::unordered_map<workload::OpId, std::optional<CombineKey>> combine_key_of_;  // per IR op
  std::map<std::vector<workload::OpId>, std::uint32_t> combined_infos_;  // member lists -> collectives_
};

}  // namespace orrery::system
