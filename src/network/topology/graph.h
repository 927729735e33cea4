// The topology as a directed graph: vertices (devices, scale-up switches, NICs, fabric routers)
// and links with a bandwidth (bytes per second, per direction) and a latency (SimTime). Built
// once by the topology builders, then immutable; outgoing links are kept sorted by head vertex so
// that link_between() is a binary search, over a contiguous copy of the heads (routing calls it
// for every hop of every route, so it should not touch the links themselves).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "network/types.h"

namespace orrery::network {

enum class VertexKind : std::uint8_t { kDevice, kScaleUpSwitch, kNic, kRouter };
std::string_view vertex_kind_name(VertexKind kind);

// What a link joins; for reports and utilisation summaries.
enum class LinkKind : std::uint8_t { kScaleUp, kNic, kHost, kFabric, kLocal, kGlobal };
std::string_view link_kind_name(LinkKind kind);

struct Vertex {
  VertexKind kind = VertexKind::kDevice;
  std::uint16_t plane = 0;    // fabric plane (rail) of NICs and routers; 0 otherwise
  std::uint32_t tier = 0;     // fat-tree tier of a switch; 0 otherwise
  std::uint32_t domain = 0;   // the node of a device, scale-up switch or NIC; the partition unit of a router
};

struct Link {
  VertexId from = kNoVertex;
  VertexId to = kNoVertex;
  BytesPerSecond bandwidth;
  SimTime latency;
  LinkKind kind = LinkKind::kFabric;
};

class Graph {
 public:
  VertexId add_vertex(Vertex vertex);
  // A full-duplex cable: two links, (from -> to, to -> from), with consecutive ids.
  std::pair<LinkId, LinkId> add_cable(VertexId a, VertexId b, BytesPerSecond bandwidth, SimTime latency,
                                      LinkKind kind);
  // Builds the adjacency; call once after the last add.
  void finish();

  [[nodiscard]] std::uint32_t num_vertices() const { return static_cast<std::uint32_t>(vertices_.size()); }
  [[nodiscard]] std::uint32_t num_links() const { return static_cast<std::uint32_t>(links_.size()); }
  [[nodiscard]] const Vertex& vertex(VertexId id) const { return vertices_[id]; }
  [[nodiscard]] const Link& link(LinkId id) const { return links_[id]; }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  // Outgoing links of a vertex, sorted by head vertex (then id).
  [[nodiscard]] std::span<const LinkId> out_links(VertexId id) const {
    return {out_.data() + out_begin_[id], out_.data() + out_begin_[id + 1]};
  }
  // Ports (outgoing links) of a vertex: its radix.
  [[nodiscard]] std::uint32_t degree(VertexId id) const { return out_begin_[id + 1] - out_begin_[id]; }
  // The lowest-id link from `from` to `to`; kNoLink when they are not adjacent.
  [[nodiscard]] LinkId link_between(VertexId from, VertexId to) const;
  // Like link_between, but a missing link is a bug in a routing algorithm (asserts).
  [[nodiscard]] LinkId require_link(VertexId from, VertexId to) const;

 private:
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::uint32_t> out_begin_;
  std::vector<LinkId> out_;
  std::vector<VertexId> out_heads_;  // links_[out_[i]].to, for link_between()
};

}  // namespace orrery::network
