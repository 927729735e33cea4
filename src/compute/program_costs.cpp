#include "compute/program_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

#include "util/error.h"
#include "workload/summary.h"

namespace orrery::compute {

using workload::BlockId;
using workload::Op;
using workload::OpId;
using workload::OpKind;
using workload::Program;
using workload::RegionId;

CostOptions CostOptions::from(const config::ComputeConfig& config) {
  CostOptions options;
  options.fusion = config.fusion;
  options.counting.f32_matmul = config.f32_matmul == config::F32MatmulPrecision::kF32 ? F32Matmul::kF32 : F32Matmul::kTf32;
  return options;
}

std::string_view ProgramCosts::intern(std::string_view text) {
  auto it = strings_->find(text);
  if (it == strings_->end()) {
    it = strings_->emplace(text).first;
  }
  return *it;
}

namespace {

// The op whose kernel holds `id` because `id` sits inside its regions: the outermost enclosing
// mhlo.fusion or op whose region is a computation of the op (reduce, sort, scatter, all_reduce...
// bodies); kNoId when the op runs on its own.
OpId enclosing_kernel(const Program& p, OpId id) {
  OpId kernel = workload::kNoId;
  OpId current = id;
  while (true) {
    const workload::Block& block = p.block(p.op(current).block);
    const OpId parent = p.region(block.region).parent;
    if (parent == workload::kNoId) {
      return kernel;
    }
    const OpKind kind = p.op(parent).kind;
    if (kind == OpKind::kFusion || !workload::has_executed_regions(kind)) {
      kernel = parent;
    }
    current = parent;
  }
}

class ProgramCoster {
 public:
  ProgramCoster(const Program& program, ComputeModel& model, const CostOptions& options)
      : p_(program),
        model_(model),
        options_(options),
        counter_(program, options.counting),
        gpu_rules_(!model.hardware().systolic.has_value()) {}

  ProgramCosts run() {
    const CacheStats before = model_.cache_stats();
    costs_.ops.resize(p_.op_count());
    roles_.resize(p_.op_count());
    for (OpId id = 0; id < p_.op_count(); ++id) {
      roles_[id] = counter_.role(id);
      const OpId kernel = enclosing_kernel(p_, id);
      if (kernel != workload::kNoId) {
        costs_.ops[id].role = CostRole::kFused;
        costs_.ops[id].fused_into = kernel;
      } else {
        costs_.ops[id].role = roles_[id];
      }
    }
    mark_gemm_views();
    if (options_.fusion == config::FusionMode::kElementwise) {
      find_elementwise_chains();
    } else if (options_.fusion == config::FusionMode::kRegions) {
      find_fusible_calls();
      find_regions();
    }
    for (OpId id = 0; id < p_.op_count(); ++id) {
      cost_op(id);
    }
    if (!is_member_.empty()) {
      for (OpId id = 0; id < p_.op_count(); ++id) {
        const OpId root = costs_.ops[id].fused_into;
        if (is_member_[id] && root != workload::kNoId && root != id) {
          bool stored = false;
          for (std::uint32_t r = 0; r < p_.result_types(p_.op(id)).size() && !stored; ++r) {
            stored = escapes(workload::ValueRef::op_result(id, r), root);
          }
          costs_.ops[id].stored = stored;
        }
      }
    }
    const CacheStats after = model_.cache_stats();
    costs_.cache.lookups = after.lookups - before.lookups;
    costs_.cache.hits = after.hits - before.hits;
    return std::move(costs_);
  }

 private:
  // In a module with `orrery.gemm_views = true` (what `generate llm --tp-comm-overlap` writes for
  // Transformer Engine's in-place ring buffers), views the GEMMs read or write in place, which move
  // no data (free): a slice that keeps whole rows of its operand (it cuts dimension 0 only, with
  // unit stride) and that only dot_general ops read, the GEMM reading the rows at an offset; and a
  // concatenate along dimension 0 of dot_general results that nothing else reads, each GEMM
  // writing its rows of the result. Other modules keep the copies, as XLA by default makes them.
  void mark_gemm_views() {
    const auto attributes = p_.module_attributes();
    if (std::none_of(attributes.begin(), attributes.end(), [&](const workload::Attribute& a) {
          return p_.string(a.name) == "orrery.gemm_views" && p_.attribute_text(a).starts_with("true");
        })) {
      return;
    }
    std::vector<std::vector<OpId>> users(p_.op_count());
    for (OpId id = 0; id < p_.op_count(); ++id) {
      for (const workload::ValueRef v : p_.operands(p_.op(id))) {
        if (v.is_op_result()) {
          users[v.op()].push_back(id);
        }
      }
    }
    const auto is_dot = [&](OpId id) {
      const OpKind kind = p_.op(id).kind;
      return kind == OpKind::kDotGeneral || kind == OpKind::kDot;
    };
    using Dims = std::span<const std::int64_t>;
    const auto dims = [&](workload::ValueRef v) -> std::optional<Dims> {
      const workload::TypeId type = p_.value_type(v);
      if (!p_.types().is_tensor(type) || !p_.types().is_static(type)) {
        return std::nullopt;
      }
      return p_.types().dimensions(type);
    };
    const auto same_after_first = [](Dims a, Dims b) {
      return !a.empty() && a.size() == b.size() && std::equal(a.begin() + 1, a.end(), b.begin() + 1);
    };
    for (OpId id = 0; id < p_.op_count(); ++id) {
      const Op& op = p_.op(id);
      if (costs_.ops[id].role == CostRole::kFused || roles_[id] != CostRole::kCompute) {
        continue;
      }
      const workload::ValueRef result = workload::ValueRef::op_result(id, 0);
      const auto operands = p_.operands(op);
      bool view = false;
      if (op.kind == OpKind::kSlice && operands.size() == 1 && !users[id].empty() &&
          std::all_of(users[id].begin(), users[id].end(), is_dot)) {
        const auto in = dims(operands[0]);
        const auto out = dims(result);
        view = in && out && same_after_first(*in, *out) && unit_stride_in_rows(op);
      } else if (op.kind == OpKind::kConcatenate && !operands.empty()) {
        const auto out = dims(result);
        std::int64_t rows = 0;
        view = out.has_value();
        for (const workload::ValueRef v : operands) {
          const auto in = dims(v);
          view = view && v.is_op_result() && is_dot(v.op()) && users[v.op()].size() == 1 && in &&
                 same_after_first(*in, *out);
          rows += view ? (*in)[0] : 0;
        }
        view = view && rows == (*out)[0];
      }
      if (view) {
        roles_[id] = CostRole::kFree;
        costs_.ops[id].role = CostRole::kFree;
      }
    }
  }

  // A slice's stride along dimension 0 is 1: `[start:limit, ...]` or `[start:limit:1, ...]`, or
  // strides = array<i64: 1, ...>, dense<1> or dense<[1, ...]>.
  bool unit_stride_in_rows(const Op& op) const {
    const auto is_one = [](std::string_view text) {
      const std::size_t digit = text.find_first_of("0123456789");
      return digit != std::string_view::npos && text[digit] == '1' &&
             (digit + 1 == text.size() || !std::isdigit(static_cast<unsigned char>(text[digit + 1])));
    };
    if (const auto text = p_.attribute(op, "slice")) {
      const std::string_view first = text->substr(0, text->find_first_of(",]"));
      const std::size_t colons = static_cast<std::size_t>(std::count(first.begin(), first.end(), ':'));
      return colons == 1 || (colons == 2 && is_one(first.substr(first.rfind(':') + 1)));
    }
    if (const auto strides = p_.attribute(op, "strides")) {
      std::string_view values = strides->substr(0, strides->find(" : "));  // not the type's dimensions
      if (const std::size_t element = values.find("i64:"); element != std::string_view::npos) {
        values = values.substr(element + 4);  // array<i64: ...>
      }
      return is_one(values);
    }
    return false;
  }

  // Elementwise fusion: an elementwise op E joins the kernel of the producer P of one of its
  // operands when P is a compute op (or already fused into one) in E's block, P has one result
  // and E is that result's only use.
  void find_elementwise_chains() {
    std::vector<std::uint32_t> uses(p_.op_count(), 0);
    for (OpId id = 0; id < p_.op_count(); ++id) {
      for (const workload::ValueRef v : p_.operands(p_.op(id))) {
        if (v.is_op_result()) {
          ++uses[v.op()];
        }
      }
    }
    members_.resize(p_.op_count());
    // Program order within each block: producers come before their users.
    for (const workload::Function& f : p_.functions()) {
      if (f.body != workload::kNoId) {
        chain_region(f.body, uses);
      }
    }
  }

  void chain_region(RegionId region, const std::vector<std::uint32_t>& uses) {
    for (const BlockId block : p_.blocks(p_.region(region))) {
      for (const OpId id : p_.ops(p_.block(block))) {
        const Op& op = p_.op(id);
        for (const RegionId inner : p_.regions(op)) {
          chain_region(inner, uses);
        }
        OpCost& cost = costs_.ops[id];
        if (cost.role != CostRole::kCompute || workload::op_category(op.kind) != workload::OpCategory::kElementwise) {
          continue;
        }
        for (const workload::ValueRef v : p_.operands(op)) {
          if (!v.is_op_result()) {
            continue;
          }
          const OpId producer = v.op();
          const Op& p = p_.op(producer);
          const OpCost& produced = costs_.ops[producer];
          const bool chained = produced.role == CostRole::kFused && roles_[producer] == CostRole::kCompute &&
                               costs_.ops[produced.fused_into].role == CostRole::kCompute &&
                               p_.op(produced.fused_into).block == block;
          if ((produced.role != CostRole::kCompute && !chained) || p.block != block || p.results.count != 1 ||
              uses[producer] != 1) {
            continue;
          }
          const OpId root = chained ? produced.fused_into : producer;
          cost.role = CostRole::kFused;
          cost.fused_into = root;
          members_[root].push_back(id);
          break;
        }
      }
    }
  }

  // --- region fusion (kRegions) ------------------------------------------------------------------

  // XLA inlines calls before it fuses. A call of a function whose body is one block of fusible
  // elementwise work (elementwise ops, broadcasts, iotas, converts, free ops such as constants and
  // reshapes; no regions, no nested calls) returning one value is therefore costed as one
  // elementwise op at the call site -- the callee's FLOPs, the call's operands read and its result
  // written -- and can join the caller's kernels like any elementwise op (@relu after a batch
  // norm). Its callee is then not run for that call (the exec graph runs the call as a kernel).
  void find_fusible_calls() {
    fusible_call_.assign(p_.op_count(), 0);
    std::unordered_map<workload::FunctionId, bool> fusible_callee;
    for (OpId id = 0; id < p_.op_count(); ++id) {
      const Op& op = p_.op(id);
      if (op.kind != OpKind::kCall || !p_.has_payload(op) || p_.result_types(op).size() != 1 ||
          costs_.ops[id].role != CostRole::kFree || costs_.ops[id].fused_into != workload::kNoId) {
        continue;
      }
      const workload::FunctionId callee = p_.call(op).callee;
      if (callee == workload::kNoId) {
        continue;
      }
      const auto [it, inserted] = fusible_callee.try_emplace(callee, false);
      if (inserted) {
        it->second = elementwise_function(callee);
      }
      if (it->second) {
        fusible_call_[id] = 1;
        costs_.ops[id].role = CostRole::kCompute;
      }
    }
  }

  bool elementwise_function(workload::FunctionId id) const {
    const workload::Function& function = p_.function(id);
    if (function.body == workload::kNoId) {
      return false;
    }
    const auto blocks = p_.blocks(p_.region(function.body));
    if (blocks.size() != 1) {
      return false;
    }
    bool computes = false;
    for (const OpId member : p_.ops(p_.block(blocks.front()))) {
      const Op& op = p_.op(member);
      if (!p_.regions(op).empty()) {
        return false;
      }
      if (op.kind == OpKind::kReturn) {
        if (p_.operands(op).size() != 1) {
          return false;
        }
        continue;
      }
      const CostRole role = roles_[member];
      const auto category = workload::op_category(op.kind);
      const bool elementwise = category == workload::OpCategory::kElementwise || op.kind == OpKind::kBroadcast ||
                               op.kind == OpKind::kBroadcastInDim || op.kind == OpKind::kIota;
      // Free ops allowed beside the elementwise work: constants and data movement (reshapes,
      // bitcasts) only; anything else (a composite, a custom call, another dialect's op) is not
      // elementwise work this call could stand for.
      const bool harmless = category == workload::OpCategory::kConstant ||
                            category == workload::OpCategory::kDataMovement;
      if (role == CostRole::kCompute && elementwise) {
        computes = true;
      } else if (role != CostRole::kFree || !harmless) {
        return false;
      }
    }
    return computes;
  }

  // The kind of op that reads op `id`'s operands, for a splat's read (OpCounter::read_bytes): a
  // fusible call is an elementwise function, whose ops fuse a splat's broadcast.
  OpKind reader_kind(OpId id) const {
    return !fusible_call_.empty() && fusible_call_[id] != 0 ? OpKind::kAdd : p_.op(id).kind;
  }

  // The count of an op; for a fusible call, one elementwise op: the callee's FLOPs (its class
  // transcendental by KernelMath), the call's operands read, its result written.
  void count(OpId id, OpCount& out) {
    if (fusible_call_.empty() || fusible_call_[id] == 0) {
      counter_.count(id, out);
      return;
    }
    const Op& op = p_.op(id);
    const workload::Function& callee = p_.function(p_.call(op).callee);
    double flops = 0.0;
    KernelMath math;
    bool have_template = false;
    std::uint8_t flags = 0;
    for (const OpId member : p_.ops(p_.block(p_.blocks(p_.region(callee.body)).front()))) {
      if (p_.op(member).kind == OpKind::kReturn) {
        continue;
      }
      counter_.count(member, call_count_);
      flags |= call_count_.flags;  // free members' approximations too
      if (roles_[member] != CostRole::kCompute) {
        continue;
      }
      flops += call_count_.signature.flops.value;
      math.add(call_count_.signature);
      if (!have_template || call_count_.signature.elements >= out.signature.elements) {
        out.signature = call_count_.signature;  // the largest member gives type and shape
        have_template = true;
      }
    }
    out.role = CostRole::kCompute;
    std::uint64_t read = 0;
    for (const workload::ValueRef v : p_.operands(op)) {
      read += counter_.read_bytes(v, reader_kind(id), flags);
    }
    out.flags = flags;
    out.signature.kind.assign("fusion");
    out.signature.op_class = math.transcendental() ? OpClass::kTranscendental : OpClass::kElementwise;
    out.signature.flops = Flops{flops};
    out.signature.bytes_read = Bytes{read};
    out.signature.bytes_written = Bytes{counter_.type_bytes(p_.result_types(op)[0], flags)};
    out.signature.row_length = 0;
    out.signature.gemm = GemmShape{};
    out.signature.conv = ConvShape{};
  }

  static bool fusible_kind(OpKind kind) {
    switch (workload::op_category(kind)) {
      case workload::OpCategory::kElementwise: return true;
      case workload::OpCategory::kConstant: return kind == OpKind::kIota || kind == OpKind::kDynamicIota;
      case workload::OpCategory::kReduction: return kind == OpKind::kReduce || kind == OpKind::kReduceWindow;
      case workload::OpCategory::kDataMovement:
        switch (kind) {
          case OpKind::kBroadcast:
          case OpKind::kBroadcastInDim:
          case OpKind::kDynamicBroadcastInDim:
          case OpKind::kConcatenate:
          case OpKind::kCopy:
          case OpKind::kPad:
          case OpKind::kReverse:
          case OpKind::kSlice:
          case OpKind::kDynamicSlice:
          case OpKind::kTranspose:
          case OpKind::kReshape:
          case OpKind::kDynamicReshape: return true;
          default: return false;  // gather, scatter, dynamic_update_slice (in place), sort: own kernels
        }
      default: return false;  // contractions, custom calls, collectives, control flow: barriers
    }
  }

  std::uint32_t find_set(std::uint32_t region) {
    while (region_parent_[region] != region) {
      region_parent_[region] = region_parent_[region_parent_[region]];
      region = region_parent_[region];
    }
    return region;
  }

  // The region a value belongs to (as a member's result or a rename of one), or kNoRegion.
  std::uint32_t region_of(workload::ValueRef v) {
    if (!v.is_op_result() || region_[v.op()] == kNoRegion) {
      return kNoRegion;
    }
    return find_set(region_[v.op()]);
  }

  // Whether op `user` reads one-element value `v` to make a larger result (a scalar broadcast to a
  // tensor, the step count in every parameter's optimizer update). XLA never fuses two consumers
  // together through such a value: its producer-consumer fusion duplicates a cheap producer into
  // each consumer or leaves an expensive one its own kernel, and its multi-output fusion skips
  // effective scalars as shared operands (IsProfitableOperand). Regions do not join through such
  // a link, and a kernel takes in another through one only as that kernel's one user (XLA fuses a
  // producer into its only consumer); without this rule every parameter's update became one
  // kernel, where XLA launches one per parameter. Not a link: an op back over a GPU row-reduction
  // kernel's own reduced tensor (a softmax or RMS norm over a single row broadcasts its
  // one-element row result over the row, in its own kernel); a scalar such a kernel computes for
  // tensors of other sizes (a global norm scaling every gradient) still is one.
  bool apart_through_scalar(OpId user, workload::ValueRef v) {
    if (!one_element(v)) {
      return false;
    }
    const auto results = p_.result_types(p_.op(user));
    if (results.empty() || !p_.types().is_tensor(results[0])) {
      return false;
    }
    const auto elements = p_.types().element_count(results[0]);
    if (elements && *elements <= 1) {
      return false;
    }
    const std::uint32_t r = region_of(v);
    return r == kNoRegion || region_row_elements_[r] == 0 || !elements ||
           *elements != region_row_elements_[r];
  }

  // Whether a value has exactly one element (an effective scalar).
  bool one_element(workload::ValueRef v) const {
    const auto n = p_.types().element_count(p_.value_type(v));
    return n && *n == 1;
  }

  // The op of `block` that `user` is, or is nested in; kNoId when `user` is outside the block.
  OpId ancestor_in(OpId user, BlockId block) const {
    while (p_.op(user).block != block) {
      const OpId parent = p_.region(p_.block(p_.op(user).block).region).parent;
      if (parent == workload::kNoId) {
        return workload::kNoId;
      }
      user = parent;
    }
    return user;
  }

  // Regions: each block in program order. A fusible compute op joins (and merges) the open regions
  // its operands come from and the open regions that read the same (large enough) value, or
  // starts a region; it cannot join a region whose reduction result it uses (a reduction's result
  // leaves its kernel). Any use of a region's value from outside it -- by a barrier, a control-flow
  // op or its regions, the terminator, a fusible op of another region -- closes the region. A single-operand free data-movement op (a
  // reshape) of an open region's value renames it inside the region.
  void find_regions() {
    region_.assign(p_.op_count(), kNoRegion);
    is_member_.assign(p_.op_count(), false);
    row_result_.assign(p_.op_count(), 0);
    // Uses of each op's values by ops of other blocks (nested regions): attributed to the user's
    // ancestor in the producer's block.
    std::vector<std::vector<OpId>> nested_users(p_.op_count());
    for (OpId id = 0; id < p_.op_count(); ++id) {
      for (const workload::ValueRef v : p_.operands(p_.op(id))) {
        if (v.is_op_result() && p_.op(v.op()).block != p_.op(id).block) {
          const OpId ancestor = ancestor_in(id, p_.op(v.op()).block);
          if (ancestor != workload::kNoId) {
            nested_users[ancestor].push_back(v.op());
          }
        }
      }
    }
    for (BlockId block = 0; block < p_.block_count(); ++block) {
      for (const OpId id : p_.ops(p_.block(block))) {
        form_region(id, nested_users[id]);
      }
    }
    merge_closed_producers();
    // Kernels: each region of two or more members runs at its last member (program order).
    std::vector<OpId> root(region_parent_.size(), workload::kNoId);
    std::vector<std::uint32_t> size(region_parent_.size(), 0);
    for (OpId id = 0; id < p_.op_count(); ++id) {
      if (is_member_[id]) {
        const std::uint32_t r = find_set(region_[id]);
        root[r] = root[r] == workload::kNoId ? id : std::max(root[r], id);
        ++size[r];
      }
    }
    members_.resize(p_.op_count());
    for (OpId id = 0; id < p_.op_count(); ++id) {
      if (region_[id] == kNoRegion) {
        continue;
      }
      const std::uint32_t r = find_set(region_[id]);
      if (size[r] < 2 || id == root[r]) {
        continue;
      }
      costs_.ops[id].fused_into = root[r];
      if (is_member_[id]) {
        costs_.ops[id].role = CostRole::kFused;
        members_[root[r]].push_back(id);
      }
    }
    // The ops of a member's own body (a reduce's combiner) were fused into the member; they
    // belong to its kernel.
    for (OpId id = 0; id < p_.op_count(); ++id) {
      OpCost& cost = costs_.ops[id];
      while (cost.role == CostRole::kFused && costs_.ops[cost.fused_into].role == CostRole::kFused) {
        cost.fused_into = costs_.ops[cost.fused_into].fused_into;
      }
    }
  }

  // Producer-consumer fusion across a closed region. Regions form in program order, so a region
  // closes at the first outside use of one of its values even when that user's kernel runs later:
  // a batch norm's sum of x closes its kernel at the division that makes the mean, before the sum
  // of x * x (which reads the kernel's x * x) comes. XLA fuses by the graph, not the order, and
  // computes both sums in one kernel. A region K therefore takes in a region A whose values it
  // reads when
  //   - K uses no reduction result of A (a reduction's result leaves its kernel);
  //   - every other use of A's values comes after K's last member (K's kernel op): the merged
  //     kernel runs there, and nothing may need A's values before.
  // Regions are taken in the order of their kernel ops; A's kernel op is before K's. No cycle can
  // arise: any other path from A to K starts at another use of A's values, and K depends on the
  // end of that path, so that use's work would run before K's kernel op -- which the second
  // condition rules out. (tests: kStatistics and the randomized kernel-order test.)
  void merge_closed_producers() {
    const std::size_t regions = region_parent_.size();
    if (regions < 2) {
      return;
    }
    // Members and renames of each region, and each region's kernel op (its last member).
    std::vector<std::vector<OpId>> ops_of(regions);
    std::vector<OpId> root(regions, workload::kNoId);
    for (OpId id = 0; id < p_.op_count(); ++id) {
      if (region_[id] != kNoRegion) {
        const std::uint32_t r = find_set(region_[id]);
        ops_of[r].push_back(id);
        if (is_member_[id]) {
          root[r] = root[r] == workload::kNoId ? id : std::max(root[r], id);
        }
      }
    }
    // Users of each op's results in the op's block (a nested user counts as its ancestor there).
    std::vector<std::vector<OpId>> users(p_.op_count());
    for (OpId id = 0; id < p_.op_count(); ++id) {
      for (const workload::ValueRef v : p_.operands(p_.op(id))) {
        if (v.is_op_result()) {
          const OpId user = ancestor_in(id, p_.op(v.op()).block);
          if (user != workload::kNoId) {
            users[v.op()].push_back(user);
          }
        }
      }
    }
    // Where an op's work runs: its region's kernel op, or the op itself.
    const auto position = [&](OpId op) {
      return region_[op] != kNoRegion ? root[find_set(region_[op])] : op;
    };
    // The op that produces a value, through renames inside a region.
    const auto source = [&](workload::ValueRef v) {
      OpId op = v.op();
      while (region_[op] != kNoRegion && !is_member_[op] && !p_.operands(p_.op(op)).empty() &&
             p_.operands(p_.op(op))[0].is_op_result()) {
        op = p_.operands(p_.op(op))[0].op();
      }
      return op;
    };
    std::vector<std::uint32_t> order;
    for (std::uint32_t r = 0; r < regions; ++r) {
      if (find_set(r) == r && root[r] != workload::kNoId) {
        order.push_back(r);
      }
    }
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return root[a] < root[b]; });
    for (const std::uint32_t k : order) {
      // Producer regions of k, in order of first use; those k reads only scalars of, apart.
      std::vector<std::uint32_t> producers;
      std::vector<std::uint32_t> through_tensors;
      for (const OpId op : ops_of[k]) {
        for (const workload::ValueRef v : p_.operands(p_.op(op))) {
          const std::uint32_t a = region_of(v);
          if (a == kNoRegion || a == k) {
            continue;
          }
          if (std::find(producers.begin(), producers.end(), a) == producers.end()) {
            producers.push_back(a);
          }
          if (!apart_through_scalar(op, v) &&
              std::find(through_tensors.begin(), through_tensors.end(), a) == through_tensors.end()) {
            through_tensors.push_back(a);
          }
        }
      }
      for (const std::uint32_t a : producers) {
        if (find_set(a) != a || find_set(k) != k || root[a] >= root[k]) {
          continue;
        }
        const OpId kernel = root[k];
        const auto in_pair = [&](OpId op) {
          if (region_[op] == kNoRegion) {
            return false;
          }
          const std::uint32_t r = find_set(region_[op]);
          return r == a || r == k;
        };
        bool ok = true;
        // K uses no reduction result of A.
        for (const OpId op : ops_of[k]) {
          for (const workload::ValueRef v : p_.operands(p_.op(op))) {
            if (ok && region_of(v) == a) {
              const OpKind kind = p_.op(source(v)).kind;
              ok = kind != OpKind::kReduce && kind != OpKind::kReduceWindow;
            }
          }
        }
        // Every other use of A's values comes after K's kernel op. A kernel K reads only scalars
        // of is taken in only when K is its one user (XLA fuses a producer into its only consumer;
        // one shared by several stays apart, apart_through_scalar).
        const bool scalars_only =
            std::find(through_tensors.begin(), through_tensors.end(), a) == through_tensors.end();
        for (const OpId op : ops_of[a]) {
          for (const OpId user : users[op]) {
            if (ok && !in_pair(user)) {
              ok = !scalars_only && position(user) > kernel;
            }
          }
        }
        if (!ok) {
          continue;
        }
        region_parent_[a] = k;
        region_row_elements_[k] = std::max(region_row_elements_[k], region_row_elements_[a]);
        if (ops_of[k].size() < ops_of[a].size()) {
          ops_of[k].swap(ops_of[a]);  // append the shorter list: linear over all merges
        }
        ops_of[k].insert(ops_of[k].end(), ops_of[a].begin(), ops_of[a].end());
        std::vector<OpId>().swap(ops_of[a]);
      }
    }
  }

  void form_region(OpId id, const std::vector<OpId>& nested_uses) {
    const Op& op = p_.op(id);
    const auto close_uses = [&] {
      for (const workload::ValueRef v : p_.operands(op)) {
        if (const std::uint32_t r = region_of(v); r != kNoRegion) {
          region_open_[r] = false;
        }
      }
      for (const OpId producer : nested_uses) {
        if (region_[producer] != kNoRegion) {
          region_open_[find_set(region_[producer])] = false;
        }
      }
    };
    const CostRole role = costs_.ops[id].role;
    if (role == CostRole::kCompute && (fusible_kind(op.kind) || fusible_call_[id] != 0) && nested_uses.empty()) {
      // Regions whose reduction results the op uses: it cannot join them (a reduction's result
      // leaves its kernel), and, as a user from outside, closes them.
      std::vector<std::uint32_t> after_reduction;
      for (const workload::ValueRef v : p_.operands(op)) {
        const std::uint32_t r = region_of(v);
        const OpKind producer = v.is_op_result() ? p_.op(v.op()).kind : OpKind::kConstant;
        if (r != kNoRegion && (producer == OpKind::kReduce || producer == OpKind::kReduceWindow)) {
          if (const std::uint64_t row = row_epilogue(v.op(), id); row != 0) {
            row_result_[v.op()] = row;
            const auto full = p_.types().element_count(p_.value_type(p_.operands(p_.op(v.op()))[0]));
            region_row_elements_[r] = std::max(region_row_elements_[r], full.value_or(0));
          } else {
            after_reduction.push_back(r);
          }
        }
      }
      const auto allowed = [&](std::uint32_t r) {
        return r != kNoRegion && region_open_[r] &&
               std::find(after_reduction.begin(), after_reduction.end(), r) == after_reduction.end();
      };
      std::uint32_t joined = kNoRegion;
      const auto join = [&](std::uint32_t r) {
        if (!allowed(r) || r == joined) {
          return;
        }
        if (joined == kNoRegion) {
          joined = r;
        } else {
          region_parent_[r] = joined;  // merge: both open, so neither depends on the other
          region_row_elements_[joined] = std::max(region_row_elements_[joined], region_row_elements_[r]);
        }
      };
      std::uint8_t flags = 0;
      const auto results = p_.result_types(op);
      const std::uint64_t result_bytes = results.empty() ? 0 : counter_.type_bytes(results[0], flags);
      std::vector<std::uint32_t> through_scalars;  // regions the op reads only a scalar of
      for (const workload::ValueRef v : p_.operands(op)) {
        if (apart_through_scalar(id, v)) {
          if (const std::uint32_t r = region_of(v); r != kNoRegion) {
            through_scalars.push_back(r);
          }
          continue;
        }
        join(region_of(v));  // producer-consumer fusion
        // Sibling (multi-output) fusion: an open kernel that reads the same value, when that value
        // is at least as large as this op's result (reading it once saves at least as much) and
        // not a scalar (XLA's multi-output fusion skips effective scalars as shared operands).
        if ((!v.is_op_result() || region_of(v) == kNoRegion) && !one_element(v)) {
          const auto reader = readers_.find(v.key());
          const bool constant = v.is_op_result() && p_.op(v.op()).kind == OpKind::kConstant;
          if (reader != readers_.end() && !constant && counter_.value_bytes(v, flags) >= result_bytes) {
            join(find_set(reader->second));
          }
        }
      }
      for (const std::uint32_t r : after_reduction) {
        region_open_[r] = false;
      }
      for (const std::uint32_t r : through_scalars) {
        if (find_set(r) != joined) {
          region_open_[find_set(r)] = false;  // used from outside: a kernel of its own
        }
      }
      if (joined == kNoRegion) {
        joined = static_cast<std::uint32_t>(region_parent_.size());
        region_parent_.push_back(joined);
        region_open_.push_back(true);
        region_row_elements_.push_back(0);
      }
      region_[id] = joined;
      is_member_[id] = true;
      for (const workload::ValueRef v : p_.operands(op)) {
        if (region_of(v) != joined) {
          readers_[v.key()] = joined;
        }
      }
      return;
    }
    const auto operands = p_.operands(op);
    if (role == CostRole::kFree && operands.size() == 1 && p_.result_types(op).size() == 1 && nested_uses.empty() &&
        workload::op_category(op.kind) == workload::OpCategory::kDataMovement) {
      const std::uint32_t r = region_of(operands[0]);
      if (r != kNoRegion && region_open_[r]) {
        region_[id] = r;  // a rename inside the region
        return;
      }
    }
    close_uses();
  }

  // A kernel of the regions mode (one op or several): the members' FLOPs; each value from outside
  // read once (a slice reads only what it selects), or recomputed from its own inputs when its
  // producer is cheap (duplicable); the values used outside the kernel written once.
  void fuse_region(OpId root, OpSignature& signature, std::uint8_t& flags) {
    const auto inside = [&](OpId op) { return op == root || costs_.ops[op].fused_into == root; };
    std::unordered_map<std::uint64_t, std::uint64_t> reads;
    std::uint64_t written = 0;
    double flops = 0.0;
    std::uint64_t elements = 0;
    bool reduction = false;
    std::uint64_t row = 0;  // a member uses a row reduction's result inside the kernel: its row
    KernelMath math;
    bool computes = false;
    bool duplicated = false;
    std::vector<OpId> recomputed;  // duplicated producers, each counted once
    // Reads value `v` (the operand of a member, of which `selected` bytes are needed), or the
    // inputs of its producer when the kernel recomputes it.
    std::function<void(workload::ValueRef, std::uint64_t, bool)> read_value = [&](workload::ValueRef v,
                                                                                   std::uint64_t selected,
                                                                                   bool recompute) {
      if (recompute && v.is_op_result() && duplicable(v.op())) {
        if (std::find(recomputed.begin(), recomputed.end(), v.op()) == recomputed.end()) {
          recomputed.push_back(v.op());
          duplicated = true;
          count(v.op(), dup_count_);
          flags |= dup_count_.flags;
          flops += dup_count_.signature.flops.value;
          math.add(dup_count_.signature);  // a recomputed exponential makes the kernel transcendental
          computes = computes || dup_count_.signature.op_class == OpClass::kElementwise ||
                     dup_count_.signature.op_class == OpClass::kTranscendental;
          const OpKind producer = p_.op(v.op()).kind;
          for (const workload::ValueRef input : p_.operands(p_.op(v.op()))) {
            read_value(input, counter_.read_bytes(input, producer, flags), true);
          }
        }
        return;
      }
      std::uint64_t& read = reads[v.key()];
      read = std::max(read, selected);
    };
    const auto add_member = [&](OpId member, const OpCount& count) {
      flags |= count.flags;
      flops += count.signature.flops.value;
      elements = std::max(elements, count.signature.elements);
      if (count.role == CostRole::kCompute) {
        math.add(count.signature);
      }
      const Op& op = p_.op(member);
      switch (count.signature.op_class) {
        case OpClass::kReduction: reduction = true; break;
        case OpClass::kTranscendental:
        case OpClass::kElementwise: computes = true; break;
        default: break;
      }
      const auto operands = p_.operands(op);
      for (std::size_t i = 0; i < operands.size(); ++i) {
        const workload::ValueRef v = operands[i];
        if (v.is_op_result() && inside(v.op())) {
          row = std::max(row, row_result_.empty() ? 0 : row_result_[v.op()]);
          continue;
        }
        std::uint64_t bytes = counter_.read_bytes(v, reader_kind(member), flags);
        if (i == 0 && (op.kind == OpKind::kSlice || op.kind == OpKind::kDynamicSlice)) {
          bytes = std::min(bytes, count.signature.bytes_written.count);  // only the selection
          read_value(v, bytes, false);                                   // a slice is not recomputed
          continue;
        }
        read_value(v, bytes, true);
      }
      const auto results = p_.result_types(op);
      for (std::uint32_t r = 0; r < results.size(); ++r) {
        if (escapes(workload::ValueRef::op_result(member, r), root)) {
          written += counter_.type_bytes(results[r], flags);
        }
      }
    };
    add_member(root, count_);
    for (const OpId member : members_[root]) {
      count(member, member_count_);
      add_member(member, member_count_);
    }
    std::uint64_t read = 0;
    for (const auto& [key, bytes] : reads) {
      read += bytes;
    }
    signature.flops = Flops{flops};
    signature.bytes_read = Bytes{read};
    signature.bytes_written = Bytes{written};
    if (members_[root].empty() && !duplicated) {
      return;  // one op, nothing recomputed: its own kind and class
    }
    signature.kind.assign("fusion");
    signature.gemm = GemmShape{};
    signature.conv = ConvShape{};
    signature.row_length = row;  // a normalisation's rows; 0 else
    signature.elements = elements;
    signature.op_class = row != 0                ? OpClass::kNormalisation
                         : reduction             ? OpClass::kReduction
                         : math.transcendental() ? OpClass::kTranscendental
                         : computes              ? OpClass::kElementwise
                                                 : OpClass::kDataMovement;
  }

  // Producer duplication (XLA fuses a cheap producer into each consumer rather than materialise
  // it): a fused op without transcendental math (on GPU presets f32/f16 exp, sqrt and rsqrt count as
  // cheap: cheap_special_function) -- elementwise, convert, broadcast, iota -- whose
  // operands are materialised (from outside its kernel) or duplicable too, and whose recomputation
  // reads no more bytes than its result (the materialised values that it and its duplicable
  // producers read, in its own kernel or others), so recomputing it never moves more data than
  // reading its result.
  bool duplicable(OpId id) {
    if (region_.empty() || region_[id] == kNoRegion || !is_member_[id]) {
      return false;
    }
    if (duplicable_.empty()) {
      duplicable_.assign(p_.op_count(), 0);
    }
    if (duplicable_[id] != 0) {
      return duplicable_[id] == 1;
    }
    duplicable_[id] = 2;  // while deciding (the graph is acyclic: never consulted)
    const Op& op = p_.op(id);
    bool cheap = false;
    switch (op.kind) {
      case OpKind::kBroadcast:
      case OpKind::kBroadcastInDim:
      case OpKind::kIota: cheap = true; break;
      default:
        cheap = workload::op_category(op.kind) == workload::OpCategory::kElementwise;
        break;
    }
    std::uint64_t result_bytes = 0;
    if (cheap) {
      counter_.count(id, dup_count_);
      cheap = (dup_count_.signature.op_class != OpClass::kTranscendental || cheap_special_function(op)) &&
              p_.result_types(op).size() == 1;
      result_bytes = dup_count_.signature.bytes_written.count;
    }
    const std::uint32_t region = find_set(region_[id]);
    for (const workload::ValueRef v : p_.operands(op)) {
      if (!cheap) {
        break;
      }
      if (v.is_op_result() && region_[v.op()] != kNoRegion && find_set(region_[v.op()]) == region) {
        // A value of its own kernel: recomputed too, or read when the kernel writes it anyway.
        cheap = duplicable(v.op()) || escapes(v, kernel_of(v.op()));
      }
    }
    cheap = cheap && recompute_reads(id) <= result_bytes;
    duplicable_[id] = cheap ? 1 : 2;
    return cheap;
  }

  // Row-reduction kernels (GPU presets): XLA's GPU backend runs a softmax or an RMS norm -- a
  // reduction over a tensor's innermost dimension(s) whose per-row result the row's own elements
  // then use -- as one kernel that holds each row on chip, where other reductions end their
  // kernel. Op `user` may join the kernel of reduce `reduce` when the reduce takes one operand over
  // its trailing dimensions, a row of at most kMaxFusedRow elements, and `user`'s result has one
  // element per row or per element of the reduced operand. The kernel writes the reduction's
  // per-row result (row_result_): small, and what a later kernel needs to recompute the row's
  // values instead of reading them (a softmax's backward pass, its probabilities).
  // Returns the row length (elements), or 0 when `user` may not join. (Element counts only: a
  // result with one element per row joins whatever its layout.)
  static constexpr std::uint64_t kMaxFusedRow = 16384;
  std::uint64_t row_epilogue(OpId reduce, OpId user) const {
    const Op& r = p_.op(reduce);
    if (!gpu_rules_ || r.kind != OpKind::kReduce || !p_.has_payload(r) || p_.operands(r).size() != 2) {
      return 0;
    }
    const workload::TypeId input = p_.value_type(p_.operands(r)[0]);
    if (!p_.types().is_tensor(input) || !p_.types().is_static(input)) {
      return 0;
    }
    const auto dims = p_.types().dimensions(input);
    const auto listed = p_.ints(p_.reduce(r).dimensions);
    std::vector<std::int64_t> reduced(listed.begin(), listed.end());
    std::sort(reduced.begin(), reduced.end());
    if (reduced.empty() || reduced.size() > dims.size()) {
      return 0;  // (a malformed list is the frontend's to report; it never joins)
    }
    std::uint64_t row = 1;
    const std::size_t first = dims.size() - reduced.size();  // the trailing dimensions
    for (std::size_t i = 0; i < reduced.size(); ++i) {
      if (reduced[i] != static_cast<std::int64_t>(first + i) || dims[first + i] <= 0) {
        return 0;
      }
      row *= static_cast<std::uint64_t>(dims[first + i]);
      if (row > kMaxFusedRow) {
        return 0;
      }
    }
    const auto full = p_.types().element_count(input);
    const auto results = p_.result_types(p_.op(user));
    if (!full || results.size() != 1) {
      return 0;
    }
    const auto elements = p_.types().element_count(results[0]);
    const bool fits = elements && (*elements == *full || (*full % row == 0 && *elements == *full / row));
    return fits ? row : 0;
  }

  // Tree reductions (GPU presets, XLA's TreeReductionRewriter): XLA's GPU reduction kernels
  // accumulate without atomics only up to a bound -- a row of at most kRaceFreeRow elements
  // (kMaxFusedRow) with at most kRaceFreeBatch reduced major rows, a column of at most
  // kRaceFreeColumn elements -- and splits a longer reduction into two: the first stage (the kernel
  // Orrery costs, fused with its producers) reduces the reduced extent k to k1 partial results per
  // output, a second kernel of its own reduces those. k = k1 x k2 with k2 near sqrt(k), chosen as
  // XLA chooses it (least padding, a power of two on ties, then its rule for which factor the first
  // stage reduces: the larger for a column, the one its vectorisation prefers for a row). Returns
  // the partial results per output (the factor the second stage reduces), or 0 when the reduction
  // is race-free or not from or to contiguous dimensions (row-major layouts, dimensions of size 1
  // ignored).
  static constexpr std::uint64_t kRaceFreeRow = kMaxFusedRow;
  static constexpr std::uint64_t kRaceFreeBatch = 8;
  static constexpr std::uint64_t kRaceFreeColumn = 4096;
  std::uint64_t tree_partials(OpId reduce) const {
    const Op& r = p_.op(reduce);
    if (r.kind != OpKind::kReduce || !p_.has_payload(r)) {
      return 0;
    }
    const auto operands = p_.operands(r);
    if (operands.empty()) {
      return 0;
    }
    const workload::TypeId input = p_.value_type(operands[0]);
    if (!p_.types().is_tensor(input) || !p_.types().is_static(input)) {
      return 0;
    }
    const auto dims = p_.types().dimensions(input);
    const auto listed = p_.ints(p_.reduce(r).dimensions);
    // Dimensions grouped into runs of reduced or kept ones (XLA's ReductionDimensionGrouper).
    std::vector<std::pair<bool, std::uint64_t>> runs;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] <= 0) {
        return 0;
      }
      if (dims[d] == 1) {
        continue;
      }
      const bool reduced =
          std::find(listed.begin(), listed.end(), static_cast<std::int64_t>(d)) != listed.end();
      if (!runs.empty() && runs.back().first == reduced) {
        runs.back().second *= static_cast<std::uint64_t>(dims[d]);
      } else {
        runs.emplace_back(reduced, static_cast<std::uint64_t>(dims[d]));
      }
    }
    if (runs.empty() || runs.size() > 3 || (runs.size() == 1 && !runs[0].first)) {
      return 0;  // nothing reduced, or not from or to contiguous dimensions (XLA's ReductionSplitter)
    }
    const bool row = runs.back().first;  // the minor dimension is reduced (runs alternate)
    if (row && runs.size() == 3 && runs[0].second > kRaceFreeBatch) {
      return runs[0].second;  // the minor run first, then the batched major run in a second kernel
    }
    const std::uint64_t k = row ? runs.back().second : runs[runs.size() == 3 ? 1 : 0].second;
    const std::uint64_t bound = row ? kRaceFreeRow : kRaceFreeColumn;
    if (k <= bound) {
      return 0;
    }
    const auto padding = [k](std::uint64_t i) { return (i - k % i) % i; };
    const auto power_of_two = [](std::uint64_t i) { return (i & (i - 1)) == 0; };
    std::uint64_t k2 =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(std::sqrt(static_cast<double>(k))), bound);
    while (k2 * k2 > k) {
      --k2;  // floor(sqrt(k)) exactly, whatever the double rounding
    }
    std::uint64_t least = padding(k2);
    std::uint64_t k1 = (k + least) / k2;
    for (std::uint64_t i = k2 - 1; i > k2 / 2; --i) {
      const std::uint64_t pad = padding(i);
      if (pad < least || (pad == least && power_of_two(i))) {
        least = pad;
        k1 = (k + pad) / i;
      }
    }
    k2 = (k + least) / k1;
    // XLA keeps the larger factor in the first stage when that stage stays race-free (for a row
    // reduction only where its vectorisation allows; columns always).
    bool swap = k1 <= bound;
    if (swap && row) {
      swap = (k2 % 2 == 0 && k % 2 == 0) ? (k2 * 2 < k1 || k1 % 2 == 0) : (k % 2 == 0 || k1 % 2 != 0);
    }
    return swap ? k2 : k1;
  }

  // Calls f(reduce, partials) for each reduce of the kernel at `root` that XLA splits
  // (tree_partials).
  template <typename F>
  void for_each_split_reduce(OpId root, F&& f) const {
    const auto visit = [&](OpId op) {
      if (const std::uint64_t partials = tree_partials(op); partials != 0) {
        f(op, partials);
      }
    };
    visit(root);
    if (!members_.empty()) {
      for (const OpId member : members_[root]) {
        visit(member);
      }
    }
  }

  // A reduce's results: their bytes, and the element count and type of the first.
  struct ReduceResults {
    std::uint64_t bytes = 0;
    std::uint64_t outputs = 1;
    ElementType element = ElementType::kF32;
  };
  ReduceResults reduce_results(OpId reduce, std::uint8_t& flags) const {
    ReduceResults out;
    bool first = true;
    for (const workload::TypeId t : p_.result_types(p_.op(reduce))) {
      out.bytes += counter_.type_bytes(t, flags);
      if (const auto n = p_.types().element_count(t); n && first) {
        out.outputs = std::max<std::uint64_t>(*n, 1);
        out.element = compute_element_type(p_.types().element(t));
        first = false;
      }
    }
    return out;
  }

  // The first stage of a split reduction writes its partial results in place of the results: the
  // bytes that adds to the kernel's writes (before it is estimated).
  Bytes tree_partial_writes(OpId root, std::uint8_t& flags) const {
    Bytes extra;
    for_each_split_reduce(root, [&](OpId reduce, std::uint64_t partials) {
      extra += Bytes{reduce_results(reduce, flags).bytes} * (partials - 1);
    });
    return extra;
  }

  // The second-stage kernels of the kernel at `root`: one per split reduce, of class reduction,
  // reading the partial results and writing the results, priced by the same model. Adds their
  // time, work and launches to `cost` (the kernel's class stays its first stage's); returns their
  // time.
  SimTime add_tree_stages(OpId root, OpCost& cost) {
    SimTime added;
    for_each_split_reduce(root, [&](OpId reduce, std::uint64_t partials) {
      std::uint8_t flags = 0;
      const ReduceResults results = reduce_results(reduce, flags);
      OpSignature second;
      second.op_class = OpClass::kReduction;
      second.kind = "reduce";
      second.element_type = results.element;
      second.elements = results.outputs;
      second.row_length = partials;
      second.flops = Flops{static_cast<double>(results.outputs) * static_cast<double>(partials)};
      second.bytes_read = Bytes{results.bytes} * partials;
      second.bytes_written = Bytes{results.bytes};
      const Estimate& estimate = model_.estimate(second);
      ++costs_.estimates;
      added += estimate.time;
      cost.flags |= flags;
      cost.flops += second.flops;
      cost.bytes_read += second.bytes_read;
      cost.bytes_written += second.bytes_written;
      ++cost.launches;
    });
    cost.time += added;
    return added;
  }

  // On GPUs XLA counts f32 and f16 exponentials, square roots and reciprocal square roots as cheap
  // (GpuInstructionFusion::IsExpensive) and recomputes them like any elementwise op: the backward
  // pass of a softmax recomputes its probabilities from the scores. TPU-like presets (a systolic
  // section) keep them expensive, as XLA's default rule does.
  bool cheap_special_function(const Op& op) const {
    if (!gpu_rules_ ||
        (op.kind != OpKind::kExponential && op.kind != OpKind::kSqrt && op.kind != OpKind::kRsqrt)) {
      return false;
    }
    const auto results = p_.result_types(op);
    const workload::ElementType element =
        results.empty() ? workload::ElementType::kUnknown : p_.types().element(results[0]);
    return element == workload::ElementType::kF32 || element == workload::ElementType::kF16;
  }

  // The kernel op that region member `id` belongs to.
  OpId kernel_of(OpId id) const {
    const OpCost& cost = costs_.ops[id];
    return cost.role == CostRole::kFused ? cost.fused_into : id;
  }

  // The bytes a kernel reads to recompute duplicable op `id`: each distinct value that the op and
  // its duplicable producers read and that is materialised (not duplicable: from outside every
  // region, or written by its kernel): a convert of an f16 tensor times a constant reads the f16
  // tensor, and so does a batch norm's convert(x) - mean, whose convert belongs to the kernel of
  // the sum (XLA recomputes such values in the backward pass rather than keep them). Saturates
  // above kMaxRecomputeOps ops (never duplicable then).
  static constexpr std::size_t kMaxRecomputeOps = 64;
  std::uint64_t recompute_reads(OpId id) {
    std::vector<OpId> stack{id};
    std::vector<OpId> visited{id};
    std::vector<std::uint64_t> leaves;
    std::uint64_t bytes = 0;
    std::uint8_t flags = 0;
    while (!stack.empty()) {
      const OpId at = stack.back();
      stack.pop_back();
      for (const workload::ValueRef v : p_.operands(p_.op(at))) {
        if (v.is_op_result() && region_[v.op()] != kNoRegion && duplicable(v.op())) {
          if (std::find(visited.begin(), visited.end(), v.op()) == visited.end()) {
            if (visited.size() == kMaxRecomputeOps) {
              return std::numeric_limits<std::uint64_t>::max();
            }
            visited.push_back(v.op());
            stack.push_back(v.op());
          }
          continue;
        }
        if (std::find(leaves.begin(), leaves.end(), v.key()) == leaves.end()) {
          leaves.push_back(v.key());
          // A scalar or splat constant is an immediate of the generated kernel, not a read.
          const std::uint64_t read = counter_.read_bytes(v, p_.op(at).kind, flags);
          const bool immediate = v.is_op_result() && p_.op(v.op()).kind == OpKind::kConstant && read <= 8;
          bytes += immediate ? 0 : read;
        }
      }
    }
    return bytes;
  }

  // Whether a value of kernel `root` is used outside it (directly or through renames), or is a row
  // kernel's per-row reduction result (row_epilogue), which the kernel always writes.
  bool escapes(workload::ValueRef value, OpId root) {
    if (!row_result_.empty() && value.is_op_result() && row_result_[value.op()] != 0) {
      return true;
    }
    if (users_.empty()) {
      users_.resize(p_.op_count());
      for (OpId id = 0; id < p_.op_count(); ++id) {
        for (const workload::ValueRef v : p_.operands(p_.op(id))) {
          if (v.is_op_result()) {
            users_[v.op()].push_back({v.index(), id});
          }
        }
      }
    }
    for (const auto& [index, user] : users_[value.op()]) {
      if (index != value.index()) {
        continue;
      }
      const OpCost& cost = costs_.ops[user];
      const bool in_kernel = user == root || cost.fused_into == root;
      if (!in_kernel) {
        // A fused kernel recomputes a duplicable producer instead of reading its result (unless
        // it only slices it).
        const Op& u = p_.op(user);
        const bool recomputes = is_member_[user] && duplicable(value.op()) && u.kind != OpKind::kSlice &&
                                u.kind != OpKind::kDynamicSlice;
        if (!recomputes) {
          return true;
        }
        continue;
      }
      if (cost.role == CostRole::kFree && escapes(workload::ValueRef::op_result(user, 0), root)) {
        return true;  // a rename used outside
      }
    }
    return false;
  }

  void cost_op(OpId id) {
    OpCost& cost = costs_.ops[id];
    if (cost.role == CostRole::kFused) {
      return;
    }
    if (cost.role != CostRole::kCompute) {
      counter_.count(id, count_);  // flags, and bytes for communication
      cost.flags = count_.flags;
      if (cost.role == CostRole::kCommunication) {
        const Op& op = p_.op(id);
        std::uint8_t flags = 0;
        for (const workload::ValueRef v : p_.operands(op)) {
          cost.bytes_read += Bytes{counter_.value_bytes(v, flags)};
        }
        for (const workload::TypeId t : p_.result_types(op)) {
          cost.bytes_written += Bytes{counter_.type_bytes(t, flags)};
        }
        cost.flags |= flags;
      }
      return;
    }
    count(id, count_);
    std::uint8_t flags = count_.flags;
    if (!members_.empty()) {
      cost.fused_ops = static_cast<std::uint32_t>(members_[id].size());
    }
    if (options_.fusion == config::FusionMode::kRegions && is_member_[id]) {
      fuse_region(id, count_.signature, flags);
      if (count_.signature.bytes_written.count == 0) {
        // Every consumer recomputes this kernel's results (or none uses them): it never runs. A
        // call costed at its site marks itself (fused_into = itself) so that its callee does not
        // run for it either.
        cost.role = CostRole::kFree;
        cost.flags = flags;
        if (!fusible_call_.empty() && fusible_call_[id] != 0) {
          cost.fused_into = id;
        }
        return;
      }
    } else if (!members_.empty() && !members_[id].empty()) {
      fuse_members(id, count_.signature, flags);
    }
    const bool trees = gpu_rules_ && options_.fusion == config::FusionMode::kRegions;
    if (trees) {
      count_.signature.bytes_written += tree_partial_writes(id, flags);
    }
    const OpSignature& signature = count_.signature;
    const Estimate& estimate = model_.estimate(signature);
    ++costs_.estimates;
    cost.flags = flags;
    cost.op_class = signature.op_class;
    cost.time = estimate.time;
    cost.flops = signature.flops;
    cost.bytes_read = signature.bytes_read;
    cost.bytes_written = signature.bytes_written;
    if (model_.memoises()) {
      // The model keeps its estimates: intern their texts once per distinct estimate.
      auto [it, inserted] = texts_.try_emplace(&estimate);
      if (inserted) {
        it->second = {costs_.intern(estimate.estimator), costs_.intern(estimate.note)};
      }
      cost.estimator = it->second.first;
      cost.note = it->second.second;
    } else {
      cost.estimator = costs_.intern(estimate.estimator);
      cost.note = costs_.intern(estimate.note);
    }
    if (trees) {
      const SimTime added = add_tree_stages(id, cost);  // (after the last use of `estimate`)
      if (cost.launches > 1) {
        cost.note = costs_.intern(
            fmt::format("{}; then {} second-stage reduction kernel{} (tree reduction) {:.4g} s", cost.note,
                        cost.launches - 1, cost.launches > 2 ? "s" : "", added.seconds()));
      }
    }
  }

  // The producer's kernel also does the members' work: their FLOPs, their operands from outside
  // the chain, their results; intermediates of the chain are neither written nor read back.
  void fuse_members(OpId root, OpSignature& signature, std::uint8_t& flags) {
    std::uint64_t read = signature.bytes_read.count;
    std::uint64_t written = signature.bytes_written.count;
    KernelMath math;
    math.add(signature);
    for (const OpId member : members_[root]) {
      counter_.count(member, member_count_);
      flags |= member_count_.flags;
      math.add(member_count_.signature);
      signature.flops += member_count_.signature.flops;
      read += member_count_.signature.bytes_read.count;
      written += member_count_.signature.bytes_written.count;
      for (const workload::ValueRef v : p_.operands(p_.op(member))) {
        if (v.is_op_result() && (v.op() == root || costs_.ops[v.op()].fused_into == root)) {
          const std::uint64_t intermediate = counter_.value_bytes(v, flags);
          read -= std::min(read, intermediate);
          written -= std::min(written, intermediate);
        }
      }
    }
    signature.bytes_read = Bytes{read};
    signature.bytes_written = Bytes{written};
    // A kernel that moves data (broadcast, slice...) and computes is an elementwise kernel.
    switch (signature.op_class) {
      case OpClass::kDataMovement:
      case OpClass::kGatherScatter:
      case OpClass::kElementwise:
        signature.op_class = math.transcendental() ? OpClass::kTranscendental : OpClass::kElementwise;
        break;
      default:
        break;
    }
  }

  const Program& p_;
  ComputeModel& model_;
  const CostOptions& options_;
  OpCounter counter_;
  bool gpu_rules_;                // a GPU preset (no systolic section): cheap special functions, row kernels
  std::vector<std::uint64_t> row_result_;  // per reduce op: the row a row kernel uses in place, or 0
  ProgramCosts costs_;
  std::vector<CostRole> roles_;                   // the counting layer's role of each op
  std::vector<std::vector<OpId>> members_;        // ops fused into each kernel, by kernel op
  // kRegions: each op's region (union-find over region ids), members and renames.
  static constexpr std::uint32_t kNoRegion = 0xffffffffU;
  std::vector<std::uint32_t> region_;
  std::vector<bool> is_member_;
  std::vector<std::uint32_t> region_parent_;
  std::vector<bool> region_open_;
  // Elements of the input of the GPU row reduction a region uses in place (the largest), or 0.
  std::vector<std::uint64_t> region_row_elements_;
  std::vector<std::vector<std::pair<std::uint32_t, OpId>>> users_;  // (result index, user) per op
  std::vector<std::uint8_t> duplicable_;                              // 0 unknown, 1 yes, 2 no
  std::unordered_map<std::uint64_t, std::uint32_t> readers_;          // outside value -> a region reading it
  std::vector<std::uint8_t> fusible_call_;  // kRegions: calls costed as one elementwise op
  OpCount call_count_;
  OpCount dup_count_;
  OpCount count_;
  OpCount member_count_;
  std::unordered_map<const Estimate*, std::pair<std::string_view, std::string_view>> texts_;
};

std::string op_display_name(const Program& p, const Op& op) {
  std::string name(p.op_name(op));
  if (op.kind == OpKind::kCustomCall && p.has_payload(op)) {
    name += " @";
    name += p.string(p.custom_call(op).target);
  }
  return name;
}

std::string_view flag_reason(std::uint8_t flags) {
  if ((flags & kFlagUnknownCustomCall) != 0) {
    return "unknown custom-call target: bytes only";
  }
  if ((flags & kFlagUnknownOp) != 0) {
    return "unknown op: bytes only";
  }
  if ((flags & kFlagOpaque) != 0) {
    return "other dialect: free";
  }
  if ((flags & kFlagHostTransfer) != 0) {
    return "host transfer: not modelled";
  }
  return "a size unknown: counted as 0 bytes";
}

class ExecutionWalker {
 public:
  ExecutionWalker(const Program& program, const ProgramCosts& costs)
      : p_(program), costs_(costs), functions_(program.functions().size()), state_(program.functions().size(), 0) {}

  ExecutionTotals run() {
    if (p_.entry_function() != workload::kNoId) {
      return function(p_.entry_function());
    }
    ExecutionTotals totals;
    for (workload::FunctionId f = 0; f < p_.functions().size(); ++f) {
      totals.add(function(f), 1);
    }
    return totals;
  }

 private:
  const ExecutionTotals& function(workload::FunctionId id) {
    if (state_[id] == 2) {
      return functions_[id];
    }
    if (state_[id] == 1) {
      throw OrreryError(ErrorCode::kUnsupported, "recursive call of @" + std::string(p_.string(p_.function(id).name)) +
                                                     ": its execution count is unbounded");
    }
    state_[id] = 1;
    ExecutionTotals totals;
    const workload::Function& f = p_.function(id);
    if (f.body != workload::kNoId) {
      totals = region(f.body);
    }
    functions_[id] = std::move(totals);
    state_[id] = 2;
    return functions_[id];
  }

  ExecutionTotals region(RegionId id) {
    ExecutionTotals totals;
    for (const BlockId block : p_.blocks(p_.region(id))) {
      for (const OpId op : p_.ops(p_.block(block))) {
        visit(op, totals);
      }
    }
    return totals;
  }

  void visit(OpId id, ExecutionTotals& into) {
    const Op& op = p_.op(id);
    const OpCost& cost = costs_.ops[id];
    ++into.role_executions[static_cast<std::size_t>(cost.role)];
    switch (cost.role) {
      case CostRole::kCompute: {
        into.flops += cost.flops;
        into.bytes_read += cost.bytes_read;
        into.bytes_written += cost.bytes_written;
        into.time += cost.time;
        ClassTotals& c = into.classes[static_cast<std::size_t>(cost.op_class)];
        ++c.executions;
        c.launches += cost.launches;
        into.launches += cost.launches;
        c.flops += cost.flops;
        c.bytes_read += cost.bytes_read;
        c.bytes_written += cost.bytes_written;
        c.time += cost.time;
        ++into.estimators[std::string(cost.estimator)];
        ++into.kernels[id];
        break;
      }
      case CostRole::kFree:
        ++into.free_ops[op_display_name(p_, op)];
        break;
      case CostRole::kCommunication:
        ++into.communication[op_display_name(p_, op)];
        break;
      case CostRole::kFused:
        break;
    }
    if (cost.flags != 0) {
      ++into.approximate[op_display_name(p_, op) + " (" + std::string(flag_reason(cost.flags)) + ")"];
    }
    const auto regions = p_.regions(op);
    switch (op.kind) {
      case OpKind::kWhile: {
        const std::uint64_t trips = p_.trip_count_or_throw(id);
        if (regions.size() >= 2) {
          into.add(region(regions[0]), trips + 1);
          into.add(region(regions[1]), trips);
        }
        return;
      }
      case OpKind::kIf:
      case OpKind::kCase: {
        // The costliest branch: an upper bound of one execution.
        ExecutionTotals best;
        bool first = true;
        for (const RegionId r : regions) {
          ExecutionTotals branch = region(r);
          if (first || branch.time > best.time) {
            best = std::move(branch);
            first = false;
          }
        }
        into.add(best, 1);
        return;
      }
      case OpKind::kCall:
      case OpKind::kComposite:
        if (cost.role == CostRole::kCompute || cost.role == CostRole::kFused || cost.fused_into == id) {
          return;  // a call costed at its site (a fusible call, or a dead one): its callee does not run
        }
        if (p_.has_payload(op) && p_.call(op).callee != workload::kNoId) {
          into.add(function(p_.call(op).callee), 1);
        }
        return;
      case OpKind::kFusion:
        return;  // its ops are part of its kernel
      default:
        if (workload::has_executed_regions(op.kind)) {
          for (const RegionId r : regions) {
            into.add(region(r), 1);
          }
        }
        return;
    }
  }

  const Program& p_;
  const ProgramCosts& costs_;
  std::vector<ExecutionTotals> functions_;
  std::vector<std::uint8_t> state_;  // 0 not visited, 1 in progress, 2 done
};

}  // namespace

void ExecutionTotals::add(const ExecutionTotals& other, std::uint64_t times) {
  if (times == 0) {
    return;
  }
  const double scale = static_cast<double>(times);
  flops += Flops{other.flops.value * scale};
  bytes_read += other.bytes_read * times;
  bytes_written += other.bytes_written * times;
  time += other.time * times;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    ClassTotals& c = classes[i];
    const ClassTotals& o = other.classes[i];
    c.executions += o.executions * times;
    c.launches += o.launches * times;
    c.flops += Flops{o.flops.value * scale};
    c.bytes_read += o.bytes_read * times;
    c.bytes_written += o.bytes_written * times;
    c.time += o.time * times;
  }
  for (std::size_t i = 0; i < role_executions.size(); ++i) {
    role_executions[i] += other.role_executions[i] * times;
  }
  launches += other.launches * times;
  const auto merge = [times](std::map<std::string, std::uint64_t>& mine,
                             const std::map<std::string, std::uint64_t>& theirs) {
    for (const auto& [key, count] : theirs) {
      mine[key] += count * times;
    }
  };
  merge(estimators, other.estimators);
  merge(free_ops, other.free_ops);
  merge(communication, other.communication);
  merge(approximate, other.approximate);
  for (const auto& [op, count] : other.kernels) {
    kernels[op] += count * times;
  }
}

ProgramCosts cost_program(const Program& program, ComputeModel& model, const CostOptions& options) {
  return ProgramCoster(program, model, options).run();
}

ExecutionTotals execution_totals(const Program& program, const ProgramCosts& costs) {
  return ExecutionWalker(program, costs).run();
}

}  // namespace orrery::compute
