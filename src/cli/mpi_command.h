// Running a subcommand that may be launched by mpirun. The MPI session stays open while errors
// are reported: an agreed failure (every process raised it together) is printed by the failing
// process and followed by a barrier, so no process exits — and makes mpirun kill the job — before
// the message is out; any other failure in a parallel run is printed and aborts the job.
#pragma once

#include <functional>

#include "cli/commands.h"
#include "pdes/communicator.h"
#include "util/error.h"

namespace orrery::cli {

// The exit status for an error: 2 for bad input (config, parse, invalid input, I/O), 1 otherwise.
int exit_status(const OrreryError& error);

// Opens MPI, configures logging for this process and runs `body`; returns its status or the
// error's, after reporting the error as described above.
int run_with_mpi(const GlobalOptions& global, const std::function<int(pdes::Communicator&)>& body);

}  // namespace orrery::cli
