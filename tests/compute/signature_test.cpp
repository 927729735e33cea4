// OpSignature: element types, the textbook counts of the builders, table shapes, hashing.
#include <gtest/gtest.h>

#include <unordered_set>

#include "compute/op_signature.h"

namespace orrery::compute {
namespace {

TEST(ElementType, NamesRoundTripAndAliasesParse) {
  for (const ElementTypeInfo& type : element_types()) {
    EXPECT_EQ(parse_element_type(type.name), type.type) << type.name;
  }
  EXPECT_EQ(parse_element_type("si8"), ElementType::kI8);  // Hespas' spelling
  EXPECT_EQ(parse_element_type("fp16"), ElementType::kF16);
  EXPECT_EQ(parse_element_type("f8E4M3FN"), ElementType::kF8E4M3FN);
  EXPECT_FALSE(parse_element_type("f17").has_value());
  EXPECT_EQ(info(ElementType::kF8E5M2).family, PrecisionFamily::kF8);
  EXPECT_EQ(info(ElementType::kU8).family, PrecisionFamily::kI8);
}

TEST(ElementType, StorageBytes) {
  // bytes = ceil(count * bits / 8): bf16 2 B, i1 stored as one byte, i4 packed two per byte.
  EXPECT_EQ(storage_bytes(ElementType::kBF16, 10), 20U);
  EXPECT_EQ(storage_bytes(ElementType::kI1, 10), 10U);
  EXPECT_EQ(storage_bytes(ElementType::kI4, 3), 2U);
  EXPECT_EQ(storage_bytes(ElementType::kTF32, 1), 4U);
}

TEST(OpSignature, GemmBuilderCounts) {
  // flops = 2 * b * m * n * k = 2 * 2 * 3 * 5 * 7 = 420; reads b*(m*k + k*n) = 2*(21+35) = 112
  // elements, writes b*m*n = 30 elements, f16: 2 bytes each.
  const OpSignature op = gemm_signature("dot_general", ElementType::kF16, {2, 3, 5, 7});
  EXPECT_EQ(op.op_class, OpClass::kGemm);
  EXPECT_DOUBLE_EQ(op.flops.value, 420.0);
  EXPECT_EQ(op.bytes_read.count, 224U);
  EXPECT_EQ(op.bytes_written.count, 60U);
  EXPECT_EQ(op.table_shape(), (std::vector<std::uint64_t>{2, 3, 5, 7}));
}

TEST(OpSignature, ConvolutionBuilderCounts) {
  // A 3x3 convolution, 8 -> 16 channels, 2 groups, 10x10 input, stride 1, no padding: output 8x8.
  // flops = 2 * output pixels * C_out * kernel volume * C_in / groups = 2 * 64 * 16 * 9 * 4 = 73728.
  ConvShape shape;
  shape.input_features = 8;
  shape.output_features = 16;
  shape.feature_groups = 2;
  shape.input_size = {10, 10, 1};
  shape.kernel_size = {3, 3, 1};
  shape.output_size = {8, 8, 1};
  const OpSignature op = convolution_signature("convolution", ElementType::kF32, shape);
  EXPECT_DOUBLE_EQ(op.flops.value, 73728.0);
  // reads input 8*100 + kernel 9*4*16 = 1376 elements, writes 64*16 = 1024, f32.
  EXPECT_EQ(op.bytes_read.count, 1376U * 4);
  EXPECT_EQ(op.bytes_written.count, 1024U * 4);
  // im2col: m = 64 output pixels, k = 9 * 8 / 2 = 36, n = 16 / 2 = 8, once per group.
  EXPECT_EQ(im2col_gemm(shape), (GemmShape{2, 64, 8, 36}));
}

TEST(OpSignature, ScaleSimOutputSizeConvention) {
  // SCALE-Sim: ceil((224 - 11 + 4) / 4) = 55 (StableHLO's floor((224 - 11) / 4) + 1 would be 54).
  const ConvShape conv = convolution_from_scalesim_layer(224, 224, 11, 11, 3, 96, 4);
  EXPECT_EQ(conv.output_size[0], 55U);
  EXPECT_EQ(conv.output_size[1], 55U);
  EXPECT_EQ(im2col_gemm(conv), (GemmShape{1, 3025, 96, 363}));
}

TEST(OpSignature, RowwiseAndElementwiseShapes) {
  // elementwise: flops = per-element flops * elements; reads inputs * elements.
  const OpSignature add = elementwise_signature("add", OpClass::kElementwise, ElementType::kBF16, 100, 2, 1.0);
  EXPECT_EQ(add.table_shape(), std::vector<std::uint64_t>{100});
  EXPECT_EQ(add.bytes_read.count, 400U);
  EXPECT_EQ(add.bytes_written.count, 200U);
  const OpSignature norm = rowwise_signature("rms_norm", OpClass::kNormalisation, ElementType::kF16, 4, 8, 4.0);
  EXPECT_EQ(norm.table_shape(), (std::vector<std::uint64_t>{4, 8}));
  EXPECT_DOUBLE_EQ(norm.flops.value, 128.0);
}

TEST(OpSignature, HashAndEqualityCoverEveryField) {
  const OpSignature base = gemm_signature("dot_general", ElementType::kBF16, {1, 128, 256, 512});
  std::vector<OpSignature> variants(7, base);
  variants[1].kind = "custom";
  variants[2].element_type = ElementType::kF16;
  variants[3].gemm.k = 513;
  variants[4].bytes_read.count += 1;
  variants[5].flops.value += 1.0;
  variants[6].op_class = OpClass::kOther;
  std::unordered_set<std::uint64_t> hashes;
  for (const OpSignature& op : variants) {
    hashes.insert(op.hash());
  }
  EXPECT_EQ(hashes.size(), variants.size());
  EXPECT_EQ(base, variants[0]);
  EXPECT_EQ(base.hash(), gemm_signature("dot_general", ElementType::kBF16, {1, 128, 256, 512}).hash());
  EXPECT_NE(base, variants[3]);
}

}  // namespace
}  // namespace orrery::compute
