#include "network/analytical_model.h"

#include <algorithm>

#include "util/assert.h"

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

std::size_t AnalyticalModel::SourceState::index_of(LinkId link, bool& inserted) {
  // Lower bound without data-dependent branches: the links a route takes are unpredictable, so a
  // branching search mispredicts about every other step.
  std::size_t index = 0;
  if (!links.empty()) {
    const LinkId* base = links.data();
    std::size_t length = links.size();
    while (length > 1) {
      const std::size_t half = length / 2;
      base = base[half] < link ? base + half : base;
      length -= half;
    }
    index = static_cast<std::size_t>(base - links.data()) + (*base < link ? 1 : 0);
  }
  inserted = index == links.size() || links[index] != link;
  if (inserted) {
    links.insert(links.begin() + static_cast<std::ptrdiff_t>(index), link);
    free_at.insert(free_at.begin() + static_cast<std::ptrdiff_t>(index), SimTime::zero());
  }
  return index;
}

SimTime AnalyticalModel::delivery(SimTime entry, const TransferRequest& request) {
  if (request.source == request.destination) {
    return entry;
  }
  routing_.route(request.source, request.destination, request.flow_key, path_);
  const Graph& graph = routing_.topology().graph();
  if (request.source >= sources_.size()) {
    sources_.resize(std::max<std::size_t>(request.source + 1, routing_.topology().num_endpoints()));
  }
  SourceState& source = sources_[request.source];
  ORRERY_ASSERT(entry >= source.last_entry, "a source's transfers enter the analytical model in time order");
  source.last_entry = entry;
  if (source.links.size() >= source.prune_at) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < source.links.size(); ++i) {
      if (source.free_at[i] > entry) {
        source.links[kept] = source.links[i];
        source.free_at[kept] = source.free_at[i];
        ++kept;
      }
    }
    source.links.resize(kept);
    source.free_at.resize(kept);
    source.prune_at = std::max<std::size_t>(32, 2 * kept);
  }
  SimTime start = entry;
  entries_.clear();
  for (const LinkId link : path_) {
    bool inserted = false;
    const std::size_t index = source.index_of(link, inserted);
    if (inserted) {  // entries at or after it moved up by one
      for (std::size_t& earlier : entries_) {
        earlier += earlier >= index ? 1 : 0;
      }
    }
    entries_.push_back(index);
    start = std::max(start, source.free_at[index]);
  }
  BytesPerSecond last_bandwidth{0.0};
  SimTime occupancy;
  for (std::size_t i = 0; i < path_.size(); ++i) {
    const BytesPerSecond bandwidth = graph.link(path_[i]).bandwidth;
    if (bandwidth.value != last_bandwidth.value) {  // most routes have one or two link speeds
      occupancy = SimTime::from_seconds(transfer_seconds(request.bytes, bandwidth));
      last_bandwidth = bandwidth;
    }
    source.free_at[entries_[i]] = start + occupancy;
  }
  return start + path_latency(graph, path_) +
         SimTime::from_seconds(transfer_seconds(request.bytes, path_bottleneck(graph, path_)));
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
