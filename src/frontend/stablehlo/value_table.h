// SSA names in scope while parsing. MLIR scoping: a function body starts empty (it is isolated
// from above); a nested region sees the names of its enclosing regions and may not redefine them;
// names defined in a region go out of scope when it closes.
//
// Exporters name almost every value %N or %argN, so those are looked up by number in vectors; other
// names go through a hash map. Each scope keeps an undo list of the names it defined.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "workload/program.h"

namespace orrery::frontend::stablehlo {

struct ValueEntry {
  workload::ValueRef first;  // the value %name (or %name#0)
  std::uint32_t count = 0;   // values bound to the name (%name:3 binds three); 0 = undefined
  std::uint32_t offset = 0;  // source offset of the definition
};

class ValueTable {
 public:
  // The entry for `name` (with its '%'), or nullptr when it is not in scope.
  [[nodiscard]] const ValueEntry* find(std::string_view name) const;
  // Binds `name`; false (and no change) when the name is already in scope.
  [[nodiscard]] bool define(std::string_view name, const ValueEntry& entry);
  void push_scope() { scope_marks_.push_back(defined_.size()); }
  void pop_scope();
  void clear();

 private:
  enum class Bucket : std::uint8_t { kNumber, kArgument, kNamed };
  // Classifies %123 as a number and %arg7 as an argument (index in `index`), else named.
  static Bucket classify(std::string_view name, std::uint32_t& index);
  [[nodiscard]] const ValueEntry* lookup(std::string_view name) const;
  ValueEntry& slot(std::string_view name);

  std::vector<ValueEntry> numbers_;
  std::vector<ValueEntry> arguments_;
  std::unordered_map<std::string_view, ValueEntry> named_;
  std::vector<std::string_view> defined_;
  std::vector<std::size_t> scope_marks_;
};

}  // namespace orrery::frontend::stablehlo
