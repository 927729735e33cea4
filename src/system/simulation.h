// The end-to-end training-step simulation (DESIGN.md "System"): ranks execute their programs on
// the PDES engine — compute ops in dependency order on a compute stream, collectives in program
// order on communication streams decomposed into transfers by their algorithm — and the network
// model carries the transfers.
//
// Per rank (an LP): compute ops start in dependency order, the lowest program index first among
// those ready; a collective is issued when it is the rank's next collective in program order, its
// inputs are ready and a stream is free (XLA's collective stream: in-order issue is what makes SPMD
// programs deadlock-free); it then overlaps independent compute. Send/recv are point-to-point:
// a send completes when its data is handed to the network, a recv when the data arrives. Ranks make
// their decisions in a lowest-priority "settle" event after every other event of the same
// timestamp, so simultaneous events give the same result whatever their arrival order, and results
// are identical for any number of MPI processes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "pdes/communicator.h"
#include "pdes/stats.h"
#include "system/program_model.h"

namespace orrery::system {

struct MemoryEstimate {
  std::string program;
  std::uint64_t arguments = 0;  // parameters, optimizer state and inputs, live all step
  std::uint64_t peak = 0;       // arguments plus the largest set of live intermediate results
  std::uint64_t capacity = 0;
  bool fits = true;
  // Where the peak is reached: the exec op (a kernel, collective, send or recv; 1-based in
  // program order, of `ops`) and the IR op it runs ("file:line:col stablehlo.dot_general"); 0 and
  // empty when the arguments are the peak or the estimate was given.
  std::uint64_t peak_op = 0;
  std::uint64_t ops = 0;
  std::string peak_at;
};

struct ProgramInput {
  std::shared_ptr<const workload::Program> program;
  std::string label;                  // for messages and reports (the file, and the module if several)
  std::vector<std::uint32_t> ranks;   // the global rank of each local device id
  std::shared_ptr<const OpTimes> times;
  std::uint32_t replicas = 0;         // rescale a data-parallel program (ProgramModel); 0: as written
  bool estimate_memory = true;        // false: its tensors' sizes are unknown (Chakra traces without them)
  // Given instead of estimated from the program (a Chakra trace's listed tensors): arguments and
  // peak; the capacity and the verdict are the run's.
  std::optional<MemoryEstimate> memory = std::nullopt;
  // Collectives whose groups join other programs' ranks (Chakra ranks of different graphs), or null.
  std::shared_ptr<const JointGroups> joint_groups = nullptr;
};

struct SimulationInput {
  const config::Scenario* scenario = nullptr;
  std::vector<ProgramInput> programs;
  std::string hardware;                // the preset's name
  BytesPerSecond memory_bandwidth;     // for the reduction rate when system.reduction_GBps is 0
  Bytes memory_capacity;               // for the memory warning
};

struct Spread {
  double min = 0.0;
  double mean = 0.0;
  double max = 0.0;
};

struct OpTotal {
  std::string name;   // "file.mlir:12:5 stablehlo.dot_general"
  std::string what;   // op kind, or "all_reduce ring 4 ranks 1.0 MiB"
  double executions = 0.0;  // per rank per step
  double seconds = 0.0;     // per rank per step
};

struct RunSummary {
  std::uint32_t ranks = 0;
  std::uint32_t steps = 0;
  std::vector<double> step_end_s;  // when the last rank finished each step
  double first_step_s = 0.0;
  double steady_step_s = 0.0;      // mean of steps 2..N (the first step when N = 1)
  double step_time_s = 0.0;        // the steady-state step
  // Per rank over the measured step(s); means are over ranks.
  Spread compute_s;
  Spread comm_s;          // time a collective is in flight on the rank
  Spread exposed_comm_s;  // collective in flight and the compute stream idle
  Spread idle_s;          // step time minus compute minus exposed communication
  std::vector<OpTotal> top_ops;
  std::vector<OpTotal> top_collectives;
  std::vector<std::string> algorithms;  // "all_reduce: ring (272)"
  std::string network_model;
  std::string topology;
  std::uint64_t transfers = 0;
  std::uint64_t transfer_bytes = 0;
  std::vector<MemoryEstimate> memory;
  std::vector<std::string> warnings;
  pdes::RunStats engine;
  std::string partition;
};

// What a run records for its trace (output.detail), for the ranks this process simulates. Rows
// of one rank are in the order the rank's events happened; `blocks` says how many rows each
// local rank has (ranks increasing), so that the trace writer can place them. Times are integer
// picoseconds of simulated time.
struct OpRow {  // a compute kernel (output.detail ops and transfers)
  std::uint32_t rank = 0;
  std::uint32_t step = 0;     // the training step, from 0
  std::uint32_t name = 0;     // index into TraceRecord::strings: "file:line:col op" of the kernel's op
  std::uint32_t label = 0;    // index into strings: the kernel ("fusion of 12 ops (reduction)", or the op)
  std::uint64_t start_ps = 0;
  std::uint64_t end_ps = 0;
};

struct CollectiveRow {  // a collective, or a send or recv op (output.detail collectives and above)
  std::uint32_t rank = 0;
  std::uint32_t step = 0;
  std::uint32_t name = 0;       // index into strings
  std::uint32_t kind = 0;       // index into strings: all_reduce, ..., send, recv
  std::uint32_t algorithm = 0;  // index into strings: ring, tree, ... ("" for send and recv)
  std::uint32_t members = 0;    // group size (2 for a send or recv with a peer, 1 for none)
  std::uint32_t combined = 0;   // IR ops combined into it (1: as exported)
  std::uint64_t bytes = 0;      // the collective's size (as the summary counts it)
  std::uint64_t issued_ps = 0;  // issued on the rank's comm stream (before any launch cost)
  std::uint64_t end_ps = 0;     // complete on this rank
};

struct TransferRow {  // a network transfer, recorded by its receiver (output.detail transfers)
  std::uint32_t destination = 0;  // the receiving rank
  std::uint32_t source = 0;       // the sending rank
  std::uint32_t step = 0;         // the receiver's training step the data is for
  std::uint32_t kind = 0;         // index into strings: the collective's kind, or "send"
  std::uint64_t bytes = 0;
  std::uint64_t sent_ps = 0;       // handed to the network (before the injection delay)
  std::uint64_t delivered_ps = 0;  // its last byte at the receiver
};

struct RankBlock {
  std::uint32_t rank = 0;
  std::uint64_t ops = 0;
  std::uint64_t collectives = 0;
  std::uint64_t transfers = 0;
};

struct TraceRecord {
  config::TraceDetail detail = config::TraceDetail::kSummary;
  std::vector<std::string> strings;  // the same on every process
  std::vector<OpRow> ops;
  std::vector<CollectiveRow> collectives;
  std::vector<TransferRow> transfers;
  std::vector<RankBlock> blocks;
  // Per rank (all ranks, on every process): program, device, endpoint, node, steps completed,
  // and each step's record.
  struct Rank {
    std::uint32_t program = 0;
    std::uint32_t device = 0;
    std::uint32_t endpoint = 0;
    std::uint32_t node = 0;
  };
  std::vector<Rank> ranks;
  struct Step {
    std::uint32_t rank = 0;
    std::uint32_t step = 0;
    std::uint64_t start_ps = 0;
    std::uint64_t end_ps = 0;
    std::uint64_t compute_ps = 0;
    std::uint64_t comm_ps = 0;
    std::uint64_t exposed_comm_ps = 0;
  };
  std::vector<Step> steps;  // all ranks, rank then step order
  // Per network link (all links, on every process): bytes delivered over it (output.detail
  // transfers; empty below), and the link's ends and rate.
  struct Link {
    std::uint32_t link = 0;
    std::uint32_t from = 0;  // vertex ids of the topology graph
    std::uint32_t to = 0;
    std::uint32_t kind = 0;  // index into strings: scale_up, nic, fabric, ...
    double bandwidth_Bps = 0.0;
    std::uint64_t latency_ps = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<Link> links;
};

// Each program's model (execution graph, op durations, collectives) as a run builds it: the
// scenario's branch rule and collective-combining threshold. Throws OrreryError naming a program
// that is given the wrong number of ranks.
std::vector<std::unique_ptr<ProgramModel>> build_program_models(const SimulationInput& input);

// Runs the simulation on `communicator` (every process calls it). Throws OrreryError for bad input
// (naming the program, op and ranks) and for a deadlock (naming the blocked ranks and what each
// waits for).
// With `trace`, also records what its `detail` asks for (set `trace->detail` before the call).
RunSummary simulate(pdes::Communicator& communicator, const SimulationInput& input, TraceRecord* trace = nullptr);

}  // namespace orrery::system
