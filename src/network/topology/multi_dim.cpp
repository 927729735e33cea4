#include "network/topology/multi_dim.h"

#include <fmt/format.h>

#include "config/loader.h"
#include "util/error.h"

namespace orrery::network {

config::AstraNetworkSpec load_astra_network(const config::FilePath& file) {
  const std::string& path = file.path;
  config::AstraNetworkSpec spec;
  try {
    spec = config::load_config_file<config::AstraNetworkSpec>(path, {});
  } catch (const OrreryError& error) {
    Error detailed = config::attributed_to(file, error.error());  // which key named the file, and where
    if (detailed.message.find("expected a finite number") != std::string::npos) {
      detailed.notes.push_back(
          "ASTRA-sim network files need a number in every list entry; placeholders such as 'tbd' are not accepted");
    }
    throw OrreryError(std::move(detailed));
  }
  if (spec.empty()) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("{}: not an ASTRA-sim network file (needs topology, npus_count, bandwidth, "
                                  "latency)",
                                  path));
  }
  return spec;
}

MultiDim::MultiDim(config::AstraNetworkSpec spec) : spec_(std::move(spec)) {
  if (spec_.topology.empty() || spec_.npus_count.size() != spec_.topology.size() ||
      spec_.bandwidth.size() != spec_.topology.size() || spec_.latency.size() != spec_.topology.size()) {
    throw OrreryError(ErrorCode::kConfig,
                      "network.topology: an ASTRA-sim network needs topology, npus_count, bandwidth and latency "
                      "lists of the same length");
  }
  std::uint64_t size = 1;
  for (std::uint32_t dim = 0; dim < dimensions(); ++dim) {
    if (spec_.npus_count[dim] == 0 || !(spec_.bandwidth[dim] > 0) || !(spec_.latency[dim] >= 0)) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("network.topology: dimension {} needs npus_count >= 1, bandwidth > 0 and "
                                    "latency >= 0",
                                    dim));
    }
    strides_.push_back(static_cast<std::uint32_t>(size));
    size *= spec_.npus_count[dim];
    if (size > (1U << 26)) {
      throw OrreryError(ErrorCode::kConfig, "network.topology: more than 2^26 NPUs is not supported");
    }
  }
  size_ = static_cast<std::uint32_t>(size);
  VertexId offset = 0;
  for (std::uint32_t dim = 0; dim < dimensions(); ++dim) {
    switch_offset_.push_back(offset);
    if (dimension_kind(dim) == config::AstraDimension::kSwitch) {
      offset += size_ / extent(dim);
    }
  }
}

std::string MultiDim::describe() const {
  std::string dims;
  for (std::uint32_t dim = 0; dim < dimensions(); ++dim) {
    dims += fmt::format("{}{}({}, {} GB/s, {} ns)", dim == 0 ? "" : " x ",
                        config::enum_to_string(dimension_kind(dim)), extent(dim), spec_.bandwidth[dim],
                        spec_.latency[dim]);
  }
  return fmt::format("ASTRA-sim multi-dimensional {} = {} NPUs", dims, size_);
}

VertexId MultiDim::switch_vertex(std::uint16_t plane, std::uint32_t npu, std::uint32_t dim) const {
  // Lines of a dimension are numbered by their first NPU with the dimension's coordinate dropped.
  const std::uint32_t first = line_index(npu, dim);
  const std::uint32_t low = first % strides_[dim];
  const std::uint32_t high = first / (strides_[dim] * extent(dim));
  return plane_base(plane) + switch_offset_[dim] + high * strides_[dim] + low;
}

void MultiDim::build_plane(Graph& graph, std::uint16_t plane) {
  for (std::uint32_t dim = 0; dim < dimensions(); ++dim) {
    if (dimension_kind(dim) == config::AstraDimension::kSwitch) {
      for (std::uint32_t line = 0; line < size_ / extent(dim); ++line) {
        graph.add_vertex(router(plane, kSharedUnit));
      }
    }
  }
  for (std::uint32_t dim = 0; dim < dimensions(); ++dim) {
    const BytesPerSecond bandwidth = BytesPerSecond::from_gibibytes(spec_.bandwidth[dim]);
    const SimTime latency = SimTime::from_nanoseconds(spec_.latency[dim]);
    const std::uint32_t k = extent(dim);
    for (std::uint32_t npu = 0; npu < size_; ++npu) {
      const std::uint32_t x = coordinate(npu, dim);
      switch (dimension_kind(dim)) {
        case config::AstraDimension::kRing:
          if (k > 2 || (k == 2 && x == 0)) {
            graph.add_cable(host_vertex(plane, npu), host_vertex(plane, with_coordinate(npu, dim, (x + 1) % k)),
                            bandwidth, latency, LinkKind::kFabric);
          }
          break;
        case config::AstraDimension::kFullyConnected:
          for (std::uint32_t y = x + 1; y < k; ++y) {
            graph.add_cable(host_vertex(plane, npu), host_vertex(plane, with_coordinate(npu, dim, y)), bandwidth,
                            latency, LinkKind::kFabric);
          }
          break;
        case config::AstraDimension::kSwitch:
          graph.add_cable(host_vertex(plane, npu), switch_vertex(plane, npu, dim), bandwidth, latency,
                          LinkKind::kFabric);
          break;
      }
    }
  }
}

}  // namespace orrery::network
