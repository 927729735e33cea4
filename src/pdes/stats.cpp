#include "pdes/stats.h"

#include <fmt/format.h>

namespace orrery::pdes {

double RunStats::events_per_second() const {
  return wall_seconds > 0 ? static_cast<double>(events) / wall_seconds : 0.0;
}

double RunStats::windows_per_simulated_second() const {
  const double simulated = last_event_time.seconds();
  return simulated > 0 ? static_cast<double>(windows) / simulated : 0.0;
}

std::string format_hash(std::uint64_t hash) { return fmt::format("{:016x}", hash); }

std::string RunStats::describe() const {
  std::string out = fmt::format(
      "events committed   {}\n"
      "wall time          {:.3f} s\n"
      "events per second  {:.4g} ({:.4g} per process)\n"
      "processes          {}\n"
      "windows            {} ({:.4g} per simulated second)\n"
      "lookahead          {}\n"
      "remote events      {}\n"
      "last event at      {} ps\n"
      "history hash       {}\n",
      events, wall_seconds, events_per_second(),
      processes.empty() ? 0.0 : events_per_second() / static_cast<double>(processes.size()),
      processes.size(), windows, windows_per_simulated_second(),
      lookahead.is_max() ? std::string("none (no channel crosses processes)")
                         : fmt::format("{} ps", lookahead.ps()),
      remote_events, last_event_time.ps(), format_hash(history_hash));
  out += "process      LPs       events   windows  remote out   remote in   event s    sync s\n";
  for (const auto& p : processes) {
    out += fmt::format("{:>7} {:>8} {:>12} {:>9} {:>11} {:>11} {:>9.3f} {:>9.3f}\n", p.process, p.lps,
                       p.events, p.windows, p.remote_sent, p.remote_received, p.event_seconds,
                       p.sync_seconds);
  }
  return out;
}

}  // namespace orrery::pdes
