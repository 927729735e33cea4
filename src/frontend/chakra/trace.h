// Chakra execution traces (MLCommons Chakra; ../shared/reference/chakra-et.md): one file per rank,
// `<prefix>.<rank>.et`, holding a GlobalMetadata message and then Node messages, each preceded by
// its length as a base-128 varint; gzip-compressed files are read too.
//
// read_trace() decodes one rank's file into plain records with the attributes Orrery (and
// ASTRA-sim) reads already typed. Producers disagree on integer widths (STAGE writes is_cpu_op as
// int32, ASTRA-sim's tools comm_size as int64), so every integer kind is accepted; a negative
// size, a string where a number belongs, a truncated message or a varint that runs off the end is
// an error naming the file, the node's position and byte offset, and the attribute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace orrery::frontend::chakra {

enum class NodeType : std::uint8_t {
  kInvalid = 0,
  kMetadata = 1,
  kMemLoad = 2,
  kMemStore = 3,
  kComp = 4,
  kSend = 5,
  kRecv = 6,
  kCollective = 7,
};
const char* node_type_name(NodeType type);  // "COMP_NODE", ...

// Chakra's CollectiveCommType values.
enum class CommType : std::uint8_t {
  kAllReduce = 0,
  kReduce = 1,
  kAllGather = 2,
  kGather = 3,
  kScatter = 4,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
  kReduceScatterBlock = 8,
  kBarrier = 9,
};
const char* comm_type_name(CommType type);  // "ALL_REDUCE", ...

// A device tensor a node reads or writes. Traces converted from PyTorch list each tensor in the
// node's inputs / outputs values as [tensor id, storage id, offset, elements, element bytes,
// device]; a tensor on a "cuda" device becomes its storage and the bytes it reaches into it,
// (offset + elements) x element bytes.
struct TensorRef {
  std::uint64_t storage = 0;
  std::uint64_t extent = 0;
};

// The device tensors in an inputs or outputs values string (anything else in it is skipped).
std::vector<TensorRef> device_tensors(std::string_view values);

struct Node {
  std::uint64_t id = 0;
  std::string name;
  NodeType type = NodeType::kInvalid;
  std::vector<std::uint64_t> data_deps;
  std::vector<std::uint32_t> dep_index;  // the data dependencies as node positions, sorted, unique (filled by load_workload)
  std::uint32_t ctrl_deps = 0;  // how many (ASTRA-sim's feeder ignores them; so does Orrery)
  std::optional<std::uint64_t> duration_micros;
  std::uint64_t offset = 0;     // byte offset of the node's length prefix in the (decompressed) file
  std::uint32_t index = 0;      // position among the file's nodes, from 0
  // Attributes.
  bool is_cpu_op = false;
  std::optional<CommType> comm_type;
  std::optional<std::uint64_t> comm_size;
  std::optional<std::uint32_t> comm_src;
  std::optional<std::uint32_t> comm_dst;
  std::optional<std::int64_t> comm_tag;
  std::optional<std::string> pg_name;
  std::vector<bool> involved_dim;
  std::optional<std::uint64_t> num_ops;
  std::optional<std::uint64_t> tensor_size;
  // Device tensors (read_trace with tensors: true; empty otherwise).
  std::vector<TensorRef> reads;
  std::vector<TensorRef> writes;
};

struct Trace {
  std::string path;
  std::string version;  // GlobalMetadata.version, or its "schema" attribute
  std::vector<Node> nodes;
};

// A rank's file: `<prefix>.<rank>.et`.
std::string trace_file(const std::string& prefix, std::uint32_t rank);

// Reads one rank's trace; with `tensors`, also each node's device tensors (Node::reads, writes).
// Errors: kIo (cannot read), kInvalidInput (malformed or inconsistent).
Result<Trace> read_trace(const std::string& path, bool tensors = false);

// "file: node 12 (id 40, 'name') at byte 1234" for messages.
std::string describe_node(const Trace& trace, const Node& node);

}  // namespace orrery::frontend::chakra
