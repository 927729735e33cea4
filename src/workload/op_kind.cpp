#include "workload/op_kind.h"

#include <array>
#include <string>
#include <unordered_map>
#include <utility>

namespace orrery::workload {
namespace {

struct OpKindInfo {
  std::string_view name;
  OpCategory category;
  int operands;
};

constexpr std::array kOpKinds{
#define ORRERY_OP_KIND_ROW(kind, name, category, operands) OpKindInfo{name, OpCategory::category, operands},
    ORRERY_OP_KINDS(ORRERY_OP_KIND_ROW)
#undef ORRERY_OP_KIND_ROW
};

// Kinds spelled only by the dialects listed with them below (not as stablehlo.X and mhlo.X).
bool has_explicit_spellings(OpKind kind) {
  switch (op_category(kind)) {
    case OpCategory::kSharding:
    case OpCategory::kStructure:
    case OpCategory::kOpaque:
    case OpCategory::kUnknown:
      return true;
    default:
      break;
  }
  switch (kind) {
    case OpKind::kAcos:
    case OpKind::kAcosh:
    case OpKind::kAsin:
    case OpKind::kAsinh:
    case OpKind::kAtan:
    case OpKind::kAtanh:
    case OpKind::kBesselI1e:
    case OpKind::kConj:
    case OpKind::kCosh:
    case OpKind::kDigamma:
    case OpKind::kErf:
    case OpKind::kErfInv:
    case OpKind::kErfc:
    case OpKind::kIsInf:
    case OpKind::kIsNegInf:
    case OpKind::kIsPosInf:
    case OpKind::kLgamma:
    case OpKind::kNextAfter:
    case OpKind::kPolygamma:
    case OpKind::kSinh:
    case OpKind::kSquare:
    case OpKind::kTopK:
    case OpKind::kZeta:
    case OpKind::kRaggedDot:
    case OpKind::kCopy:
    case OpKind::kFusion:
    case OpKind::kBitcast:
    case OpKind::kDomain:
    case OpKind::kAddDependency:
    case OpKind::kStochasticConvert:
    case OpKind::kCall:
    case OpKind::kManualComputation:
    case OpKind::kNamedComputation:
    case OpKind::kEmpty:
      return true;
    default:
      return false;
  }
}

// Spellings beyond "stablehlo.<name>" and "mhlo.<name>".
constexpr std::pair<std::string_view, OpKind> kExplicitSpellings[] = {
    // chlo: the ops StableHLO lacks, and the broadcasting forms of binary ops.
    {"chlo.acos", OpKind::kAcos},
    {"chlo.acosh", OpKind::kAcosh},
    {"chlo.asin", OpKind::kAsin},
    {"chlo.asinh", OpKind::kAsinh},
    {"chlo.atan", OpKind::kAtan},
    {"chlo.atanh", OpKind::kAtanh},
    {"chlo.bessel_i1e", OpKind::kBesselI1e},
    {"chlo.conj", OpKind::kConj},
    {"chlo.constant", OpKind::kConstant},
    {"chlo.constant_like", OpKind::kConstant},
    {"chlo.cosh", OpKind::kCosh},
    {"chlo.digamma", OpKind::kDigamma},
    {"chlo.erf", OpKind::kErf},
    {"chlo.erf_inv", OpKind::kErfInv},
    {"chlo.erfc", OpKind::kErfc},
    {"chlo.is_inf", OpKind::kIsInf},
    {"chlo.is_neg_inf", OpKind::kIsNegInf},
    {"chlo.is_pos_inf", OpKind::kIsPosInf},
    {"chlo.lgamma", OpKind::kLgamma},
    {"chlo.next_after", OpKind::kNextAfter},
    {"chlo.polygamma", OpKind::kPolygamma},
    {"chlo.ragged_dot", OpKind::kRaggedDot},
    {"chlo.sinh", OpKind::kSinh},
    {"chlo.square", OpKind::kSquare},
    {"chlo.tan", OpKind::kTan},
    {"chlo.top_k", OpKind::kTopK},
    {"chlo.zeta", OpKind::kZeta},
    {"chlo.broadcast_add", OpKind::kAdd},
    {"chlo.broadcast_and", OpKind::kAnd},
    {"chlo.broadcast_atan2", OpKind::kAtan2},
    {"chlo.broadcast_compare", OpKind::kCompare},
    {"chlo.broadcast_complex", OpKind::kComplex},
    {"chlo.broadcast_divide", OpKind::kDivide},
    {"chlo.broadcast_maximum", OpKind::kMaximum},
    {"chlo.broadcast_minimum", OpKind::kMinimum},
    {"chlo.broadcast_multiply", OpKind::kMultiply},
    {"chlo.broadcast_next_after", OpKind::kNextAfter},
    {"chlo.broadcast_or", OpKind::kOr},
    {"chlo.broadcast_polygamma", OpKind::kPolygamma},
    {"chlo.broadcast_power", OpKind::kPower},
    {"chlo.broadcast_remainder", OpKind::kRemainder},
    {"chlo.broadcast_select", OpKind::kSelect},
    {"chlo.broadcast_shift_left", OpKind::kShiftLeft},
    {"chlo.broadcast_shift_right_arithmetic", OpKind::kShiftRightArithmetic},
    {"chlo.broadcast_shift_right_logical", OpKind::kShiftRightLogical},
    {"chlo.broadcast_subtract", OpKind::kSubtract},
    {"chlo.broadcast_xor", OpKind::kXor},
    {"chlo.broadcast_zeta", OpKind::kZeta},
    // mhlo: XLA's own ops in optimised exports.
    {"mhlo.copy", OpKind::kCopy},
    {"mhlo.fusion", OpKind::kFusion},
    {"mhlo.bitcast", OpKind::kBitcast},
    {"mhlo.domain", OpKind::kDomain},
    {"mhlo.add_dependency", OpKind::kAddDependency},
    {"mhlo.stochastic_convert", OpKind::kStochasticConvert},
    {"mhlo.erf", OpKind::kErf},
    {"mhlo.topk", OpKind::kTopK},
    {"mhlo.ragged_dot", OpKind::kRaggedDot},
    {"mhlo.acosh", OpKind::kAcosh},
    {"mhlo.asin", OpKind::kAsin},
    {"mhlo.asinh", OpKind::kAsinh},
    {"mhlo.atanh", OpKind::kAtanh},
    {"mhlo.cosh", OpKind::kCosh},
    {"mhlo.sinh", OpKind::kSinh},
    {"stablehlo.cross-replica-sum", OpKind::kAllReduce},  // an all_reduce sum without a body
    {"mhlo.cross-replica-sum", OpKind::kAllReduce},
    // func, and the builtin module.
    {"func.func", OpKind::kFunc},
    {"func.call", OpKind::kCall},
    {"call", OpKind::kCall},
    {"func.return", OpKind::kReturn},
    {"return", OpKind::kReturn},
    {"module", OpKind::kModule},
    {"builtin.module", OpKind::kModule},
    // Shardy.
    {"sdy.mesh", OpKind::kMesh},
    {"sdy.manual_computation", OpKind::kManualComputation},
    {"sdy.named_computation", OpKind::kNamedComputation},
    {"sdy.return", OpKind::kReturn},
    {"sdy.constant", OpKind::kConstant},
    {"sdy.sharding_constraint", OpKind::kShardingConstraint},
    {"sdy.reshard", OpKind::kReshard},
    {"sdy.propagation_barrier", OpKind::kPropagationBarrier},
    {"sdy.data_flow_edge", OpKind::kShardingDataFlowEdge},
    {"sdy.sharding_group", OpKind::kShardingGroup},
    {"sdy.all_gather", OpKind::kShardingAllGather},
    {"sdy.all_reduce", OpKind::kShardingAllReduce},
    {"sdy.all_slice", OpKind::kShardingAllSlice},
    {"sdy.all_to_all", OpKind::kShardingAllToAll},
    {"sdy.collective_permute", OpKind::kShardingCollectivePermute},
    {"sdy.reduce_scatter", OpKind::kShardingReduceScatter},
    // Two ops of core dialects that real exports contain.
    {"arith.constant", OpKind::kConstant},
    {"tensor.empty", OpKind::kEmpty},
};

struct NameHash {
  using is_transparent = void;  // NOLINT(readability-identifier-naming): the standard library's name
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using NameTable = std::unordered_map<std::string, OpKind, NameHash, std::equal_to<>>;

NameTable build_name_table() {
  NameTable table;
  for (std::size_t i = 0; i < kOpKinds.size(); ++i) {
    const auto kind = static_cast<OpKind>(i);
    if (has_explicit_spellings(kind)) {
      continue;
    }
    const std::string name(kOpKinds[i].name);
    table.emplace("stablehlo." + name, kind);
    table.emplace("mhlo." + name, kind);
  }
  for (const auto& [name, kind] : kExplicitSpellings) {
    table.emplace(std::string(name), kind);
  }
  return table;
}

}  // namespace

std::string_view op_kind_name(OpKind kind) {
  return kOpKinds[static_cast<std::size_t>(kind)].name;
}
OpCategory op_category(OpKind kind) {
  return kOpKinds[static_cast<std::size_t>(kind)].category;
}
int op_operand_count(OpKind kind) {
  return kOpKinds[static_cast<std::size_t>(kind)].operands;
}

std::string_view op_category_name(OpCategory category) {
  switch (category) {
    case OpCategory::kElementwise:
      return "elementwise";
    case OpCategory::kDataMovement:
      return "data_movement";
    case OpCategory::kContraction:
      return "contraction";
    case OpCategory::kLinearAlgebra:
      return "linear_algebra";
    case OpCategory::kReduction:
      return "reduction";
    case OpCategory::kRandom:
      return "random";
    case OpCategory::kCollective:
      return "collective";
    case OpCategory::kHostTransfer:
      return "host_transfer";
    case OpCategory::kControlFlow:
      return "control_flow";
    case OpCategory::kConstant:
      return "constant";
    case OpCategory::kCustomCall:
      return "custom_call";
    case OpCategory::kSharding:
      return "sharding";
    case OpCategory::kMetadata:
      return "metadata";
    case OpCategory::kStructure:
      return "structure";
    case OpCategory::kOpaque:
      return "opaque";
    case OpCategory::kUnknown:
      return "unknown";
  }
  return "?";
}

std::optional<OpKind> op_kind_from_name(std::string_view full_name) {
  static const NameTable table = build_name_table();
  const auto it = table.find(full_name);
  if (it == table.end()) {
    return std::nullopt;
  }
  return it->second;
}

bool is_modelled_dialect(std::string_view dialect) {
  return dialect == "stablehlo" || dialect == "mhlo" || dialect == "chlo" || dialect == "func" ||
         dialect == "sdy";
}

}  // namespace orrery::workload
