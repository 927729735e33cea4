// A direct-mapped cache from short strings (op names, type spellings, attribute names) to values,
// in front of the hash maps that intern them. Real exports repeat a small vocabulary millions of
// times; a hit costs one cheap hash of the first and last eight bytes and one comparison.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "util/hash.h"

namespace orrery::frontend::stablehlo {

template <class Value, std::size_t kSlots = 1024>
class NameCache {
  static_assert((kSlots & (kSlots - 1)) == 0, "kSlots must be a power of two");

 public:
  [[nodiscard]] const Value* find(std::string_view key) const {
    const Slot& slot = slots_[slot_of(key)];
    return slot.key.size() == key.size() && slot.key.data() != nullptr &&
                   std::memcmp(slot.key.data(), key.data(), key.size()) == 0
               ? &slot.value
               : nullptr;
  }
  // `key` must outlive the cache (a view into the source buffer).
  void insert(std::string_view key, const Value& value) { slots_[slot_of(key)] = Slot{key, value}; }
  void clear() { slots_ = {}; }

 private:
  struct Slot {
    std::string_view key;
    Value value{};
  };

  static std::size_t slot_of(std::string_view key) {
    std::uint64_t head = 0;
    std::uint64_t tail = 0;
    if (key.size() >= 8) {
      std::memcpy(&head, key.data(), 8);
      std::memcpy(&tail, key.data() + key.size() - 8, 8);
    } else if (!key.empty()) {
      std::memcpy(&head, key.data(), key.size());
    }
    return static_cast<std::size_t>(mix64(head ^ mix64(tail + key.size()))) & (kSlots - 1);
  }

  std::array<Slot, kSlots> slots_{};
};

}  // namespace orrery::frontend::stablehlo
