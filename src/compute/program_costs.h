// The per-program cost table the system layer consumes: one OpCost per op of a Program (every op,
// including those of nested regions and uncalled functions), indexed by workload::OpId.
//
//   ComputeModel model(scenario.compute, load_hardware(scenario.hardware));
//   const ProgramCosts costs = cost_program(*program, model, CostOptions::from(scenario.compute));
//   for each op the rank executes:
//     const OpCost& c = costs.ops[op_id];
//     switch (c.role) {
//       case CostRole::kCompute:       occupy the compute stream for c.time
//       case CostRole::kCommunication: decompose the collective (system layer)
//       case CostRole::kFree:          nothing runs (control flow: walk its regions)
//       case CostRole::kFused:         nothing runs: its work is in costs.ops[c.fused_into]
//     }
//   run statistics: model.cache_stats().hit_rate() (the run's), costs.cache (this program's).
//
// A program is costed once and shared by every rank that runs it (DESIGN.md, invariant 3). Each op
// is costed once whatever the loops around it; execution_totals() walks the entry function with
// trip counts and calls for the per-execution view (`orrery inspect --cost`).
//
// Roles:
//   kCompute        a kernel: time from the estimator, FLOPs and bytes from the counting layer
//                   (op_counting.h). An mhlo.fusion is one kernel; with fusion (CostOptions), an
//                   op carries the work of the ops fused into its kernel.
//   kFree           costs nothing at run time (fused_into names a kernel when the op only renames
//                   a value inside that kernel: a reshape between two fused ops): constants, tuples, get_tuple_element,
//                   optimization_barrier, returns, reshapes (bitcasts), sharding annotations
//                   (@Sharding, SPMD*Shape custom calls, sdy.*), partition/replica ids, tokens,
//                   control-flow ops (while, if, case, call, manual computations, async ops: their
//                   regions' ops have their own entries), infeed/outfeed (host I/O, not modelled)
//                   and ops of other dialects (listed by `orrery inspect`).
//   kCommunication  collectives, send and recv: the system layer decomposes them. bytes_read and
//                   bytes_written hold their operand and result bytes; time is 0.
//   kFused          part of another op's kernel, fused_into: ops inside an mhlo.fusion, the
//                   computation of a reduce / sort / scatter / select_and_scatter / map /
//                   all_reduce body, and the ops fusion (CostOptions) puts into another op's
//                   kernel. fused_into is the op that carries the time (never itself kFused).
//                   With kRegions the kernel op comes after its members in its block: the
//                   system layer runs the members' work at the kernel op.
// Only kCompute entries carry time, FLOPs and bytes for the device; sum those for totals.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compute/op_counting.h"
#include "compute/rules.h"
#include "config/compute_config.h"
#include "workload/program.h"

namespace orrery::compute {

struct CostOptions {
  // How ops become kernels (docs/compute.md, "Fusion"). The default here is the program as
  // written; scenarios default to kRegions (config::ComputeConfig::fusion).
  //   kNone         every compute op is a kernel.
  //   kElementwise  an elementwise op whose operand is the only use of a compute op's single
  //                 result, in the same block, joins that op's kernel; the intermediate is neither
  //                 written nor read back. A data movement or elementwise producer then becomes an
  //                 elementwise kernel (transcendental when a member is); other producers keep
  //                 their class (a GEMM with its epilogue).
  //   kRegions      XLA-style loop and input fusion: connected fusible ops of a block (elementwise,
  //                 broadcast, transpose, slice, concatenate, pad, iota, ..., with reduce and
  //                 reduce_window as the last ops of their kernel) form one kernel named "fusion".
  //                 It reads each outside value once and writes only the values used outside it.
  //                 The kernel runs at its last member; a region stops growing once an op outside
  //                 it uses one of its values, which keeps the kernel graph acyclic, and afterwards
  //                 takes in a closed region whose values it reads when every other use of them
  //                 runs after it.
  config::FusionMode fusion = config::FusionMode::kNone;
  CountOptions counting;

  static CostOptions from(const config::ComputeConfig& config);
};

struct OpCost {
  CostRole role = CostRole::kFree;
  std::uint8_t flags = 0;       // CountFlag bits: why the count is approximate
  OpClass op_class = OpClass::kOther;
  // kFused (and kFree renames inside a fused kernel): the kernel op; a kFree call that was costed
  // at its site and never runs (its result unused): the call itself, so its callee does not run.
  workload::OpId fused_into = workload::kNoId;
  std::uint32_t fused_ops = 0;  // kCompute: how many other ops are fused into this kernel by fusion
  // kCompute: the kernels this entry launches, one after the other: 1, or more where XLA's GPU
  // backend splits a long reduction into a tree of two kernels (its second stages; time, work and
  // bytes include theirs).
  std::uint32_t launches = 1;
  SimTime time;                 // duration on the device (0 unless kCompute)
  Flops flops;
  Bytes bytes_read;
  Bytes bytes_written;
  // Whether the op's results are written to memory where a reader outside its kernel finds them:
  // false for an op of a fused kernel whose outside readers are kernels that recompute it (a
  // duplicated producer), or that nothing outside reads (the memory estimate).
  bool stored = true;
  // The estimator that produced the time ("roofline", "systolic", "table", "plugin:NAME",
  // "fallback:roofline" when the table fell back) and its note (the rule, the terms, the table row
  // or the fallback reason). Empty unless kCompute. Views into the ProgramCosts' string pool.
  std::string_view estimator;
  std::string_view note;
};

struct ProgramCosts {
  std::vector<OpCost> ops;  // indexed by workload::OpId
  // Estimate lookups made while costing this program and how many the model's cache answered.
  // The model's cache_stats() accumulates over every program it costs (the run's hit rate).
  CacheStats cache;
  // Estimates requested: one per kernel (kCompute entry).
  std::uint64_t estimates = 0;

  [[nodiscard]] const OpCost& operator[](workload::OpId id) const { return ops[id]; }
  // The view of `text` in the string pool (interned: equal texts share one copy).
  std::string_view intern(std::string_view text);

 private:
  // Owns the text behind OpCost::estimator and note; shared so that copies stay valid.
  std::shared_ptr<std::set<std::string, std::less<>>> strings_ = std::make_shared<std::set<std::string, std::less<>>>();
};

// Costs every op of the program (docs/compute.md, "The cost table"). Estimates go through the
// model (and its memoising cache). Throws OrreryError when an estimator fails (a plugin error).
ProgramCosts cost_program(const workload::Program& program, ComputeModel& model, const CostOptions& options);

// --- executions: `orrery inspect --cost` ---------------------------------------------------------

struct ClassTotals {
  std::uint64_t executions = 0;  // kCompute entries run
  std::uint64_t launches = 0;    // the kernels they launch (OpCost::launches)
  Flops flops;
  Bytes bytes_read;
  Bytes bytes_written;
  SimTime time;
};

// Totals over the ops one device executes in one run of the program: the entry function (every
// function when there is none), while bodies times their trip count (conditions trip count + 1
// times), called functions once per call, the costliest branch of if and case (an upper bound),
// and the regions of manual computations and async ops once.
struct ExecutionTotals {
  Flops flops;
  Bytes bytes_read;
  Bytes bytes_written;
  SimTime time;
  std::array<ClassTotals, kOpClassCount> classes{};
  std::array<std::uint64_t, 4> role_executions{};       // by CostRole
  std::uint64_t launches = 0;                           // kernels launched (OpCost::launches)
  std::map<std::string, std::uint64_t> estimators;      // estimator -> kernel executions
  std::map<std::string, std::uint64_t> free_ops;        // op name -> executions
  std::map<std::string, std::uint64_t> communication;   // op name -> executions
  std::map<std::string, std::uint64_t> approximate;     // "op name (why)" -> executions of flagged ops
  std::map<workload::OpId, std::uint64_t> kernels;      // kCompute op -> its executions

  [[nodiscard]] Bytes bytes() const { return bytes_read + bytes_written; }
  void add(const ExecutionTotals& other, std::uint64_t times);
};

// Throws OrreryError (naming the loop and how to override it) for a loop without a trip count.
ExecutionTotals execution_totals(const workload::Program& program, const ProgramCosts& costs);

}  // namespace orrery::compute
