// Serialises a resolved config struct back to YAML (for --print-scenario and run metadata).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/schema.h"

namespace orrery::config {

class YamlWriter {
 public:
  template <class T>
  static YAML::Node write(T& value) {
    YamlWriter writer;
    value.fields(writer);
    return writer.node_;
  }

  template <class T>
  void operator()(std::string_view key, T& member, std::string_view /*doc*/, Bounds /*bounds*/ = {}) {
    node_[std::string(key)] = to_node(member);
  }

 private:
  template <class T>
  static YAML::Node to_node(T& value) {
    if constexpr (std::is_same_v<T, bool> || std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
      return YAML::Node(value);
    } else if constexpr (std::is_same_v<T, FilePath> || std::is_same_v<T, NameOrPath>) {
      return YAML::Node(value.path);
    } else if constexpr (NamedEnum<T>) {
      return YAML::Node(std::string(enum_to_string(value)));
    } else if constexpr (IsOptional<T>::value) {
      return value ? to_node(*value) : YAML::Node(YAML::NodeType::Null);
    } else if constexpr (IsVector<T>::value) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (auto& item : value) {
        list.push_back(to_node(item));
      }
      return list;
    } else if constexpr (IsStringMap<T>::value) {
      YAML::Node map(YAML::NodeType::Map);
      for (auto& [key, item] : value) {
        map[key] = to_node(item);
      }
      return map;
    } else if constexpr (IsVariant<T>::value) {
      return std::visit(
          [](auto& alternative) {
            YAML::Node node = write(alternative);
            node["kind"] = std::string(std::remove_reference_t<decltype(alternative)>::kKind);
            return node;
          },
          value);
    } else {
      return write(value);
    }
  }

  YAML::Node node_{YAML::NodeType::Map};
};

}  // namespace orrery::config
