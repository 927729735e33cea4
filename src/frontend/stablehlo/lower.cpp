#include "frontend/stablehlo/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "frontend/stablehlo/attribute_reader.h"
#include "frontend/stablehlo/name_cache.h"
#include "frontend/stablehlo/trip_count.h"
#include "workload/collectives.h"

namespace orrery::frontend::stablehlo {

using workload::Attribute;
using workload::CollectiveAttributes;
using workload::CollectiveKind;
using workload::IntRange;
using workload::kNoId;
using workload::Op;
using workload::OpCategory;
using workload::OpId;
using workload::OpKind;
using workload::Program;

namespace {

using Ints = std::vector<std::int64_t>;

// Devices one program may span (partitions x replicas): far beyond the 32K-device clusters Orrery
// simulates, and small enough that device ids and group tables stay in 32 bits and in memory.
constexpr std::int64_t kMaxDevices = std::int64_t{1} << 20;

class Lowering {
 public:
  Lowering(ModuleDraft& draft, const AttributeAliases& aliases, const Options& options,
           Diagnostics& diagnostics)
      : draft_(draft),
        builder_(draft.builder),
        program_(draft.builder.program()),
        aliases_(aliases),
        options_(options),
        diagnostics_(diagnostics) {}

  Status run();

 private:
  Status lower_module_attributes();
  Status lower_mesh(const Op& op);
  Status lower_op(OpId id);
  Status lower_dot(OpId id, const Op& op);
  Status lower_convolution(OpId id, const Op& op);
  Status lower_conv_layout(const Attribute& a, workload::ConvolutionDimensions& c, std::size_t& spatial);
  Status lower_pretty_window(const Attribute& a, Ints& strides, Ints& padding, Ints& lhs, Ints& rhs,
                             Ints& reverse);
  Status lower_reduce(OpId id, const Op& op);
  Status lower_window(OpId id, const Op& op);
  Status lower_gather(OpId id, const Op& op);
  Status lower_scatter(OpId id, const Op& op);
  Status lower_sort(OpId id, const Op& op);
  Status lower_custom_call(OpId id, const Op& op);
  Status lower_compare(OpId id, const Op& op);
  Status lower_collective(OpId id, const Op& op);
  Status lower_replica_groups(const Attribute& a, CollectiveAttributes& c);
  Status lower_call(OpId id, const Op& op);
  Status lower_loops();
  void choose_entry_function();
  void classify_form();

  // Attribute access: the op's attribute `name` (aliases resolved), or nullptr.
  [[nodiscard]] const Attribute* find(const Op& op, std::string_view name);
  // The module's id for a name, kNoId when no string of the module has it (cached).
  [[nodiscard]] workload::StringId name_id(std::string_view name);
  AttributeReader reader(const Attribute& a) {
    return AttributeReader(program_.source().text, a.offset, a.length, program_.string(a.name), anchor_,
                           diagnostics_);
  }
  // An error at the current op (MLIR's verifier reports at the op).
  Status fail(std::string message) { return diagnostics_.error_at(anchor_, std::move(message)); }
  Status check_call_signature(const Op& op, std::string_view name, const workload::Function& callee);
  bool device_counts_declared_ = false;  // the module has mhlo.num_replicas or mhlo.num_partitions
  Status read_int(const Op& op, std::string_view name, std::int64_t& value);
  Status read_ints(const Op& op, std::string_view name, Ints& values, Ints* shape = nullptr);
  Status read_bool(const Op& op, std::string_view name, bool& value);
  // `values`, or `count` copies of `fill` when empty; an error when the size is not `count`.
  Status sized(std::string_view name, Ints& values, std::size_t count, std::int64_t fill);
  IntRange ints(const Ints& values) { return builder_.add_ints(values); }
  // The kind of a region's single computing op (kAdd for `{ add; return }`), else kUnknown.
  [[nodiscard]] OpKind body_kind(const Op& op, std::size_t region) const;
  [[nodiscard]] std::size_t rank_of_operand(const Op& op, std::size_t index) const;

  ModuleDraft& draft_;
  workload::ProgramBuilder& builder_;
  const Program& program_;
  const AttributeAliases& aliases_;
  const Options& options_;
  Diagnostics& diagnostics_;
  Attribute resolved_;        // storage for an alias-resolved attribute returned by find()
  std::uint32_t anchor_ = 0;  // where errors about the op being lowered are reported
  NameCache<workload::StringId, 64> name_ids_;
};

workload::StringId Lowering::name_id(std::string_view name) {
  if (const workload::StringId* cached = name_ids_.find(name)) {
    return *cached;
  }
  const workload::StringId id = builder_.find_string(name).value_or(kNoId);
  name_ids_.insert(name, id);
  return id;
}

const Attribute* Lowering::find(const Op& op, std::string_view name) {
  const workload::StringId id = name_id(name);
  if (id == kNoId) {
    return nullptr;  // no op of the module has an attribute of that name
  }
  for (const Attribute& a : program_.attributes(op)) {
    if (a.name != id) {
      continue;
    }
    const std::string_view text = program_.attribute_text(a);
    if (!text.empty() && text[0] == '#' && text.find('<') == std::string_view::npos) {
      if (const auto alias = aliases_.find(text); alias != aliases_.end()) {
        resolved_ = Attribute{
            a.name, static_cast<std::uint32_t>(alias->second.data() - program_.source().text.data()),
            static_cast<std::uint32_t>(alias->second.size())};
        return &resolved_;
      }
    }
    return &a;
  }
  return nullptr;
}

Status Lowering::read_int(const Op& op, std::string_view name, std::int64_t& value) {
  const Attribute* a = find(op, name);
  if (a == nullptr) {
    return Status::success();
  }
  AttributeReader r = reader(*a);
  return r.read_int(value);
}

Status Lowering::read_ints(const Op& op, std::string_view name, Ints& values, Ints* shape) {
  const Attribute* a = find(op, name);
  if (a == nullptr) {
    return Status::success();
  }
  AttributeReader r = reader(*a);
  return r.read_int_list(values, shape);
}

Status Lowering::read_bool(const Op& op, std::string_view name, bool& value) {
  const Attribute* a = find(op, name);
  if (a == nullptr) {
    return Status::success();
  }
  if (a->length == 0) {  // a unit attribute
    value = true;
    return Status::success();
  }
  std::int64_t v = 0;
  AttributeReader r = reader(*a);
  ORRERY_TRY(r.read_int(v));
  value = v != 0;
  return Status::success();
}

Status Lowering::sized(std::string_view name, Ints& values, std::size_t count, std::int64_t fill) {
  if (values.empty()) {
    values.assign(count, fill);
    return Status::success();
  }
  if (values.size() != count) {
    return fail("malformed " + std::string(name) + ": expected " + std::to_string(count) +
                " entries, found " + std::to_string(values.size()));
  }
  return Status::success();
}

OpKind Lowering::body_kind(const Op& op, std::size_t region) const {
  const auto regions = program_.regions(op);
  if (region >= regions.size()) {
    return OpKind::kUnknown;
  }
  const auto blocks = program_.blocks(program_.region(regions[region]));
  if (blocks.size() != 1) {
    return OpKind::kUnknown;
  }
  const auto ops = program_.ops(program_.block(blocks[0]));
  if (ops.size() != 2 || program_.op(ops[1]).kind != OpKind::kReturn) {
    return OpKind::kUnknown;
  }
  return program_.op(ops[0]).kind;
}

std::size_t Lowering::rank_of_operand(const Op& op, std::size_t index) const {
  const auto operands = program_.operands(op);
  return index < operands.size() ? program_.types().rank(program_.value_type(operands[index])) : 0;
}

Status Lowering::run() {
  ORRERY_TRY(lower_module_attributes());
  for (const OpId id : draft_.module_ops) {
    if (program_.op(id).kind == OpKind::kMesh) {
      ORRERY_TRY(lower_mesh(program_.op(id)));
    }
  }
  for (OpId id = 0; id < program_.op_count(); ++id) {
    ORRERY_TRY(lower_op(id));
  }
  choose_entry_function();
  ORRERY_TRY(lower_loops());
  classify_form();
  return Status::success();
}

Status Lowering::lower_module_attributes() {
  anchor_ = program_.source_begin();
  std::int64_t partitions = 1;
  std::int64_t replicas = 1;
  for (const Attribute& a : program_.module_attributes()) {
    const std::string_view name = program_.string(a.name);
    if (name == "mhlo.num_partitions" || name == "mhlo.num_replicas") {
      std::int64_t value = 0;
      AttributeReader r = reader(a);
      ORRERY_TRY(r.read_int(value));
      if (value < 1 || value > kMaxDevices) {
        return r.fail("expected a count between 1 and " + std::to_string(kMaxDevices));
      }
      (name == "mhlo.num_partitions" ? partitions : replicas) = value;
      device_counts_declared_ = true;
    }
  }
  if (partitions * replicas > kMaxDevices) {
    return fail("mhlo.num_partitions x mhlo.num_replicas is " + std::to_string(partitions * replicas) +
                " devices; Orrery supports up to " + std::to_string(kMaxDevices) + " per program");
  }
  builder_.set_device_counts(static_cast<std::uint32_t>(partitions), static_cast<std::uint32_t>(replicas));
  return Status::success();
}

// sdy.mesh @name = <["x"=2, "y"=4]> (an optional `, device_ids=[...]` follows the axes).
Status Lowering::lower_mesh(const Op& op) {
  anchor_ = op.offset;
  const Attribute* name = find(op, "sym_name");
  const Attribute* mesh = find(op, "mesh");
  if (name == nullptr || mesh == nullptr) {
    return fail("sdy.mesh needs a name and axes: sdy.mesh @name = <[\"x\"=2]>");
  }
  std::vector<std::pair<workload::StringId, std::int64_t>> axes;
  AttributeReader r = reader(*mesh);
  ORRERY_TRY(r.expect(TokenKind::kLess));
  ORRERY_TRY(r.expect(TokenKind::kLeftSquare));
  while (r.token().is(TokenKind::kString)) {
    const std::string_view axis = r.token().text.substr(1, r.token().text.size() - 2);
    r.next();
    ORRERY_TRY(r.expect(TokenKind::kEqual));
    std::int64_t size = 0;
    ORRERY_TRY(r.read_int(size));
    if (size < 1) {
      return r.fail("mesh axis sizes must be positive");
    }
    axes.emplace_back(builder_.intern(axis), size);
    if (!r.token().is(TokenKind::kComma)) {
      break;
    }
    r.next();
  }
  ORRERY_TRY(r.expect(TokenKind::kRightSquare));
  builder_.add_mesh(builder_.intern(program_.attribute_text(*name).substr(1)), axes);
  return Status::success();
}

Status Lowering::lower_op(OpId id) {
  const Op& op = program_.op(id);
  anchor_ = op.offset;
  switch (op.kind) {
    case OpKind::kDot:
    case OpKind::kDotGeneral:
      return lower_dot(id, op);
    case OpKind::kConvolution:
    case OpKind::kDynamicConv:
      return lower_convolution(id, op);
    case OpKind::kReduce:
      return lower_reduce(id, op);
    case OpKind::kReduceWindow:
    case OpKind::kSelectAndScatter:
      return lower_window(id, op);
    case OpKind::kGather:
    case OpKind::kDynamicGather:
      return lower_gather(id, op);
    case OpKind::kScatter:
      return lower_scatter(id, op);
    case OpKind::kSort:
      return lower_sort(id, op);
    case OpKind::kCustomCall:
      return lower_custom_call(id, op);
    case OpKind::kCompare:
      return lower_compare(id, op);
    case OpKind::kCall:
    case OpKind::kComposite:
      return lower_call(id, op);
    default:
      if (workload::op_category(op.kind) == OpCategory::kCollective) {
        return lower_collective(id, op);
      }
      return Status::success();
  }
}

// dot_general: `dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], ...>`, or the
// pretty `batching_dims = [0] x [0], contracting_dims = [2] x [1]`. dot: lhs's last dimension
// contracts with rhs's first.
Status Lowering::lower_dot(OpId id, const Op& op) {
  Ints lhs_batch;
  Ints rhs_batch;
  Ints lhs_contract;
  Ints rhs_contract;
  if (op.kind == OpKind::kDot) {
    const std::size_t rank = rank_of_operand(op, 0);
    lhs_contract.push_back(rank == 0 ? 0 : static_cast<std::int64_t>(rank) - 1);
    rhs_contract.push_back(0);
  } else if (const Attribute* a = find(op, "dot_dimension_numbers")) {
    AttributeReader r = reader(*a);
    ORRERY_TRY(r.read_record([&](std::string_view key) {
      if (key == "lhs_batching_dimensions") return r.read_int_list(lhs_batch);
      if (key == "rhs_batching_dimensions") return r.read_int_list(rhs_batch);
      if (key == "lhs_contracting_dimensions") return r.read_int_list(lhs_contract);
      if (key == "rhs_contracting_dimensions") return r.read_int_list(rhs_contract);
      return r.skip_value();
    }));
  } else {
    auto pair = [&](std::string_view name, Ints& lhs, Ints& rhs) {
      const Attribute* dims = find(op, name);
      if (dims == nullptr) {
        return Status::success();
      }
      AttributeReader r = reader(*dims);
      ORRERY_TRY(r.read_int_list(lhs));
      if (!r.token().is_keyword("x")) {
        return r.fail("expected '[lhs] x [rhs]'");
      }
      r.next();
      return r.read_int_list(rhs);
    };
    ORRERY_TRY(pair("batching_dims", lhs_batch, rhs_batch));
    ORRERY_TRY(pair("contracting_dims", lhs_contract, rhs_contract));
  }
  if (lhs_batch.size() != rhs_batch.size() || lhs_contract.size() != rhs_contract.size()) {
    return fail(
        "malformed dot dimension numbers: lhs and rhs list different numbers of "
        "batching or contracting dimensions");
  }
  builder_.set_payload(
      id, workload::DotDimensions{ints(lhs_batch), ints(rhs_batch), ints(lhs_contract), ints(rhs_contract)});
  return Status::success();
}

// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`: the position of each letter or spatial index in the
// input, kernel and output layouts. Also `#stablehlo.conv<raw input_batch_dimension = 0, ...>`.
Status Lowering::lower_conv_layout(const Attribute& a, workload::ConvolutionDimensions& c,
                                   std::size_t& spatial) {
  AttributeReader r = reader(a);
  Ints input_spatial;
  Ints kernel_spatial;
  Ints output_spatial;
  const bool wrapped = r.token().is(TokenKind::kHashIdentifier);
  if (wrapped) {
    r.next();
    ORRERY_TRY(r.expect(TokenKind::kLess));
  }
  if (r.token().is_keyword("raw")) {
    r.next();
    while (r.token().is(TokenKind::kBareIdentifier)) {
      const std::string_view key = r.token().text;
      r.next();
      ORRERY_TRY(r.expect(TokenKind::kEqual));
      Ints values;
      ORRERY_TRY(r.read_int_list(values));
      const std::int64_t first = values.empty() ? 0 : values[0];
      if (key == "input_batch_dimension") c.input_batch = first;
      if (key == "input_feature_dimension") c.input_feature = first;
      if (key == "input_spatial_dimensions") input_spatial = values;
      if (key == "kernel_input_feature_dimension") c.kernel_input_feature = first;
      if (key == "kernel_output_feature_dimension") c.kernel_output_feature = first;
      if (key == "kernel_spatial_dimensions") kernel_spatial = values;
      if (key == "output_batch_dimension") c.output_batch = first;
      if (key == "output_feature_dimension") c.output_feature = first;
      if (key == "output_spatial_dimensions") output_spatial = values;
      if (!r.token().is(TokenKind::kComma)) {
        break;
      }
      r.next();
    }
  } else {
    // One layout: `[` entries `]`; a letter names a dimension role, an integer k the k-th spatial one.
    auto layout = [&](std::string_view letters, std::int64_t* first, std::int64_t* second,
                      Ints& spatial_dims) {
      ORRERY_TRY(r.expect(TokenKind::kLeftSquare));
      for (std::int64_t position = 0; !r.token().is(TokenKind::kRightSquare); ++position) {
        if (r.token().is(TokenKind::kInteger)) {
          std::int64_t k = 0;
          ORRERY_TRY(r.read_int(k));
          if (k < 0 || k > 16) {
            return r.fail("spatial dimension index out of range");
          }
          if (spatial_dims.size() <= static_cast<std::size_t>(k)) {
            spatial_dims.resize(static_cast<std::size_t>(k) + 1, -1);
          }
          spatial_dims[static_cast<std::size_t>(k)] = position;
        } else if (r.token().is_keyword(letters.substr(0, 1))) {
          *first = position;
          r.next();
        } else if (r.token().is_keyword(letters.substr(1, 1))) {
          *second = position;
          r.next();
        } else {
          return r.fail("expected '" + std::string(letters.substr(0, 1)) + "', '" +
                        std::string(letters.substr(1, 1)) + "' or a spatial index");
        }
        if (!r.token().is(TokenKind::kComma)) {
          break;
        }
        r.next();
      }
      return r.expect(TokenKind::kRightSquare);
    };
    ORRERY_TRY(layout("bf", &c.input_batch, &c.input_feature, input_spatial));
    if (!r.token().is_keyword("x")) {
      return r.fail("expected 'x' between the input and kernel layouts");
    }
    r.next();
    ORRERY_TRY(layout("io", &c.kernel_input_feature, &c.kernel_output_feature, kernel_spatial));
    ORRERY_TRY(r.expect(TokenKind::kArrow));
    ORRERY_TRY(layout("bf", &c.output_batch, &c.output_feature, output_spatial));
  }
  if (wrapped) {
    ORRERY_TRY(r.expect(TokenKind::kGreater));
  }
  spatial = input_spatial.size();
  for (const Ints* dims : {&input_spatial, &kernel_spatial, &output_spatial}) {
    if (dims->size() != spatial) {
      return r.fail("the input, kernel and output layouts have different numbers of spatial dimensions");
    }
    for (const std::int64_t d : *dims) {
      if (d < 0) {
        return r.fail("a spatial dimension is missing from a layout");
      }
    }
  }
  c.input_spatial = ints(input_spatial);
  c.kernel_spatial = ints(kernel_spatial);
  c.output_spatial = ints(output_spatial);
  return Status::success();
}

// window = {stride = [..], pad = [[lo, hi], ..], lhs_dilate = [..], rhs_dilate = [..], reverse = [..]}
Status Lowering::lower_pretty_window(const Attribute& a, Ints& strides, Ints& padding, Ints& lhs, Ints& rhs,
                                     Ints& reverse) {
  AttributeReader r = reader(a);
  ORRERY_TRY(r.expect(TokenKind::kLeftBrace));
  while (r.token().is(TokenKind::kBareIdentifier)) {
    const std::string_view key = r.token().text;
    r.next();
    ORRERY_TRY(r.expect(TokenKind::kEqual));
    Ints* target = key == "stride"       ? &strides
                   : key == "pad"        ? &padding
                   : key == "lhs_dilate" ? &lhs
                   : key == "rhs_dilate" ? &rhs
                   : key == "reverse"    ? &reverse
                                         : nullptr;
    if (target == nullptr) {
      return r.fail("unknown window field '" + std::string(key) + "'");
    }
    ORRERY_TRY(r.read_int_list(*target));
    if (!r.token().is(TokenKind::kComma)) {
      break;
    }
    r.next();
  }
  return r.expect(TokenKind::kRightBrace);
}

Status Lowering::lower_convolution(OpId id, const Op& op) {
  workload::ConvolutionDimensions c;
  const Attribute* layout = find(op, "dim_numbers");
  if (layout == nullptr) {
    layout = find(op, "dimension_numbers");
  }
  if (layout == nullptr) {
    return fail("convolution without dimension numbers (dim_numbers = [b, 0, 1, f]x...)");
  }
  std::size_t spatial = 0;
  ORRERY_TRY(lower_conv_layout(*layout, c, spatial));
  Ints strides;
  Ints padding;
  Ints lhs_dilation;
  Ints rhs_dilation;
  Ints reversal;
  if (const Attribute* window = find(op, "window")) {
    ORRERY_TRY(lower_pretty_window(*window, strides, padding, lhs_dilation, rhs_dilation, reversal));
  } else {
    ORRERY_TRY(read_ints(op, "window_strides", strides));
    ORRERY_TRY(read_ints(op, "padding", padding));
    ORRERY_TRY(read_ints(op, "lhs_dilation", lhs_dilation));
    ORRERY_TRY(read_ints(op, "rhs_dilation", rhs_dilation));
    ORRERY_TRY(read_ints(op, "window_reversal", reversal));
  }
  ORRERY_TRY(sized("window strides", strides, spatial, 1));
  ORRERY_TRY(sized("padding", padding, 2 * spatial, 0));
  ORRERY_TRY(sized("lhs dilation", lhs_dilation, spatial, 1));
  ORRERY_TRY(sized("rhs dilation", rhs_dilation, spatial, 1));
  ORRERY_TRY(sized("window reversal", reversal, spatial, 0));
  c.window_strides = ints(strides);
  c.padding = ints(padding);
  c.lhs_dilation = ints(lhs_dilation);
  c.rhs_dilation = ints(rhs_dilation);
  c.window_reversal = ints(reversal);
  ORRERY_TRY(read_int(op, "feature_group_count", c.feature_group_count));
  ORRERY_TRY(read_int(op, "batch_group_count", c.batch_group_count));
  builder_.set_payload(id, c);
  return Status::success();
}

Status Lowering::lower_reduce(OpId id, const Op& op) {
  Ints dimensions;
  ORRERY_TRY(read_ints(op, "dimensions", dimensions));
  // The reduced dimensions index the (first) input: each in range, none twice.
  if (const auto operands = program_.operands(op);
      !operands.empty() && program_.types().is_tensor(program_.value_type(operands[0]))) {
    const std::size_t rank = rank_of_operand(op, 0);
    for (std::size_t i = 0; i < dimensions.size(); ++i) {
      if (dimensions[i] < 0 || static_cast<std::size_t>(dimensions[i]) >= rank) {
        return fail("reduce dimension " + std::to_string(dimensions[i]) +
                    " is out of range for an input of rank " + std::to_string(rank));
      }
      if (std::find(dimensions.begin(), dimensions.begin() + static_cast<std::ptrdiff_t>(i), dimensions[i]) !=
          dimensions.begin() + static_cast<std::ptrdiff_t>(i)) {
        return fail("reduce dimension " + std::to_string(dimensions[i]) + " is listed twice");
      }
    }
  }
  OpKind body = body_kind(op, 0);
  if (const Attribute* applies = find(op, "applies")) {
    const auto kind = workload::op_kind_from_name(program_.attribute_text(*applies));
    if (!kind) {
      return fail("unknown reduction op '" + std::string(program_.attribute_text(*applies)) + "'");
    }
    body = *kind;
  }
  builder_.set_payload(id, workload::ReduceDimensions{ints(dimensions), body});
  return Status::success();
}

Status Lowering::lower_window(OpId id, const Op& op) {
  const std::size_t rank = rank_of_operand(op, 0);
  Ints dimensions;
  Ints strides;
  Ints base;
  Ints dilations;
  Ints padding;
  ORRERY_TRY(read_ints(op, "window_dimensions", dimensions));
  ORRERY_TRY(read_ints(op, "window_strides", strides));
  ORRERY_TRY(read_ints(op, "base_dilations", base));
  ORRERY_TRY(read_ints(op, "window_dilations", dilations));
  ORRERY_TRY(read_ints(op, "padding", padding));
  ORRERY_TRY(sized("window_dimensions", dimensions, rank, 1));
  ORRERY_TRY(sized("window_strides", strides, rank, 1));
  ORRERY_TRY(sized("base_dilations", base, rank, 1));
  ORRERY_TRY(sized("window_dilations", dilations, rank, 1));
  ORRERY_TRY(sized("padding", padding, 2 * rank, 0));
  const OpKind body = body_kind(op, op.kind == OpKind::kSelectAndScatter ? 1 : 0);
  builder_.set_payload(id, workload::WindowDimensions{ints(dimensions), ints(strides), ints(base),
                                                      ints(dilations), ints(padding), body});
  return Status::success();
}

Status Lowering::lower_gather(OpId id, const Op& op) {
  Ints offset_dims;
  Ints collapsed;
  Ints operand_batching;
  Ints indices_batching;
  Ints start_index_map;
  Ints slice_sizes;
  workload::GatherDimensions g;
  if (const Attribute* a = find(op, "dimension_numbers")) {
    AttributeReader r = reader(*a);
    ORRERY_TRY(r.read_record([&](std::string_view key) {
      if (key == "offset_dims") return r.read_int_list(offset_dims);
      if (key == "collapsed_slice_dims") return r.read_int_list(collapsed);
      if (key == "operand_batching_dims") return r.read_int_list(operand_batching);
      if (key == "start_indices_batching_dims") return r.read_int_list(indices_batching);
      if (key == "start_index_map") return r.read_int_list(start_index_map);
      if (key == "index_vector_dim") return r.read_int(g.index_vector_dim);
      return r.skip_value();
    }));
  }
  ORRERY_TRY(read_ints(op, "slice_sizes", slice_sizes));
  ORRERY_TRY(read_bool(op, "indices_are_sorted", g.indices_are_sorted));
  g.offset_dims = ints(offset_dims);
  g.collapsed_slice_dims = ints(collapsed);
  g.operand_batching_dims = ints(operand_batching);
  g.start_indices_batching_dims = ints(indices_batching);
  g.start_index_map = ints(start_index_map);
  g.slice_sizes = ints(slice_sizes);
  builder_.set_payload(id, g);
  return Status::success();
}

Status Lowering::lower_scatter(OpId id, const Op& op) {
  Ints update_window;
  Ints inserted;
  Ints input_batching;
  Ints indices_batching;
  Ints to_operand;
  workload::ScatterDimensions s;
  if (const Attribute* a = find(op, "scatter_dimension_numbers")) {
    AttributeReader r = reader(*a);
    ORRERY_TRY(r.read_record([&](std::string_view key) {
      if (key == "update_window_dims") return r.read_int_list(update_window);
      if (key == "inserted_window_dims") return r.read_int_list(inserted);
      if (key == "input_batching_dims") return r.read_int_list(input_batching);
      if (key == "scatter_indices_batching_dims") return r.read_int_list(indices_batching);
      if (key == "scatter_dims_to_operand_dims") return r.read_int_list(to_operand);
      if (key == "index_vector_dim") return r.read_int(s.index_vector_dim);
      return r.skip_value();
    }));
  }
  ORRERY_TRY(read_bool(op, "indices_are_sorted", s.indices_are_sorted));
  ORRERY_TRY(read_bool(op, "unique_indices", s.unique_indices));
  s.update_window_dims = ints(update_window);
  s.inserted_window_dims = ints(inserted);
  s.input_batching_dims = ints(input_batching);
  s.scatter_indices_batching_dims = ints(indices_batching);
  s.scatter_dims_to_operand_dims = ints(to_operand);
  s.body = body_kind(op, 0);
  builder_.set_payload(id, s);
  return Status::success();
}

Status Lowering::lower_sort(OpId id, const Op& op) {
  workload::SortAttributes s;
  ORRERY_TRY(read_int(op, "dimension", s.dimension));
  ORRERY_TRY(read_bool(op, "is_stable", s.is_stable));
  builder_.set_payload(id, s);
  return Status::success();
}

Status Lowering::lower_custom_call(OpId id, const Op& op) {
  workload::CustomCallAttributes c;
  const Attribute* target = find(op, "call_target_name");
  if (target == nullptr) {
    return fail("custom_call without a target (@name or call_target_name)");
  }
  AttributeReader r = reader(*target);
  std::string_view name;
  ORRERY_TRY(r.read_name(name));
  c.target = builder_.intern(name);
  ORRERY_TRY(read_int(op, "api_version", c.api_version));
  ORRERY_TRY(read_bool(op, "has_side_effect", c.has_side_effect));
  builder_.set_payload(id, c);
  return Status::success();
}

Status Lowering::lower_compare(OpId id, const Op& op) {
  using workload::ComparisonDirection;
  using workload::ComparisonType;
  workload::CompareAttributes c;
  const Attribute* direction = find(op, "comparison_direction");
  if (direction == nullptr) {
    return fail("compare without a comparison direction (EQ, NE, LT, LE, GT, GE)");
  }
  AttributeReader r = reader(*direction);
  std::string_view word;
  ORRERY_TRY(r.read_enum(word));
  static constexpr std::pair<std::string_view, ComparisonDirection> kDirections[] = {
      {"EQ", ComparisonDirection::kEq}, {"NE", ComparisonDirection::kNe}, {"GE", ComparisonDirection::kGe},
      {"GT", ComparisonDirection::kGt}, {"LE", ComparisonDirection::kLe}, {"LT", ComparisonDirection::kLt}};
  bool known = false;
  for (const auto& [spelling, value] : kDirections) {
    if (word == spelling) {
      c.direction = value;
      known = true;
    }
  }
  if (!known) {
    return fail("unknown comparison direction '" + std::string(word) + "'");
  }
  if (const Attribute* type = find(op, "compare_type")) {
    AttributeReader t = reader(*type);
    ORRERY_TRY(t.read_enum(word));
    c.type = word == "FLOAT"        ? ComparisonType::kFloat
             : word == "TOTALORDER" ? ComparisonType::kTotalOrder
             : word == "SIGNED"     ? ComparisonType::kSigned
             : word == "UNSIGNED"   ? ComparisonType::kUnsigned
                                    : ComparisonType::kNotSet;
  }
  builder_.set_payload(id, c);
  return Status::success();
}

Status Lowering::lower_replica_groups(const Attribute& a, CollectiveAttributes& c) {
  AttributeReader r = reader(a);
  if (r.token().is(
          TokenKind::kHashIdentifier)) {  // #stablehlo.replica_group_mesh_axes<mesh = @m, axes = [...]>
    c.groups_form = workload::ReplicaGroupsForm::kMeshAxes;
    Ints axes;
    ORRERY_TRY(r.read_record([&](std::string_view key) {
      if (key == "mesh") {
        std::string_view mesh;
        ORRERY_TRY(r.read_name(mesh));
        c.mesh = builder_.intern(mesh);
        return Status::success();
      }
      if (key != "axes") {
        return r.skip_value();
      }
      ORRERY_TRY(r.expect(TokenKind::kLeftSquare));
      while (!r.token().is(TokenKind::kRightSquare)) {  // #stablehlo.axis_ref<name = "x">, or an axis index
        if (!r.token().is(TokenKind::kHashIdentifier)) {
          std::int64_t index = 0;
          ORRERY_TRY(r.read_int(index));
          axes.push_back(index);
          c.mesh_axes_by_index = true;
          if (!r.token().is(TokenKind::kComma)) {
            break;
          }
          r.next();
          continue;
        }
        ORRERY_TRY(r.read_record([&](std::string_view field) {
          if (field != "name") {
            return r.skip_value();
          }
          std::string_view axis;
          ORRERY_TRY(r.read_name(axis));
          axes.push_back(builder_.intern(axis));
          return Status::success();
        }));
        if (!r.token().is(TokenKind::kComma)) {
          break;
        }
        r.next();
      }
      return r.expect(TokenKind::kRightSquare);
    }));
    c.groups = ints(axes);
    return Status::success();
  }
  Ints values;
  Ints shape;
  ORRERY_TRY(r.read_int_list(values, &shape));
  if (shape.size() != 2) {
    return fail("replica groups should be a rank 2 tensor");
  }
  c.groups_form = workload::ReplicaGroupsForm::kDense;
  c.group_count = static_cast<std::uint32_t>(shape[0]);
  c.group_size = static_cast<std::uint32_t>(shape[1]);
  c.groups = ints(values);
  return Status::success();
}

Status Lowering::lower_collective(OpId id, const Op& op) {
  CollectiveAttributes c;
  switch (op.kind) {
    case OpKind::kAllReduce:
      c.kind = CollectiveKind::kAllReduce;
      break;
    case OpKind::kAllGather:
      c.kind = CollectiveKind::kAllGather;
      break;
    case OpKind::kReduceScatter:
      c.kind = CollectiveKind::kReduceScatter;
      break;
    case OpKind::kAllToAll:
      c.kind = CollectiveKind::kAllToAll;
      break;
    case OpKind::kCollectivePermute:
      c.kind = CollectiveKind::kCollectivePermute;
      break;
    case OpKind::kCollectiveBroadcast:
      c.kind = CollectiveKind::kCollectiveBroadcast;
      break;
    case OpKind::kCollectiveReduce:
      c.kind = CollectiveKind::kCollectiveReduce;
      break;
    case OpKind::kSend:
      c.kind = CollectiveKind::kSend;
      break;
    default:
      c.kind = CollectiveKind::kRecv;
      break;
  }
  if (c.kind == CollectiveKind::kAllReduce || c.kind == CollectiveKind::kReduceScatter ||
      c.kind == CollectiveKind::kCollectiveReduce) {
    c.reduction = workload::reduction_of(body_kind(op, 0));
    if (program_.op_name(op).find("cross-replica-sum") != std::string_view::npos) {
      c.reduction = workload::ReductionKind::kSum;
    }
  }
  if (const Attribute* channel = find(op, "channel_handle")) {
    c.has_channel = true;
    AttributeReader r = reader(*channel);
    ORRERY_TRY(r.read_record([&](std::string_view key) {
      if (key == "handle") return r.read_int(c.channel_id);
      if (key == "type") return r.read_int(c.channel_type);
      return r.skip_value();
    }));
  }
  ORRERY_TRY(read_bool(op, "use_global_device_ids", c.use_global_device_ids));
  ORRERY_TRY(read_bool(op, "is_host_transfer", c.is_host_transfer));
  if (const Attribute* groups = find(op, "replica_groups")) {
    ORRERY_TRY(lower_replica_groups(*groups, c));
  }
  ORRERY_TRY(read_int(op, "all_gather_dim", c.all_gather_dim));
  ORRERY_TRY(read_int(op, "scatter_dimension", c.scatter_dimension));
  ORRERY_TRY(read_int(op, "split_dimension", c.split_dimension));
  ORRERY_TRY(read_int(op, "concat_dimension", c.concat_dimension));
  ORRERY_TRY(read_int(op, "split_count", c.split_count));
  if (find(op, "source_target_pairs") != nullptr) {
    Ints pairs;
    Ints shape;
    ORRERY_TRY(read_ints(op, "source_target_pairs", pairs, &shape));
    if (shape.size() != 2 || shape[1] != 2) {
      return fail("malformed source_target_pairs: expected an Nx2 tensor of (source, target) pairs");
    }
    c.has_source_target_pairs = true;
    c.source_target_pairs = ints(pairs);
  }
  // XLA's send/recv pairs: mhlo.frontend_attributes = {_xla_send_recv_source_target_pairs = "{{0,1},{1,2}}"}
  if (const Attribute* frontend = find(op, "mhlo.frontend_attributes")) {
    const std::string_view text = program_.attribute_text(*frontend);
    const std::size_t key = text.find("_xla_send_recv_source_target_pairs");
    if (key != std::string_view::npos) {
      const std::size_t open = text.find('"', key);
      const std::size_t close = open == std::string_view::npos ? open : text.find('"', open + 1);
      if (close == std::string_view::npos) {
        return fail("malformed _xla_send_recv_source_target_pairs");
      }
      Ints pairs;
      std::int64_t value = -1;
      for (std::size_t i = open + 1; i < close; ++i) {
        if (text[i] >= '0' && text[i] <= '9') {
          value = (value < 0 ? 0 : value * 10) + (text[i] - '0');
        } else if (value >= 0) {
          pairs.push_back(value);
          value = -1;
        }
      }
      if (pairs.size() % 2 != 0) {
        return fail(
            "malformed _xla_send_recv_source_target_pairs: "
            "expected pairs {{source,target},...}");
      }
      c.has_send_recv_pairs = true;
      c.send_recv_pairs = ints(pairs);
    }
  }
  builder_.set_payload(id, c);
  // Group sizes follow from the module's device counts; a module that does not declare them (a
  // spec test run by the interpreter on a grid of its choosing) is not checked, except for the
  // pairs of a permute, which need no counts.
  if (device_counts_declared_ || c.kind == CollectiveKind::kCollectivePermute) {
    if (const std::string problem = workload::collective_shape_problem(program_, op); !problem.empty()) {
      return fail(problem);
    }
  }
  return Status::success();
}

Status Lowering::lower_call(OpId id, const Op& op) {
  const Attribute* callee = find(op, op.kind == OpKind::kCall ? "callee" : "decomposition");
  if (callee == nullptr) {
    return fail(op.kind == OpKind::kCall ? "call without a callee (@name)"
                                         : "composite without a decomposition");
  }
  AttributeReader r = reader(*callee);
  std::string_view name;
  ORRERY_TRY(r.read_name(name));
  const auto it = draft_.functions.find(name);
  if (it == draft_.functions.end()) {
    return fail("call to undefined function '@" + std::string(name) + "'");
  }
  if (op.kind == OpKind::kCall) {
    ORRERY_TRY(check_call_signature(op, name, program_.function(it->second)));
  }
  builder_.set_payload(id, workload::CallAttributes{it->second});
  return Status::success();
}

// func.call's operands and results must have the callee's argument and result types (the func
// dialect's verifier): a mismatch is an error, not a program whose costs silently follow the
// call's types.
Status Lowering::check_call_signature(const Op& op, std::string_view name, const workload::Function& callee) {
  // The call's types (`given`) against the function's (`expected`): the counts, then each type.
  const auto compare = [&](const char* what, const char* verb, std::span<const workload::TypeId> given,
                           std::span<const workload::TypeId> expected) -> Status {
    if (given.size() != expected.size()) {
      return fail(fmt::format("call to '@{}' with {} {}s; the function {} {}", name, given.size(), what, verb,
                              expected.size()));
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
      if (given[i] != expected[i]) {
        const workload::TypeTable& types = program_.types();
        return fail(fmt::format("call to '@{}': {} {} has type {}, but the function's is {}", name, what, i,
                                types.to_string(given[i]), types.to_string(expected[i])));
      }
    }
    return Status::success();
  };
  std::vector<workload::TypeId> operand_types;
  for (const workload::ValueRef v : program_.operands(op)) {
    operand_types.push_back(program_.value_type(v));
  }
  ORRERY_TRY(compare("operand", "takes", operand_types, program_.argument_types(callee)));
  return compare("result", "returns", program_.result_types(op), program_.result_types(callee));
}

Status Lowering::lower_loops() {
  std::set<std::string> names;
  for (const OpId id : program_.while_ops()) {
    const Op& op = program_.op(id);
    const workload::FunctionId function = program_.function_of(id);
    const std::string prefix(function == kNoId ? std::string_view("module")
                                               : program_.string(program_.function(function).name));
    std::string name = prefix + "/" + std::string(program_.result_name(op));
    if (program_.result_name(op).empty() || names.count(name) > 0) {
      name = prefix + "/while@" + std::to_string(diagnostics_.location(op.offset).line);
    }
    names.insert(name);
    workload::WhileAttributes loop;
    loop.name = builder_.own(name);
    const TripCount derived = derive_trip_count(program_, id);
    if (const auto it = options_.trip_counts.find(name); it != options_.trip_counts.end()) {
      loop.source = workload::TripCountSource::kOverride;
      loop.trip_count = it->second;
    } else if (derived.derived) {
      loop.source = workload::TripCountSource::kDerived;
      loop.trip_count = derived.count;
    } else {
      loop.source = workload::TripCountSource::kUnknown;
      loop.reason = builder_.own(derived.reason);
    }
    builder_.set_payload(id, loop);
    if (loop.source == workload::TripCountSource::kUnknown && options_.strict) {
      const Error error = program_.trip_count_error(id);
      return diagnostics_.error_at(op.offset, error.message, error.notes, ErrorCode::kUnsupported);
    }
  }
  return Status::success();
}

void Lowering::choose_entry_function() {
  const auto functions = program_.functions();
  workload::FunctionId only_public = kNoId;
  std::size_t public_count = 0;
  for (std::size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].body == kNoId) {
      continue;
    }
    if (program_.string(functions[i].name) == "main") {
      builder_.set_entry_function(static_cast<workload::FunctionId>(i));
      return;
    }
    if (functions[i].is_public) {
      only_public = static_cast<workload::FunctionId>(i);
      ++public_count;
    }
  }
  builder_.set_entry_function(public_count == 1 ? only_public : kNoId);
}

// manual: manual regions (sdy.manual_computation, or GSPMD's SPMDFullToShardShape custom calls);
// partitioned: collectives (or neither collectives nor shardings); pre-partitioning: shardings only.
void Lowering::classify_form() {
  bool manual = false;
  bool collectives = false;
  bool shardings = false;
  const workload::StringId mhlo_sharding = name_id("mhlo.sharding");
  const workload::StringId sdy_sharding = name_id("sdy.sharding");
  auto is_sharding_attribute = [&](const Attribute& a) {
    return a.name != kNoId && (a.name == mhlo_sharding || a.name == sdy_sharding);
  };
  for (OpId id = 0; id < program_.op_count(); ++id) {
    const Op& op = program_.op(id);
    const OpCategory category = workload::op_category(op.kind);
    collectives = collectives || category == OpCategory::kCollective;
    shardings = shardings || category == OpCategory::kSharding;
    manual = manual || op.kind == OpKind::kManualComputation;
    if (op.kind == OpKind::kCustomCall && op.payload != kNoId) {
      const std::string_view target = program_.string(program_.custom_call(op).target);
      manual = manual || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape";
      shardings = shardings || target == "Sharding";
    }
    for (const Attribute& a : program_.attributes(op)) {
      shardings = shardings || is_sharding_attribute(a);
    }
  }
  for (const workload::Function& f : program_.functions()) {
    for (const workload::FunctionAttribute& a : program_.argument_attributes(f)) {
      shardings = shardings || is_sharding_attribute(a.attribute);
    }
  }
  builder_.set_form(manual                      ? workload::ProgramForm::kManual
                    : collectives || !shardings ? workload::ProgramForm::kPartitioned
                                                : workload::ProgramForm::kPrePartitioning);
}

}  // namespace

Status lower_module(ModuleDraft& draft, const AttributeAliases& aliases, const Options& options,
                    Diagnostics& diagnostics) {
  Lowering lowering(draft, aliases, options, diagnostics);
  return lowering.run();
}

}  // namespace orrery::frontend::stablehlo
