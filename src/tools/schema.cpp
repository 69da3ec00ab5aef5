#include "tools/schema.hpp"

#include <nlohmann/json.hpp>

#include <utility>

namespace exedev::tools::detail {

namespace {

nlohmann::ordered_json type_schema(const Parameter& parameter) {
  nlohmann::ordered_json schema = nlohmann::ordered_json::object();
  switch (parameter.type) {
    case JsonType::string: schema["type"] = "string"; break;
    case JsonType::integer: schema["type"] = "integer"; break;
    case JsonType::number: schema["type"] = "number"; break;
    case JsonType::boolean: schema["type"] = "boolean"; break;
    case JsonType::string_array:
      schema["items"] = {{"type", "string"}};
      schema["type"] = "array";
      break;
    case JsonType::object_array: {
      nlohmann::ordered_json item = {{"additionalProperties", false}, {"type", "object"}};
      nlohmann::ordered_json properties = nlohmann::ordered_json::object();
      nlohmann::ordered_json required = nlohmann::ordered_json::array();
      for (const auto& field : parameter.item_fields) {
        auto field_schema = type_schema(field);
        if (!field.description.empty()) field_schema["description"] = field.description;
        properties[field.name] = std::move(field_schema);
        required.push_back(field.name);
      }
      item["properties"] = std::move(properties);
      item["required"] = std::move(required);
      schema["items"] = std::move(item);
      schema["type"] = "array";
      break;
    }
  }
  if (!parameter.choices.empty()) {
    schema["enum"] = parameter.choices;
  }
  return schema;
}

}  // namespace

Parameter text_parameter(std::string name, std::string description, std::optional<std::string> default_json,
                         bool nullable) {
  Parameter p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.default_json = std::move(default_json);
  p.nullable = nullable;
  return p;
}

Parameter typed_parameter(std::string name, JsonType type, std::string description,
                          std::optional<std::string> default_json, bool nullable) {
  auto p = text_parameter(std::move(name), std::move(description), std::move(default_json), nullable);
  p.type = type;
  return p;
}

ToolDefinition definition_of(const ToolSpec& spec) {
  nlohmann::ordered_json properties = nlohmann::ordered_json::object();
  nlohmann::ordered_json required = nlohmann::ordered_json::array();
  for (const auto& parameter : spec.parameters) {
    nlohmann::ordered_json property = nlohmann::ordered_json::object();
    if (parameter.nullable) {
      property["anyOf"] = nlohmann::ordered_json::array({type_schema(parameter), {{"type", "null"}}});
    } else {
      property = type_schema(parameter);
    }
    if (parameter.default_json) property["default"] = nlohmann::ordered_json::parse(*parameter.default_json);
    if (!parameter.description.empty()) property["description"] = parameter.description;
    properties[parameter.name] = std::move(property);
    if (!parameter.default_json) required.push_back(parameter.name);
  }
  nlohmann::ordered_json schema = {{"additionalProperties", false},
                                   {"properties", std::move(properties)},
                                   {"required", std::move(required)},
                                   {"type", "object"}};
  return ToolDefinition{spec.name, spec.description, schema.dump()};
}

std::string tool_description(const std::string& summary, const std::string& returns) {
  if (returns.empty()) return summary;
  return "<summary>" + summary + "</summary>\n<returns>\n<description>" + returns + "</description>\n</returns>";
}

}  // namespace exedev::tools::detail
