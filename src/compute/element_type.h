// Element types of compute ops, spelt as StableHLO spells them (f32, bf16, f8E4M3FN, i8, ui8...),
// plus tf32, which StableHLO never stores but which f32 dots compute in on tensor cores.
//
// Every type belongs to a precision family (f8E4M3FN and f8E5M2 are both "f8", i8 and ui8 are
// both "i8"); hardware presets give peak rates per family or per exact type.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace orrery::compute {

enum class ElementType : std::uint8_t {
  kI1,  // pred: one byte per element in memory
  kI4,
  kI8,
  kI16,
  kI32,
  kI64,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF4E2M1FN,
  kF6E2M3FN,
  kF6E3M2FN,
  kF8E3M4,
  kF8E4M3,
  kF8E4M3FN,
  kF8E4M3FNUZ,
  kF8E4M3B11FNUZ,
  kF8E5M2,
  kF8E5M2FNUZ,
  kF8E8M0FNU,
  kBF16,
  kF16,
  kTF32,  // 19-bit tensor-core format; stored as f32
  kF32,
  kF64,
  kComplexF32,
  kComplexF64,
};
inline constexpr std::size_t kElementTypeCount = 29;

// Precision families: the keys hardware presets give peaks for.
enum class PrecisionFamily : std::uint8_t { kI1, kI4, kI8, kI16, kI32, kI64, kF4, kF6, kF8, kBF16, kF16, kTF32, kF32, kF64 };
inline constexpr std::size_t kPrecisionFamilyCount = 14;

struct ElementTypeInfo {
  ElementType type;
  std::string_view name;  // StableHLO spelling
  std::uint32_t bits;     // storage bits per element (i1: 8, tf32: 32)
  PrecisionFamily family;
};

// Every element type, in enumeration order.
std::span<const ElementTypeInfo> element_types();
const ElementTypeInfo& info(ElementType type);
std::string_view name(ElementType type);
std::string_view name(PrecisionFamily family);

// Storage bytes of `count` elements (sub-byte types are packed: ceil(count * bits / 8)).
std::uint64_t storage_bytes(ElementType type, std::uint64_t count);

// Parses a StableHLO element type name; also accepts the aliases that Hespas node configs and
// common tools use (si8 = i8, fp16 = f16, float32 = f32, complex<f32>, ...). Case-sensitive.
std::optional<ElementType> parse_element_type(std::string_view text);
std::optional<PrecisionFamily> parse_precision_family(std::string_view text);

}  // namespace orrery::compute
