// What the engine needs from its process group, behind an interface so the synchronisation can be
// unit-tested without MPI (InProcessGroup) and so several engines can run side by side on
// separate MPI communicators (MpiCommunicator wraps any MPI_Comm, never assumes MPI_COMM_WORLD).
// A virtual call per window is cheap; nothing here is called per event.
#pragma once

#include <cstddef>
#include <cstring>
#include <functional>
#include <cstdint>
#include <span>
#include <vector>

#include "pdes/types.h"
#include "util/error.h"

namespace orrery::pdes {

using ByteBuffer = std::vector<std::byte>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual ProcessId rank() const = 0;
  [[nodiscard]] virtual ProcessId size() const = 0;

  // Element-wise minimum across all processes, in place. The engine's one collective per window.
  virtual void allreduce_min(std::span<std::uint64_t> values) = 0;

  // Point-to-point exchange with a symmetric neighbour set: sends outgoing[i] to neighbours[i]
  // and fills incoming[i] with what neighbours[i] sent. Every neighbour sends exactly one
  // (possibly empty) buffer per call.
  virtual void exchange(std::span<const ProcessId> neighbours, std::span<const ByteBuffer> outgoing,
                        std::span<ByteBuffer> incoming) = 0;

  // Every process's buffer, indexed by process, on every process (statistics, hashes).
  virtual std::vector<ByteBuffer> allgather(const ByteBuffer& mine) = 0;
};

// Helpers to move trivially copyable records through byte buffers.
template <class T>
void append_record(ByteBuffer& buffer, const T& record) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&record);
  buffer.insert(buffer.end(), bytes, bytes + sizeof(T));
}

template <class T>
std::vector<T> read_records(const ByteBuffer& buffer) {
  std::vector<T> records(buffer.size() / sizeof(T));
  if (!records.empty()) {
    std::memcpy(records.data(), buffer.data(), records.size() * sizeof(T));
  }
  return records;
}

}  // namespace orrery::pdes

namespace orrery::pdes {

// Runs `step` on every process and agrees on the outcome with one allreduce: if any process
// threw, the lowest such process rethrows its error and every other process throws a
// "stopped because process k failed" error marked as secondary. Used around set-up phases so
// that an error on one process never leaves the others waiting in a collective.
void run_collectively(Communicator& communicator, const std::function<void()>& step);

// True for the error raised on processes that did not fail themselves (callers print nothing).
bool is_secondary_failure(const OrreryError& error);

// The error a process raises when another process failed: it carries the failing process's
// error code, so every process exits with the same status.
OrreryError secondary_failure(std::uint64_t failed_process, ErrorCode code);

// Packs (process, error code) so that one MIN reduction yields the lowest failing process and
// its code; kNoFailure when nothing failed.
inline constexpr std::uint64_t kNoFailure = ~std::uint64_t{0};
inline std::uint64_t encode_failure(ProcessId process, ErrorCode code) {
  return (static_cast<std::uint64_t>(process) << 8) | static_cast<std::uint8_t>(code);
}
inline ProcessId failed_process(std::uint64_t encoded) { return static_cast<ProcessId>(encoded >> 8); }
inline ErrorCode failed_code(std::uint64_t encoded) { return static_cast<ErrorCode>(encoded & 0xff); }

}  // namespace orrery::pdes
