#include "frontend/chakra/trace.h"

#include <fmt/format.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <array>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

#include "et_def.pb.h"

namespace orrery::frontend::chakra {
namespace {

namespace pb = ::ChakraProtoMsg;

Error invalid(std::string message) { return Error{ErrorCode::kInvalidInput, std::move(message), std::nullopt, {}}; }

// Reads the whole file; a gzip file (magic 1f 8b) is inflated.
Result<std::string> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{ErrorCode::kIo, fmt::format("{}: cannot read the Chakra trace", path), std::nullopt, {}};
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = std::move(buffer).str();
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f || static_cast<unsigned char>(bytes[1]) != 0x8b) {
    return bytes;
  }
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::GzipInputStream gzip(&raw, google::protobuf::io::GzipInputStream::GZIP);
  std::string inflated;
  const void* data = nullptr;
  int size = 0;
  while (gzip.Next(&data, &size)) {
    inflated.append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  }
  if (gzip.ZlibErrorCode() < 0) {
    return invalid(fmt::format("{}: corrupt gzip data ({})", path,
                               gzip.ZlibErrorMessage() != nullptr ? gzip.ZlibErrorMessage() : "zlib error"));
  }
  return inflated;
}

// A base-128 varint at `pos`; nullopt when it runs off the end or past 64 bits.
std::optional<std::uint64_t> read_varint(const std::string& bytes, std::size_t& pos) {
  std::uint64_t value = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (pos >= bytes.size()) {
      return std::nullopt;
    }
    const auto byte = static_cast<unsigned char>(bytes[pos++]);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      return value;
    }
  }
  return std::nullopt;
}

// An attribute as an integer of any protobuf integer kind (or bool).
std::optional<std::int64_t> integer_value(const pb::AttributeProto& a) {
  using V = pb::AttributeProto::ValueCase;
  switch (a.value_case()) {
    case V::kInt32Val: return a.int32_val();
    case V::kInt64Val: return a.int64_val();
    case V::kUint32Val: return a.uint32_val();
    case V::kUint64Val:
      if (a.uint64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(a.uint64_val());
    case V::kSint32Val: return a.sint32_val();
    case V::kSint64Val: return a.sint64_val();
    case V::kFixed32Val: return a.fixed32_val();
    case V::kFixed64Val:
      if (a.fixed64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<std::int64_t>(a.fixed64_val());
    case V::kSfixed32Val: return a.sfixed32_val();
    case V::kSfixed64Val: return a.sfixed64_val();
    case V::kBoolVal: return a.bool_val() ? 1 : 0;
    default: return std::nullopt;
  }
}

}  // namespace

const char* node_type_name(NodeType type) {
  switch (type) {
    case NodeType::kInvalid: return "INVALID_NODE";
    case NodeType::kMetadata: return "METADATA_NODE";
    case NodeType::kMemLoad: return "MEM_LOAD_NODE";
    case NodeType::kMemStore: return "MEM_STORE_NODE";
    case NodeType::kComp: return "COMP_NODE";
    case NodeType::kSend: return "COMM_SEND_NODE";
    case NodeType::kRecv: return "COMM_RECV_NODE";
    case NodeType::kCollective: return "COMM_COLL_NODE";
  }
  return "?";
}

const char* comm_type_name(CommType type) {
  switch (type) {
    case CommType::kAllReduce: return "ALL_REDUCE";
    case CommType::kReduce: return "REDUCE";
    case CommType::kAllGather: return "ALL_GATHER";
    case CommType::kGather: return "GATHER";
    case CommType::kScatter: return "SCATTER";
    case CommType::kBroadcast: return "BROADCAST";
    case CommType::kAllToAll: return "ALL_TO_ALL";
    case CommType::kReduceScatter: return "REDUCE_SCATTER";
    case CommType::kReduceScatterBlock: return "REDUCE_SCATTER_BLOCK";
    case CommType::kBarrier: return "BARRIER";
  }
  return "?";
}

std::string trace_file(const std::string& prefix, std::uint32_t rank) { return fmt::format("{}.{}.et", prefix, rank); }

std::string describe_node(const Trace& trace, const Node& node) {
  return fmt::format("{}: node {} (id {}, '{}') at byte {}", trace.path, node.index, node.id, node.name, node.offset);
}

std::vector<TensorRef> device_tensors(std::string_view values) {
  // Every '[' that opens five integers and a quoted device name is a tensor; nesting needs no
  // tracking, since a tensor's list holds no list.
  std::vector<TensorRef> out;
  for (std::size_t open = values.find('['); open != std::string_view::npos;
       open = values.find('[', open + 1)) {
    std::size_t at = open + 1;
    std::array<std::uint64_t, 5> number{};
    bool ok = true;
    for (std::size_t k = 0; k < number.size() && ok; ++k) {
      while (at < values.size() && values[at] == ' ') {
        ++at;
      }
      const auto [end, error] = std::from_chars(values.data() + at, values.data() + values.size(), number[k]);
      ok = error == std::errc{} && end != values.data() + at;
      at = static_cast<std::size_t>(end - values.data());
      while (ok && at < values.size() && values[at] == ' ') {
        ++at;
      }
      ok = ok && at < values.size() && values[at] == ',';
      ++at;
    }
    while (ok && at < values.size() && values[at] == ' ') {
      ++at;
    }
    if (!ok || at >= values.size() || (values[at] != '\'' && values[at] != '"')) {
      continue;
    }
    if (values.substr(at + 1).starts_with("cuda")) {
      const std::uint64_t elements = number[2] + number[3];
      if (number[4] != 0 && elements <= std::numeric_limits<std::uint64_t>::max() / number[4]) {
        out.push_back(TensorRef{number[1], elements * number[4]});
      }
    }
  }
  return out;
}

Result<Trace> read_trace(const std::string& path, bool tensors) {
  auto read = read_bytes(path);
  if (!read) {
    return read.error();
  }
  const std::string& bytes = read.value();
  Trace trace;
  trace.path = path;
  std::size_t pos = 0;
  bool metadata = true;
  pb::Node message;  // reused: Clear() keeps its buffers, so decoding a node seldom allocates
  while (pos < bytes.size()) {
    const std::size_t start = pos;
    const auto index = static_cast<std::uint32_t>(trace.nodes.size());
    const auto what = [&] { return metadata ? std::string("the global metadata") : fmt::format("node {}", index); };
    const std::optional<std::uint64_t> length = read_varint(bytes, pos);
    if (!length) {
      return invalid(fmt::format("{}: byte {}: truncated length prefix of {}", path, start, what()));
    }
    if (*length > bytes.size() - pos) {
      return invalid(fmt::format("{}: byte {}: {} is {} bytes long but only {} bytes remain (truncated file?)", path,
                                 start, what(), *length, bytes.size() - pos));
    }
    if (*length > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      return invalid(fmt::format("{}: byte {}: {} claims {} bytes, more than a protobuf message can hold", path, start,
                                 what(), *length));
    }
    const char* data = bytes.data() + pos;
    const int size = static_cast<int>(*length);
    pos += *length;
    if (metadata) {
      pb::GlobalMetadata header;
      if (!header.ParseFromArray(data, size)) {
        return invalid(fmt::format("{}: byte {}: the global metadata is not a Chakra GlobalMetadata message", path, start));
      }
      trace.version = header.version();
      for (const pb::AttributeProto& a : header.attr()) {
        if (a.name() == "schema" && a.value_case() == pb::AttributeProto::kStringVal) {
          trace.version = a.string_val();
        }
      }
      metadata = false;
      continue;
    }
    message.Clear();
    if (!message.ParseFromArray(data, size)) {
      return invalid(fmt::format("{}: byte {}: node {} is not a Chakra Node message", path, start, index));
    }
    Node node;
    node.id = message.id();
    node.name = message.name();
    node.index = index;
    node.offset = start;
    const int type = static_cast<int>(message.type());
    if (type < 0 || type > static_cast<int>(NodeType::kCollective)) {
      return invalid(fmt::format("{}: unknown node type {}", describe_node(trace, node), type));
    }
    node.type = static_cast<NodeType>(type);
    node.data_deps.assign(message.data_deps().begin(), message.data_deps().end());
    node.ctrl_deps = static_cast<std::uint32_t>(message.ctrl_deps_size());
    if (tensors) {
      node.reads = device_tensors(message.inputs().values());
      node.writes = device_tensors(message.outputs().values());
    }
    if (message.duration_micros() != 0) {
      node.duration_micros = message.duration_micros();
    }
    for (const pb::AttributeProto& a : message.attr()) {
      const std::string& name = a.name();
      auto integer = [&](std::int64_t low, std::int64_t high) -> Result<std::int64_t> {
        const std::optional<std::int64_t> value = integer_value(a);
        if (!value) {
          return invalid(fmt::format("{}: attribute {} must be an integer", describe_node(trace, node), name));
        }
        if (*value < low || *value > high) {
          return invalid(fmt::format("{}: attribute {} = {} is out of range [{}, {}]", describe_node(trace, node),
                                     name, *value, low, high));
        }
        return *value;
      };
      constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
      constexpr std::int64_t kRankMax = std::numeric_limits<std::int32_t>::max();
      if (name == "is_cpu_op") {
        auto v = integer(0, kMax);
        if (!v) {
          return v.error();
        }
        node.is_cpu_op = v.value() != 0;
      } else if (name == "comm_type") {
        auto v = integer(0, static_cast<std::int64_t>(CommType::kBarrier));
        if (!v) {
          return v.error();
        }
        node.comm_type = static_cast<CommType>(v.value());
      } else if (name == "comm_size") {
        auto v = integer(0, kMax);
        if (!v) {
          return v.error();
        }
        node.comm_size = static_cast<std::uint64_t>(v.value());
      } else if (name == "comm_src" || name == "comm_dst") {
        auto v = integer(0, kRankMax);
        if (!v) {
          return v.error();
        }
        (name == "comm_src" ? node.comm_src : node.comm_dst) = static_cast<std::uint32_t>(v.value());
      } else if (name == "comm_tag") {
        auto v = integer(std::numeric_limits<std::int64_t>::min(), kMax);
        if (!v) {
          return v.error();
        }
        node.comm_tag = v.value();
      } else if (name == "num_ops" || name == "tensor_size") {
        auto v = integer(0, kMax);
        if (!v) {
          return v.error();
        }
        (name == "num_ops" ? node.num_ops : node.tensor_size) = static_cast<std::uint64_t>(v.value());
      } else if (name == "pg_name") {
        if (a.value_case() == pb::AttributeProto::kStringVal) {
          node.pg_name = a.string_val();
        } else if (const auto v = integer_value(a)) {
          node.pg_name = std::to_string(*v);
        } else {
          return invalid(fmt::format("{}: attribute pg_name must be a string", describe_node(trace, node)));
        }
      } else if (name == "involved_dim") {
        if (a.value_case() != pb::AttributeProto::kBoolList) {
          return invalid(fmt::format("{}: attribute involved_dim must be a bool list", describe_node(trace, node)));
        }
        node.involved_dim.assign(a.bool_list().values().begin(), a.bool_list().values().end());
      }
    }
    trace.nodes.push_back(std::move(node));
  }
  if (metadata) {
    return invalid(fmt::format("{}: empty file: a Chakra trace starts with its global metadata", path));
  }
  return trace;
}

}  // namespace orrery::frontend::chakra
