#include "compute/op_counting.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "util/assert.h"
#include "util/integers.h"

namespace orrery::compute {

using workload::Op;
using workload::OpCategory;
using workload::OpId;
using workload::OpKind;
using workload::Program;
using workload::TypeId;
using workload::TypeKind;

namespace {

using WT = workload::ElementType;

// ceil(log2(n)) for n >= 1 (0 for n <= 1).
double ceil_log2(std::uint64_t n) {
  return n <= 1 ? 0.0 : static_cast<double>(std::bit_width(n - 1));
}

std::uint64_t divide_or_zero(std::uint64_t a, std::uint64_t b) { return b == 0 ? 0 : a / b; }

// The integer list that follows `key` in a JSON-like backend_config ("lhs_contracting_dimensions":
// ["1"]), or nullopt when the key is absent.
std::optional<std::vector<std::int64_t>> json_int_list(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const std::size_t open = text.find('[', at + key.size());
  const std::size_t close = open == std::string_view::npos ? open : text.find(']', open);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  return integers_in(text.substr(open, close - open));
}

// --- custom calls -------------------------------------------------------------------------------

enum class Formula : std::uint8_t {
  kFree,
  kGemm,
  kAttention,
  kAttentionBackward,
  kLu,
  kCholesky,
  kQr,
  kRandomBits,
  kTopK,
  kReduction
};

struct CustomCallEntry {
  CustomCallRule rule;
  Formula formula;
};

constexpr CustomCallEntry kCustomCalls[] = {
    // Annotations that vanish when XLA compiles the program.
    {{"Sharding", CostRole::kFree, OpClass::kOther, "sharding annotation: free"}, Formula::kFree},
    {{"SPMDFullToShardShape", CostRole::kFree, OpClass::kOther, "manual-sharding boundary: free"},
     Formula::kFree},
    {{"SPMDShardToFullShape", CostRole::kFree, OpClass::kOther, "manual-sharding boundary: free"},
     Formula::kFree},
    {{"xla.sdy.*", CostRole::kFree, OpClass::kOther, "Shardy round-trip annotation: free"}, Formula::kFree},
    {{"tt.sharding_constraint", CostRole::kFree, OpClass::kOther, "sharding annotation: free"},
     Formula::kFree},
    {{"LayoutConstraint", CostRole::kFree, OpClass::kOther, "layout annotation: free"}, Formula::kFree},
    {{"annotate_device_placement", CostRole::kFree, OpClass::kOther, "memory-space annotation: free"},
     Formula::kFree},
    {{"MoveToHost", CostRole::kFree, OpClass::kOther,
      "host-offload annotation: free (the transfer is not modelled)"},
     Formula::kFree},
    {{"MoveToDevice", CostRole::kFree, OpClass::kOther,
      "host-offload annotation: free (the transfer is not modelled)"},
     Formula::kFree},
    {{"Pin", CostRole::kFree, OpClass::kOther, "buffer pinning annotation: free"}, Formula::kFree},
    {{"Unpin", CostRole::kFree, OpClass::kOther, "buffer pinning annotation: free"}, Formula::kFree},
    {{"CreateBuffer", CostRole::kFree, OpClass::kOther, "uninitialised buffer: free"}, Formula::kFree},
    {{"AllocateBuffer", CostRole::kFree, OpClass::kOther, "uninitialised buffer: free"}, Formula::kFree},
    {{"shape_assertion", CostRole::kFree, OpClass::kOther, "shape check of jax.export: free"},
     Formula::kFree},
    {{"check.*", CostRole::kFree, OpClass::kOther, "test assertion: free"}, Formula::kFree},
    // Kernels with a formula.
    {{"__cublas$gemm", CostRole::kCompute, OpClass::kGemm,
      "GEMM: K = prod(lhs_contracting_dimensions) (default: lhs's last dim), B = prod(lhs_batch_dimensions), "
      "M = lhs elements / (B K), N = result elements / (B M); FLOPs = 2 B M N K"},
     Formula::kGemm},
    {{"__cublas$lt$matmul*", CostRole::kCompute, OpClass::kGemm, "GEMM, as __cublas$gemm"}, Formula::kGemm},
    {{"orrery.attention", CostRole::kCompute, OpClass::kGemm,
      "fused (flash) attention forward, operands q [B, A, Sq, D], k [B, K, Sk, D] and v [B, K, Sk, Dv]: the "
      "two "
      "GEMMs QK^T and PV as one of batch 2 B A, M = Sq, N = Sk c, K = (D + Dv) / 2 (c = 1/2 when "
      "backend_config says causal, else 1); FLOPs = 2 B A Sq Sk (D + Dv) c"},
     Formula::kAttention},
    {{"orrery.attention_backward", CostRole::kCompute, OpClass::kGemm,
      "fused (flash) attention backward, operands q, k, v as the forward's: five GEMMs (QK^T again, dP, dV, "
      "dQ, dK) as one of batch 5 B A, M = Sq, N = Sk c, K = (3 D + 2 Dv) / 5; FLOPs = 2 B A Sq Sk (3 D + 2 "
      "Dv) c"},
     Formula::kAttentionBackward},
    {{"*getrf*", CostRole::kCompute, OpClass::kOther,
      "LU factorisation of each m x n matrix (m >= n after swapping): FLOPs = m n^2 - n^3 / 3"},
     Formula::kLu},
    {{"*potrf*", CostRole::kCompute, OpClass::kOther,
      "Cholesky factorisation of each n x n matrix: FLOPs = n^3 / 3"},
     Formula::kCholesky},
    {{"*geqrf*", CostRole::kCompute, OpClass::kOther,
      "QR factorisation of each m x n matrix (m >= n after swapping): FLOPs = 2 m n^2 - 2 n^3 / 3"},
     Formula::kQr},
    {{"cu_threefry2x32*", CostRole::kCompute, OpClass::kElementwise,
      "Threefry-2x32 random bits: 20 rounds of add, rotate and xor on 2-word blocks; FLOPs = 30 per 32-bit "
      "output word"},
     Formula::kRandomBits},
    {{"TopK", CostRole::kCompute, OpClass::kSort,
      "top-k of each row of the last dimension: FLOPs = elements * ceil(log2 k)"},
     Formula::kTopK},
    {{"stablehlo.dynamic_top_k", CostRole::kCompute, OpClass::kSort, "as TopK"}, Formula::kTopK},
    {{"stablehlo.dynamic_reduce_window", CostRole::kCompute, OpClass::kReduction,
      "window unknown (dynamic): FLOPs = input elements (a lower bound)"},
     Formula::kReduction},
};

bool matches(std::string_view pattern, std::string_view target) {
  const bool leading = !pattern.empty() && pattern.front() == '*';
  const bool trailing = !pattern.empty() && pattern.back() == '*';
  if (leading && trailing) {
    return target.find(pattern.substr(1, pattern.size() - 2)) != std::string_view::npos;
  }
  if (trailing) {
    return target.starts_with(pattern.substr(0, pattern.size() - 1));
  }
  if (leading) {
    return target.ends_with(pattern.substr(1));
  }
  return pattern == target;
}

const CustomCallEntry* find_custom_call(std::string_view target) {
  for (const CustomCallEntry& entry : kCustomCalls) {
    if (matches(entry.rule.target, target)) {
      return &entry;
    }
  }
  return nullptr;
}

// Whether a constant op's literal is one value repeated: `dense<1.0> : tensor<4x4xf32>`, a bare
// scalar, or chlo.constant_like (always one value in its operand's shape). Element lists
// (`dense<[...]>`), hex blobs (`dense<"0x...">`) and resources are materialised tensors.
bool is_splat_literal(std::optional<std::string_view> text, std::string_view op_name) {
  if (op_name == "chlo.constant_like") {
    return true;
  }
  if (!text) {
    return false;
  }
  std::string_view t = *text;
  if (t.starts_with("dense_resource") || t.starts_with("sparse") || t.starts_with("array")) {
    return false;
  }
  if (t.starts_with("dense<")) {
    t.remove_prefix(6);
  }
  while (!t.empty() && t.front() == ' ') {
    t.remove_prefix(1);
  }
  return !t.empty() && t.front() != '[' && t.front() != '"' && t.front() != '>';
}

}  // namespace

std::string_view name(CostRole role) {
  switch (role) {
    case CostRole::kCompute:
      return "compute";
    case CostRole::kFree:
      return "free";
    case CostRole::kCommunication:
      return "communication";
    case CostRole::kFused:
      return "fused";
  }
  return "?";
}

std::span<const CustomCallRule> custom_call_rules() {
  static const std::vector<CustomCallRule> rules = [] {
    std::vector<CustomCallRule> all;
    for (const CustomCallEntry& entry : kCustomCalls) {
      all.push_back(entry.rule);
    }
    return all;
  }();
  return rules;
}

const CustomCallRule* find_custom_call_rule(std::string_view target) {
  const CustomCallEntry* entry = find_custom_call(target);
  return entry == nullptr ? nullptr : &entry->rule;
}

double elementwise_flops_per_element(OpKind kind) {
  switch (kind) {
    // Arithmetic, comparison, logic, conversion, rounding: one operation.
    case OpKind::kAbs:
    case OpKind::kAdd:
    case OpKind::kAnd:
    case OpKind::kCeil:
    case OpKind::kCompare:
    case OpKind::kComplex:
    case OpKind::kConj:
    case OpKind::kConvert:
    case OpKind::kCountLeadingZeros:
    case OpKind::kFloor:
    case OpKind::kImag:
    case OpKind::kIsFinite:
    case OpKind::kIsInf:
    case OpKind::kIsNegInf:
    case OpKind::kIsPosInf:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
    case OpKind::kMultiply:
    case OpKind::kNegate:
    case OpKind::kNextAfter:
    case OpKind::kNot:
    case OpKind::kOr:
    case OpKind::kPopcnt:
    case OpKind::kReal:
    case OpKind::kReducePrecision:
    case OpKind::kRoundNearestAfz:
    case OpKind::kRoundNearestEven:
    case OpKind::kSelect:
    case OpKind::kShiftLeft:
    case OpKind::kShiftRightArithmetic:
    case OpKind::kShiftRightLogical:
    case OpKind::kSign:
    case OpKind::kSquare:
    case OpKind::kSubtract:
    case OpKind::kXor:
      return 1.0;
    // Two operations: a clamp (max, min), quantisation (scale and round), stochastic rounding.
    case OpKind::kClamp:
    case OpKind::kUniformQuantize:
    case OpKind::kUniformDequantize:
    case OpKind::kStochasticConvert:
      return 2.0;
    // One special-function evaluation: 8 FLOPs. On NVIDIA GPUs (compute capability 8.x) the
    // special-function unit issues 16 results per SM per cycle against 64 FP32 FMAs (128 FLOPs),
    // so one result takes the issue slots of 8 FLOPs (CUDA C Programming Guide, arithmetic
    // instruction throughput). Division is a reciprocal refined by FMAs.
    case OpKind::kDivide:
    case OpKind::kRemainder:
    case OpKind::kCosine:
    case OpKind::kExponential:
    case OpKind::kExponentialMinusOne:
    case OpKind::kLog:
    case OpKind::kLogPlusOne:
    case OpKind::kRsqrt:
    case OpKind::kSine:
    case OpKind::kSqrt:
    case OpKind::kTanh:
      return 8.0;
    // Two special-function evaluations (logistic: exp and a reciprocal; power: log and exp...).
    case OpKind::kAcos:
    case OpKind::kAcosh:
    case OpKind::kAsin:
    case OpKind::kAsinh:
    case OpKind::kAtan:
    case OpKind::kAtan2:
    case OpKind::kAtanh:
    case OpKind::kCbrt:
    case OpKind::kCosh:
    case OpKind::kLogistic:
    case OpKind::kPower:
    case OpKind::kSinh:
    case OpKind::kTan:
      return 16.0;
    // Polynomial or rational approximations of special functions.
    case OpKind::kBesselI1e:
    case OpKind::kDigamma:
    case OpKind::kErf:
    case OpKind::kErfInv:
    case OpKind::kErfc:
    case OpKind::kLgamma:
    case OpKind::kPolygamma:
    case OpKind::kZeta:
      return 32.0;
    default:  // bitcast_convert (a reinterpretation) and kinds that are not elementwise
      return 0.0;
  }
}

OpClass elementwise_class(OpKind kind) {
  const double weight = elementwise_flops_per_element(kind);
  if (weight >= 8.0 && kind != OpKind::kDivide && kind != OpKind::kRemainder) {
    return OpClass::kTranscendental;
  }
  return OpClass::kElementwise;
}

void KernelMath::add(const OpSignature& member) {
  elements_ = std::max(elements_, member.elements);
  if (member.op_class == OpClass::kTranscendental) {
    transcendental_elements_ += member.elements;
  }
}

bool KernelMath::transcendental() const {
  return transcendental_elements_ > 0 && transcendental_elements_ * 2 >= elements_;
}

compute::ElementType compute_element_type(WT type) {
  using CT = compute::ElementType;
  switch (type) {
    case WT::kUnknown:
      return CT::kF32;
    case WT::kI1:
      return CT::kI1;
    case WT::kI2:
    case WT::kI4:
      return CT::kI4;
    case WT::kI8:
      return CT::kI8;
    case WT::kI16:
      return CT::kI16;
    case WT::kI32:
      return CT::kI32;
    case WT::kI64:
    case WT::kIndex:
      return CT::kI64;
    case WT::kUI2:
    case WT::kUI4:
      return CT::kU4;
    case WT::kUI8:
      return CT::kU8;
    case WT::kUI16:
      return CT::kU16;
    case WT::kUI32:
      return CT::kU32;
    case WT::kUI64:
      return CT::kU64;
    case WT::kF4E2M1FN:
      return CT::kF4E2M1FN;
    case WT::kF6E2M3FN:
      return CT::kF6E2M3FN;
    case WT::kF6E3M2FN:
      return CT::kF6E3M2FN;
    case WT::kF8E3M4:
      return CT::kF8E3M4;
    case WT::kF8E4M3:
      return CT::kF8E4M3;
    case WT::kF8E4M3FN:
      return CT::kF8E4M3FN;
    case WT::kF8E4M3FNUZ:
      return CT::kF8E4M3FNUZ;
    case WT::kF8E4M3B11FNUZ:
      return CT::kF8E4M3B11FNUZ;
    case WT::kF8E5M2:
      return CT::kF8E5M2;
    case WT::kF8E5M2FNUZ:
      return CT::kF8E5M2FNUZ;
    case WT::kF8E8M0FNU:
      return CT::kF8E8M0FNU;
    case WT::kBF16:
      return CT::kBF16;
    case WT::kF16:
      return CT::kF16;
    case WT::kTF32:
      return CT::kTF32;
    case WT::kF32:
      return CT::kF32;
    case WT::kF64:
      return CT::kF64;
    case WT::kComplexF32:
      return CT::kComplexF32;
    case WT::kComplexF64:
      return CT::kComplexF64;
  }
  return CT::kF32;
}

// --- OpCounter ----------------------------------------------------------------------------------

OpCounter::OpCounter(const Program& program, CountOptions options) : program_(program), options_(options) {
  const workload::TypeTable& types = program.types();
  types_.resize(types.size());
  for (TypeId id = 0; id < types.size(); ++id) {
    TypeFacts& facts = types_[id];
    facts.element = compute_element_type(types.element(id));
    const auto bytes = types.byte_size(id);
    facts.known = bytes.has_value();
    facts.bytes = bytes.value_or(0);
    if (types.kind(id) == TypeKind::kScalar) {
      facts.elements = 1;
    } else if (types.kind(id) == TypeKind::kTensor) {
      std::uint8_t flags = 0;
      std::uint64_t count = 1;
      for (std::size_t i = 0; i < types.rank(id); ++i) {
        count *= dimension(id, i, flags);
      }
      facts.elements = count;
      facts.known = facts.known && flags == 0;
    } else if (types.kind(id) == TypeKind::kTuple && !types.members(id).empty()) {
      facts.element = compute_element_type(types.element(types.members(id)[0]));
    }
  }
  splat_.assign(program.op_count(), false);
  for (workload::OpId id = 0; id < program.op_count(); ++id) {
    const Op& op = program.op(id);
    if (op.kind == OpKind::kConstant && program.result_types(op).size() == 1) {
      splat_[id] = is_splat_literal(program.attribute(op, "value"), program.op_name(op));
    }
  }
}

std::uint64_t OpCounter::dimension(TypeId type, std::size_t index, std::uint8_t& flags) const {
  const workload::TypeTable& types = program_.types();
  const auto dims = types.dimensions(type);
  if (index >= dims.size()) {
    return 1;
  }
  std::int64_t d = dims[index];
  if (d == workload::kDynamicDimension) {
    const auto bounds = types.bounds(type);
    d = bounds.empty() ? workload::kNoBound : bounds[index];
    if (d == workload::kNoBound) {
      flags |= kFlagUnknownSize;
      return 0;
    }
  }
  return static_cast<std::uint64_t>(d);
}

std::uint64_t OpCounter::type_bytes(TypeId type, std::uint8_t& flags) const {
  const TypeFacts& facts = types_[type];
  if (!facts.known) {
    flags |= kFlagUnknownSize;
  }
  return facts.bytes;
}

std::uint64_t OpCounter::type_elements(TypeId type, std::uint8_t& flags) const {
  const TypeFacts& facts = types_[type];
  if (!facts.known) {
    flags |= kFlagUnknownSize;
  }
  return facts.elements;
}

std::uint64_t OpCounter::value_bytes(workload::ValueRef value, std::uint8_t& flags) const {
  return type_bytes(program_.value_type(value), flags);
}

bool OpCounter::fuses_broadcasts(OpKind reader) {
  switch (workload::op_category(reader)) {
    case workload::OpCategory::kElementwise:
      return true;
    case workload::OpCategory::kDataMovement:
      return reader != OpKind::kSort;
    case workload::OpCategory::kReduction:
      return reader == OpKind::kReduce || reader == OpKind::kReduceWindow;
    default:
      return false;
  }
}

std::uint64_t OpCounter::read_bytes(workload::ValueRef value, OpKind reader, std::uint8_t& flags) const {
  if (value.is_op_result() && splat_[value.op()] && fuses_broadcasts(reader)) {
    const TypeFacts& facts = types_[program_.value_type(value)];
    if (facts.known && facts.elements > 1) {
      return facts.bytes / facts.elements;
    }
  }
  return value_bytes(value, flags);
}

std::uint64_t OpCounter::operand_bytes(const Op& op, std::uint8_t& flags) const {
  std::uint64_t total = 0;
  for (const workload::ValueRef v : program_.operands(op)) {
    total += read_bytes(v, op.kind, flags);
  }
  return total;
}

std::uint64_t OpCounter::result_bytes(const Op& op, std::uint8_t& flags) const {
  std::uint64_t total = 0;
  for (const TypeId t : program_.result_types(op)) {
    total += type_bytes(t, flags);
  }
  return total;
}

TypeId OpCounter::operand_type(const Op& op, std::size_t index) const {
  const auto operands = program_.operands(op);
  return index < operands.size() ? program_.value_type(operands[index]) : workload::kNoId;
}

TypeId OpCounter::result_type(const Op& op, std::size_t index) const {
  const auto results = program_.result_types(op);
  if (index >= results.size()) {
    return workload::kNoId;
  }
  // A tuple result (cuBLAS custom calls return (result, workspace)): its first member.
  TypeId type = results[index];
  while (program_.types().kind(type) == TypeKind::kTuple && !program_.types().members(type).empty()) {
    type = program_.types().members(type)[0];
  }
  return type;
}

compute::ElementType OpCounter::operand_element(const Op& op) const {
  const TypeId operand = operand_type(op, 0);
  if (operand != workload::kNoId && program_.types().element(operand) != WT::kUnknown) {
    return types_[operand].element;
  }
  const TypeId result = result_type(op, 0);
  return result == workload::kNoId ? compute::ElementType::kF32 : types_[result].element;
}

compute::ElementType OpCounter::matmul_element(const Op& op) const {
  const compute::ElementType element = operand_element(op);
  if (element != compute::ElementType::kF32 || options_.f32_matmul != F32Matmul::kTf32) {
    return element;
  }
  // precision_config HIGH or HIGHEST asks for more than TF32's 10-bit mantissa.
  const auto precision = program_.attribute(op, "precision_config");
  if (precision && precision->find("HIGH") != std::string_view::npos) {
    return element;
  }
  return compute::ElementType::kTF32;
}

double OpCounter::body_weight(const Op& op, std::size_t region, OpKind kind) const {
  const auto regions = program_.regions(op);
  double weight = 0.0;
  bool has_ops = false;
  if (region < regions.size()) {
    for (const workload::BlockId block : program_.blocks(program_.region(regions[region]))) {
      for (const OpId inner : program_.ops(program_.block(block))) {
        const OpKind inner_kind = program_.op(inner).kind;
        if (inner_kind != OpKind::kReturn) {
          has_ops = true;
        }
        weight += elementwise_flops_per_element(inner_kind);
      }
    }
  }
  if (has_ops) {
    return weight;
  }
  // No region (`applies stablehlo.add`) or an empty one: the payload's reduction op.
  const double fallback = elementwise_flops_per_element(kind);
  return fallback > 0.0 ? fallback : 1.0;
}

CostRole OpCounter::role(OpId id) const {
  const Op& op = program_.op(id);
  switch (workload::op_category(op.kind)) {
    case OpCategory::kElementwise:
      if (op.kind == OpKind::kBitcastConvert) {
        std::uint8_t flags = 0;
        const auto operands = program_.operands(op);
        return !operands.empty() && value_bytes(operands[0], flags) == result_bytes(op, flags)
                   ? CostRole::kFree
                   : CostRole::kCompute;
      }
      return CostRole::kCompute;
    case OpCategory::kDataMovement:
      switch (op.kind) {
        case OpKind::kReshape:
        case OpKind::kDynamicReshape:
        case OpKind::kSetDimensionSize:
          return CostRole::kFree;  // a bitcast of the row-major buffer
        default:
          return CostRole::kCompute;
      }
    case OpCategory::kContraction:
    case OpCategory::kLinearAlgebra:
    case OpCategory::kReduction:
    case OpCategory::kRandom:
    case OpCategory::kUnknown:
      return CostRole::kCompute;
    case OpCategory::kCollective:
      return CostRole::kCommunication;
    case OpCategory::kControlFlow:
      return op.kind == OpKind::kFusion ? CostRole::kCompute : CostRole::kFree;
    case OpCategory::kConstant:
      return op.kind == OpKind::kIota || op.kind == OpKind::kDynamicIota ? CostRole::kCompute : CostRole::kFree;
    case OpCategory::kCustomCall: {
      if (!program_.has_payload(op)) {
        return CostRole::kCompute;
      }
      const CustomCallEntry* entry = find_custom_call(program_.string(program_.custom_call(op).target));
      return entry == nullptr ? CostRole::kCompute : entry->rule.role;
    }
    case OpCategory::kHostTransfer:
    case OpCategory::kSharding:
    case OpCategory::kMetadata:
    case OpCategory::kStructure:
    case OpCategory::kOpaque:
      return CostRole::kFree;
  }
  return CostRole::kFree;
}

void OpCounter::count(OpId id, OpCount& out) const {
  const Op& op = program_.op(id);
  out.role = role(id);
  out.flags = 0;
  const OpCategory category = workload::op_category(op.kind);
  if (category == OpCategory::kOpaque) {
    out.flags |= kFlagOpaque;
  } else if (category == OpCategory::kHostTransfer) {
    out.flags |= kFlagHostTransfer;
  }
  if (out.role != CostRole::kCompute) {
    return;
  }
  start(op, out);
  switch (category) {
    case OpCategory::kElementwise:
      count_elementwise(op, out);
      return;
    case OpCategory::kDataMovement:
    case OpCategory::kConstant:
      count_data_movement(op, out);
      return;
    case OpCategory::kContraction:
      if (op.kind == OpKind::kConvolution || op.kind == OpKind::kDynamicConv) {
        count_convolution(op, out);
      } else if (op.kind == OpKind::kEinsum || op.kind == OpKind::kUnaryEinsum) {
        count_einsum(op, out);
      } else {
        count_dot(op, out);
      }
      return;
    case OpCategory::kLinearAlgebra:
      count_linear_algebra(op, out);
      return;
    case OpCategory::kReduction:
      count_reduction(op, out);
      return;
    case OpCategory::kRandom:
      count_random(op, out);
      return;
    case OpCategory::kCustomCall:
      count_custom_call(op, out);
      return;
    case OpCategory::kControlFlow:  // kFusion, the only compute op of the category
      count_fusion(op, out);
      return;
    case OpCategory::kUnknown:
      out.flags |= kFlagUnknownOp;  // bytes only
      return;
    case OpCategory::kCollective:
    case OpCategory::kHostTransfer:
    case OpCategory::kSharding:
    case OpCategory::kMetadata:
    case OpCategory::kStructure:
    case OpCategory::kOpaque:
      break;
  }
  ORRERY_ASSERT(false, "every compute category is counted");
}

void OpCounter::start(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  s.op_class = OpClass::kOther;
  if (op.kind == OpKind::kCustomCall) {
    s.kind.assign(program_.has_payload(op) ? program_.string(program_.custom_call(op).target) : "custom_call");
  } else if (op.kind == OpKind::kUnknown) {
    const std::string_view full = program_.op_name(op);
    const std::size_t dot = full.find('.');
    s.kind.assign(dot == std::string_view::npos ? full : full.substr(dot + 1));
  } else {
    s.kind.assign(workload::op_kind_name(op.kind));
  }
  s.element_type = operand_element(op);
  s.gemm = GemmShape{};
  s.conv = ConvShape{};
  const TypeId result = result_type(op, 0);
  s.elements = result == workload::kNoId ? 0 : type_elements(result, out.flags);
  s.row_length = 0;
  s.flops = Flops{};
  s.bytes_read = Bytes{operand_bytes(op, out.flags)};
  s.bytes_written = Bytes{result_bytes(op, out.flags)};
}

void OpCounter::count_elementwise(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  // A bitcast_convert that changes the element width is a copy.
  s.op_class = op.kind == OpKind::kBitcastConvert ? OpClass::kDataMovement : elementwise_class(op.kind);
  s.flops = Flops{elementwise_flops_per_element(op.kind) * static_cast<double>(s.elements)};
}

void OpCounter::count_data_movement(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  s.op_class = OpClass::kDataMovement;
  const auto operands = program_.operands(op);
  const std::uint64_t written = s.bytes_written.count;
  // Bytes of operands [from, end): the index and size operands of dynamic ops.
  const auto operands_from = [&](std::size_t from) {
    std::uint64_t total = 0;
    for (std::size_t i = from; i < operands.size(); ++i) {
      total += read_bytes(operands[i], op.kind, flags);
    }
    return total;
  };
  // A splat buffer that an in-place op updates is materialised first (XLA fills it whole, then
  // updates it): its bytes are written too.
  const auto filled = [&](std::size_t index) -> std::uint64_t {
    if (index >= operands.size()) {
      return 0;
    }
    const workload::ValueRef v = operands[index];
    return v.is_op_result() && splat_[v.op()] ? value_bytes(v, flags) : 0;
  };
  switch (op.kind) {
    case OpKind::kSlice:
      s.bytes_read = Bytes{written};  // only the selected elements are read
      s.bytes_written = Bytes{written};
      return;
    case OpKind::kDynamicSlice:
    case OpKind::kRealDynamicSlice:
      s.op_class = OpClass::kGatherScatter;
      s.bytes_read = Bytes{written + operands_from(1)};
      s.bytes_written = Bytes{written};
      return;
    case OpKind::kDynamicUpdateSlice: {
      // In place: the update is read and written into the operand's buffer.
      s.op_class = OpClass::kGatherScatter;
      // (A splat update is read as one element and written whole.)
      const std::uint64_t update = operands.size() > 1 ? value_bytes(operands[1], flags) : 0;
      const std::uint64_t update_read = operands.size() > 1 ? read_bytes(operands[1], op.kind, flags) : 0;
      s.elements = operands.size() > 1 ? type_elements(program_.value_type(operands[1]), flags) : 0;
      s.bytes_read = Bytes{update_read + operands_from(2)};
      s.bytes_written = Bytes{update + filled(0)};
      return;
    }
    case OpKind::kGather:
    case OpKind::kDynamicGather:
    case OpKind::kTorchIndexSelect:
      // The gathered elements and the indices are read.
      s.op_class = OpClass::kGatherScatter;
      s.bytes_read = Bytes{written + operands_from(1)};
      s.bytes_written = Bytes{written};
      return;
    case OpKind::kScatter: {
      // (inputs..., indices, updates...): in place; a combining body also reads the targets.
      s.op_class = OpClass::kGatherScatter;
      const std::size_t n = (operands.size() - 1) / 2;
      std::uint64_t updates = 0;       // written (and, combining, the targets read)
      std::uint64_t updates_read = 0;  // a splat update read as one element
      for (std::size_t i = n + 1; i < operands.size(); ++i) {
        updates += value_bytes(operands[i], flags);
        updates_read += read_bytes(operands[i], op.kind, flags);
      }
      const std::uint64_t update_elements =
          n + 1 < operands.size() ? type_elements(program_.value_type(operands[n + 1]), flags) : 0;
      const auto regions = program_.regions(op);
      bool combines = false;
      if (!regions.empty()) {
        for (const workload::BlockId block : program_.blocks(program_.region(regions[0]))) {
          combines = combines || program_.ops(program_.block(block)).size() > 1;
        }
      }
      const double weight = combines ? body_weight(op, 0, program_.scatter(op).body) : 0.0;
      s.elements = update_elements;
      s.flops = Flops{weight * static_cast<double>(update_elements)};
      std::uint64_t fills = 0;
      for (std::size_t i = 0; i < n; ++i) {
        fills += filled(i);
      }
      s.bytes_read = Bytes{read_bytes(operands[n], op.kind, flags) + updates_read + (combines ? updates : 0)};
      s.bytes_written = Bytes{updates + fills};
      return;
    }
    case OpKind::kSort: {
      // A comparison sort of each row: ceil(log2 L) comparisons per element.
      s.op_class = OpClass::kSort;
      const TypeId keys = operand_type(op, 0);
      s.elements = type_elements(keys, flags);
      const std::int64_t rank = static_cast<std::int64_t>(program_.types().rank(keys));
      std::int64_t d = program_.has_payload(op) ? program_.sort(op).dimension : -1;
      if (d < 0) {
        d += rank;
      }
      s.row_length = d >= 0 && d < rank ? dimension(keys, static_cast<std::size_t>(d), flags) : s.elements;
      s.flops = Flops{static_cast<double>(s.elements) * ceil_log2(s.row_length) *
                      body_weight(op, 0, OpKind::kCompare)};
      return;
    }
    default:
      // broadcast, transpose, copy, reverse, pad, concatenate, iota: read the operands (a
      // broadcast reads its small operand once; iota has none), write the result.
      return;
  }
}

void OpCounter::count_dot(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  s.kind.assign("dot_general");  // dot is the dot_general with lhs dim 1 x rhs dim 0
  s.op_class = OpClass::kGemm;
  s.element_type = matmul_element(op);
  const TypeId lhs = operand_type(op, 0);
  const TypeId rhs = operand_type(op, 1);
  const std::size_t lhs_rank = program_.types().rank(lhs);
  const std::size_t rhs_rank = program_.types().rank(rhs);
  std::array<std::uint8_t, 16> lhs_role{};  // 0 free, 1 batching, 2 contracting
  std::array<std::uint8_t, 16> rhs_role{};
  std::uint64_t batch = 1;
  std::uint64_t k = 1;
  const auto mark = [](std::span<const std::int64_t> dims, std::array<std::uint8_t, 16>& roles, std::uint8_t role,
                       std::size_t rank) {
    for (const std::int64_t d : dims) {
      if (d >= 0 && static_cast<std::size_t>(d) < rank && static_cast<std::size_t>(d) < roles.size()) {
        roles[static_cast<std::size_t>(d)] = role;
      }
    }
  };
  if (program_.has_payload(op)) {
    const workload::DotDimensions& d = program_.dot(op);
    mark(program_.ints(d.lhs_batching), lhs_role, 1, lhs_rank);
    mark(program_.ints(d.rhs_batching), rhs_role, 1, rhs_rank);
    mark(program_.ints(d.lhs_contracting), lhs_role, 2, lhs_rank);
    mark(program_.ints(d.rhs_contracting), rhs_role, 2, rhs_rank);
  } else {  // dot: lhs's last dimension contracts with rhs's first
    if (lhs_rank > 0) {
      lhs_role[lhs_rank - 1] = 2;
    }
    rhs_role[0] = 2;
  }
  std::uint64_t m = 1;
  for (std::size_t i = 0; i < lhs_rank; ++i) {
    const std::uint64_t extent = dimension(lhs, i, flags);
    (lhs_role[i] == 1 ? batch : lhs_role[i] == 2 ? k : m) *= extent;
  }
  std::uint64_t n = 1;
  for (std::size_t i = 0; i < rhs_rank; ++i) {
    if (rhs_role[i] == 0) {
      n *= dimension(rhs, i, flags);
    }
  }
  s.gemm = GemmShape{batch, m, n, k};
  s.elements = 0;
  s.flops = Flops{2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
                  static_cast<double>(k)};
}

void OpCounter::count_einsum(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  // einsum_config = "ab,bc->ac": an index letter per dimension of each operand and the result.
  std::string_view config = program_.attribute(op, "einsum_config").value_or("");
  const std::size_t quote = config.find('"');
  if (quote != std::string_view::npos) {
    config = config.substr(quote + 1, config.find('"', quote + 1) - quote - 1);
  }
  const std::size_t arrow = config.find("->");
  if (op.kind == OpKind::kUnaryEinsum || arrow == std::string_view::npos) {
    // A transposition or reduction of one operand: one operation per input element.
    s.op_class = OpClass::kReduction;
    const std::uint64_t input = type_elements(operand_type(op, 0), flags);
    s.row_length = divide_or_zero(input, s.elements);
    s.flops = Flops{static_cast<double>(input)};
    return;
  }
  s.op_class = OpClass::kGemm;
  s.element_type = matmul_element(op);
  const std::string_view inputs = config.substr(0, arrow);
  const std::string_view output = config.substr(arrow + 2);
  const std::size_t comma = inputs.find(',');
  const std::string_view lhs_letters = inputs.substr(0, comma);
  const std::string_view rhs_letters = comma == std::string_view::npos ? std::string_view() : inputs.substr(comma + 1);
  std::array<std::uint64_t, 128> extent{};
  const auto record = [&](std::string_view letters, TypeId type) {
    for (std::size_t i = 0; i < letters.size(); ++i) {
      extent[static_cast<unsigned char>(letters[i]) & 127U] = dimension(type, i, flags);
    }
  };
  record(lhs_letters, operand_type(op, 0));
  record(rhs_letters, operand_type(op, 1));
  // Letters in both operands and the result are batch dimensions, in one operand and the result
  // free (m or n) dimensions, and every letter missing from the result is summed over (k).
  GemmShape g{1, 1, 1, 1};
  for (std::size_t c = 0; c < extent.size(); ++c) {
    if (extent[c] == 0) {
      continue;
    }
    const char letter = static_cast<char>(c);
    const bool in_lhs = lhs_letters.find(letter) != std::string_view::npos;
    const bool in_rhs = rhs_letters.find(letter) != std::string_view::npos;
    const bool in_out = output.find(letter) != std::string_view::npos;
    if (in_lhs && in_rhs && in_out) {
      g.batch *= extent[c];
    } else if (in_out && in_lhs) {
      g.m *= extent[c];
    } else if (in_out) {
      g.n *= extent[c];
    } else {
      g.k *= extent[c];
    }
  }
  s.gemm = g;
  s.elements = 0;
  s.flops = Flops{2.0 * static_cast<double>(g.batch) * static_cast<double>(g.m) * static_cast<double>(g.n) *
                  static_cast<double>(g.k)};
}

double convolution_flops(const Program& program, const Op& op) {
  const workload::ConvolutionDimensions& c = program.convolution(op);
  const workload::TypeTable& types = program.types();
  const auto operands = program.operands(op);
  const TypeId lhs = program.value_type(operands[0]);
  const TypeId rhs = program.value_type(operands[1]);
  const TypeId result = program.result_types(op)[0];
  const auto extent = [&](TypeId type, std::int64_t index) -> std::int64_t {
    const auto dims = types.dimensions(type);
    if (index < 0 || static_cast<std::size_t>(index) >= dims.size()) {
      return 1;
    }
    std::int64_t d = dims[static_cast<std::size_t>(index)];
    if (d == workload::kDynamicDimension) {
      const auto bounds = types.bounds(type);
      d = bounds.empty() ? 0 : std::max<std::int64_t>(bounds[static_cast<std::size_t>(index)], 0);
    }
    return d;
  };
  const auto input_spatial = program.ints(c.input_spatial);
  const auto kernel_spatial = program.ints(c.kernel_spatial);
  const auto output_spatial = program.ints(c.output_spatial);
  const auto strides = program.ints(c.window_strides);
  const auto padding = program.ints(c.padding);
  const auto lhs_dilation = program.ints(c.lhs_dilation);
  const auto rhs_dilation = program.ints(c.rhs_dilation);
  const auto at = [](std::span<const std::int64_t> values, std::size_t i, std::int64_t fallback) {
    return i < values.size() ? values[i] : fallback;
  };
  double positions = 1.0;
  for (std::size_t d = 0; d < input_spatial.size(); ++d) {
    const std::int64_t in = extent(lhs, input_spatial[d]);
    const std::int64_t kernel = extent(rhs, at(kernel_spatial, d, -1));
    const std::int64_t out = extent(result, at(output_spatial, d, -1));
    const std::int64_t stride = at(strides, d, 1);
    const std::int64_t pad_low = at(padding, 2 * d, 0);
    const std::int64_t base = at(lhs_dilation, d, 1);
    const std::int64_t dilation = at(rhs_dilation, d, 1);
    const std::int64_t valid = valid_window_positions(in, kernel, out, stride, pad_low, base, dilation);
    positions *= static_cast<double>(valid);
  }
  const double groups = static_cast<double>(std::max<std::int64_t>(c.feature_group_count, 1));
  const double batch_groups = static_cast<double>(std::max<std::int64_t>(c.batch_group_count, 1));
  const double input_features = static_cast<double>(extent(lhs, c.input_feature));
  const double output_features = static_cast<double>(extent(result, c.output_feature));
  const double batch = static_cast<double>(extent(lhs, c.input_batch));
  return 2.0 * (input_features / groups) * output_features * (batch / batch_groups) * positions;
}

void OpCounter::count_convolution(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  s.kind.assign("convolution");
  s.op_class = OpClass::kConvolution;
  s.element_type = matmul_element(op);
  s.elements = 0;
  if (!program_.has_payload(op)) {
    return;
  }
  const workload::ConvolutionDimensions& c = program_.convolution(op);
  const TypeId lhs = operand_type(op, 0);
  const TypeId rhs = operand_type(op, 1);
  const TypeId result = result_type(op, 0);
  const auto dim = [&](TypeId type, std::int64_t index) {
    return index < 0 ? 1 : dimension(type, static_cast<std::size_t>(index), flags);
  };
  ConvShape& shape = s.conv;
  const auto input_spatial = program_.ints(c.input_spatial);
  const auto kernel_spatial = program_.ints(c.kernel_spatial);
  const auto output_spatial = program_.ints(c.output_spatial);
  const auto strides = program_.ints(c.window_strides);
  const auto padding = program_.ints(c.padding);
  const auto lhs_dilation = program_.ints(c.lhs_dilation);
  const auto rhs_dilation = program_.ints(c.rhs_dilation);
  shape.spatial_rank = static_cast<std::uint32_t>(std::min<std::size_t>(input_spatial.size(), 3));
  shape.batch = dim(lhs, c.input_batch);
  shape.input_features = dim(lhs, c.input_feature);
  shape.output_features = dim(result, c.output_feature);
  shape.feature_groups = static_cast<std::uint64_t>(std::max<std::int64_t>(c.feature_group_count, 1));
  shape.batch_groups = static_cast<std::uint64_t>(std::max<std::int64_t>(c.batch_group_count, 1));
  for (std::size_t d = 0; d < input_spatial.size(); ++d) {
    // Spatial dimensions beyond the third fold into the third.
    const std::size_t slot = std::min<std::size_t>(d, 2);
    const auto fold = [&](std::array<std::uint64_t, 3>& values, std::uint64_t value) {
      values[slot] = d < 3 ? value : values[slot] * value;
    };
    fold(shape.input_size, dim(lhs, input_spatial[d]));
    fold(shape.kernel_size, d < kernel_spatial.size() ? dim(rhs, kernel_spatial[d]) : 1);
    fold(shape.output_size, d < output_spatial.size() ? dim(result, output_spatial[d]) : 1);
    if (d < 3) {
      const auto positive = [](std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0)); };
      shape.stride[d] = d < strides.size() ? positive(strides[d]) : 1;
      shape.padding_low[d] = 2 * d < padding.size() ? positive(padding[2 * d]) : 0;
      shape.padding_high[d] = 2 * d + 1 < padding.size() ? positive(padding[2 * d + 1]) : 0;
      shape.input_dilation[d] = d < lhs_dilation.size() ? positive(lhs_dilation[d]) : 1;
      shape.kernel_dilation[d] = d < rhs_dilation.size() ? positive(rhs_dilation[d]) : 1;
    }
  }
  s.flops = Flops{convolution_flops(program_, op)};
}

void OpCounter::count_linear_algebra(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  const TypeId a = operand_type(op, 0);
  const std::size_t rank = program_.types().rank(a);
  const std::uint64_t elements = type_elements(a, flags);
  const double n = rank == 0 ? 1.0 : static_cast<double>(dimension(a, rank - 1, flags));
  switch (op.kind) {
    case OpKind::kCholesky: {
      // n^3 / 3 per n x n matrix.
      const double matrices = n > 0 ? static_cast<double>(elements) / (n * n) : 0.0;
      s.flops = Flops{matrices * n * n * n / 3.0};
      return;
    }
    case OpKind::kTriangularSolve: {
      // n^2 per right-hand side of an n x n system = n * elements of b (either side).
      s.flops = Flops{n * static_cast<double>(type_elements(operand_type(op, 1), flags))};
      return;
    }
    case OpKind::kFft: {
      // 5 L log2 L per complex transform of length L (half for real transforms).
      const std::vector<std::int64_t> lengths = integers_in(program_.attribute(op, "fft_length").value_or(""));
      double length = 1.0;
      for (const std::int64_t l : lengths) {
        length *= static_cast<double>(std::max<std::int64_t>(l, 1));
      }
      const std::string_view type = program_.attribute(op, "fft_type").value_or("FFT");
      const bool real = type.find("RFFT") != std::string_view::npos;
      const bool inverse_real = type.find("IRFFT") != std::string_view::npos;
      const std::uint64_t full = inverse_real ? s.elements : elements;
      const double transforms = static_cast<double>(full) / length;
      s.flops = Flops{(real ? 2.5 : 5.0) * transforms * length * std::log2(std::max(length, 1.0))};
      return;
    }
    default:
      return;
  }
}

void OpCounter::count_reduction(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  s.op_class = OpClass::kReduction;
  const TypeId input = operand_type(op, 0);
  const std::uint64_t input_elements = type_elements(input, flags);
  const auto window_volume = [&]() {
    std::uint64_t volume = 1;
    for (const std::int64_t w : program_.ints(program_.window(op).window_dimensions)) {
      volume *= static_cast<std::uint64_t>(std::max<std::int64_t>(w, 1));
    }
    return volume;
  };
  switch (op.kind) {
    case OpKind::kReduce: {
      // Each input element is combined into its accumulator once.
      const OpKind body = program_.has_payload(op) ? program_.reduce(op).body : OpKind::kAdd;
      s.row_length = divide_or_zero(input_elements, s.elements);
      s.flops = Flops{static_cast<double>(input_elements) * body_weight(op, 0, body)};
      return;
    }
    case OpKind::kReduceWindow: {
      const std::uint64_t volume = window_volume();
      s.row_length = volume;
      s.flops = Flops{static_cast<double>(s.elements) * static_cast<double>(volume) *
                      body_weight(op, 0, program_.window(op).body)};
      return;
    }
    case OpKind::kSelectAndScatter: {
      // For each source element: select over its window, then scatter (combine) once.
      const std::uint64_t volume = window_volume();
      const std::uint64_t source = type_elements(operand_type(op, 1), flags);
      s.row_length = volume;
      s.flops = Flops{static_cast<double>(source) * (static_cast<double>(volume) * body_weight(op, 0, OpKind::kCompare) +
                                                     body_weight(op, 1, program_.window(op).body))};
      return;
    }
    case OpKind::kMap:
      s.op_class = OpClass::kElementwise;
      s.flops = Flops{static_cast<double>(s.elements) * body_weight(op, 0, OpKind::kAdd)};
      return;
    case OpKind::kBatchNormTraining:
    case OpKind::kBatchNormInference:
    case OpKind::kBatchNormGrad: {
      // Per element: training 8 (mean 1, variance 3, normalise 4), inference 4, gradient 10.
      // Training and gradient read their large operands twice (statistics, then the elementwise pass).
      s.op_class = OpClass::kNormalisation;
      s.elements = input_elements;
      const std::vector<std::int64_t> index = integers_in(program_.attribute(op, "feature_index").value_or(""));
      const std::uint64_t features =
          index.empty() ? 1 : dimension(input, static_cast<std::size_t>(std::max<std::int64_t>(index[0], 0)), flags);
      s.row_length = divide_or_zero(input_elements, features);
      const double per_element = op.kind == OpKind::kBatchNormTraining ? 8.0
                                 : op.kind == OpKind::kBatchNormGrad   ? 10.0
                                                                       : 4.0;
      s.flops = Flops{per_element * static_cast<double>(input_elements)};
      if (op.kind == OpKind::kBatchNormTraining) {
        s.bytes_read += Bytes{type_bytes(input, flags)};
      } else if (op.kind == OpKind::kBatchNormGrad) {
        s.bytes_read += Bytes{type_bytes(input, flags) + type_bytes(operand_type(op, 4), flags)};
      }
      return;
    }
    case OpKind::kTopK: {
      s.op_class = OpClass::kSort;
      const std::size_t rank = program_.types().rank(input);
      s.row_length = rank == 0 ? input_elements : dimension(input, rank - 1, flags);
      const TypeId values = result_type(op, 0);
      const std::size_t out_rank = program_.types().rank(values);
      const std::uint64_t k = out_rank == 0 ? 1 : dimension(values, out_rank - 1, flags);
      s.elements = input_elements;
      s.flops = Flops{static_cast<double>(input_elements) * std::max(1.0, ceil_log2(k))};
      return;
    }
    default:
      return;
  }
}

void OpCounter::count_random(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  s.op_class = OpClass::kElementwise;
  if (op.kind == OpKind::kRngBitGenerator) {
    // Philox-4x32-10 (XLA's default): 10 rounds of 2 multiplies and 4 xors / adds per 4 words,
    // about 15 integer operations per 32-bit output word.
    const TypeId output = result_type(op, 1);
    const std::uint64_t bytes = output == workload::kNoId ? 0 : type_bytes(output, flags);
    s.elements = output == workload::kNoId ? 0 : type_elements(output, flags);
    s.flops = Flops{15.0 * static_cast<double>(bytes) / 4.0};  // per 32-bit word
    return;
  }
  // rng (uniform or normal): random bits (16) per element.
  s.flops = Flops{16.0 * static_cast<double>(s.elements)};
}

void OpCounter::count_custom_call(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  const std::string_view target = program_.has_payload(op) ? program_.string(program_.custom_call(op).target) : "";
  const CustomCallEntry* entry = find_custom_call(target);
  s.op_class = entry == nullptr ? OpClass::kCustomCall : entry->rule.op_class;
  if (entry == nullptr) {
    flags |= kFlagUnknownCustomCall;
    return;
  }
  const TypeId a = operand_type(op, 0);
  const std::size_t rank = a == workload::kNoId ? 0 : program_.types().rank(a);
  const std::uint64_t elements = a == workload::kNoId ? 0 : type_elements(a, flags);
  const auto last = [&](TypeId type) {
    const std::size_t r = program_.types().rank(type);
    return r == 0 ? std::uint64_t{1} : dimension(type, r - 1, flags);
  };
  // m x n matrices of a batch: the last two dimensions of operand 0, m >= n after swapping.
  const auto matrices = [&](double& m, double& n) {
    m = rank >= 2 ? static_cast<double>(dimension(a, rank - 2, flags)) : 1.0;
    n = rank >= 1 ? static_cast<double>(dimension(a, rank - 1, flags)) : 1.0;
    if (m < n) {
      std::swap(m, n);
    }
    return m * n > 0 ? static_cast<double>(elements) / (m * n) : 0.0;
  };
  switch (entry->formula) {
    case Formula::kFree:
      return;
    case Formula::kGemm: {
      const std::string_view config = program_.attribute(op, "backend_config").value_or("");
      const auto contracting = json_int_list(config, "lhs_contracting_dimensions");
      const auto batching = json_int_list(config, "lhs_batch_dimensions");
      std::uint64_t k = 1;
      if (contracting && !contracting->empty()) {
        for (const std::int64_t d : *contracting) {
          k *= d >= 0 ? dimension(a, static_cast<std::size_t>(d), flags) : 1;
        }
      } else {
        k = rank == 0 ? 1 : dimension(a, rank - 1, flags);
      }
      std::uint64_t batch = 1;
      for (const std::int64_t d : batching.value_or(std::vector<std::int64_t>{})) {
        batch *= d >= 0 ? dimension(a, static_cast<std::size_t>(d), flags) : 1;
      }
      const TypeId result = result_type(op, 0);
      const std::uint64_t result_elements = result == workload::kNoId ? 0 : type_elements(result, flags);
      const std::uint64_t m = divide_or_zero(elements, batch * k);
      const std::uint64_t n = divide_or_zero(result_elements, batch * m);
      s.gemm = GemmShape{batch, m, n, k};
      s.elements = 0;
      s.element_type = operand_element(op);
      s.bytes_written = Bytes{result == workload::kNoId ? 0 : type_bytes(result, flags)};  // not the workspace
      s.flops = Flops{2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
                      static_cast<double>(k)};
      return;
    }
    case Formula::kAttention:
    case Formula::kAttentionBackward: {
      // q [B, A, Sq, D] and k [B, K, Sk, D]; other ranks are refused as empty work (flagged).
      const TypeId k_type = operand_type(op, 1);
      if (rank != 4 || k_type == workload::kNoId || program_.types().rank(k_type) != 4) {
        flags |= kFlagUnknownCustomCall;
        s.op_class = OpClass::kCustomCall;
        return;
      }
      const std::string_view config = program_.attribute(op, "backend_config").value_or("");
      const bool causal = config.find("causal") != std::string_view::npos;
      const std::uint64_t heads = dimension(a, 0, flags) * dimension(a, 1, flags);
      const std::uint64_t keys = dimension(k_type, 2, flags);
      const bool forward = entry->formula == Formula::kAttention;
      const std::uint64_t gemms = forward ? 2 : 5;
      // The query/key head dimension, and the value's (v's last; multi-head latent attention's
      // differ): QK^T and dQ, dK contract the first, PV, dP and dV the second.
      const std::uint64_t dqk = dimension(a, 3, flags);
      const TypeId v_type = operand_type(op, 2);
      const std::uint64_t dv =
          v_type != workload::kNoId && program_.types().rank(v_type) == 4 ? dimension(v_type, 3, flags) : dqk;
      const std::uint64_t depth = forward ? dqk + dv : 3 * dqk + 2 * dv;  // summed over the GEMMs
      s.gemm = GemmShape{gemms * heads, dimension(a, 2, flags), causal ? (keys + 1) / 2 : keys,
                         (depth + gemms / 2) / gemms};
      s.elements = 0;
      s.element_type = operand_element(op);
      s.flops = Flops{2.0 * static_cast<double>(heads) * static_cast<double>(s.gemm.m) *
                      static_cast<double>(s.gemm.n) * static_cast<double>(depth)};
      return;
    }
    case Formula::kLu: {
      double m = 0.0;
      double n = 0.0;
      const double count = matrices(m, n);
      s.flops = Flops{count * (m * n * n - n * n * n / 3.0)};
      return;
    }
    case Formula::kCholesky: {
      double m = 0.0;
      double n = 0.0;
      const double count = matrices(m, n);
      s.flops = Flops{count * n * n * n / 3.0};
      return;
    }
    case Formula::kQr: {
      double m = 0.0;
      double n = 0.0;
      const double count = matrices(m, n);
      s.flops = Flops{count * (2.0 * m * n * n - 2.0 * n * n * n / 3.0)};
      return;
    }
    case Formula::kRandomBits:
      s.flops = Flops{30.0 * s.bytes_written.as_double() / 4.0};  // per 32-bit word
      return;
    case Formula::kTopK: {
      const TypeId values = result_type(op, 0);
      const std::uint64_t k = values == workload::kNoId ? 1 : last(values);
      s.elements = elements;
      s.row_length = a == workload::kNoId ? 0 : last(a);
      s.flops = Flops{static_cast<double>(elements) * std::max(1.0, ceil_log2(k))};
      return;
    }
    case Formula::kReduction:
      s.flops = Flops{static_cast<double>(elements)};
      return;
  }
}

void OpCounter::count_fusion(const Op& op, OpCount& out) const {
  OpSignature& s = out.signature;
  std::uint8_t& flags = out.flags;
  // One kernel: the inner ops' FLOPs; the fusion's operands and results are the memory traffic.
  double flops = 0.0;
  bool contraction = false;
  OpSignature best;  // the inner contraction with the most FLOPs
  bool reduction = false;
  KernelMath math;
  bool elementwise = false;
  bool gather = false;
  std::uint64_t row_length = 0;
  OpCount inner;
  const auto regions = program_.regions(op);
  for (const workload::RegionId region : regions) {
    for (const workload::BlockId block : program_.blocks(program_.region(region))) {
      for (const OpId id : program_.ops(program_.block(block))) {
        count(id, inner);
        flags |= inner.flags;
        if (inner.role != CostRole::kCompute) {
          continue;
        }
        const OpSignature& is = inner.signature;
        flops += is.flops.value;
        math.add(is);
        switch (is.op_class) {
          case OpClass::kGemm:
          case OpClass::kConvolution:
            if (!contraction || is.flops > best.flops) {
              best = is;
              contraction = true;
            }
            break;
          case OpClass::kReduction:
          case OpClass::kNormalisation:
            if (!reduction) {
              row_length = is.row_length;
            }
            reduction = true;
            break;
          case OpClass::kTranscendental:
          case OpClass::kElementwise:
            elementwise = true;
            break;
          case OpClass::kGatherScatter:
            gather = true;
            break;
          default:
            break;
        }
      }
    }
  }
  const TypeId result = result_type(op, 0);
  s.elements = result == workload::kNoId ? 0 : type_elements(result, flags);
  if (contraction) {
    s.op_class = best.op_class;
    s.kind = best.kind;
    s.element_type = best.element_type;
    s.gemm = best.gemm;
    s.conv = best.conv;
    s.elements = 0;
  } else {
    s.kind.assign("fusion");
    s.op_class = reduction               ? OpClass::kReduction
                 : math.transcendental() ? OpClass::kTranscendental
                 : elementwise           ? OpClass::kElementwise
                 : gather                ? OpClass::kGatherScatter
                                         : OpClass::kDataMovement;
    s.row_length = reduction ? row_length : 0;
  }
  s.flops = Flops{flops};
  s.bytes_read = Bytes{operand_bytes(op, flags)};
  s.bytes_written = Bytes{result_bytes(op, flags)};
}

}  // namespace orrery::compute
