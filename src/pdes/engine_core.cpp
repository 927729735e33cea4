#include "pdes/engine.h"

#include <algorithm>
#include <array>
#include <limits>

namespace orrery::pdes::detail {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

EngineCore::EngineCore(Communicator& communicator, const PartitionMap& partition,
                       const ChannelTable& channels)
    : communicator_(communicator),
      analysis_(analyse_crossings(channels, partition)),
      neighbour_index_(partition.num_processes(), -1) {
  neighbours_ = analysis_.neighbours[communicator.rank()];
  for (std::size_t i = 0; i < neighbours_.size(); ++i) {
    neighbour_index_[neighbours_[i]] = static_cast<int>(i);
  }
  incoming_.resize(neighbours_.size());
}

std::optional<SimTime> EngineCore::begin_window(SimTime local_next, SimTime end_time) {
  const auto start = std::chrono::steady_clock::now();
  std::array<std::uint64_t, 2> values{local_next.ps(),
                                      error_ ? encode_failure(communicator_.rank(), error_->code) : kNoFailure};
  communicator_.allreduce_min(values);
  sync_seconds_ += seconds_since(start);
  if (values[1] != kNoFailure) {
    if (error_ && failed_process(values[1]) == communicator_.rank()) {
      throw OrreryError(*error_).mark_coordinated();
    }
    throw secondary_failure(failed_process(values[1]), failed_code(values[1]));
  }
  const SimTime global_next = SimTime::from_ps(values[0]);
  if (global_next.is_max() || global_next >= end_time) {
    return std::nullopt;
  }
  return global_next;
}

std::vector<ByteBuffer>& EngineCore::exchange(std::vector<ByteBuffer>& outgoing) {
  const auto start = std::chrono::steady_clock::now();
  if (!neighbours_.empty()) {
    communicator_.exchange(neighbours_, outgoing, incoming_);
  }
  sync_seconds_ += seconds_since(start);
  return incoming_;
}

void EngineCore::record_error(Error error) {
  if (!error_) {
    error_ = std::move(error);
  }
}

RunStats EngineCore::finish(ProcessStats local, const std::vector<LpHash>& lp_hashes) {
  ByteBuffer mine;
  append_record(mine, local);
  for (const auto& entry : lp_hashes) {
    append_record(mine, entry);
  }
  const std::vector<ByteBuffer> all = communicator_.allgather(mine);

  RunStats run;
  std::vector<LpHash> hashes;
  for (const ByteBuffer& buffer : all) {
    ProcessStats stats;
    std::memcpy(&stats, buffer.data(), sizeof(ProcessStats));
    run.processes.push_back(stats);
    const std::size_t count = (buffer.size() - sizeof(ProcessStats)) / sizeof(LpHash);
    for (std::size_t i = 0; i < count; ++i) {
      LpHash entry;
      std::memcpy(&entry, buffer.data() + sizeof(ProcessStats) + i * sizeof(LpHash), sizeof(LpHash));
      hashes.push_back(entry);
    }
  }
  // Combined in LP-id order, so the result does not depend on which process ran which LP.
  std::sort(hashes.begin(), hashes.end(),
            [](const LpHash& a, const LpHash& b) { return a.lp < b.lp; });
  std::uint64_t combined = 0x6f72726572790000ULL;  // "orrery"
  for (const LpHash& entry : hashes) {
    combined = hash_combine(combined, hash_combine(entry.lp, entry.hash));
  }
  run.history_hash = combined;
  run.lookahead = analysis_.lookahead;
  for (const ProcessStats& p : run.processes) {
    run.events += p.events;
    run.windows = std::max(run.windows, p.windows);
    run.remote_events += p.remote_sent;
    run.wall_seconds = std::max(run.wall_seconds, p.wall_seconds);
    run.last_event_time = std::max(run.last_event_time, SimTime::from_ps(p.last_event_ps));
  }
  return run;
}

}  // namespace orrery::pdes::detail
