// workload::partition_spmd: pre-partitioning programs (shardings, no collectives) become the
// per-device program with the collectives their shardings need, as XLA's SPMD partitioner makes it.
#include "workload/spmd_partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"
#include "util/error.h"
#include "workload/collectives.h"
#include "workload/dump.h"
#include "workload/program_builder.h"

namespace orrery::frontend::stablehlo {
namespace {

namespace fs = std::filesystem;
using testing::parse_one;
using workload::OpKind;
using workload::Program;

std::shared_ptr<const Program> partition(const std::string& text, workload::SpmdReport* report = nullptr) {
  auto program = parse_one(text);
  EXPECT_NE(program, nullptr);
  EXPECT_EQ(program->form(), workload::ProgramForm::kPrePartitioning);
  return workload::partition_spmd(workload::ProgramBuilder::inline_calls(*program), report);
}

std::vector<workload::OpId> ops_of(const Program& p, OpKind kind) {
  std::vector<workload::OpId> out;
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    if (p.op(id).kind == kind) {
      out.push_back(id);
    }
  }
  return out;
}

std::string result_type(const Program& p, workload::OpId id) {
  return p.types().to_string(p.result_types(p.op(id))[0]);
}

workload::DeviceGroups groups_of(const Program& p, workload::OpId id) {
  auto groups = workload::device_groups(p, p.op(id));
  EXPECT_TRUE(groups.ok());
  return groups.ok() ? groups.value() : workload::DeviceGroups{};
}

// Data parallelism: the batch is sharded, the weight replicated. The forward matmul needs nothing;
// the weight gradient contracts over the sharded batch and is all-reduced to the replicated result.
constexpr const char* kDataParallel = R"(
module @dp attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func @main(%x: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>},
                  %w: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
      -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>},
          tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
    %g = stablehlo.dot_general %x, %y, contracting_dims = [0] x [0] : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    return %y, %g : tensor<16x32xf32>, tensor<8x32xf32>
  }
}
)";

TEST(SpmdPartition, DataParallelAllReducesTheWeightGradient) {
  workload::SpmdReport report;
  const auto p = partition(kDataParallel, &report);
  EXPECT_EQ(p->form(), workload::ProgramForm::kPartitioned);
  const auto dots = ops_of(*p, OpKind::kDotGeneral);
  ASSERT_EQ(dots.size(), 2U);
  EXPECT_EQ(result_type(*p, dots[0]), "tensor<4x32xf32>");  // a quarter of the batch
  EXPECT_EQ(result_type(*p, dots[1]), "tensor<8x32xf32>");  // a partial sum of the whole gradient
  const auto reduces = ops_of(*p, OpKind::kAllReduce);
  ASSERT_EQ(reduces.size(), 1U);
  EXPECT_EQ(result_type(*p, reduces[0]), "tensor<8x32xf32>");
  EXPECT_EQ(p->collective(p->op(reduces[0])).reduction, workload::ReductionKind::kSum);
  EXPECT_EQ(groups_of(*p, reduces[0]), (workload::DeviceGroups{{0, 1, 2, 3}}));
  EXPECT_TRUE(ops_of(*p, OpKind::kAllGather).empty());
  EXPECT_EQ(report.devices, 4U);
  EXPECT_EQ(report.collectives.at("all_reduce"), 1U);
  EXPECT_EQ(report.collective_bytes.at("all_reduce"), 8U * 32 * 4);
  // The entry function takes and returns per-device shapes.
  const auto& main = p->function(p->entry_function());
  EXPECT_EQ(p->types().to_string(p->argument_types(main)[0]), "tensor<4x8xf32>");
  EXPECT_EQ(p->types().to_string(p->result_types(main)[0]), "tensor<4x32xf32>");
}

// FSDP: the weight is sharded like the batch. The forward matmul gathers the weight (it is the
// smaller operand); the gradient is reduce-scattered onto the weight's sharding, not all-reduced.
constexpr const char* kFsdp = R"(
module @fsdp attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["fsdp"=4]>
  func.func @main(%x: tensor<64x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"fsdp"}, {}]>},
                  %w: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"fsdp"}, {}]>})
      -> (tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"fsdp"}, {}]>}) {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<64x8xf32>, tensor<8x32xf32>) -> tensor<64x32xf32>
    %g = stablehlo.dot_general %x, %y, contracting_dims = [0] x [0] : (tensor<64x8xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
    %c = stablehlo.constant dense<0.1> : tensor<f32>
    %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<8x32xf32>
    %s = stablehlo.multiply %b, %g : tensor<8x32xf32>
    %n = stablehlo.subtract %w, %s : tensor<8x32xf32>
    return %n : tensor<8x32xf32>
  }
}
)";

TEST(SpmdPartition, FsdpGathersWeightsAndReduceScattersGradients) {
  const auto p = partition(kFsdp);
  const auto gathers = ops_of(*p, OpKind::kAllGather);
  ASSERT_EQ(gathers.size(), 1U);
  EXPECT_EQ(result_type(*p, gathers[0]), "tensor<8x32xf32>");
  EXPECT_EQ(p->collective(p->op(gathers[0])).all_gather_dim, 0);
  const auto scatters = ops_of(*p, OpKind::kReduceScatter);
  ASSERT_EQ(scatters.size(), 1U);
  EXPECT_EQ(result_type(*p, scatters[0]), "tensor<2x32xf32>");
  EXPECT_TRUE(ops_of(*p, OpKind::kAllReduce).empty());
  // The scaled gradient and the update are a quarter each; the broadcast constant too.
  for (const OpKind kind : {OpKind::kMultiply, OpKind::kSubtract, OpKind::kBroadcastInDim}) {
    const auto ops = ops_of(*p, kind);
    ASSERT_EQ(ops.size(), 1U);
    EXPECT_EQ(result_type(*p, ops[0]), "tensor<2x32xf32>") << workload::op_kind_name(kind);
  }
}

// Tensor parallelism on a 2 x 4 mesh in GSPMD's notation (also a transposed device order): the
// column-parallel matmul needs nothing, the row-parallel one is all-reduced over each model group.
constexpr const char* kTensorParallel = R"(
module @tp attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"},
                  %w1: tensor<16x32xf32> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"},
                  %w2: tensor<32x16xf32> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"})
      -> (tensor<8x16xf32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}) {
    %h = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %a = stablehlo.tanh %h : tensor<8x32xf32>
    %y = stablehlo.dot_general %a, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
    %r = stablehlo.add %y, %x : tensor<8x16xf32>
    return %r : tensor<8x16xf32>
  }
}
)";

TEST(SpmdPartition, TensorParallelAllReducesOverTheModelAxis) {
  const auto p = partition(kTensorParallel);
  const auto dots = ops_of(*p, OpKind::kDotGeneral);
  ASSERT_EQ(dots.size(), 2U);
  EXPECT_EQ(result_type(*p, dots[0]), "tensor<4x8xf32>");   // batch / 2, columns / 4
  EXPECT_EQ(result_type(*p, dots[1]), "tensor<4x16xf32>");  // partial over the model axis
  EXPECT_TRUE(ops_of(*p, OpKind::kAllGather).empty());
  const auto reduces = ops_of(*p, OpKind::kAllReduce);
  ASSERT_EQ(reduces.size(), 1U);
  EXPECT_EQ(result_type(*p, reduces[0]), "tensor<4x16xf32>");
  // Device d is (data, model) = (d / 4, d % 4): the model groups are consecutive ids.
  EXPECT_EQ(groups_of(*p, reduces[0]), (workload::DeviceGroups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

// Ops without a partitioning rule run on whole operands; a sort sorts along an unsharded dimension
// and keeps the batch sharded; a reduction over a sharded dimension is all-reduced (max for max).
constexpr const char* kRulesAndFallback = R"(
module @misc attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["b"=2]>
  func.func @main(%x: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {}]>})
      -> (tensor<6xf32>, tensor<8x6xf32>, tensor<8x6xf32>) {
    %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %m = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [0] : (tensor<8x6xf32>, tensor<f32>) -> tensor<6xf32>
    %s = "stablehlo.sort"(%x) <{dimension = 1 : i64, is_stable = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %lt = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %c = stablehlo.custom_call @my_kernel(%x) : (tensor<8x6xf32>) -> tensor<8x6xf32>
    return %m, %s, %c : tensor<6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
  }
}
)";

TEST(SpmdPartition, RulesAndTheReplicatedFallback) {
  workload::SpmdReport report;
  const auto p = partition(kRulesAndFallback, &report);
  const auto reduces = ops_of(*p, OpKind::kAllReduce);
  ASSERT_EQ(reduces.size(), 1U);
  EXPECT_EQ(p->collective(p->op(reduces[0])).reduction, workload::ReductionKind::kMax);
  const auto sorts = ops_of(*p, OpKind::kSort);
  ASSERT_EQ(sorts.size(), 1U);
  EXPECT_EQ(result_type(*p, sorts[0]), "tensor<4x6xf32>");
  const auto gathers = ops_of(*p, OpKind::kAllGather);
  ASSERT_EQ(gathers.size(), 1U);  // the custom call's operand, gathered whole
  EXPECT_EQ(result_type(*p, gathers[0]), "tensor<8x6xf32>");
  EXPECT_EQ(report.replicated_ops.at("stablehlo.custom_call"), 1U);
}

TEST(SpmdPartition, IsDeterministicAndLeavesOtherFormsAlone) {
  EXPECT_EQ(workload::dump(*partition(kTensorParallel)), workload::dump(*partition(kTensorParallel)));
  const auto partitioned = parse_one(R"(
module @p attributes {mhlo.num_partitions = 2 : i32} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  EXPECT_EQ(workload::partition_spmd(partitioned).get(), partitioned.get());
}

// What the partitioner cannot express is refused at the attribute, never guessed.
TEST(SpmdPartition, UnsupportedShardingsAreErrorsAtTheirLine) {
  const std::string permuted = R"(module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%x: tensor<8xf32> {mhlo.sharding = "{devices=[4]0,2,1,3}"}) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
)";
  try {
    partition(permuted);
    ADD_FAILURE() << "expected an error";
  } catch (const OrreryError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("explicit device order"), std::string::npos) << e.what();
    ASSERT_TRUE(e.error().where.has_value());
    EXPECT_EQ(e.error().where->line, 2U);
  }
  const std::string unknown_axis = R"(module @m attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
)";
  try {
    partition(unknown_axis);
    ADD_FAILURE() << "expected an error";
  } catch (const OrreryError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("\"y\" is not an axis"), std::string::npos) << e.what();
  }
  const std::string wrong_rank = R"(module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func @main(%x: tensor<8x2xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) -> tensor<8x2xf32> {
    return %x : tensor<8x2xf32>
  }
}
)";
  EXPECT_THROW(partition(wrong_rank), OrreryError);
}

// XLA's own partitioning of the MaxText Llama3-100M step for 8 devices is in ../shared/data beside
// the export before partitioning: Orrery's partitioner gathers the same parameter bytes and
// reduces the same gradient bytes (XLA writes the reduce-scatters as all-reduces and slices).
TEST(SpmdPartition, MatchesXlasPartitioningOfMaxTextLlama) {
  const fs::path dir = fs::path(ORRERY_SHARED_DATA) / "stablehlo/hespas_workloads";
  if (!fs::exists(dir / "llama3-100m.pre-spmd-8dev.mlir")) {
    GTEST_SKIP() << "shared data file absent: " << dir / "llama3-100m.pre-spmd-8dev.mlir";
  }
  auto pre = parse_file((dir / "llama3-100m.pre-spmd-8dev.mlir").string(), {});
  auto post = parse_file((dir / "llama3-100m.post-spmd-8dev.mlir").string(), {});
  ASSERT_TRUE(pre.ok() && post.ok());
  workload::SpmdReport report;
  const auto ours =
      workload::partition_spmd(workload::ProgramBuilder::inline_calls(*pre.value()[0].program), &report);
  const Program& xla = *post.value()[0].program;
  auto bytes = [](const Program& p, OpKind kind) {
    std::uint64_t total = 0;
    for (workload::OpId id = 0; id < p.op_count(); ++id) {
      if (p.op(id).kind == kind) {
        total += p.types().byte_size(p.result_types(p.op(id))[0]).value_or(0);
      }
    }
    return total;
  };
  EXPECT_EQ(bytes(*ours, OpKind::kAllGather), bytes(xla, OpKind::kAllGather));
  const double reduced = static_cast<double>(report.collective_operand_bytes["all_reduce"] +
                                             report.collective_operand_bytes["reduce_scatter"]);
  EXPECT_NEAR(reduced / static_cast<double>(bytes(xla, OpKind::kAllReduce)), 1.0, 0.01);
  EXPECT_TRUE(report.replicated_ops.empty());
}

// Every pre-partitioning module of several devices in ../shared/data partitions (or is refused with
// a located error); the partitioned program holds per-device shapes no larger than the global ones.
TEST(SpmdPartition, EveryPrePartitioningModuleOfTheSharedDataPartitions) {
  const fs::path dir = fs::path(ORRERY_SHARED_DATA) / "stablehlo";
  if (!fs::exists(dir)) {
    GTEST_SKIP() << "shared data directory absent: " << dir;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".mlir") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::size_t partitioned = 0;
  for (const fs::path& path : files) {
    auto modules = parse_file(path.string(), {});
    if (!modules.ok()) {
      continue;  // the verifier's invalid cases (data_walk_test)
    }
    for (const auto& module : modules.value()) {
      if (module.program->form() != workload::ProgramForm::kPrePartitioning ||
          module.program->num_devices() < 2) {
        continue;
      }
      try {
        const auto p = workload::partition_spmd(workload::ProgramBuilder::inline_calls(*module.program));
        EXPECT_EQ(p->form(), workload::ProgramForm::kPartitioned) << path;
        const auto& before = module.program->function(module.program->entry_function());
        const auto& after = p->function(p->entry_function());
        for (std::size_t i = 0; i < before.argument_types.count; ++i) {
          EXPECT_LE(p->types().byte_size(p->argument_types(after)[i]).value_or(0),
                    module.program->types().byte_size(module.program->argument_types(before)[i]).value_or(0))
              << path;
        }
        ++partitioned;
      } catch (const OrreryError& e) {
        EXPECT_TRUE(e.error().where.has_value()) << path << ": " << e.what();
      }
    }
  }
  EXPECT_GE(partitioned, 3U);
}

// A loop over layers (lax.scan, a gradient accumulation loop) is partitioned inside: the
// loop-carried activations keep the batch sharding, the gradient accumulated in the loop is
// all-reduced in the body (once per iteration), and the trip count is kept.
constexpr const char* kLoop = R"(
module @scan attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func @main(%x: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>},
                  %w: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
      -> (tensor<16x8xf32>, tensor<8x8xf32>) {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %acc0 = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %r:3 = stablehlo.while(%i = %c0, %h = %x, %acc = %acc0) : tensor<i32>, tensor<16x8xf32>, tensor<8x8xf32>
     cond {
      %c4 = stablehlo.constant dense<4> : tensor<i32>
      %p = stablehlo.compare LT, %i, %c4 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %y = stablehlo.dot_general %h, %w, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
      %g = stablehlo.dot_general %h, %y, contracting_dims = [0] x [0] : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
      %a = stablehlo.add %acc, %g : tensor<8x8xf32>
      stablehlo.return %n, %y, %a : tensor<i32>, tensor<16x8xf32>, tensor<8x8xf32>
    }
    return %r#1, %r#2 : tensor<16x8xf32>, tensor<8x8xf32>
  }
}
)";

// A sharding constraint inside a loop body holds there: no collective, the body on shards.
constexpr const char* kConstrainedLoop = R"(
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]>
  func.func @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %r:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<8x4xf32>
      cond {
        %c4 = stablehlo.constant dense<4> : tensor<i32>
        %p = stablehlo.compare LT, %i, %c4 : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
      } do {
        %c1 = stablehlo.constant dense<1> : tensor<i32>
        %n = stablehlo.add %i, %c1 : tensor<i32>
        %y = stablehlo.multiply %x, %x : tensor<8x4xf32>
        %z = sdy.sharding_constraint %y <@mesh, [{"x"}, {}]> : tensor<8x4xf32>
        stablehlo.return %n, %z : tensor<i32>, tensor<8x4xf32>
      }
    return %r#1 : tensor<8x4xf32>
  }
}
)";

TEST(SpmdPartition, ConstraintsInsideLoopBodiesHold) {
  const auto p = partition(kConstrainedLoop);
  EXPECT_TRUE(ops_of(*p, OpKind::kAllGather).empty());
  const auto products = ops_of(*p, OpKind::kMultiply);
  ASSERT_EQ(products.size(), 1U);
  EXPECT_EQ(result_type(*p, products[0]), "tensor<2x4xf32>");
}

TEST(SpmdPartition, WhileLoopsArePartitionedInside) {
  workload::SpmdReport report;
  const auto p = partition(kLoop, &report);
  EXPECT_TRUE(report.replicated_ops.empty());
  const auto loops = ops_of(*p, OpKind::kWhile);
  ASSERT_EQ(loops.size(), 1U);
  const auto& loop = p->op(loops[0]);
  EXPECT_EQ(p->types().to_string(p->result_types(loop)[1]), "tensor<4x8xf32>");
  EXPECT_EQ(p->types().to_string(p->result_types(loop)[2]), "tensor<8x8xf32>");
  EXPECT_EQ(p->while_loop(loop).trip_count, 4U);
  const auto reduces = ops_of(*p, OpKind::kAllReduce);
  ASSERT_EQ(reduces.size(), 1U);
  const workload::BlockId body = p->blocks(p->region(p->regions(loop)[1])).front();
  EXPECT_EQ(p->op(reduces[0]).block, body);
  EXPECT_TRUE(ops_of(*p, OpKind::kAllGather).empty());
  const auto dots = ops_of(*p, OpKind::kDotGeneral);
  ASSERT_EQ(dots.size(), 2U);
  EXPECT_EQ(result_type(*p, dots[0]), "tensor<4x8xf32>");
}

std::string module_of(const std::string& arguments, const std::string& result, const std::string& body) {
  return "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
         "  sdy.mesh @mesh = <[\"x\"=4]>\n"
         "  func.func @main(" +
         arguments + ") -> " + result + " {\n" + body + "\n  }\n}\n";
}

// A whole operand an op needs sharded is sliced on the device (a slice op), so the op's work and
// bytes are the device's share: a batched matmul of a replicated and a batch-sharded operand.
TEST(SpmdPartition, GainedShardingsAreSliced) {
  const auto p = partition(module_of(
      "%a: tensor<4x64x64xf32>, %b: tensor<4x64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}, "
      "{}]>}",
      "(tensor<4x64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}, {}]>})",
      "    %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
      "(tensor<4x64x64xf32>, tensor<4x64x64xf32>) -> tensor<4x64x64xf32>\n"
      "    return %0 : tensor<4x64x64xf32>"));
  const auto slices = ops_of(*p, OpKind::kSlice);
  ASSERT_EQ(slices.size(), 1U);
  EXPECT_EQ(result_type(*p, slices[0]), "tensor<1x64x64xf32>");
  const auto dots = ops_of(*p, OpKind::kDotGeneral);
  ASSERT_EQ(dots.size(), 1U);
  EXPECT_EQ(p->types().to_string(p->value_type(p->operands(p->op(dots[0]))[0])), "tensor<1x64x64xf32>");
  EXPECT_TRUE(ops_of(*p, OpKind::kAllGather).empty());
}

// Malformed shardings are refused at their attribute (never a hang or a crash); ops whose
// dimension numbers do not fit their operands, or of zero-size tensors, run whole.
TEST(SpmdPartition, MalformedInputsAreRefusedOrRunWhole) {
  const std::string body = "    return %a : tensor<8x4xf32>";
  for (const auto& [sharding, message] : std::vector<std::pair<std::string, std::string>>{
           {"#sdy.sharding<@mesh, [{\"x\"}, {]>", "is not closed"},
           {"#sdy.sharding<@mesh, [{\"x}\"}, {}]>", "quote is not closed"},
           {"#sdy.sharding<@mesh, [{\"x\"}, {\"x\"}]>", "uses a mesh axis twice"},
           {"#sdy.sharding<@mesh, [{\"x\":(4294967296)4294967296}, {}]>", "sub-axis"},
           {"\"{devices=[4,1]<=[2,2]T(1,1)}\"", "not a permutation"},
           {"\"{devices=[-4,-1]<=[4]}\"", "must be positive"}}) {
    const std::string text =
        module_of("%a: tensor<8x4xf32> {" + std::string(sharding[0] == '#' ? "sdy" : "mhlo") +
                      ".sharding = " + sharding + "}",
                  "tensor<8x4xf32>", body);
    try {
      partition(text);
      ADD_FAILURE() << "expected an error for " << sharding;
    } catch (const OrreryError& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << sharding;
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_TRUE(e.error().where.has_value() && e.error().where->line == 3) << e.what();
    }
  }
  workload::SpmdReport report;
  const auto p = partition(
      module_of(
          "%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}, %b: tensor<4x8xf32>",
          "tensor<8x8xf32>",
          "    %0 = stablehlo.dot_general %a, %b, contracting_dims = [7] x [9] : (tensor<8x4xf32>, "
          "tensor<4x8xf32>) -> tensor<8x8xf32>\n    return %0 : tensor<8x8xf32>"),
      &report);
  EXPECT_EQ(report.replicated_ops.at("stablehlo.dot_general"), 1U);
  workload::SpmdReport empty;
  partition(
      module_of("%a: tensor<0x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"x\"}]>}", "tensor<4x0xf32>",
                "    %0 = stablehlo.reshape %a : (tensor<0x4xf32>) -> tensor<4x0xf32>\n"
                "    return %0 : tensor<4x0xf32>"),
      &empty);
  EXPECT_EQ(empty.replicated_ops.at("stablehlo.reshape"), 1U);
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
