// The pending-event sets must pop entries in exact (time, tie) order — the order that makes runs
// deterministic — whatever the push/pop interleaving and time distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>

#include "pdes/calendar_queue.h"
#include "pdes/random.h"
#include "pdes/types.h"

namespace orrery::pdes {
namespace {

struct Later {
  bool operator()(const QueueEntry& a, const QueueEntry& b) const { return entry_before(b, a); }
};
using Reference = std::priority_queue<QueueEntry, std::vector<QueueEntry>, Later>;

bool same(const QueueEntry& a, const QueueEntry& b) {
  return a.time == b.time && a.tie == b.tie && a.slot == b.slot && a.destination == b.destination;
}

// Time distributions a simulator meets: PHOLD-like exponentials, many simultaneous events,
// clustered bursts with long idle gaps, and huge spans.
enum class Shape { kExponential, kSimultaneous, kBursts, kHugeSpan };

std::uint64_t draw(Shape shape, Random& random) {
  switch (shape) {
    case Shape::kExponential: return 100'000 + static_cast<std::uint64_t>(random.exponential(900'000.0));
    case Shape::kSimultaneous: return random.below(4) * 1000;
    case Shape::kBursts: return random.below(8) == 0 ? 10'000'000'000ULL + random.below(100) : random.below(50);
    case Shape::kHugeSpan: return static_cast<std::uint64_t>(random.next_u32()) << random.below(30);
  }
  return 0;
}

template <class Queue>
void check_against_reference(Shape shape, std::size_t initial, std::size_t operations, std::uint64_t seed) {
  Queue queue;
  Reference reference;
  Random random(seed, 7);
  std::uint32_t sequence = 0;
  std::uint64_t now = 0;
  auto push = [&](std::uint64_t time) {
    const QueueEntry entry{time, make_tie(static_cast<Priority>(random.below(3)), random.below(64), sequence),
                           sequence, random.below(1000)};
    ++sequence;
    queue.push(entry);
    reference.push(entry);
  };
  for (std::size_t i = 0; i < initial; ++i) {
    push(draw(shape, random));
  }
  for (std::size_t i = 0; i < operations; ++i) {
    if (!reference.empty() && random.below(100) < 55) {
      ASSERT_EQ(queue.size(), reference.size());
      const QueueEntry expected = reference.top();
      reference.pop();
      const QueueEntry got = queue.pop();
      ASSERT_TRUE(same(got, expected)) << "operation " << i << ": got t=" << got.time << " expected t=" << expected.time;
      now = got.time;
    } else {
      push(now + draw(shape, random));  // never into the past, like the engine
    }
  }
  while (!reference.empty()) {
    const QueueEntry expected = reference.top();
    reference.pop();
    ASSERT_TRUE(same(queue.pop(), expected));
  }
  EXPECT_TRUE(queue.empty());
}

TEST(CalendarQueue, MatchesReferenceOrderForEveryShape) {
  for (const Shape shape : {Shape::kExponential, Shape::kSimultaneous, Shape::kBursts, Shape::kHugeSpan}) {
    for (const std::size_t initial : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{50'000}}) {
      SCOPED_TRACE(testing::Message() << "shape " << static_cast<int>(shape) << " initial " << initial);
      check_against_reference<CalendarQueue>(shape, initial, 200'000, 11 + initial);
    }
  }
}

TEST(CalendarQueue, NarrowAndWideConfigurationsAgree) {
  check_against_reference<BasicCalendarQueue<4, 1>>(Shape::kExponential, 1000, 100'000, 3);
  check_against_reference<BasicCalendarQueue<4096, 512>>(Shape::kBursts, 1000, 100'000, 4);
}

TEST(CalendarQueue, EmptiedSlotsDoNotKeepTheStorageOfPastBursts) {
  // A background population calibrates the calendar; then 50 bursts of 10,000 simultaneous-ish
  // events, each in a later epoch (a coarse bucket of its own), are pushed and drained in turn.
  // Were every emptied bucket and slot to keep its largest burst's storage, the calendar would hold
  // 50 x 16,384 entries of capacity once drained; it may keep at most kRetainedEntries per vector,
  // plus the last burst in the sorted run and in the overflow.
  CalendarQueue queue;
  Random random(5, 7);
  std::uint32_t sequence = 0;
  auto push = [&](std::uint64_t time) {
    queue.push(QueueEntry{time, make_tie(0, 0, sequence), sequence, 0});
    ++sequence;
  };
  for (std::size_t i = 0; i < 32 * CalendarQueue::kSlots; ++i) {
    push(random.below(1'000'000'000));
  }
  queue.pop();  // the first pop calibrates: a fine slot of about 1 us, an epoch of about 1 ms
  constexpr std::uint64_t kEpoch = std::uint64_t{1} << 30;
  constexpr std::size_t kBurst = 10'000;
  for (std::uint64_t burst = 1; burst <= 50; ++burst) {
    for (std::size_t i = 0; i < kBurst; ++i) {
      push((burst + 1) * kEpoch + random.below(1000));
    }
    std::uint64_t last = 0;
    while (!queue.empty()) {
      const QueueEntry entry = queue.pop();
      ASSERT_GE(entry.time, last);
      last = entry.time;
    }
  }
  const std::size_t bound = 2 * CalendarQueue::kSlots * CalendarQueue::kRetainedEntries + 2 * 2 * kBurst;
  EXPECT_LE(queue.stored_capacity(), bound);
}

TEST(DaryHeap, MatchesReferenceOrder) {
  check_against_reference<DaryHeap<2>>(Shape::kExponential, 1000, 50'000, 5);
  check_against_reference<DaryHeap<4>>(Shape::kSimultaneous, 1000, 50'000, 6);
  check_against_reference<DaryHeap<8>>(Shape::kBursts, 1000, 50'000, 7);
}

TEST(DaryHeap, AssignBuildsAValidHeap) {
  DaryHeap<4> heap;
  std::vector<QueueEntry> entries;
  for (std::uint32_t i = 0; i < 1000; ++i) {
    entries.push_back(QueueEntry{(i * 7919U) % 1009U, i, i, 0});
  }
  std::vector<QueueEntry> sorted = entries;
  std::sort(sorted.begin(), sorted.end(), entry_before);
  heap.assign(entries);
  EXPECT_TRUE(entries.empty());
  for (const QueueEntry& expected : sorted) {
    ASSERT_TRUE(same(heap.pop(), expected));
  }
}

TEST(TieBreak, OrdersByTimeThenPriorityThenSourceThenSequence) {
  // Ties break on (time, priority, source LP, per-source sequence) — DESIGN.md invariant 2.
  CalendarQueue queue;
  queue.push(QueueEntry{10, make_tie(1, 0, 0), 0, 0});
  queue.push(QueueEntry{10, make_tie(0, 5, 9), 1, 0});
  queue.push(QueueEntry{10, make_tie(0, 5, 2), 2, 0});
  queue.push(QueueEntry{10, make_tie(0, 3, 7), 3, 0});
  queue.push(QueueEntry{9, make_tie(15, 100, 100), 4, 0});
  std::vector<std::uint32_t> order;
  while (!queue.empty()) {
    order.push_back(queue.pop().slot);
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{4, 3, 2, 1, 0}));
}

TEST(TieBreak, PacksAndUnpacksFields) {
  const std::uint64_t tie = make_tie(kMaxPriority, kMaxLps - 1, 0xfffffffeU);
  EXPECT_EQ(tie_priority(tie), kMaxPriority);
  EXPECT_EQ(tie_source(tie), kMaxLps - 1);
  EXPECT_EQ(tie_sequence(tie), 0xfffffffeU);
}

}  // namespace
}  // namespace orrery::pdes
