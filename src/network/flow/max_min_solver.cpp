#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "network/flow/sharing_solver.h"
#include "util/error.h"

namespace orrery::network {
namespace {

// Min-heap order on (share, link): std heap functions build max-heaps, so "less" is "later".
struct Later {
  template <class Entry>
  bool operator()(const Entry& a, const Entry& b) const {
    return a.share != b.share ? a.share > b.share : a.key > b.key;
  }
};

}  // namespace

RateUnits to_rate_units(double bytes_per_second) {
  const double units = std::floor(bytes_per_second * kRateUnitsPerBytePerSecond);
  if (!(units >= 0.0) || units > 4611686018427387904.0) {  // 2^62
    throw OrreryError(ErrorCode::kModel,
                      fmt::format("flow model: link bandwidth {} B/s is outside 0 .. 4.5e15 B/s", bytes_per_second));
  }
  return static_cast<RateUnits>(units);
}

double to_bytes_per_second(RateUnits rate) {
  return rate == kUnlimitedRate ? std::numeric_limits<double>::infinity()
                                : static_cast<double>(rate) / kRateUnitsPerBytePerSecond;
}

void MaxMinSolver::solve(const SharingProblem& problem, std::vector<RateUnits>& rates) {
  const std::uint32_t flows = problem.num_flows();
  const std::uint32_t links = problem.num_links();
  rates.assign(flows, kUnlimitedRate);
  residual_.assign(problem.capacity.begin(), problem.capacity.end());
  unfixed_.assign(links, 0);
  for (const std::uint32_t link : problem.flow_links) {
    ++unfixed_[link];
  }
  // Flows of each link in flow order (CSR).
  link_begin_.assign(links + 1, 0);
  for (std::uint32_t l = 0; l < links; ++l) {
    link_begin_[l + 1] = link_begin_[l] + unfixed_[l];
  }
  link_flows_.resize(problem.flow_links.size());
  cursor_.assign(link_begin_.begin(), link_begin_.end() - 1);
  for (std::uint32_t f = 0; f < flows; ++f) {
    for (std::uint32_t i = problem.flow_begin[f]; i < problem.flow_begin[f + 1]; ++i) {
      link_flows_[cursor_[problem.flow_links[i]]++] = f;
    }
  }
  fixed_.assign(flows, 0);
  heap_.clear();
  for (std::uint32_t l = 0; l < links; ++l) {
    if (unfixed_[l] > 0) {
      heap_.push_back(Entry{residual_[l] / unfixed_[l], problem.link_key.empty() ? l : problem.link_key[l], l});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), Later{});
  // Heap entries are lower bounds of their link's share: fixing a flow at the smallest share s
  // turns another link's share floor(R / n) into floor((R - s) / (n - 1)) >= floor(R / n) (as
  // R >= n s), so shares only grow and a
  // link is re-queued with its current share when an outdated entry surfaces, instead of on
  // every change (one heap operation per stale pop rather than per flow-link incidence).
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Entry top = heap_.back();
    heap_.pop_back();
    const std::uint32_t bottleneck = top.link;
    if (unfixed_[bottleneck] == 0) {
      continue;
    }
    const RateUnits share = residual_[bottleneck] / unfixed_[bottleneck];
    if (share > top.share) {
      heap_.push_back(Entry{share, top.key, bottleneck});
      std::push_heap(heap_.begin(), heap_.end(), Later{});
      continue;
    }
    for (std::uint32_t i = link_begin_[bottleneck]; i < link_begin_[bottleneck + 1]; ++i) {
      const std::uint32_t f = link_flows_[i];
      if (fixed_[f] != 0) {
        continue;
      }
      if (share == 0) {
        throw OrreryError(ErrorCode::kModel,
                          fmt::format("flow model: link {} has {} flows sharing {} B/s, under 1/1024 B/s each",
                                      top.key, unfixed_[bottleneck], to_bytes_per_second(residual_[bottleneck])));
      }
      fixed_[f] = 1;
      rates[f] = share;
      for (std::uint32_t j = problem.flow_begin[f]; j < problem.flow_begin[f + 1]; ++j) {
        const std::uint32_t link = problem.flow_links[j];
        residual_[link] -= share;  // share <= residual / unfixed: never below zero
        --unfixed_[link];
      }
    }
  }
}

std::unique_ptr<SharingSolver> make_sharing_solver(std::string_view name) {
  if (name == "max_min") {
    return std::make_unique<MaxMinSolver>();
  }
  throw OrreryError(ErrorCode::kConfig, fmt::format("unknown bandwidth-sharing solver '{}' (known: max_min)", name));
}

}  // namespace orrery::network
