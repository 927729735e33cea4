// The network inside the PDES engine, reusable by any model whose events embed NetworkMessage
// (the traffic generator, the system layer's ranks).
//
// Layout: each endpoint is served by one LP of the caller's (lp_of_endpoint); the network adds
// one replica LP per process (replica_base + process). A transfer enters the network after the
// injection delay (system.endpoint_delay_ns, > 0):
//   - contention-free models (analytical): the source LP computes the delivery time (the model
//     may queue the transfer behind the same source's earlier ones; its state is per source, so
//     only this LP touches it) and sends kDelivered straight to the destination's LP, delay =
//     injection + queueing + transfer time;
//   - shared-state models (flow): the source LP sends kStart to every replica LP, delay =
//     injection. Every process runs an identical copy of the model (same starts, same order:
//     events tie-break on (time, priority, source LP, sequence)), settles once per timestamp
//     (a kSettle event at the lowest priority, after every start at that time), and delivers
//     only to the endpoints its own process runs, with zero delay — a local event.
// So the only channels that cross processes carry the injection delay, which is the lookahead.
// The replicated solver costs each process the whole model's work (measured in bench/RESULTS.md)
// and saves a round trip per transfer and a lookahead bounded by the smallest path latency,
// which a centralised network LP would need (docs/network.md).
//
// Results are identical for any process count; the engine's history hash is not, since replica
// LP ids and event counts depend on the number of replicas.
#pragma once

#include <fmt/format.h>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "network/model.h"
#include "pdes/engine.h"

namespace orrery::network {

// The caller's own data, carried with a transfer to its destination (and back to its source in a
// kSent notice) unchanged: two words, so that a caller can name a transfer by more than 64 bits.
struct MessageTag {
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  friend bool operator==(const MessageTag&, const MessageTag&) = default;
};

struct NetworkMessage {
  // kSent: to the source's LP when the transfer is delivered (layout.notify_source), so that a
  // sender can finish its send when the data has arrived, not when it handed the data over.
  enum class Kind : std::uint8_t { kStart, kSettle, kDelivered, kSent };
  Kind kind = Kind::kStart;
  TransferRequest request;
  SimTime sent;           // when the source handed the transfer to the network (before the injection delay)
  MessageTag tag;  // the caller's own data, carried to the destination unchanged
};

// How a simulation's payload carries a NetworkMessage. The default handles a payload that is a
// std::variant with NetworkMessage among its alternatives, and NetworkMessage itself.
template <class Payload>
struct NetworkPayload {
  static Payload wrap(const NetworkMessage& message) { return Payload{message}; }
  static const NetworkMessage* unwrap(const Payload& payload) { return std::get_if<NetworkMessage>(&payload); }
};
template <>
struct NetworkPayload<NetworkMessage> {
  static NetworkMessage wrap(const NetworkMessage& message) { return message; }
  static const NetworkMessage* unwrap(const NetworkMessage& payload) { return &payload; }
};

inline constexpr pdes::LpId kNoLp = std::numeric_limits<pdes::LpId>::max();

struct EngineNetworkLayout {
  std::vector<pdes::LpId> lp_of_endpoint;  // kNoLp for endpoints nobody uses
  pdes::LpId replica_base = 0;             // replica of process p is LP replica_base + p
  SimTime injection_delay;                 // > 0
  bool notify_source = false;              // replicated models: also tell the source's LP when each transfer is delivered (kSent)
};

template <class Payload>
class EngineNetwork {
  using Traits = NetworkPayload<Payload>;

 public:
  static constexpr pdes::Priority kSettlePriority = pdes::kMaxPriority;

  // `model` is this process's copy (replica) of the network model.
  EngineNetwork(std::unique_ptr<NetworkModel> model, EngineNetworkLayout layout)
      : model_(std::move(model)), layout_(std::move(layout)) {
    if (layout_.injection_delay == SimTime::zero()) {
      throw OrreryError(ErrorCode::kConfig,
                        "system.endpoint_delay_ns: the injection delay must be positive (it is the lookahead)");
    }
  }

  [[nodiscard]] NetworkModel& model() { return *model_; }

  // For a run that ended because no events were left (no end time): a transfer still in the
  // model is one whose finish the model put past the engine's 2^64 ps, where no event can wake
  // it. Throws the time-overflow error naming it, rather than letting the run look stuck or end
  // with transfers silently undelivered. Every replica holds the same model, so every process
  // throws alike.
  void check_drained() const {
    if (model_->in_flight() == 0) {
      return;
    }
    const std::string unfinishable = model_->describe_unfinishable();
    if (unfinishable.empty()) {
      throw OrreryError(ErrorCode::kInternal,
                        fmt::format("the {} network model holds {} transfers but no event to deliver them",
                                    model_->name(), model_->in_flight()));
    }
    throw OrreryError(ErrorCode::kModel,
                      fmt::format("simulated time overflow: no events are left but {} transfers are still in the "
                                  "network; {}, beyond the 2^64 ps (213 days) the engine represents; a size or "
                                  "bandwidth in the scenario is out of range",
                                  model_->in_flight(), unfinishable));
  }
  [[nodiscard]] bool replicated() const { return !model_->contention_free(); }

  // The channels this network uses under `partition`: endpoint LPs to endpoint LPs (analytical)
  // or to every replica (flow), at the injection delay; each replica to the endpoint LPs of its
  // own process at zero latency (never crossing processes).
  void declare_channels(pdes::ChannelTable& channels, const pdes::PartitionMap& partition) const {
    const pdes::LpId first = layout_.lp_of_endpoint.empty() ? 0 : min_endpoint_lp();
    const pdes::LpId last = layout_.lp_of_endpoint.empty() ? 0 : max_endpoint_lp() + 1;
    const pdes::LpRange endpoints{first, last - first};
    if (!replicated()) {
      channels.add(endpoints, endpoints, layout_.injection_delay, "network: endpoint -> endpoint");
      return;
    }
    const pdes::LpRange replicas{layout_.replica_base, partition.num_processes()};
    channels.add(endpoints, replicas, layout_.injection_delay, "network: endpoint -> replicas");
    for (pdes::ProcessId p = 0; p < partition.num_processes(); ++p) {
      for (const pdes::LpRange run : runs_of(partition, p)) {
        channels.add(pdes::LpRange::single(layout_.replica_base + p), run, SimTime::zero(),
                     "network: replica -> local endpoints");
      }
    }
  }

  // From an endpoint LP's handler: the transfer enters the network after the injection delay.
  // `tag` travels with it to the destination unchanged. Returns the delivery time when the model
  // is contention-free (the source knows it at once, so no kSent notice follows); nullopt when the
  // replicas time it (then a kSent notice follows if layout.notify_source).
  std::optional<SimTime> send(pdes::Engine<Payload>& engine, const TransferRequest& request, MessageTag tag = {}) {
    if (request.destination >= layout_.lp_of_endpoint.size() || layout_.lp_of_endpoint[request.destination] == kNoLp) {
      throw OrreryError(ErrorCode::kModel, fmt::format("network: transfer {} from endpoint {} to endpoint {}, which "
                                                       "no LP serves",
                                                       request.id, request.source, request.destination));
    }
    const NetworkMessage start{NetworkMessage::Kind::kStart, request, engine.now(), tag};
    if (!replicated()) {
      const SimTime entry = engine.now() + layout_.injection_delay;
      const std::optional<SimTime> delivery = model_->contention_free_delivery(entry, request);
      NetworkMessage delivered = start;
      delivered.kind = NetworkMessage::Kind::kDelivered;
      engine.send(layout_.lp_of_endpoint[request.destination], delivery.value() - engine.now(),
                  Traits::wrap(delivered));
      return delivery;
    }
    for (pdes::ProcessId p = 0; p < engine.num_processes(); ++p) {
      engine.send(layout_.replica_base + p, layout_.injection_delay, Traits::wrap(start));
    }
    return std::nullopt;
  }

  // Handles an event carrying a NetworkMessage. Returns the message when it is a delivery to the
  // event's endpoint LP, or (kSent) the notice to the source's LP that its transfer was
  // delivered: the caller reacts to it. nullopt when the network consumed it.
  std::optional<NetworkMessage> handle(pdes::Engine<Payload>& engine, const NetworkMessage& message) {
    switch (message.kind) {
      case NetworkMessage::Kind::kDelivered:
      case NetworkMessage::Kind::kSent:
        return message;
      case NetworkMessage::Kind::kStart:
        model_->start(engine.now(), message.request);
        if (owns_endpoint(engine, message.request.destination) ||
            (layout_.notify_source && owns_endpoint(engine, message.request.source))) {
          requests_.emplace(message.request.id, message);
        }
        schedule_settle(engine, engine.now());
        return std::nullopt;
      case NetworkMessage::Kind::kSettle:
        settle(engine);
        return std::nullopt;
    }
    return std::nullopt;
  }

  // True for LPs that are network replicas.
  [[nodiscard]] bool is_replica(pdes::LpId lp, pdes::ProcessId processes) const {
    return lp >= layout_.replica_base && lp < layout_.replica_base + processes;
  }

 private:
  bool owns_endpoint(const pdes::Engine<Payload>& engine, EndpointId endpoint) const {
    const pdes::LpId lp = layout_.lp_of_endpoint[endpoint];
    return lp != kNoLp && engine.is_local(lp);
  }

  void schedule_settle(pdes::Engine<Payload>& engine, SimTime time) {
    if (settles_.insert(time.ps()).second) {
      NetworkMessage settle_message;
      settle_message.kind = NetworkMessage::Kind::kSettle;
      engine.send_at(engine.current_lp(), time, Traits::wrap(settle_message), kSettlePriority);
    }
  }

  // Once per timestamp, after every start at it: deliver what is due, then wake up at the
  // model's next event.
  void settle(pdes::Engine<Payload>& engine) {
    settles_.erase(engine.now().ps());
    delivered_.clear();
    model_->advance(engine.now(), delivered_);
    for (const Delivery& delivery : delivered_) {
      const auto it = requests_.find(delivery.id);
      if (it == requests_.end()) {
        continue;  // another process delivers it
      }
      NetworkMessage message = it->second;
      requests_.erase(it);
      if (owns_endpoint(engine, message.request.destination)) {
        message.kind = NetworkMessage::Kind::kDelivered;
        engine.send_at(layout_.lp_of_endpoint[message.request.destination], delivery.time, Traits::wrap(message));
      }
      if (layout_.notify_source && owns_endpoint(engine, message.request.source)) {
        message.kind = NetworkMessage::Kind::kSent;
        engine.send_at(layout_.lp_of_endpoint[message.request.source], delivery.time, Traits::wrap(message));
      }
    }
    const SimTime next = model_->next_event_time();
    if (!next.is_max()) {
      schedule_settle(engine, next);
    }
  }

  [[nodiscard]] pdes::LpId min_endpoint_lp() const {
    pdes::LpId low = kNoLp;
    for (const pdes::LpId lp : layout_.lp_of_endpoint) {
      low = std::min(low, lp);
    }
    return low;
  }
  [[nodiscard]] pdes::LpId max_endpoint_lp() const {
    pdes::LpId high = 0;
    for (const pdes::LpId lp : layout_.lp_of_endpoint) {
      high = lp == kNoLp ? high : std::max(high, lp);
    }
    return high;
  }
  // Contiguous runs of endpoint LPs owned by process p.
  [[nodiscard]] std::vector<pdes::LpRange> runs_of(const pdes::PartitionMap& partition, pdes::ProcessId p) const {
    std::vector<pdes::LpId> lps;
    for (const pdes::LpId lp : layout_.lp_of_endpoint) {
      if (lp != kNoLp && partition.owner(lp) == p) {
        lps.push_back(lp);
      }
    }
    std::sort(lps.begin(), lps.end());
    std::vector<pdes::LpRange> runs;
    for (const pdes::LpId lp : lps) {
      if (!runs.empty() && runs.back().end() == lp) {
        ++runs.back().count;
      } else {
        runs.push_back(pdes::LpRange{lp, 1});
      }
    }
    return runs;
  }

  std::unique_ptr<NetworkModel> model_;
  EngineNetworkLayout layout_;
  std::unordered_map<TransferId, NetworkMessage> requests_;
  std::set<std::uint64_t> settles_;
  std::vector<Delivery> delivered_;
};

}  // namespace orrery::network
