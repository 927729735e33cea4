#include "pdes/in_process_group.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "util/assert.h"

namespace orrery::pdes {

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(InProcessGroup& group, ProcessId rank) : group_(group), rank_(rank) {}

  [[nodiscard]] ProcessId rank() const override { return rank_; }
  [[nodiscard]] ProcessId size() const override { return group_.size_; }

  void allreduce_min(std::span<std::uint64_t> values) override {
    group_.reduce_slots_[rank_].assign(values.begin(), values.end());
    group_.barrier_.arrive_and_wait();
    for (ProcessId p = 0; p < group_.size_; ++p) {
      const auto& slot = group_.reduce_slots_[p];
      ORRERY_ASSERT(slot.size() == values.size(), "allreduce_min with different lengths");
      for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = std::min(values[i], slot[i]);
      }
    }
    if (rank_ == 0) {
      ++group_.allreduce_count_;
    }
    group_.barrier_.arrive_and_wait();
  }

  void exchange(std::span<const ProcessId> neighbours, std::span<const ByteBuffer> outgoing,
                std::span<ByteBuffer> incoming) override {
    for (std::size_t i = 0; i < neighbours.size(); ++i) {
      group_.mailbox_[neighbours[i]][rank_] = outgoing[i];
    }
    group_.barrier_.arrive_and_wait();
    for (std::size_t i = 0; i < neighbours.size(); ++i) {
      incoming[i] = std::move(group_.mailbox_[rank_][neighbours[i]]);
      group_.mailbox_[rank_][neighbours[i]].clear();
    }
    group_.barrier_.arrive_and_wait();
  }

  std::vector<ByteBuffer> allgather(const ByteBuffer& mine) override {
    group_.gather_slots_[rank_] = mine;
    group_.barrier_.arrive_and_wait();
    std::vector<ByteBuffer> all = group_.gather_slots_;
    group_.barrier_.arrive_and_wait();
    return all;
  }

 private:
  InProcessGroup& group_;
  ProcessId rank_;
};

InProcessGroup::InProcessGroup(ProcessId size)
    : size_(size),
      barrier_(static_cast<std::ptrdiff_t>(size)),
      reduce_slots_(size),
      mailbox_(size, std::vector<ByteBuffer>(size)),
      gather_slots_(size) {
  ORRERY_ASSERT(size > 0, "a process group needs at least one process");
}

InProcessGroup::~InProcessGroup() = default;

void InProcessGroup::run(const std::function<void(Communicator&)>& body) {
  std::vector<std::exception_ptr> errors(size_);
  std::vector<std::thread> threads;
  threads.reserve(size_);
  for (ProcessId rank = 0; rank < size_; ++rank) {
    threads.emplace_back([this, rank, &body, &errors] {
      InProcessCommunicator communicator(*this, rank);
      try {
        body(communicator);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (const auto& error : errors) {
    if (error) {
      std::rethrow_exception(error);
    }
  }
}

}  // namespace orrery::pdes
