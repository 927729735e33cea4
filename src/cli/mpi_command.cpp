#include "cli/mpi_command.h"

#include <cstdio>

#include "pdes/mpi_communicator.h"
#include "util/logging.h"

namespace orrery::cli {

int exit_status(const OrreryError& error) {
  switch (error.code()) {
    case ErrorCode::kConfig:
    case ErrorCode::kParse:
    case ErrorCode::kInvalidInput:
    case ErrorCode::kIo:
      return 2;
    default:
      return 1;
  }
}

int run_with_mpi(const GlobalOptions& global, const std::function<int(pdes::Communicator&)>& body) {
  pdes::MpiSession mpi(nullptr, nullptr);
  pdes::MpiCommunicator communicator(MPI_COMM_WORLD);
  try {
    configure_logging(global.log_level, static_cast<int>(communicator.rank()));
    return body(communicator);
  } catch (const OrreryError& error) {
    if (!pdes::is_secondary_failure(error)) {
      std::fprintf(stderr, "orrery: %s\n", error.what());
    }
    std::fflush(stderr);
    std::fflush(stdout);
    if (error.coordinated()) {
      MPI_Barrier(MPI_COMM_WORLD);
    } else if (communicator.size() > 1) {
      pdes::MpiSession::abort(exit_status(error));
    }
    return exit_status(error);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "orrery: internal error: %s\n", error.what());
    std::fflush(stderr);
    if (communicator.size() > 1) {
      pdes::MpiSession::abort(1);
    }
    return 1;
  }
}

}  // namespace orrery::cli
