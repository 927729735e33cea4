// The execution graph of one program: what a rank runs in one training step. Built once per
// program and shared by every rank that runs it (DESIGN.md invariant 3).
//
// Lowering from the IR: the entry function is walked in program order; calls, composites and
// manual regions (sdy.manual_computation) are inlined, except a call the cost table costs at its
// site (a call of an elementwise function, `takes_time`), which runs as that one kernel, and such
// a call whose result nothing reads (`kernel_of` is the call itself), which never runs; while bodies are unrolled by their trip
// counts (loop-carried values flow from one iteration's return to the next iteration's block
// arguments); if/case run the branch the branch rule picks (the predicate gates every op of the
// branch). Every op that takes time becomes an exec op: compute ops (fusions count as one), and
// collectives and send/recv, which the system layer decomposes into transfers. Ops that take no
// time (constants, tuples, tokens, sharding annotations, ops the cost table marks free or fused)
// vanish: their results carry their operands' dependencies through. Dependencies are data
// dependencies between exec ops, deduplicated.
//
// Fused kernels whose kernel op comes after its members (compute fusion "regions"): an op whose
// kernel_of is a later op of its block waits, and runs with that op: the kernel exec op depends on
// what every member's outside operands depend on, and the members' results (and renames of them)
// become available when the kernel ends. The cost table guarantees that no op outside the kernel
// uses a member's value before the kernel op, so moving the members there keeps every dependency.
//
// Collective combining (XLA's all-reduce / all-gather / reduce-scatter combiners; `combine_key`
// says which ops may combine and their size) works on the finished graph, where every data
// dependency is explicit (fused kernels, inlined calls, unrolled loops, values that nested
// regions read). It follows XLA's CombineInstructionsByKey: ops of one computation instance (calls
// are inlined; each loop iteration and each branch execution is its own instance) and one key are
// grouped greedily in program order; a group ends at an op that depends on a member or would
// exceed the size or count limit. Groups are formed one at a time on the graph as the previous
// groups left it, so no group can close a cycle through another. A group becomes one collective
// exec op (at its last member): it waits for what every member waits for, and everything that
// waited for a member waits for it; ops between the members that depend on a member move after
// it, the others keep their order. Send and recv ordinals (matching labels) are those of program
// order; collective ordinals follow the new order.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "workload/program.h"

namespace orrery::system {

enum class ExecKind : std::uint8_t { kCompute, kCollective, kSend, kRecv };

struct ExecOp {
  workload::OpId source = 0;  // the IR op
  ExecKind kind = ExecKind::kCompute;
  // kCollective: the op's position in the program's collective order (the comm stream order);
  // kSend / kRecv: the occurrence of this channel's send (recv) within the step.
  std::uint32_t ordinal = 0;
};

enum class BranchRule : std::uint8_t { kLargest, kFirst, kLast };

struct ExecGraphOptions {
  BranchRule branch_rule = BranchRule::kLargest;
  std::uint64_t max_ops = 50'000'000;  // refuse to unroll beyond this many exec ops
  std::uint64_t combine_bytes = 0;      // collective combining: size limit per group; 0: off
  std::uint32_t combine_count = 256;    // and ops per group
  // Whether a fused kernel's member op stores its results (OpTimes::stored; empty: all do). The
  // readers of a value that is not stored recompute it, so they read what it was computed from:
  // its operands' buffers stay live until them (the memory estimate).
  std::function<bool(workload::OpId)> stored;
};

// Which collectives may combine: ops with equal keys, and the size that counts against the limit.
struct CombineKey {
  std::uint32_t key = 0;
  std::uint64_t bytes = 0;
};

class ExecGraph {
 public:
  // `takes_time(op)`: whether a non-structural, non-communication op is a compute exec op (false:
  // it is free or fused and only passes dependencies through). Throws OrreryError naming the loop
  // for an unknown trip count, or the limit for a graph that would be too large.
  // `kernel_of(op)`: the op whose kernel runs this op's work, or kNoId (may be empty: none).
  // OpIds increase in program order within a block (the ProgramBuilder's order).
  // `combine_key(op)`: for a collective that may combine, its key and size (may be empty: none).
  static ExecGraph build(const workload::Program& program, const std::function<bool(workload::OpId)>& takes_time,
                         const ExecGraphOptions& options,
                         const std::function<workload::OpId(workload::OpId)>& kernel_of = {},
                         const std::function<std::optional<CombineKey>(workload::OpId)>& combine_key = {});

  [[nodiscard]] std::size_t size() const { return ops_.size(); }
  [[nodiscard]] const ExecOp& op(std::uint32_t index) const { return ops_[index]; }
  [[nodiscard]] std::span<const ExecOp> ops() const { return ops_; }
  [[nodiscard]] std::span<const std::uint32_t> consumers(std::uint32_t index) const {
    return {consumers_.data() + consumer_begin_[index], consumer_begin_[index + 1] - consumer_begin_[index]};
  }
  [[nodiscard]] std::uint32_t in_degree(std::uint32_t index) const { return in_degree_[index]; }
  // Exec ops without dependencies: ready when a step starts.
  [[nodiscard]] std::span<const std::uint32_t> sources() const { return sources_; }
  // Collective exec ops in program order (the comm stream's order).
  [[nodiscard]] std::span<const std::uint32_t> collectives() const { return collectives_; }
  [[nodiscard]] std::uint64_t edges() const { return consumers_.size(); }
  [[nodiscard]] std::size_t heap_bytes() const;
  // The values exec ops write that the step uses, for the memory estimate: each result of an exec
  // op, and each result of a fused kernel's members, that another exec op reads or the step
  // returns; with the exec op that writes it and its last reader in exec order (kNoReader for a
  // step output nobody reads). Sorted by writer. A value reaches its readers through free ops
  // (renames, tuples, calls); an optimization barrier's result i reads operand i only (it waits
  // for the other operands' writers without keeping their values), while other free ops that
  // merge operands (a concatenate the cost table makes free) make their readers read them all.
  struct Buffer {
    workload::OpId op = workload::kNoId;  // the IR op whose result it is
    std::uint32_t result = 0;
    std::uint32_t writer = 0;
    std::uint32_t last_reader = 0;
    bool output = false;  // the step returns it
  };
  static constexpr std::uint32_t kNoReader = 0xffffffffU;
  [[nodiscard]] std::span<const Buffer> buffers() const { return buffers_; }
  // Buffers the build made, the ones dropped included (completion markers, the proxies through
  // which readers of recomputed values read their inputs, values nobody reads): its work.
  [[nodiscard]] std::size_t built_buffers() const { return built_buffers_; }
  // The IR ops a combined collective exec op runs, in program order; empty if it was not combined.
  [[nodiscard]] std::span<const workload::OpId> combined_sources(std::uint32_t index) const {
    if (combined_begin_.empty()) {
      return {};
    }
    return {combined_sources_.data() + combined_begin_[index], combined_begin_[index + 1] - combined_begin_[index]};
  }

 private:
  friend class ExecGraphBuilder;
  std::vector<ExecOp> ops_;
  std::vector<std::uint32_t> consumer_begin_;  // CSR, size ops + 1
  std::vector<std::uint32_t> consumers_;
  std::vector<std::uint32_t> in_degree_;
  std::vector<std::uint32_t> sources_;
  std::vector<std::uint32_t> collectives_;
  std::vector<std::uint32_t> combined_begin_;  // CSR over combined_sources_, size ops + 1 (or empty)
  std::vector<workload::OpId> combined_sources_;
  std::vector<Buffer> buffers_;
  std::size_t built_buffers_ = 0;
};

}  // namespace orrery::system
