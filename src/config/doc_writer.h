// Writes the reference table of a config struct (docs/config.md is generated from it and a test
// keeps the page in sync with the code).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sstream>
#include <string>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

template <class T>
struct IsOptionalStruct : std::false_type {};
template <class T>
  requires ConfigStruct<T>
struct IsOptionalStruct<std::optional<T>> : std::true_type {};

template <class T>
struct IsStructMap : std::false_type {};
template <class T>
  requires ConfigStruct<T>
struct IsStructMap<std::map<std::string, T>> : std::true_type {};

class DocWriter {
 public:
  struct Row {
    std::string key;
    std::string type;
    std::string default_value;
    std::string doc;
  };

  template <class T>
  void document(std::string prefix, T& defaults) {
    prefixes_.push_back(std::move(prefix));
    defaults.fields(*this);
    prefixes_.pop_back();
  }

  template <class T>
  void operator()(std::string_view key, T& member, std::string_view doc, Bounds bounds = {}) {
    const std::string path = prefixes_.back() + std::string(key);
    if constexpr (IsVariant<T>::value) {
      document_variant(path, doc, member);
    } else if constexpr (ConfigStruct<T>) {
      rows_.push_back(Row{path, "mapping", "", std::string(doc)});
      document(path + ".", member);
    } else if constexpr (IsOptionalStruct<T>::value) {
      rows_.push_back(Row{path, "mapping (optional)", "unset", std::string(doc)});
      typename T::value_type element{};
      document(path + ".", element);
    } else if constexpr (IsStructMap<T>::value) {
      rows_.push_back(Row{path, "mapping of name to mapping", render(member), std::string(doc)});
      typename T::mapped_type element{};
      document(path + ".NAME.", element);
    } else if constexpr (IsStructVector<T>::value) {
      rows_.push_back(Row{path, "list of mappings", render(member), std::string(doc)});
      typename T::value_type element{};
      document(path + "[].", element);
    } else {
      rows_.push_back(Row{path, type_name<T>(bounds), render(member), std::string(doc)});
    }
  }

  [[nodiscard]] std::string markdown_table() const;

 private:
  template <class... Alternatives>
  void document_variant(const std::string& path, std::string_view doc, std::variant<Alternatives...>&) {
    const std::vector<std::string_view> kinds{Alternatives::kKind...};
    rows_.push_back(Row{path, "mapping with `kind`", "", fmt::format("{} Kinds: {}.", doc, fmt::join(kinds, ", "))});
    rows_.push_back(Row{path + ".kind", "one of " + fmt::format("{}", fmt::join(kinds, ", ")), "", "Selects the variant."});
    auto one = [&]<class Alternative>(Alternative*) {
      Alternative value{};
      document(fmt::format("{}.({})", path, Alternative::kKind) + ".", value);
    };
    (one(static_cast<Alternatives*>(nullptr)), ...);
  }

  template <class T>
  static std::string type_name(Bounds bounds) {
    std::string range = bounds.describe();
    std::string suffix = range.empty() ? "" : " " + range;
    if constexpr (std::is_same_v<T, bool>) {
      return "bool";
    } else if constexpr (std::is_integral_v<T>) {
      return "integer" + suffix;
    } else if constexpr (std::is_floating_point_v<T>) {
      return "number" + suffix;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return "string";
    } else if constexpr (std::is_same_v<T, FilePath>) {
      return "path";
    } else if constexpr (std::is_same_v<T, NameOrPath>) {
      return "name or path";
    } else if constexpr (NamedEnum<T>) {
      return "one of " + enum_choices<T>();
    } else if constexpr (IsOptional<T>::value) {
      return type_name<typename T::value_type>(bounds) + " (optional)";
    } else if constexpr (IsVector<T>::value) {
      return "list of " + type_name<typename T::value_type>(bounds);
    } else if constexpr (IsStringMap<T>::value) {
      return "mapping of name to " + type_name<typename T::mapped_type>(bounds);
    } else {
      return "value";
    }
  }

  template <class T>
  static std::string render(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      return value ? "true" : "false";
    } else if constexpr (std::is_arithmetic_v<T>) {
      return fmt::format("{}", value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      return value.empty() ? "\"\"" : value;
    } else if constexpr (std::is_same_v<T, FilePath> || std::is_same_v<T, NameOrPath>) {
      return value.path.empty() ? "\"\"" : value.path;
    } else if constexpr (NamedEnum<T>) {
      return std::string(enum_to_string(value));
    } else if constexpr (IsOptional<T>::value) {
      return value ? render(*value) : "unset";
    } else if constexpr (IsVector<T>::value) {
      if constexpr (ConfigStruct<typename T::value_type>) {
        return value.empty() ? "[]" : fmt::format("{} entries", value.size());
      } else {
        std::vector<std::string> parts;
        for (const auto& item : value) {
          parts.push_back(render(item));
        }
        return fmt::format("[{}]", fmt::join(parts, ", "));
      }
    } else if constexpr (IsStringMap<T>::value) {
      return value.empty() ? "{}" : fmt::format("{} entries", value.size());
    } else {
      return "";
    }
  }

  std::vector<std::string> prefixes_{""};
  std::vector<Row> rows_;
};

}  // namespace orrery::config
