#include "tools/arguments.hpp"

#include "tools/outcome.hpp"

#include <cmath>
#include <set>

namespace exedev::tools::detail {

namespace {

bool is_integral(const nlohmann::json& value) {
  if (value.is_number_integer()) return true;
  if (value.is_number_float()) {
    const double number = value.get<double>();
    return std::isfinite(number) && std::floor(number) == number;
  }
  return false;
}

// Why `value` does not fit `parameter` (pydantic's wording), or empty when it does.
std::string mismatch(const Parameter& parameter, const nlohmann::json& value) {
  if (value.is_null()) return parameter.nullable ? "" : "Input should not be null";
  switch (parameter.type) {
    case JsonType::string:
      if (!value.is_string()) return "Input should be a valid string";
      if (!parameter.choices.empty()) {
        for (const auto& choice : parameter.choices) {
          if (value.get<std::string>() == choice) return "";
        }
        std::string expected;
        for (std::size_t i = 0; i < parameter.choices.size(); ++i) {
          expected += (i == 0 ? "" : i + 1 == parameter.choices.size() ? " or " : ", ") + ("'" + parameter.choices[i] + "'");
        }
        return "Input should be " + expected;
      }
      return "";
    case JsonType::integer: return is_integral(value) ? "" : "Input should be a valid integer";
    case JsonType::number: return value.is_number() ? "" : "Input should be a valid number";
    case JsonType::boolean: return value.is_boolean() ? "" : "Input should be a valid boolean";
    case JsonType::string_array: {
      if (!value.is_array()) return "Input should be a valid list";
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string()) return std::to_string(i) + ": Input should be a valid string";
      }
      return "";
    }
    case JsonType::object_array: {
      if (!value.is_array()) return "Input should be a valid list";
      for (std::size_t i = 0; i < value.size(); ++i) {
        const auto& item = value[i];
        if (!item.is_object()) return std::to_string(i) + ": Input should be an object";
        for (const auto& field : parameter.item_fields) {
          if (!item.contains(field.name)) return std::to_string(i) + "." + field.name + ": Field required";
          if (auto why = mismatch(field, item[field.name]); !why.empty()) return std::to_string(i) + "." + field.name + ": " + why;
        }
        for (const auto& [key, unused] : item.items()) {
          bool known = false;
          for (const auto& field : parameter.item_fields) known = known || field.name == key;
          if (!known) return std::to_string(i) + "." + key + ": Extra inputs are not permitted";
        }
      }
      return "";
    }
  }
  return "";
}

}  // namespace

Arguments::Arguments(const ToolSpec& spec, const std::string& json_text) {
  nlohmann::json given;
  const std::string prefix = "Invalid arguments for tool '" + spec.name + "': ";
  try {
    given = json_text.empty() ? nlohmann::json::object() : nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error&) {
    throw ModelRetry(prefix + "the arguments are not valid JSON. Send a JSON object.");
  }
  if (!given.is_object()) throw ModelRetry(prefix + "the arguments must be a JSON object.");
  std::vector<std::string> problems;
  std::set<std::string> known;
  values_ = nlohmann::json::object();
  for (const auto& parameter : spec.parameters) {
    known.insert(parameter.name);
    if (!given.contains(parameter.name)) {
      if (parameter.default_json) values_[parameter.name] = nlohmann::json::parse(*parameter.default_json);
      else problems.push_back(parameter.name + ": Field required");
      continue;
    }
    const auto& value = given[parameter.name];
    if (auto why = mismatch(parameter, value); !why.empty()) problems.push_back(parameter.name + ": " + why);
    else values_[parameter.name] = value;
  }
  for (const auto& [key, unused] : given.items()) {
    if (!known.count(key)) problems.push_back(key + ": Extra inputs are not permitted");
  }
  if (!problems.empty()) {
    std::string text = prefix.substr(0, prefix.size() - 1) + "\n";
    for (const auto& problem : problems) text += "- " + problem + "\n";
    text += "Fix the errors and try again.";
    throw ModelRetry(text);
  }
}

const nlohmann::json& Arguments::value(const std::string& name) const { return values_.at(name); }

std::string Arguments::text(const std::string& name) const { return value(name).get<std::string>(); }

std::optional<std::string> Arguments::optional_text(const std::string& name) const {
  const auto& v = value(name);
  if (v.is_null()) return std::nullopt;
  return v.get<std::string>();
}

std::int64_t Arguments::integer(const std::string& name) const {
  const auto& v = value(name);
  return v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(v.get<double>());
}

std::optional<std::int64_t> Arguments::optional_integer(const std::string& name) const {
  if (value(name).is_null()) return std::nullopt;
  return integer(name);
}

std::optional<double> Arguments::optional_number(const std::string& name) const {
  const auto& v = value(name);
  if (v.is_null()) return std::nullopt;
  return v.get<double>();
}

bool Arguments::boolean(const std::string& name) const { return value(name).get<bool>(); }

std::optional<std::vector<std::string>> Arguments::optional_strings(const std::string& name) const {
  const auto& v = value(name);
  if (v.is_null()) return std::nullopt;
  return v.get<std::vector<std::string>>();
}

std::optional<std::vector<std::vector<std::string>>> Arguments::optional_records(
    const std::string& name, const std::vector<std::string>& fields) const {
  const auto& v = value(name);
  if (v.is_null()) return std::nullopt;
  std::vector<std::vector<std::string>> records;
  for (const auto& item : v) {
    std::vector<std::string> record;
    for (const auto& field : fields) record.push_back(item.at(field).get<std::string>());
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace exedev::tools::detail
