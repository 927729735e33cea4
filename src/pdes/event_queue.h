// The pending-event set. DaryHeap is a d-ary min-heap of compact 24-byte entries ordered by (time, tie).
// Payloads live elsewhere (EventPool), addressed by the entry's slot, so sifting moves 24 bytes.
// Removal uses the bottom-up strategy (move the hole to a leaf along minimum children, then sift
// the last entry up from there), which suits simulation workloads where the entry taken from the
// back of the heap is usually late and belongs near the bottom. bench/queue_bench.cpp compares
// arities 2, 4 and 8 with std::priority_queue and Boost.Heap's pairing heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/assert.h"

namespace orrery::pdes {

struct QueueEntry {
  std::uint64_t time = 0;  // picoseconds
  std::uint64_t tie = 0;   // make_tie(priority, source, sequence)
  std::uint32_t slot = 0;  // payload slot in the EventPool
  std::uint32_t destination = 0;
};
static_assert(sizeof(QueueEntry) == 24);

inline bool entry_before(const QueueEntry& a, const QueueEntry& b) {
  return a.time < b.time || (a.time == b.time && a.tie < b.tie);
}

// entry_before as a function object, so that algorithms inline it.
struct EntryBefore {
  bool operator()(const QueueEntry& a, const QueueEntry& b) const { return entry_before(a, b); }
};

template <unsigned Arity>
class DaryHeap {
  static_assert(Arity >= 2);

 public:
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  void reserve(std::size_t n) { heap_.reserve(n); }
  void clear() { heap_.clear(); }

  [[nodiscard]] const QueueEntry& top() const {
    ORRERY_DEBUG_ASSERT(!heap_.empty(), "top() of an empty event queue");
    return heap_.front();
  }

  void push(const QueueEntry& entry) {
    std::size_t hole = heap_.size();
    heap_.push_back(entry);
    sift_up(hole, entry);
  }

  // Replaces the contents with `entries` and restores the heap property in O(n) (Floyd).
  void assign(std::vector<QueueEntry>& entries) {
    heap_.swap(entries);
    entries.clear();
    const std::size_t n = heap_.size();
    if (n < 2) {
      return;
    }
    for (std::size_t i = (n - 2) / Arity + 1; i-- > 0;) {
      sift_down(i);
    }
  }

  QueueEntry pop() {
    ORRERY_DEBUG_ASSERT(!heap_.empty(), "pop() of an empty event queue");
    const QueueEntry result = heap_.front();
    const QueueEntry last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) {
      return result;
    }
    // Move the hole at the root down to a leaf, always along the smallest child.
    std::size_t hole = 0;
    for (;;) {
      const std::size_t first = hole * Arity + 1;
      if (first >= n) {
        break;
      }
      const std::size_t end = first + Arity < n ? first + Arity : n;
      std::size_t best = first;
      for (std::size_t child = first + 1; child < end; ++child) {
        if (entry_before(heap_[child], heap_[best])) {
          best = child;
        }
      }
      heap_[hole] = heap_[best];
      hole = best;
    }
    sift_up(hole, last);
    return result;
  }

 private:
  void sift_down(std::size_t hole) {
    const QueueEntry entry = heap_[hole];
    const std::size_t n = heap_.size();
    for (;;) {
      const std::size_t first = hole * Arity + 1;
      if (first >= n) {
        break;
      }
      const std::size_t end = first + Arity < n ? first + Arity : n;
      std::size_t best = first;
      for (std::size_t child = first + 1; child < end; ++child) {
        if (entry_before(heap_[child], heap_[best])) {
          best = child;
        }
      }
      if (!entry_before(heap_[best], entry)) {
        break;
      }
      heap_[hole] = heap_[best];
      hole = best;
    }
    heap_[hole] = entry;
  }

  void sift_up(std::size_t hole, const QueueEntry& entry) {
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / Arity;
      if (!entry_before(entry, heap_[parent])) {
        break;
      }
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = entry;
  }

  std::vector<QueueEntry> heap_;
};


// Payload storage with a free list: no heap allocation once the pool has reached its high-water
// mark. For empty payload types nothing is stored.
template <class Payload>
class EventPool {
 public:
  std::uint32_t store(const Payload& payload) {
    if (!free_.empty()) {
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      slots_[slot] = payload;
      return slot;
    }
    slots_.push_back(payload);
    return static_cast<std::uint32_t>(slots_.size() - 1);
  }
  // Returns the payload and frees its slot.
  Payload take(std::uint32_t slot) {
    Payload payload = slots_[slot];
    free_.push_back(slot);
    return payload;
  }
  [[nodiscard]] std::size_t capacity() const { return slots_.size(); }

 private:
  std::vector<Payload> slots_;
  std::vector<std::uint32_t> free_;
};

}  // namespace orrery::pdes
