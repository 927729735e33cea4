// The classic "hold" benchmark for pending-event sets: the queue holds N entries; each operation
// pops the earliest and pushes one at its time plus lookahead + Exp(mean - lookahead) (PHOLD's
// increment, in picoseconds with mean 1 µs, lookahead 0.1 µs). Compares the engine's
// CalendarQueue with d-ary heaps, std::priority_queue and Boost.Heap's pairing and d-ary heaps.
#include <benchmark/benchmark.h>

#include <boost/heap/d_ary_heap.hpp>
#include <boost/heap/pairing_heap.hpp>
#include <queue>

#include "pdes/calendar_queue.h"
#include "pdes/random.h"

namespace {

using orrery::pdes::QueueEntry;

struct Later {
  bool operator()(const QueueEntry& a, const QueueEntry& b) const { return orrery::pdes::entry_before(b, a); }
};

std::uint64_t increment(orrery::pdes::Random& random) {
  return 100'000 + static_cast<std::uint64_t>(random.exponential(900'000.0));
}

template <class Queue>
struct Adapter {
  Queue queue;
  void push(const QueueEntry& e) { queue.push(e); }
  QueueEntry pop() { return queue.pop(); }
};

template <class Queue>
struct StdAdapter {
  Queue queue;
  void push(const QueueEntry& e) { queue.push(e); }
  QueueEntry pop() {
    QueueEntry e = queue.top();
    queue.pop();
    return e;
  }
};

template <class Wrapped>
void hold(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Wrapped wrapped;
  orrery::pdes::Random random(1, 2);
  std::uint32_t sequence = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrapped.push(QueueEntry{increment(random), sequence++, 0, static_cast<std::uint32_t>(i)});
  }
  for (auto _ : state) {
    QueueEntry e = wrapped.pop();
    e.time += increment(random);
    e.tie = sequence++;
    wrapped.push(e);
  }
  state.SetItemsProcessed(state.iterations());
}

using Calendar = Adapter<orrery::pdes::CalendarQueue>;
// 128 events per slot instead of 32: a larger near heap, fewer slot moves.
using CalendarWide = Adapter<orrery::pdes::BasicCalendarQueue<1024, 128>>;

void increment_only(benchmark::State& state) {
  orrery::pdes::Random random(1, 2);
  std::uint64_t sum = 0;
  for (auto _ : state) {
    sum += increment(random);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(increment_only)->Name("hold/increment_only");
using Binary = Adapter<orrery::pdes::DaryHeap<2>>;
using Quaternary = Adapter<orrery::pdes::DaryHeap<4>>;
using Octonary = Adapter<orrery::pdes::DaryHeap<8>>;
using StdPriority = StdAdapter<std::priority_queue<QueueEntry, std::vector<QueueEntry>, Later>>;
using BoostPairing = StdAdapter<boost::heap::pairing_heap<QueueEntry, boost::heap::compare<Later>>>;
using BoostQuaternary = StdAdapter<boost::heap::d_ary_heap<QueueEntry, boost::heap::arity<4>, boost::heap::compare<Later>>>;

}  // namespace

#define QUEUE_BENCH(type) BENCHMARK(hold<type>)->Name("hold/" #type)->Arg(1024)->Arg(16384)->Arg(262144)

QUEUE_BENCH(Calendar);
QUEUE_BENCH(CalendarWide);
QUEUE_BENCH(Binary);
QUEUE_BENCH(Quaternary);
QUEUE_BENCH(Octonary);
QUEUE_BENCH(StdPriority);
QUEUE_BENCH(BoostPairing);
QUEUE_BENCH(BoostQuaternary);

BENCHMARK_MAIN();
