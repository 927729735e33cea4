// The analytical model, after ASTRA-sim's congestion-unaware analytical backend (Won et al.,
// "ASTRA-sim2.0", ISPASS 2023) applied to Orrery's routed topologies:
//
//   time(src, dst, bytes) = sum over the route's links of latency + bytes / min over the route of bandwidth
//
// with the bandwidth term rounded up to a whole picosecond (SimTime::from_seconds). Transfers of
// different sources never share a link (no congestion). A source's own transfers do, first in,
// first out: a transfer starts when every link of its route has finished carrying the source's
// earlier transfers, and occupies each link for bytes / that link's bandwidth. So a source never
// sends more through a link than the link carries: the chunks of one collective pipeline instead
// of all crossing the link at full bandwidth at once.
#pragma once

#include <queue>
#include <utility>
#include <vector>

#include "network/model.h"
#include "network/routing/routing.h"

namespace orrery::network {

class AnalyticalModel final : public NetworkModel {
 public:
  explicit AnalyticalModel(const Routing& routing) : routing_(routing) {}

  // The closed form above for one transfer on idle links; zero when source == destination.
  [[nodiscard]] SimTime transfer_time(EndpointId source, EndpointId destination, Bytes bytes,
                                      std::uint64_t flow_key = 0) const;

  // When a transfer that enters the network at `entry` (not earlier than the entry of any earlier
  // transfer from the same source) is delivered: when every link of its route has carried the
  // source's earlier transfers, plus the closed form. Records its occupation of those links.
  [[nodiscard]] SimTime delivery(SimTime entry, const TransferRequest& request);

  [[nodiscard]] std::string_view name() const override { return "analytical"; }
  [[nodiscard]] bool contention_free() const override { return true; }
  [[nodiscard]] std::optional<SimTime> contention_free_delivery(SimTime entry, const TransferRequest& request) override {
    return delivery(entry, request);
  }
  void start(SimTime now, const TransferRequest& request) override;
  [[nodiscard]] SimTime next_event_time() override;
  void advance(SimTime time, std::vector<Delivery>& delivered) override;
  [[nodiscard]] std::size_t in_flight() const override { return pending_.size(); }

 private:
  struct Later {
    bool operator()(const Delivery& a, const Delivery& b) const {
      return a.time != b.time ? a.time > b.time : a.id > b.id;
    }
  };
  // When each link a source's earlier transfers used is free of them again, sorted by link id
  // (binary search over the ids alone; a source uses tens to hundreds of links). Links whose time
  // has passed are forgotten when the state has doubled since the last pruning, so a source costs
  // amortised O(log n) per link of a route.
  struct SourceState {
    std::vector<LinkId> links;
    std::vector<SimTime> free_at;  // parallel to `links`
    std::size_t prune_at = 32;
    SimTime last_entry;  // entries of one source never decrease (checked: pruning relies on it)
    // The index of `link`'s entry, inserted (free at time zero) when missing; `inserted` says so.
    std::size_t index_of(LinkId link, bool& inserted);
  };
  const Routing& routing_;
  mutable std::vector<LinkId> path_;
  std::vector<std::size_t> entries_;  // delivery(): the route's entries in its source's state
  std::vector<SourceState> sources_;  // by source endpoint
  std::priority_queue<Delivery, std::vector<Delivery>, Later> pending_;
};

}  // namespace orrery::network
