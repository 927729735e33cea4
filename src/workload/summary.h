// What `orrery inspect` reports about a program: its shape (partitions, replicas, form), an op
// histogram, collectives by kind with their per-device result bytes and group sizes, while loops
// with their trip counts, and the largest ops by output bytes.
//
// Counting. Ops are counted where they execute: the entry function (main, or the only public
// function; every function when there is neither) and the functions it calls, with the regions
// of control-flow ops (while, if, case, manual computations, fusions, async ops). The bodies of
// reductions, sorts and scatters are part of their op and are not counted on their own. Each op
// counts once, whatever the trip count of a loop around it or the number of calls to its function.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workload/program.h"

namespace orrery::workload {

struct CollectiveSummary {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;                             // per-device result bytes, summed over the ops
  std::map<std::uint32_t, std::uint64_t> group_sizes;  // devices per group -> ops (0: unresolved)
};

struct LoopSummary {
  std::string name;
  TripCountSource source = TripCountSource::kUnknown;
  std::uint64_t trip_count = 0;
  std::string reason;
  std::uint32_t line = 0;
};

struct OpSize {
  OpId op = kNoId;
  std::string name;  // full op name
  std::uint64_t bytes = 0;
  std::string result_types;
  std::uint32_t line = 0;
};

struct ProgramSummary {
  std::string module_name;
  std::uint32_t module_index = 0;
  std::uint32_t line = 0;  // where the module starts
  std::uint32_t num_partitions = 1;
  std::uint32_t num_replicas = 1;
  ProgramForm form = ProgramForm::kPartitioned;
  std::string entry_function;  // empty when there is none
  std::uint64_t functions = 0;
  std::uint64_t counted_functions = 0;
  std::uint64_t ops = 0;
  std::map<std::string, std::uint64_t> op_histogram;     // full op name -> count
  std::map<std::string, CollectiveSummary> collectives;  // collective kind name -> summary
  std::map<std::string, std::uint64_t> opaque_ops;  // ops of unmodelled dialects (and --lenient unknowns)
  std::vector<LoopSummary> loops;
  std::vector<OpSize> largest_ops;  // at most 10, largest first
  std::uint64_t source_bytes = 0;
  std::uint64_t heap_bytes = 0;  // Program::heap_bytes()
};

ProgramSummary summarize(const Program& program);

// True for ops whose regions run as part of the program's control flow (while, if, case,
// manual computations, fusions, async ops, ops of unmodelled dialects), false for ops whose
// regions are computations inside the op (reduce bodies, sort comparators...).
bool has_executed_regions(OpKind kind);

}  // namespace orrery::workload
