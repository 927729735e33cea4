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

// Writes `trace.nodes` to `path` with their id, name, type, data_deps, duration_micros, is_cpu_op
// and the attributes that are set, each in the width ASTRA-sim reads (../shared/reference/
// chakra-et.md): comm_type, comm_size and num_ops int64, comm_src, comm_dst and comm_tag int32,
// tensor_size uint64, pg_name string, involved_dim bool list. Errors: kIo naming the path;
// kInvalidInput for a comm_tag outside int32.
Result<bool> write_trace(const std::string& path, const Trace& trace);

// {"group id": [ranks]} for ASTRA-sim's --comm-group-configuration and workload.chakra.comm_groups.
Result<bool> write_comm_groups(const std::string& path,
                               const std::map<std::string, std::vector<std::uint32_t>>& groups);

}  // namespace orrery::frontend::chakra
