#include "frontend/chakra/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "frontend/chakra/trace.h"
#include "util/assert.h"
#include "util/hash.h"
#include "workload/program_builder.h"

namespace orrery::frontend::chakra {
namespace {

Error invalid(std::string message) { return Error{ErrorCode::kInvalidInput, std::move(message), std::nullopt, {}}; }
Error unsupported(std::string message) { return Error{ErrorCode::kUnsupported, std::move(message), std::nullopt, {}}; }


// "0-3,8" for messages.
std::string rank_list(std::vector<std::uint32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) {
      ++j;
    }
    text += (text.empty() ? "" : ",") +
            (j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return text;
}

// A device-side collective (host-side c10d records carry no comm_type and take no device time).
bool is_device_comm(const Node& n) {
  return !n.is_cpu_op && (n.type == NodeType::kCollective || n.type == NodeType::kSend || n.type == NodeType::kRecv);
}

// What makes two ranks' graphs the same program: everything but ids, names, durations and peers
// (dependencies count by node position: converters number nodes differently on each rank).
std::uint64_t node_signature(const Node& n, std::uint64_t h) {
  h = hash_combine(h, static_cast<std::uint64_t>(n.type) | (n.is_cpu_op ? 0x100U : 0U));
  for (const std::uint32_t d : n.dep_index) {
    h = hash_combine(h, d);
  }
  h = hash_combine(h, n.dep_index.size());
  h = hash_combine(h, n.comm_type ? static_cast<std::uint64_t>(*n.comm_type) + 1 : 0);
  h = hash_combine(h, n.comm_size.value_or(~0ULL));
  h = hash_combine(h, static_cast<std::uint64_t>(n.comm_tag.value_or(-1)));
  h = hash_combine(h, n.pg_name ? hash_bytes(*n.pg_name) : 0);
  for (const bool b : n.involved_dim) {
    h = hash_combine(h, b ? 2 : 1);
  }
  h = hash_combine(h, n.num_ops.value_or(~0ULL));
  h = hash_combine(h, n.tensor_size.value_or(~0ULL));
  h = hash_combine(h, n.duration_micros.has_value() ? 1 : 0);
  return h;
}

bool same_graph_node(const Node& a, const Node& b) {
  return a.type == b.type && a.is_cpu_op == b.is_cpu_op && a.dep_index == b.dep_index &&
         a.comm_type == b.comm_type && a.comm_size == b.comm_size && a.comm_tag == b.comm_tag &&
         a.pg_name == b.pg_name && a.involved_dim == b.involved_dim && a.num_ops == b.num_ops &&
         a.tensor_size == b.tensor_size && a.duration_micros.has_value() == b.duration_micros.has_value();
}

// Checks one rank's trace: unique ids, known dependencies, the attributes each node kind needs.
Result<bool> check_trace(Trace& trace, std::uint32_t rank, std::uint32_t ranks) {
  // Node id -> position. Converters number nodes from 0 or close to it, so a table indexed by id
  // serves when ids stay below four times the node count; a hash map otherwise.
  constexpr std::uint32_t kAbsent = 0xffffffffU;
  std::uint64_t largest = 0;
  for (const Node& n : trace.nodes) {
    largest = std::max(largest, n.id);
  }
  const bool dense = largest < 4 * static_cast<std::uint64_t>(trace.nodes.size()) + 64;
  std::vector<std::uint32_t> table(dense ? largest + 1 : 0, kAbsent);
  std::unordered_map<std::uint64_t, std::uint32_t> map;
  if (!dense) {
    map.reserve(trace.nodes.size());
  }
  const auto index_of = [&](std::uint64_t id) {
    if (dense) {
      return id < table.size() ? table[id] : kAbsent;
    }
    const auto found = map.find(id);
    return found == map.end() ? kAbsent : found->second;
  };
  for (const Node& n : trace.nodes) {
    const std::uint32_t first = index_of(n.id);
    if (first != kAbsent) {
      return invalid(fmt::format("{}: node id {} is used twice (first by node {})", describe_node(trace, n), n.id, first));
    }
    if (dense) {
      table[n.id] = n.index;
    } else {
      map.emplace(n.id, n.index);
    }
  }
  for (Node& n : trace.nodes) {
    n.dep_index.reserve(n.data_deps.size());
    for (const std::uint64_t d : n.data_deps) {
      const std::uint32_t index = index_of(d);
      if (index == kAbsent) {
        return invalid(fmt::format("{}: data dependency on node id {}, which is not in the trace", describe_node(trace, n), d));
      }
      if (d == n.id) {
        return invalid(fmt::format("{}: depends on itself", describe_node(trace, n)));
      }
      n.dep_index.push_back(index);
    }
    if (!std::is_sorted(n.dep_index.begin(), n.dep_index.end())) {
      std::sort(n.dep_index.begin(), n.dep_index.end());
    }
    n.dep_index.erase(std::unique(n.dep_index.begin(), n.dep_index.end()), n.dep_index.end());
    if (!is_device_comm(n)) {
      if ((n.type == NodeType::kMemLoad || n.type == NodeType::kMemStore) && !n.is_cpu_op && !n.tensor_size) {
        return invalid(fmt::format("{}: a {} needs tensor_size", describe_node(trace, n), node_type_name(n.type)));
      }
      continue;
    }
    if (!n.comm_size) {
      return invalid(fmt::format("{}: a {} needs comm_size", describe_node(trace, n), node_type_name(n.type)));
    }
    if (n.type == NodeType::kCollective) {
      if (!n.comm_type) {
        return invalid(fmt::format("{}: a COMM_COLL_NODE needs comm_type", describe_node(trace, n)));
      }
      switch (*n.comm_type) {
        case CommType::kAllReduce:
        case CommType::kAllGather:
        case CommType::kReduceScatter:
        case CommType::kAllToAll:
        case CommType::kBroadcast: break;
        default:
          return unsupported(fmt::format("{}: collective {} is not supported (all-reduce, all-gather, reduce-scatter, "
                                         "all-to-all and broadcast are)",
                                         describe_node(trace, n), comm_type_name(*n.comm_type)));
      }
      continue;
    }
    const bool send = n.type == NodeType::kSend;
    const std::optional<std::uint32_t> peer = send ? n.comm_dst : n.comm_src;
    if (!peer) {
      return invalid(fmt::format("{}: a {} needs {}", describe_node(trace, n), node_type_name(n.type),
                                 send ? "comm_dst" : "comm_src"));
    }
    if (*peer >= ranks) {
      return invalid(fmt::format("{}: {} {} is not a rank of this {}-rank job", describe_node(trace, n),
                                 send ? "comm_dst" : "comm_src", *peer, ranks));
    }
    if (*peer == rank) {
      return invalid(fmt::format("{}: rank {} {} itself", describe_node(trace, n), rank, send ? "sends to" : "receives from"));
    }
  }
  return true;
}

// Node indices in dependency order; among ready nodes the earliest in the file first.
Result<std::vector<std::uint32_t>> dependency_order(const Trace& trace) {
  const std::size_t count = trace.nodes.size();
  std::vector<std::uint32_t> waiting(count, 0);
  std::vector<std::vector<std::uint32_t>> consumers(count);
  for (const Node& n : trace.nodes) {
    waiting[n.index] = static_cast<std::uint32_t>(n.dep_index.size());
    for (const std::uint32_t d : n.dep_index) {
      consumers[d].push_back(n.index);
    }
  }
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (waiting[i] == 0) {
      ready.push(i);
    }
  }
  std::vector<std::uint32_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    const std::uint32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (const std::uint32_t c : consumers[i]) {
      if (--waiting[c] == 0) {
        ready.push(c);
      }
    }
  }
  if (order.size() != count) {
    std::string cycle;
    std::size_t listed = 0;
    for (std::uint32_t i = 0; i < count && listed < 4; ++i) {
      if (waiting[i] > 0) {
        cycle += fmt::format("{}node {} (id {}, '{}')", listed == 0 ? "" : ", ", i, trace.nodes[i].id, trace.nodes[i].name);
        ++listed;
      }
    }
    return invalid(fmt::format("{}: the data dependencies form a cycle; {} of {} nodes can never run, among them {}",
                               trace.path, count - order.size(), count, cycle));
  }
  return order;
}

}  // namespace

std::optional<MemoryFootprint> memory_footprint(const Trace& trace, const std::vector<std::uint32_t>& order) {
  struct Storage {
    std::uint64_t extent = 0;
    std::size_t first = 0;  // position in `order` of its first write (pre-existing: none)
    std::size_t last = 0;   // position of its last reference
    bool existed = false;
  };
  std::unordered_map<std::uint64_t, Storage> storages;
  for (std::size_t at = 0; at < order.size(); ++at) {
    const Node& n = trace.nodes[order[at]];
    for (const auto* refs : {&n.reads, &n.writes}) {
      for (const TensorRef& t : *refs) {
        auto [it, inserted] = storages.try_emplace(t.storage);
        Storage& s = it->second;
        if (inserted) {
          s.existed = refs == &n.reads;
          s.first = at;
        }
        s.extent = std::max(s.extent, t.extent);
        s.last = at;
      }
    }
  }
  if (storages.empty()) {
    return std::nullopt;
  }
  MemoryFootprint footprint;
  std::vector<std::int64_t> change(order.size() + 1, 0);  // live bytes of storages made in the step
  for (const auto& [id, s] : storages) {
    if (s.existed) {
      footprint.arguments += s.extent;
    } else {
      change[s.first] += static_cast<std::int64_t>(s.extent);
      change[s.last + 1] -= static_cast<std::int64_t>(s.extent);
    }
  }
  std::int64_t live = 0;
  std::int64_t most = 0;
  for (std::size_t at = 0; at < order.size(); ++at) {
    live += change[at];
    most = std::max(most, live);
  }
  footprint.peak = footprint.arguments + static_cast<std::uint64_t>(most);
  return footprint;
}

namespace {

// The graph signature of a checked trace (node_signature over its nodes).
std::uint64_t graph_signature(const Trace& trace) {
  std::uint64_t signature = hash_combine(0, trace.nodes.size());
  for (const Node& n : trace.nodes) {
    signature = node_signature(n, signature);
  }
  return signature;
}

// Two traces with the same signature must hold the same graph: a 64-bit collision between two
// different graphs is refused rather than merged.
Result<bool> same_graph(const Trace& first, const Trace& other) {
  if (first.nodes.size() == other.nodes.size() &&
      std::equal(first.nodes.begin(), first.nodes.end(), other.nodes.begin(), same_graph_node)) {
    return true;
  }
  return unsupported(
      fmt::format("{}: its graph differs from that of {} but has the same 64-bit signature; ranks "
                  "are grouped by signature, so this job cannot be loaded",
                  other.path, first.path));
}

void accumulate_durations(const Trace& trace, std::vector<std::uint64_t>& max,
                          std::vector<std::uint64_t>& min) {
  for (const Node& n : trace.nodes) {
    const std::uint64_t micros = n.duration_micros.value_or(0);
    max[n.index] = std::max(max[n.index], micros);
    min[n.index] = std::min(min[n.index], micros);
  }
}

// Bytes the loading processes exchange (load_workload with a communicator): words in host order (the
// processes of one run execute the same binary) and length-prefixed strings.
class WireWriter {
 public:
  void u64(std::uint64_t value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void text(std::string_view text) {
    u64(text.size());
    bytes_.append(text);
  }
  void append(const WireWriter& other) { bytes_ += other.bytes_; }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  [[nodiscard]] bool done() const { return at_ == bytes_.size(); }
  std::uint64_t u64() {
    ORRERY_ASSERT(at_ + sizeof(std::uint64_t) <= bytes_.size(), "a loading process's message is complete");
    std::uint64_t value = 0;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  std::string text() {
    const std::uint64_t size = u64();
    ORRERY_ASSERT(at_ + size <= bytes_.size(), "a loading process's message is complete");
    std::string text(bytes_.substr(at_, size));
    at_ += size;
    return text;
  }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

// A rank whose trace could not be loaded, and why.
struct Failure {
  std::uint32_t rank = 0;
  Error error;
};

void keep_lowest(std::optional<Failure>& lowest, std::optional<Failure> failure) {
  if (failure && (!lowest || failure->rank < lowest->rank)) {
    lowest = std::move(failure);
  }
}

void write_failure(WireWriter& out, const std::optional<Failure>& failure) {
  out.u64(failure ? 1 : 0);
  if (!failure) {
    return;
  }
  const Error& e = failure->error;
  out.u64(failure->rank);
  out.u64(static_cast<std::uint64_t>(e.code));
  out.text(e.message);
  out.u64(e.where ? 1 : 0);
  if (e.where) {
    out.text(e.where->file);
    out.u64(e.where->line);
    out.u64(e.where->column);
    out.text(e.where->line_text);
  }
  out.u64(e.notes.size());
  for (const std::string& note : e.notes) {
    out.text(note);
  }
}

std::optional<Failure> read_failure(WireReader& in) {
  if (in.u64() == 0) {
    return std::nullopt;
  }
  Failure failure;
  failure.rank = static_cast<std::uint32_t>(in.u64());
  failure.error.code = static_cast<ErrorCode>(in.u64());
  failure.error.message = in.text();
  if (in.u64() != 0) {
    SourceLocation where;
    where.file = in.text();
    where.line = static_cast<std::uint32_t>(in.u64());
    where.column = static_cast<std::uint32_t>(in.u64());
    where.line_text = in.text();
    failure.error.where = std::move(where);
  }
  const std::uint64_t notes = in.u64();
  for (std::uint64_t i = 0; i < notes; ++i) {
    failure.error.notes.push_back(in.text());
  }
  return failure;
}

// Ranks that share one graph: the first rank's trace, and per node the largest duration and
// each rank's peer (send and recv nodes).
struct Group {
  Trace trace;
  std::vector<std::uint32_t> ranks;
  std::vector<std::uint64_t> max_duration;  // per node, micros
  std::vector<std::uint64_t> min_duration;
  std::vector<std::vector<std::uint32_t>> peers;  // per node: per rank of the group (send/recv only)
};

class Builder {
 public:
  Builder(const WorkloadOptions& options, pdes::Communicator* communicator, std::uint32_t ranks)
      : options_(options),
        communicator_(communicator),
        process_(communicator != nullptr ? communicator->rank() : 0),
        processes_(communicator != nullptr ? communicator->size() : 1),
        ranks_(ranks),
        all_ranks_(ranks) {
    std::iota(all_ranks_.begin(), all_ranks_.end(), 0U);
  }

  Result<bool> load_comm_groups() {
    if (options_.comm_groups.empty()) {
      return true;
    }
    std::ifstream in(options_.comm_groups);
    if (!in) {
      return Error{ErrorCode::kIo, fmt::format("{}: cannot read the communicator-group file", options_.comm_groups),
                   std::nullopt, {}};
    }
    nlohmann::json json;
    try {
      in >> json;
    } catch (const nlohmann::json::exception& e) {
      return invalid(fmt::format("{}: not JSON: {}", options_.comm_groups, e.what()));
    }
    if (!json.is_object()) {
      return invalid(fmt::format("{}: a communicator-group file is an object of group id -> list of ranks",
                                 options_.comm_groups));
    }
    for (const auto& [id, members] : json.items()) {
      if (!members.is_array() || members.empty()) {
        return invalid(fmt::format("{}: group '{}' must be a non-empty list of ranks", options_.comm_groups, id));
      }
      std::vector<std::uint32_t> list;
      std::set<std::uint32_t> seen;
      for (const auto& m : members) {
        if (!m.is_number_unsigned() || m.get<std::uint64_t>() >= ranks_) {
          return invalid(fmt::format("{}: group '{}' names {}, which is not a rank of this {}-rank job",
                                     options_.comm_groups, id, m.dump(), ranks_));
        }
        const auto r = m.get<std::uint32_t>();
        if (!seen.insert(r).second) {
          return invalid(fmt::format("{}: group '{}' lists rank {} twice", options_.comm_groups, id, r));
        }
        list.push_back(r);
      }
      std::sort(list.begin(), list.end());
      comm_groups_.emplace(id, std::move(list));
    }
    return true;
  }

  // Reads this process's block of ranks and agrees with the other processes on the
  // graphs: ranks with the same graph form a group, in order of their first rank.
  Result<bool> read_ranks(std::vector<std::string>& warnings) {
    // What this process read, by graph signature: the first of its ranks with the graph (its
    // trace) and the duration extremes over all of them.
    struct Local {
      std::uint32_t first_rank = 0;
      Trace trace;
      std::vector<std::uint64_t> max_duration;
      std::vector<std::uint64_t> min_duration;
    };
    std::map<std::uint64_t, Local> local;
    WireWriter mine;   // (rank, signature) per rank read
    WireWriter peers;  // (rank, node, peer) per send and recv node
    std::uint64_t read = 0;
    std::optional<Failure> failure;
    for (std::uint32_t rank = first_owned(process_); rank < first_owned(process_ + 1); ++rank) {
      auto loaded = read_checked(rank);
      if (!loaded) {
        failure = Failure{rank, loaded.error()};
        break;
      }
      Trace& trace = loaded.value();
      const std::uint64_t signature = graph_signature(trace);
      auto [it, inserted] = local.try_emplace(signature);
      Local& l = it->second;
      if (inserted) {
        l.first_rank = rank;
        l.max_duration.assign(trace.nodes.size(), 0);
        l.min_duration.assign(trace.nodes.size(), ~0ULL);
      } else if (auto same = same_graph(l.trace, trace); !same) {
        failure = Failure{rank, same.error()};
        break;
      }
      accumulate_durations(trace, l.max_duration, l.min_duration);
      for (const Node& n : trace.nodes) {
        if (is_device_comm(n) && n.type != NodeType::kCollective) {
          peers.u64(rank);
          peers.u64(n.index);
          peers.u64(n.type == NodeType::kSend ? *n.comm_dst : *n.comm_src);
        }
      }
      mine.u64(rank);
      mine.u64(signature);
      ++read;
      if (inserted) {
        l.trace = std::move(trace);
      }
    }
    // Exchange 1: every rank's signature and peers; or the lowest rank's error.
    WireWriter payload;
    write_failure(payload, failure);
    payload.u64(read);
    payload.append(mine);
    payload.append(peers);
    std::vector<std::uint64_t> signature_of(ranks_, 0);
    std::vector<std::array<std::uint32_t, 3>> peer_records;  // (rank, node, peer)
    std::optional<Failure> lowest;
    for (const std::string& bytes : gather(payload.take())) {
      WireReader in(bytes);
      keep_lowest(lowest, read_failure(in));
      const std::uint64_t count = in.u64();
      for (std::uint64_t i = 0; i < count; ++i) {
        const auto rank = static_cast<std::uint32_t>(in.u64());
        signature_of[rank] = in.u64();
      }
      while (!in.done()) {
        const auto rank = static_cast<std::uint32_t>(in.u64());
        const auto node = static_cast<std::uint32_t>(in.u64());
        peer_records.push_back({rank, node, static_cast<std::uint32_t>(in.u64())});
      }
    }
    if (lowest) {
      return lowest->error;
    }
    // The groups, in order of their first rank (the same on every process).
    std::unordered_map<std::uint64_t, std::uint32_t> group_of_signature;
    group_of_.assign(ranks_, kNone);
    std::vector<std::uint32_t> position(ranks_, 0);
    for (std::uint32_t rank = 0; rank < ranks_; ++rank) {
      const auto [it, inserted] =
          group_of_signature.try_emplace(signature_of[rank], static_cast<std::uint32_t>(groups_.size()));
      if (inserted) {
        groups_.emplace_back();
      }
      position[rank] = static_cast<std::uint32_t>(groups_[it->second].ranks.size());
      groups_[it->second].ranks.push_back(rank);
      group_of_[rank] = it->second;
    }
    // Every process holds each group's first trace: its own, or read here. A graph this process
    // read under the same signature must be that graph exactly.
    for (Group& g : groups_) {
      const auto mine_of = local.find(signature_of[g.ranks.front()]);
      if (mine_of != local.end() && mine_of->second.first_rank == g.ranks.front()) {
        g.trace = std::move(mine_of->second.trace);
        continue;
      }
      auto loaded = read_checked(g.ranks.front());
      if (!loaded) {
        keep_lowest(failure, Failure{g.ranks.front(), loaded.error()});
        break;
      }
      g.trace = std::move(loaded.value());
      if (mine_of != local.end()) {
        if (auto same = same_graph(g.trace, mine_of->second.trace); !same) {
          keep_lowest(failure, Failure{mine_of->second.first_rank, same.error()});
        }
      }
    }
    if (auto agreed = agree(failure); !agreed) {
      return agreed.error();
    }
    for (Group& g : groups_) {
      g.peers.resize(g.trace.nodes.size());
      for (const Node& n : g.trace.nodes) {
        if (is_device_comm(n) && n.type != NodeType::kCollective) {
          g.peers[n.index].assign(g.ranks.size(), kNone);
        }
      }
    }
    for (const auto& [rank, node, peer] : peer_records) {
      groups_[group_of_[rank]].peers[node][position[rank]] = peer;
    }
    // Exchange 2: the duration extremes per group and node.
    std::vector<std::uint32_t> all(groups_.size());
    std::iota(all.begin(), all.end(), 0U);
    auto reduced = reduce_durations(all,
                                    [&](std::uint32_t p, std::vector<std::uint64_t>& max,
                                        std::vector<std::uint64_t>& min) -> std::optional<Failure> {
                                      const auto found = local.find(signature_of[groups_[p].ranks.front()]);
                                      if (found != local.end()) {
                                        max = std::move(found->second.max_duration);
                                        min = std::move(found->second.min_duration);
                                      }
                                      return std::nullopt;
                                    });
    if (!reduced) {
      return reduced.error();
    }
    if (auto split = split_for_point_to_point(); !split) {
      return split.error();
    }
    for (const Group& g : groups_) {
      std::uint64_t differ = 0;
      double worst = 0.0;
      for (std::size_t i = 0; i < g.max_duration.size(); ++i) {
        if (g.max_duration[i] != g.min_duration[i]) {
          ++differ;
          worst = std::max(worst, static_cast<double>(g.max_duration[i] - g.min_duration[i]) /
                                      static_cast<double>(g.max_duration[i]));
        }
      }
      if (differ > 0) {
        warnings.push_back(fmt::format("{}: ranks {} share one graph but {} node durations differ among them (by up "
                                       "to {:.0f}%); each node takes its slowest rank's duration",
                                       options_.prefix, rank_list(g.ranks), differ, 100.0 * worst));
      }
    }
    for (std::uint32_t rank = 0; rank < ranks_; ++rank) {
      const Group& g = groups_[group_of_[rank]];
      local_of_.push_back(static_cast<std::uint32_t>(
          std::lower_bound(g.ranks.begin(), g.ranks.end(), rank) - g.ranks.begin()));
    }
    return true;
  }

  // The ranks of a graph share each send and recv node as one op, whose devices talk one for one
  // to the devices of one program. Where a node's ranks talk to ranks of several graphs, to a
  // graph of another size, or two of them to one rank, the graph's ranks are split: by the graphs
  // of their peers, else one rank per graph; until no graph needs it. Each split graph then takes
  // its trace and durations again from its own ranks' files (its first rank's file names its nodes;
  // the shared maximum durations were those of ranks it no longer holds).
  Result<bool> split_for_point_to_point() {
    std::set<std::uint32_t> split;  // groups whose ranks changed
    for (bool changed = true; changed;) {
      changed = false;
      const auto count = static_cast<std::uint32_t>(groups_.size());
      for (std::uint32_t p = 0; p < count; ++p) {
        const std::size_t size = groups_[p].ranks.size();
        if (size == 1) {
          continue;
        }
        std::map<std::vector<std::uint32_t>, std::vector<std::uint32_t>> by_peer_graphs;  // -> devices
        std::vector<std::vector<std::uint32_t>> key(size);
        bool one_for_one = true;
        std::vector<std::uint32_t> sorted;
        for (const std::vector<std::uint32_t>& peers : groups_[p].peers) {
          if (peers.empty()) {
            continue;
          }
          for (std::size_t d = 0; d < size; ++d) {
            key[d].push_back(group_of_[peers[d]]);
          }
          sorted = peers;
          std::sort(sorted.begin(), sorted.end());
          one_for_one = one_for_one && groups_[group_of_[peers.front()]].ranks.size() == size &&
                        std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
        }
        for (std::uint32_t d = 0; d < size; ++d) {
          by_peer_graphs[key[d]].push_back(d);
        }
        std::vector<std::vector<std::uint32_t>> parts;  // devices of each new graph
        if (by_peer_graphs.size() > 1) {
          for (auto& [peer_graphs, devices] : by_peer_graphs) {
            parts.push_back(std::move(devices));
          }
          std::sort(parts.begin(), parts.end());  // the part of device 0 stays in p
        } else if (!one_for_one) {
          for (std::uint32_t d = 0; d < size; ++d) {
            parts.push_back({d});
          }
        } else {
          continue;
        }
        changed = true;
        Group whole = std::move(groups_[p]);
        for (std::size_t k = 0; k < parts.size(); ++k) {
          const std::uint32_t target = k == 0 ? p : static_cast<std::uint32_t>(groups_.size());
          Group part;
          if (k == 0) {
            part.trace = std::move(whole.trace);  // its first rank's (parts[0] holds device 0)
          }  // the other parts read their first rank's trace below (not copied: there may be many)
          part.peers.resize(whole.peers.size());
          for (const std::uint32_t d : parts[k]) {
            part.ranks.push_back(whole.ranks[d]);
            group_of_[whole.ranks[d]] = target;
            for (std::size_t i = 0; i < whole.peers.size(); ++i) {
              if (!whole.peers[i].empty()) {
                part.peers[i].push_back(whole.peers[i][d]);
              }
            }
          }
          if (k == 0) {
            groups_[p] = std::move(part);
          } else {
            groups_.push_back(std::move(part));
          }
          split.insert(target);
        }
      }
    }
    // A split group's first trace (every process reads it), and its durations again from its own
    // ranks (each process its block of them).
    std::optional<Failure> failure;
    for (const std::uint32_t p : split) {
      Group& g = groups_[p];
      if (!g.trace.nodes.empty()) {
        continue;
      }
      auto loaded = read_checked(g.ranks.front());
      if (!loaded) {
        keep_lowest(failure, Failure{g.ranks.front(), loaded.error()});
        continue;
      }
      if (loaded.value().nodes.size() != g.peers.size()) {
        keep_lowest(failure, Failure{g.ranks.front(), changed_file(loaded.value(), g.peers.size())});
        continue;
      }
      g.trace = std::move(loaded.value());
    }
    if (auto agreed = agree(failure); !agreed) {
      return agreed.error();
    }
    const std::vector<std::uint32_t> again(split.begin(), split.end());
    return reduce_durations(again,
                            [&](std::uint32_t p, std::vector<std::uint64_t>& max,
                                std::vector<std::uint64_t>& min) -> std::optional<Failure> {
                              const Group& g = groups_[p];
                              for (const std::uint32_t rank : g.ranks) {
                                if (!owned(rank)) {
                                  continue;
                                }
                                if (rank == g.ranks.front()) {
                                  accumulate_durations(g.trace, max, min);
                                  continue;
                                }
                                auto loaded = read_guarded(rank);
                                if (!loaded) {
                                  return Failure{rank, loaded.error()};
                                }
                                if (loaded.value().nodes.size() != g.peers.size()) {
                                  return Failure{rank, changed_file(loaded.value(), g.peers.size())};
                                }
                                accumulate_durations(loaded.value(), max, min);
                              }
                              return std::nullopt;
                            });
  }

  Result<Workload> build(std::vector<std::string> warnings) {
    Workload workload;
    workload.ranks = ranks_;
    for (std::uint32_t p = 0; p < groups_.size(); ++p) {
      auto program = build_program(p);
      if (!program) {
        return program.error();
      }
      workload.programs.push_back(std::move(program.value()));
    }
    if (auto matched = check_matching(); !matched) {
      return matched.error();
    }
    std::uint64_t host = 0;
    std::uint64_t untimed = 0;
    for (const Group& g : groups_) {
      for (const Node& n : g.trace.nodes) {
        host += n.is_cpu_op ? 1 : 0;
        untimed += (!n.is_cpu_op && n.type == NodeType::kComp && !n.duration_micros && !(n.num_ops && n.tensor_size)) ? 1 : 0;
      }
    }
    if (host > 0) {
      warnings.push_back(fmt::format("{}: {} host (is_cpu_op) nodes take no device time; their dependencies pass through",
                                     options_.prefix, host));
    }
    if (untimed > 0) {
      warnings.push_back(fmt::format("{}: {} COMP_NODEs have neither duration_micros nor num_ops and tensor_size; they "
                                     "take no time",
                                     options_.prefix, untimed));
    }
    workload.warnings = std::move(warnings);
    return workload;
  }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffU;

  // --- loading together (load_workload with a communicator)
  // ----------------------------------------------------------------- Ranks [first_owned(p), first_owned(p +
  // 1)) are process p's to read.
  [[nodiscard]] std::uint32_t first_owned(std::uint32_t process) const {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(ranks_) * process / processes_);
  }
  [[nodiscard]] bool owned(std::uint32_t rank) const {
    return rank >= first_owned(process_) && rank < first_owned(process_ + 1);
  }

  std::vector<std::string> gather(std::string bytes) const {
    if (communicator_ == nullptr) {
      return {std::move(bytes)};
    }
    const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
    std::vector<std::string> out;
    for (const pdes::ByteBuffer& buffer :
         communicator_->allgather(pdes::ByteBuffer(data, data + bytes.size()))) {
      out.emplace_back(reinterpret_cast<const char*>(buffer.data()), buffer.size());
    }
    return out;
  }

  // The processes agree on the outcome of a phase: the error of the lowest failing rank, which
  // every process then returns.
  Result<bool> agree(const std::optional<Failure>& failure) const {
    WireWriter out;
    write_failure(out, failure);
    std::optional<Failure> lowest;
    for (const std::string& bytes : gather(out.take())) {
      WireReader in(bytes);
      keep_lowest(lowest, read_failure(in));
    }
    if (lowest) {
      return lowest->error;
    }
    return true;
  }

  // The per-node duration extremes of the groups `which` over every rank of them: `fill(p, max,
  // min)` gives this process's part (left at 0 and ~0 where it read none), one MIN reduction the
  // rest (the maxima as complements).
  Result<bool> reduce_durations(
      const std::vector<std::uint32_t>& which,
      const std::function<std::optional<Failure>(std::uint32_t, std::vector<std::uint64_t>&,
                                                 std::vector<std::uint64_t>&)>& fill) {
    std::optional<Failure> failure;
    std::vector<std::uint64_t> values;
    for (const std::uint32_t p : which) {
      const std::size_t nodes = groups_[p].trace.nodes.size();
      std::vector<std::uint64_t> max(nodes, 0);
      std::vector<std::uint64_t> min(nodes, ~0ULL);
      keep_lowest(failure, fill(p, max, min));  // the lowest failing rank, whatever the group order
      ORRERY_ASSERT(max.size() == nodes && min.size() == nodes, "a group's durations cover its nodes");
      for (const std::uint64_t m : max) {
        values.push_back(~m);
      }
      values.insert(values.end(), min.begin(), min.end());
    }
    if (auto agreed = agree(failure); !agreed) {
      return agreed.error();
    }
    if (communicator_ != nullptr) {
      communicator_->allreduce_min(values);
    }
    std::size_t at = 0;
    for (const std::uint32_t p : which) {
      Group& g = groups_[p];
      const std::size_t nodes = g.trace.nodes.size();
      g.max_duration.resize(nodes);
      g.min_duration.resize(nodes);
      for (std::size_t i = 0; i < nodes; ++i) {
        g.max_duration[i] = ~values[at + i];
        g.min_duration[i] = values[at + nodes + i];
      }
      at += 2 * nodes;
    }
    return true;
  }

  // A rank's trace, read; an exception (out of memory on a huge file) becomes this rank's error, as
  // any failure while processes load together must, so that every process reaches every exchange.
  Result<Trace> read_guarded(std::uint32_t rank) const {
    const std::string path = trace_file(options_.prefix, rank);
    try {
      return read_trace(path);
    } catch (const std::exception& e) {
      return Error{ErrorCode::kIo, fmt::format("{}: cannot be loaded: {}", path, e.what()), std::nullopt, {}};
    }
  }

  // A rank's trace, read and checked.
  Result<Trace> read_checked(std::uint32_t rank) const {
    auto read = read_guarded(rank);
    if (!read) {
      return read.error();
    }
    if (auto checked = check_trace(read.value(), rank, ranks_); !checked) {
      return checked.error();
    }
    return read;
  }

  static Error changed_file(const Trace& trace, std::size_t nodes) {
    return invalid(fmt::format("{}: has {} nodes now but had {} when first read (the file changed)",
                               trace.path, trace.nodes.size(), nodes));
  }

  // Node n of group g as seen in the file of the group's d-th rank: the ranks of a group share the
  // graph (node positions) but not the ids, names and byte offsets, which are the first rank's.
  [[nodiscard]] std::string describe_for_rank(const Group& g, std::uint32_t d, const Node& n) const {
    if (d == 0) {
      return describe_node(g.trace, n);
    }
    return fmt::format("{}: node {} (the graph of {}, where it is id {}, '{}')", trace_file(options_.prefix, g.ranks[d]),
                       n.index, g.trace.path, n.id, n.name);
  }

  // The ranks a collective node's group is drawn from, for group g's d-th rank: its process group,
  // the communicator group that holds the rank (ASTRA-sim's rule without pg_name), or every rank.
  Result<const std::vector<std::uint32_t>*> base_group(const Group& g, std::uint32_t d, const Node& n) const {
    const std::uint32_t rank = g.ranks[d];
    const std::string pg = n.pg_name.value_or("");
    if (!pg.empty() && comm_groups_.contains(pg)) {
      const std::vector<std::uint32_t>& members = comm_groups_.at(pg);
      if (!std::binary_search(members.begin(), members.end(), rank)) {
        return invalid(fmt::format("{}: rank {} runs a collective of process group '{}', which does not include it",
                                   describe_for_rank(g, d, n), rank, pg));
      }
      return &members;
    }
    if (!pg.empty() && pg != "0") {
      return invalid(fmt::format("{}: process group '{}' is not in the communicator-group file{}", describe_for_rank(g, d, n),
                                 pg, options_.comm_groups.empty() ? " (none given)" : " " + options_.comm_groups));
    }
    const std::vector<std::uint32_t>* members = &all_ranks_;
    if (pg.empty()) {
      for (const auto& [id, list] : comm_groups_) {  // the last group that holds the rank
        if (std::binary_search(list.begin(), list.end(), rank)) {
          members = &list;
        }
      }
    }
    return members;
  }

  // The global ranks of the group a collective node of group g's d-th rank runs on: its base
  // group, narrowed by involved_dim to the ranks that share the rank's coordinates in the
  // dimensions marked false.
  Result<std::vector<std::uint32_t>> group_for(const Group& g, std::uint32_t d, const Node& n,
                                               const std::vector<std::uint32_t>& base) const {
    const bool narrows = std::find(n.involved_dim.begin(), n.involved_dim.end(), false) != n.involved_dim.end();
    if (!narrows) {
      return base;
    }
    const auto& dims = options_.dimensions;
    if (dims.size() != n.involved_dim.size()) {
      return invalid(fmt::format("{}: involved_dim has {} entries but the network has {} dimension{}{}",
                                 describe_for_rank(g, d, n), n.involved_dim.size(), dims.size(), dims.size() == 1 ? "" : "s",
                                 dims.empty() ? " known (involved_dim needs an ASTRA-sim network)" : ""));
    }
    auto coordinate = [&](std::uint32_t r, std::size_t dim) {
      std::uint32_t stride = 1;
      for (std::size_t k = 0; k < dim; ++k) {
        stride *= dims[k];
      }
      return r / stride % dims[dim];
    };
    std::vector<std::uint32_t> narrowed;
    for (const std::uint32_t m : base) {
      bool keep = true;
      for (std::size_t k = 0; k < dims.size() && keep; ++k) {
        keep = n.involved_dim[k] || coordinate(m, k) == coordinate(g.ranks[d], k);
      }
      if (keep) {
        narrowed.push_back(m);
      }
    }
    return narrowed;
  }

  Result<Program> build_program(std::uint32_t p) {
    const Group& g = groups_[p];
    const Trace& trace = g.trace;
    auto ordered = dependency_order(trace);
    if (!ordered) {
      return ordered.error();
    }
    const std::vector<std::uint32_t>& order = ordered.value();
    const auto devices = static_cast<std::uint32_t>(g.ranks.size());

    // The source text: one line per node, in file order.
    auto source = std::make_shared<workload::SourceText>();
    source->path = trace.path;
    std::vector<std::uint32_t> line_offset(trace.nodes.size());
    for (const Node& n : trace.nodes) {
      line_offset[n.index] = static_cast<std::uint32_t>(source->text.size());
      source->text += fmt::format("{} id={} {}{}\n", node_type_name(n.type), n.id, n.name, n.is_cpu_op ? " (host)" : "");
    }
    if (source->text.size() >= 0xffffffffULL) {
      return unsupported(fmt::format("{}: too many nodes for one program", trace.path));
    }
    const auto text_size = static_cast<std::uint32_t>(source->text.size());
    workload::ProgramBuilder b(source, 0, text_size, 0);
    b.set_module_name(b.own(std::filesystem::path(options_.prefix).filename().string()));
    b.set_device_counts(devices, 1);
    b.set_form(workload::ProgramForm::kPartitioned);

    auto tensor_type = [&](std::uint64_t bytes) {
      const std::string text = fmt::format("tensor<{}xui8>", bytes);
      if (const auto found = b.types().find_text(text)) {
        return *found;
      }
      workload::TypeDescription d;
      d.kind = workload::TypeKind::kTensor;
      d.element = workload::ElementType::kUI8;
      d.dimensions = {static_cast<std::int64_t>(bytes)};
      return b.types().intern(d, b.program().string(b.own(text)));
    };
    workload::TypeDescription token_description;
    token_description.kind = workload::TypeKind::kToken;
    const workload::TypeId token = b.types().intern(token_description, "!stablehlo.token");

    // The entry function's arguments: each collective's and send's input buffer.
    std::vector<workload::TypeId> arguments;
    std::vector<std::uint32_t> argument_of(trace.nodes.size(), kNone);
    for (const std::uint32_t i : order) {
      const Node& n = trace.nodes[i];
      if (is_device_comm(n) && n.type != NodeType::kRecv) {
        argument_of[i] = static_cast<std::uint32_t>(arguments.size());
        arguments.push_back(tensor_type(*n.comm_size));
      }
    }
    const workload::FunctionId main =
        b.add_function(b.intern("main"), true, 0, arguments, {}, {}, {});
    const workload::RegionId body = b.add_region(workload::kNoId, main);
    const workload::BlockId block = b.add_block(body, 0, arguments);
    b.set_region_blocks(body, std::span<const workload::BlockId>(&block, 1));
    b.set_function_body(main, body);
    b.set_entry_function(main);

    std::vector<workload::OpId> op_of(trace.nodes.size(), workload::kNoId);
    std::vector<workload::OpId> ops;
    std::vector<NodeCost> costs;
    std::map<std::string, DeviceGroups> groups_by_key;  // pg/involved_dim -> groups
    workload::JointGroups joint_groups;
    std::int64_t next_collective_channel = 1LL << 40;  // apart from point-to-point channels

    for (const std::uint32_t i : order) {
      const Node& n = trace.nodes[i];
      std::vector<workload::ValueRef> operands;
      if (argument_of[i] != kNone) {
        operands.push_back(workload::ValueRef::block_argument(block, argument_of[i]));
      }
      for (const std::uint32_t d : n.dep_index) {
        operands.push_back(workload::ValueRef::op_result(op_of[d], 0));
      }
      const workload::StringId name = b.own(n.name.empty() ? std::string(node_type_name(n.type)) : n.name);
      NodeCost cost;
      // Result 0 is a token that carries the node's completion to the nodes that depend on it (it
      // adds no bytes to their operands); a communication node's data is result 1.
      std::vector<workload::TypeId> results{token};
      workload::OpKind kind = workload::OpKind::kCustomCall;
      workload::CollectiveAttributes c;
      c.has_channel = true;
      c.channel_type = 1;
      std::shared_ptr<const workload::RankGroups> joint;  // a joint collective's groups
      if (!is_device_comm(n)) {
        if (!n.is_cpu_op && n.type == NodeType::kComp) {
          if (g.max_duration[i] > 0) {
            cost.kind = CostKind::kDuration;
            cost.duration_ps = g.max_duration[i] * 1'000'000ULL;
          } else if (n.num_ops && n.tensor_size) {
            cost.kind = CostKind::kRoofline;
            cost.num_ops = *n.num_ops;
            cost.tensor_size = *n.tensor_size;
          }
        } else if (!n.is_cpu_op && (n.type == NodeType::kMemLoad || n.type == NodeType::kMemStore)) {
          cost.kind = CostKind::kMemory;
          cost.tensor_size = *n.tensor_size;
        }
      } else if (n.type == NodeType::kCollective) {
        const std::string key = fmt::format("{}|{}", n.pg_name.value_or(""), fmt::join(n.involved_dim, ","));
        auto found = groups_by_key.find(key);
        if (found == groups_by_key.end()) {
          auto groups = device_groups(p, n);
          if (!groups) {
            return groups.error();
          }
          found = groups_by_key.emplace(key, std::move(groups.value())).first;
        }
        const auto& groups = found->second.local;
        std::size_t width = 0;
        for (const auto& group : groups) {
          width = std::max(width, group.size());
        }
        std::size_t group_size = width;  // members, whatever their graphs
        if (found->second.joint) {
          joint = shared_groups(found->second.ranks);
          for (const auto& group : *joint) {
            group_size = std::max(group_size, group.size());
          }
        }
        std::vector<std::int64_t> dense;
        for (const auto& group : groups) {
          for (std::size_t k = 0; k < width; ++k) {
            dense.push_back(k < group.size() ? static_cast<std::int64_t>(group[k]) : -1);
          }
        }
        c.groups_form = workload::ReplicaGroupsForm::kDense;
        c.group_count = static_cast<std::uint32_t>(groups.size());
        c.group_size = static_cast<std::uint32_t>(width);
        c.groups = b.add_ints(dense);
        c.channel_id = next_collective_channel++;
        c.use_global_device_ids = true;
        const std::uint64_t size = *n.comm_size;
        const auto members = static_cast<std::uint64_t>(group_size);
        switch (*n.comm_type) {
          case CommType::kAllReduce:
            kind = workload::OpKind::kAllReduce;
            c.kind = workload::CollectiveKind::kAllReduce;
            c.reduction = workload::ReductionKind::kSum;
            results.push_back(tensor_type(size));
            break;
          case CommType::kAllGather:
            kind = workload::OpKind::kAllGather;
            c.kind = workload::CollectiveKind::kAllGather;
            c.all_gather_dim = 0;
            results.push_back(tensor_type(size * members));
            break;
          case CommType::kReduceScatter:
            kind = workload::OpKind::kReduceScatter;
            c.kind = workload::CollectiveKind::kReduceScatter;
            c.reduction = workload::ReductionKind::kSum;
            c.scatter_dimension = 0;
            results.push_back(tensor_type((size + members - 1) / members));
            break;
          case CommType::kAllToAll:
            kind = workload::OpKind::kAllToAll;
            c.kind = workload::CollectiveKind::kAllToAll;
            c.split_dimension = 0;
            c.concat_dimension = 0;
            c.split_count = static_cast<std::int64_t>(members);
            results.push_back(tensor_type(size));
            break;
          default:
            kind = workload::OpKind::kCollectiveBroadcast;
            c.kind = workload::CollectiveKind::kCollectiveBroadcast;
            results.push_back(tensor_type(size));
            break;
        }
      } else {
        auto channel = point_to_point(p, n);
        if (!channel) {
          return channel.error();
        }
        const auto& [id, pairs] = channel.value();
        c.channel_id = id;
        (n.type == NodeType::kSend ? sends_ : recvs_)[id].emplace_back(p, i);
        c.has_source_target_pairs = true;
        c.source_target_pairs = b.add_ints(pairs);
        if (n.type == NodeType::kSend) {
          kind = workload::OpKind::kSend;
          c.kind = workload::CollectiveKind::kSend;
        } else {
          kind = workload::OpKind::kRecv;
          c.kind = workload::CollectiveKind::kRecv;
          results.push_back(tensor_type(*n.comm_size));
        }
      }
      const workload::OpId op = b.add_op(kind, name, block, line_offset[i]);
      b.set_op_contents(op, operands, results, {}, {});
      if (joint != nullptr) {
        joint_groups.emplace(op, std::move(joint));
      }
      if (kind == workload::OpKind::kCustomCall) {
        workload::CustomCallAttributes call;
        call.target = b.intern(node_type_name(n.type));
        b.set_payload(op, call);
      } else {
        b.set_payload(op, c);
      }
      op_of[i] = op;
      ops.push_back(op);
      costs.push_back(cost);
    }
    const workload::OpId ret = b.add_op(workload::OpKind::kReturn, b.intern("func.return"), block, 0);
    b.set_op_contents(ret, {}, {}, {}, {});
    ops.push_back(ret);
    costs.emplace_back();
    b.set_block_ops(block, ops);

    Program program;
    program.program = b.finish();
    program.ranks = g.ranks;
    program.label = g.ranks.size() == 1 ? trace.path : fmt::format("{}.{{{}}}.et", options_.prefix, rank_list(g.ranks));
    program.costs = std::move(costs);
    program.joint_groups = std::move(joint_groups);
    // The memory footprint from the device tensors the first rank's nodes list: its file once more,
    // with them (decoding every rank's tensors would slow loading by as much again).
    auto with_tensors = read_trace(trace.path, true);
    if (!with_tensors) {
      return with_tensors.error();
    }
    if (with_tensors.value().nodes.size() != trace.nodes.size()) {
      return changed_file(with_tensors.value(), trace.nodes.size());
    }
    program.memory = memory_footprint(with_tensors.value(), order);
    return program;
  }

  // One copy of each distinct list of joint groups for every op and program that uses it.
  std::shared_ptr<const workload::RankGroups> shared_groups(const workload::RankGroups& groups) {
    auto& found = shared_groups_[groups];
    if (found == nullptr) {
      found = std::make_shared<const workload::RankGroups>(groups);
    }
    return found;
  }

  // The groups of a collective node of program p: each rank's group, which must be the same group
  // from each member's side. A group that also holds ranks of other graphs makes the collective
  // joint (system::JointGroups): the system layer matches it with theirs.
  struct DeviceGroups {
    std::vector<std::vector<std::uint32_t>> local;  // per group: its devices in this program
    std::vector<std::vector<std::uint32_t>> ranks;  // per group: all its members, global ranks
    bool joint = false;
  };
  Result<DeviceGroups> device_groups(std::uint32_t p, const Node& n) const {
    const Group& g = groups_[p];
    DeviceGroups groups;
    std::vector<std::uint32_t> group_of_device(g.ranks.size(), kNone);
    std::vector<const std::vector<std::uint32_t>*> base_of_group;  // per device group
    for (std::uint32_t d = 0; d < g.ranks.size(); ++d) {
      auto base = base_group(g, d, n);
      if (!base) {
        return base.error();
      }
      // A rank already placed by another member's view agrees with it when both views start from
      // the same base group: narrowing around any member of a group gives that group again. Only
      // a different base needs the whole view compared, so a group of N ranks costs O(N), not O(N^2).
      if (group_of_device[d] != kNone && base_of_group[group_of_device[d]] == base.value()) {
        continue;
      }
      auto members = group_for(g, d, n, *base.value());
      if (!members) {
        return members.error();
      }
      std::vector<std::uint32_t> local;
      for (const std::uint32_t m : members.value()) {
        if (group_of_[m] == p) {
          local.push_back(local_of_[m]);
        } else {
          groups.joint = true;
        }
      }
      if (group_of_device[d] != kNone) {
        if (groups.ranks[group_of_device[d]] != members.value()) {
          return invalid(fmt::format("{}: ranks {} and {} disagree on the collective's group",
                                     describe_for_rank(g, d, n),
                                     g.ranks[groups.local[group_of_device[d]].front()], g.ranks[d]));
        }
        continue;
      }
      for (const std::uint32_t l : local) {
        if (group_of_device[l] != kNone) {
          return invalid(fmt::format("{}: rank {} would be in two groups of the collective", describe_node(g.trace, n),
                                     g.ranks[l]));
        }
        group_of_device[l] = static_cast<std::uint32_t>(groups.local.size());
      }
      groups.local.push_back(std::move(local));
      groups.ranks.push_back(std::move(members.value()));
      base_of_group.push_back(base.value());
    }
    return groups;
  }

  // The channel and (source, target) device pairs of a send or recv node of program p. A channel
  // carries one tag from one program to one program, so sends and recvs match in order per
  // (source, destination, tag), as ASTRA-sim and MPI match them.
  Result<std::pair<std::int64_t, std::vector<std::int64_t>>> point_to_point(std::uint32_t p, const Node& n) {
    const Group& g = groups_[p];
    const std::vector<std::uint32_t>& peers = g.peers[n.index];
    const bool send = n.type == NodeType::kSend;
    const std::uint32_t other = group_of_[peers.front()];
    std::vector<std::int64_t> pairs;
    for (std::uint32_t d = 0; d < g.ranks.size(); ++d) {
      // split_for_point_to_point left every node one graph of its size to talk to, one for one.
      ORRERY_ASSERT(group_of_[peers[d]] == other && groups_[other].ranks.size() == g.ranks.size(),
                    "a point-to-point node talks to ranks of several graphs");
      const std::uint32_t peer = local_of_[peers[d]];
      pairs.push_back(send ? d : peer);
      pairs.push_back(send ? peer : d);
    }
    const std::uint32_t from = send ? p : other;
    const std::uint32_t to = send ? other : p;
    const auto key = std::make_tuple(n.comm_tag.value_or(0), from, to);
    const auto [it, inserted] = channels_.try_emplace(key, static_cast<std::int64_t>(channels_.size()) + 1);
    return std::make_pair(it->second, std::move(pairs));
  }

  const WorkloadOptions& options_;
  pdes::Communicator* communicator_;  // null: this process loads alone
  std::uint32_t process_;
  std::uint32_t processes_;
  std::uint32_t ranks_;
  std::vector<std::uint32_t> all_ranks_;  // 0 .. ranks_ - 1
  std::map<std::string, std::vector<std::uint32_t>> comm_groups_;
  std::vector<Group> groups_;
  std::vector<std::uint32_t> group_of_;  // per rank
  std::vector<std::uint32_t> local_of_;  // per rank: its device id in its group's program
  std::map<std::tuple<std::int64_t, std::uint32_t, std::uint32_t>, std::int64_t> channels_;
  std::map<workload::RankGroups, std::shared_ptr<const workload::RankGroups>> shared_groups_;
  // Per channel, its send (recv) nodes in program order: (group, node index).
  std::map<std::int64_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> sends_;
  std::map<std::int64_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> recvs_;

 public:
  // The simulation matches the k-th send of a channel with the k-th recv of that channel; the
  // traces say who receives from whom. Refuses a job where the two disagree (a tag reused for
  // several peers in an order the receivers do not mirror), or where counts differ.
  Result<bool> check_matching() const {
    for (const auto& [channel, sends] : sends_) {
      static const std::vector<std::pair<std::uint32_t, std::uint32_t>> kNoRecvs;
      const auto found = recvs_.find(channel);
      const auto& recvs = found != recvs_.end() ? found->second : kNoRecvs;
      const Group& from = groups_[sends.front().first];
      const Node& first = from.trace.nodes[sends.front().second];
      if (recvs.size() != sends.size()) {
        return invalid(fmt::format("{}: ranks {} send {} messages of tag {} to ranks that post {} matching recvs",
                                   describe_node(from.trace, first), rank_list(from.ranks), sends.size(),
                                   first.comm_tag.value_or(0), recvs.size()));
      }
      for (std::size_t k = 0; k < sends.size(); ++k) {
        const Node& send = from.trace.nodes[sends[k].second];
        const Group& to = groups_[recvs[k].first];
        const Node& recv = to.trace.nodes[recvs[k].second];
        for (std::uint32_t d = 0; d < from.ranks.size(); ++d) {
          const std::uint32_t target = from.peers[send.index][d];
          const std::uint32_t expected = to.peers[recv.index][local_of_[target]];
          if (expected != from.ranks[d]) {
            return invalid(fmt::format(
                "{}: rank {}'s send number {} of tag {} goes to rank {}, whose recv number {} of that tag ({}) expects "
                "rank {}; Orrery matches the sends and recvs of one tag in order: give these messages distinct tags",
                describe_for_rank(from, d, send), from.ranks[d], k + 1, send.comm_tag.value_or(0), target, k + 1,
                describe_for_rank(to, local_of_[target], recv), expected));
          }
          if (send.comm_size != recv.comm_size) {
            return invalid(fmt::format("{}: rank {} sends {} bytes to rank {}, whose matching recv ({}) takes {}",
                                       describe_for_rank(from, d, send), from.ranks[d], *send.comm_size, target,
                                       describe_for_rank(to, local_of_[target], recv), *recv.comm_size));
          }
        }
      }
    }
    for (const auto& [channel, recvs] : recvs_) {
      if (!sends_.contains(channel)) {
        const Group& to = groups_[recvs.front().first];
        const Node& recv = to.trace.nodes[recvs.front().second];
        return invalid(fmt::format("{}: ranks {} wait for {} messages of tag {} that no rank sends",
                                   describe_node(to.trace, recv), rank_list(to.ranks), recvs.size(),
                                   recv.comm_tag.value_or(0)));
      }
    }
    return true;
  }
};

}  // namespace

Result<Workload> load_workload(const WorkloadOptions& options, pdes::Communicator* communicator) {
  std::uint32_t ranks = options.ranks;
  if (ranks == 0) {
    while (std::filesystem::exists(trace_file(options.prefix, ranks))) {
      ++ranks;
    }
    if (communicator != nullptr) {
      // Every process counted the files itself: they must agree (a file still being written, or a
      // stale network file system, could show some of them another count).
      std::array<std::uint64_t, 2> counts{ranks, ~static_cast<std::uint64_t>(ranks)};
      communicator->allreduce_min(counts);
      if (counts[0] != ~counts[1]) {
        return Error{ErrorCode::kIo,
                     fmt::format("{}: the processes found different numbers of trace files ({} to {}); give "
                                 "workload.chakra.ranks",
                                 options.prefix, counts[0], ~counts[1]),
                     std::nullopt,
                     {}};
      }
    }
    if (ranks == 0) {
      return Error{ErrorCode::kIo,
                   fmt::format("{}: no Chakra trace (the first rank's file would be {})", options.prefix,
                               trace_file(options.prefix, 0)),
                   std::nullopt,
                   {}};
    }
  }
  Builder builder(options, communicator, ranks);
  if (auto loaded = builder.load_comm_groups(); !loaded) {
    return loaded.error();
  }
  std::vector<std::string> warnings;
  if (auto read = builder.read_ranks(warnings); !read) {
    return read.error();
  }
  return builder.build(std::move(warnings));
}

}  // namespace orrery::frontend::chakra
