#include "network/analytical_model.h"

#include <algorithm>
#include <iterator>

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

SimTime AnalyticalModel::delivery(SimTime entry, const TransferRequest& request) {
  if (request.source == request.destination) {
    return entry;
  }
  routing_.route(request.source, request.destination, request.flow_key, path_);
  const Graph& graph = routing_.topology().graph();
  const SimTime on_path = SimTime::from_seconds(transfer_seconds(request.bytes, path_bottleneck(graph, path_)));
  const LinkId first = path_.front();
  const SimTime on_first = SimTime::from_seconds(transfer_seconds(request.bytes, graph.link(first).bandwidth));

  SourceState& source = sources_[request.source];
  auto link = std::find_if(source.links.begin(), source.links.end(),
                           [&](const std::pair<LinkId, SimTime>& entry_of) { return entry_of.first == first; });
  if (link == source.links.end()) {
    source.links.emplace_back(first, SimTime::zero());
    link = std::prev(source.links.end());
  }
  if (source.destinations.size() > 1024) {  // forget paths that no longer hold anything back
    std::erase_if(source.destinations, [&](const auto& item) { return item.second <= entry; });
  }
  SimTime& path_free = source.destinations[request.destination];
  const SimTime start = std::max({entry, link->second, path_free});
  link->second = start + on_first;
  path_free = start + on_path;
  return start + path_latency(graph, path_) + on_path;
}

void AnalyticalModel::start(SimTime now, const TransferRequest& request) {
  pending_.push(Delivery{request.id, delivery(now, request)});
}

SimTime AnalyticalModel::next_event_time() { return pending_.empty() ? SimTime::max() : pending_.top().time; }

void AnalyticalModel::advance(SimTime time, std::vector<Delivery>& delivered) {
  while (!pending_.empty() && pending_.top().time <= time) {
    delivered.push_back(pending_.top());
    pending_.pop();
  }
}

}  // namespace orrery::network
