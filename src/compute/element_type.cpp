#include "compute/element_type.h"

#include <utility>

#include "util/assert.h"

namespace orrery::compute {
namespace {

using F = PrecisionFamily;
using T = ElementType;

constexpr ElementTypeInfo kTypes[] = {
    {T::kI1, "i1", 8, F::kI1},
    {T::kI4, "i4", 4, F::kI4},
    {T::kI8, "i8", 8, F::kI8},
    {T::kI16, "i16", 16, F::kI16},
    {T::kI32, "i32", 32, F::kI32},
    {T::kI64, "i64", 64, F::kI64},
    {T::kU4, "ui4", 4, F::kI4},
    {T::kU8, "ui8", 8, F::kI8},
    {T::kU16, "ui16", 16, F::kI16},
    {T::kU32, "ui32", 32, F::kI32},
    {T::kU64, "ui64", 64, F::kI64},
    {T::kF4E2M1FN, "f4E2M1FN", 4, F::kF4},
    {T::kF6E2M3FN, "f6E2M3FN", 6, F::kF6},
    {T::kF6E3M2FN, "f6E3M2FN", 6, F::kF6},
    {T::kF8E3M4, "f8E3M4", 8, F::kF8},
    {T::kF8E4M3, "f8E4M3", 8, F::kF8},
    {T::kF8E4M3FN, "f8E4M3FN", 8, F::kF8},
    {T::kF8E4M3FNUZ, "f8E4M3FNUZ", 8, F::kF8},
    {T::kF8E4M3B11FNUZ, "f8E4M3B11FNUZ", 8, F::kF8},
    {T::kF8E5M2, "f8E5M2", 8, F::kF8},
    {T::kF8E5M2FNUZ, "f8E5M2FNUZ", 8, F::kF8},
    {T::kF8E8M0FNU, "f8E8M0FNU", 8, F::kF8},
    {T::kBF16, "bf16", 16, F::kBF16},
    {T::kF16, "f16", 16, F::kF16},
    {T::kTF32, "tf32", 32, F::kTF32},
    {T::kF32, "f32", 32, F::kF32},
    {T::kF64, "f64", 64, F::kF64},
    {T::kComplexF32, "complex<f32>", 64, F::kF32},
    {T::kComplexF64, "complex<f64>", 128, F::kF64},
};
static_assert(std::size(kTypes) == kElementTypeCount);

constexpr std::string_view kFamilyNames[] = {"i1", "i4", "i8", "i16", "i32", "i64", "f4",
                                             "f6", "f8", "bf16", "f16", "tf32", "f32", "f64"};
static_assert(std::size(kFamilyNames) == kPrecisionFamilyCount);

// Other spellings seen in tools' configs (Hespas uses si8/si32, PyTorch-style names are common).
constexpr std::pair<std::string_view, ElementType> kAliases[] = {
    {"pred", T::kI1},      {"si4", T::kI4},       {"si8", T::kI8},       {"si16", T::kI16},
    {"si32", T::kI32},     {"si64", T::kI64},     {"int8", T::kI8},      {"int32", T::kI32},
    {"uint8", T::kU8},     {"fp16", T::kF16},     {"float16", T::kF16},  {"half", T::kF16},
    {"bfloat16", T::kBF16}, {"fp32", T::kF32},    {"float32", T::kF32},  {"float", T::kF32},
    {"fp64", T::kF64},     {"float64", T::kF64},  {"double", T::kF64},   {"c64", T::kComplexF32},
    {"c128", T::kComplexF64},
};

}  // namespace

std::span<const ElementTypeInfo> element_types() { return kTypes; }

const ElementTypeInfo& info(ElementType type) {
  const auto index = static_cast<std::size_t>(type);
  ORRERY_ASSERT(index < kElementTypeCount, "element type out of range");
  return kTypes[index];
}

std::string_view name(ElementType type) { return info(type).name; }

std::string_view name(PrecisionFamily family) {
  const auto index = static_cast<std::size_t>(family);
  ORRERY_ASSERT(index < kPrecisionFamilyCount, "precision family out of range");
  return kFamilyNames[index];
}

std::uint64_t storage_bytes(ElementType type, std::uint64_t count) {
  const std::uint64_t bits = info(type).bits;
  return (count * bits + 7) / 8;
}

std::optional<ElementType> parse_element_type(std::string_view text) {
  for (const ElementTypeInfo& entry : kTypes) {
    if (entry.name == text) {
      return entry.type;
    }
  }
  for (const auto& [alias, type] : kAliases) {
    if (alias == text) {
      return type;
    }
  }
  return std::nullopt;
}

std::optional<PrecisionFamily> parse_precision_family(std::string_view text) {
  for (std::size_t i = 0; i < kPrecisionFamilyCount; ++i) {
    if (kFamilyNames[i] == text) {
      return static_cast<PrecisionFamily>(i);
    }
  }
  return std::nullopt;
}

}  // namespace orrery::compute
