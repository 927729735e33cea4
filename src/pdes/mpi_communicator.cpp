#include "pdes/mpi_communicator.h"

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>

#include "util/error.h"

namespace orrery::pdes {
namespace {

constexpr int kExchangeTag = 7301;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw OrreryError(ErrorCode::kInternal, std::string(what) + " failed: " + std::string(text, length));
  }
}

int checked_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw OrreryError(ErrorCode::kUnsupported,
                      "a window exchange of " + std::to_string(bytes) +
                          " bytes exceeds MPI's int count; use more processes or a smaller lookahead");
  }
  return static_cast<int>(bytes);
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  int rank = 0;
  int size = 1;
  check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
  rank_ = static_cast<ProcessId>(rank);
  size_ = static_cast<ProcessId>(size);
}

void MpiCommunicator::allreduce_min(std::span<std::uint64_t> values) {
  check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                      MPI_MIN, comm_),
        "MPI_Allreduce");
}

void MpiCommunicator::exchange(std::span<const ProcessId> neighbours,
                               std::span<const ByteBuffer> outgoing, std::span<ByteBuffer> incoming) {
  requests_.assign(neighbours.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < neighbours.size(); ++i) {
    check(MPI_Isend(outgoing[i].data(), checked_count(outgoing[i].size()), MPI_BYTE,
                    static_cast<int>(neighbours[i]), kExchangeTag, comm_, &requests_[i]),
          "MPI_Isend");
  }
  for (std::size_t i = 0; i < neighbours.size(); ++i) {
    MPI_Status status;
    check(MPI_Probe(static_cast<int>(neighbours[i]), kExchangeTag, comm_, &status), "MPI_Probe");
    int count = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    incoming[i].resize(static_cast<std::size_t>(count));
    check(MPI_Recv(incoming[i].data(), count, MPI_BYTE, static_cast<int>(neighbours[i]), kExchangeTag,
                   comm_, MPI_STATUS_IGNORE),
          "MPI_Recv");
  }
  check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
}

std::vector<ByteBuffer> MpiCommunicator::allgather(const ByteBuffer& mine) {
  int my_size = checked_count(mine.size());
  std::vector<int> sizes(size_);
  check(MPI_Allgather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_), "MPI_Allgather");
  std::vector<int> displacements(size_);
  std::size_t total = 0;
  for (ProcessId p = 0; p < size_; ++p) {
    displacements[p] = checked_count(total);
    total += static_cast<std::size_t>(sizes[p]);
  }
  ByteBuffer all(total);
  check(MPI_Allgatherv(mine.data(), my_size, MPI_BYTE, all.data(), sizes.data(), displacements.data(),
                       MPI_BYTE, comm_),
        "MPI_Allgatherv");
  std::vector<ByteBuffer> result(size_);
  for (ProcessId p = 0; p < size_; ++p) {
    const auto begin = all.begin() + displacements[p];
    result[p].assign(begin, begin + sizes[p]);
  }
  return result;
}

namespace {

// Whether a launcher (mpirun, srun, ...) started this process.
bool launched() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) {
      return true;
    }
  }
  return false;
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    if (!launched() && std::getenv("OMPI_MCA_orte_tmpdir_base") == nullptr) {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/orrery-mpi.XXXXXX";
      if (mkdtemp(pattern.data()) != nullptr) {  // otherwise Open MPI's default place
        session_dir_ = pattern;
        setenv("OMPI_MCA_orte_tmpdir_base", session_dir_.c_str(), 1);
      }
    }
    check(MPI_Init(argc, argv), "MPI_Init");
    owns_ = true;
  }
}

MpiSession::~MpiSession() {
  if (owns_) {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (finalised == 0) {
      MPI_Finalize();
    }
  }
  if (!session_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(session_dir_, ignored);
  }
}

int MpiSession::world_rank() const {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int MpiSession::world_size() const {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace orrery::pdes
