// Writing Chakra execution traces: one rank's nodes as `<prefix>.<rank>.et` (a GlobalMetadata
// message, then each Node, each preceded by its length as a base-128 varint: the framing
// read_trace() and ASTRA-sim's feeder read), and the communicator groups its collectives name as
// ASTRA-sim's --comm-group-configuration JSON.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/chakra/trace.h"
#include "util/result.h"

namespace orrery::frontend::chakra {

// Writes `trace.nodes` to `path` with their id, name, type, data_deps, duration_micros and the
// attributes that are set (is_cpu_op when true, comm_type, comm_size, comm_src, comm_dst, comm_tag,
// pg_name, involved_dim, num_ops, tensor_size). Errors: kIo naming the path.
Result<bool> write_trace(const std::string& path, const Trace& trace);

// {"group id": [ranks]} for ASTRA-sim's --comm-group-configuration and workload.chakra.comm_groups.
Result<bool> write_comm_groups(const std::string& path, const std::map<std::string, std::vector<std::uint32_t>>& groups);

// `<prefix>.<rank>.et`
std::string trace_file(const std::string& prefix, std::uint32_t rank);

}  // namespace orrery::frontend::chakra
