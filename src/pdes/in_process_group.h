// A process group of threads inside one OS process: N communicators that synchronise through a
// barrier and shared mailboxes. It lets unit tests run the windowed synchronisation with 1, 2 or 4
// "processes" without MPI (the fake communicator of the engine's tests).
#pragma once

#include <barrier>
#include <functional>
#include <memory>
#include <vector>

#include "pdes/communicator.h"

namespace orrery::pdes {

class InProcessGroup {
 public:
  explicit InProcessGroup(ProcessId size);
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  [[nodiscard]] ProcessId size() const { return size_; }
  // Runs body(communicator) on `size` threads, one per rank, and joins them. An exception thrown by
  // a body is rethrown here after all threads have ended (the lowest rank's first).
  void run(const std::function<void(Communicator&)>& body);

  // Number of allreduce_min calls made by rank 0 (for tests of the one-collective-per-window rule).
  [[nodiscard]] std::uint64_t allreduce_count() const { return allreduce_count_; }

 private:
  friend class InProcessCommunicator;
  ProcessId size_;
  std::barrier<> barrier_;
  std::vector<std::vector<std::uint64_t>> reduce_slots_;
  std::vector<std::vector<ByteBuffer>> mailbox_;  // mailbox_[to][from]
  std::vector<ByteBuffer> gather_slots_;
  std::uint64_t allreduce_count_ = 0;
};

}  // namespace orrery::pdes
