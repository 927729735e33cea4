// Logging through spdlog to stderr. Under MPI only process 0 logs below warning level, and every
// line of a process other than 0 carries its rank.
#pragma once

#include <string_view>

namespace orrery {

// level: trace, debug, info, warn, error, off. Throws OrreryError(kConfig) for an unknown level.
void configure_logging(std::string_view level, int process_rank);

}  // namespace orrery
