// The one interface of Orrery's network models (STYLE.md rule 9; DESIGN.md "Network"): an
// engine-agnostic, deterministic state machine. A caller starts transfers at non-decreasing
// times, asks when the model next has something to do, and advances to that time to collect the
// transfers delivered by then:
//
//   model.start(now, {id, source, destination, bytes, flow_key});
//   for (SimTime t; !(t = model.next_event_time()).is_max();) {
//     model.advance(t, delivered);   // delivered in (time, id) order
//   }
//
// The same calls in the same order give bit-identical deliveries; transfer ids must be canonical
// (independent of the partition), since models visit transfers in id order. engine_network.h
// drives a model inside the PDES engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "network/types.h"

namespace orrery::network {

struct TransferRequest {
  TransferId id = 0;
  EndpointId source = 0;
  EndpointId destination = 0;
  Bytes bytes;
  std::uint64_t flow_key = 0;  // selects among equal-cost paths (ECMP, Valiant); part of the route's key
};

struct Delivery {
  TransferId id = 0;
  SimTime time;  // when the last byte reaches the destination
  friend constexpr bool operator==(const Delivery&, const Delivery&) = default;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // True when a transfer's time depends on nothing but itself and the earlier transfers of its
  // own source (no state shared between sources): the engine wrapper then computes it at the
  // source, in the source endpoint's LP, instead of in replicated network LPs.
  [[nodiscard]] virtual bool contention_free() const = 0;
  // For contention-free models: when a transfer entering the network at `entry` is delivered
  // (entry times of one source's transfers never decrease). nullopt otherwise.
  [[nodiscard]] virtual std::optional<SimTime> contention_free_delivery(SimTime /*entry*/,
                                                                       const TransferRequest& /*request*/) {
    return std::nullopt;
  }
  // Starts a transfer at `now`, which is not earlier than any time given before.
  virtual void start(SimTime now, const TransferRequest& request) = 0;
  // When the model next delivers or changes rates; SimTime::max() when nothing is in flight.
  [[nodiscard]] virtual SimTime next_event_time() = 0;
  // Moves to `time` (not earlier than the last time given) and appends the deliveries at or
  // before it, in (time, id) order.
  virtual void advance(SimTime time, std::vector<Delivery>& delivered) = 0;
  // Transfers started and not yet delivered.
  [[nodiscard]] virtual std::size_t in_flight() const = 0;
  // A transfer in flight whose finish lies beyond SimTime::max() at its current rate (the model
  // saturated it, so no event will deliver it): a description of the one with the lowest id, or
  // empty when there is none.
  [[nodiscard]] virtual std::string describe_unfinishable() const { return {}; }
  // Bytes of the transfers still in flight that have left their source by `at` (not earlier than
  // the last time given): their fluid progress, also added to `link_bytes` (indexed by link, when
  // given) for every link of each transfer's path. 0 for models that do not track progress.
  [[nodiscard]] virtual std::uint64_t bytes_sent_in_flight(SimTime /*at*/,
                                                           std::vector<std::uint64_t>* /*link_bytes*/) const {
    return 0;
  }
};

}  // namespace orrery::network
