// The IR the frontend builds from small programs: SSA dependencies, regions, payloads of the ops
// cost models and the system layer read, module facts.
#include <gtest/gtest.h>

#include "frontend/stablehlo/stablehlo.h"
#include "test_support.h"
#include "workload/collectives.h"
#include "workload/dump.h"

namespace orrery::frontend::stablehlo {
namespace {

using namespace testing;
using workload::OpKind;
using workload::ValueRef;

TEST(Parser, OperandsResolveToProducersAndArguments) {
  const auto p = parse_one(R"(
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
  %1:2 = "stablehlo.optimization_barrier"(%0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %a, %b = stablehlo.optimization_barrier %1#1, %1#0 : tensor<4xf32>, tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
)");
  ASSERT_NE(p, nullptr);
  const auto ops = entry_ops(*p);
  ASSERT_EQ(ops.size(), 4U);
  const auto add = p->operands(p->op(ops[0]));
  EXPECT_TRUE(p->is_function_argument(add[0]));
  EXPECT_EQ(add[1].index(), 1U);
  EXPECT_EQ(p->operands(p->op(ops[1]))[0], ValueRef::op_result(ops[0], 0));
  const auto barrier = p->operands(p->op(ops[2]));
  EXPECT_EQ(barrier[0], ValueRef::op_result(ops[1], 1));
  EXPECT_EQ(barrier[1], ValueRef::op_result(ops[1], 0));
  const auto ret = p->operands(p->op(ops[3]));
  EXPECT_EQ(ret[0], ValueRef::op_result(ops[2], 0));
  EXPECT_EQ(ret[1], ValueRef::op_result(ops[2], 1));
  EXPECT_EQ(p->op(ops[3]).kind, OpKind::kReturn);
  EXPECT_EQ(p->types().to_string(p->value_type(ret[0])), "tensor<4xf32>");
  EXPECT_EQ(p->result_name(p->op(ops[1])), "%1");
}

TEST(Parser, WhileRegionsTakeTheIterationArguments) {
  const auto p = parse_one(R"(
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %c0 = stablehlo.constant dense<0> : tensor<i64>
  %0:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i64>, tensor<f32>
   cond {
    %c = stablehlo.constant dense<8> : tensor<i64>
    %p = stablehlo.compare  LT, %i, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %n = stablehlo.add %i, %one : tensor<i64>
    %y = stablehlo.multiply %acc, %x : tensor<f32>
    stablehlo.return %n, %y : tensor<i64>, tensor<f32>
  } loc(#loc1)
  return %0#1 : tensor<f32>
}
#loc1 = loc("while")
)");
  ASSERT_NE(p, nullptr);
  const workload::Op* loop = first_op(*p, OpKind::kWhile);
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(p->regions(*loop).size(), 2U);
  const workload::Region& body = p->region(p->regions(*loop)[1]);
  const workload::Block& block = p->block(p->blocks(body)[0]);
  EXPECT_EQ(p->argument_types(block).size(), 2U);
  const auto body_ops = p->ops(block);
  ASSERT_EQ(body_ops.size(), 4U);
  // %y = multiply %acc (argument 1 of the body's block), %x (argument 0 of the function).
  const auto multiply = p->operands(p->op(body_ops[2]));
  EXPECT_EQ(multiply[0], ValueRef::block_argument(p->blocks(body)[0], 1));
  EXPECT_FALSE(p->is_function_argument(multiply[0]));
  EXPECT_TRUE(p->is_function_argument(multiply[1]));
  const workload::WhileAttributes& w = p->while_loop(*loop);
  EXPECT_EQ(w.source, workload::TripCountSource::kDerived);
  EXPECT_EQ(w.trip_count, 8U);
  EXPECT_EQ(p->string(w.name), "main/%0");
  EXPECT_EQ(p->compare(*first_op(*p, OpKind::kCompare)).type, workload::ComparisonType::kSigned);
}

TEST(Parser, DotGeneralPrettyGenericAndDot) {
  const auto p = parse_one(R"(
func.func @main(%a: tensor<2x3x4xbf16>, %b: tensor<2x4x5xbf16>, %m: tensor<3x4xf32>, %n: tensor<4x5xf32>) -> () {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xbf16>, tensor<2x4x5xbf16>) -> tensor<2x3x5xf32>
  %1 = "stablehlo.dot_general"(%a, %b) {
    dot_dimension_numbers = #stablehlo.dot<
      lhs_batching_dimensions = [0],
      rhs_batching_dimensions = [0],
      lhs_contracting_dimensions = [2],
      rhs_contracting_dimensions = [1]
    >
  } : (tensor<2x3x4xbf16>, tensor<2x4x5xbf16>) -> tensor<2x3x5xf32>
  %2 = stablehlo.dot %m, %n, precision = [DEFAULT, DEFAULT] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}
)");
  ASSERT_NE(p, nullptr);
  const auto ops = entry_ops(*p);
  for (int i = 0; i < 2; ++i) {
    const workload::DotDimensions& d = p->dot(p->op(ops[i]));
    EXPECT_EQ(ints(*p, d.lhs_batching), (std::vector<std::int64_t>{0}));
    EXPECT_EQ(ints(*p, d.rhs_batching), (std::vector<std::int64_t>{0}));
    EXPECT_EQ(ints(*p, d.lhs_contracting), (std::vector<std::int64_t>{2}));
    EXPECT_EQ(ints(*p, d.rhs_contracting), (std::vector<std::int64_t>{1}));
  }
  const workload::DotDimensions& dot = p->dot(p->op(ops[2]));
  EXPECT_TRUE(ints(*p, dot.lhs_batching).empty());
  EXPECT_EQ(ints(*p, dot.lhs_contracting), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(ints(*p, dot.rhs_contracting), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(p->attribute(p->op(ops[0]), "precision_config"), "[DEFAULT, DEFAULT]");
}

// Kernel layouts vary; the payload follows the dimension numbers.
TEST(Parser, ConvolutionDimensionNumbersAndWindow) {
  const auto p = parse_one(R"(
func.func @main(%x: tensor<8x32x32x3xbf16>, %k: tensor<3x3x3x16xbf16>, %g: tensor<3x32x32x8xf32>, %h: tensor<3x5x5x16xf32>) -> () {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<8x32x32x3xbf16>, tensor<3x3x3x16xbf16>) -> tensor<8x16x16x16xbf16>
  %1 = stablehlo.convolution(%g, %h)
         dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f],
         window = {rhs_dilate = [2, 2]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64} :
       (tensor<3x32x32x8xf32>, tensor<3x5x5x16xf32>) -> tensor<24x24x8x16xf32>
  %2 = "stablehlo.convolution"(%x, %k) {
    batch_group_count = 1 : i64,
    dimension_numbers = #stablehlo.conv<raw
      input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2],
      kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1],
      output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2]
    >,
    feature_group_count = 1 : i64,
    padding = dense<2> : tensor<2x2xi64>,
    window_strides = array<i64: 1, 1>
  } : (tensor<8x32x32x3xbf16>, tensor<3x3x3x16xbf16>) -> tensor<8x34x34x16xbf16>
  return
}
)");
  ASSERT_NE(p, nullptr);
  const auto ops = entry_ops(*p);
  const workload::ConvolutionDimensions& nhwc = p->convolution(p->op(ops[0]));
  EXPECT_EQ(nhwc.input_batch, 0);
  EXPECT_EQ(nhwc.input_feature, 3);
  EXPECT_EQ(ints(*p, nhwc.input_spatial), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(nhwc.kernel_input_feature, 2);
  EXPECT_EQ(nhwc.kernel_output_feature, 3);
  EXPECT_EQ(ints(*p, nhwc.kernel_spatial), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(ints(*p, nhwc.window_strides), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ints(*p, nhwc.padding), (std::vector<std::int64_t>{1, 1, 0, 1}));
  EXPECT_EQ(ints(*p, nhwc.window_reversal), (std::vector<std::int64_t>{0, 0}));
  const workload::ConvolutionDimensions& grad = p->convolution(p->op(ops[1]));
  EXPECT_EQ(grad.input_batch, 3);
  EXPECT_EQ(grad.input_feature, 0);
  EXPECT_EQ(grad.kernel_input_feature, 0);
  EXPECT_EQ(grad.kernel_output_feature, 3);
  EXPECT_EQ(grad.output_batch, 2);
  EXPECT_EQ(grad.output_feature, 3);
  EXPECT_EQ(ints(*p, grad.output_spatial), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(ints(*p, grad.window_strides), (std::vector<std::int64_t>{1, 1}));  // defaults filled in
  EXPECT_EQ(ints(*p, grad.padding), (std::vector<std::int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(ints(*p, grad.rhs_dilation), (std::vector<std::int64_t>{2, 2}));
  const workload::ConvolutionDimensions& raw = p->convolution(p->op(ops[2]));
  EXPECT_EQ(raw.input_feature, 3);
  EXPECT_EQ(ints(*p, raw.padding), (std::vector<std::int64_t>{2, 2, 2, 2}));  // splat expanded
  EXPECT_EQ(raw.feature_group_count, 1);
}

TEST(Parser, ReductionsWindowsGatherScatterSort) {
  const auto p = parse_one(R"(
func.func @main(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>, %idx: tensor<2x1xi64>, %u: tensor<2x8xf32>) -> () {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zi = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %1:2 = stablehlo.reduce(%x init: %z), (%i init: %zi) across dimensions = [0] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<8xf32>, tensor<8xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>)  {
    %s = stablehlo.add %a, %b : tensor<f32>
    %t = stablehlo.add %c, %d : tensor<i32>
    stablehlo.return %s, %t : tensor<f32>, tensor<i32>
  }
  %2 = "stablehlo.reduce_window"(%x, %z) <{padding = dense<[[0, 0], [0, 1]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 3>, window_strides = array<i64: 1, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x4xf32>
  %3 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = true, slice_sizes = array<i64: 1, 8>}> : (tensor<4x8xf32>, tensor<2x1xi64>) -> tensor<2x8xf32>
  %4 = "stablehlo.scatter"(%x, %idx, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %5 = "stablehlo.sort"(%x) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = stablehlo.convert %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %7 = stablehlo.custom_call @my_kernel(%x) {backend_config = "cfg", api_version = 2 : i32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}
)");
  ASSERT_NE(p, nullptr);
  const auto ops = entry_ops(*p);
  const workload::ReduceDimensions& max = p->reduce(p->op(ops[2]));
  EXPECT_EQ(ints(*p, max.dimensions), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(max.body, OpKind::kMaximum);
  // Two inputs: operands are the inputs, then the inits; the body takes (acc0, acc1, x0, x1).
  const workload::Op& pair = p->op(ops[3]);
  EXPECT_EQ(p->reduce(pair).body, OpKind::kUnknown);  // two ops in the body
  const auto operands = p->operands(pair);
  EXPECT_TRUE(p->is_function_argument(operands[1]));       // %i
  EXPECT_EQ(operands[2], ValueRef::op_result(ops[0], 0));  // %z
  const workload::BlockId reducer = p->blocks(p->region(p->regions(pair)[0]))[0];
  const auto reducer_types = p->argument_types(p->block(reducer));
  ASSERT_EQ(reducer_types.size(), 4U);
  EXPECT_EQ(p->types().to_string(reducer_types[1]), "tensor<i32>");
  EXPECT_EQ(p->types().to_string(reducer_types[2]), "tensor<f32>");
  const workload::WindowDimensions& window = p->window(p->op(ops[4]));
  EXPECT_EQ(ints(*p, window.window_dimensions), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(ints(*p, window.window_strides), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(ints(*p, window.base_dilations), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(ints(*p, window.padding), (std::vector<std::int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(window.body, OpKind::kMaximum);
  const workload::GatherDimensions& gather = p->gather(p->op(ops[5]));
  EXPECT_EQ(ints(*p, gather.offset_dims), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(ints(*p, gather.slice_sizes), (std::vector<std::int64_t>{1, 8}));
  EXPECT_EQ(gather.index_vector_dim, 1);
  EXPECT_TRUE(gather.indices_are_sorted);
  const workload::ScatterDimensions& scatter = p->scatter(p->op(ops[6]));
  EXPECT_EQ(ints(*p, scatter.inserted_window_dims), (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(scatter.unique_indices);
  EXPECT_EQ(scatter.body, OpKind::kAdd);
  EXPECT_EQ(p->sort(p->op(ops[7])).dimension, 1);
  EXPECT_TRUE(p->sort(p->op(ops[7])).is_stable);
  const workload::Op& convert = p->op(ops[8]);
  EXPECT_EQ(p->types().element(p->value_type(p->operands(convert)[0])), workload::ElementType::kF32);
  EXPECT_EQ(p->types().element(p->result_types(convert)[0]), workload::ElementType::kBF16);
  const workload::Op& call = p->op(ops[9]);
  EXPECT_EQ(p->string(p->custom_call(call).target), "my_kernel");
  EXPECT_EQ(p->custom_call(call).api_version, 2);
  EXPECT_EQ(p->attribute(call, "backend_config"), "\"cfg\"");
}

TEST(Parser, CollectiveAttributes) {
  const auto p = parse_one(R"(
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 2 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%x: tensor<8x16xf32>, %t: !stablehlo.token) -> () {
    %0 = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>} : (tensor<8x16xf32>) -> tensor<32x4xf32>
    %1 = "stablehlo.collective_permute"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %2 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, is_host_transfer = false, mhlo.frontend_attributes = {_xla_send_recv_source_target_pairs = "{{0,1},{2,3}}"}} : (tensor<8x16xf32>, !stablehlo.token) -> !stablehlo.token
    %3 = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = "y">]>, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids} : (tensor<8x16xf32>) -> tensor<32x16xf32>
    %4 = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {scatter_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<8x16xf32>) -> tensor<8x8xf32>
    return
  }
}
)");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->num_partitions(), 4U);
  EXPECT_EQ(p->num_replicas(), 2U);
  EXPECT_EQ(p->module_name(), "m");
  ASSERT_EQ(p->meshes().size(), 1U);
  const auto ops = entry_ops(*p);
  const workload::CollectiveAttributes& a2a = p->collective(p->op(ops[0]));
  EXPECT_EQ(a2a.kind, workload::CollectiveKind::kAllToAll);
  EXPECT_EQ(a2a.split_dimension, 1);
  EXPECT_EQ(a2a.concat_dimension, 0);
  EXPECT_EQ(a2a.split_count, 4);
  EXPECT_EQ(a2a.channel_id, 3);
  EXPECT_EQ(a2a.channel_type, 1);
  // all_to_all with a channel: cross_partition, for each of the 2 replicas.
  auto a2a_groups = workload::device_groups(*p, p->op(ops[0]));
  ASSERT_TRUE(a2a_groups.ok());
  EXPECT_EQ(a2a_groups.value(), (workload::DeviceGroups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  auto pairs = workload::device_pairs(*p, p->op(ops[1]));
  ASSERT_TRUE(pairs.ok());
  EXPECT_EQ(pairs.value().size(), 8U);
  EXPECT_EQ(pairs.value()[3], (std::pair<workload::DeviceId, workload::DeviceId>{3, 0}));
  EXPECT_EQ(pairs.value()[4], (std::pair<workload::DeviceId, workload::DeviceId>{4, 5}));
  const workload::CollectiveAttributes& send = p->collective(p->op(ops[2]));
  EXPECT_EQ(send.kind, workload::CollectiveKind::kSend);
  EXPECT_EQ(send.channel_id, 7);
  EXPECT_TRUE(send.has_send_recv_pairs);
  EXPECT_EQ(ints(*p, send.send_recv_pairs), (std::vector<std::int64_t>{0, 1, 2, 3}));
  // Mesh axes ["y"] of mesh [x=2, y=4]: devices that share x, in flattened ids.
  auto mesh_groups = workload::device_groups(*p, p->op(ops[3]));
  ASSERT_TRUE(mesh_groups.ok()) << mesh_groups.error().message;
  EXPECT_EQ(mesh_groups.value(), (workload::DeviceGroups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const workload::CollectiveAttributes& rs = p->collective(p->op(ops[4]));
  EXPECT_EQ(rs.reduction, workload::ReductionKind::kSum);
  EXPECT_EQ(rs.scatter_dimension, 1);
  EXPECT_EQ(workload::group_mode(rs), workload::GroupMode::kCrossReplica);
  auto rs_groups = workload::device_groups(*p, p->op(ops[4]));
  ASSERT_TRUE(rs_groups.ok());
  EXPECT_EQ(rs_groups.value(), (workload::DeviceGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(Parser, FusionCallsAndManualComputationRegions) {
  const auto p = parse_one(R"(
module {
  sdy.mesh @mesh = <["x"=2]>
  func.func private @relu(%a: tensor<4xf32>) -> tensor<4xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<4xf32>
    %r = stablehlo.maximum %a, %z : tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<4xf32>) {
      %1 = func.call @relu(%l) : (tensor<4xf32>) -> tensor<4xf32>
      %2 = "mhlo.fusion"(%1, %l) ({
      ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):
        %3 = stablehlo.multiply %p, %q : tensor<4xf32>
        "mhlo.return"(%3) : (tensor<4xf32>) -> ()
      }) {fusion_kind = #mhlo<fusion_kind kLoop>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %4 = "stablehlo.all_reduce"(%2) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4xf32>) -> tensor<4xf32>
      sdy.return %4 : tensor<4xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
)");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->string(p->function(p->entry_function()).name), "main");
  EXPECT_EQ(p->form(), workload::ProgramForm::kManual);
  const workload::Op* manual = first_op(*p, OpKind::kManualComputation);
  ASSERT_NE(manual, nullptr);
  const workload::BlockId inner = p->blocks(p->region(p->regions(*manual)[0]))[0];
  EXPECT_EQ(p->types().to_string(p->argument_types(p->block(inner))[0]), "tensor<4xf32>");
  const workload::Op* call = first_op(*p, OpKind::kCall);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(p->string(p->function(p->call(*call).callee).name), "relu");
  const workload::Op* fusion = first_op(*p, OpKind::kFusion);
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(p->op_name(*fusion), "mhlo.fusion");
  EXPECT_EQ(p->regions(*fusion).size(), 1U);
  EXPECT_EQ(p->attribute(*fusion, "fusion_kind"), "#mhlo<fusion_kind kLoop>");
  // The module declares neither partitions nor replicas (one of each), so replica id 1 of the
  // all_reduce's group is out of range.
  EXPECT_FALSE(workload::device_groups(*p, *first_op(*p, OpKind::kAllReduce)).ok());
}

TEST(Parser, FormsOfPrograms) {
  const auto pre = parse_one(R"(
module @pre attributes {mhlo.num_partitions = 8 : i32} {
  func.func @main(%x: tensor<8x4xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}) -> tensor<8x4xf32> {
    %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
)");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->form(), workload::ProgramForm::kPrePartitioning);
  EXPECT_EQ(pre->num_partitions(), 8U);
  const auto plain = parse_one("func.func @f(%x: tensor<f32>) -> tensor<f32> { return %x : tensor<f32> }");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->form(), workload::ProgramForm::kPartitioned);
  EXPECT_EQ(plain->string(plain->function(plain->entry_function()).name), "f");
}

TEST(Parser, ModulesSplitByMarkersAndModuleOps) {
  const auto modules = parse(R"(// RUN: some-tool %s
func.func @a() -> () {
  return
}

// -----

module @b {
  func.func @main() -> () { return }
}
module @c {
  func.func @main() -> () { return }
}
)");
  ASSERT_EQ(modules.size(), 3U);
  EXPECT_EQ(modules[0].program->module_name(), "");
  EXPECT_EQ(modules[1].program->module_name(), "b");
  EXPECT_EQ(modules[2].program->module_name(), "c");
  EXPECT_EQ(modules[2].program->module_index(), 2U);
  EXPECT_EQ(modules[2].program->location(modules[2].program->source_begin()).line, 11U);
}

TEST(Parser, TypesAliasesLocationsAndResources) {
  const auto p = parse_one(R"(
!pair = tuple<tensor<2xf32>, tensor<i32>>
#map = affine_map<(d0) -> (d0)>
module {
  func.func @main(%a: tensor<?x4xf32, #stablehlo.bounds<8, ?>> loc(#loc2), %b: !pair, %q: tensor<3x!quant.uniform<i8:f32, 2.0:15>>, %f: !stablehlo.future<tensor<2xf32>>) -> tensor<2xf8E4M3FN> {
    %0 = stablehlo.constant dense_resource<blob1> : tensor<2xf8E4M3FN> loc(#loc3)
    %1 = stablehlo.get_tuple_element %b[0] : (!pair) -> tensor<2xf32>
    %2 = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
    %3 = stablehlo.constant dense<(1.0, 2.0)> : tensor<complex<f32>>
    return %0 : tensor<2xf8E4M3FN>
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("x.py":1:2 to :5)
#loc3 = loc(callsite("f" at fused["a.py":3:4, "b.py":5:6]))
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000102"
    }
  }
#-}
)");
  ASSERT_NE(p, nullptr);
  const workload::Function& main = p->function(p->entry_function());
  const auto args = p->argument_types(main);
  const workload::TypeTable& types = p->types();
  EXPECT_EQ(types.to_string(args[0]), "tensor<?x4xf32, #stablehlo.bounds<8, ?>>");
  EXPECT_EQ(types.byte_size(args[0]), 128U);
  EXPECT_EQ(types.kind(args[1]), workload::TypeKind::kTuple);
  EXPECT_EQ(types.members(args[1]).size(), 2U);
  EXPECT_TRUE(types.quantized(args[2]));
  EXPECT_EQ(types.byte_size(args[2]), 3U);
  EXPECT_EQ(types.kind(args[3]), workload::TypeKind::kFuture);
  EXPECT_EQ(types.element(p->result_types(main)[0]), workload::ElementType::kF8E4M3FN);
  const auto ops = entry_ops(*p);
  EXPECT_EQ(p->attribute(p->op(ops[0]), "value"), "dense_resource<blob1>");
  EXPECT_EQ(p->attribute(p->op(ops[1]), "index"), "[0]");
}

TEST(Parser, OpsOfOtherDialectsAreOpaque) {
  const std::string text = R"(
func.func @main(%x: tensor<4xi32>) -> tensor<?xi32> {
  %0 = tensor.cast %x : tensor<4xi32> to tensor<?xi32>
  %1 = stablehlo.compare  GT, %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %e = tensor.extract %1[] : tensor<4xi1>
  check.expect_eq_const %x, dense<[1, 2, 3, 4]> : tensor<4xi32>
  return %0 : tensor<?xi32>
}
)";
  const auto p = parse_one(text);
  ASSERT_NE(p, nullptr);
  const auto ops = entry_ops(*p);
  ASSERT_EQ(ops.size(), 5U);
  EXPECT_EQ(p->op(ops[0]).kind, OpKind::kOpaque);
  EXPECT_EQ(p->op_name(p->op(ops[0])), "tensor.cast");
  EXPECT_EQ(p->types().to_string(p->result_types(p->op(ops[0]))[0]), "tensor<?xi32>");
  EXPECT_EQ(p->operands(p->op(ops[3])).size(), 1U);
  Options strict;
  strict.strict = true;
  const Error error = parse_error(text, strict);
  EXPECT_EQ(error.message, "op 'tensor.cast' is not a StableHLO op (--strict rejects other dialects)");
  EXPECT_EQ(error.where->line, 3U);
}

TEST(Parser, LenientLetsUnknownOpsThroughWithOneWarning) {
  const std::string text = R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.frobnicate %x : tensor<4xf32>
  %1 = "stablehlo.frobnicate"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";
  const Error error = parse_error(text);
  EXPECT_EQ(error.message, "unknown op 'stablehlo.frobnicate'");
  Options lenient;
  lenient.lenient = true;
  const auto modules = parse(text, lenient);
  ASSERT_EQ(modules.size(), 1U);
  EXPECT_EQ(first_op(*modules[0].program, OpKind::kUnknown)->results.count, 1U);
  ASSERT_EQ(modules[0].warnings.size(), 1U);
  EXPECT_EQ(modules[0].warnings[0],
            "unknown ops let through as memory-bound ops (--lenient): stablehlo.frobnicate");
}

TEST(Parser, DumpPrintsTheLoweredIr) {
  const auto p = parse_one(R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)");
  ASSERT_NE(p, nullptr);
  const std::string text = workload::dump(*p);
  EXPECT_NE(text.find("%op0 = stablehlo.add [add](%arg0, %arg0) -> tensor<4xf32>"), std::string::npos)
      << text;
  EXPECT_NE(text.find("return [return](%op0)"), std::string::npos) << text;
  EXPECT_GT(p->heap_bytes(), 0U);
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
