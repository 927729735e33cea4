// The counting layer: a workload IR op -> its role and, for compute ops, an OpSignature with the
// FLOPs and bytes it moves (docs/compute.md, "Counting"). The rules, with their formulas:
//
//   dot_general    B = prod(batching dims), K = prod(contracting dims), M / N = prod(lhs / rhs free
//                  dims); FLOPs = 2 B M N K; reads both operands, writes the result.
//   convolution    XLA's HloCostAnalysis rule, following the dimension numbers:
//                  FLOPs = 2 * (C_in / feature_groups) * C_out * (N / batch_groups) * prod_d V_d,
//                  V_d = the (output index, kernel index) pairs of spatial dimension d whose input
//                  index o*stride - pad_low + k*rhs_dilation lands on a real input element (not on
//                  padding, nor on a hole of lhs_dilation). Without padding and dilation V_d =
//                  out_d * kernel_d (the textbook 2 N Ho Wo C_out Kh Kw C_in / groups); a forward
//                  convolution and its backward-data and backward-filter convolutions count alike.
//   elementwise    FLOPs = weight(kind) * elements (elementwise_flops_per_element).
//   reduce         FLOPs = input elements * body weight; reduce_window: output elements * window
//                  volume * body weight; select_and_scatter: source elements * (window volume *
//                  select weight + scatter weight).
//   data movement  bytes only (reshape is free: a bitcast).
//
// Roles: kCompute (a kernel runs: the signature is filled), kFree (costs nothing at run time:
// constants, tuples, sharding annotations, reshapes, control-flow ops whose regions are costed op
// by op, ops of other dialects), kCommunication (collectives and send/recv: the system layer
// decomposes them). kFused is decided by cost_program (program_costs.h), which sees the op graph.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "compute/op_signature.h"
#include "workload/program.h"

namespace orrery::compute {

enum class CostRole : std::uint8_t {
  kCompute,        // a kernel runs on the device: time from the estimator
  kFree,           // nothing runs: constants, metadata, sharding annotations, control flow, opaque
  kCommunication,  // collectives and send/recv: decomposed by the system layer, not costed here
  kFused,          // part of another op's kernel (OpCost::fused_into): no time of its own
};
std::string_view name(CostRole role);

// Why a count is approximate (bits of OpCount::flags and OpCost::flags).
enum CountFlag : std::uint8_t {
  kFlagUnknownCustomCall = 1U << 0,  // custom call of a target not in the table: bytes only
  kFlagUnknownSize = 1U << 1,        // a type of unknown size (unbounded dynamic, dialect type) counted as 0 bytes
  kFlagOpaque = 1U << 2,             // an op of another dialect (free)
  kFlagUnknownOp = 1U << 3,          // an unknown op let through by --lenient: bytes only
  kFlagHostTransfer = 1U << 4,       // infeed / outfeed: host I/O is not modelled (free)
};

// What f32 dot_general and convolution ops with DEFAULT precision compute in.
enum class F32Matmul : std::uint8_t {
  kTf32,  // TF32 tensor cores: XLA's and JAX's GPU default (TPU presets: their default peak)
  kF32,   // full f32
};

struct CountOptions {
  F32Matmul f32_matmul = F32Matmul::kTf32;
};

struct OpCount {
  CostRole role = CostRole::kFree;
  std::uint8_t flags = 0;
  OpSignature signature;  // kCompute only
};

// FLOPs per element of an elementwise op kind (docs/compute.md, "Elementwise weights"): 1 for
// arithmetic, comparison, logic and conversion; 8 for one special-function evaluation (exp, log,
// tanh, logistic, sin, cos, sqrt, rsqrt, divide...); 16 for two; 32 for polynomial special
// functions (erf, lgamma...). 0 for kinds that are not elementwise.
double elementwise_flops_per_element(workload::OpKind kind);
// The class of an elementwise kind: kTranscendental when it evaluates a special function.
OpClass elementwise_class(workload::OpKind kind);

// Whether a kernel of several ops does its math per element with special functions (docs/compute.md,
// "Kernel classes"): add each member that computes; the kernel is transcendental when its
// transcendental members evaluate at least one special function per two elements of its largest
// member. A batch norm's rsqrt of the per-channel variance, broadcast over the activations, leaves
// its kernel elementwise: its bandwidth is the elementwise kernels', not an activation kernel's.
class KernelMath {
 public:
  void add(const OpSignature& member);
  [[nodiscard]] bool transcendental() const;

 private:
  std::uint64_t elements_ = 0;                 // the largest member's
  std::uint64_t transcendental_elements_ = 0;  // summed over the transcendental members
};

// The role of a custom call target (kCompute for unknown targets, which are costed by bytes).
struct CustomCallRule {
  std::string_view target;   // exact target, or a prefix when it ends in '*'
  CostRole role;
  OpClass op_class;          // kCompute only
  std::string_view formula;  // for docs and notes
};
// The documented table of custom-call targets (docs/compute.md, "Custom calls"), in match order.
std::span<const CustomCallRule> custom_call_rules();
const CustomCallRule* find_custom_call_rule(std::string_view target);

// The compute element type of a workload element type (index -> i64, i2 / ui2 -> i4, unknown ->
// f32).
ElementType compute_element_type(workload::ElementType type);

// Counts the ops of one program. Per-type facts (element counts, byte sizes) are computed once.
class OpCounter {
 public:
  OpCounter(const workload::Program& program, CountOptions options);

  // The op's role, without counting (cheap).
  [[nodiscard]] CostRole role(workload::OpId id) const;
  // The op's role and, for compute ops, its signature counted on its own (an op inside a fusion
  // or a reduction body is counted as if it ran alone; an mhlo.fusion is counted as one kernel:
  // the FLOPs of its inner ops, the bytes of its operands and results). `out` is reused: its
  // strings keep their capacity.
  void count(workload::OpId id, OpCount& out) const;

  // Bytes of a value's type (0, with kFlagUnknownSize in `flags`, when unknown).
  [[nodiscard]] std::uint64_t value_bytes(workload::ValueRef value, std::uint8_t& flags) const;
  // Bytes a kernel of op kind `reader` reads for a value: its type's, or one element's for a splat
  // constant (one value repeated) when the reader fuses broadcasts (fuses_broadcasts): XLA's
  // algebraic simplifier makes a splat a broadcast of a scalar, which such kernels fuse. A GEMM,
  // a convolution, a sort, a custom call or a collective reads the broadcast materialised.
  [[nodiscard]] std::uint64_t read_bytes(workload::ValueRef value, workload::OpKind reader,
                                         std::uint8_t& flags) const;
  // Elementwise ops, data movement but sort, reduce and reduce_window.
  [[nodiscard]] static bool fuses_broadcasts(workload::OpKind reader);
  [[nodiscard]] std::uint64_t type_bytes(workload::TypeId type, std::uint8_t& flags) const;
  [[nodiscard]] std::uint64_t type_elements(workload::TypeId type, std::uint8_t& flags) const;
  [[nodiscard]] const workload::Program& program() const { return program_; }

 private:
  struct TypeFacts {
    std::uint64_t bytes = 0;
    std::uint64_t elements = 0;
    bool known = false;
    ElementType element = ElementType::kF32;
  };

  // Extent of dimension `index` of a tensor type (its bound when dynamic; 0 and a flag if unknown).
  [[nodiscard]] std::uint64_t dimension(workload::TypeId type, std::size_t index, std::uint8_t& flags) const;
  [[nodiscard]] std::uint64_t operand_bytes(const workload::Op& op, std::uint8_t& flags) const;
  [[nodiscard]] std::uint64_t result_bytes(const workload::Op& op, std::uint8_t& flags) const;
  [[nodiscard]] workload::TypeId operand_type(const workload::Op& op, std::size_t index) const;
  [[nodiscard]] workload::TypeId result_type(const workload::Op& op, std::size_t index) const;
  [[nodiscard]] ElementType operand_element(const workload::Op& op) const;
  [[nodiscard]] ElementType matmul_element(const workload::Op& op) const;
  // FLOPs per element of a region's computation (a reduction body, a comparator): the sum of the
  // elementwise weights of its ops; `fallback` (the weight of `kind`, or 1) when it has no ops.
  [[nodiscard]] double body_weight(const workload::Op& op, std::size_t region, workload::OpKind kind) const;

  void count_elementwise(const workload::Op& op, OpCount& out) const;
  void count_data_movement(const workload::Op& op, OpCount& out) const;
  void count_dot(const workload::Op& op, OpCount& out) const;
  void count_einsum(const workload::Op& op, OpCount& out) const;
  void count_convolution(const workload::Op& op, OpCount& out) const;
  void count_linear_algebra(const workload::Op& op, OpCount& out) const;
  void count_reduction(const workload::Op& op, OpCount& out) const;
  void count_random(const workload::Op& op, OpCount& out) const;
  void count_custom_call(const workload::Op& op, OpCount& out) const;
  void count_fusion(const workload::Op& op, OpCount& out) const;
  // Fills what every count starts from: the kind, the operand's element type, the result's
  // elements, bytes read = the operands', bytes written = the results', no FLOPs.
  void start(const workload::Op& op, OpCount& out) const;

  const workload::Program& program_;
  CountOptions options_;
  std::vector<TypeFacts> types_;
  std::vector<bool> splat_;  // per op: a constant of one repeated value
};

// The FLOPs of a convolution by the valid-position rule above, from the IR's dimension numbers.
// Exposed for tests.
double convolution_flops(const workload::Program& program, const workload::Op& op);

}  // namespace orrery::compute
