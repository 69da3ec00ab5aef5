#include "common/command_line.hpp"

#include <stdexcept>

namespace exedev::detail {

FlagArgument split_flag(std::string_view argument) {
  const auto eq = argument.find('=');
  FlagArgument flag{std::string(argument.substr(0, eq)), std::nullopt};
  if (eq != std::string_view::npos) flag.value = std::string(argument.substr(eq + 1));
  return flag;
}

std::optional<double> parse_number(const std::string& text) {
  try {
    std::size_t used = 0;
    const double parsed = std::stod(text, &used);
    if (used == text.size()) return parsed;
  } catch (const std::exception&) {  // not a number, or out of range
  }
  return std::nullopt;
}

}  // namespace exedev::detail
