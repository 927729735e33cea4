#include "workload/types.h"

#include <gtest/gtest.h>

#include "workload/op_kind.h"
#include "workload/program.h"

namespace orrery::workload {
namespace {

TEST(ElementType, NamesRoundTripAndSizes) {
  for (const char* name : {"i1", "i8", "i32", "i64", "ui8", "ui32", "bf16", "f16", "f32", "f64", "f8E4M3FN",
                           "f8E5M2", "index", "complex<f32>", "complex<f64>", "f4E2M1FN"}) {
    const auto type = element_type_from_name(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(element_type_name(*type), name);
  }
  EXPECT_EQ(element_type_from_name("si32"), ElementType::kI32);  // signedness does not change the size
  EXPECT_EQ(element_storage_bits(ElementType::kBF16), 16U);
  EXPECT_EQ(element_storage_bits(ElementType::kI1), 8U);  // a predicate takes a byte
  EXPECT_EQ(element_storage_bits(ElementType::kComplexF32), 64U);
  EXPECT_EQ(element_storage_bits(ElementType::kF8E4M3FN), 8U);
  EXPECT_EQ(element_type_from_name("i10"), ElementType::kUnknown);  // valid MLIR, not sized
  EXPECT_FALSE(element_type_from_name("f33").has_value());
  EXPECT_TRUE(is_floating_point(ElementType::kBF16));
  EXPECT_TRUE(is_integer(ElementType::kUI8));
  EXPECT_TRUE(is_complex(ElementType::kComplexF64));
}

TypeDescription tensor(ElementType element, std::vector<std::int64_t> dims,
                       std::vector<std::int64_t> bounds = {}) {
  TypeDescription d;
  d.kind = TypeKind::kTensor;
  d.element = element;
  d.dimensions = std::move(dims);
  d.bounds = std::move(bounds);
  return d;
}

TEST(TypeTable, InternsByTextAndByStructure) {
  TypeTable types;
  const TypeId a = types.intern(tensor(ElementType::kBF16, {4, 8}), "tensor<4x8xbf16>");
  EXPECT_EQ(types.find_text("tensor<4x8xbf16>"), a);
  // Another spelling of the same type gets the same id, and is found by its own text afterwards.
  const TypeId b = types.intern(tensor(ElementType::kBF16, {4, 8}), "tensor<4x8xbf16 >");
  EXPECT_EQ(a, b);
  EXPECT_EQ(types.find_text("tensor<4x8xbf16 >"), a);
  EXPECT_FALSE(types.find_text("tensor<8x4xbf16>").has_value());
  EXPECT_EQ(types.size(), 1U);
  EXPECT_EQ(types.to_string(a), "tensor<4x8xbf16>");
}

// byte_size = element count x storage bits / 8 (rounded up); a dynamic dimension counts at its bound.
TEST(TypeTable, ByteSizes) {
  TypeTable types;
  EXPECT_EQ(types.byte_size(types.intern(tensor(ElementType::kBF16, {128256, 576}), "t1")),
            128256U * 576U * 2U);
  EXPECT_EQ(types.byte_size(types.intern(tensor(ElementType::kF32, {}), "t2")), 4U);  // rank 0
  EXPECT_EQ(types.byte_size(types.intern(tensor(ElementType::kI1, {3}), "t3")), 3U);
  EXPECT_EQ(types.byte_size(types.intern(tensor(ElementType::kI4, {3}), "t4")), 2U);  // 12 bits -> 2 bytes
  const TypeId dynamic = types.intern(tensor(ElementType::kF32, {kDynamicDimension, 4}), "t5");
  EXPECT_FALSE(types.byte_size(dynamic).has_value());
  EXPECT_FALSE(types.is_static(dynamic));
  const TypeId bounded = types.intern(tensor(ElementType::kF32, {kDynamicDimension, 4}, {8, kNoBound}), "t6");
  EXPECT_EQ(types.byte_size(bounded), 8U * 4U * 4U);
  EXPECT_EQ(types.to_string(bounded), "tensor<?x4xf32, #stablehlo.bounds<8, ?>>");
  TypeDescription tuple;
  tuple.kind = TypeKind::kTuple;
  tuple.members = {types.find_text("t1").value(), types.find_text("t2").value()};
  EXPECT_EQ(types.byte_size(types.intern(tuple, "tuple")), 128256U * 576U * 2U + 4U);
  TypeDescription token;
  token.kind = TypeKind::kToken;
  EXPECT_EQ(types.byte_size(types.intern(token, "!stablehlo.token")), 0U);
  TypeDescription unknown = tensor(ElementType::kUnknown, {2});
  EXPECT_FALSE(types.byte_size(types.intern(unknown, "t7")).has_value());
}

TEST(OpKind, TableSpellings) {
  EXPECT_EQ(op_kind_from_name("stablehlo.add"), OpKind::kAdd);
  EXPECT_EQ(op_kind_from_name("mhlo.add"), OpKind::kAdd);
  EXPECT_EQ(op_kind_from_name("chlo.broadcast_add"), OpKind::kAdd);
  EXPECT_EQ(op_kind_from_name("mhlo.fusion"), OpKind::kFusion);
  EXPECT_EQ(op_kind_from_name("func.call"), OpKind::kCall);
  EXPECT_EQ(op_kind_from_name("call"), OpKind::kCall);
  EXPECT_EQ(op_kind_from_name("sdy.manual_computation"), OpKind::kManualComputation);
  EXPECT_EQ(op_kind_from_name("arith.constant"), OpKind::kConstant);
  EXPECT_EQ(op_kind_from_name("tensor.empty"), OpKind::kEmpty);
  EXPECT_EQ(op_kind_from_name("chlo.top_k"), OpKind::kTopK);
  EXPECT_FALSE(op_kind_from_name("stablehlo.fusion").has_value());  // mhlo only
  EXPECT_FALSE(op_kind_from_name("check.expect_eq").has_value());
  EXPECT_EQ(op_category(OpKind::kDotGeneral), OpCategory::kContraction);
  EXPECT_EQ(op_category(OpKind::kAllToAll), OpCategory::kCollective);
  EXPECT_EQ(op_kind_name(OpKind::kDotGeneral), "dot_general");
  EXPECT_EQ(op_operand_count(OpKind::kSelect), 3);
  EXPECT_EQ(op_operand_count(OpKind::kConcatenate), -1);
  EXPECT_TRUE(is_modelled_dialect("chlo"));
  EXPECT_FALSE(is_modelled_dialect("check"));
}

}  // namespace
}  // namespace orrery::workload

namespace orrery::workload {
namespace {

TEST(LineIndex, AgreesWithLocateAtEveryOffset) {
  // Empty lines, a line without a trailing newline, and offsets at and past the end.
  const std::string text = "module {\n\n  %0 = stablehlo.add %a, %b\n\nreturn";
  const LineIndex lines(text);
  for (std::size_t offset = 0; offset <= text.size(); ++offset) {
    const SourceLocation where = locate("f.mlir", text, offset);
    const auto [line, column] = lines.line_column(offset);
    EXPECT_EQ(line, where.line) << "offset " << offset;
    EXPECT_EQ(column, where.column) << "offset " << offset;
  }
  EXPECT_EQ(lines.line_column(11), (std::pair<std::uint32_t, std::uint32_t>{3, 2}));
}

}  // namespace
}  // namespace orrery::workload
