// Typed attributes of the ops that cost models and the system layer read: dot and convolution
// dimension numbers, reduction dimensions and windows, gather/scatter dimension numbers, sort,
// custom calls, comparisons, collectives, while loops and calls. Each is stored once in a table of
// the Program and named by Op::payload. Integer lists live in the Program's integer pool and are
// read through Program::ints(IntRange). Defaults are filled in (strides 1, padding 0, dilation 1)
// so that readers never apply StableHLO's defaults themselves.
#pragma once

#include <cstdint>

#include "workload/op_kind.h"

namespace orrery::workload {

using StringId = std::uint32_t;
using FunctionId = std::uint32_t;
inline constexpr std::uint32_t kNoId = UINT32_MAX;

// A run of integers in Program::ints().
struct IntRange {
  std::uint32_t begin = 0;
  std::uint32_t count = 0;
};

// dot_general (and dot, lowered to the same numbers: lhs contracting = its last dimension, rhs
// contracting = its first).
struct DotDimensions {
  IntRange lhs_batching;
  IntRange rhs_batching;
  IntRange lhs_contracting;
  IntRange rhs_contracting;
};

// convolution: dimension numbers as explicit index maps (kernel layouts vary: [0,1,i,o],
// [0,1,o,i], [f,0,1,b]...), window and group counts. Spatial lists are in spatial-dimension order;
// padding holds (low, high) per spatial dimension; window_reversal holds 0 or 1 per dimension.
struct ConvolutionDimensions {
  std::int64_t input_batch = 0;
  std::int64_t input_feature = 0;
  IntRange input_spatial;
  std::int64_t kernel_input_feature = 0;
  std::int64_t kernel_output_feature = 0;
  IntRange kernel_spatial;
  std::int64_t output_batch = 0;
  std::int64_t output_feature = 0;
  IntRange output_spatial;
  IntRange window_strides;
  IntRange padding;
  IntRange lhs_dilation;
  IntRange rhs_dilation;
  IntRange window_reversal;
  std::int64_t feature_group_count = 1;
  std::int64_t batch_group_count = 1;
};

// reduce: the reduced dimensions and the reduction (the kind of the body's single op, kAdd for a
// sum; kUnknown when the body is more than one op).
struct ReduceDimensions {
  IntRange dimensions;
  OpKind body = OpKind::kUnknown;
};

// reduce_window and select_and_scatter: one entry per operand dimension; padding holds (low, high)
// pairs. body is the reduction (for select_and_scatter, the scatter region's op).
struct WindowDimensions {
  IntRange window_dimensions;
  IntRange window_strides;
  IntRange base_dilations;
  IntRange window_dilations;
  IntRange padding;
  OpKind body = OpKind::kUnknown;
};

// gather and dynamic_gather (slice_sizes empty for dynamic_gather: they are an operand).
struct GatherDimensions {
  IntRange offset_dims;
  IntRange collapsed_slice_dims;
  IntRange operand_batching_dims;
  IntRange start_indices_batching_dims;
  IntRange start_index_map;
  std::int64_t index_vector_dim = 0;
  IntRange slice_sizes;
  bool indices_are_sorted = false;
};

struct ScatterDimensions {
  IntRange update_window_dims;
  IntRange inserted_window_dims;
  IntRange input_batching_dims;
  IntRange scatter_indices_batching_dims;
  IntRange scatter_dims_to_operand_dims;
  std::int64_t index_vector_dim = 0;
  bool indices_are_sorted = false;
  bool unique_indices = false;
  OpKind body = OpKind::kUnknown;
};

struct SortAttributes {
  std::int64_t dimension = -1;
  bool is_stable = false;
};

struct CustomCallAttributes {
  StringId target = kNoId;  // call_target_name
  std::int64_t api_version = 0;
  bool has_side_effect = false;
};

enum class ComparisonDirection : std::uint8_t { kEq, kNe, kGe, kGt, kLe, kLt };
enum class ComparisonType : std::uint8_t { kNotSet, kFloat, kTotalOrder, kSigned, kUnsigned };

struct CompareAttributes {
  ComparisonDirection direction = ComparisonDirection::kEq;
  ComparisonType type = ComparisonType::kNotSet;
};

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute,
  kCollectiveBroadcast,
  kCollectiveReduce,
  kSend,
  kRecv,
};

// The reduction of all_reduce, reduce_scatter and collective_reduce, from their body op.
enum class ReductionKind : std::uint8_t { kNone, kSum, kProduct, kMax, kMin, kAnd, kOr, kXor, kOther };

enum class ReplicaGroupsForm : std::uint8_t {
  kAbsent,    // no replica_groups attribute (collective_permute, send, recv)
  kDense,     // dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>; -1 entries pad uneven groups
  kMeshAxes,  // #stablehlo.replica_group_mesh_axes<mesh = @m, axes = [...]>
};

struct CollectiveAttributes {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  ReductionKind reduction = ReductionKind::kNone;
  bool has_channel = false;
  bool use_global_device_ids = false;
  bool is_host_transfer = false;
  std::int64_t channel_id = 0;    // channel_handle.handle
  std::int64_t channel_type = 0;  // channel_handle.type (0 invalid, 1 device-to-device, 2/3 host)
  std::int64_t all_gather_dim = -1;
  std::int64_t scatter_dimension = -1;
  std::int64_t split_dimension = -1;
  std::int64_t concat_dimension = -1;
  std::int64_t split_count = -1;
  ReplicaGroupsForm groups_form = ReplicaGroupsForm::kAbsent;
  std::uint32_t group_count = 0;    // kDense: rows of the matrix
  std::uint32_t group_size = 0;     // kDense: columns
  IntRange groups;                  // kDense: row-major ids; kMeshAxes: the axes (see below)
  StringId mesh = kNoId;            // kMeshAxes: the mesh symbol
  bool mesh_axes_by_index = false;  // kMeshAxes: groups holds axis indices, not axis-name StringIds
  bool has_source_target_pairs = false;
  IntRange source_target_pairs;  // (source, target) pairs, flattened
  // XLA's `_xla_send_recv_source_target_pairs` frontend attribute on send/recv, flattened pairs.
  bool has_send_recv_pairs = false;
  IntRange send_recv_pairs;
};

// How a while loop's trip count is known.
enum class TripCountSource : std::uint8_t {
  kDerived,   // from the loop's own pattern (constant init, compare against a constant, constant step)
  kOverride,  // from --trip-count / workload.programs[].loop_trip_counts
  kUnknown,   // not derivable and not overridden; reason says why
};

struct WhileAttributes {
  TripCountSource source = TripCountSource::kUnknown;
  std::uint64_t trip_count = 0;
  StringId name = kNoId;    // the printable loop name used for overrides, e.g. "main/%3"
  StringId reason = kNoId;  // kUnknown: why the count could not be derived
};

// func.call and composite: the called function (kNoId when it is not defined in the module).
struct CallAttributes {
  FunctionId callee = kNoId;
};

}  // namespace orrery::workload
