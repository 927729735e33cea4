// Communicator over an MPI communicator handle (any, e.g. one produced by MPI_Comm_split).
#pragma once

#include <mpi.h>

#include <string>

#include "pdes/communicator.h"

namespace orrery::pdes {

class MpiCommunicator final : public Communicator {
 public:
  // Does not take ownership of `comm`; the caller keeps it alive and frees it.
  explicit MpiCommunicator(MPI_Comm comm);

  [[nodiscard]] MPI_Comm comm() const { return comm_; }
  [[nodiscard]] ProcessId rank() const override { return rank_; }
  [[nodiscard]] ProcessId size() const override { return size_; }
  void allreduce_min(std::span<std::uint64_t> values) override;
  void exchange(std::span<const ProcessId> neighbours, std::span<const ByteBuffer> outgoing,
                std::span<ByteBuffer> incoming) override;
  std::vector<ByteBuffer> allgather(const ByteBuffer& mine) override;

 private:
  MPI_Comm comm_;
  ProcessId rank_ = 0;
  ProcessId size_ = 1;
  std::vector<MPI_Request> requests_;
};

// Initialises MPI on construction (if not yet initialised) and finalises it on destruction (if
// this guard initialised it). Runs as root are allowed through the OMPI_ALLOW_RUN_AS_ROOT
// variables set by the project's scripts, never by asking the user.
// A process started without a launcher (a singleton) gets an Open MPI session directory of its own
// (`orte_tmpdir_base`, removed at the end), unless the environment names one: concurrent
// singletons sharing /tmp/ompi.<host>.<uid> race as one removes it while another creates its
// directory there (open-mpi/ompi#8510), which ends MPI_Init.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int world_rank() const;
  [[nodiscard]] int world_size() const;
  // Ends every process of MPI_COMM_WORLD with `code` (used when only some processes failed).
  [[noreturn]] static void abort(int code);

 private:
  bool owns_ = false;
  std::string session_dir_;  // the singleton's own session directory base, removed at the end
};

}  // namespace orrery::pdes
