#pragma once
// A tool's JSON schema from a small description, in the shape pydantic-ai derives from a
// Python signature (workspaces-api.md §4.2): an object with additionalProperties false,
// `required` for parameters without a default, a description per property, defaults
// included, `X | None` as anyOf [X, null], a Literal as enum.

#include <exedev/tools/toolset.hpp>

#include <optional>
#include <string>
#include <vector>

namespace exedev::tools::detail {

enum class JsonType { string, integer, number, boolean, string_array, object_array };

/// One parameter of a tool.
struct Parameter {
  std::string name{};
  JsonType type = JsonType::string;
  std::string description{};
  /// The default as JSON text ("0", "\".\"", "null", "false"); unset: the parameter is required.
  std::optional<std::string> default_json{};
  bool nullable = false;                   ///< `X | None`.
  std::vector<std::string> choices{};      ///< A Literal's values (strings).
  std::vector<Parameter> item_fields{};    ///< object_array: the fields of each item (all required).
};

/// A string parameter (required unless it has a default; `nullable`: `str | None`).
[[nodiscard]] Parameter text_parameter(std::string name, std::string description,
                                       std::optional<std::string> default_json = {}, bool nullable = false);
/// A parameter of another type, likewise.
[[nodiscard]] Parameter typed_parameter(std::string name, JsonType type, std::string description,
                                        std::optional<std::string> default_json = {}, bool nullable = false);

/// A tool as its implementation describes it.
struct ToolSpec {
  std::string name{};
  std::string description{};
  std::vector<Parameter> parameters{};
};

/// The definition a model sees.
[[nodiscard]] ToolDefinition definition_of(const ToolSpec& spec);

/// The reference's description convention: the summary, and when there is a Returns section,
/// "<summary>…</summary>\n<returns>\n<description>…</description>\n</returns>".
[[nodiscard]] std::string tool_description(const std::string& summary, const std::string& returns);

}  // namespace exedev::tools::detail
