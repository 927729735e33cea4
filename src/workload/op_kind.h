// The one table of op kinds (STYLE.md, rule 6). An OpKind names what an op does, independent of
// the dialect that spelled it: stablehlo.add, mhlo.add and chlo.broadcast_add are all kAdd; the op
// keeps its full name beside the kind. Ops of dialects Orrery does not model are kOpaque.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace orrery::workload {

// What a cost model needs to know first about an op.
enum class OpCategory : std::uint8_t {
  kElementwise,    // one output element from the same element of each operand
  kDataMovement,   // reshape, transpose, slice, concatenate, pad, gather, scatter, copy, sort...
  kContraction,    // dot, dot_general, convolution, einsum
  kLinearAlgebra,  // cholesky, triangular_solve, fft
  kReduction,      // reduce, reduce_window, select_and_scatter, map, batch norms, top_k
  kRandom,         // rng, rng_bit_generator
  kCollective,     // all_reduce, all_gather, ..., send, recv
  kHostTransfer,   // infeed, outfeed
  kControlFlow,    // while, if, case, call, return, async, composite, fusion, manual regions
  kConstant,       // constant, iota
  kCustomCall,     // custom_call: costed by its target name
  kSharding,       // sharding annotations that vanish after partitioning (sdy.*, none of XLA's)
  kMetadata,       // free at run time: tuples, tokens, ids, optimization_barrier, shape queries
  kStructure,      // module, func.func
  kOpaque,         // an op of a dialect Orrery does not model
  kUnknown,        // an unknown op of a modelled dialect let through by --lenient
};

// X(kind, base name, category, operands): operands is the fixed operand count, or -1 when variadic.
// The dialects that spell each kind are listed in op_kind.cpp.
#define ORRERY_OP_KINDS(X)                                                \
  X(kAbs, "abs", kElementwise, 1)                                         \
  X(kAcos, "acos", kElementwise, 1)                                       \
  X(kAcosh, "acosh", kElementwise, 1)                                     \
  X(kAdd, "add", kElementwise, 2)                                         \
  X(kAnd, "and", kElementwise, 2)                                         \
  X(kAsin, "asin", kElementwise, 1)                                       \
  X(kAsinh, "asinh", kElementwise, 1)                                     \
  X(kAtan, "atan", kElementwise, 1)                                       \
  X(kAtan2, "atan2", kElementwise, 2)                                     \
  X(kAtanh, "atanh", kElementwise, 1)                                     \
  X(kBesselI1e, "bessel_i1e", kElementwise, 1)                            \
  X(kBitcastConvert, "bitcast_convert", kElementwise, 1)                  \
  X(kCbrt, "cbrt", kElementwise, 1)                                       \
  X(kCeil, "ceil", kElementwise, 1)                                       \
  X(kClamp, "clamp", kElementwise, 3)                                     \
  X(kCompare, "compare", kElementwise, 2)                                 \
  X(kComplex, "complex", kElementwise, 2)                                 \
  X(kConj, "conj", kElementwise, 1)                                       \
  X(kConvert, "convert", kElementwise, 1)                                 \
  X(kCosh, "cosh", kElementwise, 1)                                       \
  X(kCosine, "cosine", kElementwise, 1)                                   \
  X(kCountLeadingZeros, "count_leading_zeros", kElementwise, 1)           \
  X(kDigamma, "digamma", kElementwise, 1)                                 \
  X(kDivide, "divide", kElementwise, 2)                                   \
  X(kErf, "erf", kElementwise, 1)                                         \
  X(kErfInv, "erf_inv", kElementwise, 1)                                  \
  X(kErfc, "erfc", kElementwise, 1)                                       \
  X(kExponential, "exponential", kElementwise, 1)                         \
  X(kExponentialMinusOne, "exponential_minus_one", kElementwise, 1)       \
  X(kFloor, "floor", kElementwise, 1)                                     \
  X(kImag, "imag", kElementwise, 1)                                       \
  X(kIsFinite, "is_finite", kElementwise, 1)                              \
  X(kIsInf, "is_inf", kElementwise, 1)                                    \
  X(kIsNegInf, "is_neg_inf", kElementwise, 1)                             \
  X(kIsPosInf, "is_pos_inf", kElementwise, 1)                             \
  X(kLgamma, "lgamma", kElementwise, 1)                                   \
  X(kLog, "log", kElementwise, 1)                                         \
  X(kLogPlusOne, "log_plus_one", kElementwise, 1)                         \
  X(kLogistic, "logistic", kElementwise, 1)                               \
  X(kMaximum, "maximum", kElementwise, 2)                                 \
  X(kMinimum, "minimum", kElementwise, 2)                                 \
  X(kMultiply, "multiply", kElementwise, 2)                               \
  X(kNegate, "negate", kElementwise, 1)                                   \
  X(kNextAfter, "next_after", kElementwise, 2)                            \
  X(kNot, "not", kElementwise, 1)                                         \
  X(kOr, "or", kElementwise, 2)                                           \
  X(kPolygamma, "polygamma", kElementwise, 2)                             \
  X(kPopcnt, "popcnt", kElementwise, 1)                                   \
  X(kPower, "power", kElementwise, 2)                                     \
  X(kReal, "real", kElementwise, 1)                                       \
  X(kReducePrecision, "reduce_precision", kElementwise, 1)                \
  X(kRemainder, "remainder", kElementwise, 2)                             \
  X(kRoundNearestAfz, "round_nearest_afz", kElementwise, 1)               \
  X(kRoundNearestEven, "round_nearest_even", kElementwise, 1)             \
  X(kRsqrt, "rsqrt", kElementwise, 1)                                     \
  X(kSelect, "select", kElementwise, 3)                                   \
  X(kShiftLeft, "shift_left", kElementwise, 2)                            \
  X(kShiftRightArithmetic, "shift_right_arithmetic", kElementwise, 2)     \
  X(kShiftRightLogical, "shift_right_logical", kElementwise, 2)           \
  X(kSign, "sign", kElementwise, 1)                                       \
  X(kSine, "sine", kElementwise, 1)                                       \
  X(kSinh, "sinh", kElementwise, 1)                                       \
  X(kSqrt, "sqrt", kElementwise, 1)                                       \
  X(kSquare, "square", kElementwise, 1)                                   \
  X(kStochasticConvert, "stochastic_convert", kElementwise, 2)            \
  X(kSubtract, "subtract", kElementwise, 2)                               \
  X(kTan, "tan", kElementwise, 1)                                         \
  X(kTanh, "tanh", kElementwise, 1)                                       \
  X(kUniformDequantize, "uniform_dequantize", kElementwise, 1)            \
  X(kUniformQuantize, "uniform_quantize", kElementwise, 1)                \
  X(kXor, "xor", kElementwise, 2)                                         \
  X(kZeta, "zeta", kElementwise, 2)                                       \
  X(kBroadcast, "broadcast", kDataMovement, 1)                            \
  X(kBroadcastInDim, "broadcast_in_dim", kDataMovement, 1)                \
  X(kConcatenate, "concatenate", kDataMovement, -1)                       \
  X(kCopy, "copy", kDataMovement, 1)                                      \
  X(kDynamicBroadcastInDim, "dynamic_broadcast_in_dim", kDataMovement, 2) \
  X(kDynamicGather, "dynamic_gather", kDataMovement, 3)                   \
  X(kDynamicPad, "dynamic_pad", kDataMovement, 5)                         \
  X(kDynamicReshape, "dynamic_reshape", kDataMovement, 2)                 \
  X(kDynamicSlice, "dynamic_slice", kDataMovement, -1)                    \
  X(kDynamicUpdateSlice, "dynamic_update_slice", kDataMovement, -1)       \
  X(kGather, "gather", kDataMovement, 2)                                  \
  X(kPad, "pad", kDataMovement, 2)                                        \
  X(kRealDynamicSlice, "real_dynamic_slice", kDataMovement, 4)            \
  X(kReshape, "reshape", kDataMovement, 1)                                \
  X(kReverse, "reverse", kDataMovement, 1)                                \
  X(kScatter, "scatter", kDataMovement, -1)                               \
  X(kSetDimensionSize, "set_dimension_size", kDataMovement, 2)            \
  X(kSlice, "slice", kDataMovement, 1)                                    \
  X(kSort, "sort", kDataMovement, -1)                                     \
  X(kTorchIndexSelect, "torch_index_select", kDataMovement, 2)            \
  X(kTranspose, "transpose", kDataMovement, 1)                            \
  X(kConvolution, "convolution", kContraction, 2)                         \
  X(kDot, "dot", kContraction, 2)                                         \
  X(kDotGeneral, "dot_general", kContraction, 2)                          \
  X(kDynamicConv, "dynamic_conv", kContraction, 3)                        \
  X(kEinsum, "einsum", kContraction, 2)                                   \
  X(kRaggedDot, "ragged_dot", kContraction, 3)                            \
  X(kUnaryEinsum, "unary_einsum", kContraction, 1)                        \
  X(kCholesky, "cholesky", kLinearAlgebra, 1)                             \
  X(kFft, "fft", kLinearAlgebra, 1)                                       \
  X(kTriangularSolve, "triangular_solve", kLinearAlgebra, 2)              \
  X(kBatchNormGrad, "batch_norm_grad", kReduction, 5)                     \
  X(kBatchNormInference, "batch_norm_inference", kReduction, 5)           \
  X(kBatchNormTraining, "batch_norm_training", kReduction, 3)             \
  X(kMap, "map", kReduction, -1)                                          \
  X(kReduce, "reduce", kReduction, -1)                                    \
  X(kReduceWindow, "reduce_window", kReduction, -1)                       \
  X(kSelectAndScatter, "select_and_scatter", kReduction, 3)               \
  X(kTopK, "top_k", kReduction, 1)                                        \
  X(kRng, "rng", kRandom, 3)                                              \
  X(kRngBitGenerator, "rng_bit_generator", kRandom, 1)                    \
  X(kAllGather, "all_gather", kCollective, -1)                            \
  X(kAllReduce, "all_reduce", kCollective, -1)                            \
  X(kAllToAll, "all_to_all", kCollective, -1)                             \
  X(kCollectiveBroadcast, "collective_broadcast", kCollective, -1)        \
  X(kCollectivePermute, "collective_permute", kCollective, 1)             \
  X(kCollectiveReduce, "collective_reduce", kCollective, -1)              \
  X(kReduceScatter, "reduce_scatter", kCollective, -1)                    \
  X(kRecv, "recv", kCollective, 1)                                        \
  X(kSend, "send", kCollective, -1)                                       \
  X(kInfeed, "infeed", kHostTransfer, 1)                                  \
  X(kOutfeed, "outfeed", kHostTransfer, -1)                               \
  X(kAsyncDone, "async_done", kControlFlow, 1)                            \
  X(kAsyncStart, "async_start", kControlFlow, -1)                         \
  X(kAsyncUpdate, "async_update", kControlFlow, 1)                        \
  X(kCall, "call", kControlFlow, -1)                                      \
  X(kCase, "case", kControlFlow, 1)                                       \
  X(kComposite, "composite", kControlFlow, -1)                            \
  X(kFusion, "fusion", kControlFlow, -1)                                  \
  X(kIf, "if", kControlFlow, 1)                                           \
  X(kManualComputation, "manual_computation", kControlFlow, -1)           \
  X(kNamedComputation, "named_computation", kControlFlow, -1)             \
  X(kReturn, "return", kControlFlow, -1)                                  \
  X(kWhile, "while", kControlFlow, -1)                                    \
  X(kConstant, "constant", kConstant, 0)                                  \
  X(kDynamicIota, "dynamic_iota", kConstant, 1)                           \
  X(kEmpty, "empty", kConstant, -1)                                       \
  X(kIota, "iota", kConstant, 0)                                          \
  X(kCustomCall, "custom_call", kCustomCall, -1)                          \
  X(kMesh, "mesh", kSharding, 0)                                          \
  X(kPropagationBarrier, "propagation_barrier", kSharding, 1)             \
  X(kReshard, "reshard", kSharding, 1)                                    \
  X(kShardingAllGather, "all_gather", kSharding, 1)                       \
  X(kShardingAllReduce, "all_reduce", kSharding, 1)                       \
  X(kShardingAllSlice, "all_slice", kSharding, 1)                         \
  X(kShardingAllToAll, "all_to_all", kSharding, 1)                        \
  X(kShardingCollectivePermute, "collective_permute", kSharding, 1)       \
  X(kShardingConstraint, "sharding_constraint", kSharding, 1)             \
  X(kShardingDataFlowEdge, "data_flow_edge", kSharding, 1)                \
  X(kShardingGroup, "sharding_group", kSharding, 1)                       \
  X(kShardingReduceScatter, "reduce_scatter", kSharding, 1)               \
  X(kAddDependency, "add_dependency", kMetadata, 2)                       \
  X(kAfterAll, "after_all", kMetadata, -1)                                \
  X(kBitcast, "bitcast", kMetadata, 1)                                    \
  X(kCreateToken, "create_token", kMetadata, 0)                           \
  X(kDomain, "domain", kMetadata, 1)                                      \
  X(kGetDimensionSize, "get_dimension_size", kMetadata, 1)                \
  X(kGetTupleElement, "get_tuple_element", kMetadata, 1)                  \
  X(kOptimizationBarrier, "optimization_barrier", kMetadata, -1)          \
  X(kPartitionId, "partition_id", kMetadata, 0)                           \
  X(kReplicaId, "replica_id", kMetadata, 0)                               \
  X(kTuple, "tuple", kMetadata, -1)                                       \
  X(kFunc, "func", kStructure, 0)                                         \
  X(kModule, "module", kStructure, 0)                                     \
  X(kOpaque, "opaque", kOpaque, -1)                                       \
  X(kUnknown, "unknown", kUnknown, -1)

enum class OpKind : std::uint16_t {
#define ORRERY_OP_KIND_ENUM(kind, name, category, operands) kind,
  ORRERY_OP_KINDS(ORRERY_OP_KIND_ENUM)
#undef ORRERY_OP_KIND_ENUM
};

// The base name ("dot_general"), the category, and the fixed operand count (-1: variadic).
std::string_view op_kind_name(OpKind kind);
OpCategory op_category(OpKind kind);
int op_operand_count(OpKind kind);
std::string_view op_category_name(OpCategory category);

// The kind of a full op name ("stablehlo.add", "mhlo.copy", "func.call", "call"), or nullopt
// when the name is not in the table.
std::optional<OpKind> op_kind_from_name(std::string_view full_name);

// Dialects whose ops Orrery models: an unknown op name in one of them is an error (or kUnknown
// under --lenient); an op of any other dialect is kOpaque.
bool is_modelled_dialect(std::string_view dialect);

}  // namespace orrery::workload
