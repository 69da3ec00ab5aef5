#pragma once
// A tool call's JSON arguments checked against the tool's parameters. Anything the model got
// wrong (not JSON, not an object, an unknown or missing field, a wrong type) is a ModelRetry
// naming every problem, as pydantic-ai's validation retry does.

#include "tools/schema.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace exedev::tools::detail {

/// Validated arguments with defaults applied.
class Arguments {
 public:
  /// Throws ModelRetry when `json_text` does not match `parameters`.
  Arguments(const ToolSpec& spec, const std::string& json_text);

  [[nodiscard]] std::string text(const std::string& name) const;
  [[nodiscard]] std::optional<std::string> optional_text(const std::string& name) const;
  [[nodiscard]] std::int64_t integer(const std::string& name) const;
  [[nodiscard]] std::optional<std::int64_t> optional_integer(const std::string& name) const;
  [[nodiscard]] std::optional<double> optional_number(const std::string& name) const;
  [[nodiscard]] bool boolean(const std::string& name) const;
  /// string_array: the strings, in order.
  [[nodiscard]] std::optional<std::vector<std::string>> optional_strings(const std::string& name) const;
  /// object_array: each item's string `fields`, in that order.
  [[nodiscard]] std::optional<std::vector<std::vector<std::string>>> optional_records(
      const std::string& name, const std::vector<std::string>& fields) const;

 private:
  const nlohmann::json& value(const std::string& name) const;
  nlohmann::json values_;
};

}  // namespace exedev::tools::detail
