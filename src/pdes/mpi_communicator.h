// Communicator over an MPI communicator handle (any, e.g. one produced by MPI_Comm_split).
#pragma once

#include <mpi.h>

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
};

}  // namespace orrery::pdes
