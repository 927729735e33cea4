// Tensor types of the workload IR: element types, ranked tensors with static, dynamic and bounded
// dimensions, tuples, tokens and futures. Types are interned in a per-program TypeTable and named
// by a TypeId, so an op stores four bytes per result and equal types compare as equal ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace orrery::workload {

// Element types of MLIR's builtin dialect that StableHLO programs use. Signless and signed integers
// of one width share an entry (si32 reads as i32); quantized element types are recorded by their
// storage type with TypeTable::quantized() set.
enum class ElementType : std::uint8_t {
  kUnknown,  // an element type Orrery does not model (a dialect type); its size is unknown
  kI1,
  kI2,
  kI4,
  kI8,
  kI16,
  kI32,
  kI64,
  kUI2,
  kUI4,
  kUI8,
  kUI16,
  kUI32,
  kUI64,
  kIndex,
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
  kTF32,
  kF32,
  kF64,
  kComplexF32,
  kComplexF64,
};

// The MLIR spelling ("bf16", "complex<f32>", "?" for kUnknown).
std::string_view element_type_name(ElementType type);
// Parses an MLIR element type spelling; "si8" and "i8" give kI8; integer widths without an entry
// (i10) and f80/f128 give kUnknown (valid, size unknown). nullopt for anything else.
std::optional<ElementType> element_type_from_name(std::string_view name);
// Storage bits per element. i1 takes 8 (XLA stores a predicate in a byte); index takes 64;
// kUnknown takes 0.
unsigned element_storage_bits(ElementType type);
bool is_floating_point(ElementType type);
bool is_integer(ElementType type);  // signless, signed and unsigned integers, i1 and index
bool is_complex(ElementType type);

enum class TypeKind : std::uint8_t {
  kTensor,          // tensor<AxBxE>, ranked (rank 0 for tensor<E>)
  kUnrankedTensor,  // tensor<*xE>
  kScalar,          // a bare builtin element type used as a type: i32, f32, index, complex<f32>
  kTuple,           // tuple<T, ...>
  kToken,           // !stablehlo.token (or !mhlo.token)
  kFuture,          // !stablehlo.future<T, ...>
  kOther,           // memref, vector and dialect types: kept by their text only
};

using TypeId = std::uint32_t;

// A dimension that is not known statically ('?').
inline constexpr std::int64_t kDynamicDimension = -1;
// A dimension of a bounded tensor that has no bound ('?' in #stablehlo.bounds<...>).
inline constexpr std::int64_t kNoBound = -1;

// The structure of one type, as a frontend describes it to TypeTable::intern.
struct TypeDescription {
  TypeKind kind = TypeKind::kOther;
  ElementType element = ElementType::kUnknown;
  bool quantized = false;
  std::vector<std::int64_t> dimensions;  // kTensor: one entry per dimension, kDynamicDimension for '?'
  std::vector<std::int64_t> bounds;      // empty, or one entry per dimension (kNoBound where unbounded)
  std::vector<TypeId> members;           // kTuple, kFuture: the member types
};

// Interned types of one program. Lookup by the text as written is the fast path (a frontend asks
// find_text before parsing a type); intern() canonicalises, so two spellings of one type (with and
// without an empty bounds attribute, say) get one id.
class TypeTable {
 public:
  // The type written as `text`, if that text was interned before.
  [[nodiscard]] std::optional<TypeId> find_text(std::string_view text) const;
  // Interns a type. `text` is its spelling (kept as a view: it must outlive the table, e.g. a view
  // into the program's source) and is remembered for find_text.
  TypeId intern(const TypeDescription& description, std::string_view text);

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] TypeKind kind(TypeId id) const { return entries_[id].kind; }
  [[nodiscard]] ElementType element(TypeId id) const { return entries_[id].element; }
  [[nodiscard]] bool quantized(TypeId id) const { return entries_[id].quantized; }
  [[nodiscard]] bool is_tensor(TypeId id) const { return entries_[id].kind == TypeKind::kTensor; }
  [[nodiscard]] std::size_t rank(TypeId id) const { return entries_[id].rank; }
  [[nodiscard]] std::span<const std::int64_t> dimensions(TypeId id) const;
  // Empty when the type has no bounds.
  [[nodiscard]] std::span<const std::int64_t> bounds(TypeId id) const;
  [[nodiscard]] std::span<const TypeId> members(TypeId id) const;
  // The spelling of the type's first occurrence.
  [[nodiscard]] std::string_view text(TypeId id) const { return entries_[id].text; }
  [[nodiscard]] bool is_static(TypeId id) const;
  // Element count of a static tensor (1 for rank 0, scalars); nullopt when not static.
  [[nodiscard]] std::optional<std::uint64_t> element_count(TypeId id) const;
  // Bytes of a value of this type: element count × storage bits / 8 rounded up; the sum over
  // members for tuples; 0 for tokens. A dynamic dimension counts at its bound when it has one.
  // nullopt when a dimension is unbounded or the element type is unknown.
  [[nodiscard]] std::optional<std::uint64_t> byte_size(TypeId id) const;
  // Canonical spelling, e.g. "tensor<4x?xbf16>".
  [[nodiscard]] std::string to_string(TypeId id) const;

  [[nodiscard]] std::size_t heap_bytes() const;
  void shrink_to_fit();

 private:
  struct Entry {
    TypeKind kind;
    ElementType element;
    bool quantized;
    std::uint32_t rank;
    std::uint32_t dimensions_begin;
    std::uint32_t bounds_begin;  // kNoBounds when absent
    std::uint32_t members_begin;
    std::uint32_t member_count;
    std::string_view text;
  };
  static constexpr std::uint32_t kNoBounds = UINT32_MAX;

  [[nodiscard]] std::optional<std::uint64_t> static_extent(TypeId id) const;
  std::string canonical_key(const TypeDescription& description, std::string_view text) const;

  std::vector<Entry> entries_;
  std::vector<std::int64_t> dimensions_;
  std::vector<std::int64_t> bounds_;
  std::vector<TypeId> members_;
  std::unordered_map<std::string_view, TypeId> by_text_;
  std::unordered_map<std::string, TypeId> by_structure_;
};

}  // namespace orrery::workload
