// Run statistics of the engine, per process and in total.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pdes/types.h"

namespace orrery::pdes {

struct ProcessStats {
  ProcessId process = 0;
  LpId lps = 0;                    // LPs owned by this process
  std::uint64_t events = 0;        // committed (executed) events
  std::uint64_t windows = 0;       // synchronisation windows
  std::uint64_t remote_sent = 0;   // events sent to other processes
  std::uint64_t remote_received = 0;
  std::uint64_t peak_pending = 0;  // largest pending-event set, measured at every push
  std::uint64_t last_event_ps = 0; // time of the last committed event
  double event_seconds = 0.0;      // wall time executing events
  double sync_seconds = 0.0;       // wall time exchanging events and in the window allreduce
  double wall_seconds = 0.0;       // wall time of Engine::run
};

struct RunStats {
  std::vector<ProcessStats> processes;
  std::uint64_t events = 0;
  std::uint64_t windows = 0;
  std::uint64_t remote_events = 0;
  double wall_seconds = 0.0;  // the slowest process
  SimTime lookahead = SimTime::max();
  SimTime last_event_time;
  std::uint64_t history_hash = 0;

  [[nodiscard]] double events_per_second() const;
  [[nodiscard]] double windows_per_simulated_second() const;
  // A human-readable table: totals, then one line per process.
  [[nodiscard]] std::string describe() const;
};

// "0123456789abcdef": the history hash as 16 hex digits.
std::string format_hash(std::uint64_t hash);

}  // namespace orrery::pdes
