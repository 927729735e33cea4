// The routing algorithm of each fabric family; built by make_fabric_routing (routing.h).
#pragma once

#include "network/routing/routing.h"
#include "network/topology/dragonfly.h"
#include "network/topology/fat_tree.h"
#include "network/topology/multi_dim.h"
#include "network/topology/torus.h"

namespace orrery::network {

// Up to the lowest common ancestors, then the unique way down. The up-link at tier l is
//   d-mod-k (Zahavi et al., "Optimized InfiniBand fat-tree routing for shift all-to-all
//   communication patterns", 2010):  u = floor(dst / W_l) mod w_{l+1}
//   ecmp (hashed):                   u = hash(src, dst, flow key, l) mod w_{l+1}
// minimal is d-mod-k.
class FatTreeRouting final : public FabricRouting {
 public:
  FatTreeRouting(const FatTree& tree, const Graph& graph, bool hashed) : tree_(tree), graph_(graph), hashed_(hashed) {}
  void route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
             std::vector<LinkId>& path) const override;

 private:
  const FatTree& tree_;
  const Graph& graph_;
  bool hashed_;
};

// minimal: local hop to the router owning a global port to the destination group, the global
// link, local hop to the destination router (at most 3 router-to-router hops); the port among
// several is chosen by hash(src, dst, flow key). valiant (Valiant 1982; Kim et al. 2008): first a
// global hop to an intermediate group chosen by the same hash (neither the source's nor the
// destination's), then minimal from the router where it lands (at most 5 hops, loop-free).
class DragonflyRouting final : public FabricRouting {
 public:
  DragonflyRouting(const Dragonfly& dragonfly, const Graph& graph, bool valiant)
      : dragonfly_(dragonfly), graph_(graph), valiant_(valiant) {}
  void route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
             std::vector<LinkId>& path) const override;

 private:
  // Local hop to the router owning a global port to `to_group` (chosen by hash), then the global
  // link; returns the router where it lands.
  VertexId hop_to_group(std::uint16_t plane, std::uint32_t from, std::uint32_t to_group, std::uint64_t hash,
                        std::vector<LinkId>& path) const;
  void route_routers(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t hash,
                     std::vector<LinkId>& path) const;
  const Dragonfly& dragonfly_;
  const Graph& graph_;
  bool valiant_;
};

// Dimension-order: dimension 0 first, each the shorter way round (+ on a tie).
class TorusRouting final : public FabricRouting {
 public:
  TorusRouting(const Torus& torus, const Graph& graph) : torus_(torus), graph_(graph) {}
  void route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
             std::vector<LinkId>& path) const override;

 private:
  const Torus& torus_;
  const Graph& graph_;
};

// Host -> switch -> host.
class SwitchRouting final : public FabricRouting {
 public:
  SwitchRouting(const SingleSwitch& fabric, const Graph& graph) : fabric_(fabric), graph_(graph) {}
  void route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
             std::vector<LinkId>& path) const override;

 private:
  const SingleSwitch& fabric_;
  const Graph& graph_;
};

// Dimension-order over ASTRA-sim dimensions: Ring the shorter way round, FullyConnected in one
// hop, Switch through the dimension's switch (two hops).
class MultiDimRouting final : public FabricRouting {
 public:
  MultiDimRouting(const MultiDim& fabric, const Graph& graph) : fabric_(fabric), graph_(graph) {}
  void route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
             std::vector<LinkId>& path) const override;

 private:
  const MultiDim& fabric_;
  const Graph& graph_;
};

}  // namespace orrery::network
