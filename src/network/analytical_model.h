// The analytical model: ASTRA-sim's congestion-unaware analytical backend (Won et al.,
// "ASTRA-sim2.0", ISPASS 2023) applied to Orrery's routed topologies:
//
//   time(src, dst, bytes) = sum over the route's links of latency + bytes / min over the route of bandwidth
//
// with the bandwidth term rounded up to a whole picosecond (SimTime::from_seconds). Transfers of
// different sources never share a link. A source's own transfers do: they leave it one after the
// other on its injection link (each occupies it for bytes / that link's bandwidth), and transfers
// between the same two endpoints follow each other on their path (each occupies it for bytes /
// the path's bottleneck), so a source can never send faster than its links carry: chunks of one
// collective pipeline instead of all crossing the link at full bandwidth at once.
#pragma once

#include <queue>
#include <unordered_map>
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
  // transfer from the same source) is delivered: after the source's earlier transfers have left
  // its injection link and the earlier transfers to the same destination have left the path.
  // Records the transfer's occupation of both.
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
  // What one source's earlier transfers still occupy: its injection links (usually one; several
  // with rails) and its paths to each destination, with the time each is free again.
  struct SourceState {
    std::vector<std::pair<LinkId, SimTime>> links;
    std::unordered_map<EndpointId, SimTime> destinations;
  };
  const Routing& routing_;
  mutable std::vector<LinkId> path_;
  std::unordered_map<EndpointId, SourceState> sources_;
  std::priority_queue<Delivery, std::vector<Delivery>, Later> pending_;
};

}  // namespace orrery::network
