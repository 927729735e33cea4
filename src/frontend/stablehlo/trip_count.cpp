#include "frontend/stablehlo/trip_count.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

namespace orrery::frontend::stablehlo {

using workload::BlockId;
using workload::ComparisonDirection;
using workload::Op;
using workload::OpId;
using workload::OpKind;
using workload::Program;
using workload::ValueRef;

namespace {

// What a scalar value is, as far as the loop analysis can tell: a constant, or an iteration
// argument plus a constant offset.
struct Term {
  enum class Kind : std::uint8_t { kUnknown, kConstant, kAffine };
  Kind kind = Kind::kUnknown;
  std::int64_t value = 0;      // the constant, or the offset
  std::uint32_t argument = 0;  // kAffine: the iteration argument

  static Term constant(std::int64_t v) { return {Kind::kConstant, v, 0}; }
  static Term affine(std::uint32_t argument, std::int64_t offset) {
    return {Kind::kAffine, offset, argument};
  }
  [[nodiscard]] bool is_constant() const { return kind == Kind::kConstant; }
  [[nodiscard]] bool is_affine() const { return kind == Kind::kAffine; }
};

// The integer of a scalar or splat constant's value text: `dense<5>`, `5`, `dense<5.000000e+00>`.
std::optional<std::int64_t> constant_value(std::string_view text) {
  if (text.substr(0, 6) == "dense<") {
    text = text.substr(6, text.find('>') == std::string_view::npos ? 0 : text.find('>') - 6);
  }
  const std::size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    text = text.substr(0, colon);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  std::int64_t integer = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), integer);
  if (error == std::errc() && end == text.data() + text.size()) {
    return integer;
  }
  double real = 0;
  const auto [real_end, real_error] = std::from_chars(text.data(), text.data() + text.size(), real);
  if (real_error == std::errc() && real_end == text.data() + text.size() && std::nearbyint(real) == real &&
      std::abs(real) < 9e15) {
    return static_cast<std::int64_t>(real);
  }
  return std::nullopt;
}

class Evaluator {
 public:
  explicit Evaluator(const Program& program) : program_(program) {}

  void bind(BlockId block, std::vector<Term> arguments) {
    bindings_.emplace_back(block, std::move(arguments));
  }
  void unbind() { bindings_.pop_back(); }

  Term eval(ValueRef value, int depth = 0);
  // The compare op that decides `predicate`, with its operands evaluated; follows calls.
  bool find_compare(ValueRef predicate, Term& lhs, Term& rhs, ComparisonDirection& direction, int depth = 0);

 private:
  // The value returned at `index` by the function a call op calls, with the callee's arguments
  // bound to the call's operands; nullopt when the callee has no body.
  template <class Then>
  bool through_call(const Op& call, std::uint32_t index, Then&& then, int depth);

  const Program& program_;
  std::vector<std::pair<BlockId, std::vector<Term>>> bindings_;
};

const Op* terminator(const Program& program, BlockId block) {
  const auto ops = program.ops(program.block(block));
  if (ops.empty() || program.op(ops.back()).kind != OpKind::kReturn) {
    return nullptr;
  }
  return &program.op(ops.back());
}

template <class Then>
bool Evaluator::through_call(const Op& call, std::uint32_t index, Then&& then, int depth) {
  if (call.payload == workload::kNoId) {
    return false;
  }
  const workload::FunctionId callee = program_.call(call).callee;
  if (callee == workload::kNoId) {
    return false;
  }
  const BlockId entry = program_.entry_block(program_.function(callee));
  if (entry == workload::kNoId) {
    return false;
  }
  const Op* ret = terminator(program_, entry);
  if (ret == nullptr || index >= ret->operands.count) {
    return false;
  }
  std::vector<Term> arguments;
  for (const ValueRef operand : program_.operands(call)) {
    arguments.push_back(eval(operand, depth + 1));
  }
  bind(entry, std::move(arguments));
  const bool ok = then(program_.operands(*ret)[index]);
  unbind();
  return ok;
}

Term Evaluator::eval(ValueRef value, int depth) {
  if (depth > 32) {
    return {};
  }
  if (value.is_block_argument()) {
    for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it) {
      if (it->first == value.block()) {
        return value.index() < it->second.size() ? it->second[value.index()] : Term{};
      }
    }
    return {};
  }
  const Op& op = program_.op(value.op());
  const auto operands = program_.operands(op);
  switch (op.kind) {
    case OpKind::kConstant: {
      const auto text = program_.attribute(op, "value");
      const auto elements = program_.types().element_count(program_.result_types(op)[0]);
      if (!text || !elements) {
        return {};
      }
      const auto v = constant_value(*text);
      return v ? Term::constant(*v) : Term{};
    }
    case OpKind::kConvert:
    case OpKind::kReshape:
    case OpKind::kBroadcastInDim:
    case OpKind::kCopy:
      return operands.empty() ? Term{} : eval(operands[0], depth + 1);
    case OpKind::kOptimizationBarrier:
      return value.index() < operands.size() ? eval(operands[value.index()], depth + 1) : Term{};
    case OpKind::kNegate: {
      const Term a = eval(operands[0], depth + 1);
      return a.is_constant() ? Term::constant(-a.value) : Term{};
    }
    case OpKind::kAdd:
    case OpKind::kSubtract: {
      const Term a = eval(operands[0], depth + 1);
      Term b = eval(operands[1], depth + 1);
      if (op.kind == OpKind::kSubtract) {
        if (!b.is_constant()) {
          return {};
        }
        b.value = -b.value;
      }
      if (a.is_constant() && b.is_constant()) {
        return Term::constant(a.value + b.value);
      }
      if (a.is_affine() && b.is_constant()) {
        return Term::affine(a.argument, a.value + b.value);
      }
      if (a.is_constant() && b.is_affine()) {
        return Term::affine(b.argument, a.value + b.value);
      }
      return {};
    }
    case OpKind::kCall: {
      Term result;
      through_call(
          op, value.index(),
          [&](ValueRef returned) {
            result = eval(returned, depth + 1);
            return true;
          },
          depth);
      return result;
    }
    default:
      return {};
  }
}

bool Evaluator::find_compare(ValueRef predicate, Term& lhs, Term& rhs, ComparisonDirection& direction,
                             int depth) {
  if (depth > 32 || !predicate.is_op_result()) {
    return false;
  }
  const Op& op = program_.op(predicate.op());
  const auto operands = program_.operands(op);
  switch (op.kind) {
    case OpKind::kCompare:
      if (op.payload == workload::kNoId) {
        return false;
      }
      lhs = eval(operands[0], depth + 1);
      rhs = eval(operands[1], depth + 1);
      direction = program_.compare(op).direction;
      return true;
    case OpKind::kReshape:
    case OpKind::kConvert:
    case OpKind::kCopy:
      return find_compare(operands[0], lhs, rhs, direction, depth + 1);
    case OpKind::kCall:
      return through_call(
          op, predicate.index(),
          [&](ValueRef returned) { return find_compare(returned, lhs, rhs, direction, depth + 1); }, depth);
    default:
      return false;
  }
}

ComparisonDirection mirrored(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kLt:
      return ComparisonDirection::kGt;
    case ComparisonDirection::kLe:
      return ComparisonDirection::kGe;
    case ComparisonDirection::kGt:
      return ComparisonDirection::kLt;
    case ComparisonDirection::kGe:
      return ComparisonDirection::kLe;
    default:
      return d;
  }
}

TripCount unknown(std::string reason) {
  return TripCount{false, 0, std::move(reason)};
}

// 128-bit arithmetic, so that bound - init cannot overflow.
__extension__ using Wide = __int128;

}  // namespace

TripCount count_iterations(std::int64_t init, std::int64_t bound, std::int64_t step,
                           ComparisonDirection direction) {
  const Wide distance = static_cast<Wide>(bound) - init;
  const Wide s = step;
  auto result = [](Wide n) { return TripCount{true, static_cast<std::uint64_t>(n), {}}; };
  TripCount never_ends =
      unknown("the induction variable never reaches the loop's bound (init " + std::to_string(init) +
              ", bound " + std::to_string(bound) + ", step " + std::to_string(step) + ")");
  switch (direction) {
    case ComparisonDirection::kLt:
      if (distance <= 0) return result(0);
      if (s <= 0) return never_ends;
      return result((distance + s - 1) / s);
    case ComparisonDirection::kLe:
      if (distance < 0) return result(0);
      if (s <= 0) return never_ends;
      return result(distance / s + 1);
    case ComparisonDirection::kGt:
      if (distance >= 0) return result(0);
      if (s >= 0) return never_ends;
      return result((-distance + -s - 1) / -s);
    case ComparisonDirection::kGe:
      if (distance > 0) return result(0);
      if (s >= 0) return never_ends;
      return result(-distance / -s + 1);
    case ComparisonDirection::kNe:
      if (distance == 0) return result(0);
      if (s == 0 || distance % s != 0 || distance / s < 0) return never_ends;
      return result(distance / s);
    case ComparisonDirection::kEq:
      if (distance != 0) return result(0);
      return unknown(
          "an EQ condition that holds initially runs until the step moves the value away: "
          "not a counted loop");
  }
  return unknown("unknown comparison");
}

TripCount derive_trip_count(const Program& program, OpId while_op) {
  const Op& op = program.op(while_op);
  const auto regions = program.regions(op);
  if (regions.size() != 2) {
    return unknown("the loop does not have a condition and a body region");
  }
  const auto cond_blocks = program.blocks(program.region(regions[0]));
  const auto body_blocks = program.blocks(program.region(regions[1]));
  if (cond_blocks.size() != 1 || body_blocks.size() != 1) {
    return unknown("the condition or the body is not a single block");
  }
  const Op* cond_return = terminator(program, cond_blocks[0]);
  const Op* body_return = terminator(program, body_blocks[0]);
  const std::uint32_t n = op.operands.count;
  if (cond_return == nullptr || cond_return->operands.count != 1 || body_return == nullptr ||
      body_return->operands.count != n) {
    return unknown("the condition or the body does not end in a return of the expected values");
  }
  std::vector<Term> identity;
  for (std::uint32_t i = 0; i < n; ++i) {
    identity.push_back(Term::affine(i, 0));
  }
  Evaluator evaluator(program);
  // Initial values, evaluated outside the loop.
  std::vector<Term> init;
  for (const ValueRef operand : program.operands(op)) {
    init.push_back(evaluator.eval(operand));
  }
  // Next values, from the body's return.
  evaluator.bind(body_blocks[0], identity);
  std::vector<Term> next;
  for (const ValueRef returned : program.operands(*body_return)) {
    next.push_back(evaluator.eval(returned));
  }
  evaluator.unbind();
  // An iteration argument that the body passes through unchanged, with a constant initial value,
  // is a constant.
  auto substitute_invariant = [&](Term t) {
    if (t.is_affine() && next[t.argument].is_affine() && next[t.argument].argument == t.argument &&
        next[t.argument].value == 0 && init[t.argument].is_constant()) {
      return Term::constant(init[t.argument].value + t.value);
    }
    return t;
  };
  Term lhs;
  Term rhs;
  ComparisonDirection direction = ComparisonDirection::kLt;
  evaluator.bind(cond_blocks[0], identity);
  const bool compared = evaluator.find_compare(program.operands(*cond_return)[0], lhs, rhs, direction);
  evaluator.unbind();
  if (!compared) {
    return unknown("the condition is not a comparison (compare LT/LE/GT/GE/NE)");
  }
  lhs = substitute_invariant(lhs);
  rhs = substitute_invariant(rhs);
  if (lhs.is_constant() && rhs.is_affine()) {
    std::swap(lhs, rhs);
    direction = mirrored(direction);
  }
  if (!lhs.is_affine() || !rhs.is_constant()) {
    return unknown("the condition does not compare an iteration argument with a constant");
  }
  const std::uint32_t i = lhs.argument;
  const Term step = next[i];
  if (!step.is_affine() || step.argument != i || step.value == 0) {
    return unknown("iteration argument #" + std::to_string(i) +
                   " does not change by a constant step in the body");
  }
  if (!init[i].is_constant()) {
    return unknown("the initial value of iteration argument #" + std::to_string(i) + " is not a constant");
  }
  // (arg + offset) DIR bound  <=>  arg DIR bound - offset
  return count_iterations(init[i].value, rhs.value - lhs.value, step.value, direction);
}

}  // namespace orrery::frontend::stablehlo
