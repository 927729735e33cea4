#include "workload/dump.h"

#include "workload/collectives.h"

namespace orrery::workload {
namespace {

class Dumper {
 public:
  explicit Dumper(const Program& program) : p_(program) {}

  std::string run() {
    out_ += "module";
    if (!p_.module_name().empty()) {
      out_ += " @" + std::string(p_.module_name());
    }
    out_ += ": " + std::to_string(p_.num_partitions()) + " partition(s), " +
            std::to_string(p_.num_replicas()) + " replica(s), form " +
            std::string(program_form_name(p_.form()));
    if (p_.entry_function() != kNoId) {
      out_ += ", entry @" + std::string(p_.string(p_.function(p_.entry_function()).name));
    }
    out_ += '\n';
    for (const Mesh& mesh : p_.meshes()) {
      out_ += "mesh @" + std::string(p_.string(mesh.name)) + " <";
      const auto axes = p_.ints(mesh.axes);
      for (std::size_t i = 0; i + 1 < axes.size(); i += 2) {
        out_ += (i ? ", " : "") + std::string(p_.string(static_cast<StringId>(axes[i]))) + "=" +
                std::to_string(axes[i + 1]);
      }
      out_ += ">\n";
    }
    for (const Function& f : p_.functions()) {
      function(f);
    }
    return std::move(out_);
  }

 private:
  std::string types(std::span<const TypeId> ids) const {
    std::string s;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      s += (i ? ", " : "") + p_.types().to_string(ids[i]);
    }
    return s;
  }

  std::string ints(IntRange r) const {
    std::string s = "[";
    const auto values = p_.ints(r);
    for (std::size_t i = 0; i < values.size(); ++i) {
      s += (i ? ", " : "") + std::to_string(values[i]);
    }
    return s + "]";
  }

  std::string value(ValueRef v) const {
    if (v.is_op_result()) {
      return "%op" + std::to_string(v.op()) + (v.index() ? "#" + std::to_string(v.index()) : std::string());
    }
    if (p_.is_function_argument(v)) {
      return "%arg" + std::to_string(v.index());
    }
    return "%b" + std::to_string(v.block()) + "." + std::to_string(v.index());
  }

  void function(const Function& f) {
    out_ += std::string(f.is_public ? "func @" : "func private @") + std::string(p_.string(f.name)) + "(" +
            types(p_.argument_types(f)) + ") -> (" + types(p_.result_types(f)) + ")";
    if (f.body == kNoId) {
      out_ += '\n';
      return;
    }
    out_ += " {\n";
    region(f.body, 1);
    out_ += "}\n";
  }

  void region(RegionId id, int depth) {
    const std::string indent(static_cast<std::size_t>(2 * depth), ' ');
    for (const BlockId b : p_.blocks(p_.region(id))) {
      const Block& block = p_.block(b);
      out_ += indent + "^b" + std::to_string(b) + "(" + types(p_.argument_types(block)) + "):\n";
      for (const OpId op : p_.ops(block)) {
        this->op(op, depth + 1);
      }
    }
  }

  void op(OpId id, int depth) {
    const Op& o = p_.op(id);
    out_ += std::string(static_cast<std::size_t>(2 * depth), ' ');
    if (o.results.count > 0) {
      out_ += "%op" + std::to_string(id) +
              (o.results.count > 1 ? ":" + std::to_string(o.results.count) : "") + " = ";
    }
    out_ += std::string(p_.op_name(o)) + " [" + std::string(op_kind_name(o.kind)) + "](";
    const auto operands = p_.operands(o);
    for (std::size_t i = 0; i < operands.size(); ++i) {
      out_ += (i ? ", " : "") + value(operands[i]);
    }
    out_ += ")";
    if (o.results.count > 0) {
      out_ += " -> " + types(p_.result_types(o));
    }
    const std::string details = payload(o);
    if (!details.empty()) {
      out_ += "  {" + details + "}";
    }
    out_ += '\n';
    for (const RegionId r : p_.regions(o)) {
      region(r, depth + 1);
    }
  }

  std::string payload(const Op& o) const {
    if (o.payload == kNoId) {
      return {};
    }
    switch (o.kind) {
      case OpKind::kDot:
      case OpKind::kDotGeneral: {
        const DotDimensions& d = p_.dot(o);
        return "batching " + ints(d.lhs_batching) + "x" + ints(d.rhs_batching) + ", contracting " +
               ints(d.lhs_contracting) + "x" + ints(d.rhs_contracting);
      }
      case OpKind::kConvolution:
      case OpKind::kDynamicConv: {
        const ConvolutionDimensions& c = p_.convolution(o);
        return "input b=" + std::to_string(c.input_batch) + " f=" + std::to_string(c.input_feature) +
               " s=" + ints(c.input_spatial) + ", kernel i=" + std::to_string(c.kernel_input_feature) +
               " o=" + std::to_string(c.kernel_output_feature) + " s=" + ints(c.kernel_spatial) +
               ", output b=" + std::to_string(c.output_batch) + " f=" + std::to_string(c.output_feature) +
               " s=" + ints(c.output_spatial) + ", strides " + ints(c.window_strides) + ", padding " +
               ints(c.padding) + ", lhs_dilation " + ints(c.lhs_dilation) + ", rhs_dilation " +
               ints(c.rhs_dilation) + ", groups f=" + std::to_string(c.feature_group_count) +
               " b=" + std::to_string(c.batch_group_count);
      }
      case OpKind::kReduce: {
        const ReduceDimensions& r = p_.reduce(o);
        return "dimensions " + ints(r.dimensions) + ", body " + std::string(op_kind_name(r.body));
      }
      case OpKind::kReduceWindow:
      case OpKind::kSelectAndScatter: {
        const WindowDimensions& w = p_.window(o);
        return "window " + ints(w.window_dimensions) + ", strides " + ints(w.window_strides) + ", padding " +
               ints(w.padding) + ", body " + std::string(op_kind_name(w.body));
      }
      case OpKind::kGather:
      case OpKind::kDynamicGather: {
        const GatherDimensions& g = p_.gather(o);
        return "offset_dims " + ints(g.offset_dims) + ", collapsed " + ints(g.collapsed_slice_dims) +
               ", start_index_map " + ints(g.start_index_map) + ", index_vector_dim " +
               std::to_string(g.index_vector_dim) + ", slice_sizes " + ints(g.slice_sizes);
      }
      case OpKind::kScatter: {
        const ScatterDimensions& s = p_.scatter(o);
        return "update_window_dims " + ints(s.update_window_dims) + ", inserted " +
               ints(s.inserted_window_dims) + ", to_operand " + ints(s.scatter_dims_to_operand_dims) +
               ", index_vector_dim " + std::to_string(s.index_vector_dim);
      }
      case OpKind::kSort:
        return "dimension " + std::to_string(p_.sort(o).dimension) + (p_.sort(o).is_stable ? ", stable" : "");
      case OpKind::kCustomCall:
        return "target " + std::string(p_.string(p_.custom_call(o).target));
      case OpKind::kCompare: {
        static constexpr const char* kNames[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
        return std::string("direction ") + kNames[static_cast<int>(p_.compare(o).direction)];
      }
      case OpKind::kWhile: {
        const WhileAttributes& w = p_.while_loop(o);
        std::string s = "loop " + std::string(p_.string(w.name)) + ", trip count ";
        if (w.source == TripCountSource::kUnknown) {
          return s + "unknown (" + std::string(p_.string(w.reason)) + ")";
        }
        return s + std::to_string(w.trip_count) +
               (w.source == TripCountSource::kOverride ? " (override)" : "");
      }
      case OpKind::kCall:
      case OpKind::kComposite:
        return "callee @" + std::string(p_.string(p_.function(p_.call(o).callee).name));
      default:
        break;
    }
    if (op_category(o.kind) != OpCategory::kCollective) {
      return {};
    }
    const CollectiveAttributes& c = p_.collective(o);
    std::string s =
        std::string(collective_kind_name(c.kind)) + ", mode " + std::string(group_mode_name(group_mode(c)));
    if (c.reduction != ReductionKind::kNone) {
      s += ", reduction " + std::string(reduction_kind_name(c.reduction));
    }
    if (c.has_channel) {
      s += ", channel " + std::to_string(c.channel_id) + "/" + std::to_string(c.channel_type);
    }
    if (c.use_global_device_ids) {
      s += ", global ids";
    }
    if (c.groups_form != ReplicaGroupsForm::kAbsent) {
      auto groups = device_groups(p_, o);
      if (!groups.ok()) {
        s += ", groups unresolved: " + groups.error().message;
      } else {
        s += ", devices [";
        for (std::size_t g = 0; g < groups.value().size(); ++g) {
          s += g ? ", [" : "[";
          for (std::size_t i = 0; i < groups.value()[g].size(); ++i) {
            s += (i ? ", " : "") + std::to_string(groups.value()[g][i]);
          }
          s += "]";
        }
        s += "]";
      }
    }
    if (c.has_source_target_pairs) {
      s += ", pairs " + ints(c.source_target_pairs);
    }
    return s;
  }

  const Program& p_;
  std::string out_;
};

}  // namespace

std::string dump(const Program& program) {
  return Dumper(program).run();
}

}  // namespace orrery::workload
