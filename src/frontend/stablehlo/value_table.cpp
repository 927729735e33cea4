#include "frontend/stablehlo/value_table.h"

namespace orrery::frontend::stablehlo {
namespace {

// Numbered names beyond this go to the hash map, so a name like %99999999 cannot make the vectors
// huge.
constexpr std::uint32_t kMaxVectorIndex = 1U << 22;

bool parse_index(std::string_view digits, std::uint32_t& index) {
  if (digits.empty() || digits.size() > 7 || (digits.size() > 1 && digits[0] == '0')) {
    return false;
  }
  std::uint32_t value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  index = value;
  return value < kMaxVectorIndex;
}

}  // namespace

ValueTable::Bucket ValueTable::classify(std::string_view name, std::uint32_t& index) {
  const std::string_view suffix = name.substr(1);  // drop '%'
  if (parse_index(suffix, index)) {
    return Bucket::kNumber;
  }
  if (suffix.size() > 3 && suffix.substr(0, 3) == "arg" && parse_index(suffix.substr(3), index)) {
    return Bucket::kArgument;
  }
  return Bucket::kNamed;
}

const ValueEntry* ValueTable::lookup(std::string_view name) const {
  std::uint32_t index = 0;
  switch (classify(name, index)) {
    case Bucket::kNumber:
      return index < numbers_.size() ? &numbers_[index] : nullptr;
    case Bucket::kArgument:
      return index < arguments_.size() ? &arguments_[index] : nullptr;
    case Bucket::kNamed: {
      const auto it = named_.find(name);
      return it == named_.end() ? nullptr : &it->second;
    }
  }
  return nullptr;
}

ValueEntry& ValueTable::slot(std::string_view name) {
  std::uint32_t index = 0;
  const Bucket bucket = classify(name, index);
  if (bucket == Bucket::kNamed) {
    return named_[name];
  }
  auto& table = bucket == Bucket::kNumber ? numbers_ : arguments_;
  if (index >= table.size()) {
    table.resize(static_cast<std::size_t>(index) + 1 + table.size() / 2);
  }
  return table[index];
}

const ValueEntry* ValueTable::find(std::string_view name) const {
  const ValueEntry* entry = lookup(name);
  return entry != nullptr && entry->count > 0 ? entry : nullptr;
}

bool ValueTable::define(std::string_view name, const ValueEntry& entry) {
  ValueEntry& target = slot(name);
  if (target.count > 0) {
    return false;
  }
  target = entry;
  defined_.push_back(name);
  return true;
}

void ValueTable::pop_scope() {
  const std::size_t mark = scope_marks_.back();
  scope_marks_.pop_back();
  for (std::size_t i = mark; i < defined_.size(); ++i) {
    slot(defined_[i]).count = 0;
  }
  defined_.resize(mark);
}

void ValueTable::clear() {
  for (const std::string_view name : defined_) {
    slot(name).count = 0;
  }
  defined_.clear();
  scope_marks_.clear();
}

}  // namespace orrery::frontend::stablehlo
