// The counting layer (compute/op_counting.h): FLOPs and bytes of IR ops against hand-computed
// values. Every test states the formula it checks. Real ops come from the shared files: the
// ResNet-50 training step of Hespas' fixtures (MIT; the op lines below are copied verbatim from
// ../shared/data/stablehlo/hespas/resnet50_train_step_4dev_b1024.mlir) and the Llama3-100M step,
// which is read in place (no licence found: not copied).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "compute/kernel_table.h"
#include "compute/op_counting.h"
#include "config/loader.h"
#include "frontend/stablehlo/stablehlo.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

using workload::OpId;
using workload::OpKind;
using workload::Program;

std::shared_ptr<const Program> parse(const std::string& text) { return testing::parse_program(text); }

// The ops of the entry function's body but its return, in program order.
std::vector<OpId> entry_ops(const Program& p) {
  std::vector<OpId> ops;
  for (const OpId id : p.ops(p.block(p.entry_block(p.function(p.entry_function()))))) {
    if (p.op(id).kind != OpKind::kReturn) {
      ops.push_back(id);
    }
  }
  return ops;
}

// One function taking `arguments` and running `body`.
std::string function(const std::string& arguments, const std::string& body) {
  return "func.func @main(" + arguments + ") -> () {\n" + body + "\n  return\n}\n";
}

struct Counted {
  std::shared_ptr<const Program> program;
  std::vector<OpCount> ops;  // entry ops, in order
};

Counted count_all(const std::string& text, CountOptions options = {}) {
  Counted counted;
  counted.program = parse(text);
  if (counted.program == nullptr) {
    return counted;
  }
  const OpCounter counter(*counted.program, options);
  for (const OpId id : entry_ops(*counted.program)) {
    counter.count(id, counted.ops.emplace_back());
  }
  return counted;
}

// The first entry op's count.
OpCount count_first(const std::string& arguments, const std::string& body, CountOptions options = {}) {
  Counted counted = count_all(function(arguments, body), options);
  return counted.ops.empty() ? OpCount{} : counted.ops[0];
}

TEST(Counting, DotGeneralBatchAndContractingDims) {
  // B = 2 (batching), M = 3, N = 5, K = 4: F = 2 B M N K = 240; reads (24 + 40) bf16, writes 30 f32.
  const OpCount c = count_first(
      "%a: tensor<2x3x4xbf16>, %b: tensor<2x4x5xbf16>",
      "  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
      "(tensor<2x3x4xbf16>, tensor<2x4x5xbf16>) -> tensor<2x3x5xf32>");
  EXPECT_EQ(c.role, CostRole::kCompute);
  EXPECT_EQ(c.signature.op_class, OpClass::kGemm);
  EXPECT_EQ(c.signature.kind, "dot_general");
  EXPECT_EQ(c.signature.element_type, ElementType::kBF16);
  EXPECT_EQ(c.signature.gemm, (GemmShape{2, 3, 5, 4}));
  EXPECT_DOUBLE_EQ(c.signature.flops.value, 240.0);
  EXPECT_EQ(c.signature.bytes_read.count, (24U + 40U) * 2U);
  EXPECT_EQ(c.signature.bytes_written.count, 30U * 4U);
}

TEST(Counting, DotIsTheDotGeneralOfLastByFirst) {
  // dot: lhs dim 1 contracts with rhs dim 0: M = 3, N = 5, K = 4: F = 2 * 3 * 5 * 4 = 120.
  const OpCount c = count_first("%m: tensor<3x4xbf16>, %n: tensor<4x5xbf16>",
                                "  %0 = stablehlo.dot %m, %n : (tensor<3x4xbf16>, tensor<4x5xbf16>) -> tensor<3x5xbf16>");
  EXPECT_EQ(c.signature.gemm, (GemmShape{1, 3, 5, 4}));
  EXPECT_DOUBLE_EQ(c.signature.flops.value, 120.0);
}

TEST(Counting, F32MatmulsRunInTf32UnlessHighestOrAskedNotTo) {
  const std::string arguments = "%m: tensor<3x4xf32>, %n: tensor<4x5xf32>";
  const std::string dot_default =
      "  %0 = stablehlo.dot_general %m, %n, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : "
      "(tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>";
  const std::string dot_highest =
      "  %0 = stablehlo.dot_general %m, %n, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : "
      "(tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>";
  EXPECT_EQ(count_first(arguments, dot_default).signature.element_type, ElementType::kTF32);
  EXPECT_EQ(count_first(arguments, dot_highest).signature.element_type, ElementType::kF32);
  EXPECT_EQ(count_first(arguments, dot_default, CountOptions{F32Matmul::kF32}).signature.element_type,
            ElementType::kF32);
  // Bytes stay those of f32 storage: reads (12 + 20) * 4.
  EXPECT_EQ(count_first(arguments, dot_default).signature.bytes_read.count, 128U);
}

// Llama3-100M's dot_generals (../shared/data/stablehlo/hespas_workloads/llama3-100m.post-spmd-4dev.mlir,
// read in place): attention scores batch over (batch, heads), the MLP and its weight gradient.
TEST(Counting, LlamaDotGenerals) {
  const std::filesystem::path file =
      testing::shared_data() / "stablehlo" / "hespas_workloads" / "llama3-100m.post-spmd-4dev.mlir";
  if (!std::filesystem::exists(file)) {
    GTEST_SKIP() << "shared data absent: " << file << " (read in place)";
  }
  auto modules = frontend::stablehlo::parse_file(file.string(), {});
  ASSERT_TRUE(modules.ok()) << modules.error().render();
  const Program& p = *modules.value()[0].program;
  const OpCounter counter(p, {});
  // By (lhs type, rhs type, result type): the expected gemm shape.
  struct Expected {
    std::string types;
    GemmShape gemm;
    double flops;
  };
  const std::vector<Expected> expected{
      // batching [0, 2] x [0, 2], contracting [3] x [3]: B = 1 * 9, M = N = 4096, K = 128;
      // F = 2 * 9 * 4096 * 4096 * 128.
      {"tensor<1x4096x9x128xbf16> tensor<1x4096x9x128xbf16> tensor<1x9x4096x4096xbf16>", {9, 4096, 4096, 128},
       38654705664.0},
      // contracting [2] x [0]: M = 4096, N = 2016, K = 576; F = 2 * 4096 * 2016 * 576.
      {"tensor<1x4096x576xbf16> tensor<576x2016xbf16> tensor<1x4096x2016xbf16>", {1, 4096, 2016, 576},
       9512681472.0},
      // The weight gradient, contracting [0, 1] x [0, 1]: M = 576, N = 2016, K = 1 * 4096: the same F.
      {"tensor<1x4096x576xbf16> tensor<1x4096x2016xbf16> tensor<576x2016xbf16>", {1, 576, 2016, 4096},
       9512681472.0},
      // contracting [2, 3] x [1, 2]: K = 9 * 128 = 1152, M = 4096, N = 576; F = 2 * 4096 * 576 * 1152.
      {"tensor<1x4096x9x128xbf16> tensor<576x9x128xbf16> tensor<1x4096x576xbf16>", {1, 4096, 576, 1152},
       5435817984.0},
  };
  std::vector<int> found(expected.size(), 0);
  OpCount c;
  for (OpId id = 0; id < p.op_count(); ++id) {
    const workload::Op& op = p.op(id);
    if (op.kind != OpKind::kDotGeneral) {
      continue;
    }
    const auto operands = p.operands(op);
    const std::string types = p.types().to_string(p.value_type(operands[0])) + " " +
                              p.types().to_string(p.value_type(operands[1])) + " " +
                              p.types().to_string(p.result_types(op)[0]);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (types == expected[i].types) {
        counter.count(id, c);
        EXPECT_EQ(c.signature.gemm, expected[i].gemm) << types;
        EXPECT_DOUBLE_EQ(c.signature.flops.value, expected[i].flops) << types;
        ++found[i];
      }
    }
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_GT(found[i], 0) << expected[i].types;
  }
}

// ResNet-50's first layer and a strided 3x3 layer, forward and the backward-data / backward-filter
// convolutions JAX exports for them (op lines from resnet50_train_step_4dev_b1024.mlir, MIT).
// F = 2 (C_in / groups) C_out (N / batch groups) prod_d V_d, V_d = the (output, kernel) index
// pairs of dimension d that land on a real input element (not padding, not a dilation hole).
constexpr const char* kResNetConvolutions = R"(
func.func @main(%x: tensor<256x224x224x3xf16>, %w: tensor<7x7x3x64xf16>, %dy: tensor<256x112x112x64xf16>,
                %a: tensor<256x14x14x512xf16>, %k: tensor<3x3x512x512xf16>, %g: tensor<256x7x7x512xf16>,
                %c: tensor<256x56x56x256xf16>, %d: tensor<256x28x28x512xf16>, %e: tensor<1x1x256x512xf16>) -> () {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[3, 3], [3, 3]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x224x224x3xf16>, tensor<7x7x3x64xf16>) -> tensor<256x112x112x64xf16>
  %1 = stablehlo.convolution(%x, %dy) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[3, 2], [3, 2]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x224x224x3xf16>, tensor<256x112x112x64xf16>) -> tensor<7x7x3x64xf16>
  %2 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x14x14x512xf16>, tensor<3x3x512x512xf16>) -> tensor<256x7x7x512xf16>
  %3 = stablehlo.convolution(%g, %k) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x7x7x512xf16>, tensor<3x3x512x512xf16>) -> tensor<256x14x14x512xf16>
  %4 = stablehlo.convolution(%a, %g) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x14x14x512xf16>, tensor<256x7x7x512xf16>) -> tensor<3x3x512x512xf16>
  %5 = stablehlo.convolution(%c, %e) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x56x56x256xf16>, tensor<1x1x256x512xf16>) -> tensor<256x28x28x512xf16>
  %6 = stablehlo.convolution(%c, %d) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, -1], [0, -1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<256x56x56x256xf16>, tensor<256x28x28x512xf16>) -> tensor<1x1x256x512xf16>
  return
}
)";

TEST(Counting, ResNetConvolutionsForwardAndBackwardCountAlike) {
  const Counted c = count_all(kResNetConvolutions);
  ASSERT_EQ(c.ops.size(), 7U);
  // conv1 forward, 7x7 stride 2 pad 3 on 224: per dimension 112 x 7 = 784 pairs, 6 of them on
  // padding (o = 0: k < 3; o = 1: k = 0; o = 111: k = 5, 6): V = 778.
  // F = 2 * 3 * 64 * 256 * 778^2 (the textbook 2 N Ho Wo C_out Kh Kw C_in, which counts the
  // padding too, gives 60,423,143,424).
  EXPECT_DOUBLE_EQ(c.ops[0].signature.flops.value, 59501838336.0);
  EXPECT_EQ(c.ops[0].signature.op_class, OpClass::kConvolution);
  EXPECT_EQ(c.ops[0].signature.element_type, ElementType::kF16);
  // Its backward-filter: [f, 0, 1, b] makes the images' batch (256) the reduced feature and the
  // channels (3) the batch; the 112 x 112 gradient is the kernel, dilated by the stride (2), and
  // the same 778 pairs per dimension land on the image: F = 2 * 256 * 64 * 3 * 778^2.
  EXPECT_DOUBLE_EQ(c.ops[1].signature.flops.value, 59501838336.0);
  EXPECT_EQ(c.ops[1].signature.conv.batch, 3U);
  EXPECT_EQ(c.ops[1].signature.conv.input_features, 256U);
  EXPECT_EQ(c.ops[1].signature.conv.output_features, 64U);
  EXPECT_EQ(c.ops[1].signature.conv.kernel_size[0], 112U);
  EXPECT_EQ(c.ops[1].signature.conv.kernel_dilation[0], 2U);
  EXPECT_EQ(c.ops[1].signature.conv.output_size[0], 7U);
  // 3x3 stride 2, 14 -> 7, pad (0, 1): 7 x 3 = 21 pairs, one on the padding: V = 20;
  // F = 2 * 512 * 512 * 256 * 20^2.
  EXPECT_DOUBLE_EQ(c.ops[2].signature.flops.value, 53687091200.0);
  // Backward-data: kernel layout [0, 1, o, i], the 7x7 gradient dilated by 2 (lhs_dilate) and padded
  // (2, 1) to 16; per dimension k = 0 hits 6 real elements, k = 1 and k = 2 hit 7: V = 20, the same
  // F. A dense count (2 N 14 14 C_out 9 C_in) would be 4x too high.
  EXPECT_DOUBLE_EQ(c.ops[3].signature.flops.value, 53687091200.0);
  EXPECT_EQ(c.ops[3].signature.conv.input_dilation[0], 2U);
  // The systolic model's im2col view multiplies only the taps that land on real input elements:
  // k = ceil(20^2 / 14^2 * 512) = 1045 (a dense im2col would take all 9 x 512 taps).
  EXPECT_EQ(im2col_gemm(c.ops[3].signature.conv), (GemmShape{1, 256ULL * 14 * 14, 512, 1045}));
  EXPECT_EQ(im2col_gemm(c.ops[2].signature.conv), (GemmShape{1, 256ULL * 7 * 7, 512, 9 * 512}));
  // Backward-filter of the same layer: V = 20 again.
  EXPECT_DOUBLE_EQ(c.ops[4].signature.flops.value, 53687091200.0);
  // 1x1 stride 2, 56 -> 28: V = 28; F = 2 * 256 * 512 * 256 * 28^2; its backward-filter has
  // negative padding (0, -1): the 28 dilated taps land on input 0, 2, ..., 54: V = 28 too.
  EXPECT_DOUBLE_EQ(c.ops[5].signature.flops.value, 52613349376.0);
  EXPECT_DOUBLE_EQ(c.ops[6].signature.flops.value, 52613349376.0);
  // Bytes: both operands read, the result written (f16).
  EXPECT_EQ(c.ops[0].signature.bytes_read.count, (256ULL * 224 * 224 * 3 + 7 * 7 * 3 * 64) * 2);
  EXPECT_EQ(c.ops[0].signature.bytes_written.count, 256ULL * 112 * 112 * 64 * 2);
}

// The validation/gpu convolution microbenchmarks (kernels.py: NCHW-described layers with symmetric
// padding, pass fwd / dgrad / wgrad) are keyed as the StableHLO JAX emits for each pass: their
// signatures equal the counted ones of these ops (validation/gpu/data/programs/resnet50, lines 4,
// 6109, 2663, 3621, 3619, 659, 5492 and 5490: the stem, a 3x3 stride-2 and a 1x1 stride-2 layer),
// padding and dilation included, so a table built from them matches the export's convolutions.
constexpr const char* kGpuResNetConvolutions = R"(
func.func @main(%x: tensor<128x224x224x3xbf16>, %w: tensor<7x7x3x64xbf16>, %dy: tensor<128x112x112x64xbf16>,
                %a: tensor<128x14x14x512xbf16>, %k: tensor<3x3x512x512xbf16>, %g: tensor<128x7x7x512xbf16>,
                %c: tensor<128x56x56x256xbf16>, %e: tensor<1x1x256x512xbf16>, %d: tensor<128x28x28x512xbf16>) -> () {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[3, 3], [3, 3]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x224x224x3xbf16>, tensor<7x7x3x64xbf16>) -> tensor<128x112x112x64xbf16>
  %1 = stablehlo.convolution(%x, %dy) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[3, 2], [3, 2]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x224x224x3xbf16>, tensor<128x112x112x64xbf16>) -> tensor<7x7x3x64xbf16>
  %2 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x14x14x512xbf16>, tensor<3x3x512x512xbf16>) -> tensor<128x7x7x512xbf16>
  %3 = stablehlo.convolution(%g, %k) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 2], [1, 2]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x7x7x512xbf16>, tensor<3x3x512x512xbf16>) -> tensor<128x14x14x512xbf16>
  %4 = stablehlo.convolution(%a, %g) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 0], [1, 0]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x14x14x512xbf16>, tensor<128x7x7x512xbf16>) -> tensor<3x3x512x512xbf16>
  %5 = stablehlo.convolution(%c, %e) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x56x56x256xbf16>, tensor<1x1x256x512xbf16>) -> tensor<128x28x28x512xbf16>
  %6 = stablehlo.convolution(%d, %e) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 1], [0, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x28x28x512xbf16>, tensor<1x1x256x512xbf16>) -> tensor<128x56x56x256xbf16>
  %7 = stablehlo.convolution(%c, %d) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, -1], [0, -1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<128x56x56x256xbf16>, tensor<128x28x28x512xbf16>) -> tensor<1x1x256x512xbf16>
  return
}
)";

TEST(Counting, GpuConvolutionMicrobenchmarksMatchTheExportedConvolutions) {
  const Counted c = count_all(kGpuResNetConvolutions);
  ASSERT_EQ(c.ops.size(), 8U);
  const auto csv = testing::write_temp("gpu_bench/conv.csv",
                                       "pass,dtype,n,c,h,w,k,r,s,stride,pad,time_us,iters,method\n"
                                       "fwd,bf16,128,3,224,224,64,7,7,2,3,900,2,eager\n"
                                       "wgrad,bf16,128,3,224,224,64,7,7,2,3,600,2,eager\n"
                                       "fwd,bf16,128,512,14,14,512,3,3,2,1,100,2,eager\n"
                                       "dgrad,bf16,128,512,14,14,512,3,3,2,1,100,2,eager\n"
                                       "wgrad,bf16,128,512,14,14,512,3,3,2,1,100,2,eager\n"
                                       "fwd,bf16,128,256,56,56,512,1,1,2,0,100,2,eager\n"
                                       "dgrad,bf16,128,256,56,56,512,1,1,2,0,100,2,eager\n"
                                       "wgrad,bf16,128,256,56,56,512,1,1,2,0,100,2,eager\n");
  const std::vector<MeasuredOp> bench = read_gpu_microbenchmark_csv(csv.string(), "H200");
  ASSERT_EQ(bench.size(), 8U);
  auto text = [](const ConvShape& s) {
    auto three = [](const std::array<std::uint64_t, 3>& a) {
      return fmt::format("{}x{}x{}", a[0], a[1], a[2]);
    };
    return fmt::format(
        "batch {} in {} out {} groups {}/{} input {} kernel {} output {} stride {} pad {}-{} dilation {}/{}",
        s.batch, s.input_features, s.output_features, s.feature_groups, s.batch_groups, three(s.input_size),
        three(s.kernel_size), three(s.output_size), three(s.stride), three(s.padding_low),
        three(s.padding_high), three(s.input_dilation), three(s.kernel_dilation));
  };
  for (std::size_t i = 0; i < bench.size(); ++i) {
    const OpSignature& counted = c.ops[i].signature;
    EXPECT_EQ(text(bench[i].op.conv), text(counted.conv)) << bench[i].label << " " << bench[i].source;
    EXPECT_EQ(bench[i].op.table_shape(), counted.table_shape()) << bench[i].source;
    EXPECT_DOUBLE_EQ(bench[i].op.flops.value, counted.flops.value) << bench[i].source;
    EXPECT_EQ(bench[i].op.bytes_written, counted.bytes_written) << bench[i].source;
    EXPECT_EQ(bench[i].op.element_type, ElementType::kBF16);
    EXPECT_EQ(bench[i].hardware, "H200");
  }
  EXPECT_DOUBLE_EQ(bench[0].time_s, 900e-6);
}

TEST(Counting, GroupedConvolutions) {
  // Depthwise: feature_group_count 16, 3x3 pad 1 on 8x8: V = 8 * 3 - 2 = 22 per dimension;
  // F = 2 * (16 / 16) * 16 * 1 * 22^2 = 15,488.
  const OpCount depthwise = count_first(
      "%x: tensor<1x8x8x16xf32>, %w: tensor<3x3x1x16xf32>",
      "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = "
      "{stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 16 : i64} "
      ": (tensor<1x8x8x16xf32>, tensor<3x3x1x16xf32>) -> tensor<1x8x8x16xf32>");
  EXPECT_DOUBLE_EQ(depthwise.signature.flops.value, 15488.0);
  EXPECT_EQ(depthwise.signature.conv.feature_groups, 16U);
  // batch_group_count 2 (a depthwise backward-filter): N = 4 in 2 groups, C_out = 32, 3x3 valid on
  // 8 -> 6: V = 18; F = 2 * 16 * 32 * (4 / 2) * 18^2 = 663,552.
  const OpCount batch_groups = count_first(
      "%x: tensor<4x8x8x16xf32>, %w: tensor<3x3x16x32xf32>",
      "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = "
      "{stride = [1, 1]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} "
      ": (tensor<4x8x8x16xf32>, tensor<3x3x16x32xf32>) -> tensor<2x6x6x32xf32>");
  EXPECT_DOUBLE_EQ(batch_groups.signature.flops.value, 663552.0);
  EXPECT_EQ(batch_groups.signature.conv.batch_groups, 2U);
  // Without padding and dilation the rule is the textbook one: NCHW input, OIHW kernel,
  // F = 2 N Ho Wo C_out Kh Kw C_in = 2 * 2 * 6 * 6 * 8 * 3 * 3 * 4 = 41,472.
  const OpCount nchw = count_first(
      "%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf32>",
      "  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = "
      "{stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} "
      ": (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>");
  EXPECT_DOUBLE_EQ(nchw.signature.flops.value, 41472.0);
  EXPECT_EQ(nchw.signature.conv.input_size[0], 8U);
  EXPECT_EQ(nchw.signature.conv.kernel_size[1], 3U);
  EXPECT_EQ(nchw.signature.conv.input_features, 4U);
  EXPECT_EQ(nchw.signature.conv.output_features, 8U);
  EXPECT_DOUBLE_EQ(nchw.signature.flops.value, convolution_signature("c", ElementType::kF32, nchw.signature.conv).flops.value);
}

TEST(Counting, ElementwiseWeights) {
  const Counted c = count_all(function(
      "%x: tensor<4x8xf32>, %y: tensor<4x8xf32>",
      "  %0 = stablehlo.add %x, %y : tensor<4x8xf32>\n"
      "  %1 = stablehlo.exponential %x : tensor<4x8xf32>\n"
      "  %2 = stablehlo.divide %x, %y : tensor<4x8xf32>\n"
      "  %3 = chlo.erf %x : tensor<4x8xf32> -> tensor<4x8xf32>\n"
      "  %4 = chlo.broadcast_add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>\n"
      "  %5 = stablehlo.logistic %x : tensor<4x8xf32>\n"
      "  %6 = stablehlo.convert %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>\n"
      "  %7 = stablehlo.compare GT, %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>\n"
      "  %8 = stablehlo.select %7, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>"));
  ASSERT_EQ(c.ops.size(), 9U);
  // add: F = 1 * 32; reads 2 * 128 B, writes 128 B.
  EXPECT_DOUBLE_EQ(c.ops[0].signature.flops.value, 32.0);
  EXPECT_EQ(c.ops[0].signature.op_class, OpClass::kElementwise);
  EXPECT_EQ(c.ops[0].signature.bytes_read.count, 256U);
  EXPECT_EQ(c.ops[0].signature.bytes_written.count, 128U);
  EXPECT_EQ(c.ops[0].signature.elements, 32U);
  // exponential: one special-function evaluation, 8 FLOPs per element: F = 256, transcendental.
  EXPECT_DOUBLE_EQ(c.ops[1].signature.flops.value, 256.0);
  EXPECT_EQ(c.ops[1].signature.op_class, OpClass::kTranscendental);
  // divide: 8 per element, elementwise class.
  EXPECT_DOUBLE_EQ(c.ops[2].signature.flops.value, 256.0);
  EXPECT_EQ(c.ops[2].signature.op_class, OpClass::kElementwise);
  // chlo.erf: a polynomial special function, 32 per element: F = 1024.
  EXPECT_DOUBLE_EQ(c.ops[3].signature.flops.value, 1024.0);
  EXPECT_EQ(c.ops[3].signature.kind, "erf");
  // chlo.broadcast_add is an add.
  EXPECT_EQ(c.ops[4].signature.kind, "add");
  EXPECT_DOUBLE_EQ(c.ops[4].signature.flops.value, 32.0);
  // logistic: exp and a reciprocal, 16 per element.
  EXPECT_DOUBLE_EQ(c.ops[5].signature.flops.value, 512.0);
  // convert f32 -> bf16: F = 32; reads 128 B, writes 64 B.
  EXPECT_DOUBLE_EQ(c.ops[6].signature.flops.value, 32.0);
  EXPECT_EQ(c.ops[6].signature.bytes_read.count, 128U);
  EXPECT_EQ(c.ops[6].signature.bytes_written.count, 64U);
  // compare: computes in f32, writes one byte per i1; select reads the predicate and both operands.
  EXPECT_EQ(c.ops[7].signature.element_type, ElementType::kF32);
  EXPECT_EQ(c.ops[7].signature.bytes_written.count, 32U);
  EXPECT_EQ(c.ops[8].signature.bytes_read.count, 32U + 256U);
}

TEST(Counting, EveryElementwiseKindHasAWeight) {
  for (std::size_t i = 0; i <= static_cast<std::size_t>(OpKind::kUnknown); ++i) {
    const auto kind = static_cast<OpKind>(i);
    if (workload::op_category(kind) == workload::OpCategory::kElementwise && kind != OpKind::kBitcastConvert) {
      EXPECT_GT(elementwise_flops_per_element(kind), 0.0) << workload::op_kind_name(kind);
    } else {
      EXPECT_EQ(elementwise_flops_per_element(kind), 0.0) << workload::op_kind_name(kind);
    }
  }
}

TEST(Counting, DataMovementIsBytes) {
  const Counted c = count_all(function(
      "%x: tensor<4x8xf32>, %v: tensor<8xf32>, %u: tensor<1x8xf32>, %i: tensor<i32>",
      "  %0 = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>\n"
      "  %1 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>\n"
      "  %2 = stablehlo.slice %x [0:2, 0:8] : (tensor<4x8xf32>) -> tensor<2x8xf32>\n"
      "  %3 = stablehlo.dynamic_slice %x, %i, %i, sizes = [1, 8] : (tensor<4x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x8xf32>\n"
      "  %4 = stablehlo.dynamic_update_slice %x, %u, %i, %i : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<i32>, tensor<i32>) -> tensor<4x8xf32>\n"
      "  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %5 = stablehlo.pad %x, %c, low = [1, 1], high = [1, 1], interior = [0, 0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<6x10xf32>\n"
      "  %6 = stablehlo.concatenate %x, %x, dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>\n"
      "  %7 = stablehlo.iota dim = 0 : tensor<4x8xi32>\n"
      "  %8 = stablehlo.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>\n"
      "  %9 = stablehlo.reverse %x, dims = [0] : tensor<4x8xf32>"));
  ASSERT_EQ(c.ops.size(), 11U);
  const auto bytes = [&](std::size_t i) {
    return std::make_pair(c.ops[i].signature.bytes_read.count, c.ops[i].signature.bytes_written.count);
  };
  for (std::size_t i : {0U, 1U, 2U, 3U, 4U, 6U, 7U, 8U, 10U}) {
    EXPECT_EQ(c.ops[i].role, CostRole::kCompute) << i;
    EXPECT_DOUBLE_EQ(c.ops[i].signature.flops.value, 0.0) << i;
  }
  // broadcast_in_dim: reads its operand once (32 B), writes the result (128 B).
  EXPECT_EQ(bytes(0), std::make_pair(std::uint64_t{32}, std::uint64_t{128}));
  EXPECT_EQ(c.ops[0].signature.op_class, OpClass::kDataMovement);
  // transpose: reads and writes 128 B.
  EXPECT_EQ(bytes(1), std::make_pair(std::uint64_t{128}, std::uint64_t{128}));
  // slice: only the selected 2 x 8 elements are read: 64 B each way.
  EXPECT_EQ(bytes(2), std::make_pair(std::uint64_t{64}, std::uint64_t{64}));
  // dynamic_slice: the 1 x 8 slice (32 B) and two i32 indices (8 B); gather_scatter class.
  EXPECT_EQ(bytes(3), std::make_pair(std::uint64_t{40}, std::uint64_t{32}));
  EXPECT_EQ(c.ops[3].signature.op_class, OpClass::kGatherScatter);
  // dynamic_update_slice, in place: reads the update (32 B) and the indices (8 B), writes 32 B.
  EXPECT_EQ(bytes(4), std::make_pair(std::uint64_t{40}, std::uint64_t{32}));
  EXPECT_EQ(c.ops[5].role, CostRole::kFree);  // constant
  // pad: reads the operand and the padding value (128 + 4 B), writes 6 x 10 x 4 = 240 B.
  EXPECT_EQ(bytes(6), std::make_pair(std::uint64_t{132}, std::uint64_t{240}));
  // concatenate: reads both operands (256 B), writes 256 B.
  EXPECT_EQ(bytes(7), std::make_pair(std::uint64_t{256}, std::uint64_t{256}));
  // iota: writes 4 x 8 i32 = 128 B, reads nothing.
  EXPECT_EQ(bytes(8), std::make_pair(std::uint64_t{0}, std::uint64_t{128}));
  // reshape: a bitcast of the row-major buffer: free.
  EXPECT_EQ(c.ops[9].role, CostRole::kFree);
  EXPECT_EQ(bytes(10), std::make_pair(std::uint64_t{128}, std::uint64_t{128}));
}

TEST(Counting, ReductionsWindowsGatherScatterSort) {
  const Counted c = count_all(function(
      "%x: tensor<4x8xf32>, %idx: tensor<2x1xi64>, %u: tensor<2x8xf32>",
      R"(  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "stablehlo.reduce_window"(%x, %z) <{padding = dense<[[0, 0], [0, 1]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 3>, window_strides = array<i64: 1, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x4xf32>
  %2 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = true, slice_sizes = array<i64: 1, 8>}> : (tensor<4x8xf32>, tensor<2x1xi64>) -> tensor<2x8xf32>
  %3 = "stablehlo.scatter"(%x, %idx, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %4 = "stablehlo.scatter"(%x, %idx, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %5 = "stablehlo.sort"(%x) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %lt = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>)"));
  ASSERT_EQ(c.ops.size(), 7U);
  // reduce: each of the 32 inputs combined once by an add: F = 32; reads 128 + 4 B (init), writes
  // 16 B; 4 outputs of rows of 8.
  const OpSignature& reduce = c.ops[1].signature;
  EXPECT_EQ(reduce.op_class, OpClass::kReduction);
  EXPECT_DOUBLE_EQ(reduce.flops.value, 32.0);
  EXPECT_EQ(reduce.bytes_read.count, 132U);
  EXPECT_EQ(reduce.bytes_written.count, 16U);
  EXPECT_EQ(reduce.elements, 4U);
  EXPECT_EQ(reduce.row_length, 8U);
  // reduce_window: 16 outputs x window 1 x 3 x maximum (1): F = 48.
  EXPECT_DOUBLE_EQ(c.ops[2].signature.flops.value, 48.0);
  EXPECT_EQ(c.ops[2].signature.row_length, 3U);
  // gather: the gathered 2 x 8 f32 (64 B) and the 2 x 1 i64 indices (16 B) are read; 64 B written.
  EXPECT_EQ(c.ops[3].signature.op_class, OpClass::kGatherScatter);
  EXPECT_EQ(c.ops[3].signature.bytes_read.count, 80U);
  EXPECT_EQ(c.ops[3].signature.bytes_written.count, 64U);
  // scatter-add, in place: F = 16 updates x 1; reads indices (16 B), updates (64 B) and the 16
  // targets (64 B); writes the 16 targets (64 B).
  EXPECT_DOUBLE_EQ(c.ops[4].signature.flops.value, 16.0);
  EXPECT_EQ(c.ops[4].signature.bytes_read.count, 144U);
  EXPECT_EQ(c.ops[4].signature.bytes_written.count, 64U);
  // A scatter that assigns: no FLOPs, targets not read.
  EXPECT_DOUBLE_EQ(c.ops[5].signature.flops.value, 0.0);
  EXPECT_EQ(c.ops[5].signature.bytes_read.count, 80U);
  // sort of rows of 8: ceil(log2 8) = 3 comparisons per element: F = 32 * 3 = 96.
  EXPECT_EQ(c.ops[6].signature.op_class, OpClass::kSort);
  EXPECT_DOUBLE_EQ(c.ops[6].signature.flops.value, 96.0);
  EXPECT_EQ(c.ops[6].signature.row_length, 8U);
}

// ResNet-50's max pool and its gradient (op lines from resnet50_train_step_4dev_b1024.mlir, MIT).
TEST(Counting, ResNetMaxPoolAndItsGradient) {
  const Counted c = count_all(R"(
func.func @main(%x: tensor<256x112x112x64xf16>, %s: tensor<256x56x56x64xf16>) -> () {
  %cst = stablehlo.constant dense<0xFC00> : tensor<f16>
  %z = stablehlo.constant dense<0.000000e+00> : tensor<f16>
  %0 = "stablehlo.reduce_window"(%x, %cst) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
  ^bb0(%a: tensor<f16>, %b: tensor<f16>):
    %m = stablehlo.maximum %a, %b : tensor<f16>
    stablehlo.return %m : tensor<f16>
  }) : (tensor<256x112x112x64xf16>, tensor<f16>) -> tensor<256x56x56x64xf16>
  %1 = "stablehlo.select_and_scatter"(%x, %s, %z) <{padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
  ^bb0(%a: tensor<f16>, %b: tensor<f16>):
    %ge = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f16>, tensor<f16>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f16>, %b: tensor<f16>):
    %sum = stablehlo.add %a, %b : tensor<f16>
    stablehlo.return %sum : tensor<f16>
  }) : (tensor<256x112x112x64xf16>, tensor<256x56x56x64xf16>, tensor<f16>) -> tensor<256x112x112x64xf16>
  return
}
)");
  ASSERT_EQ(c.ops.size(), 4U);
  // reduce_window: 256 * 56 * 56 * 64 outputs x 3 x 3 window x maximum: F = 462,422,016.
  EXPECT_DOUBLE_EQ(c.ops[2].signature.flops.value, 462422016.0);
  // select_and_scatter: per source element, 9 compares to select and 1 add to scatter:
  // F = 256 * 56 * 56 * 64 * (9 + 1) = 513,802,240; reads operand and source, writes the operand's
  // shape.
  EXPECT_DOUBLE_EQ(c.ops[3].signature.flops.value, 513802240.0);
  EXPECT_EQ(c.ops[3].signature.bytes_read.count, (256ULL * 112 * 112 * 64 + 256ULL * 56 * 56 * 64 + 1) * 2);
  EXPECT_EQ(c.ops[3].signature.bytes_written.count, 256ULL * 112 * 112 * 64 * 2);
}

TEST(Counting, CustomCallsByTarget) {
  const Counted c = count_all(function(
      "%x: tensor<4x8xf32>, %a: tensor<64x32xf16>, %b: tensor<32x16xf16>",
      R"(  %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{replicated}"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = stablehlo.custom_call @SPMDFullToShardShape(%x) {mhlo.sharding = "{manual}"} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %2 = stablehlo.custom_call @my_kernel(%x) {backend_config = "cfg"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = stablehlo.custom_call @__cublas$gemm(%a, %b) {backend_config = "{\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]}}"} : (tensor<64x32xf16>, tensor<32x16xf16>) -> tuple<tensor<64x16xf16>, tensor<1024xi8>>
  %4 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>)"));
  ASSERT_EQ(c.ops.size(), 5U);
  EXPECT_EQ(c.ops[0].role, CostRole::kFree);
  EXPECT_EQ(c.ops[1].role, CostRole::kFree);
  EXPECT_EQ(c.ops[4].role, CostRole::kFree);
  // An unknown target: bytes only (128 B each way), flagged.
  EXPECT_EQ(c.ops[2].role, CostRole::kCompute);
  EXPECT_EQ(c.ops[2].signature.op_class, OpClass::kCustomCall);
  EXPECT_EQ(c.ops[2].signature.kind, "my_kernel");
  EXPECT_NE(c.ops[2].flags & kFlagUnknownCustomCall, 0);
  EXPECT_DOUBLE_EQ(c.ops[2].signature.flops.value, 0.0);
  EXPECT_EQ(c.ops[2].signature.bytes_read.count, 128U);
  // cuBLAS GEMM: K = lhs dim 1 = 32, M = 64, N = 16: F = 2 * 64 * 16 * 32 = 65,536; writes the
  // 64 x 16 f16 result, not the workspace.
  EXPECT_EQ(c.ops[3].signature.op_class, OpClass::kGemm);
  EXPECT_EQ(c.ops[3].signature.gemm, (GemmShape{1, 64, 16, 32}));
  EXPECT_DOUBLE_EQ(c.ops[3].signature.flops.value, 65536.0);
  EXPECT_EQ(c.ops[3].signature.bytes_written.count, 64U * 16U * 2U);
}

TEST(Counting, FusedAttentionIsItsGemms) {
  // q [2, 8, 128, 64], k and v [2, 2, 512, 64] (grouped-query: 2 kv heads): B A = 16.
  const Counted c = count_all(function(
      "%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x512x64xbf16>, %v: tensor<2x2x512x64xbf16>, "
      "%do: tensor<2x8x128x64xbf16>",
      R"(  %0:2 = stablehlo.custom_call @orrery.attention(%q, %k, %v) {backend_config = "causal"} : (tensor<2x8x128x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x2x512x64xbf16>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>)
  %1:2 = stablehlo.custom_call @orrery.attention(%q, %k, %v) : (tensor<2x8x128x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x2x512x64xbf16>) -> (tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>)
  %2:3 = stablehlo.custom_call @orrery.attention_backward(%q, %k, %v, %0#0, %0#1, %do) {backend_config = "causal"} : (tensor<2x8x128x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x8x128x64xbf16>, tensor<2x8x128xf32>, tensor<2x8x128x64xbf16>) -> (tensor<2x8x128x64xbf16>, tensor<2x2x512x64xbf16>, tensor<2x2x512x64xbf16>)
  %3 = stablehlo.custom_call @orrery.attention(%do) : (tensor<2x8x128x64xbf16>) -> tensor<2x8x128x64xbf16>)"));
  ASSERT_EQ(c.ops.size(), 4U);
  // Forward, causal: QK^T and PV as one GEMM of batch 2 x 16, M = 128, N = 512 / 2, K = 64:
  // F = 4 * 16 * 128 * 512 * 64 / 2 = 134,217,728.
  EXPECT_EQ(c.ops[0].signature.op_class, OpClass::kGemm);
  EXPECT_EQ(c.ops[0].signature.gemm, (GemmShape{32, 128, 256, 64}));
  EXPECT_DOUBLE_EQ(c.ops[0].signature.flops.value, 134217728.0);
  EXPECT_EQ(c.ops[0].flags & kFlagUnknownCustomCall, 0);
  // Not causal: the whole square.
  EXPECT_EQ(c.ops[1].signature.gemm, (GemmShape{32, 128, 512, 64}));
  EXPECT_DOUBLE_EQ(c.ops[1].signature.flops.value, 268435456.0);
  // Backward, causal: five GEMMs: F = 10 * 16 * 128 * 512 * 64 / 2 = 335,544,320.
  EXPECT_EQ(c.ops[2].signature.gemm, (GemmShape{80, 128, 256, 64}));
  EXPECT_DOUBLE_EQ(c.ops[2].signature.flops.value, 335544320.0);
  // Operands that are not q, k, v of rank 4: bytes only, flagged as an unknown custom call.
  EXPECT_EQ(c.ops[3].signature.op_class, OpClass::kCustomCall);
  EXPECT_NE(c.ops[3].flags & kFlagUnknownCustomCall, 0);
  EXPECT_DOUBLE_EQ(c.ops[3].signature.flops.value, 0.0);
}

TEST(Counting, FusedAttentionWithValuesOfTheirOwnWidth) {
  // Multi-head latent attention's shapes: q and k heads of 192, v heads of 128 (B A = 16).
  const Counted c = count_all(function(
      "%q: tensor<2x8x128x192xbf16>, %k: tensor<2x8x512x192xbf16>, %v: tensor<2x8x512x128xbf16>, "
      "%do: tensor<2x8x128x128xbf16>",
      R"(  %0:2 = stablehlo.custom_call @orrery.attention(%q, %k, %v) {backend_config = "causal"} : (tensor<2x8x128x192xbf16>, tensor<2x8x512x192xbf16>, tensor<2x8x512x128xbf16>) -> (tensor<2x8x128x128xbf16>, tensor<2x8x128xf32>)
  %1:3 = stablehlo.custom_call @orrery.attention_backward(%q, %k, %v, %0#0, %0#1, %do) {backend_config = "causal"} : (tensor<2x8x128x192xbf16>, tensor<2x8x512x192xbf16>, tensor<2x8x512x128xbf16>, tensor<2x8x128x128xbf16>, tensor<2x8x128xf32>, tensor<2x8x128x128xbf16>) -> (tensor<2x8x128x192xbf16>, tensor<2x8x512x192xbf16>, tensor<2x8x512x128xbf16>))"));
  ASSERT_EQ(c.ops.size(), 2U);
  // Forward: QK^T over 192 and PV over 128: F = 2 * 16 * 128 * 256 * (192 + 128); K their mean.
  EXPECT_EQ(c.ops[0].signature.gemm, (GemmShape{32, 128, 256, 160}));
  EXPECT_DOUBLE_EQ(c.ops[0].signature.flops.value, 2.0 * 16 * 128 * 256 * 320);
  // Backward: QK^T, dQ and dK over 192, dP and dV over 128: F = 2 * 16 * 128 * 256 * (3 * 192 + 2 * 128).
  EXPECT_EQ(c.ops[1].signature.gemm, (GemmShape{80, 128, 256, 166}));
  EXPECT_DOUBLE_EQ(c.ops[1].signature.flops.value, 2.0 * 16 * 128 * 256 * 832);
}

TEST(Counting, RolesOfFreeCommunicationAndOpaqueOps) {
  const Counted c = count_all(R"(
module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<1.0> : tensor<4xf32>
    %t = stablehlo.tuple %x, %c : tuple<tensor<4xf32>, tensor<4xf32>>
    %g = stablehlo.get_tuple_element %t[0] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
    %b:2 = stablehlo.optimization_barrier %g, %c : tensor<4xf32>, tensor<4xf32>
    %p = stablehlo.partition_id : tensor<ui32>
    %r = "stablehlo.all_reduce"(%b#0) ({
    ^bb0(%a: tensor<f32>, %d: tensor<f32>):
      %s = stablehlo.add %a, %d : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4xf32>) -> tensor<4xf32>
    %o = "foo.bar"(%r) : (tensor<4xf32>) -> tensor<4xf32>
    %q = stablehlo.bitcast_convert %o : (tensor<4xf32>) -> tensor<4xi32>
    return %r : tensor<4xf32>
  }
}
)");
  ASSERT_EQ(c.ops.size(), 8U);
  for (std::size_t i : {0U, 1U, 2U, 3U, 4U, 6U, 7U}) {
    EXPECT_EQ(c.ops[i].role, CostRole::kFree) << i;
  }
  EXPECT_EQ(c.ops[5].role, CostRole::kCommunication);
  EXPECT_NE(c.ops[6].flags & kFlagOpaque, 0);
}

TEST(Counting, FusionIsOneKernel) {
  // An XLA fusion of a dot (2 * 8 * 4 * 16 = 1024 FLOPs), a bias add (32) and an exponential
  // (8 * 32): F = 1312; the kernel reads its operands (8x16 + 16x4 + 8x4 f32 = 896 B) and writes
  // its result (128 B), not the intermediates.
  const Counted c = count_all(function(
      "%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<8x4xf32>",
      R"(  %0 = "mhlo.fusion"(%a, %b, %bias) ({
  ^bb0(%p: tensor<8x16xf32>, %q: tensor<16x4xf32>, %r: tensor<8x4xf32>):
    %1 = stablehlo.dot_general %p, %q, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.add %1, %r : tensor<8x4xf32>
    %3 = stablehlo.exponential %2 : tensor<8x4xf32>
    "mhlo.return"(%3) : (tensor<8x4xf32>) -> ()
  }) {fusion_kind = #mhlo<fusion_kind kOutput>} : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>)"));
  ASSERT_EQ(c.ops.size(), 1U);
  const OpSignature& s = c.ops[0].signature;
  EXPECT_EQ(c.ops[0].role, CostRole::kCompute);
  EXPECT_EQ(s.op_class, OpClass::kGemm);  // the dominant inner op
  EXPECT_EQ(s.kind, "dot_general");
  EXPECT_EQ(s.gemm, (GemmShape{1, 8, 4, 16}));
  EXPECT_DOUBLE_EQ(s.flops.value, 1312.0);
  EXPECT_EQ(s.bytes_read.count, 896U);
  EXPECT_EQ(s.bytes_written.count, 128U);
}

TEST(Counting, CustomCallTableIsDocumented) {
  const std::string page = config::read_text_file((testing::source_dir() / "docs" / "compute.md").string());
  for (const CustomCallRule& rule : custom_call_rules()) {
    EXPECT_NE(page.find("`" + std::string(rule.target) + "`"), std::string::npos)
        << rule.target << " is missing from docs/compute.md's custom-call table";
  }
}

}  // namespace
}  // namespace orrery::compute
