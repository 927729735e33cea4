// Topologies: router radix and link counts, fat-tree bisection bandwidth (a max-flow computed
// with Boost.Graph), dragonfly minimal diameter, torus hop counts, and every routed path valid and
// loop-free for every fabric and routing algorithm.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <set>

#include "network/routing/routing.h"
#include "network/topology/dragonfly.h"
#include "network/topology/fat_tree.h"
#include "network/topology/placement.h"
#include "network/topology/torus.h"
#include "network_test_util.h"

namespace orrery::network {
namespace {

using testing::topology_from;

std::uint32_t count_vertices(const Graph& graph, VertexKind kind) {
  std::uint32_t count = 0;
  for (VertexId v = 0; v < graph.num_vertices(); ++v) {
    count += graph.vertex(v).kind == kind ? 1 : 0;
  }
  return count;
}

// Max flow from the devices in [0, half) to the devices in [half, 2 half), in bytes per second.
double max_flow_between_halves(const Topology& topology) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const Graph& graph = topology.graph();
  FlowGraph flow(graph.num_vertices() + 2);
  auto capacity = boost::get(boost::edge_capacity, flow);
  auto reverse = boost::get(boost::edge_reverse, flow);
  auto add = [&](std::size_t u, std::size_t v, std::int64_t forward, std::int64_t backward) {
    const auto e = boost::add_edge(u, v, flow).first;
    const auto r = boost::add_edge(v, u, flow).first;
    capacity[e] = forward;
    capacity[r] = backward;
    reverse[e] = r;
    reverse[r] = e;
  };
  for (LinkId id = 0; id < graph.num_links(); id += 2) {  // cables: links 2i and 2i + 1
    const Link& link = graph.link(id);
    const auto bandwidth = static_cast<std::int64_t>(link.bandwidth.value);
    add(link.from, link.to, bandwidth, bandwidth);
  }
  const std::size_t source = graph.num_vertices();
  const std::size_t sink = source + 1;
  const EndpointId half = topology.num_endpoints() / 2;
  constexpr std::int64_t kUnbounded = std::int64_t{1} << 50;
  for (EndpointId e = 0; e < 2 * half; ++e) {
    add(e < half ? source : e, e < half ? e : sink, kUnbounded, 0);
  }
  return static_cast<double>(boost::push_relabel_max_flow(flow, source, sink));
}

TEST(FatTree, KAryNTreeSwitchAndLinkCounts) {
  // k-ary n-tree (k = 4, n = 3): k^n = 64 hosts, n * k^(n-1) = 48 switches, every switch of radix
  // 2k except the top tier (k down only); cables: hosts k^n + between tiers (n - 1) * k^n.
  const Topology topology = topology_from(
      "system: {devices_per_node: 1}\nnetwork: {topology: {kind: fat_tree, k: 4, levels: 3}}\n");
  const auto& tree = static_cast<const FatTree&>(topology.fabric());
  EXPECT_EQ(tree.hosts(), 64U);
  for (std::uint32_t tier = 1; tier <= 3; ++tier) {
    EXPECT_EQ(tree.switches(tier), 16U) << tier;
  }
  const Graph& graph = topology.graph();
  EXPECT_EQ(count_vertices(graph, VertexKind::kRouter), 48U);
  EXPECT_EQ(count_vertices(graph, VertexKind::kNic), 64U);
  EXPECT_EQ(count_vertices(graph, VertexKind::kScaleUpSwitch), 0U);
  // Cables: device-NIC 64, NIC-leaf 64, leaf-tier2 64, tier2-top 64 = 256 cables, 512 links.
  EXPECT_EQ(graph.num_links(), 512U);
  for (VertexId v = 0; v < graph.num_vertices(); ++v) {
    if (graph.vertex(v).kind == VertexKind::kRouter) {
      EXPECT_EQ(graph.degree(v), graph.vertex(v).tier == 3 ? 4U : 8U) << v;
      EXPECT_EQ(tree.radix(graph.vertex(v).tier), graph.degree(v));
    }
  }
}

TEST(FatTree, BisectionBandwidth) {
  // Full bisection of a k-ary n-tree: half the hosts can send to the other half at full rate,
  //   B = (H / 2) * link bandwidth  (H = k^n = 16, 50 GB/s links: 400 GB/s).
  const Topology full = topology_from(
      "system: {devices_per_node: 1}\n"
      "network: {topology: {kind: fat_tree, k: 4, levels: 2, link_GBps: 50}, nic: {bandwidth_GBps: 1000}}\n");
  EXPECT_DOUBLE_EQ(max_flow_between_halves(full), 8 * 50e9);
  // Leaves tapered 2:1 (4 hosts, 2 up-links): the up-links of the left half's two leaves bound it,
  //   B = leaves(H / 2) * up-links * bandwidth = 2 * 2 * 50 GB/s = 200 GB/s.
  const Topology tapered = topology_from(
      "system: {devices_per_node: 1}\n"
      "network: {topology: {kind: fat_tree, k: 4, levels: 2, oversubscription: [2]}, nic: {bandwidth_GBps: 1000}}\n");
  EXPECT_EQ(static_cast<const FatTree&>(tapered.fabric()).parents(1), 2U);
  EXPECT_DOUBLE_EQ(max_flow_between_halves(tapered), 4 * 50e9);
}

TEST(Dragonfly, RadixLinkCountsAndGroups) {
  // Balanced dragonfly p = 2, a = 4, h = 2: g = a h + 1 = 9 groups, N = p a g = 72 hosts, router
  // radix p + (a - 1) + h = 7; local cables g * a (a - 1) / 2 = 54, global g * a * h / 2 = 36.
  for (const char* arrangement : {"absolute", "relative", "circulant"}) {
    const Topology topology = topology_from(
        std::string("system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9, "
                    "arrangement: ") +
        arrangement + "}}\n");
    const auto& dragonfly = static_cast<const Dragonfly&>(topology.fabric());
    EXPECT_EQ(dragonfly.hosts(), 72U);
    EXPECT_EQ(dragonfly.radix(), 7U);
    const Graph& graph = topology.graph();
    std::uint32_t local = 0;
    std::uint32_t global = 0;
    for (const Link& link : graph.links()) {
      local += link.kind == LinkKind::kLocal ? 1 : 0;
      global += link.kind == LinkKind::kGlobal ? 1 : 0;
    }
    EXPECT_EQ(local, 2U * 54U) << arrangement;
    EXPECT_EQ(global, 2U * 36U) << arrangement;
    for (VertexId v = 0; v < graph.num_vertices(); ++v) {
      if (graph.vertex(v).kind == VertexKind::kRouter) {
        EXPECT_EQ(graph.degree(v), 7U) << arrangement << " router " << v;
      }
    }
    // With g = a h + 1 every pair of groups shares exactly one global cable.
    for (std::uint32_t x = 0; x < 9; ++x) {
      for (std::uint32_t y = 0; y < 9; ++y) {
        EXPECT_EQ(dragonfly.ports_between(x, y).size(), x == y ? 0U : 1U) << arrangement;
      }
    }
  }
}

TEST(Dragonfly, MinimalDiameterIsThree) {
  // Minimal routing crosses at most local, global, local: every router pair within 3 hops, and
  // some pair needs exactly 3. Router-to-router hops = path links minus the 4 host/NIC links.
  const Topology topology = topology_from(
      "system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 1, a: 4, h: 2, g: 9}}\n");
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  std::vector<LinkId> path;
  std::size_t diameter = 0;
  for (EndpointId a = 0; a < topology.num_endpoints(); ++a) {
    for (EndpointId b = 0; b < topology.num_endpoints(); ++b) {
      if (a != b) {
        routing.route(a, b, 0, path);
        diameter = std::max(diameter, path.size() - 4);
      }
    }
  }
  EXPECT_EQ(diameter, 3U);
}

TEST(Torus, HopCountsAreTheWrapAroundDistance) {
  // Hops between routers x and y = sum over dimensions of min(d, k - d), d = (y_i - x_i) mod k_i.
  const Topology topology =
      topology_from("system: {devices_per_node: 1}\nnetwork: {topology: {kind: torus, dims: [4, 3, 5]}}\n");
  const auto& torus = static_cast<const Torus&>(topology.fabric());
  EXPECT_EQ(torus.distance(0, 2), 2U);               // (2,0,0): min(2, 2)
  EXPECT_EQ(torus.distance(0, 3), 1U);               // (3,0,0): wraps, 1 hop
  EXPECT_EQ(torus.distance(0, 4 * 3 * 4), 1U);       // (0,0,4): wraps in the third dimension
  EXPECT_EQ(torus.distance(0, 2 + 4 * 1 + 12 * 2), 5U);  // (2,1,2): 2 + 1 + 2
  const Routing routing(topology, config::RoutingAlgorithm::kDimensionOrder);
  std::vector<LinkId> path;
  for (EndpointId a = 0; a < topology.num_endpoints(); ++a) {
    for (EndpointId b = 0; b < topology.num_endpoints(); ++b) {
      if (a != b) {
        routing.route(a, b, 0, path);
        EXPECT_EQ(path.size(), torus.distance(a, b) + 4U);  // + device-NIC, NIC-router each end
      }
    }
  }
  // Radix: 2 per dimension of size > 2 plus the host cable.
  for (VertexId v = 0; v < topology.graph().num_vertices(); ++v) {
    if (topology.graph().vertex(v).kind == VertexKind::kRouter) {
      EXPECT_EQ(topology.graph().degree(v), 7U);
    }
  }
}

struct RoutingCase {
  const char* yaml;
  config::RoutingAlgorithm algorithm;
};

// A path is valid when it starts at the source device, every link starts where the previous one
// ended, it ends at the destination device, and it visits no vertex twice.
void expect_valid_paths(const RoutingCase& c) {
  const Topology topology = topology_from(c.yaml);
  const Routing routing(topology, c.algorithm);
  const Graph& graph = topology.graph();
  std::vector<LinkId> path;
  const EndpointId n = topology.num_endpoints();
  for (EndpointId a = 0; a < n; ++a) {
    for (EndpointId b = 0; b < n; ++b) {
      for (std::uint64_t key : {0ULL, 7ULL}) {
        routing.route(a, b, key, path);
        if (a == b) {
          EXPECT_TRUE(path.empty());
          continue;
        }
        ASSERT_FALSE(path.empty()) << c.yaml;
        std::set<VertexId> seen{a};
        VertexId here = a;
        for (const LinkId id : path) {
          ASSERT_EQ(graph.link(id).from, here) << c.yaml << " " << a << "->" << b;
          here = graph.link(id).to;
          EXPECT_TRUE(seen.insert(here).second) << "loop at vertex " << here << " in " << c.yaml << " " << a << "->" << b;
        }
        EXPECT_EQ(here, b) << c.yaml;
        // The same (source, destination, key) always gives the same path.
        std::vector<LinkId> again;
        routing.route(a, b, key, again);
        EXPECT_EQ(again, path);
      }
    }
  }
}

TEST(Routing, EveryPathIsValidAndLoopFree) {
  using config::RoutingAlgorithm;
  const RoutingCase cases[] = {
      {"system: {devices_per_node: 2}\nnetwork: {topology: {kind: fat_tree, k: 4, levels: 2}}\n", RoutingAlgorithm::kDModK},
      {"system: {devices_per_node: 1}\nnetwork: {topology: {kind: fat_tree, k: 2, levels: 3, hosts_per_leaf: 4, "
       "oversubscription: [2]}}\n",
       RoutingAlgorithm::kEcmp},
      {"system: {devices_per_node: 4}\nnetwork: {topology: {kind: fat_tree, k: 2, levels: 3}, nic: {rails: 2}}\n",
       RoutingAlgorithm::kMinimal},
      {"system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}}\n",
       RoutingAlgorithm::kMinimal},
      {"system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9, arrangement: "
       "circulant}}\n",
       RoutingAlgorithm::kValiant},
      {"system: {devices_per_node: 2}\nnetwork: {topology: {kind: dragonfly, p: 1, a: 2, h: 2, g: 3, arrangement: "
       "relative}, nic: {rails: 2}}\n",
       RoutingAlgorithm::kValiant},
      {"system: {devices_per_node: 1}\nnetwork: {topology: {kind: torus, dims: [3, 4]}}\n",
       RoutingAlgorithm::kDimensionOrder},
      {"system: {devices_per_node: 2}\nnetwork: {topology: {kind: torus, dims: [2, 2, 3]}}\n", RoutingAlgorithm::kMinimal},
      {"system: {devices_per_node: 4}\nnetwork: {topology: {kind: switch, nodes: 3}}\n", RoutingAlgorithm::kMinimal},
      {"system: {devices_per_node: 8}\nnetwork: {topology: {kind: none}}\n", RoutingAlgorithm::kMinimal},
      {"network: {topology: {kind: astra_sim, spec: {topology: [Ring, FullyConnected, Switch], npus_count: [4, 3, 2], "
       "bandwidth: [50, 50, 25], latency: [500, 500, 1000]}}}\n",
       RoutingAlgorithm::kMinimal},
      {"network: {topology: {kind: astra_sim, spec: {topology: [Ring, Ring], npus_count: [2, 5], bandwidth: [1, 1], "
       "latency: [1, 1]}}}\n",
       RoutingAlgorithm::kDimensionOrder},
  };
  for (const RoutingCase& c : cases) {
    expect_valid_paths(c);
  }
}

TEST(Routing, DModKSpreadsAShiftOverDistinctUpLinks) {
  // d-mod-k picks the up-link from the destination, so the k flows leaving one leaf for distinct
  // destinations d, d+1, ... use k distinct up-links (no collision on a shift permutation).
  const Topology topology =
      topology_from("system: {devices_per_node: 1}\nnetwork: {topology: {kind: fat_tree, k: 4, levels: 2}}\n");
  const Routing routing(topology, config::RoutingAlgorithm::kDModK);
  std::set<LinkId> up_links;
  std::vector<LinkId> path;
  for (EndpointId a = 0; a < 4; ++a) {
    routing.route(a, a + 8, 0, path);
    up_links.insert(path[2]);  // device-NIC, NIC-leaf, leaf-up
  }
  EXPECT_EQ(up_links.size(), 4U);
}

TEST(Routing, UnsupportedAlgorithmNamesTheKey) {
  const Topology topology =
      topology_from("system: {devices_per_node: 1}\nnetwork: {topology: {kind: fat_tree, k: 2, levels: 2}}\n");
  try {
    const Routing routing(topology, config::RoutingAlgorithm::kValiant);
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kConfig);
    EXPECT_STREQ(error.what(),
                 "error: network.routing: 'valiant' is not available for the fat_tree topology (known: minimal, d_mod_k, ecmp)");
  }
}

TEST(Topology, ScaleUpNicsAndRails) {
  // 2 nodes x 8 devices, 4 rails: device d uses NIC d mod 4; same-node transfers use the scale-up
  // switch only; a cross-rail transfer first crosses the scale-up switch to the device with the
  // destination's local index (rail-aligned), then NIC, fabric plane, NIC.
  const Topology topology = topology_from(
      "system: {devices_per_node: 8, scale_up: {bandwidth_GBps: 450, latency_ns: 300}}\n"
      "network: {topology: {kind: switch, nodes: 2}, nic: {rails: 4}}\n");
  EXPECT_EQ(topology.num_endpoints(), 16U);
  EXPECT_EQ(topology.rail_of(5), 1U);
  EXPECT_EQ(count_vertices(topology.graph(), VertexKind::kNic), 8U);
  EXPECT_EQ(count_vertices(topology.graph(), VertexKind::kRouter), 4U);  // one switch per rail plane
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  std::vector<LinkId> path;
  routing.route(1, 6, 0, path);
  ASSERT_EQ(path.size(), 2U);
  EXPECT_EQ(topology.graph().link(path[0]).kind, LinkKind::kScaleUp);
  // 300 ns device to device: half on each scale-up cable.
  EXPECT_EQ(path_latency(topology.graph(), path), SimTime::from_ns(300));
  routing.route(1, 8 + 2, 0, path);  // rail 1 -> rail 2: relay through device 2 of node 0
  ASSERT_EQ(path.size(), 6U);
  EXPECT_EQ(topology.graph().link(path[1]).to, 2U);
  EXPECT_EQ(topology.graph().link(path[2]).to, topology.nic(0, 2));
  EXPECT_EQ(topology.graph().vertex(topology.graph().link(path[3]).to).plane, 2U);
  routing.route(1, 8 + 5, 0, path);  // same rail: no relay
  EXPECT_EQ(path.size(), 4U);
}

TEST(Topology, SingleNodeWithoutFabric) {
  // 4 x A100 on one NVLink domain: every device one scale-up hop pair from every other.
  const Topology topology = topology_from(
      "system: {devices_per_node: 4, scale_up: {bandwidth_GBps: 300, latency_ns: 250}}\nnetwork: {topology: {kind: none}}\n");
  EXPECT_EQ(topology.num_endpoints(), 4U);
  EXPECT_EQ(topology.num_nodes(), 1U);
  EXPECT_EQ(topology.nic(0, 0), kNoVertex);
  EXPECT_DOUBLE_EQ(topology.injection_bandwidth(0).value, 300e9);
}

TEST(Placement, PoliciesAreBijections) {
  const Topology topology = topology_from("system: {devices_per_node: 4}\nnetwork: {topology: {kind: switch, nodes: 3}}\n");
  const Placement linear = Placement::make(config::PlacementPolicy::kLinear, topology, 12, 1);
  EXPECT_EQ(linear.endpoint_of(7), 7U);
  // round_robin: rank r on node r mod 3, local r / 3.
  const Placement round_robin = Placement::make(config::PlacementPolicy::kRoundRobin, topology, 12, 1);
  EXPECT_EQ(round_robin.endpoint_of(1), 4U);
  EXPECT_EQ(round_robin.endpoint_of(4), 5U);
  const Placement random = Placement::make(config::PlacementPolicy::kRandom, topology, 10, 42);
  const Placement same = Placement::make(config::PlacementPolicy::kRandom, topology, 10, 42);
  std::set<EndpointId> used;
  for (std::uint32_t d = 0; d < 10; ++d) {
    EXPECT_EQ(random.endpoint_of(d), same.endpoint_of(d));
    EXPECT_EQ(random.device_at(random.endpoint_of(d)), d);
    used.insert(random.endpoint_of(d));
  }
  EXPECT_EQ(used.size(), 10U);
  EXPECT_THROW((void)Placement::make(config::PlacementPolicy::kLinear, topology, 13, 1), OrreryError);
}

}  // namespace
}  // namespace orrery::network
