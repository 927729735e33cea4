// CalendarQueue: the engine's pending-event set. The "near" tier holds only the events of the
// current time slot, as a sorted run consumed from the front plus a small d-ary heap for events
// pushed into the slot after it was sorted; later events wait, unsorted, in a two-level calendar:
// fine slots of width w covering the current epoch (B slots), coarse buckets of width B·w covering
// the next B epochs, and an overflow list beyond. When the near heap runs dry the next non-empty
// fine slot is heapified into it; when the epoch is done the next non-empty coarse bucket is spread
// over the fine slots; when everything is in overflow the calendar is rebuilt around it, choosing
// w so that the first epoch holds about kTargetPerSlot·B events. Each event is moved at most three
// times and sorted once within its slot, so push and pop cost O(1) amortised plus O(log slot size). The idea follows Brown's calendar queue (CACM 1988) and Tang, Goh and Thng's ladder
// queue (ACM TOMACS 2005), with the near tier kept exactly ordered so that pops come out in
// (time, tie) order: the order is identical to that of a single heap, which the tests check.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "pdes/event_queue.h"

namespace orrery::pdes {

template <std::size_t Slots = 1024, std::size_t TargetPerSlot = 32>
class BasicCalendarQueue {
 public:
  static_assert((Slots & (Slots - 1)) == 0, "slot counts are powers of two (slot arithmetic uses shifts)");
  static constexpr std::size_t kSlots = Slots;                  // B: fine slots per epoch, coarse buckets
  static constexpr std::size_t kTargetPerSlot = TargetPerSlot;  // events per fine slot the width aims at
  static constexpr unsigned kSlotBits = std::countr_zero(Slots);
  // Entries of storage an emptied slot or bucket keeps for reuse; beyond it the storage is freed.
  // Without the bound every one of the 2·B vectors kept the largest burst it ever held, and a run
  // whose pending set peaked at 9K events held 100+ MB of empty capacity (bench/RESULTS.md, "System").
  static constexpr std::size_t kRetainedEntries = 4 * TargetPerSlot;

  BasicCalendarQueue() : fine_(kSlots), coarse_(kSlots) {}

  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }
  // Entries of storage the calendar's vectors hold (capacity, empty or not; the near heap aside).
  [[nodiscard]] std::size_t stored_capacity() const {
    std::size_t total = run_.capacity() + overflow_.capacity();
    for (const auto& slot : fine_) {
      total += slot.capacity();
    }
    for (const auto& bucket : coarse_) {
      total += bucket.capacity();
    }
    return total;
  }

  void push(const QueueEntry& entry) {
    ++size_;
    if (entry.time < near_end_) {
      late_.push(entry);
      return;
    }
    place(entry);
  }

  // The earliest entry. The queue must not be empty.
  const QueueEntry& top() {
    settle();
    return *near_top();
  }

  // The earliest entry if it is already in the near tier (no reorganisation), else nullptr.
  [[nodiscard]] const QueueEntry* peek_near() const { return near_top(); }

  QueueEntry pop() {
    settle();
    --size_;
    if (run_position_ < run_.size() && (late_.empty() || entry_before(run_[run_position_], late_.top()))) {
      return run_[run_position_++];
    }
    return late_.pop();
  }

 private:
  // Files an entry at or after near_end_ into a fine slot, a coarse bucket or the overflow.
  void place(const QueueEntry& entry) {
    const std::uint64_t slot = (entry.time - base_) >> width_bits_;
    if (!calibrated_ || slot >= kSlots * kSlots) {
      overflow_.push_back(entry);
      return;
    }
    const std::uint64_t epoch = slot >> kSlotBits;
    if (epoch == epoch_) {
      fine_[slot & (kSlots - 1)].push_back(entry);
      ++fine_count_;
    } else {
      coarse_[epoch].push_back(entry);
      ++coarse_count_;
    }
  }

  // Empties a slot or bucket, keeping its storage only up to kRetainedEntries.
  static void release(std::vector<QueueEntry>& entries) {
    if (entries.capacity() > kRetainedEntries) {
      std::vector<QueueEntry>().swap(entries);
    } else {
      entries.clear();
    }
  }

  [[nodiscard]] std::uint64_t width() const { return std::uint64_t{1} << width_bits_; }

  // Start of an epoch that holds at least one entry (so it cannot overflow).
  [[nodiscard]] std::uint64_t epoch_start(std::uint64_t epoch) const {
    return base_ + ((epoch << kSlotBits) << width_bits_);
  }

  static std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
  }

  [[nodiscard]] bool near_empty() const { return run_position_ == run_.size() && late_.empty(); }

  [[nodiscard]] const QueueEntry* near_top() const {
    const bool run_left = run_position_ < run_.size();
    if (run_left && (late_.empty() || entry_before(run_[run_position_], late_.top()))) {
      return &run_[run_position_];
    }
    return late_.empty() ? nullptr : &late_.top();
  }

  void settle() {
    while (near_empty()) {
      step();
    }
  }

  // Makes fine slot `slot` the sorted run of the near tier (the run and late heap are empty).
  void take_slot(std::size_t slot) {
    run_.swap(fine_[slot]);  // the consumed run's storage goes back to the slot, up to the bound
    release(fine_[slot]);
    run_position_ = 0;
    std::sort(run_.begin(), run_.end(), EntryBefore{});
  }

  // Refills the empty near heap from the next non-empty tier.
  void step() {
    if (fine_count_ > 0) {
      std::size_t slot = fine_position_;
      while (fine_[slot].empty()) {
        ++slot;
      }
      skipped_ += slot - fine_position_;
      fine_count_ -= fine_[slot].size();
      moved_ += fine_[slot].size();
      take_slot(slot);
      fine_position_ = slot + 1;
      near_end_ = saturating_add(epoch_start(epoch_), fine_position_ << width_bits_);
      if (skipped_ > 4 * kSlots && skipped_ > 16 * moved_) {
        recalibrate();  // the slots are far too narrow for the events: choose a new width
      }
      return;
    }
    if (coarse_count_ > 0) {
      std::uint64_t epoch = epoch_ + 1;
      while (coarse_[epoch].empty()) {
        ++epoch;
      }
      skipped_ += epoch - epoch_;
      epoch_ = epoch;
      fine_position_ = 0;
      near_end_ = epoch_start(epoch_);
      std::vector<QueueEntry>& bucket = coarse_[epoch];
      coarse_count_ -= bucket.size();
      for (const QueueEntry& entry : bucket) {
        fine_[(entry.time - near_end_) >> width_bits_].push_back(entry);
      }
      fine_count_ += bucket.size();
      release(bucket);
      return;
    }
    rebuild();
  }

  // Moves every waiting entry back to the overflow and rebuilds the calendar around it.
  void recalibrate() {
    for (std::size_t slot = fine_position_; slot < kSlots; ++slot) {
      overflow_.insert(overflow_.end(), fine_[slot].begin(), fine_[slot].end());
      release(fine_[slot]);
    }
    for (std::size_t epoch = epoch_ + 1; epoch < kSlots; ++epoch) {
      overflow_.insert(overflow_.end(), coarse_[epoch].begin(), coarse_[epoch].end());
      release(coarse_[epoch]);
    }
    fine_count_ = 0;
    coarse_count_ = 0;
    if (near_empty()) {
      rebuild();
    } else {
      // Keep the near tier; the calendar restarts at its end.
      rebuild_at(near_end_);
    }
  }

  // Everything waiting is in the overflow and the near tier is empty: restart at the earliest.
  void rebuild() {
    std::uint64_t earliest = std::numeric_limits<std::uint64_t>::max();
    for (const QueueEntry& entry : overflow_) {
      earliest = std::min(earliest, entry.time);
    }
    rebuild_at(earliest);
  }

  void rebuild_at(std::uint64_t start) {
    base_ = start;
    near_end_ = start;
    epoch_ = 0;
    fine_position_ = 0;
    skipped_ = 0;
    moved_ = 0;
    const std::size_t n = overflow_.size();
    if (n == 0) {
      return;  // nothing waits; the width stays as it was
    }
    // Width: the (kTargetPerSlot·B)-th earliest entry should fall at the end of the first epoch.
    const std::size_t k = std::min<std::size_t>(n - 1, kTargetPerSlot * kSlots);
    std::nth_element(overflow_.begin(), overflow_.begin() + static_cast<std::ptrdiff_t>(k), overflow_.end(),
                     [](const QueueEntry& a, const QueueEntry& b) { return a.time < b.time; });
    // The smallest power-of-two width with kSlots * width > span.
    const std::uint64_t span = overflow_[k].time - start;
    width_bits_ = static_cast<unsigned>(std::bit_width(span >> kSlotBits));
    calibrated_ = true;
    std::vector<QueueEntry> waiting;
    waiting.swap(overflow_);
    for (const QueueEntry& entry : waiting) {
      place(entry);
    }
  }

  std::vector<QueueEntry> run_;   // the current slot, sorted; run_[run_position_] is next
  std::size_t run_position_ = 0;
  DaryHeap<4> late_;              // entries pushed into the current slot after it was sorted
  std::uint64_t near_end_ = 0;    // every entry earlier than this is in the near tier
  std::uint64_t base_ = 0;      // start of epoch 0
  unsigned width_bits_ = 0;     // fine slot width is 2^width_bits_ ps
  bool calibrated_ = false;     // false until the first rebuild chose a width
  std::uint64_t epoch_ = 0;     // current epoch: its entries are in fine_ (or the near tier)
  std::size_t fine_position_ = 0;
  std::size_t fine_count_ = 0;
  std::size_t coarse_count_ = 0;
  std::size_t size_ = 0;
  std::uint64_t skipped_ = 0;  // empty slots stepped over since the last rebuild
  std::uint64_t moved_ = 0;    // entries moved into the near tier since the last rebuild
  std::vector<std::vector<QueueEntry>> fine_;
  std::vector<std::vector<QueueEntry>> coarse_;
  std::vector<QueueEntry> overflow_;
};

using CalendarQueue = BasicCalendarQueue<>;
using EventQueue = CalendarQueue;

}  // namespace orrery::pdes
