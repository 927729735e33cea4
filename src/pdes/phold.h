// PHOLD, the standard PDES benchmark, with the ROSS parameters
// (../shared/reference/validation.md): every LP starts with `start_events` events; an event at LP
// i at time t schedules one new event at t + lookahead + Exp(mean - lookahead), sent with
// probability `remote` to an LP drawn uniformly from all LPs and otherwise to LP i itself.
// Times are in simulated microseconds (1.0 = 10^6 ps); each draw is converted to picoseconds by
// SimTime's rounding rule.
#pragma once

#include <string>

#include "pdes/communicator.h"
#include "pdes/partition.h"
#include "pdes/stats.h"

namespace orrery::pdes {

struct PholdParams {
  LpId lps = 1024;
  std::uint32_t start_events = 16;
  double remote = 0.1;     // probability that a new event goes to a uniformly drawn LP
  double mean = 1.0;       // mean timestamp increment (µs)
  double lookahead = 0.1;  // minimum timestamp increment (µs); also the channel latency
  double end = 100.0;      // events at or after this time (µs) are not executed
  std::uint64_t seed = 1;
  std::string partition = "block";  // block | round-robin
};

// Throws OrreryError(kConfig) naming the first invalid parameter.
void validate(const PholdParams& params);

struct PholdResult {
  RunStats stats;
  PartitionReport partition;
};

PholdResult run_phold(Communicator& communicator, const PholdParams& params);

}  // namespace orrery::pdes
