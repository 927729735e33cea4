#include "system/memory.h"

#include <algorithm>

namespace orrery::system {

MemoryEstimate estimate_memory(const ProgramModel& program, Bytes capacity) {
  const ExecGraph& graph = program.graph();
  const auto n = static_cast<std::uint32_t>(graph.size());
  // Results of op i are freed after the last consumer of i runs (never, when i has none: outputs).
  std::vector<std::vector<std::uint32_t>> frees(n);
  std::vector<std::uint64_t> bytes(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto combined = graph.combined_sources(i);
    if (combined.empty()) {
      bytes[i] = program.output_bytes(graph.op(i).source);  // a fused kernel: every value it writes
    } else {
      for (const workload::OpId member : combined) {  // a combined collective holds every member's result
        bytes[i] += program.result_bytes(member);
      }
    }
    const auto consumers = graph.consumers(i);
    if (!consumers.empty()) {
      frees[*std::max_element(consumers.begin(), consumers.end())].push_back(i);
    }
  }
  MemoryEstimate estimate;
  estimate.program = program.label();
  estimate.arguments = program.argument_bytes();
  estimate.capacity = capacity.count;
  std::uint64_t live = estimate.arguments;
  estimate.peak = live;
  // Step outputs (results nobody in the step reads) are written into donated argument buffers
  // while any remain, as XLA aliases them: they take no new memory up to the donated bytes.
  std::uint64_t donated = program.donated_argument_bytes();
  for (std::uint32_t i = 0; i < n; ++i) {
    if (graph.consumers(i).empty()) {
      const std::uint64_t reused = std::min(donated, bytes[i]);
      donated -= reused;
      bytes[i] -= reused;
    }
    live += bytes[i];
    estimate.peak = std::max(estimate.peak, live);
    for (const std::uint32_t freed : frees[i]) {
      live -= bytes[freed];
    }
  }
  estimate.fits = capacity.count == 0 || estimate.peak <= capacity.count;
  return estimate;
}

}  // namespace orrery::system
