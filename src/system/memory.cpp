#include "system/memory.h"

#include <algorithm>
#include <span>
#include <vector>

namespace orrery::system {

MemoryEstimate estimate_memory(const ProgramModel& program, Bytes capacity) {
  const ExecGraph& graph = program.graph();
  const auto n = static_cast<std::uint32_t>(graph.size());
  const std::span<const ExecGraph::Buffer> buffers = graph.buffers();
  // Each buffer is freed after its last reader runs (never, for a step output).
  std::vector<std::vector<std::uint32_t>> frees(n);
  for (std::uint32_t b = 0; b < buffers.size(); ++b) {
    if (!buffers[b].output && buffers[b].last_reader != ExecGraph::kNoReader) {
      frees[buffers[b].last_reader].push_back(b);
    }
  }
  MemoryEstimate estimate;
  estimate.program = program.label();
  estimate.arguments = program.argument_bytes();
  estimate.capacity = capacity.count;
  std::uint64_t live = estimate.arguments;
  estimate.peak = live;
  // Step outputs (the values the step returns: updated weights and optimizer state) are written
  // into donated argument buffers while any remain, as XLA aliases them: they take no new memory
  // up to the donated bytes.
  std::uint64_t donated = program.donated_argument_bytes();
  std::vector<std::uint64_t> bytes(buffers.size());
  std::size_t next = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (; next < buffers.size() && buffers[next].writer == i; ++next) {
      const ExecGraph::Buffer& buffer = buffers[next];
      bytes[next] = program.value_bytes(buffer.op, buffer.result);
      if (buffer.output) {
        const std::uint64_t reused = std::min(donated, bytes[next]);
        donated -= reused;
        bytes[next] -= reused;
      }
      live += bytes[next];
    }
    if (live > estimate.peak) {
      estimate.peak = live;
      estimate.peak_op = i + 1;
    }
    for (const std::uint32_t freed : frees[i]) {
      live -= bytes[freed];
    }
  }
  estimate.ops = n;
  if (estimate.peak_op > 0) {
    estimate.peak_at = program.describe_op(graph.op(static_cast<std::uint32_t>(estimate.peak_op - 1)).source);
  }
  estimate.fits = capacity.count == 0 || estimate.peak <= capacity.count;
  return estimate;
}

}  // namespace orrery::system
