// Chakra execution traces as Orrery programs (docs/chakra.md).
//
// A job is one trace file per rank, `<prefix>.<rank>.et`. Ranks whose files hold the same graph
// (the same nodes, dependencies, kinds, sizes and process groups; durations and point-to-point
// peers may differ) share one workload::Program with a device per rank (DESIGN.md invariant 3):
// the ASTRA-sim microbenchmarks and converted SPMD traces become one program whatever the rank
// count. Each node becomes an op in dependency order (data_deps; ctrl_deps are ignored, as ASTRA-sim's
// feeder ignores them); the program's "source text" lists one node per line, so a message's
// file:line names the node (line = node position + 1).
//
// Nodes:
//   COMP_NODE (GPU)      a kernel: duration_micros if given, else num_ops and tensor_size on the
//                        device roofline (ASTRA-sim's roofline mode); neither: takes no time.
//   MEM_LOAD/STORE_NODE  tensor_size bytes at the device's memory bandwidth.
//   COMM_COLL_NODE (GPU) ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST (root: the
//                        group's first rank); comm_size is each rank's input buffer. The group is
//                        pg_name's entry in the communicator-group file ("" or "0" without one:
//                        every rank), narrowed by involved_dim to the network dimensions marked true.
//   COMM_SEND/RECV_NODE  point-to-point, matched in order per (source, destination, comm_tag); a
//                        shared graph whose node talks to ranks of several graphs, or of a graph
//                        of another size, is split (by peer graph, else a graph per rank).
//   host ops (is_cpu_op) and METADATA_NODE  take no device time; their dependencies pass through.
// Memory: from the device tensors the first rank's nodes list (PyTorch-converted traces; see
// memory_footprint below), when there are any.
// When ranks share a graph but their durations differ, each node takes the largest (a warning
// says by how much). A collective whose group mixes ranks of different graphs is joint
// (workload::JointGroups): the system layer matches it across the programs in group order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontend/chakra/trace.h"
#include "pdes/communicator.h"
#include "util/result.h"
#include "workload/collectives.h"
#include "workload/program.h"

namespace orrery::frontend::chakra {

struct WorkloadOptions {
  std::string prefix;                     // files <prefix>.<rank>.et
  std::uint32_t ranks = 0;                // 0: every <prefix>.N.et from N = 0 up to the first missing one
  std::string comm_groups;                // communicator-group JSON ({"id": [ranks]}), or empty
  std::vector<std::uint32_t> dimensions;  // NPUs per network dimension (for involved_dim), or empty
};

enum class CostKind : std::uint8_t {
  kFree,      // takes no time (host ops, metadata, collectives and sends: the system layer's)
  kDuration,  // the trace's duration
  kRoofline,  // num_ops and tensor_size on the device roofline
  kMemory,    // tensor_size at memory bandwidth
};

struct NodeCost {
  CostKind kind = CostKind::kFree;
  std::uint64_t duration_ps = 0;  // kDuration
  std::uint64_t num_ops = 0;      // kRoofline
  std::uint64_t tensor_size = 0;  // kRoofline, kMemory
};

// A program's device memory from the tensors its first rank's trace lists (PyTorch-converted
// traces; none when no node lists a device tensor). Storages a node reads before any node writes
// them existed before the step (parameters, optimizer state, the batch) and stay live throughout;
// a storage first written in the step is live from that node to its last reader or writer, in the
// order the nodes run. Each storage counts the furthest bytes any reference reaches into it.
struct MemoryFootprint {
  std::uint64_t arguments = 0;  // storages that existed before the step
  std::uint64_t peak = 0;       // arguments plus the most storages live at one node
};
std::optional<MemoryFootprint> memory_footprint(const Trace& trace, const std::vector<std::uint32_t>& order);

struct Program {
  std::shared_ptr<const workload::Program> program;
  std::string label;                 // "prefix.{0-7}.et"
  std::vector<std::uint32_t> ranks;  // the global rank of each device of the program
  std::vector<NodeCost> costs;       // per workload::OpId
  workload::JointGroups joint_groups;  // collectives whose groups hold ranks of other programs
  std::optional<MemoryFootprint> memory;
};

struct Workload {
  std::vector<Program> programs;
  std::uint32_t ranks = 0;
  std::vector<std::string> warnings;
};

// Reads the ranks' traces and builds the programs. Errors name the file and node (or ranks).
//
// With a communicator (the MPI processes of a run), the processes load the job together: each
// reads, decodes and checks only its block of the ranks' files (ranks [R p / P, R (p + 1) / P) of R
// on process p of P); they exchange each rank's graph signature and point-to-point peers and reduce
// the per-node duration extremes, and every process reads the first file of each distinct graph
// itself, so all of them build the same programs. An error is the same on every process: that of
// the lowest rank that has one. Every process of the communicator calls this with the same
// options. Without one, this process reads every file.
Result<Workload> load_workload(const WorkloadOptions& options, pdes::Communicator* communicator = nullptr);

}  // namespace orrery::frontend::chakra
