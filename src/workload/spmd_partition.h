// An SPMD partitioner: a pre-partitioning program (shardings on its arguments, results and
// sharding constraints, no collectives; what `jax.jit(...).lower(...)` exports) becomes the
// per-device program XLA's partitioner would run — per-device shapes and the collectives that the
// shardings need — so that a simulation runs the same work XLA's compiled program does instead of
// the whole global program on every device. docs/stablehlo.md, "SPMD partitioning", describes the
// rules; docs/validation/gpu.md compares the result with XLA's own partitioned programs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "workload/program.h"

namespace orrery::workload {

struct SpmdReport {
  std::uint32_t devices = 0;
  // Collectives inserted, by kind name ("all_gather"), and their per-device result bytes.
  std::map<std::string, std::uint64_t> collectives;
  std::map<std::string, std::uint64_t> collective_bytes;
  // Their per-device operand bytes (a reduce_scatter's operand is its result times the group).
  std::map<std::string, std::uint64_t> collective_operand_bytes;
  // Ops with no partitioning rule: they run on whole (replicated) operands, as XLA runs an op it
  // cannot partition; by op name.
  std::map<std::string, std::uint64_t> replicated_ops;
  // Values whose sharding came from an annotation (arguments, results, constraints).
  std::uint64_t annotated_values = 0;
};

// The per-device program of a pre-partitioning `program` (ProgramForm::kPrePartitioning), or the
// program itself for any other form or a single device. Calls are expected to be inlined first
// (ProgramBuilder::inline_calls); a call that remains runs replicated. Throws OrreryError
// (kUnsupported) naming the attribute for a sharding it cannot express: explicit device lists that
// are not a reshaped, transposed iota, device orders whose axes do not nest, several meshes, or
// replicas as well as partitions.
std::shared_ptr<const Program> partition_spmd(std::shared_ptr<const Program> program,
                                              SpmdReport* report = nullptr);

}  // namespace orrery::workload
