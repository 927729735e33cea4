#include "network/topology/graph.h"

#include <algorithm>

#include "util/assert.h"

namespace orrery::network {

std::string_view vertex_kind_name(VertexKind kind) {
  switch (kind) {
    case VertexKind::kDevice:
      return "device";
    case VertexKind::kScaleUpSwitch:
      return "scale_up_switch";
    case VertexKind::kNic:
      return "nic";
    case VertexKind::kRouter:
      return "router";
  }
  return "?";
}

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::kScaleUp:
      return "scale_up";
    case LinkKind::kNic:
      return "nic";
    case LinkKind::kHost:
      return "host";
    case LinkKind::kFabric:
      return "fabric";
    case LinkKind::kLocal:
      return "local";
    case LinkKind::kGlobal:
      return "global";
  }
  return "?";
}

VertexId Graph::add_vertex(Vertex vertex) {
  vertices_.push_back(vertex);
  return static_cast<VertexId>(vertices_.size() - 1);
}

std::pair<LinkId, LinkId> Graph::add_cable(VertexId a, VertexId b, BytesPerSecond bandwidth,
                                           SimTime latency, LinkKind kind) {
  ORRERY_ASSERT(a < vertices_.size() && b < vertices_.size() && a != b, "cable between invalid vertices");
  const auto forward = static_cast<LinkId>(links_.size());
  links_.push_back(Link{a, b, bandwidth, latency, kind});
  links_.push_back(Link{b, a, bandwidth, latency, kind});
  return {forward, forward + 1};
}

void Graph::finish() {
  out_begin_.assign(vertices_.size() + 1, 0);
  for (const Link& link : links_) {
    ++out_begin_[link.from + 1];
  }
  for (std::size_t v = 0; v < vertices_.size(); ++v) {
    out_begin_[v + 1] += out_begin_[v];
  }
  out_.resize(links_.size());
  std::vector<std::uint32_t> next(out_begin_.begin(), out_begin_.end() - 1);
  for (LinkId id = 0; id < links_.size(); ++id) {
    out_[next[links_[id].from]++] = id;
  }
  for (std::size_t v = 0; v < vertices_.size(); ++v) {
    std::sort(out_.begin() + out_begin_[v], out_.begin() + out_begin_[v + 1], [this](LinkId x, LinkId y) {
      return links_[x].to != links_[y].to ? links_[x].to < links_[y].to : x < y;
    });
  }
  out_heads_.resize(out_.size());
  for (std::size_t i = 0; i < out_.size(); ++i) {
    out_heads_[i] = links_[out_[i]].to;
  }
}

LinkId Graph::link_between(VertexId from, VertexId to) const {
  const auto first = out_heads_.begin() + out_begin_[from];
  const auto last = out_heads_.begin() + out_begin_[from + 1];
  const auto it = std::lower_bound(first, last, to);
  return it != last && *it == to ? out_[static_cast<std::size_t>(it - out_heads_.begin())] : kNoLink;
}

LinkId Graph::require_link(VertexId from, VertexId to) const {
  const LinkId id = link_between(from, to);
  ORRERY_ASSERT(id != kNoLink, "routing stepped between vertices that share no link");
  return id;
}

}  // namespace orrery::network
