#include "network/analytical_model.h"

namespace orrery::network {

SimTime AnalyticalModel::transfer_time(EndpointId source, EndpointId destination, Bytes bytes,
                                       std::uint64_t flow_key) const {
  if (source == destination) {
    return SimTime::zero();
  }
  routing_.route(source, destination, flow_key, path_);
  const Graph& graph = routing_.topology().graph();
  return path_latency(graph, path_) + SimTime::from_seconds(transfer_seconds(bytes, path_bottleneck(graph, path_)));
}

void AnalyticalModel::start(SimTime now, const TransferRequest& request) {
  pending_.push(Delivery{request.id, now + transfer_time(request.source, request.destination, request.bytes,
                                                         request.flow_key)});
}

SimTime AnalyticalModel::next_event_time() { return pending_.empty() ? SimTime::max() : pending_.top().time; }

void AnalyticalModel::advance(SimTime time, std::vector<Delivery>& delivered) {
  while (!pending_.empty() && pending_.top().time <= time) {
    delivered.push_back(pending_.top());
    pending_.pop();
  }
}

}  // namespace orrery::network
