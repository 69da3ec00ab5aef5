#pragma once
// Reading the `--name=value` arguments of the project's programs. Internal, sans-IO.

#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

/// One command-line argument, `--name` or `--name=value`.
struct FlagArgument {
  std::string name;                  ///< up to the first '=' (the whole argument without one)
  std::optional<std::string> value;  ///< after the first '='; nullopt without one
};

[[nodiscard]] FlagArgument split_flag(std::string_view argument);

/// The number `text` spells in full (as std::stod reads it), or nullopt.
[[nodiscard]] std::optional<double> parse_number(const std::string& text);

}  // namespace exedev::detail
