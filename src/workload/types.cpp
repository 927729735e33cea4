#include "workload/types.h"

#include <array>

#include "util/assert.h"

namespace orrery::workload {
namespace {

struct ElementTypeInfo {
  ElementType type;
  std::string_view name;
  unsigned bits;
  enum Class : std::uint8_t { kInteger, kFloat, kComplex, kOpaque } category;
};

// One row per ElementType, in enum order.
constexpr std::array<ElementTypeInfo, 33> kElementTypes{{
    {ElementType::kUnknown, "?", 0, ElementTypeInfo::kOpaque},
    {ElementType::kI1, "i1", 8, ElementTypeInfo::kInteger},
    {ElementType::kI2, "i2", 2, ElementTypeInfo::kInteger},
    {ElementType::kI4, "i4", 4, ElementTypeInfo::kInteger},
    {ElementType::kI8, "i8", 8, ElementTypeInfo::kInteger},
    {ElementType::kI16, "i16", 16, ElementTypeInfo::kInteger},
    {ElementType::kI32, "i32", 32, ElementTypeInfo::kInteger},
    {ElementType::kI64, "i64", 64, ElementTypeInfo::kInteger},
    {ElementType::kUI2, "ui2", 2, ElementTypeInfo::kInteger},
    {ElementType::kUI4, "ui4", 4, ElementTypeInfo::kInteger},
    {ElementType::kUI8, "ui8", 8, ElementTypeInfo::kInteger},
    {ElementType::kUI16, "ui16", 16, ElementTypeInfo::kInteger},
    {ElementType::kUI32, "ui32", 32, ElementTypeInfo::kInteger},
    {ElementType::kUI64, "ui64", 64, ElementTypeInfo::kInteger},
    {ElementType::kIndex, "index", 64, ElementTypeInfo::kInteger},
    {ElementType::kF4E2M1FN, "f4E2M1FN", 4, ElementTypeInfo::kFloat},
    {ElementType::kF6E2M3FN, "f6E2M3FN", 6, ElementTypeInfo::kFloat},
    {ElementType::kF6E3M2FN, "f6E3M2FN", 6, ElementTypeInfo::kFloat},
    {ElementType::kF8E3M4, "f8E3M4", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E4M3, "f8E4M3", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E4M3FN, "f8E4M3FN", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E4M3FNUZ, "f8E4M3FNUZ", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E4M3B11FNUZ, "f8E4M3B11FNUZ", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E5M2, "f8E5M2", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E5M2FNUZ, "f8E5M2FNUZ", 8, ElementTypeInfo::kFloat},
    {ElementType::kF8E8M0FNU, "f8E8M0FNU", 8, ElementTypeInfo::kFloat},
    {ElementType::kBF16, "bf16", 16, ElementTypeInfo::kFloat},
    {ElementType::kF16, "f16", 16, ElementTypeInfo::kFloat},
    {ElementType::kTF32, "tf32", 32, ElementTypeInfo::kFloat},
    {ElementType::kF32, "f32", 32, ElementTypeInfo::kFloat},
    {ElementType::kF64, "f64", 64, ElementTypeInfo::kFloat},
    {ElementType::kComplexF32, "complex<f32>", 64, ElementTypeInfo::kComplex},
    {ElementType::kComplexF64, "complex<f64>", 128, ElementTypeInfo::kComplex},
}};

const ElementTypeInfo& info(ElementType type) {
  const auto index = static_cast<std::size_t>(type);
  ORRERY_ASSERT(index < kElementTypes.size() && kElementTypes[index].type == type,
                "kElementTypes must list every ElementType in enum order");
  return kElementTypes[index];
}

}  // namespace

std::string_view element_type_name(ElementType type) {
  return info(type).name;
}

std::optional<ElementType> element_type_from_name(std::string_view name) {
  // Signed integers (si8) share the signless entry: only the width matters for cost.
  if (name.size() > 2 && name[0] == 's' && name[1] == 'i') {
    name.remove_prefix(1);
  }
  for (const ElementTypeInfo& row : kElementTypes) {
    if (row.name == name && row.type != ElementType::kUnknown) {
      return row.type;
    }
  }
  // Other integer widths (i10, ui3) and f80/f128 are valid MLIR types Orrery does not size.
  if (name.size() < 2) {
    return std::nullopt;
  }
  const std::string_view width = name.substr(name.substr(0, 2) == "ui" ? 2 : 1);
  const bool numbered = !width.empty() && width.find_first_not_of("0123456789") == std::string_view::npos;
  if (numbered && (name[0] == 'i' || name.substr(0, 2) == "ui" || name == "f80" || name == "f128")) {
    return ElementType::kUnknown;
  }
  return std::nullopt;
}

unsigned element_storage_bits(ElementType type) {
  return info(type).bits;
}
bool is_floating_point(ElementType type) {
  return info(type).category == ElementTypeInfo::kFloat;
}
bool is_integer(ElementType type) {
  return info(type).category == ElementTypeInfo::kInteger;
}
bool is_complex(ElementType type) {
  return info(type).category == ElementTypeInfo::kComplex;
}

std::optional<TypeId> TypeTable::find_text(std::string_view text) const {
  const auto it = by_text_.find(text);
  if (it == by_text_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string TypeTable::canonical_key(const TypeDescription& description, std::string_view text) const {
  // Types Orrery only knows by spelling (and quantized types, whose parameters are not modelled)
  // are keyed by that spelling; the rest by structure.
  std::string key(1, static_cast<char>('A' + static_cast<int>(description.kind)));
  if (description.kind == TypeKind::kOther || description.quantized) {
    key += text;
    return key;
  }
  key += element_type_name(description.element);
  for (const std::int64_t d : description.dimensions) {
    key += 'x' + std::to_string(d);
  }
  if (!description.bounds.empty()) {
    key += 'b';
    for (const std::int64_t b : description.bounds) {
      key += ',' + std::to_string(b);
    }
  }
  for (const TypeId m : description.members) {
    key += 'm' + std::to_string(m);
  }
  return key;
}

TypeId TypeTable::intern(const TypeDescription& description, std::string_view text) {
  std::string key = canonical_key(description, text);
  if (const auto it = by_structure_.find(key); it != by_structure_.end()) {
    by_text_.emplace(text, it->second);
    return it->second;
  }
  ORRERY_ASSERT(description.bounds.empty() || description.bounds.size() == description.dimensions.size(),
                "bounds need one entry per dimension");
  const auto id = static_cast<TypeId>(entries_.size());
  Entry entry{};
  entry.kind = description.kind;
  entry.element = description.element;
  entry.quantized = description.quantized;
  entry.rank = static_cast<std::uint32_t>(description.dimensions.size());
  entry.dimensions_begin = static_cast<std::uint32_t>(dimensions_.size());
  dimensions_.insert(dimensions_.end(), description.dimensions.begin(), description.dimensions.end());
  entry.bounds_begin = kNoBounds;
  if (!description.bounds.empty()) {
    entry.bounds_begin = static_cast<std::uint32_t>(bounds_.size());
    bounds_.insert(bounds_.end(), description.bounds.begin(), description.bounds.end());
  }
  entry.members_begin = static_cast<std::uint32_t>(members_.size());
  entry.member_count = static_cast<std::uint32_t>(description.members.size());
  members_.insert(members_.end(), description.members.begin(), description.members.end());
  entry.text = text;
  entries_.push_back(entry);
  by_structure_.emplace(std::move(key), id);
  by_text_.emplace(text, id);
  return id;
}

std::span<const std::int64_t> TypeTable::dimensions(TypeId id) const {
  const Entry& e = entries_[id];
  return {dimensions_.data() + e.dimensions_begin, e.rank};
}

std::span<const std::int64_t> TypeTable::bounds(TypeId id) const {
  const Entry& e = entries_[id];
  if (e.bounds_begin == kNoBounds) {
    return {};
  }
  return {bounds_.data() + e.bounds_begin, e.rank};
}

std::span<const TypeId> TypeTable::members(TypeId id) const {
  const Entry& e = entries_[id];
  return {members_.data() + e.members_begin, e.member_count};
}

bool TypeTable::is_static(TypeId id) const {
  const Entry& e = entries_[id];
  if (e.kind == TypeKind::kScalar) {
    return true;
  }
  if (e.kind != TypeKind::kTensor) {
    return false;
  }
  for (const std::int64_t d : dimensions(id)) {
    if (d == kDynamicDimension) {
      return false;
    }
  }
  return true;
}

std::optional<std::uint64_t> TypeTable::element_count(TypeId id) const {
  if (!is_static(id)) {
    return std::nullopt;
  }
  std::uint64_t count = 1;
  for (const std::int64_t d : dimensions(id)) {
    count *= static_cast<std::uint64_t>(d);
  }
  return count;
}

// Elements of a tensor or scalar, taking a dynamic dimension at its bound.
std::optional<std::uint64_t> TypeTable::static_extent(TypeId id) const {
  const Entry& e = entries_[id];
  if (e.kind == TypeKind::kScalar) {
    return 1;
  }
  if (e.kind != TypeKind::kTensor) {
    return std::nullopt;
  }
  const auto dims = dimensions(id);
  const auto bound = bounds(id);
  std::uint64_t count = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::int64_t d = dims[i];
    if (d == kDynamicDimension) {
      d = bound.empty() ? kNoBound : bound[i];
      if (d == kNoBound) {
        return std::nullopt;
      }
    }
    count *= static_cast<std::uint64_t>(d);
  }
  return count;
}

std::optional<std::uint64_t> TypeTable::byte_size(TypeId id) const {
  const Entry& e = entries_[id];
  switch (e.kind) {
    case TypeKind::kToken:
      return 0;
    case TypeKind::kTuple:
    case TypeKind::kFuture: {
      std::uint64_t total = 0;
      for (const TypeId m : members(id)) {
        const auto size = byte_size(m);
        if (!size) {
          return std::nullopt;
        }
        total += *size;
      }
      return total;
    }
    case TypeKind::kTensor:
    case TypeKind::kScalar: {
      const unsigned bits = element_storage_bits(e.element);
      const auto count = static_extent(id);
      if (bits == 0 || !count) {
        return std::nullopt;
      }
      return (*count * bits + 7) / 8;
    }
    case TypeKind::kUnrankedTensor:
    case TypeKind::kOther:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string TypeTable::to_string(TypeId id) const {
  const Entry& e = entries_[id];
  if (e.kind == TypeKind::kOther || e.quantized) {
    return std::string(e.text);
  }
  switch (e.kind) {
    case TypeKind::kToken:
      return "!stablehlo.token";
    case TypeKind::kScalar:
      return std::string(element_type_name(e.element));
    case TypeKind::kUnrankedTensor:
      return "tensor<*x" + std::string(element_type_name(e.element)) + ">";
    case TypeKind::kTuple:
    case TypeKind::kFuture: {
      std::string out = e.kind == TypeKind::kTuple ? "tuple<" : "!stablehlo.future<";
      const auto ms = members(id);
      for (std::size_t i = 0; i < ms.size(); ++i) {
        out += (i ? ", " : "") + to_string(ms[i]);
      }
      return out + ">";
    }
    default:
      break;
  }
  std::string out = "tensor<";
  for (const std::int64_t d : dimensions(id)) {
    out += d == kDynamicDimension ? std::string("?") : std::to_string(d);
    out += 'x';
  }
  out += element_type_name(e.element);
  const auto b = bounds(id);
  if (!b.empty()) {
    out += ", #stablehlo.bounds<";
    for (std::size_t i = 0; i < b.size(); ++i) {
      out += (i ? ", " : "") + (b[i] == kNoBound ? std::string("?") : std::to_string(b[i]));
    }
    out += '>';
  }
  return out + ">";
}

std::size_t TypeTable::heap_bytes() const {
  // Hash-node sizes are estimates: a node holds the key, the value, a next pointer and a cached hash.
  std::size_t bytes = entries_.capacity() * sizeof(Entry) + dimensions_.capacity() * sizeof(std::int64_t) +
                      bounds_.capacity() * sizeof(std::int64_t) + members_.capacity() * sizeof(TypeId);
  bytes += by_text_.bucket_count() * sizeof(void*) + by_text_.size() * (sizeof(std::string_view) + 24);
  bytes += by_structure_.bucket_count() * sizeof(void*);
  for (const auto& [key, id] : by_structure_) {
    bytes += sizeof(std::string) + 24 + (key.size() > 15 ? key.capacity() + 1 : 0);
  }
  return bytes;
}

void TypeTable::shrink_to_fit() {
  entries_.shrink_to_fit();
  dimensions_.shrink_to_fit();
  bounds_.shrink_to_fit();
  members_.shrink_to_fit();
}

}  // namespace orrery::workload
