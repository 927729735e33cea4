// The conservative parallel discrete-event engine (DESIGN.md, "The PDES engine").
//
// One engine for every run: a sequential run is the same code with a communicator of size one.
// Synchronisation is windowed (YAWNS; SST's serial-skip sync): each window starts with one
// MPI_Allreduce(MIN) of the processes' next event times (and an error flag), the window ends at
// that minimum plus the lookahead, every process executes its events below the window end, and
// events for other processes are exchanged point-to-point with the static neighbour set at the
// window boundary. Idle stretches are skipped in one window because the next window starts at
// the next event anywhere. Lookahead is the minimum latency of the channels that cross processes.
//
// Determinism: events are ordered by (time, priority, source LP, per-source sequence), all of
// which are independent of the partition; each LP has its own random stream and its own rolling
// history hash, combined in LP-id order at the end. So any number of processes and any partition
// give the same event history.
//
// Errors: a handler that throws (a model error), a send below the lookahead or an event into the
// past stops the run on every process at the next window boundary; the failing process rethrows
// its error, the others report which process failed. Never a hang.
#pragma once

#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "pdes/channel.h"
#include "pdes/communicator.h"
#include "pdes/calendar_queue.h"
#include "pdes/partition.h"
#include "pdes/random.h"
#include "pdes/stats.h"
#include "pdes/types.h"
#include "util/error.h"
#include "util/hash.h"

namespace orrery::pdes {

struct EngineOptions {
  SimTime end_time = SimTime::max();  // events at or after end_time are not executed
  std::uint64_t seed = 1;             // seeds every LP's random stream
};

namespace detail {

// The rolling per-LP history hash: one step per executed event.
inline std::uint64_t history_step(std::uint64_t hash, std::uint64_t time, std::uint64_t tie) {
  hash = (hash ^ time) * 0x9e3779b97f4a7c15ULL;
  hash = (hash ^ tie) * 0xc2b2ae3d27d4eb4fULL;
  return hash ^ (hash >> 29);
}

struct LpHash {
  LpId lp;
  std::uint32_t unused;
  std::uint64_t hash;
};

// Non-template parts of the engine: the window protocol, statistics and the final hash.
class EngineCore {
 public:
  EngineCore(Communicator& communicator, const PartitionMap& partition, const ChannelTable& channels);

  // Returns the next window's start (the global minimum next-event time), or nullopt when the run
  // is over. Throws if any process reported an error (the reporting process rethrows its own).
  std::optional<SimTime> begin_window(SimTime local_next, SimTime end_time);
  // Exchanges the per-neighbour outgoing buffers and returns the received ones.
  std::vector<ByteBuffer>& exchange(std::vector<ByteBuffer>& outgoing);
  void record_error(Error error);
  [[nodiscard]] bool has_error() const { return error_.has_value(); }

  // Gathers statistics and per-LP hashes from every process and combines them.
  RunStats finish(ProcessStats local, const std::vector<LpHash>& lp_hashes);

  [[nodiscard]] SimTime lookahead() const { return analysis_.lookahead; }
  [[nodiscard]] const std::vector<ProcessId>& neighbours() const { return neighbours_; }
  // Index into neighbours() of `process`, or -1 when it is not a neighbour.
  [[nodiscard]] int neighbour_index(ProcessId process) const { return neighbour_index_[process]; }
  [[nodiscard]] const CrossingAnalysis& crossings() const { return analysis_; }
  [[nodiscard]] double sync_seconds() const { return sync_seconds_; }
  [[nodiscard]] ProcessId rank() const { return communicator_.rank(); }
  [[nodiscard]] ProcessId size() const { return communicator_.size(); }

 private:
  Communicator& communicator_;
  CrossingAnalysis analysis_;
  std::vector<ProcessId> neighbours_;
  std::vector<int> neighbour_index_;
  std::vector<ByteBuffer> incoming_;
  std::optional<Error> error_;
  double sync_seconds_ = 0.0;
};

}  // namespace detail

template <class Payload>
class Engine {
  static_assert(std::is_trivially_copyable_v<Payload>, "event payloads cross processes as bytes");

 public:
  Engine(Communicator& communicator, const PartitionMap& partition, const ChannelTable& channels,
         EngineOptions options)
      : core_(communicator, partition, channels),
        partition_(partition),
        options_(options),
        rank_(communicator.rank()),
        lps_(partition.num_lps()),
        outgoing_(core_.neighbours().size()),
        outgoing_events_(core_.neighbours().size()) {
    ORRERY_ASSERT(partition.num_processes() == communicator.size(),
                  "partition built for a different number of processes");
    ORRERY_ASSERT(partition.num_lps() <= kMaxLps, "too many LPs for the tie-break key");
    for (LpId lp = 0; lp < partition.num_lps(); ++lp) {
      if (partition.owner(lp) == rank_) {
        lps_[lp].random = Random(options_.seed, lp);
        local_ids_.push_back(lp);
      }
    }
  }

  // --- set-up -------------------------------------------------------------------------------
  [[nodiscard]] bool is_local(LpId lp) const { return partition_.owner(lp) == rank_; }
  [[nodiscard]] const std::vector<LpId>& local_lps() const { return local_ids_; }
  [[nodiscard]] LpId num_lps() const { return partition_.num_lps(); }

  // An initial event; ignored unless `destination` is local, so every process may schedule the
  // same initial events. Its source is the destination itself.
  void schedule(LpId destination, SimTime time, const Payload& payload, Priority priority = 0) {
    if (!is_local(destination)) {
      return;
    }
    if (time.is_max()) [[unlikely]] {
      throw OrreryError(ErrorCode::kModel,
                        fmt::format("simulated time overflow: an initial event for LP {} lies beyond the 2^64 ps "
                                    "(213 days) the engine represents",
                                    destination));
    }
    LocalLp& lp = lps_[destination];
    push_local(destination, time, make_tie(priority, destination, lp.next_sequence++), payload);
  }
  // The random stream of a local LP (for drawing initial events).
  Random& random_of(LpId lp) {
    ORRERY_ASSERT(is_local(lp), "random_of() of an LP owned by another process");
    return lps_[lp].random;
  }

  // Runs until no events remain or the end time is reached. Handler must provide
  // `void handle(Engine<Payload>&, const Event<Payload>&)`.
  template <class Handler>
  RunStats run(Handler& handler);

  // --- during an event ------------------------------------------------------------------------
  [[nodiscard]] SimTime now() const { return now_; }
  [[nodiscard]] LpId current_lp() const { return current_id_; }
  Random& random() { return current_->random; }

  void send(LpId destination, SimTime delay, const Payload& payload, Priority priority = 0) {
    ORRERY_DEBUG_ASSERT(priority <= kMaxPriority, "priority out of range");
    const std::uint64_t tie = make_tie(priority, current_id_, current_->next_sequence++);
    const SimTime time = now_ + delay;
    if (time.is_max()) [[unlikely]] {
      time_overflow(destination, delay);
    }
    if (is_local(destination)) {
      push_local(destination, time, tie, payload);
      return;
    }
    send_remote(destination, time, delay, tie, payload);
  }
  void send_at(LpId destination, SimTime time, const Payload& payload, Priority priority = 0) {
    if (time < now_) {
      throw OrreryError(ErrorCode::kModel,
                        fmt::format("event into the past: LP {} at t={} ps sent an event to LP {} "
                                    "for t={} ps",
                                    current_id_, now_.ps(), destination, time.ps()));
    }
    send(destination, time - now_, payload, priority);
  }

  [[nodiscard]] SimTime lookahead() const { return core_.lookahead(); }
  [[nodiscard]] ProcessId process() const { return rank_; }
  [[nodiscard]] ProcessId num_processes() const { return core_.size(); }
  [[nodiscard]] const CrossingAnalysis& crossings() const { return core_.crossings(); }

 private:
  // Per-LP engine state, indexed by LP id (entries of other processes' LPs stay unused).
  struct alignas(32) LocalLp {
    std::uint64_t hash = 0;
    std::uint32_t next_sequence = 0;
    Random random;
  };
  struct WireEvent {
    std::uint64_t time;
    std::uint64_t tie;
    LpId destination;
    Payload payload;
  };

  // An event at SimTime::max() (a saturated sum) would never run, and the run would end as if
  // stuck: report the out-of-range duration instead.
  [[noreturn]] void time_overflow(LpId destination, SimTime delay) const {
    throw OrreryError(ErrorCode::kModel,
                      fmt::format("simulated time overflow: LP {} at t={:.9g} s scheduled an event for LP {} {:.6g} s "
                                  "later, beyond the 2^64 ps (213 days) the engine represents; a duration or delay in "
                                  "the scenario is out of range",
                                  current_id_, now_.seconds(), destination, delay.seconds()));
  }

  void push_local(LpId destination, SimTime time, std::uint64_t tie, const Payload& payload) {
    std::uint32_t slot = 0;
    if constexpr (!std::is_empty_v<Payload>) {
      slot = pool_.store(payload);
    }
    queue_.push(QueueEntry{time.ps(), tie, slot, destination});
    stats_.peak_pending = std::max<std::uint64_t>(stats_.peak_pending, queue_.size());
  }

  void send_remote(LpId destination, SimTime time, SimTime delay, std::uint64_t tie,
                   const Payload& payload) {
    const ProcessId owner = partition_.owner(destination);
    const int index = core_.neighbour_index(owner);
    if (index < 0) {
      throw OrreryError(ErrorCode::kModel,
                        fmt::format("LP {} (process {}) sent an event to LP {} (process {}) but no "
                                    "channel between them was declared",
                                    current_id_, rank_, destination, owner));
    }
    if (delay < core_.lookahead()) {
      throw OrreryError(ErrorCode::kModel,
                        fmt::format("cross-process send below the lookahead: LP {} (process {}) -> "
                                    "LP {} (process {}) at t={} ps with delay {} ps < lookahead {} ps",
                                    current_id_, rank_, destination, owner, now_.ps(), delay.ps(),
                                    core_.lookahead().ps()));
    }
    outgoing_events_[static_cast<std::size_t>(index)].push_back(
        WireEvent{time.ps(), tie, destination, payload});
    ++stats_.remote_sent;
  }

  template <class Handler>
  void execute_window(Handler& handler, SimTime window_end) {
    const std::uint64_t end = window_end.ps();
    while (!queue_.empty() && queue_.top().time < end) {
      const QueueEntry entry = queue_.pop();
      if (const QueueEntry* next = queue_.peek_near()) {
        __builtin_prefetch(&lps_[next->destination]);  // hide the next LP's cache miss
      }
      LocalLp& lp = lps_[entry.destination];
      lp.hash = detail::history_step(lp.hash, entry.time, entry.tie);
      now_ = SimTime::from_ps(entry.time);
      current_ = &lp;
      current_id_ = entry.destination;
      Event<Payload> event;
      event.time = now_;
      event.destination = entry.destination;
      event.source = tie_source(entry.tie);
      event.sequence = tie_sequence(entry.tie);
      event.priority = tie_priority(entry.tie);
      if constexpr (!std::is_empty_v<Payload>) {
        event.payload = pool_.take(entry.slot);
      }
      handler.handle(*this, event);
      ++stats_.events;
    }
  }

  // Serialises outgoing events, exchanges them and queues what arrives.
  void exchange_window(SimTime window_end) {
    for (std::size_t i = 0; i < outgoing_events_.size(); ++i) {
      auto& bytes = outgoing_[i];
      bytes.resize(outgoing_events_[i].size() * sizeof(WireEvent));
      if (!bytes.empty()) {
        std::memcpy(bytes.data(), outgoing_events_[i].data(), bytes.size());
      }
      outgoing_events_[i].clear();
    }
    auto& incoming = core_.exchange(outgoing_);
    for (const ByteBuffer& buffer : incoming) {
      const std::size_t count = buffer.size() / sizeof(WireEvent);
      for (std::size_t k = 0; k < count; ++k) {
        WireEvent event;
        std::memcpy(&event, buffer.data() + k * sizeof(WireEvent), sizeof(WireEvent));
        if (event.time < window_end.ps() || !is_local(event.destination)) {
          core_.record_error(Error{ErrorCode::kModel,
                                   fmt::format("event from LP {} for LP {} at t={} ps arrived "
                                               "before the window end {} ps (or at the wrong process)",
                                               tie_source(event.tie), event.destination, event.time,
                                               window_end.ps()),
                                   std::nullopt,
                                   {}});
          continue;
        }
        push_local(event.destination, SimTime::from_ps(event.time), event.tie, event.payload);
        ++stats_.remote_received;
      }
    }
  }

  detail::EngineCore core_;
  const PartitionMap& partition_;
  EngineOptions options_;
  ProcessId rank_;
  std::vector<LocalLp> lps_;
  std::vector<LpId> local_ids_;
  EventQueue queue_;
  EventPool<Payload> pool_;
  std::vector<ByteBuffer> outgoing_;
  std::vector<std::vector<WireEvent>> outgoing_events_;
  ProcessStats stats_;
  SimTime now_;
  LocalLp* current_ = nullptr;
  LpId current_id_ = 0;
};

template <class Payload>
template <class Handler>
RunStats Engine<Payload>::run(Handler& handler) {
  using Clock = std::chrono::steady_clock;
  const auto run_start = Clock::now();
  double event_seconds = 0.0;
  SimTime last_event;
  for (;;) {
    const SimTime local_next = queue_.empty() ? SimTime::max() : SimTime::from_ps(queue_.top().time);
    const std::optional<SimTime> window_start = core_.begin_window(local_next, options_.end_time);
    if (!window_start) {
      break;
    }
    SimTime window_end = *window_start + core_.lookahead();
    if (options_.end_time < window_end) {
      window_end = options_.end_time;
    }
    const auto work_start = Clock::now();
    try {
      execute_window(handler, window_end);
    } catch (const OrreryError& error) {
      core_.record_error(error.error());
    } catch (const std::exception& error) {
      core_.record_error(Error{ErrorCode::kInternal, error.what(), std::nullopt, {}});
    }
    if (stats_.events > 0) {
      last_event = now_;
    }
    event_seconds += std::chrono::duration<double>(Clock::now() - work_start).count();
    if (core_.has_error()) {
      for (auto& events : outgoing_events_) {
        events.clear();
      }
    }
    exchange_window(window_end);
    ++stats_.windows;
  }
  stats_.process = rank_;
  stats_.lps = static_cast<LpId>(local_ids_.size());
  stats_.event_seconds = event_seconds;
  stats_.sync_seconds = core_.sync_seconds();
  stats_.last_event_ps = last_event.ps();
  stats_.wall_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  std::vector<detail::LpHash> hashes;
  hashes.reserve(local_ids_.size());
  for (const LpId lp : local_ids_) {
    hashes.push_back(detail::LpHash{lp, 0, lps_[lp].hash});
  }
  return core_.finish(stats_, hashes);
}

}  // namespace orrery::pdes
