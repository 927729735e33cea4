#include "frontend/chakra/writer.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "et_def.pb.h"
#include "util/file.h"

namespace orrery::frontend::chakra {
namespace {

namespace pb = ::ChakraProtoMsg;

void append_framed(std::string& out, const google::protobuf::MessageLite& message) {
  const std::string body = message.SerializeAsString();
  std::uint64_t length = body.size();
  do {
    auto byte = static_cast<unsigned char>(length & 0x7fU);
    length >>= 7U;
    if (length != 0) {
      byte |= 0x80U;
    }
    out += static_cast<char>(byte);
  } while (length != 0);
  out += body;
}

pb::AttributeProto& attribute(pb::Node& node, const char* name) {
  pb::AttributeProto& a = *node.add_attr();
  a.set_name(name);
  return a;
}

Error invalid(std::string message) {
  return Error{ErrorCode::kInvalidInput, std::move(message), std::nullopt, {}};
}

}  // namespace

Result<bool> write_trace(const std::string& path, const Trace& trace) {
  std::string bytes;
  pb::GlobalMetadata metadata;
  metadata.set_version(trace.version.empty() ? "0.0.4" : trace.version);
  append_framed(bytes, metadata);
  pb::Node message;
  for (const Node& n : trace.nodes) {
    message.Clear();
    message.set_id(n.id);
    message.set_name(n.name);
    message.set_type(static_cast<pb::NodeType>(n.type));
    for (const std::uint64_t d : n.data_deps) {
      message.add_data_deps(d);
    }
    if (n.duration_micros) {
      message.set_duration_micros(*n.duration_micros);
    }
    attribute(message, "is_cpu_op").set_bool_val(n.is_cpu_op);
    if (n.comm_type) {
      attribute(message, "comm_type").set_int64_val(static_cast<std::int64_t>(*n.comm_type));
    }
    if (n.comm_size) {
      attribute(message, "comm_size").set_int64_val(static_cast<std::int64_t>(*n.comm_size));
    }
    if (n.comm_src) {
      attribute(message, "comm_src").set_int32_val(static_cast<std::int32_t>(*n.comm_src));
    }
    if (n.comm_dst) {
      attribute(message, "comm_dst").set_int32_val(static_cast<std::int32_t>(*n.comm_dst));
    }
    if (n.comm_tag) {
      if (*n.comm_tag < std::numeric_limits<std::int32_t>::min() ||
          *n.comm_tag > std::numeric_limits<std::int32_t>::max()) {
        return invalid(fmt::format("{}: node {} ('{}'): comm_tag {} does not fit the int32 ASTRA-sim reads",
                                   path, n.id, n.name, *n.comm_tag));
      }
      attribute(message, "comm_tag").set_int32_val(static_cast<std::int32_t>(*n.comm_tag));
    }
    if (n.pg_name) {
      attribute(message, "pg_name").set_string_val(*n.pg_name);
    }
    if (!n.involved_dim.empty()) {
      auto* list = attribute(message, "involved_dim").mutable_bool_list();
      for (const bool b : n.involved_dim) {
        list->add_values(b);
      }
    }
    if (n.num_ops) {
      attribute(message, "num_ops").set_int64_val(static_cast<std::int64_t>(*n.num_ops));
    }
    if (n.tensor_size) {
      attribute(message, "tensor_size").set_uint64_val(*n.tensor_size);
    }
    append_framed(bytes, message);
  }
  return write_file(path, bytes);
}

Result<bool> write_comm_groups(const std::string& path,
                               const std::map<std::string, std::vector<std::uint32_t>>& groups) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [id, ranks] : groups) {
    json[id] = ranks;
  }
  return write_file(path, json.dump(2) + "\n");
}

}  // namespace orrery::frontend::chakra
