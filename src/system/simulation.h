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
#include <string>
#include <vector>

#include "config/scenario.h"
#include "pdes/communicator.h"
#include "pdes/stats.h"
#include "system/program_model.h"

namespace orrery::system {

struct ProgramInput {
  std::shared_ptr<const workload::Program> program;
  std::string label;                  // for messages and reports (the file, and the module if several)
  std::vector<std::uint32_t> ranks;   // the global rank of each local device id
  std::shared_ptr<const OpTimes> times;
  std::uint32_t replicas = 0;         // rescale a data-parallel program (ProgramModel); 0: as written
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

struct MemoryEstimate {
  std::string program;
  std::uint64_t arguments = 0;   // parameters, optimizer state and inputs, live all step
  std::uint64_t peak = 0;        // arguments plus the largest set of live intermediate results
  std::uint64_t capacity = 0;
  bool fits = true;
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

// Runs the simulation on `communicator` (every process calls it). Throws OrreryError for bad input
// (naming the program, op and ranks) and for a deadlock (naming the blocked ranks and what each
// waits for).
RunSummary simulate(pdes::Communicator& communicator, const SimulationInput& input);

}  // namespace orrery::system
