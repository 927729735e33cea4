// The analytical model: ASTRA-sim's congestion-unaware analytical backend (Won et al.,
// "ASTRA-sim2.0", ISPASS 2023) applied to Orrery's routed topologies. No contention:
//
//   time(src, dst, bytes) = sum over the route's links of latency + bytes / min over the route of bandwidth
//
// with the bandwidth term rounded up to a whole picosecond (SimTime::from_seconds).
#pragma once

#include <queue>
#include <vector>

#include "network/model.h"
#include "network/routing/routing.h"

namespace orrery::network {

class AnalyticalModel final : public NetworkModel {
 public:
  explicit AnalyticalModel(const Routing& routing) : routing_(routing) {}

  // The closed form above; zero when source == destination.
  [[nodiscard]] SimTime transfer_time(EndpointId source, EndpointId destination, Bytes bytes,
                                      std::uint64_t flow_key = 0) const;

  [[nodiscard]] std::string_view name() const override { return "analytical"; }
  [[nodiscard]] bool contention_free() const override { return true; }
  [[nodiscard]] std::optional<SimTime> contention_free_time(const TransferRequest& request) const override {
    return transfer_time(request.source, request.destination, request.bytes, request.flow_key);
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
  const Routing& routing_;
  mutable std::vector<LinkId> path_;
  std::priority_queue<Delivery, std::vector<Delivery>, Later> pending_;
};

}  // namespace orrery::network
