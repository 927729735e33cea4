#include "network/traffic.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "network/engine_network.h"
#include "network/model_factory.h"
#include "network/routing/routing.h"
#include "network/topology/dragonfly.h"

namespace orrery::network {
namespace {

// An endpoint's generator: send (fixed mode) or send one and draw the next arrival (load mode).
struct Kick {};
using TrafficPayload = std::variant<Kick, NetworkMessage>;

// Where each endpoint sends (one destination; all_to_all: a group).
class Pattern {
 public:
  Pattern(TrafficPattern kind, const Topology& topology, const TrafficOptions& options, std::uint64_t seed)
      : kind_(kind), endpoints_(topology.num_endpoints()) {
    if (endpoints_ < 2) {
      throw OrreryError(ErrorCode::kConfig, "traffic: the topology needs at least two endpoints");
    }
    shift_ = options.shift == 0 ? endpoints_ / 2 : options.shift % endpoints_;
    group_ = options.group_size;
    if (group_ == 0) {
      group_ = std::max<EndpointId>(2, endpoints_ / std::max<std::uint32_t>(1, topology.num_units()));
    }
    if (kind == TrafficPattern::kShift && shift_ == 0) {
      throw OrreryError(ErrorCode::kConfig, fmt::format("--shift: a shift of {} maps every endpoint to itself "
                                                        "({} endpoints)",
                                                        options.shift, endpoints_));
    }
    if (kind == TrafficPattern::kBitComplement && (endpoints_ & (endpoints_ - 1)) != 0) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("--pattern bit_complement needs a power-of-two number of endpoints (got {})",
                                    endpoints_));
    }
    if (kind == TrafficPattern::kDragonflyWorstCase) {
      if (topology.fabric().kind() != FabricKind::kDragonfly) {
        throw OrreryError(ErrorCode::kConfig, "--pattern dragonfly_worst_case needs a dragonfly topology");
      }
      group_ = endpoints_ / static_cast<const Dragonfly&>(topology.fabric()).groups();
    }
    if (kind == TrafficPattern::kRandomPermutation) {
      permutation_.resize(endpoints_);
      std::iota(permutation_.begin(), permutation_.end(), 0);
      pdes::Random random(seed, 0x7065726dULL);  // "perm"
      for (EndpointId i = endpoints_; i > 1; --i) {
        std::swap(permutation_[i - 1], permutation_[random.below(i)]);
      }
      for (EndpointId i = 0; i < endpoints_; ++i) {  // no endpoint sends to itself
        if (permutation_[i] == i) {
          std::swap(permutation_[i], permutation_[(i + 1) % endpoints_]);
        }
      }
    }
  }

  // Fixed mode: every destination of `source`.
  void destinations(EndpointId source, pdes::Random& random, std::vector<EndpointId>& out) const {
    out.clear();
    if (kind_ == TrafficPattern::kAllToAll) {
      const EndpointId first = source / group_ * group_;
      for (EndpointId d = first; d < std::min(endpoints_, first + group_); ++d) {
        if (d != source) {
          out.push_back(d);
        }
      }
      return;
    }
    out.push_back(pick(source, random));
  }

  // One destination (load mode draws all_to_all destinations at random within the group).
  EndpointId pick(EndpointId source, pdes::Random& random) const {
    switch (kind_) {
      case TrafficPattern::kUniformRandom: {
        const EndpointId r = random.below(endpoints_ - 1);
        return r < source ? r : r + 1;
      }
      case TrafficPattern::kShift:
        return (source + shift_) % endpoints_;
      case TrafficPattern::kRandomPermutation:
        return permutation_[source];
      case TrafficPattern::kAllToAll: {
        const EndpointId first = source / group_ * group_;
        const EndpointId size = std::min(endpoints_, first + group_) - first;
        if (size < 2) {
          return source;
        }
        const EndpointId r = first + random.below(size - 1);
        return r < source ? r : r + 1;
      }
      case TrafficPattern::kRing:
        return (source + 1) % endpoints_;
      case TrafficPattern::kDragonflyWorstCase:
        return (source + group_) % endpoints_;
      case TrafficPattern::kBitComplement:
        return (endpoints_ - 1) ^ source;
    }
    return source;
  }

 private:
  TrafficPattern kind_;
  EndpointId endpoints_;
  EndpointId shift_ = 1;
  EndpointId group_ = 2;
  std::vector<EndpointId> permutation_;
};

// What each process measures at its endpoints; combined over processes in canonical order.
struct Tally {
  std::uint64_t sent = 0;
  std::uint64_t delivered = 0;
  std::uint64_t bytes = 0;
  std::uint64_t partial_bytes = 0;  // sent bytes of messages still in flight at the end (flow model)
  std::uint64_t last_delivery_ps = 0;
  std::vector<std::uint64_t> latencies_ps;
  std::vector<std::uint64_t> link_bytes;
};

class TrafficModel {
 public:
  TrafficModel(const Topology& topology, const Routing& routing, const Pattern& pattern,
               const TrafficOptions& options, EngineNetwork<TrafficPayload>& network)
      : topology_(topology),
        routing_(routing),
        pattern_(pattern),
        options_(options),
        network_(network),
        sequence_(topology.num_endpoints(), 0) {
    tally_.link_bytes.assign(topology.graph().num_links(), 0);
  }

  // Load mode: the time to the next arrival at `endpoint`: Exp(bytes / (load * injection)).
  SimTime interarrival(EndpointId endpoint, pdes::Random& random) const {
    const double mean = static_cast<double>(options_.bytes) /
                        (*options_.load * topology_.injection_bandwidth(endpoint).value);
    return SimTime::from_seconds(random.exponential(mean));
  }

  void handle(pdes::Engine<TrafficPayload>& engine, const pdes::Event<TrafficPayload>& event) {
    if (const auto* message = std::get_if<NetworkMessage>(&event.payload)) {
      if (const auto delivered = network_.handle(engine, *message)) {
        on_delivered(engine, *delivered);
      }
      return;
    }
    const EndpointId source = event.destination;
    if (!options_.load) {
      pattern_.destinations(source, engine.random(), destinations_);
      for (const EndpointId destination : destinations_) {
        send(engine, source, destination);
      }
      return;
    }
    send(engine, source, pattern_.pick(source, engine.random()));
    engine.send(source, interarrival(source, engine.random()), Kick{});
  }

  Tally& tally() { return tally_; }

 private:
  void send(pdes::Engine<TrafficPayload>& engine, EndpointId source, EndpointId destination) {
    const TransferId id = (static_cast<TransferId>(source) << 32) | sequence_[source]++;
    network_.send(engine, TransferRequest{id, source, destination, Bytes{options_.bytes}, id});
    ++tally_.sent;
  }

  void on_delivered(pdes::Engine<TrafficPayload>& engine, const NetworkMessage& message) {
    ++tally_.delivered;
    tally_.bytes += message.request.bytes.count;
    tally_.last_delivery_ps = std::max(tally_.last_delivery_ps, engine.now().ps());
    tally_.latencies_ps.push_back((engine.now() - message.sent).ps());
    routing_.route(message.request.source, message.request.destination, message.request.flow_key, path_);
    for (const LinkId link : path_) {
      tally_.link_bytes[link] += message.request.bytes.count;
    }
  }

  const Topology& topology_;
  const Routing& routing_;
  const Pattern& pattern_;
  const TrafficOptions& options_;
  EngineNetwork<TrafficPayload>& network_;
  std::vector<std::uint32_t> sequence_;
  std::vector<EndpointId> destinations_;
  std::vector<LinkId> path_;
  Tally tally_;
};

pdes::PartitionMap make_partition(const Topology& topology, const std::string& name, pdes::ProcessId processes) {
  const EndpointId endpoints = topology.num_endpoints();
  const pdes::LpId lps = endpoints + processes;
  if (name == "auto") {
    return TopologyPartitioner(topology).assign(lps, processes);
  }
  // Basic partitioners spread the endpoints; replica p stays on process p.
  const pdes::PartitionMap basic = pdes::make_basic_partitioner(name)->assign(endpoints, processes);
  std::vector<pdes::ProcessId> owners(lps);
  for (EndpointId e = 0; e < endpoints; ++e) {
    owners[e] = basic.owner(e);
  }
  for (pdes::ProcessId p = 0; p < processes; ++p) {
    owners[endpoints + p] = p;
  }
  return pdes::PartitionMap(std::move(owners), processes);
}

pdes::ByteBuffer serialise(const Tally& tally) {
  pdes::ByteBuffer buffer;
  const std::array<std::uint64_t, 6> header{tally.sent,           tally.delivered,
                                            tally.bytes,          tally.last_delivery_ps,
                                            tally.partial_bytes,  tally.latencies_ps.size()};
  for (const std::uint64_t value : header) {
    pdes::append_record(buffer, value);
  }
  for (const std::uint64_t value : tally.latencies_ps) {
    pdes::append_record(buffer, value);
  }
  for (LinkId link = 0; link < tally.link_bytes.size(); ++link) {
    if (tally.link_bytes[link] != 0) {
      pdes::append_record(buffer, static_cast<std::uint64_t>(link));
      pdes::append_record(buffer, tally.link_bytes[link]);
    }
  }
  return buffer;
}

Tally combine(const std::vector<pdes::ByteBuffer>& buffers, std::size_t links) {
  Tally total;
  total.link_bytes.assign(links, 0);
  for (const pdes::ByteBuffer& buffer : buffers) {
    const std::vector<std::uint64_t> words = pdes::read_records<std::uint64_t>(buffer);
    total.sent += words[0];
    total.delivered += words[1];
    total.bytes += words[2];
    total.last_delivery_ps = std::max(total.last_delivery_ps, words[3]);
    total.partial_bytes += words[4];
    const std::size_t latencies = words[5];
    total.latencies_ps.insert(total.latencies_ps.end(), words.begin() + 6,
                              words.begin() + 6 + static_cast<std::ptrdiff_t>(latencies));
    for (std::size_t i = 6 + latencies; i + 1 < words.size(); i += 2) {
      total.link_bytes[words[i]] += words[i + 1];
    }
  }
  std::sort(total.latencies_ps.begin(), total.latencies_ps.end());
  return total;
}

void summarise(const Tally& tally, const Topology& topology, const TrafficOptions& options, TrafficResult& result) {
  result.messages_sent = tally.sent;
  result.messages_delivered = tally.delivered;
  result.bytes_delivered = tally.bytes;
  double window_s = 0.0;
  if (options.load) {
    window_s = options.duration_us * 1e-6;
    result.offered_load = *options.load;
    double injection = 0.0;
    for (EndpointId e = 0; e < topology.num_endpoints(); ++e) {
      injection += topology.injection_bandwidth(e).value;
    }
    result.accepted_load = static_cast<double>(tally.bytes + tally.partial_bytes) / (injection * window_s);
  } else {
    window_s = SimTime::from_ps(tally.last_delivery_ps).seconds();
    result.completion_time_s = window_s;
  }
  if (!tally.latencies_ps.empty()) {
    const double sum = std::accumulate(tally.latencies_ps.begin(), tally.latencies_ps.end(), 0.0);
    result.mean_latency_ns = sum / static_cast<double>(tally.latencies_ps.size()) * 1e-3;
    const std::size_t rank = (tally.latencies_ps.size() * 99 + 99) / 100;  // ceil(0.99 n)
    result.p99_latency_ns = static_cast<double>(tally.latencies_ps[rank - 1]) * 1e-3;
  }
  const Graph& graph = topology.graph();
  result.links = graph.num_links();
  if (window_s > 0) {
    double max_utilization = 0.0;
    double sum_utilization = 0.0;
    for (LinkId link = 0; link < graph.num_links(); ++link) {
      if (tally.link_bytes[link] == 0) {
        continue;
      }
      const double utilization =
          static_cast<double>(tally.link_bytes[link]) / (graph.link(link).bandwidth.value * window_s);
      max_utilization = std::max(max_utilization, utilization);
      sum_utilization += utilization;
      ++result.links_used;
    }
    result.max_link_utilization = max_utilization;
    if (result.links_used > 0) {
      result.mean_link_utilization = sum_utilization / static_cast<double>(result.links_used);
    }
  }
}

}  // namespace

void validate(const TrafficOptions& options) {
  if (options.load && !(*options.load > 0.0 && std::isfinite(*options.load))) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("--load must be positive (got {})", *options.load));
  }
  if (options.bytes == 0) {
    throw OrreryError(ErrorCode::kConfig, "--bytes must be at least 1");
  }
  if (!(options.duration_us > 0.0 && std::isfinite(options.duration_us))) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("--duration-us must be positive (got {})", options.duration_us));
  }
  if (options.duration_us > 1e13) {  // SimTime holds 2^64 ps, about 1.8e13 us
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("--duration-us must be at most 1e13 (got {}): simulated time ends at 2^64 ps",
                                  options.duration_us));
  }
  if (options.partition != "auto" && options.partition != "block" && options.partition != "round-robin") {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("--partition: unknown partition '{}' (known: auto, block, round-robin)",
                                  options.partition));
  }
}

TrafficResult run_traffic(pdes::Communicator& communicator, const config::Scenario& scenario,
                          const TrafficOptions& options) {
  validate(options);
  TrafficResult result;
  std::unique_ptr<Topology> topology;
  std::unique_ptr<Routing> routing;
  std::unique_ptr<Pattern> pattern;
  std::unique_ptr<NetworkModel> model;
  pdes::run_collectively(communicator, [&] {
    topology = std::make_unique<Topology>(Topology::build(scenario.system, scenario.network));
    routing = std::make_unique<Routing>(*topology, scenario.network.routing);
    pattern = std::make_unique<Pattern>(options.pattern, *topology, options, scenario.simulation.seed);
    model = make_model(scenario.network.model, *routing);
  });
  const FlowModel* flow = dynamic_cast<const FlowModel*>(model.get());
  result.topology = topology->describe();
  result.model = std::string(model->name());
  result.routing = std::string(config::enum_to_string(scenario.network.routing));
  result.pattern = std::string(config::enum_to_string(options.pattern));
  result.endpoints = topology->num_endpoints();

  const pdes::ProcessId processes = communicator.size();
  const pdes::PartitionMap partition = make_partition(*topology, options.partition, processes);
  EngineNetworkLayout layout;
  layout.lp_of_endpoint.resize(topology->num_endpoints());
  std::iota(layout.lp_of_endpoint.begin(), layout.lp_of_endpoint.end(), 0);
  layout.replica_base = topology->num_endpoints();
  layout.injection_delay = SimTime::from_nanoseconds(scenario.system.endpoint_delay_ns);
  EngineNetwork<TrafficPayload> network(std::move(model), layout);
  pdes::ChannelTable channels;
  network.declare_channels(channels, partition);

  pdes::EngineOptions engine_options;
  engine_options.seed = scenario.simulation.seed;
  if (options.load) {
    engine_options.end_time = SimTime::from_microseconds(options.duration_us);
  }
  pdes::Engine<TrafficPayload> engine(communicator, partition, channels, engine_options);
  TrafficModel traffic(*topology, *routing, *pattern, options, network);
  for (const pdes::LpId lp : engine.local_lps()) {
    if (lp < topology->num_endpoints()) {
      engine.schedule(lp, options.load ? traffic.interarrival(lp, engine.random_of(lp)) : SimTime::zero(), Kick{});
    }
  }
  result.stats = engine.run(traffic);
  if (!options.load) {  // a run to completion: every transfer delivered, or the overflow named
    pdes::run_collectively(communicator, [&] { network.check_drained(); });
  }
  if (options.load && communicator.rank() == 0) {
    // Every replica holds the same model: one process counts the in-flight progress, on the
    // links too, so a saturated link's utilisation includes the messages still crossing it.
    Tally& tally = traffic.tally();
    tally.partial_bytes = network.model().bytes_sent_in_flight(engine_options.end_time, &tally.link_bytes);
  }
  const Tally total = combine(communicator.allgather(serialise(traffic.tally())), topology->graph().num_links());
  summarise(total, *topology, options, result);
  result.partition = report_network_partition(*topology, options.partition == "auto" ? "topology" : options.partition,
                                              partition, channels);
  if (flow != nullptr) {
    result.flow = flow->stats();
  }
  return result;
}

}  // namespace orrery::network
